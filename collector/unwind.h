/*
 * Stacks of contended waits, captured by the waiting thread itself before
 * it blocks (so unwinding never lengthens anyone's critical section), and
 * interned in its own table.
 */
#ifndef QSPTOP_UNWIND_H
#define QSPTOP_UNWIND_H

#include <stdint.h>

#include "table.h"

/* Stacks a thread unwinds per collector interval; the rest go unwound. */
#ifndef UNWIND_BUDGET
#define UNWIND_BUDGET 64
#endif

/*
 * The counter of entry e's waits through the calling thread's current
 * stack, which starts at site; its STACK_NONE counter when the budget is
 * spent or the stack cannot be had; NULL when there is no room at all.
 */
struct stack_use *unwind_use(struct thread_table *t, struct entry *e,
			     uint64_t site);

#endif
