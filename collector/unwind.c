/* Capturing and interning the stacks of contended waits. */
#include <string.h>

#include "../common/hash.h"
#include "arena.h"
#include "unwind.h"

/* The index of a stack in the store, added if new; -1 when full. */
static int intern(struct stack_store *ss, const uint64_t *frames,
		  uint32_t depth)
{
	uint32_t h = hash_frames(frames, depth), i = h % STORE_STACKS;
	struct thread_stack *s;

	for (;; i = (i + 1) % STORE_STACKS) {
		s = &ss->stacks[i];
		if (s->depth == 0)
			break;
		if (s->hash == h && s->depth == depth &&
		    memcmp(s->frames, frames, depth * sizeof(*frames)) == 0)
			return (int)i;
	}
	if (ss->nstacks >= STORE_STACKS - 1)
		return -1;
	memcpy(s->frames, frames, depth * sizeof(*frames));
	s->hash = h;
	__atomic_store_n(&s->depth, depth, __ATOMIC_RELEASE);
	ss->nstacks++;
	return (int)i;
}

/* The counter for (entry, stack), added if new; NULL when full. */
static struct stack_use *use_for(struct stack_store *ss, struct entry *e,
				 uint32_t stack)
{
	uint64_t key = (uint64_t)(uintptr_t)e ^ stack;
	uint32_t i = (hash_fast(key) >> 8) % STORE_USES;

	for (;; i = (i + 1) % STORE_USES) {
		struct stack_use *u = &ss->uses[i];

		if (u->entry == e && u->stack == stack)
			return u;
		if (u->entry == NULL)
			break;
	}
	if (ss->nuses >= STORE_USES - 1)
		return NULL;
	ss->uses[i].stack = stack;
	ss->use_order[ss->nuses] = (uint16_t)i;
	__atomic_store_n(&ss->uses[i].entry, e, __ATOMIC_RELEASE);
	__atomic_store_n(&ss->nuses, ss->nuses + 1, __ATOMIC_RELEASE);
	return &ss->uses[i];
}

/* Whether this thread may unwind now: its base for the epoch, or credit. */
static int budget_left(struct thread_table *t)
{
	uint32_t epoch = __atomic_load_n(&table_epoch, __ATOMIC_RELAXED);

	if (t->unwind_epoch != epoch) {
		t->unwind_epoch = epoch;
		t->unwinds = 0;
	}
	if (t->unwinds < UNWIND_BASE) {
		t->unwinds++;
		return 1;
	}
	if (t->unwind_credit_ns >= UNWIND_COST_NS) {
		t->unwind_credit_ns -= UNWIND_COST_NS;
		return 1;
	}
	return 0;
}

/* The thread's store, allocated at its first capture; NULL without memory. */
static struct stack_store *store_of(struct thread_table *t)
{
	if (t->stacks == NULL)
		__atomic_store_n(&t->stacks, arena_alloc_table(sizeof(*t->stacks)),
				 __ATOMIC_RELEASE);
	return t->stacks;
}

struct stack_use *unwind_use(struct thread_table *t, struct entry *e,
			     uint64_t site)
{
	uint64_t frames[PROTO_STACK_DEPTH];
	struct stack_store *ss;
	uint32_t depth;
	int stack;

	if (!budget_left(t) || (ss = store_of(t)) == NULL)
		return NULL;
	depth = frames_capture(&t->reader, site, frames, PROTO_STACK_DEPTH);
	if (depth == 0 || (stack = intern(ss, frames, depth)) < 0)
		return NULL;
	return use_for(ss, e, (uint32_t)stack);
}

struct stack_use *unwind_blame_use(struct thread_table *t, struct entry *e,
				   uint64_t holder)
{
	uint64_t frames[2] = { PROTO_BLAME_MARK, holder };
	struct stack_store *ss = store_of(t);
	int stack;

	if (ss == NULL || (stack = intern(ss, frames, 2)) < 0)
		return NULL;
	return use_for(ss, e, (uint32_t)stack);
}

struct stack_use *unwind_holder_use(struct thread_table *t, struct entry *e,
				    uint64_t site)
{
	uint64_t frames[PROTO_STACK_DEPTH] = { PROTO_HOLDER_MARK };
	struct stack_store *ss;
	uint32_t depth;
	int stack;

	if (!budget_left(t) || (ss = store_of(t)) == NULL)
		return NULL;
	depth = frames_capture(&t->reader, site, frames + 1,
			       PROTO_STACK_DEPTH - 1);
	if (depth == 0 || (stack = intern(ss, frames, depth + 1)) < 0)
		return NULL;
	return use_for(ss, e, (uint32_t)stack);
}

void unwind_free(struct thread_table *t)
{
	arena_free(t->stacks, sizeof(*t->stacks));
	t->stacks = NULL;
}
