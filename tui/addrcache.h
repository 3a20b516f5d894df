/*
 * A table of fixed-size values keyed by a 64-bit address: open addressing,
 * doubled when half full. The answers symbols and wrappers worked out once
 * per address live in one.
 */
#ifndef QSPTOP_ADDRCACHE_H
#define QSPTOP_ADDRCACHE_H

#include <stddef.h>
#include <stdint.h>

struct addrcache;

/* An empty cache of values of value_size bytes. */
struct addrcache *addrcache_new(size_t value_size);

/* Free the cache, calling drop (if not NULL) on every value first. */
void addrcache_free(struct addrcache *c, void (*drop)(void *value));

/* The value stored under key, or NULL. */
void *addrcache_find(struct addrcache *c, uint64_t key);

/*
 * A zeroed value stored under key, which must not be there yet; valid
 * until the next addrcache_add() or addrcache_clear().
 */
void *addrcache_add(struct addrcache *c, uint64_t key);

/* Forget every value, calling drop (if not NULL) on each first. */
void addrcache_clear(struct addrcache *c, void (*drop)(void *value));

/* How many values are stored. */
size_t addrcache_count(const struct addrcache *c);

#endif
