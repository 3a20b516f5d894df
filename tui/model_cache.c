/*
 * A view kept between refreshes: the order keys of every line, sorted once,
 * and beside them the keys of the rows changed since, sorted on their own.
 * A refresh keys again only the rows the model says changed, and walks the
 * two lists together up to the last line asked for; the lists are merged
 * when the changed ones grow past a part of the whole. It follows only
 * views whose lines are the rows one for one: uncoalesced, unfiltered,
 * sorted by a number, with no row shown in or attributed past a wrapper.
 */
#include <stdlib.h>
#include <string.h>

#include "field.h"
#include "lockset.h"
#include "model_impl.h"
#include "xalloc.h"

#define NOWHERE UINT32_MAX
/* Past this part of the rows changed, a refresh builds the view whole. */
#define BUSY_PART 4

struct view_cache {
	bool built;		/* once: the first view is always cached */
	bool valid;
	struct model_query q;	/* what the keys were made for */
	uint64_t names;
	uint64_t structure;	/* model.structure then */
	struct order *sorted;	/* keys at the last merge, .line = row id */
	size_t n_sorted;
	size_t n_stale;		/* sorted entries outdated by fresh ones */
	struct order *fresh;	/* keys of the rows changed since, sorted */
	uint32_t *fresh_ids;
	size_t n_fresh;
	size_t fresh_cap;
	uint32_t *pos;		/* per row: its index in sorted, or NOWHERE */
	bool *in_fresh;		/* per row */
	size_t rows_cap;
	uint32_t *by_key;	/* row ids by (site, object, type), open
				   addressing; NOWHERE = free */
	size_t key_mask;
};

struct view_cache *view_cache_new(void)
{
	return xcalloc(1, sizeof(struct view_cache));
}

void view_cache_free(struct view_cache *c)
{
	if (c == NULL)
		return;
	free(c->sorted);
	free(c->fresh);
	free(c->fresh_ids);
	free(c->pos);
	free(c->in_fresh);
	free(c->by_key);
	free(c);
}

/* Whether two queries make the same keys (the filter is never cached). */
static bool same_query(const struct model_query *a,
		       const struct model_query *b)
{
	return a->coalesce == b->coalesce && a->sort == b->sort &&
	       a->ascending == b->ascending && a->mix_idle == b->mix_idle &&
	       a->types == b->types && a->skip_wrappers == b->skip_wrappers &&
	       a->is_wrapper == b->is_wrapper && a->ctx == b->ctx &&
	       a->code == b->code && a->numbers_only == b->numbers_only &&
	       a->site_label == b->site_label && a->row_names == b->row_names;
}

/* Whether the cache can follow views of q at all. */
static bool query_cacheable(const struct model_query *q)
{
	return q->coalesce == COALESCE_NONE && q->sort->value != NULL &&
	       q->code == NULL &&
	       (q->filter == NULL || q->filter[0] == '\0');
}

static bool row_shown(const struct model_query *q, const struct row *r)
{
	return q->types == 0 || lockset_shows(q->types, r->type, r->role);
}

/* Whether a row's line is the row alone, as it is. */
static bool row_plain(const struct model_query *q, const struct row *r)
{
	return row_site(q, r) == r->site &&
	       !(attrib_skipping(q) && q->is_wrapper(q->ctx, r->site));
}

/* The order key of the line of row id. */
static void row_key(const struct model *m, const struct model_query *q,
		    uint32_t id, struct order *o)
{
	struct view_row v;

	view_row_single(m, q, id, false, &v);
	order_key(q, &v, id, o);
}

static int cmp_keys(const void *a, const void *b)
{
	return order_cmp(a, b);
}

static size_t key_slot(const struct view_cache *c, uint64_t site,
		       uint64_t object, uint8_t type)
{
	return hash_mix(site ^ hash_mix(object ^ hash_mix(type))) & c->key_mask;
}

/* Index row id by its key; false if another row has it. */
static bool index_add(struct view_cache *c, const struct model *m, uint32_t id)
{
	const struct row *r = &m->rows[id];
	size_t k = key_slot(c, r->site, r->object, r->type);

	for (;; k = (k + 1) & c->key_mask) {
		const struct row *o;

		if (c->by_key[k] == NOWHERE)
			break;
		o = &m->rows[c->by_key[k]];
		if (o->site == r->site && o->object == r->object &&
		    o->type == r->type)
			return false;
	}
	c->by_key[k] = id;
	return true;
}

/*
 * Index the rows, sorted and new, by their key, with room for one more;
 * false if two rows share one.
 */
static bool index_keys(struct view_cache *c, const struct model *m)
{
	size_t cap = 64;

	while (cap < 2 * (c->n_sorted + c->n_fresh + 1))
		cap *= 2;
	c->by_key = xreallocarray(c->by_key, cap, sizeof *c->by_key);
	memset(c->by_key, 0xff, cap * sizeof *c->by_key);
	c->key_mask = cap - 1;
	for (size_t i = 0; i < c->n_sorted; i++) {
		if (!index_add(c, m, c->sorted[i].line))
			return false;
	}
	for (size_t i = 0; i < c->n_fresh; i++) {
		if (c->pos[c->fresh_ids[i]] == NOWHERE &&
		    !index_add(c, m, c->fresh_ids[i]))
			return false;
	}
	return true;
}

/* The row of a key, or NOWHERE. */
static uint32_t find_key(const struct view_cache *c, const struct model *m,
			 uint64_t site, uint64_t object, uint8_t type)
{
	for (size_t k = key_slot(c, site, object, type);;
	     k = (k + 1) & c->key_mask) {
		const struct row *r;

		if (c->by_key[k] == NOWHERE)
			return NOWHERE;
		r = &m->rows[c->by_key[k]];
		if (r->site == site && r->object == object && r->type == type)
			return c->by_key[k];
	}
}

/* Key every row again; whether the view's lines are its rows one for one. */
static bool cache_build(struct view_cache *c, struct model *m,
			const struct model_query *q, uint64_t names)
{
	uint32_t *ids;

	model_take_touched(m, c, &ids);
	c->built = true;
	c->q = *q;
	c->q.filter = NULL;
	c->names = names;
	c->structure = m->structure;
	c->rows_cap = m->cap;
	c->pos = xreallocarray(c->pos, m->cap ? m->cap : 1, sizeof *c->pos);
	c->in_fresh = xreallocarray(c->in_fresh, m->cap ? m->cap : 1,
				    sizeof *c->in_fresh);
	memset(c->pos, 0xff, m->cap * sizeof *c->pos);
	memset(c->in_fresh, 0, m->cap * sizeof *c->in_fresh);
	c->sorted = xreallocarray(c->sorted, m->cap ? m->cap : 1,
				  sizeof *c->sorted);
	c->n_sorted = c->n_stale = c->n_fresh = 0;
	for (uint32_t id = 0; id < m->cap; id++) {
		const struct row *r = &m->rows[id];

		if (!r->defined || !row_shown(q, r))
			continue;
		if (!row_plain(q, r))
			return false;
		row_key(m, q, id, &c->sorted[c->n_sorted++]);
	}
	qsort(c->sorted, c->n_sorted, sizeof *c->sorted, cmp_keys);
	for (size_t i = 0; i < c->n_sorted; i++)
		c->pos[c->sorted[i].line] = (uint32_t)i;
	return index_keys(c, m);
}

/* Make room for the rows defined since, neither sorted nor fresh. */
static void cache_grow(struct view_cache *c, const struct model *m)
{
	size_t old = c->rows_cap;

	if (m->cap == old)
		return;
	c->pos = xreallocarray(c->pos, m->cap, sizeof *c->pos);
	c->in_fresh = xreallocarray(c->in_fresh, m->cap, sizeof *c->in_fresh);
	memset(c->pos + old, 0xff, (m->cap - old) * sizeof *c->pos);
	memset(c->in_fresh + old, 0, (m->cap - old) * sizeof *c->in_fresh);
	c->rows_cap = m->cap;
}

/* Index a new row by its key; false when another row has it. */
static bool index_new(struct view_cache *c, const struct model *m,
		      uint32_t id)
{
	if (2 * (c->n_sorted + c->n_fresh + 1) > c->key_mask + 1 &&
	    !index_keys(c, m))
		return false;
	return index_add(c, m, id);
}

/* Put row id among the fresh ones. */
static void fresh_add(struct view_cache *c, uint32_t id)
{
	c->fresh_ids = xgrow(c->fresh_ids, &c->fresh_cap, c->n_fresh + 1, 64,
			     sizeof *c->fresh_ids);
	c->fresh_ids[c->n_fresh++] = id;
	c->in_fresh[id] = true;
}

/*
 * Note the rows changed since the last call among the fresh ones, and the
 * rows defined since; false when one of those cannot be followed.
 */
static bool cache_take_changes(struct view_cache *c, struct model *m)
{
	uint32_t *ids;
	size_t n = model_take_touched(m, c, &ids);

	cache_grow(c, m);
	for (size_t i = 0; i < n; i++) {
		uint32_t id = ids[i];
		const struct row *r = &m->rows[id];

		if (c->in_fresh[id] || !r->defined || !row_shown(&c->q, r))
			continue;
		if (c->pos[id] != NOWHERE) {
			c->n_stale++;
		} else if (!row_plain(&c->q, r) || !index_new(c, m, id)) {
			return false;
		}
		fresh_add(c, id);
	}
	return true;
}

/* Key the fresh rows again and sort them. */
static void cache_key_fresh(struct view_cache *c, const struct model *m)
{
	c->fresh = xreallocarray(c->fresh, c->fresh_cap ? c->fresh_cap : 1,
				 sizeof *c->fresh);
	for (size_t i = 0; i < c->n_fresh; i++)
		row_key(m, &c->q, c->fresh_ids[i], &c->fresh[i]);
	qsort(c->fresh, c->n_fresh, sizeof *c->fresh, cmp_keys);
}

/*
 * Walk the sorted entries still current and the fresh ones together: the
 * line after *i, *j. Returns its key.
 */
static const struct order *cache_next(const struct view_cache *c, size_t *i,
				      size_t *j)
{
	while (*i < c->n_sorted && c->in_fresh[c->sorted[*i].line])
		(*i)++;
	if (*j < c->n_fresh &&
	    (*i == c->n_sorted ||
	     order_cmp(&c->fresh[*j], &c->sorted[*i]) < 0))
		return &c->fresh[(*j)++];
	return &c->sorted[(*i)++];
}

/* Fold the fresh keys into the sorted ones. */
static void cache_merge(struct view_cache *c)
{
	size_t n = c->n_sorted - c->n_stale + c->n_fresh, i = 0, j = 0;
	struct order *out = xreallocarray(NULL, n ? n : 1, sizeof *out);

	for (size_t k = 0; k < n; k++)
		out[k] = *cache_next(c, &i, &j);
	for (size_t k = 0; k < c->n_fresh; k++)
		c->in_fresh[c->fresh_ids[k]] = false;
	free(c->sorted);
	c->sorted = out;
	c->n_sorted = n;
	for (size_t k = 0; k < n; k++)
		c->pos[out[k].line] = (uint32_t)k;
	c->n_fresh = c->n_stale = 0;
}

/* The rank of the line of a key among all lines, or SIZE_MAX. */
static size_t cache_find(const struct view_cache *c, const struct model *m,
			 const struct view_window *w)
{
	uint32_t id = find_key(c, m, w->site, w->object, (uint8_t)w->type);
	const struct order *k = NULL;
	size_t in_sorted, stale_before = 0;

	if (id == NOWHERE)
		return SIZE_MAX;
	for (size_t j = 0; j < c->n_fresh && c->in_fresh[id]; j++) {
		if (c->fresh[j].line == id)
			k = &c->fresh[j];
	}
	if (k == NULL)
		k = &c->sorted[c->pos[id]];
	in_sorted = order_rank(c->sorted, c->n_sorted, k);
	for (size_t j = 0; j < c->n_fresh; j++)
		stale_before += c->pos[c->fresh_ids[j]] < in_sorted;
	return in_sorted - stale_before + order_rank(c->fresh, c->n_fresh, k);
}

/* Build lines [from, to) of the cached view. */
static void cache_rows(const struct view_cache *c, const struct model *m,
		       size_t from, size_t to, struct view_row *rows)
{
	size_t i = 0, j = 0;

	for (size_t k = 0; k < to; k++) {
		const struct order *o = cache_next(c, &i, &j);

		if (k >= from)
			view_row_single(m, &c->q, o->line, !c->q.numbers_only,
					&rows[k - from]);
	}
}

/* Whether what the cache keeps was made for this query and model. */
static bool cache_current(const struct view_cache *c, const struct model *m,
			  const struct model_query *q, uint64_t names)
{
	return same_query(q, &c->q) && c->names == names &&
	       c->structure == m->structure && c->rows_cap != 0 &&
	       m->touched_by == c;
}

/*
 * When a good part of the rows changed since the last refresh, sorting
 * them costs more than selecting the lines shown among all: the view is
 * built whole, and the cache again once the changes are fewer.
 */
static bool cache_busy(struct view_cache *c, struct model *m)
{
	uint32_t *ids;

	if (!c->built || m->touched.n <= m->n_defined / BUSY_PART)
		return false;
	model_take_touched(m, c, &ids);
	c->valid = false;
	c->rows_cap = 0;
	return true;
}

size_t model_view_cached(struct model *m, const struct model_query *q,
			 uint64_t names, struct view_cache *c,
			 struct view_window *w, struct view_row **rows)
{
	size_t n, from, to;

	if (!query_cacheable(q))
		return model_view_window(m, q, w, rows);
	if (cache_busy(c, m))
		return model_view_window(m, q, w, rows);
	/* A build that failed is not tried again until something changed. */
	if (!cache_current(c, m, q, names))
		c->valid = cache_build(c, m, q, names);
	if (c->valid)
		c->valid = cache_take_changes(c, m);
	if (!c->valid)
		return model_view_window(m, q, w, rows);
	cache_key_fresh(c, m);
	if (c->n_fresh > c->n_sorted / 64 + 256)
		cache_merge(c);
	n = c->n_sorted - c->n_stale + c->n_fresh;
	w->total = n;
	w->found = w->follow ? cache_find(c, m, w) : SIZE_MAX;
	view_bounds(w, n, &from, &to);
	w->offset = from;
	*rows = to > from ? xreallocarray(NULL, to - from, sizeof **rows) : NULL;
	cache_rows(c, m, from, to, *rows);
	return to - from;
}
