/*
 * The collector thread's view of stacks: definitions deduplicated across
 * threads under global ids, and waits summed per (row, stack, thread),
 * exited threads' included. Collector thread only.
 */
#ifndef QSPTOP_STACKS_H
#define QSPTOP_STACKS_H

#include <stdint.h>

#include "../common/proto.h"
#include "table.h"

#define STACKS_MAX (1u << 16)
#define STACK_ROWS_MAX (1u << 20)

struct stack_row {
	uint32_t row;
	uint32_t stack;			/* global id, or PROTO_NO_STACK */
	uint32_t tid;
	uint32_t unused;
	struct wait_counts retired;	/* from tables of exited threads */
	struct wait_counts now;		/* retired + live, last scan */
	uint64_t last_sum;		/* all of now added, last scan */
	uint64_t changed_seq;		/* the scan that last changed it */
};

struct stacks {
	struct proto_stack *defs;
	uint32_t ndefs, defs_cap;
	uint32_t *def_index;		/* def + 1, 0 = empty */
	uint32_t def_index_cap;
	struct stack_row *v;
	uint32_t n, cap;
	uint32_t *index;		/* stack row + 1, 0 = empty */
	uint32_t index_cap;
};

/* The global id of a stack of depth frames, defined when new; PROTO_NO_STACK if none. */
uint32_t stacks_define(struct stacks *ss, const uint64_t *frames,
		       uint32_t depth);

/* Start a scan: every total goes back to its retired part. */
void stacks_begin_scan(struct stacks *ss);

/*
 * Add a table's stacked waits (its entries' row ids are current); a dead
 * table's are also retired.
 */
void stacks_scan_table(struct stacks *ss, struct thread_table *t, bool dead);

/*
 * Add waits to (row, stack, tid); *cache keeps the stack row's id + 1
 * between scans. A dead thread's part is also retired.
 */
void stacks_add(struct stacks *ss, uint32_t row, uint32_t stack, uint32_t tid,
		uint32_t *cache, const struct wait_counts *add, bool dead);

/* End a scan: mark the stack rows that changed with seq. */
void stacks_end_scan(struct stacks *ss, uint64_t seq);

#endif
