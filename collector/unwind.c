/* Capturing and interning the stacks of contended waits. */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <string.h>

#include "unwind.h"

/* Frames of our own hooks above the site, at most. */
#define OWN_FRAMES 8

static uint32_t frames_hash(const uint64_t *f, uint32_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (uint32_t i = 0; i < n; i++)
		h = (h ^ f[i]) * 0x100000001b3ull;
	return (uint32_t)(h ^ (h >> 32));
}

/*
 * Unwind into frames, from site outwards. libunwind may lock mutexes of its
 * own: while it runs, this thread records nothing, so they cannot recurse.
 */
static uint32_t capture(struct thread_table *t, uint64_t site, uint64_t *frames)
{
	void *buf[PROTO_STACK_DEPTH + OWN_FRAMES];
	int n, i;

	tls_table = TABLE_OFF;
	n = unw_backtrace(buf, PROTO_STACK_DEPTH + OWN_FRAMES);
	tls_table = t;
	for (i = 0; i < n && i < OWN_FRAMES; i++) {
		if ((uint64_t)(uintptr_t)buf[i] == site)
			break;
	}
	if (i >= n || i >= OWN_FRAMES)
		return 0;
	n -= i;
	if (n > PROTO_STACK_DEPTH)
		n = PROTO_STACK_DEPTH;
	for (int k = 0; k < n; k++)
		frames[k] = (uint64_t)(uintptr_t)buf[i + k];
	return (uint32_t)n;
}

/* The index of a stack in t, added if new; STACK_NONE when t is full. */
static uint32_t intern(struct thread_table *t, const uint64_t *frames,
		       uint32_t depth)
{
	uint32_t h = frames_hash(frames, depth), i = h % TABLE_STACKS;
	struct thread_stack *s;

	for (;; i = (i + 1) % TABLE_STACKS) {
		s = &t->stacks[i];
		if (s->depth == 0)
			break;
		if (s->hash == h && s->depth == depth &&
		    memcmp(s->frames, frames, depth * sizeof(*frames)) == 0)
			return i;
	}
	if (t->nstacks >= TABLE_STACKS - 1)
		return STACK_NONE;
	memcpy(s->frames, frames, depth * sizeof(*frames));
	s->hash = h;
	__atomic_store_n(&s->depth, depth, __ATOMIC_RELEASE);
	t->nstacks++;
	return i;
}

/* The counter for (entry slot, stack index), added if new. */
static struct stack_use *use_for(struct thread_table *t, uint32_t slot,
				 uint32_t stack)
{
	uint32_t key = (slot + 1) << 8 | stack;
	uint32_t i = (key * 2654435761u) % TABLE_USES;

	for (;; i = (i + 1) % TABLE_USES) {
		struct stack_use *u = &t->uses[i];

		if (u->key == key)
			return u;
		if (u->key == 0)
			break;
	}
	if (t->nuses >= TABLE_USES - 1)
		return NULL;
	t->use_order[t->nuses] = (uint16_t)i;
	__atomic_store_n(&t->uses[i].key, key, __ATOMIC_RELEASE);
	__atomic_store_n(&t->nuses, t->nuses + 1, __ATOMIC_RELEASE);
	return &t->uses[i];
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

struct stack_use *unwind_use(struct thread_table *t, struct entry *e,
			     uint64_t site)
{
	uint64_t frames[PROTO_STACK_DEPTH];
	uint32_t stack = STACK_NONE, depth;

	if (budget_left(t)) {
		depth = capture(t, site, frames);
		if (depth > 0)
			stack = intern(t, frames, depth);
	}
	return use_for(t, (uint32_t)(e - t->slots), stack);
}
