/*
 * Sets of lock types and roles, as --type and the live screen's T choose
 * them: types by name, "locks" the rows of the lock role (what threads
 * contend on) and "idle" those of the idle role (waits for work or for a
 * wake-up), whatever their type (role.h).
 */
#ifndef QSPTOP_LOCKSET_H
#define QSPTOP_LOCKSET_H

#include <stdbool.h>
#include <stddef.h>

#include "../common/types.h"

#define LOCKSET_ALL ((1u << LOCK_TYPE_COUNT) - 1)
/* Bits past the types: every row of a role. */
#define LOCKSET_LOCKS (1u << 30)
#define LOCKSET_IDLE (1u << 31)
/* The types that are idle when nothing else decides (condvar, futex-wake). */
#define LOCKSET_IDLE_TYPES (1u << LOCK_CONDVAR | 1u << LOCK_FUTEX_WAKE)

/* Whether a set shows a row of a type and role (enum role). */
bool lockset_shows(unsigned set, unsigned type, unsigned role);

/* Whether a set may show rows of both roles. */
bool lockset_both_roles(unsigned set);

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
