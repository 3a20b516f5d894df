/*
 * The collector thread's view of all rows: every thread table summed per
 * (site, object, type) at each scan, with the tables of exited threads
 * folded into retired totals and recycled. Owned by the collector thread;
 * never touched by hooks.
 */
#ifndef QSPTOP_ROWS_H
#define QSPTOP_ROWS_H

#include <stdint.h>

#include "../common/counts.h"
#include "order.h"
#include "../common/proto.h"
#include "stacks.h"

/* Sessions that can be served at once; each keeps its pending maxima here. */
#define SESSIONS_MAX 8

/*
 * The part of a row that only rows with waits or failures have; its
 * counts' acquisitions stay 0 (the row has them).
 */
struct row_waits {
	struct lock_counts retired;	/* from tables of exited threads */
	struct lock_counts now;		/* retired + live tables, last scan */
	uint64_t scan_max_ns;		/* longest wait the last scan saw */
	uint64_t max_ns;		/* longest wait since start */
	uint64_t pending_max_ns[SESSIONS_MAX];	/* not yet sent, per session */
};

/* The timed holds of a row (hooks.c), once it has any. */
struct row_holds {
	uint64_t retired_ns, retired;	/* from tables of exited threads */
	uint64_t now_ns, now;		/* retired + live tables, last scan */
	uint64_t scan_max_ns;		/* longest hold the last scan saw */
	uint64_t max_ns;		/* longest hold since start */
	uint64_t pending_max_ns[SESSIONS_MAX];	/* not yet sent, per session */
};

struct row {
	uint64_t site;
	uint64_t via;			/* the call site inside lock wrappers
					   the calls went through; 0: none */
	uint64_t object;		/* 0: several objects (folded) */
	uint32_t type;
	uint32_t unused;
	uint64_t acq_retired;
	uint64_t acq_now;		/* retired + live tables, last scan */
	uint64_t last_sum;		/* all its counts added, last scan */
	uint64_t changed_seq;		/* the scan that last changed it */
	struct row_waits *waits;	/* NULL until it has any */
	struct row_holds *holds;	/* NULL until it has any */
};

struct rows {
	struct row *v;
	uint32_t n, cap;
	uint32_t *index;		/* open addressing: row + 1, 0 = empty */
	uint32_t index_cap;
	uint64_t seq;			/* scans so far */
	uint32_t threads_live;
	uint32_t sessions;		/* bit k: session slot k is served */
	uint64_t dropped;		/* events not recorded, since start */
	uint64_t dropped_retired;
	uint64_t folded;		/* events on rows of several objects */
	struct stacks stacks;		/* per (row, stack, thread) */
	struct order_set order;		/* lock-order nestings and warnings */
	/* The waits in progress at the last scan (struct wait_now). */
	struct proto_wait waits[PROTO_WAITS_MAX];
	uint32_t n_waits;
	struct held_by *held;		/* what holders did (heldby.h) */
};

/*
 * The row id + 1 of a table key and object (as a slot holds it), made
 * when new, as a scan would; 0 when it cannot be had. Collector thread.
 */
uint32_t rows_of_key(struct rows *rs, uint64_t key, uint64_t object);

/* Sum every thread table into rs, retiring and recycling dead tables. */
void rows_scan(struct rows *rs);

/*
 * Start keeping pending maxima for session slot k: from zero for a
 * session whose first update is a baseline, else from the longest waits
 * since start (it is sent everything since start).
 */
void rows_session_start(struct rows *rs, unsigned k, bool baseline);

/* Stop keeping them for slot k. */
void rows_session_end(struct rows *rs, unsigned k);

#endif
