/* Summing per-thread stacked waits into (row, stack, thread) totals. */
#include <string.h>

#include "../common/hash.h"
#include "arena.h"
#include "stacks.h"
#include "unwind.h"

static uint32_t row_hash(uint32_t row, uint32_t stack, uint32_t tid)
{
	return (uint32_t)hash_mix((uint64_t)row << 40 ^ (uint64_t)stack << 20 ^ tid);
}

/* Grow an open-addressing index, re-placing n items by their hashes. */
static bool rebuild_index(uint32_t **index, uint32_t *index_cap, uint32_t n,
			  uint32_t (*hash_of)(const struct stacks *, uint32_t),
			  const struct stacks *ss)
{
	uint32_t cap = *index_cap ? *index_cap * 2 : 1024;
	uint32_t *idx = arena_alloc(cap * sizeof(*idx));

	if (idx == NULL)
		return false;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = hash_of(ss, k) & (cap - 1);

		while (idx[i] != 0)
			i = (i + 1) & (cap - 1);
		idx[i] = k + 1;
	}
	arena_free(*index, *index_cap * sizeof(*idx));
	*index = idx;
	*index_cap = cap;
	return true;
}

static uint32_t def_hash_of(const struct stacks *ss, uint32_t k)
{
	return hash_frames(ss->defs[k].frames, ss->defs[k].depth);
}

static uint32_t row_hash_of(const struct stacks *ss, uint32_t k)
{
	return row_hash(ss->v[k].row, ss->v[k].stack, ss->v[k].tid);
}

/* A stack that could not get a global id (the table of stacks is full). */
#define NO_GLOBAL_ID 0xfffffffeu

/* The global id of a thread's stack, defined when new; NO_GLOBAL_ID if full. */
static uint32_t global_id(struct stacks *ss, const struct thread_stack *s,
			  uint32_t depth)
{
	uint32_t i, k;

	if ((ss->ndefs + 1) * 2 > ss->def_index_cap &&
	    !rebuild_index(&ss->def_index, &ss->def_index_cap, ss->ndefs,
			   def_hash_of, ss))
		return NO_GLOBAL_ID;
	i = hash_frames(s->frames, depth) & (ss->def_index_cap - 1);
	for (;; i = (i + 1) & (ss->def_index_cap - 1)) {
		k = ss->def_index[i];
		if (k == 0)
			break;
		if (ss->defs[k - 1].depth == depth &&
		    memcmp(ss->defs[k - 1].frames, s->frames, depth * 8) == 0)
			return k - 1;
	}
	if (ss->ndefs >= STACKS_MAX ||
	    !arena_grow((void **)&ss->defs, &ss->defs_cap, ss->ndefs, 256,
				sizeof(*ss->defs)))
		return NO_GLOBAL_ID;
	k = ss->ndefs++;
	ss->defs[k].id = k;
	ss->defs[k].depth = (uint8_t)depth;
	memcpy(ss->defs[k].frames, s->frames, depth * 8);
	ss->def_index[i] = k + 1;
	return k;
}

uint32_t stacks_define(struct stacks *ss, const uint64_t *frames,
		       uint32_t depth)
{
	struct thread_stack s;
	uint32_t gid;

	if (depth == 0 || depth > PROTO_STACK_DEPTH)
		return PROTO_NO_STACK;
	memcpy(s.frames, frames, depth * sizeof(*frames));
	gid = global_id(ss, &s, depth);
	return gid == NO_GLOBAL_ID ? PROTO_NO_STACK : gid;
}

/* The total for (row, stack, tid), created when new; NULL if full. */
static struct stack_row *row_for(struct stacks *ss, uint32_t row,
				 uint32_t stack, uint32_t tid)
{
	uint32_t i, k;

	if ((ss->n + 1) * 2 > ss->index_cap &&
	    !rebuild_index(&ss->index, &ss->index_cap, ss->n, row_hash_of, ss))
		return NULL;
	i = row_hash(row, stack, tid) & (ss->index_cap - 1);
	for (;; i = (i + 1) & (ss->index_cap - 1)) {
		k = ss->index[i];
		if (k == 0)
			break;
		if (ss->v[k - 1].row == row && ss->v[k - 1].stack == stack &&
		    ss->v[k - 1].tid == tid)
			return &ss->v[k - 1];
	}
	if (ss->n >= STACK_ROWS_MAX ||
	    !arena_grow((void **)&ss->v, &ss->cap, ss->n, 256, sizeof(*ss->v)))
		return NULL;
	k = ss->n++;
	memset(&ss->v[k], 0, sizeof(ss->v[k]));
	ss->v[k].row = row;
	ss->v[k].stack = stack;
	ss->v[k].tid = tid;
	ss->index[i] = k + 1;
	return &ss->v[k];
}

void stacks_begin_scan(struct stacks *ss)
{
	for (uint32_t k = 0; k < ss->n; k++)
		ss->v[k].now = ss->v[k].retired;
}

void stacks_end_scan(struct stacks *ss, uint64_t seq)
{
	for (uint32_t k = 0; k < ss->n; k++) {
		const struct wait_counts *w = &ss->v[k].now;
		uint64_t sum = w->count + w->timeouts + w->wait_ns;

		if (sum != ss->v[k].last_sum)
			ss->v[k].changed_seq = seq;
		ss->v[k].last_sum = sum;
	}
}

void stacks_add(struct stacks *ss, uint32_t row, uint32_t stack, uint32_t tid,
		uint32_t *cache, const struct wait_counts *add, bool dead)
{
	struct stack_row *sr = *cache ? &ss->v[*cache - 1] : NULL;

	if (sr == NULL || sr->row != row || sr->stack != stack || sr->tid != tid) {
		sr = row_for(ss, row, stack, tid);
		if (sr == NULL)
			return;		/* the row's totals stay exact */
		*cache = (uint32_t)(sr - ss->v) + 1;
	}
	wait_counts_add(&sr->now, add);
	if (dead)
		wait_counts_add(&sr->retired, add);
}

/* The global id of stack index idx of a store (cached); NO_GLOBAL_ID if none. */
static uint32_t stack_of(struct stacks *ss, struct stack_store *st, uint32_t idx)
{
	uint32_t depth, gid;

	if (idx >= STORE_STACKS)
		return NO_GLOBAL_ID;
	if (st->global_id[idx] == 0) {
		depth = __atomic_load_n(&st->stacks[idx].depth, __ATOMIC_ACQUIRE);
		if (depth == 0 || depth > PROTO_STACK_DEPTH)
			return NO_GLOBAL_ID;
		gid = global_id(ss, &st->stacks[idx], depth);
		if (gid == NO_GLOBAL_ID)
			return NO_GLOBAL_ID;
		st->global_id[idx] = gid + 1;
	}
	return st->global_id[idx] - 1;
}

void stacks_scan_table(struct stacks *ss, struct thread_table *t, bool dead)
{
	struct stack_store *st = __atomic_load_n(&t->stacks, __ATOMIC_ACQUIRE);
	uint32_t n = st ? __atomic_load_n(&st->nuses, __ATOMIC_ACQUIRE) : 0;

	for (uint32_t k = 0; k < n; k++) {
		struct stack_use *u = &st->uses[st->use_order[k]];
		struct entry *e = __atomic_load_n(&u->entry, __ATOMIC_ACQUIRE);
		struct wait_counts add;
		uint32_t stack;

		if (e == NULL || e->row == 0 ||
		    (stack = stack_of(ss, st, u->stack)) == NO_GLOBAL_ID)
			continue;
		add.count = table_load(&u->w.count);
		add.timeouts = table_load(&u->w.timeouts);
		add.wait_ns = table_load(&u->w.wait_ns);
		stacks_add(ss, e->row - 1, stack, t->tid, &u->stack_row, &add, dead);
	}
}
