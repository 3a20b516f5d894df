/* Maps from 64-bit keys to ids 1, 2, ... (0: absent), open addressing. */
#ifndef QSPTOP_IDMAP_H
#define QSPTOP_IDMAP_H

#include <stddef.h>
#include <stdint.h>

struct idmap {
	uint64_t *keys;
	uint32_t *ids;
	size_t cap, n;
};

/* The id of key, or 0. */
uint32_t idmap_get(const struct idmap *m, uint64_t key);

/* Map key to id (not 0), replacing what it had. */
void idmap_put(struct idmap *m, uint64_t key, uint32_t id);

void idmap_free(struct idmap *m);

#endif
