/*
 * A lock-free stack of blocks the collector never unmaps, linked through
 * their first word. Its head packs the top block's address / 64 with a tag
 * bumped by every push and pop, so a pop that read a stale head fails its
 * exchange instead of corrupting the stack (ABA). Blocks must be 64-byte
 * aligned (arena blocks are). A late pop may still read the first word of
 * a block another thread has taken: its new owner writes that word only
 * atomically, or keeps it as a link of its own (struct thread_table).
 */
#ifndef QSPTOP_LFSTACK_H
#define QSPTOP_LFSTACK_H

#include <stdbool.h>
#include <stdint.h>

#define LF_PTR_BITS 41
#define LF_PTR_MASK ((1ull << LF_PTR_BITS) - 1)

struct lf_node {
	struct lf_node *next;
};

static inline struct lf_node *lf_top(uint64_t head)
{
	return (struct lf_node *)(uintptr_t)((head & LF_PTR_MASK) << 6);
}

static inline uint64_t lf_head(struct lf_node *n, uint64_t old)
{
	return ((uint64_t)(uintptr_t)n >> 6) |
	       ((old >> LF_PTR_BITS) + 1) << LF_PTR_BITS;
}

static inline void lf_push(uint64_t *head, void *block)
{
	struct lf_node *n = block;
	uint64_t old = __atomic_load_n(head, __ATOMIC_RELAXED);

	do {
		__atomic_store_n(&n->next, lf_top(old), __ATOMIC_RELAXED);
	} while (!__atomic_compare_exchange_n(head, &old, lf_head(n, old), true,
					      __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

/*
 * Pop a block, or NULL. Reading next from a block another thread just
 * popped reads whatever it wrote there; the tag makes the exchange fail.
 */
static inline void *lf_pop(uint64_t *head)
{
	uint64_t old = __atomic_load_n(head, __ATOMIC_ACQUIRE);
	struct lf_node *n, *next;

	do {
		n = lf_top(old);
		if (n == NULL)
			return NULL;
		next = __atomic_load_n(&n->next, __ATOMIC_RELAXED);
	} while (!__atomic_compare_exchange_n(head, &old, lf_head(next, old), true,
					      __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE));
	return n;
}

#endif
