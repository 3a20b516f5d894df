/*
 * Sets of lock types, as --type and the live screen's T choose them:
 * "locks" (what threads contend on) and "idle" (waits for work or for a
 * wake-up: condvar, futex-wake).
 */
#ifndef QSPTOP_LOCKSET_H
#define QSPTOP_LOCKSET_H

#include <stdbool.h>
#include <stddef.h>

#include "../common/types.h"

#define LOCKSET_ALL ((1u << LOCK_TYPE_COUNT) - 1)
#define LOCKSET_IDLE (1u << LOCK_CONDVAR | 1u << LOCK_FUTEX_WAKE)
#define LOCKSET_LOCKS (LOCKSET_ALL & ~LOCKSET_IDLE)

/* Whether a type is an idle wait (condvar, futex-wake). */
bool lockset_idle(unsigned type);

/*
 * Parse "mutex,rwlock,..." (type names, "rwlock" for both kinds, "locks",
 * "idle"). Returns the set, or 0 with the bad name in bad.
 */
unsigned lockset_parse(const char *list, char *bad, size_t size);

/* "all", "locks", "idle" or the names joined by commas. */
void lockset_name(unsigned set, char *buf, size_t size);

/* The names --type takes, comma-separated: the types, then the aliases. */
void lockset_names(char *buf, size_t size);

#endif
