/* Arrays that double as they fill, for the collector thread. */
#ifndef QSPTOP_GROW_H
#define QSPTOP_GROW_H

#include <stdlib.h>

/*
 * Make room for element n of *v, an array of *cap elements of size bytes
 * that grows to first, then doubles. Returns 0 when memory is short: the
 * collector then drops what it cannot keep, it never exits.
 */
static inline int grow_array(void **v, size_t *cap, size_t n, size_t size,
			     size_t first)
{
	size_t c = *cap ? *cap * 2 : first;
	void *p;

	if (n < *cap)
		return 1;
	p = realloc(*v, c * size);
	if (p == NULL)
		return 0;
	*v = p;
	*cap = c;
	return 1;
}

#endif
