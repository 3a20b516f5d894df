/* Summing per-thread stacked waits into (row, stack, thread) totals. */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "stacks.h"

static uint32_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return (uint32_t)h;
}

static uint32_t def_hash(const uint64_t *frames, uint32_t depth)
{
	uint64_t h = depth;

	for (uint32_t i = 0; i < depth; i++)
		h = h * 0x100000001b3ull ^ frames[i];
	return mix(h);
}

/* Grow an open-addressing index to cap slots, re-placing n items. */
static int rebuild_index(uint32_t **index, uint32_t *index_cap, uint32_t n,
			 uint32_t (*hash_of)(const struct stacks *, uint32_t),
			 const struct stacks *ss)
{
	uint32_t cap = *index_cap ? *index_cap * 2 : 1024;
	uint32_t *idx = calloc(cap, sizeof(*idx));

	if (idx == NULL)
		return 0;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = hash_of(ss, k) & (cap - 1);

		while (idx[i] != 0)
			i = (i + 1) & (cap - 1);
		idx[i] = k + 1;
	}
	free(*index);
	*index = idx;
	*index_cap = cap;
	return 1;
}

static uint32_t def_hash_of(const struct stacks *ss, uint32_t k)
{
	return def_hash(ss->defs[k].frames, ss->defs[k].depth);
}

static uint32_t row_hash(uint32_t row, uint32_t stack, uint32_t tid)
{
	return mix((uint64_t)row << 40 ^ (uint64_t)stack << 20 ^ tid ^
		   (uint64_t)stack * 0x9e3779b97f4a7c15ull);
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
	i = def_hash(s->frames, depth) & (ss->def_index_cap - 1);
	for (;; i = (i + 1) & (ss->def_index_cap - 1)) {
		k = ss->def_index[i];
		if (k == 0)
			break;
		if (ss->defs[k - 1].depth == depth &&
		    memcmp(ss->defs[k - 1].frames, s->frames, depth * 8) == 0)
			return k - 1;
	}
	if (ss->ndefs >= STACKS_MAX ||
	    !grow_array((void **)&ss->defs, &ss->defs_cap, ss->ndefs,
				sizeof(*ss->defs), 256))
		return NO_GLOBAL_ID;
	k = ss->ndefs++;
	ss->defs[k].id = k;
	ss->defs[k].depth = (uint8_t)depth;
	memcpy(ss->defs[k].frames, s->frames, depth * 8);
	ss->def_index[i] = k + 1;
	return k;
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
	    !grow_array((void **)&ss->v, &ss->cap, ss->n, sizeof(*ss->v), 256))
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
	for (uint32_t k = 0; k < ss->n; k++) {
		ss->v[k].count = ss->v[k].retired_count;
		ss->v[k].wait_ns = ss->v[k].retired_wait;
	}
}

/*
 * The global id of stack index idx of t (cached in t->stack_gid):
 * PROTO_NO_STACK for waits recorded without a stack, NO_GLOBAL_ID when
 * the stack cannot be had.
 */
static uint32_t stack_of(struct stacks *ss, struct thread_table *t, uint32_t idx)
{
	uint32_t depth, gid;

	if (idx >= TABLE_STACKS)
		return PROTO_NO_STACK;
	if (t->stack_gid[idx] == 0) {
		depth = __atomic_load_n(&t->stacks[idx].depth, __ATOMIC_ACQUIRE);
		if (depth == 0 || depth > PROTO_STACK_DEPTH)
			return NO_GLOBAL_ID;
		gid = global_id(ss, &t->stacks[idx], depth);
		if (gid == NO_GLOBAL_ID)
			return NO_GLOBAL_ID;
		t->stack_gid[idx] = gid + 1;
	}
	return t->stack_gid[idx] - 1;
}

void stacks_scan_table(struct stacks *ss, struct thread_table *t,
		       const uint32_t *slot_row, int dead)
{
	uint32_t n = __atomic_load_n(&t->nuses, __ATOMIC_ACQUIRE);

	for (uint32_t k = 0; k < n; k++) {
		struct stack_use *u = &t->uses[t->use_order[k]];
		uint32_t key = __atomic_load_n(&u->key, __ATOMIC_ACQUIRE);
		uint32_t slot = (key >> 8) - 1, row, stack;
		uint64_t count = table_load(&u->count), wait = table_load(&u->wait_ns);
		struct stack_row *sr;

		if (key == 0 || slot >= TABLE_SLOTS || (row = slot_row[slot]) == UINT32_MAX)
			continue;
		stack = stack_of(ss, t, key & 0xff);
		sr = stack == NO_GLOBAL_ID ? NULL : row_for(ss, row, stack, t->tid);
		if (sr == NULL)
			continue;	/* the row's totals stay exact */
		sr->count += count;
		sr->wait_ns += wait;
		if (dead) {
			sr->retired_count += count;
			sr->retired_wait += wait;
		}
	}
}

void stacks_free(struct stacks *ss)
{
	free(ss->defs);
	free(ss->def_index);
	free(ss->v);
	free(ss->index);
	memset(ss, 0, sizeof(*ss));
}
