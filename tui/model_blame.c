/*
 * Who blocks whom: the holders each row's waits were spent behind (the
 * collector's blame pseudo-stacks), and the rows of the holders, found
 * by (site, type, object), whose CAUSED the waits add to.
 */
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"
#include "xalloc.h"

/* A waiter row's waits behind one holder site, since reset. */
struct blame_entry {
	uint32_t row;		/* the waiter's */
	uint32_t holder_type;
	uint64_t holder_site;	/* 0: holder unknown */
	struct wait_counts w;
};

struct blame_store {
	struct blame_entry *v;
	size_t n, cap;
	uint32_t *index;	/* entry + 1 by (row, holder); 0 = empty */
	size_t index_cap;	/* a power of two, at least twice n */
	uint32_t *rows;		/* row id + 1 by (site, type, object) */
	size_t rows_cap;
	size_t n_rows;
};

static uint64_t entry_hash(uint32_t row, uint64_t site, uint32_t type)
{
	return hash_mix(hash_mix(site ^ (uint64_t)type << 56) ^ row);
}

static uint64_t row_hash(uint64_t site, uint32_t type, uint64_t object)
{
	return hash_mix(hash_mix(site ^ (uint64_t)type << 56) ^ object);
}

static struct blame_store *store(struct model *m)
{
	if (m->blame == NULL)
		m->blame = xcalloc(1, sizeof *m->blame);
	return m->blame;
}

/* The index slot of (row, site, type): holding its entry, or empty. */
static uint32_t *entry_slot(const struct blame_store *b, uint32_t row,
			    uint64_t site, uint32_t type)
{
	size_t mask = b->index_cap - 1;

	for (size_t i = entry_hash(row, site, type) & mask;; i = (i + 1) & mask) {
		const struct blame_entry *e;

		if (b->index[i] == 0)
			return &b->index[i];
		e = &b->v[b->index[i] - 1];
		if (e->row == row && e->holder_site == site &&
		    e->holder_type == type)
			return &b->index[i];
	}
}

static void entries_rehash(struct blame_store *b)
{
	size_t cap = b->index_cap ? b->index_cap * 2 : 256;

	free(b->index);
	b->index = xcalloc(cap, sizeof *b->index);
	b->index_cap = cap;
	for (size_t i = 0; i < b->n; i++)
		*entry_slot(b, b->v[i].row, b->v[i].holder_site,
			    b->v[i].holder_type) = (uint32_t)i + 1;
}

/* The entry of (row, site, type), made empty when new. */
static struct blame_entry *entry_of(struct blame_store *b, uint32_t row,
				    uint64_t site, uint32_t type)
{
	uint32_t *slot;

	if ((b->n + 1) * 2 > b->index_cap)
		entries_rehash(b);
	slot = entry_slot(b, row, site, type);
	if (*slot)
		return &b->v[*slot - 1];
	b->v = xgrow(b->v, &b->cap, b->n + 1, 64, sizeof *b->v);
	b->v[b->n] = (struct blame_entry){ .row = row, .holder_type = type,
					   .holder_site = site };
	*slot = (uint32_t)++b->n;
	return &b->v[b->n - 1];
}

/* The row slot of (site, type, object): holding a row id + 1, or empty. */
static uint32_t *row_slot(const struct model *m, uint64_t site, uint32_t type,
			  uint64_t object)
{
	const struct blame_store *b = m->blame;
	size_t mask = b->rows_cap - 1;

	for (size_t i = row_hash(site, type, object) & mask;; i = (i + 1) & mask) {
		const struct row *r;

		if (b->rows[i] == 0)
			return &b->rows[i];
		r = &m->rows[b->rows[i] - 1];
		if (r->site == site && r->type == type && r->object == object)
			return &b->rows[i];
	}
}

static void rows_rehash(struct model *m)
{
	struct blame_store *b = m->blame;
	uint32_t *old = b->rows;
	size_t old_cap = b->rows_cap;

	b->rows_cap = old_cap ? old_cap * 2 : 1024;
	b->rows = xcalloc(b->rows_cap, sizeof *b->rows);
	for (size_t i = 0; i < old_cap; i++) {
		const struct row *r;

		if (old[i] == 0)
			continue;
		r = &m->rows[old[i] - 1];
		*row_slot(m, r->site, r->type, r->object) = old[i];
	}
	free(old);
}

void blame_row_defined(struct model *m, uint32_t id)
{
	struct blame_store *b = store(m);
	const struct row *r = &m->rows[id];
	uint32_t *slot;

	if ((b->n_rows + 1) * 2 > b->rows_cap)
		rows_rehash(m);
	slot = row_slot(m, r->site, r->type, r->object);
	if (*slot == 0)
		b->n_rows++;
	*slot = id + 1;
}

uint32_t blame_add(struct model *m, uint32_t row, uint64_t site,
		   uint32_t type, const struct wait_counts *w)
{
	struct blame_store *b = store(m);
	uint32_t *holder;

	wait_counts_add(&entry_of(b, row, site, type)->w, w);
	if (site == 0 || b->rows_cap == 0)
		return NO_ROW;
	holder = row_slot(m, site, type, m->rows[row].object);
	return *holder ? *holder - 1 : NO_ROW;
}

void blame_reset(struct model *m)
{
	struct blame_store *b = m->blame;

	for (size_t i = 0; b && i < b->n; i++)
		memset(&b->v[i].w, 0, sizeof b->v[i].w);
}

void blame_free(struct blame_store *b)
{
	if (b == NULL)
		return;
	free(b->v);
	free(b->index);
	free(b->rows);
	free(b);
}

/* Whether row r is of the line of view row v (its type, site, object). */
static bool row_in_line(const struct row *r, const struct view_row *v)
{
	return r->defined && r->type == v->type &&
	       (v->site == 0 || r->site == v->site) &&
	       (v->object == 0 || r->object == v->object);
}

/* Add w under (site, type) to out, a list of n, at most max. */
static size_t blame_merge(struct blame_view *out, size_t n, size_t max,
			  uint64_t site, uint32_t type,
			  const struct wait_counts *w)
{
	for (size_t i = 0; i < n; i++) {
		if (out[i].site == site && out[i].type == type) {
			wait_counts_add(&out[i].w, w);
			return n;
		}
	}
	if (n == max)
		return n;
	out[n] = (struct blame_view){ .site = site, .type = type, .w = *w };
	return n + 1;
}

static int blame_heavier(const void *a, const void *b)
{
	const struct blame_view *x = a, *y = b;

	if (x->w.wait_ns != y->w.wait_ns)
		return x->w.wait_ns > y->w.wait_ns ? -1 : 1;
	return (x->site > y->site) - (x->site < y->site);
}

size_t model_blame(const struct model *m, const struct view_row *v,
		   bool blocking, struct blame_view *out, size_t max)
{
	const struct blame_store *b = m->blame;
	size_t n = 0;

	for (size_t i = 0; b && i < b->n; i++) {
		const struct blame_entry *e = &b->v[i];
		const struct row *r = &m->rows[e->row];

		if (wait_counts_empty(&e->w))
			continue;
		if (!blocking && row_in_line(r, v))
			n = blame_merge(out, n, max, e->holder_site,
					e->holder_type, &e->w);
		else if (blocking && e->holder_site != 0 &&
			 e->holder_type == v->type &&
			 (v->site == 0 || e->holder_site == v->site) &&
			 (v->object == 0 || r->object == v->object))
			n = blame_merge(out, n, max, r->site, r->type, &e->w);
	}
	qsort(out, n, sizeof *out, blame_heavier);
	return n;
}
