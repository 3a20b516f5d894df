/*
 * Whole pages from mmap for the unwind tables and their scratch space:
 * never malloc, which belongs to the application we live in (it may nest
 * the very locks we hook). What pages_map() returns counts against the
 * collector's memory cap (arena_charge_frames()).
 */
#ifndef QSPTOP_PAGES_H
#define QSPTOP_PAGES_H

#include <stddef.h>
#include <sys/mman.h>

#include "arena.h"

#define PAGES_SIZE 4096u

/* len rounded up to whole pages; 0 when that overflows. */
static inline size_t pages_round(size_t len)
{
	return len > (size_t)-1 - PAGES_SIZE ? 0
					      : (len + PAGES_SIZE - 1) & ~(size_t)(PAGES_SIZE - 1);
}

/*
 * Address space for len bytes, zero and not yet backed by memory: nothing
 * is counted, the caller charges the pages it touches. NULL when none.
 */
static inline void *pages_reserve(size_t len)
{
	size_t n = pages_round(len);
	void *p;

	if (n == 0)
		return NULL;
	p = mmap(NULL, n, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* Give back what pages_reserve(len) returned. */
static inline void pages_unreserve(void *p, size_t len)
{
	if (p != NULL)
		munmap(p, pages_round(len));
}

/*
 * Zeroed pages for len bytes, counted against the cap; NULL past it or
 * when there are none. Not populated: whoever fills them faults them in,
 * and pages a capture may write later (a cache) must be written now.
 */
static inline void *pages_map(size_t len)
{
	size_t n = pages_round(len);
	void *p;

	if (n == 0 || !arena_charge_frames(n))
		return NULL;
	p = pages_reserve(n);
	if (p == NULL)
		arena_uncharge_frames(n);
	return p;
}

/*
 * Like pages_map(), counted even past the cap: for the lists of modules,
 * of their tables and of lock wrappers' ranges, a few pages without which
 * no table could be given back when the cap shrinks, nor wrappers skipped.
 */
static inline void *pages_map_anyway(size_t len)
{
	void *p = pages_reserve(len);

	if (p != NULL)
		arena_charge_frames_anyway(pages_round(len));
	return p;
}

/* Give back what pages_map(len) or pages_map_anyway(len) returned. */
static inline void pages_unmap(void *p, size_t len)
{
	if (p != NULL) {
		pages_unreserve(p, len);
		arena_uncharge_frames(pages_round(len));
	}
}

#endif
