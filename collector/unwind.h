/*
 * Stacks of contended waits, captured by the waiting thread itself before
 * it blocks (so unwinding never lengthens anyone's critical section), and
 * interned in its own table.
 */
#ifndef QSPTOP_UNWIND_H
#define QSPTOP_UNWIND_H

#include <stdint.h>

#include "table.h"

/*
 * Unwinding may cost at most about 1/UNWIND_SHARE of the time waited: each
 * wait earns that share as credit, each unwind (~UNWIND_COST_NS, measured
 * at depth 7-13) spends it. UNWIND_BASE unwinds per thread and collector
 * interval are always allowed. Waits beyond that are counted without a
 * stack, so the per-stack split becomes a sample and says so.
 */
#define UNWIND_SHARE 100
#define UNWIND_COST_NS 100
#ifndef UNWIND_BASE
#define UNWIND_BASE 16
#endif
/* Credit kept at most, so that one long wait does not pay for a storm. */
#define UNWIND_CREDIT_MAX_NS (1000 * UNWIND_COST_NS)

/*
 * The counter of entry e's waits through the calling thread's current
 * stack, which starts at site; its STACK_NONE counter when the budget is
 * spent or the stack cannot be had; NULL when there is no room at all.
 */
struct stack_use *unwind_use(struct thread_table *t, struct entry *e,
			     uint64_t site);

/* Earn unwinding credit for a wait of ns nanoseconds (owner thread). */
static inline void unwind_earn(struct thread_table *t, uint64_t ns)
{
	uint64_t credit = t->unwind_credit_ns + ns / UNWIND_SHARE;

	t->unwind_credit_ns = credit < UNWIND_CREDIT_MAX_NS ? credit
							    : UNWIND_CREDIT_MAX_NS;
}

#endif
