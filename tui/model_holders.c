/*
 * Holder stacks: where threads released a row's lock while others waited
 * (the collector's PROTO_HOLDER_MARK stacks), and how often, since reset.
 * A line's caused wait is split over its holder stacks by these counts.
 */
#include <stdlib.h>
#include <string.h>

#include "../common/hash.h"
#include "idmap.h"
#include "model_impl.h"
#include "xalloc.h"

/* One holder stack's frames. */
struct holder_def {
	uint64_t frames[PROTO_STACK_DEPTH];
	unsigned depth;
};

/* The releases of one row through one holder stack. */
struct holder_use {
	uint32_t row, def;
	uint64_t releases;	/* since reset */
};

struct holder_store {
	struct holder_def *defs;
	size_t ndefs, defs_cap;
	struct idmap def_ids;	/* by hash of frames, probing: def + 1 */
	struct holder_use *uses;
	size_t nuses, uses_cap;
	struct idmap index;	/* (row, def) -> use + 1 */
};

static struct holder_store *store(struct model *m)
{
	if (m->holders == NULL)
		m->holders = xcalloc(1, sizeof(*m->holders));
	return m->holders;
}

/*
 * The id of a holder stack, added if new: every thread's, every
 * connection's same stack is one, so that a collector that defines
 * stacks again (a new session) does not grow the store.
 */
uint32_t model_holder_define(struct model *m, const uint64_t *frames,
			     unsigned depth)
{
	struct holder_store *h = store(m);
	struct holder_def *d;
	uint64_t key;
	uint32_t id;

	depth = depth < PROTO_STACK_DEPTH ? depth : PROTO_STACK_DEPTH;
	key = hash_frames(frames, depth);
	for (; (id = idmap_get(&h->def_ids, key)) != 0; key++) {
		d = &h->defs[id - 1];
		if (d->depth == depth &&
		    memcmp(d->frames, frames, depth * sizeof(*frames)) == 0)
			return id - 1;
	}
	h->defs = xgrow(h->defs, &h->defs_cap, h->ndefs + 1, 16,
			sizeof(*h->defs));
	d = &h->defs[h->ndefs];
	d->depth = depth;
	memcpy(d->frames, frames, depth * sizeof(*frames));
	idmap_put(&h->def_ids, key, (uint32_t)++h->ndefs);
	return (uint32_t)h->ndefs - 1;
}

void model_apply_holder(struct model *m, uint32_t row, uint32_t def,
			uint64_t releases)
{
	struct holder_store *h = store(m);
	uint64_t key = (uint64_t)row << 32 | def;
	uint32_t id = idmap_get(&h->index, key);

	if (def >= h->ndefs || row >= m->cap)
		return;
	if (id == 0) {
		h->uses = xgrow(h->uses, &h->uses_cap, h->nuses + 1, 16,
				sizeof(*h->uses));
		h->uses[h->nuses] = (struct holder_use){ .row = row, .def = def };
		id = (uint32_t)++h->nuses;
		idmap_put(&h->index, key, id);
	}
	h->uses[id - 1].releases += releases;
}

void holders_reset(struct model *m)
{
	for (size_t i = 0; m->holders && i < m->holders->nuses; i++)
		m->holders->uses[i].releases = 0;
}

void holders_free(struct holder_store *h)
{
	if (h == NULL)
		return;
	free(h->defs);
	free(h->uses);
	idmap_free(&h->def_ids);
	idmap_free(&h->index);
	free(h);
}

/* Whether row r is of the line of view row v (its type, site, object). */
static bool of_line(const struct row *r, const struct view_row *v)
{
	return r->defined && r->type == v->type &&
	       (v->site == 0 || r->site == v->site) &&
	       (v->object == 0 || r->object == v->object);
}

/* Add the releases of def to out, a list of n, at most max; the new n. */
static size_t merge(struct holder_view *out, size_t n, size_t max,
		    const struct holder_def *def, uint64_t releases)
{
	for (size_t i = 0; i < n; i++) {
		if (out[i].depth == def->depth &&
		    memcmp(out[i].frames, def->frames,
			   def->depth * sizeof(*def->frames)) == 0) {
			out[i].releases += releases;
			return n;
		}
	}
	if (n == max)
		return n;
	out[n] = (struct holder_view){ .frames = def->frames,
				       .depth = def->depth,
				       .releases = releases };
	return n + 1;
}

static int more_releases(const void *a, const void *b)
{
	const struct holder_view *x = a, *y = b;

	if (x->releases != y->releases)
		return x->releases > y->releases ? -1 : 1;
	return memcmp(x->frames, y->frames, sizeof(*x->frames));
}

/*
 * Split caused over the n stacks by their releases, exactly: each gets
 * its share rounded down, the rest goes one by one to the heaviest.
 */
static void split_caused(struct holder_view *out, size_t n, uint64_t total,
			 uint64_t caused)
{
	uint64_t given = 0;

	for (size_t i = 0; i < n; i++) {
		out[i].caused_ns = (uint64_t)((unsigned __int128)caused *
					      out[i].releases / total);
		given += out[i].caused_ns;
	}
	for (size_t i = 0; given < caused; i = (i + 1) % n, given++)
		out[i].caused_ns++;
}

size_t model_holder_stacks(const struct model *m, const struct view_row *v,
			   struct holder_view *out, size_t max)
{
	const struct holder_store *h = m->holders;
	uint64_t total = 0;
	size_t n = 0;

	for (size_t i = 0; h && i < h->nuses; i++) {
		const struct holder_use *u = &h->uses[i];

		if (u->releases && of_line(&m->rows[u->row], v))
			n = merge(out, n, max, &h->defs[u->def], u->releases);
	}
	qsort(out, n, sizeof(*out), more_releases);
	for (size_t i = 0; i < n; i++)
		total += out[i].releases;
	if (n)
		split_caused(out, n, total, v->c.calls.caused_wait_ns);
	return n;
}
