/*
 * The counts of lock calls, one record for every layer: a thread's entry
 * in the collector, a row's totals, the wire, the front end's model.
 *
 * Every field is a sum, so counts of threads, intervals and rows add up.
 * The longest wait is not: each layer keeps it beside, over its own span
 * (since start, since last sent, since reset), and it covers every wait
 * counted here, so the average wait never exceeds it.
 *
 * A wait ends with the lock (contended) or without it (timeouts: a timed
 * lock or condvar wait that timed out, a futex wait that failed); wait_ns
 * and the histogram cover both, and nothing else.
 *
 * The calls (lock_calls) travel apart from the histogram wherever a layer
 * has no histogram; the waits through one stack or of one thread are one
 * record too (wait_counts), from the hook to the drill-down.
 */
#ifndef QSPTOP_COUNTS_H
#define QSPTOP_COUNTS_H

#include <stdbool.h>
#include <stdint.h>

#include "types.h"

/* The calls of a lock_counts, apart from its histogram. */
struct lock_calls {
	uint64_t acquisitions;	/* the lock was taken, at once or after a wait */
	uint64_t contended;	/* acquisitions after a wait */
	uint64_t timeouts;	/* waits that ended without the lock */
	uint64_t wait_ns;	/* every wait, timed out or not */
	uint64_t failed;	/* busy trylocks, timed-out waits */
	uint64_t hold_ns;	/* time held, of the holds timed (a sample) */
	uint64_t holds_timed;	/* holds timed: hold_ns covers these */
	uint64_t caused_wait_ns;	/* front end only: others' waits behind
					   holds taken here (blame) */
};

struct lock_counts {
	struct lock_calls calls;
	uint64_t hist[HIST_BUCKETS];	/* every wait, by hist_bucket() */
};

/*
 * The waits through one stack, or of one thread: those that ended with
 * the lock (count), those that timed out, and the time of both.
 */
struct wait_counts {
	uint64_t count;
	uint64_t timeouts;
	uint64_t wait_ns;
};

/* Add b to a. */
static inline void lock_calls_add(struct lock_calls *a,
				  const struct lock_calls *b)
{
	a->acquisitions += b->acquisitions;
	a->contended += b->contended;
	a->timeouts += b->timeouts;
	a->wait_ns += b->wait_ns;
	a->failed += b->failed;
	a->hold_ns += b->hold_ns;
	a->holds_timed += b->holds_timed;
	a->caused_wait_ns += b->caused_wait_ns;
}

/* a - b, or 0 if a count went backwards (it never should). */
static inline uint64_t lock_counts_sub_sat(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* Take b from a, each count at least 0. */
static inline void lock_calls_sub(struct lock_calls *a,
				  const struct lock_calls *b)
{
	a->acquisitions = lock_counts_sub_sat(a->acquisitions, b->acquisitions);
	a->contended = lock_counts_sub_sat(a->contended, b->contended);
	a->timeouts = lock_counts_sub_sat(a->timeouts, b->timeouts);
	a->wait_ns = lock_counts_sub_sat(a->wait_ns, b->wait_ns);
	a->failed = lock_counts_sub_sat(a->failed, b->failed);
	a->hold_ns = lock_counts_sub_sat(a->hold_ns, b->hold_ns);
	a->holds_timed = lock_counts_sub_sat(a->holds_timed, b->holds_timed);
	a->caused_wait_ns = lock_counts_sub_sat(a->caused_wait_ns,
						b->caused_wait_ns);
}

/*
 * c's counts read into out, each word atomically (the thread that owns c
 * may be adding), the wait time first: a thread adds it last.
 */
static inline void lock_calls_load(struct lock_calls *out,
				   const struct lock_calls *c)
{
	out->wait_ns = __atomic_load_n(&c->wait_ns, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	out->acquisitions = __atomic_load_n(&c->acquisitions, __ATOMIC_RELAXED);
	out->contended = __atomic_load_n(&c->contended, __ATOMIC_RELAXED);
	out->timeouts = __atomic_load_n(&c->timeouts, __ATOMIC_RELAXED);
	out->failed = __atomic_load_n(&c->failed, __ATOMIC_RELAXED);
	out->hold_ns = __atomic_load_n(&c->hold_ns, __ATOMIC_RELAXED);
	out->holds_timed = __atomic_load_n(&c->holds_timed, __ATOMIC_RELAXED);
	out->caused_wait_ns = 0;
}

/* The sum of every count: as each only grows, it changes when any does. */
static inline uint64_t lock_calls_sum(const struct lock_calls *c)
{
	return c->acquisitions + c->contended + c->timeouts + c->wait_ns +
	       c->failed + c->hold_ns + c->holds_timed + c->caused_wait_ns;
}

/* Whether no call was counted. */
static inline bool lock_calls_empty(const struct lock_calls *c)
{
	return (c->acquisitions | c->contended | c->timeouts | c->wait_ns |
		c->failed | c->hold_ns | c->holds_timed |
		c->caused_wait_ns) == 0;
}

/* Add b to a. */
static inline void lock_counts_add(struct lock_counts *a,
				   const struct lock_counts *b)
{
	lock_calls_add(&a->calls, &b->calls);
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		a->hist[i] += b->hist[i];
}

/* Add b to a. */
static inline void wait_counts_add(struct wait_counts *a,
				   const struct wait_counts *b)
{
	a->count += b->count;
	a->timeouts += b->timeouts;
	a->wait_ns += b->wait_ns;
}

/* Take b from a, each count at least 0. */
static inline void wait_counts_sub(struct wait_counts *a,
				   const struct wait_counts *b)
{
	a->count = lock_counts_sub_sat(a->count, b->count);
	a->timeouts = lock_counts_sub_sat(a->timeouts, b->timeouts);
	a->wait_ns = lock_counts_sub_sat(a->wait_ns, b->wait_ns);
}

/* Whether no wait was counted. */
static inline bool wait_counts_empty(const struct wait_counts *w)
{
	return (w->count | w->timeouts | w->wait_ns) == 0;
}

/*
 * The calls the waits w stand for: each ended with the lock (an
 * acquisition after a wait) or timed out.
 */
static inline struct lock_calls wait_counts_calls(const struct wait_counts *w)
{
	return (struct lock_calls){ .acquisitions = w->count,
				    .contended = w->count,
				    .timeouts = w->timeouts,
				    .wait_ns = w->wait_ns };
}

/* Waits of any outcome: those the wait time and the histogram cover. */
static inline uint64_t lock_waits(uint64_t contended, uint64_t timeouts)
{
	return contended + timeouts;
}

/* Waits of a lock_counts: those its wait time and histogram cover. */
static inline uint64_t lock_counts_waits(const struct lock_counts *c)
{
	return lock_waits(c->calls.contended, c->calls.timeouts);
}

/*
 * The growth d (zeroed by the caller) from *last to now, each count at
 * least 0, and *last brought up to now. Only waits fill the histogram:
 * until now counts one, neither histogram is touched (a bucket read
 * ahead of its wait's count is taken with a later update). Returns
 * whether d's histogram was filled in.
 */
static inline bool lock_counts_advance(struct lock_counts *d,
				       struct lock_counts *last,
				       const struct lock_counts *now)
{
	d->calls = now->calls;
	lock_calls_sub(&d->calls, &last->calls);
	last->calls = now->calls;
	if (lock_counts_waits(now) == 0)
		return false;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		d->hist[i] = lock_counts_sub_sat(now->hist[i], last->hist[i]);
		last->hist[i] = now->hist[i];
	}
	return true;
}

/* Average wait in ns: wait time over waits; 0 only without waits. */
static inline double lock_counts_avg_wait_ns(const struct lock_counts *c)
{
	uint64_t waits = lock_counts_waits(c);

	return waits ? (double)c->calls.wait_ns / (double)waits : 0;
}

/*
 * The share of calls that had to wait, 0 to 1: waits over acquisitions
 * and timeouts (a call ends with one or the other); 0 without calls.
 */
static inline double lock_counts_wait_share(const struct lock_counts *c)
{
	uint64_t calls = c->calls.acquisitions + c->calls.timeouts;

	return calls ? (double)lock_counts_waits(c) / (double)calls : 0;
}

/*
 * Estimated time held over all acquisitions: the timed holds are a
 * sample of them (hooks.c), so their average stands for every hold.
 */
static inline double lock_calls_hold_est_ns(const struct lock_calls *c)
{
	return c->holds_timed ? (double)c->hold_ns / (double)c->holds_timed *
					(double)c->acquisitions
			      : 0;
}

/* Whether any bucket of the histogram holds a wait. */
static inline bool lock_counts_hist_any(const struct lock_counts *c)
{
	uint64_t any = 0;

	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		any |= c->hist[i];
	return any != 0;
}

#endif
