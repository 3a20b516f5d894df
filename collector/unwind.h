/*
 * Stacks of contended waits, captured by the waiting thread itself before
 * it blocks (so unwinding a lock wait never lengthens anyone's critical
 * section; a condvar wait's unwinding happens with the caller's mutex
 * held, see hooks.c), and interned in a store of its own, allocated at its
 * first capture.
 */
#ifndef QSPTOP_UNWIND_H
#define QSPTOP_UNWIND_H

#include <stdint.h>

#include "../common/proto.h"
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

#define STORE_STACKS 64
#define STORE_USES 256

/* A call stack this thread waited through; depth is written last. */
struct thread_stack {
	uint64_t frames[PROTO_STACK_DEPTH];	/* innermost (the site) first */
	uint32_t hash;
	uint32_t depth;				/* 0: empty slot */
};

/* Waits of one entry through one stack; entry is written last. */
struct stack_use {
	struct entry *entry;	/* NULL: empty */
	uint32_t stack;		/* index in stacks[] */
	uint32_t stack_row;	/* collector only: its stack row id + 1 */
	struct wait_counts w;	/* its waits */
};

struct stack_store {
	uint32_t nstacks;
	uint32_t nuses;
	struct thread_stack stacks[STORE_STACKS];
	struct stack_use uses[STORE_USES];
	uint16_t use_order[STORE_USES];		/* uses in use, in order */
	uint32_t global_id[STORE_STACKS];	/* collector only: id + 1 */
};

/*
 * The counter of entry e's waits through the calling thread's current
 * stack, which starts at site; NULL when the budget is spent or the stack
 * cannot be had (the wait then counts on e's no-stack counters).
 */
struct stack_use *unwind_use(struct thread_table *t, struct entry *e,
			     uint64_t site);

/*
 * The counter of entry e's waits spent behind holder (a row key, 0 for
 * unknown): a use of the pseudo-stack [PROTO_BLAME_MARK, holder], which
 * costs no unwinding; NULL when the store is full.
 */
struct stack_use *unwind_blame_use(struct thread_table *t, struct entry *e,
				   uint64_t holder);

/*
 * The counter of entry e's releases with waiters through the calling
 * thread's current stack, which starts at site (the unlock's return
 * address): a use of [PROTO_HOLDER_MARK, frames...], within the same
 * budget as a wait's stack; NULL when spent, full or not unwound.
 */
struct stack_use *unwind_holder_use(struct thread_table *t, struct entry *e,
				    uint64_t site);

/* Earn unwinding credit for a wait of ns nanoseconds (owner thread). */
static inline void unwind_earn(struct thread_table *t, uint64_t ns)
{
	uint64_t credit = t->unwind_credit_ns + ns / UNWIND_SHARE;

	t->unwind_credit_ns = credit < UNWIND_CREDIT_MAX_NS ? credit
							    : UNWIND_CREDIT_MAX_NS;
}

/* Release a dead thread's stack store (collector thread). */
void unwind_free(struct thread_table *t);

#endif
