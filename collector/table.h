/*
 * Per-thread tables of counters, one per (call site, lock type, object).
 *
 * A thread's table is a small index of its call sites, each pointing to an
 * open-addressing table of the objects locked there: 16-byte slots holding
 * the object and its acquisition count. Lookups hash the object with a
 * Fibonacci multiply, which spreads keys yet keeps arrays of locks in
 * strided order the prefetcher follows. The rest of an entry (waits,
 * failures, histogram) lives apart, allocated at its first wait, so a lock
 * that never waits costs 16 bytes of slot and one cache line per use.
 *
 * Only the owning thread writes its tables; the collector thread reads
 * them concurrently with relaxed atomic loads of aligned 64-bit words
 * (QSP's scheme). A table that fills past its limit (an index of sites
 * half, a table of objects three quarters) grows: the owner builds a copy
 * twice the size and publishes it with release order; the old one goes on
 * a retire list the collector thread frees at its next scan, when it can
 * no longer be reading it.
 *
 * A thread's death is seen by the kernel, not by us: at claim time the
 * thread locks a robust mutex kept in its table, and the kernel marks that
 * mutex owner-dead when the thread exits, however it exits. The collector
 * then folds the table into its totals and recycles it. No pthread key, no
 * destructor, no allocation on the thread's way out.
 */
#ifndef QSPTOP_TABLE_H
#define QSPTOP_TABLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "../common/counts.h"
#include "../common/hash.h"
#include "../common/types.h"
#include "frames.h"
#include "lfstack.h"

/* A table key: the call site, with the lock type in its top byte. */
#define KEY(site, type) ((site) | (uint64_t)(type) << 56)
#define KEY_SITE(key) ((key) & ((1ull << 56) - 1))
#define KEY_TYPE(key) ((uint32_t)((key) >> 56))

/* The object of a site's "several objects" entry, used past the memory cap. */
#define OBJECT_FOLDED 1u

#define SITES_FIRST 16		/* slots of a new thread's site index */
#define OBJECTS_FIRST 8		/* slots of a new site's object table */

/*
 * Waits and failures of one key in one thread; allocated at the first one.
 * Its counts are written by the owner with table_add() and read by the
 * collector with table_load(); c.calls.acquisitions stays 0 (the slot has them).
 */
struct entry {
	struct lock_counts c;
	uint64_t max_wait_ns;
	uint64_t epoch_max_ns;	/* longest wait of collector epoch max_epoch */
	uint32_t max_epoch;
	uint32_t row;		/* collector only: row id + 1, 0 = not yet known */
	struct wait_counts nostack;	/* waits recorded without a stack */
	uint32_t nostack_row;	/* collector only: its stack row id + 1 */
};

struct obj_slot {
	uint64_t object;	/* 0: empty; written last, with release */
	uint64_t acquisitions;
};

/*
 * The objects of one (site, type). slot[], then entry[] (NULL until the
 * first wait) and row[] (the collector's row id + 1, 0 when not yet known;
 * only the collector writes it) follow the header, mask + 1 of each.
 */
struct obj_table {
	struct obj_table *retired_next;
	uint32_t bytes;
	uint32_t mask;
	uint64_t key;
	uint32_t used;
	uint32_t unused;
	uint64_t pad[4];
	struct obj_slot slot[];
};

/*
 * A call site of the thread. One inside a lock wrapper counts nothing of
 * its own: step says how to find its caller (frames_wrapper_step()), as
 * of the wrapper set of generation gen.
 */
struct site_slot {
	uint64_t key;		/* 0: empty; written last, with release */
	struct obj_table *objects;
	int32_t step;		/* 0: not in a wrapper */
	uint32_t gen;		/* frames_wrappers_gen when step was found */
	uint64_t via;		/* the call site inside the wrappers its calls
				   went through; 0: none (written before key
				   or, later, once and read by the collector) */
};

struct site_index {
	struct site_index *retired_next;
	uint32_t bytes;
	uint32_t mask;
	uint32_t used;
	uint32_t unused;
	uint64_t pad[5];
	struct site_slot slot[];
};

enum table_state { TABLE_FREE, TABLE_CLAIMING, TABLE_LIVE };

struct stack_store;

/*
 * The last hop out of a fixed-frame wrapper: a call from site key whose
 * return address in the wrapper's frame is caller counts at site (valid
 * while the wrapper set is of generation gen and the index is not grown).
 */
struct wrap_hop {
	uint64_t key;		/* 0: none */
	uint64_t caller;
	struct site_slot *site;
	int32_t step;
	uint32_t gen;
};

/*
 * The latest acquisition of a lock by a thread, in a slot chosen by the
 * lock's address: a waiter that reads the lock's owner finds there the site
 * that holds it. Written by the owner on every acquisition, read by
 * waiters with no ordering: a torn or stale read only mis-names a holder.
 */
#define RECENT_SLOTS 16
struct held_recent {
	uint64_t object;
	uint64_t key;
};

/*
 * The slot of a lock in a thread's recent[]: its address over 8, no hash
 * (a multiply here cost every acquisition; locks in an array, 40 bytes
 * apart, still take 16 slots in turn).
 */
static inline unsigned recent_slot(const void *lock)
{
	return (unsigned)((uintptr_t)lock >> 3) & (RECENT_SLOTS - 1);
}

/*
 * The wait a thread is blocked in now, for the collector to send before
 * it ends (hooks.c, wait_begin()). The owner stores key, object and
 * holder, then t0 with release; it clears t0 first when the wait ends,
 * before the wait's counts grow, and the collector reads the counts
 * before this: a wait is never counted both ended and in progress.
 */
struct wait_now {
	uint64_t t0;		/* clock_now_ns() at its start; 0: none */
	uint64_t key;		/* the row key it counts on */
	uint64_t object;	/* as its object slot holds it */
	uint64_t holder;	/* the lock's holder TID; 0: unknown */
	uint64_t ended_at;	/* when the last wait shown ended */
	uint64_t ended_t0;	/* its t0 (written after ended_at, release) */
};

/*
 * The timed holds of one (key, object) of a thread (hooks.c): a compact
 * table apart from the entries, which are for waits, so that a lock that
 * never waits costs 32 bytes here when its holds are timed, not an entry.
 * Written by the owner (key last, with release), read by the collector.
 */
#define HOLD_SLOTS 127	/* with the header, 8 KiB: one arena class */
#define HOLD_SLOTS_USED (HOLD_SLOTS * 3 / 4)	/* full past this */
struct hold_slot {
	uint64_t key;		/* 0: empty */
	uint64_t object;	/* as its object slot holds it */
	uint64_t hold_ns;
	uint64_t holds;
	uint64_t max_ns;	/* the longest hold */
	uint64_t epoch_max_ns;	/* the longest of collector epoch max_epoch */
	uint32_t max_epoch;
	uint32_t unused[3];
};

struct hold_table {
	uint32_t used;
	uint32_t unused[15];
	struct hold_slot slot[HOLD_SLOTS];
};
_Static_assert(sizeof(struct hold_table) == 8192, "a hold table is 8 KiB");

/*
 * Lock order (order.c): a thread that acquires a lock while it holds a
 * timed one (held_timed) notes the nesting here, once per (held object
 * and its key, new object and its key), with the stack of the inner
 * acquisition the first time. Written by the owner (then_key last, with
 * release); global and hits_seen are the collector's.
 */
#define ORDER_EDGES 32
#define ORDER_EDGES_USED (ORDER_EDGES * 3 / 4)	/* full past this */
#define ORDER_FRAMES 16
#define ORDER_NO_ROOM UINT32_MAX
struct order_edge {
	uint64_t first_key, first_object;
	uint64_t then_object;
	uint64_t then_key;	/* 0: empty */
	uint64_t hits;		/* times this nesting was seen */
	uint64_t t0;		/* when first seen (clock_now_ns()) */
	uint64_t hits_seen;	/* collector only: hits it merged */
	uint32_t global;	/* collector only: its merged edge + 1;
				   ORDER_NO_ROOM: none could be had */
	uint32_t depth;		/* of frames; 0: no stack */
	uint64_t frames[ORDER_FRAMES];
};

struct order_table {
	uint32_t used;
	uint32_t unused[15];
	struct order_edge edge[ORDER_EDGES];
};
_Static_assert(sizeof(struct order_table) <= 8192, "an order table fits 8 KiB");

struct thread_table {
	struct lf_node free_link;	/* the free list's; only lfstack.h writes it */
	pthread_mutex_t sentinel;	/* robust, held for the thread's life */
	uint32_t tid;
	uint32_t state;			/* enum table_state */
	struct site_index *sites;	/* published with release */
	struct thread_table *all_next;	/* every table ever made */
	uint64_t dropped;		/* events with no room to record */
	uint64_t nested;		/* calls made inside our own code */
	struct frames_reader reader;	/* see frames.h */
	struct wrap_hop last_hop;	/* owner only */
	struct stack_store *stacks;	/* see unwind.h; NULL until needed */
	uint32_t unwind_epoch;		/* unwinding budget, see unwind.h */
	uint32_t unwinds;
	uint64_t unwind_credit_ns;
	struct held_recent recent[RECENT_SLOTS];	/* see held_recent */
	struct hold_table *holds;	/* NULL until a hold is timed; release */
	struct order_table *order;	/* NULL until a nesting; release */
	struct wait_now waiting;	/* see wait_now */
};

/* A hold being timed (a sampled acquisition): released by an unlock hook. */
struct held_timed {
	uint64_t object;	/* the lock's address */
	struct hold_slot *slot;	/* where its time goes */
	uint64_t t0;
};
#define HELD_TIMED_MAX 4

/* The calling thread's recording state. */
struct thread_state {
	struct thread_table *table;	/* NULL until its first lock call */
	uint32_t depth;			/* nonzero inside the collector */
	bool never;			/* the collector's own thread */
	uint8_t nheld;			/* held[] in use */
	uint32_t sample_left;		/* acquisitions until one is timed */
	uint32_t sample_seed;		/* the sampling period's randomness */
	struct held_timed held[HELD_TIMED_MAX];
};

extern __thread struct thread_state tls_self;
/* Bumped by the collector thread every scan; read on the slow path. */
extern uint32_t table_epoch;

/*
 * What a dead thread wrote to its table is safe for the collector to read
 * and recycle once the kernel marked its sentinel: the thread is gone. A
 * ThreadSanitizer build cannot see that edge, so it is spelled out there:
 * every hook releases its table on the way out, and the collector
 * acquires a table it finds dead.
 */
#ifdef __SANITIZE_THREAD__
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define table_sync_release(t) do { if (t) __tsan_release(t); } while (0)
#define table_sync_acquire(t) __tsan_acquire(t)
#else
#define table_sync_release(t) ((void)(t))
#define table_sync_acquire(t) ((void)(t))
#endif

static inline uint64_t table_load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/*
 * Add to a counter only this thread writes. One add instruction, so that a
 * signal handler of this thread cannot split it, and the collector thread
 * reads the old or the new value of the aligned word, never a mix.
 */
static inline void table_add(uint64_t *p, uint64_t v)
{
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
	__asm__ volatile("addq %1, %0" : "+m"(*p) : "r"(v));
#else
	__atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + v,
			 __ATOMIC_RELAXED);
#endif
}

static inline void table_store(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

static inline struct entry **obj_entries(struct obj_table *o)
{
	return (struct entry **)&o->slot[o->mask + 1];
}

static inline uint32_t *obj_rows(struct obj_table *o)
{
	return (uint32_t *)&obj_entries(o)[o->mask + 1];
}

/* Slow parts of the lookups below: add a site or an object; NULL when no room. */
struct site_slot *table_add_site(struct thread_table *t, uint64_t key);
struct obj_slot *table_add_object(struct thread_table *t, struct site_slot *s,
				  uint64_t object);

/* The site slot of key in the calling thread, added when new; NULL if no room. */
static inline struct site_slot *table_site(struct thread_table *t, uint64_t key)
{
	struct site_index *si = t->sites;
	uint32_t i = hash_fast(key) & si->mask;

	for (;; i = (i + 1) & si->mask) {
		struct site_slot *s = &si->slot[i];

		if (s->key == key)
			return s;
		if (s->key == 0)
			return table_add_site(t, key);
	}
}

/* The slot of object at site s, added when new; NULL when there is no room. */
static inline struct obj_slot *table_object(struct thread_table *t,
					    struct site_slot *s, uint64_t object)
{
	struct obj_table *o = s->objects;

	for (uint32_t i = hash_fast(object) & o->mask;; i = (i + 1) & o->mask) {
		struct obj_slot *x = &o->slot[i];

		if (x->object == object)
			return x;
		if (x->object == 0)
			return table_add_object(t, s, object);
	}
}

/*
 * The slot of a site inside a lock wrapper (or one whose verdict is
 * stale): *key becomes that of the first caller outside every wrapper,
 * whose slot is returned. cfa is the CFA of the hook called from *key.
 */
struct obj_slot *table_wrapped_slot(struct thread_table *t, uint64_t *key,
				    uint64_t object, uint64_t cfa);

/*
 * The calling thread's slot for a key, added when new; NULL when there is
 * no room at all (the caller counts a drop). A call from inside a lock
 * wrapper counts on its caller's key, which *key becomes. Owner thread
 * only, inside the collector (tls_self.depth set): a signal handler's
 * lock calls then pass through instead of interleaving with a table
 * change.
 */
static inline struct obj_slot *table_slot(struct thread_table *t, uint64_t *key,
					  uint64_t object, uint64_t cfa)
{
	struct site_slot *s = table_site(t, *key);

	if (s == NULL)
		return NULL;
	if (__builtin_expect(s->step != 0 || s->gen != __atomic_load_n(
			     &frames_wrappers_gen, __ATOMIC_RELAXED), 0))
		return table_wrapped_slot(t, key, object, cfa);
	return table_object(t, s, object);
}

/* The slot of a key already resolved past its wrappers, added when new. */
static inline struct obj_slot *table_slot_of(struct thread_table *t,
					     uint64_t key, uint64_t object)
{
	struct site_slot *s = table_site(t, key);

	return s ? table_object(t, s, object) : NULL;
}

/*
 * The entry of a key whose slot exists (object as the slot holds it),
 * allocated at its first use; NULL when there is no room. Owner thread,
 * inside the collector.
 */
struct entry *table_entry(struct thread_table *t, uint64_t key,
			  uint64_t object);

/*
 * The hold slot of (key, object) in the calling thread, added when new;
 * NULL when there is no room. Owner thread, inside the collector.
 */
struct hold_slot *table_hold_slot(struct thread_table *t, uint64_t key,
				  uint64_t object);

/*
 * Claim a table for the calling thread, holding its sentinel with trylock
 * (libc's own: the sentinel is ours alone); NULL when there is no memory.
 */
struct thread_table *table_claim(int (*trylock)(pthread_mutex_t *));

/* Whether a table's thread has exited (collector thread). */
bool table_thread_gone(const struct thread_table *t);

/* First of every table ever made (acquire). */
struct thread_table *table_first(void);

/* Number of threads that ever claimed a table. */
uint32_t table_threads_seen(void);

/* Events of threads that could not get a table at all. */
uint64_t table_claim_drops(void);

/* Count an event of a thread without a table. */
void table_count_claim_drop(void);

/* Free what owners retired since the last call (collector thread). */
void table_free_retired(void);

/*
 * Free a dead thread's table contents and make it claimable (collector);
 * its stack store is unwind_free()'s to release first.
 */
void table_recycle(struct thread_table *t);

/* Forget every table and thread: the child side of fork(). */
void table_forget_all(void);

#endif
