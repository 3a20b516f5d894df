/* Maps from 64-bit keys to ids, open addressing, kept at most half full. */
#include <stdlib.h>

#include "../common/hash.h"
#include "idmap.h"
#include "xalloc.h"

/* The slot of key in m: holding it, or empty (id 0). */
static size_t idmap_slot(const struct idmap *m, uint64_t key)
{
	size_t i = hash_mix(key) & (m->cap - 1);

	while (m->ids[i] && m->keys[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

uint32_t idmap_get(const struct idmap *m, uint64_t key)
{
	return m->cap ? m->ids[idmap_slot(m, key)] : 0;
}

/* Twice the room, every entry moved. */
static void idmap_grow(struct idmap *m)
{
	struct idmap old = *m;

	m->cap = old.cap ? old.cap * 2 : 64;
	m->keys = xcalloc(m->cap, sizeof(*m->keys));
	m->ids = xcalloc(m->cap, sizeof(*m->ids));
	m->n = 0;
	for (size_t i = 0; i < old.cap; i++)
		if (old.ids[i])
			idmap_put(m, old.keys[i], old.ids[i]);
	idmap_free(&old);
}

void idmap_put(struct idmap *m, uint64_t key, uint32_t id)
{
	size_t i;

	if ((m->n + 1) * 2 > m->cap)
		idmap_grow(m);
	i = idmap_slot(m, key);
	m->n += m->ids[i] == 0;
	m->keys[i] = key;
	m->ids[i] = id;
}

void idmap_free(struct idmap *m)
{
	free(m->keys);
	free(m->ids);
}
