/*
 * Lock order: which locks each thread takes while holding which, and the
 * pairs taken in both orders (a deadlock waiting for its timing).
 *
 * A thread notes a nesting only when it acquires a lock while it times
 * the hold of another (hooks.c's sampled held[]): about one acquisition
 * in HOLD_SAMPLE_MEAN is timed, so a nesting repeated n times is missed
 * with probability about (1 - 1/64)^n. The collector merges every
 * thread's nestings by (objects, sites) and, when a pair of objects shows
 * up in both orders, makes one warning per four call sites (outer and
 * inner of each order): one warning stands for one bug however many
 * objects share it.
 */
#ifndef QSPTOP_ORDER_H
#define QSPTOP_ORDER_H

#include <stdint.h>

#include "../common/proto.h"
#include "stacks.h"
#include "table.h"

/* Nestings and warnings the collector keeps at most. */
#define ORDER_MERGED_MAX 4096
#define ORDER_WARNINGS_MAX 256

/* One nesting of every thread that saw it. */
struct order_merged {
	uint64_t first_key, first_object, then_key, then_object;
	uint64_t hits;		/* times seen, over every thread */
	uint64_t t0;		/* first seen, by any thread */
	uint32_t stack;		/* global stack id; PROTO_NO_STACK: none */
	uint32_t warning;	/* the warning it counts towards + 1; 0: none */
};

struct order_warning {
	struct proto_lock_order m;	/* id, sites as row keys, count */
	uint64_t first_key, then_key, rev_held_key, rev_key;
	uint64_t changed_seq;		/* the scan its count last grew */
};

struct order_set {
	struct order_merged *e;
	uint32_t n, cap;
	struct order_warning *w;
	uint32_t nw, wcap;
	uint64_t dropped;		/* nestings seen with no room to merge */
};

/*
 * Note, in the calling thread's table, that it acquired lock at key
 * while holding held (taken at held_key). Inside a hook: no lock, no
 * host call; the first time, the stack of the acquisition.
 */
void order_note(struct thread_table *t, uint64_t held_key, uint64_t held,
		uint64_t key, uint64_t lock);

/* Merge a thread's nestings (collector thread, scan seq). */
void order_scan_table(struct order_set *os, struct stacks *ss,
		      struct thread_table *t, uint64_t seq);

#endif
