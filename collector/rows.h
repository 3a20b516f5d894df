/*
 * The collector thread's view of all rows: every thread table summed per
 * (site, object, type), with the tables of exited threads folded into
 * retired totals. Owned by the collector thread; never touched by hooks.
 */
#ifndef QSPTOP_ROWS_H
#define QSPTOP_ROWS_H

#include <stdint.h>

#include "../common/types.h"
#include "stacks.h"

/* Rows past this count lose their object; past ROWS_HARD_MAX they drop. */
#define ROWS_MAX (1u << 16)
#define ROWS_HARD_MAX (ROWS_MAX + ROWS_MAX / 4)

struct row_counts {
	uint64_t acquisitions;
	uint64_t contended;
	uint64_t wait_ns;
	uint64_t failed;
	uint64_t hist[HIST_BUCKETS];
};

struct row {
	uint64_t site;
	uint64_t object;
	uint32_t type;
	struct row_counts retired;	/* from tables of exited threads */
	struct row_counts now;		/* retired + live tables, last scan */
	uint64_t max_wait_ns;		/* since start */
	uint64_t interval_max_ns;	/* longest wait seen since last scan */
};

struct rows {
	struct row *v;
	uint32_t n;
	size_t cap;
	uint32_t *index;		/* open addressing: row + 1, 0 = empty */
	uint32_t index_cap;
	uint32_t threads_live;
	uint64_t dropped;		/* all drops, last scan */
	uint64_t dropped_retired;
	struct stacks stacks;		/* per (row, stack, thread) */
};

/* Sum every thread table into rs, retiring and recycling dead tables. */
void rows_scan(struct rows *rs);

/* Release the memory of rs. */
void rows_free(struct rows *rs);

#endif
