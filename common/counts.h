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
 */
#ifndef QSPTOP_COUNTS_H
#define QSPTOP_COUNTS_H

#include <stdbool.h>
#include <stdint.h>

#include "types.h"

struct lock_counts {
	uint64_t acquisitions;	/* the lock was taken, at once or after a wait */
	uint64_t contended;	/* acquisitions after a wait */
	uint64_t timeouts;	/* waits that ended without the lock */
	uint64_t wait_ns;	/* every wait, timed out or not */
	uint64_t failed;	/* busy trylocks, timed-out waits */
	uint64_t hist[HIST_BUCKETS];	/* every wait, by hist_bucket() */
};

/* Add b to a, all but the histogram (for a b whose histogram is empty). */
static inline void lock_counts_add_calls(struct lock_counts *a,
					 const struct lock_counts *b)
{
	a->acquisitions += b->acquisitions;
	a->contended += b->contended;
	a->timeouts += b->timeouts;
	a->wait_ns += b->wait_ns;
	a->failed += b->failed;
}

/* Add b to a. */
static inline void lock_counts_add(struct lock_counts *a,
				   const struct lock_counts *b)
{
	lock_counts_add_calls(a, b);
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		a->hist[i] += b->hist[i];
}

/* Waits of any outcome: those the wait time and the histogram cover. */
static inline uint64_t lock_waits(uint64_t contended, uint64_t timeouts)
{
	return contended + timeouts;
}

/* Waits of a lock_counts: those its wait time and histogram cover. */
static inline uint64_t lock_counts_waits(const struct lock_counts *c)
{
	return lock_waits(c->contended, c->timeouts);
}

/* a - b, or 0 if a count went backwards (it never should). */
static inline uint64_t lock_counts_sub_sat(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
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
	d->acquisitions = lock_counts_sub_sat(now->acquisitions,
					      last->acquisitions);
	d->contended = lock_counts_sub_sat(now->contended, last->contended);
	d->timeouts = lock_counts_sub_sat(now->timeouts, last->timeouts);
	d->wait_ns = lock_counts_sub_sat(now->wait_ns, last->wait_ns);
	d->failed = lock_counts_sub_sat(now->failed, last->failed);
	last->acquisitions = now->acquisitions;
	last->contended = now->contended;
	last->timeouts = now->timeouts;
	last->wait_ns = now->wait_ns;
	last->failed = now->failed;
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

	return waits ? (double)c->wait_ns / (double)waits : 0;
}

/*
 * The share of calls that had to wait, 0 to 1: waits over acquisitions
 * and timeouts (a call ends with one or the other); 0 without calls.
 */
static inline double lock_counts_wait_share(const struct lock_counts *c)
{
	uint64_t calls = c->acquisitions + c->timeouts;

	return calls ? (double)lock_counts_waits(c) / (double)calls : 0;
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
