/* Locks in shared memory named by file and offset, across processes. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/hash.h"
#include "maps.h"
#include "procs.h"
#include "shmobj.h"
#include "xalloc.h"

/* A mapping of /proc/PID/maps. */
struct mapping {
	struct maps_span span;	/* first: see maps_span_find() */
	uint64_t offset;	/* in its file */
	uint64_t dev, ino;
	bool shared;
};

struct shmobj {
	pid_t pid;
	struct mapping *m;	/* sorted by start, as maps lists them */
	size_t n, cap;
};

/* A lock in shared memory and what the table calls it. */
struct identity {
	uint64_t dev, ino, offset;
	uint64_t tagged;	/* 0: a free slot */
};

/* Every process's shared locks, by file and offset. */
static struct identity *ids;
static size_t ids_cap, ids_used;

struct shmobj *shmobj_new(pid_t pid)
{
	struct shmobj *s = xcalloc(1, sizeof(*s));

	s->pid = pid;
	return s;
}

void shmobj_free(struct shmobj *s)
{
	if (s)
		free(s->m);
	free(s);
}

/* Keep one mapping of the process (maps_each()'s callback). */
static void keep_mapping(const struct maps_line *l, void *ctx)
{
	struct shmobj *s = ctx;

	s->m = xgrow(s->m, &s->cap, s->n + 1, 64, sizeof(*s->m));
	s->m[s->n++] = (struct mapping){ { l->start, l->end }, l->offset, l->dev,
					 l->ino, maps_shared(l) };
}

/* Read the process's mappings afresh; false if it has none to read. */
static bool read_maps(struct shmobj *s)
{
	s->n = 0;
	return maps_each(s->pid, keep_mapping, s) == 0;
}

static const struct mapping *find(const struct shmobj *s, uint64_t addr)
{
	return maps_span_find(s->m, s->n, sizeof *s->m, addr);
}

static size_t slot_of(uint64_t dev, uint64_t ino, uint64_t offset)
{
	return hash_mix(dev * 31 + ino * 0x9e3779b97f4a7c15ull + offset) &
	       (ids_cap - 1);
}

static void grow_ids(void)
{
	struct identity *old = ids;
	size_t n = ids_cap;

	ids_cap = ids_cap ? ids_cap * 2 : 256;
	ids = xcalloc(ids_cap, sizeof(*ids));
	for (size_t i = 0; i < n; i++) {
		size_t k = old[i].tagged ? slot_of(old[i].dev, old[i].ino,
						   old[i].offset) : 0;

		if (!old[i].tagged)
			continue;
		while (ids[k].tagged)
			k = (k + 1) & (ids_cap - 1);
		ids[k] = old[i];
	}
	free(old);
}

/* The name of the lock at offset of (dev, ino): the first one given. */
static uint64_t identify(uint64_t dev, uint64_t ino, uint64_t offset,
			 uint64_t tagged)
{
	size_t k;

	if ((ids_used + 1) * 2 > ids_cap)
		grow_ids();
	k = slot_of(dev, ino, offset);
	while (ids[k].tagged) {
		if (ids[k].dev == dev && ids[k].ino == ino &&
		    ids[k].offset == offset)
			return ids[k].tagged;
		k = (k + 1) & (ids_cap - 1);
	}
	ids[k] = (struct identity){ dev, ino, offset, tagged };
	ids_used++;
	return tagged;
}

uint64_t shmobj_object(struct shmobj *s, unsigned proc, uint64_t addr)
{
	const struct mapping *m = find(s, addr);

	/* A mapping made since the last read: read again. */
	if (m == NULL && addr && read_maps(s))
		m = find(s, addr);
	if (m == NULL || !m->shared)
		return procs_tag(proc, addr);
	return identify(m->dev, m->ino, m->offset + (addr - m->span.start),
			procs_tag(proc, addr));
}
