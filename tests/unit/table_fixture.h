/*
 * What the collector's unit tests share: counting into a thread's table
 * as the hooks do, many calls at a time.
 */
#ifndef QSPTOP_TEST_TABLE_FIXTURE_H
#define QSPTOP_TEST_TABLE_FIXTURE_H

#include "../../collector/table.h"

/* Count n acquisitions of (site, object, type) in t, as a hook would. */
static inline struct obj_slot *fixture_acquire(struct thread_table *t,
					       uint64_t site, uint64_t object,
					       uint32_t type, uint64_t n)
{
	struct obj_slot *x = table_slot_of(t, KEY(site, type), object);

	if (x)
		table_add(&x->acquisitions, n);
	return x;
}

/* Count waits in e: contended, timed out (and so failed), their time. */
static inline void fixture_waits(struct entry *e, uint64_t contended,
				 uint64_t timeouts, uint64_t ns)
{
	table_add(&e->c.calls.contended, contended);
	table_add(&e->c.calls.timeouts, timeouts);
	table_add(&e->c.calls.failed, timeouts);
	table_add(&e->c.calls.wait_ns, ns);
	table_add(&e->c.hist[hist_bucket(ns)], contended + timeouts);
}

#endif
