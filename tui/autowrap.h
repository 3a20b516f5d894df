/*
 * Lock wrappers found without being named: a short function holding a lock
 * call (or a call to a wrapper) that the waits' stacks show reached from
 * several distinct functions, or from a wrapper, and whose code (read from
 * the process) calls no unlock function, is a wrapper, with a name or
 * stripped. What
 * is found is added to a struct wrappers, so that from then on its calls
 * count on its callers' rows, as for --wrapper.
 */
#ifndef QSPTOP_AUTOWRAP_H
#define QSPTOP_AUTOWRAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "symbols.h"
#include "wrappers.h"

/* The rule's numbers (README "Lock wrappers found from evidence"). */
#define AUTOWRAP_MAX_BYTES 512	/* a wrapper's code is at most this long */
#define AUTOWRAP_MIN_CALLERS 3	/* distinct functions seen calling it */

struct autowrap;

/* Nothing found yet, functions' extents read through s. */
struct autowrap *autowrap_new(struct symbols *s);
void autowrap_free(struct autowrap *aw);

/*
 * Read the stacks m defined since the last call (all of them again after
 * a find, for wrappers calling wrappers) and add the wrappers they reveal
 * to w. Returns how many were found this time.
 */
size_t autowrap_scan(struct autowrap *aw, const struct model *m,
		     struct wrappers *w);

/* How many wrappers were found. */
size_t autowrap_count(const struct autowrap *aw);

/* Found wrapper i: its code [lo, hi) and the distinct callers seen. */
void autowrap_get(const struct autowrap *aw, size_t i, uint64_t *lo,
		  uint64_t *hi, unsigned *callers);

#endif
