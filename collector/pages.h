/*
 * Whole pages from mmap for the unwind tables and their scratch space:
 * never malloc, which belongs to the application we live in (it may nest
 * the very locks we hook).
 */
#ifndef QSPTOP_PAGES_H
#define QSPTOP_PAGES_H

#include <stddef.h>
#include <sys/mman.h>

#define PAGES_SIZE 4096u

/* len rounded up to whole pages; 0 when that overflows. */
static inline size_t pages_round(size_t len)
{
	return len > (size_t)-1 - PAGES_SIZE ? 0
					      : (len + PAGES_SIZE - 1) & ~(size_t)(PAGES_SIZE - 1);
}

/*
 * Zeroed pages for len bytes; NULL when there are none. Populated now, so
 * that a capture touching them later (a cache slot never written yet) does
 * not fault into the kernel from inside a lock hook.
 */
static inline void *pages_map(size_t len)
{
	size_t n = pages_round(len);
	void *p;

	if (n == 0)
		return NULL;
	p = mmap(NULL, n, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* Give back what pages_map(len) returned. */
static inline void pages_unmap(void *p, size_t len)
{
	if (p != NULL)
		munmap(p, pages_round(len));
}

#endif
