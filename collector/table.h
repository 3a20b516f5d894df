/*
 * Per-thread tables of counters, one entry per (call site, object, type).
 *
 * A table is written only by the thread that owns it; the collector thread
 * reads it concurrently with relaxed atomic loads of aligned 64-bit words
 * (QSP's scheme). An entry is published by storing its site last, with
 * release order, after its key; the reader loads the site with acquire.
 * Tables of exited threads are marked dead, folded by the collector thread
 * into its retired totals and recycled for new threads.
 */
#ifndef QSPTOP_TABLE_H
#define QSPTOP_TABLE_H

#include <stdint.h>

#include "../common/proto.h"
#include "../common/types.h"

#define TABLE_SLOTS 512
/* Past this many entries new keys lose their object (see table_find()). */
#define TABLE_FULL (TABLE_SLOTS * 3 / 4)

/* Distinct stacks a thread keeps, and (entry, stack) pairs it counts. */
#define TABLE_STACKS 128
#define TABLE_USES 512
/* The stack index of contended waits recorded without a stack. */
#define STACK_NONE TABLE_STACKS

enum table_state { TABLE_FREE, TABLE_LIVE, TABLE_DEAD };

struct entry {
	uint64_t site;		/* 0: empty slot; written last */
	uint64_t object;
	uint32_t type;
	uint32_t max_epoch;	/* collector epoch of epoch_max_ns */
	uint64_t acquisitions;
	uint64_t contended;
	uint64_t wait_ns;
	uint64_t failed;
	uint64_t max_wait_ns;
	uint64_t epoch_max_ns;
	uint64_t hist[HIST_BUCKETS];
};

/* A call stack this thread waited through; depth is written last. */
struct thread_stack {
	uint64_t frames[PROTO_STACK_DEPTH];	/* innermost (the site) first */
	uint32_t hash;
	uint32_t depth;				/* 0: empty slot */
};

/* Contended waits of one entry through one stack; key is written last. */
struct stack_use {
	uint32_t key;		/* (entry slot + 1) << 8 | stack index; 0: empty */
	uint32_t unused;
	uint64_t count;		/* acquisitions after a wait */
	uint64_t wait_ns;	/* every wait, timed out or not */
};

struct thread_table {
	struct thread_table *next;	/* global list; set before publishing */
	uint32_t state;			/* enum table_state */
	uint32_t used;			/* entries in order[] */
	uint64_t dropped;		/* events with no room to record */
	uint32_t tid;
	uint32_t nstacks;		/* stacks in use */
	uint32_t nuses;			/* uses in use_order[] */
	uint32_t unwind_epoch;		/* budget of unwinds, per epoch */
	uint32_t unwinds;
	uint64_t unwind_credit_ns;	/* see unwind.h */
	uint16_t order[TABLE_SLOTS];	/* slots in use, in insertion order */
	uint16_t use_order[TABLE_USES];
	struct entry slots[TABLE_SLOTS];
	struct thread_stack stacks[TABLE_STACKS];
	struct stack_use uses[TABLE_USES];
	/* Collector thread only: global stack id + 1 of each stack, 0: none. */
	uint32_t stack_gid[TABLE_STACKS];
};

/* tls_table values that are not tables. */
#define TABLE_NONE ((struct thread_table *)0)
#define TABLE_OFF ((struct thread_table *)1)

extern __thread struct thread_table *tls_table;
/* Bumped by the collector thread every scan; read on the slow path. */
extern uint32_t table_epoch;

static inline uint64_t table_load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* Add to a counter only this thread writes: a plain load, add and store. */
static inline void table_add(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + v,
			 __ATOMIC_RELAXED);
}

static inline void table_store(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

static inline uint32_t table_slot_hash(uint64_t site, uint64_t object,
				       uint32_t type)
{
	uint64_t h = site * 0x9e3779b97f4a7c15ull ^ object * 0xc2b2ae3d27d4eb4full;

	h ^= type + (h >> 29);
	return (uint32_t)(h >> 32) & (TABLE_SLOTS - 1);
}

/* Slow part of table_find(): insert a new key, or NULL when full. */
struct entry *table_insert(struct thread_table *t, uint64_t site,
			   uint64_t object, uint32_t type);

/* Claim a table for the calling thread; TABLE_OFF when it must not record. */
struct thread_table *table_claim(uint64_t site);

/* Calls from [lo, hi) (the collector's own libraries) are never recorded. */
void table_ignore_range(uint64_t lo, uint64_t hi);

/* The calling thread's entry for a key, or NULL when it cannot record. */
static inline struct entry *table_find(uint64_t site, uint64_t object,
				       uint32_t type)
{
	struct thread_table *t = tls_table;
	uint32_t i;

	if (__builtin_expect((uintptr_t)t <= (uintptr_t)TABLE_OFF, 0)) {
		if (t == TABLE_OFF || (t = table_claim(site)) == TABLE_OFF)
			return 0;
	}
	i = table_slot_hash(site, object, type);
	for (;;) {
		struct entry *e = &t->slots[i];

		if (e->site == site && e->object == object && e->type == type)
			return e;
		if (e->site == 0)
			return table_insert(t, site, object, type);
		i = (i + 1) & (TABLE_SLOTS - 1);
	}
}

/* Mark the calling thread's table dead (thread exit). */
void table_release(void *table);

/* First table of the global list (acquire). */
struct thread_table *table_first(void);

/* Number of threads that ever claimed a table. */
uint32_t table_threads_seen(void);

/* Threads that could not get a table (out of memory) and so record nothing. */
uint64_t table_claim_failures(void);

/* Zero a dead table and make it claimable again (collector thread only). */
void table_recycle(struct thread_table *t);

/* Forget every table and thread: the child side of fork(). */
void table_forget_all(void);

/* Create the thread-exit key; 0 on success. */
int table_init(void);

#endif
