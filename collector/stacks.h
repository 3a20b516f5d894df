/*
 * The collector thread's view of stacks: definitions deduplicated across
 * threads under global ids, and contended waits summed per (row, stack,
 * thread), exited threads' included. Collector thread only.
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
	uint64_t retired_count;		/* from tables of exited threads */
	uint64_t retired_wait;
	uint64_t count;			/* retired + live, last scan */
	uint64_t wait_ns;
};

struct stacks {
	struct proto_stack *defs;
	uint32_t ndefs;
	size_t defs_cap;
	uint32_t *def_index;		/* def + 1, 0 = empty */
	uint32_t def_index_cap;
	struct stack_row *v;
	uint32_t n;
	size_t cap;
	uint32_t *index;		/* stack row + 1, 0 = empty */
	uint32_t index_cap;
};

/* Start a scan: every total goes back to its retired part. */
void stacks_begin_scan(struct stacks *ss);

/*
 * Add a table's stacked waits; slot_row gives the row of each entry slot
 * (UINT32_MAX: none). A dead table's waits are also retired.
 */
void stacks_scan_table(struct stacks *ss, struct thread_table *t,
		       const uint32_t *slot_row, int dead);

/* Release the memory of ss. */
void stacks_free(struct stacks *ss);

#endif
