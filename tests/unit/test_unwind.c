/*
 * The unwinding budget of a thread: its base per interval, then credit
 * earned as 1% of the time waited; beyond that, waits go without a stack.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "../../collector/frames.h"
#include "../../collector/hooks.h"
#include "../../collector/unwind.h"
#include "check.h"

/* What the collector's tables need from hooks.c. */
struct real_functions real;

static struct thread_table *t;
static struct entry entry;

/* One contended wait at a fixed site: the use it is counted under. */
static __attribute__((noinline)) struct stack_use *wait_here(void)
{
	uint64_t site = (uint64_t)(uintptr_t)__builtin_return_address(0);

	return unwind_use(t, &entry, site);
}

static __attribute__((noinline)) struct stack_use *caller(void)
{
	struct stack_use *u = wait_here();

	__asm__ volatile("");
	return u;
}

static uint32_t stack_index(const struct stack_use *u)
{
	return u ? u->stack : 0xffff;
}

/* A wait from one fixed call chain. */
static __attribute__((noinline)) struct stack_use *one_chain(void)
{
	struct stack_use *u = caller();

	__asm__ volatile("");
	return u;
}

/* Whether one wait, from one fixed call chain, got a stack. */
static __attribute__((noinline)) int unwound(void)
{
	return stack_index(caller()) < STORE_STACKS;
}

int main(void)
{
	struct stack_use *u[2];
	uint32_t first;
	int n = 0;

	t = calloc(1, sizeof(*t));
	frames_sync();
	first = stack_index(caller());
	CHECK(first < STORE_STACKS, "the first wait is unwound (stack %u)", first);
	CHECK(t->stacks && t->stacks->stacks[first].depth >= 2,
	      "its stack has the caller, depth %u",
	      t->stacks ? t->stacks->stacks[first].depth : 0);
	for (int i = 1; i < UNWIND_BASE; i++)
		n += unwound();
	CHECK(n == UNWIND_BASE - 1, "the base allows %d unwinds, got %d", UNWIND_BASE, n + 1);
	CHECK(!unwound(), "past the base, without credit: no stack");
	unwind_earn(t, 3 * UNWIND_COST_NS * UNWIND_SHARE);	/* three unwinds' worth */
	n = unwound() + unwound() + unwound();
	CHECK(n == 3, "credit for three unwinds buys three, got %d", n);
	CHECK(!unwound(), "credit spent: no stack");
	unwind_earn(t, UINT64_MAX / 2);
	CHECK(t->unwind_credit_ns == UNWIND_CREDIT_MAX_NS, "credit is capped");
	__atomic_add_fetch(&table_epoch, 1, __ATOMIC_RELAXED);
	t->unwind_credit_ns = 0;
	CHECK(unwound(), "a new interval renews the base");
	for (volatile int i = 0; i < 2; i++)	/* one call site, not unrolled */
		u[i] = one_chain();
	CHECK(u[0] == u[1] && stack_index(u[0]) < STORE_STACKS,
	      "the same stack counts under the same use");
	unwind_free(t);
	CHECK(t->stacks == NULL, "a dead thread's store is released");
	free(t);
	return check_summary();
}
