/*
 * Address-keyed cache. A slot is a header (key, used) and the value after
 * it, padded so that the next slot's header stays aligned.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../common/hash.h"
#include "addrcache.h"
#include "xalloc.h"

#define CAP_MIN 256

struct slot {
	uint64_t key;
	uint64_t used;
};

struct addrcache {
	unsigned char *slots;
	size_t stride;		/* bytes per slot: header, value, padding */
	size_t cap, count;	/* cap is a power of two */
};

struct addrcache *addrcache_new(size_t value_size)
{
	struct addrcache *c = xcalloc(1, sizeof *c);
	size_t align = sizeof(struct slot);

	c->stride = sizeof(struct slot) + (value_size + align - 1) / align * align;
	c->cap = CAP_MIN;
	c->slots = xcalloc(c->cap, c->stride);
	return c;
}

static struct slot *slot_at(unsigned char *slots, size_t stride, size_t i)
{
	return (struct slot *)(void *)(slots + i * stride);
}

/* The slot holding key, or the free slot where it belongs. */
static struct slot *slot_for(unsigned char *slots, size_t stride, size_t cap,
			     uint64_t key)
{
	size_t i = hash_mix(key) & (cap - 1);
	struct slot *s;

	while ((s = slot_at(slots, stride, i))->used && s->key != key)
		i = (i + 1) & (cap - 1);
	return s;
}

static void drop_all(struct addrcache *c, void (*drop)(void *value))
{
	for (size_t i = 0; drop && i < c->cap; i++) {
		struct slot *s = slot_at(c->slots, c->stride, i);

		if (s->used)
			drop(s + 1);
	}
}

void addrcache_free(struct addrcache *c, void (*drop)(void *value))
{
	if (!c)
		return;
	drop_all(c, drop);
	free(c->slots);
	free(c);
}

void *addrcache_find(struct addrcache *c, uint64_t key)
{
	struct slot *s = slot_for(c->slots, c->stride, c->cap, key);

	return s->used ? s + 1 : NULL;
}

/* Double the table when it is half full. */
static void grow(struct addrcache *c)
{
	unsigned char *old = c->slots;
	size_t old_cap = c->cap;

	if (2 * c->count < c->cap)
		return;
	c->cap *= 2;
	c->slots = xcalloc(c->cap, c->stride);
	for (size_t i = 0; i < old_cap; i++) {
		struct slot *s = slot_at(old, c->stride, i);

		if (s->used)
			memcpy(slot_for(c->slots, c->stride, c->cap, s->key), s,
			       c->stride);
	}
	free(old);
}

void *addrcache_add(struct addrcache *c, uint64_t key)
{
	struct slot *s;

	c->count++;
	grow(c);
	s = slot_for(c->slots, c->stride, c->cap, key);
	memset(s, 0, c->stride);
	s->key = key;
	s->used = true;
	return s + 1;
}

void addrcache_clear(struct addrcache *c, void (*drop)(void *value))
{
	drop_all(c, drop);
	memset(c->slots, 0, c->cap * c->stride);
	c->count = 0;
}

size_t addrcache_count(const struct addrcache *c)
{
	return c->count;
}
