/*
 * Building a view: expand (attribute wrapper rows to their callers), group
 * (by sorting member items), filter, sort.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"
#include "xalloc.h"

bool attrib_skipping(const struct model_query *q)
{
	return q->skip_wrappers && q->is_wrapper != NULL;
}

void attrib_init(struct attrib *a, const struct model *m,
		 const struct model_query *q)
{
	a->m = m;
	a->q = q;
	a->frame = NULL;
	if (attrib_skipping(q) && m->stacks_cap > 0) {
		a->frame = xreallocarray(NULL, m->stacks_cap, 1);
		memset(a->frame, ATTR_UNKNOWN, m->stacks_cap);
	}
}

void attrib_done(struct attrib *a)
{
	free(a->frame);
	a->frame = NULL;
}

/* Whether the stacks of row r are attributed to their callers. */
bool attrib_row(const struct attrib *a, const struct row *r)
{
	return attrib_skipping(a->q) && a->q->is_wrapper(a->q->ctx, r->site);
}

/*
 * The site where entry e of row r counts: for a wrapper row and a defined
 * stack, the first frame outside every wrapper (the row's own site when all
 * frames are wrappers); otherwise the row's site.
 */
uint64_t attrib_site(struct attrib *a, const struct row *r, bool wrapper,
		     const struct stack_entry *e)
{
	const struct stack_def *s = model_stack(a->m, e->stack);
	uint8_t *f;

	if (!wrapper || s == NULL)
		return r->site;
	f = &a->frame[e->stack];
	if (*f == ATTR_UNKNOWN) {
		*f = ATTR_ALL_WRAPPERS;
		for (uint8_t i = 0; i < s->depth && *f == ATTR_ALL_WRAPPERS;
		     i++) {
			if (!a->q->is_wrapper(a->q->ctx, s->frames[i]))
				*f = i;
		}
	}
	return *f == ATTR_ALL_WRAPPERS ? r->site : s->frames[*f];
}

/* An item for the whole of row id. */
static void item_of_row(const struct model *m, uint32_t id, struct item *it)
{
	const struct row *r = &m->rows[id];

	memset(it, 0, sizeof *it);
	it->site = r->site;
	it->object = r->object;
	it->type = r->type;
	it->keep = true;
	it->row = it->row_id = id;
	it->from = NO_ROW;
	it->acq = r->total.acquisitions - r->base.acquisitions;
	it->contended = r->total.contended - r->base.contended;
	it->wait = r->total.wait_ns - r->base.wait_ns;
	it->last_acq = r->last_acq;
	it->last_wait = r->last_wait;
}

/* Add the waits of an entry to an item, as contended acquisitions. */
static void item_add_entry(struct item *it, const struct stack_entry *e)
{
	it->acq += e->count - e->base_count;
	it->contended += e->count - e->base_count;
	it->wait += e->wait - e->base_wait;
	it->last_acq += e->last_count;
	it->last_wait += e->last_wait;
}

static uint64_t sub_sat(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/*
 * Take from the item of wrapper row r the waits of its defined stacks,
 * which are attributed elsewhere; what is left shows only when not empty.
 */
static void item_remainder(const struct model *m, const struct row *r,
			   struct item *it)
{
	struct item moved = { 0 };

	for (uint32_t i = 0; i < r->n_se; i++) {
		if (model_stack(m, r->se[i].stack) != NULL)
			item_add_entry(&moved, &r->se[i]);
	}
	it->acq = sub_sat(it->acq, moved.acq);
	it->contended = sub_sat(it->contended, moved.contended);
	it->wait = sub_sat(it->wait, moved.wait);
	it->last_acq = sub_sat(it->last_acq, moved.last_acq);
	it->last_wait = sub_sat(it->last_wait, moved.last_wait);
	it->keep = it->acq != 0 || it->contended != 0 || it->wait != 0 ||
		   r->total.failed != r->base.failed;
}

/* Items under construction, the first of each key indexed by key. */
struct expand {
	struct attrib a;
	bool *wrapper;		/* per row id */
	struct item *items;
	size_t n;
	uint32_t *slots;	/* item index or EMPTY_SLOT */
	size_t mask;
};

/* The slot of a key: holding the first item of that key, or free. */
static uint32_t *expand_slot(struct expand *x, uint64_t site,
			     uint64_t object, uint8_t type)
{
	size_t i = mix(site ^ mix(object ^ mix(type))) & x->mask;

	for (;; i = (i + 1) & x->mask) {
		const struct item *it;

		if (x->slots[i] == EMPTY_SLOT)
			return &x->slots[i];
		it = &x->items[x->slots[i]];
		if (it->site == site && it->object == object &&
		    it->type == type)
			return &x->slots[i];
	}
}

/* Size the arrays for every row plus every stack of a wrapper row. */
static void expand_init(struct expand *x, const struct model *m,
			const struct model_query *q)
{
	size_t need = 1, nslots = 1;

	memset(x, 0, sizeof *x);
	attrib_init(&x->a, m, q);
	x->wrapper = xcalloc(m->cap ? m->cap : 1, sizeof *x->wrapper);
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->rows[i].defined)
			continue;
		x->wrapper[i] = attrib_row(&x->a, &m->rows[i]);
		need += 1 + (x->wrapper[i] ? m->rows[i].n_se : 0);
	}
	while (nslots < 2 * need)
		nslots *= 2;
	x->items = xreallocarray(NULL, need, sizeof *x->items);
	x->slots = xreallocarray(NULL, nslots, sizeof *x->slots);
	memset(x->slots, 0xff, nslots * sizeof *x->slots);
	x->mask = nslots - 1;
}

/* One item per row: whole, or a wrapper row's remainder. */
static void expand_rows(struct expand *x, const struct model *m)
{
	for (uint32_t i = 0; i < m->cap; i++) {
		struct item *it = &x->items[x->n];
		uint32_t *slot;

		if (!m->rows[i].defined)
			continue;
		item_of_row(m, i, it);
		if (x->wrapper[i])
			item_remainder(m, &m->rows[i], it);
		slot = expand_slot(x, it->site, it->object, it->type);
		if (*slot == EMPTY_SLOT)
			*slot = (uint32_t)x->n;
		x->n++;
	}
}

/*
 * Add entry e of wrapper row id to the item of its attributed key, made
 * when new. A caller-only item is named after the wrapper row that gave it
 * the most wait (rows come in id order: the lowest id wins a tie).
 */
static void expand_entry(struct expand *x, uint32_t id,
			 const struct stack_entry *e)
{
	const struct row *r = &x->a.m->rows[id];
	uint64_t site = attrib_site(&x->a, r, true, e);
	uint32_t *slot = expand_slot(x, site, r->object, r->type);
	struct item *it;

	if (*slot == EMPTY_SLOT) {
		*slot = (uint32_t)x->n++;
		it = &x->items[*slot];
		memset(it, 0, sizeof *it);
		it->site = site;
		it->object = r->object;
		it->type = r->type;
		it->row = NO_ROW;
		it->row_id = id;
		it->from = NO_ROW;
	}
	it = &x->items[*slot];
	it->keep = true;
	item_add_entry(it, e);
	if (it->from != id) {
		it->from = id;
		it->from_wait = 0;
	}
	it->from_wait += e->wait - e->base_wait;
	if (it->row == NO_ROW && it->from_wait > it->best_wait) {
		it->best_wait = it->from_wait;
		it->row_id = id;
	}
}

/*
 * The items of the view: one per row or, with wrappers skipped, wrapper
 * rows split by their defined stacks, merged by (site, object, type).
 */
static size_t view_items(const struct model *m, const struct model_query *q,
			 struct item **out)
{
	struct expand x;
	size_t n = 0;

	expand_init(&x, m, q);
	expand_rows(&x, m);
	for (uint32_t i = 0; i < m->cap; i++) {
		const struct row *r = &m->rows[i];

		for (uint32_t j = 0; x.wrapper[i] && j < r->n_se; j++) {
			if (model_stack(m, r->se[j].stack) != NULL)
				expand_entry(&x, i, &r->se[j]);
		}
	}
	for (size_t i = 0; i < x.n; i++) {
		if (x.items[i].keep)
			x.items[n++] = x.items[i];
	}
	attrib_done(&x.a);
	free(x.wrapper);
	free(x.slots);
	*out = x.items;
	return n;
}

/* ---- Building a view ---- */

/* What the grouping and sorting comparators need. */
struct view_ctx {
	const struct model *m;
	const struct model_query *q;
	const struct item *items;
	const struct view_row *vr;
	char **labels;		/* per view row, only for SORT_SITE */
};

static int cmp_double(double a, double b)
{
	return (a > b) - (a < b);
}

/* The grouping key of an item (site or object) and the other one. */
static uint64_t group_key(const struct item *it, enum coalesce c)
{
	return c == COALESCE_OBJECT ? it->object : it->site;
}

static uint64_t member_key(const struct item *it, enum coalesce c)
{
	return c == COALESCE_OBJECT ? it->site : it->object;
}

/* Order item indices by group key, type, member key, index. */
static int cmp_members(const void *pa, const void *pb, void *arg)
{
	const struct view_ctx *vc = arg;
	uint32_t ia = *(const uint32_t *)pa, ib = *(const uint32_t *)pb;
	const struct item *a = &vc->items[ia], *b = &vc->items[ib];
	enum coalesce c = vc->q->coalesce;
	int r;

	if ((r = cmp_u64(group_key(a, c), group_key(b, c))) != 0)
		return r;
	if ((r = cmp_u64(a->type, b->type)) != 0)
		return r;
	if ((r = cmp_u64(member_key(a, c), member_key(b, c))) != 0)
		return r;
	return cmp_u64(ia, ib);
}

/* Indices of the n items, in group order. */
static uint32_t *view_members(const struct view_ctx *vc, size_t n)
{
	uint32_t *ids = xreallocarray(NULL, n ? n : 1, sizeof *ids);

	for (size_t i = 0; i < n; i++)
		ids[i] = (uint32_t)i;
	if (vc->q->coalesce != COALESCE_NONE)
		qsort_r(ids, n, sizeof *ids, cmp_members, (void *)vc);
	return ids;
}

/* Whether items a and b fall in the same view row. */
static bool same_group(const struct item *a, const struct item *b,
		       enum coalesce c)
{
	if (c == COALESCE_NONE)
		return false;
	return a->type == b->type && group_key(a, c) == group_key(b, c);
}

/* Whether the label of a site contains the query's filter. */
static bool site_matches(const struct model_query *q, uint64_t site)
{
	const char *label = q->site_label(q->ctx, site);

	return label != NULL && strcasestr(label, q->filter) != NULL;
}

static bool filter_active(const struct model_query *q)
{
	return q->filter != NULL && q->filter[0] != '\0' &&
	       q->site_label != NULL;
}

/* Add the counts, rates and (through its row) the rest of an item to v. */
static void view_add(const struct model *m, struct view_row *v,
		     const struct item *it)
{
	size_t oldest = m->ticks % TREND_LEN;
	const struct row *r;

	v->c.acquisitions += it->acq;
	v->c.contended += it->contended;
	v->c.wait_ns += it->wait;
	v->wait_per_s += model_rate(m, it->last_wait);
	v->acq_per_s += model_rate(m, it->last_acq);
	if (it->row == NO_ROW)
		return;
	r = &m->rows[it->row];
	v->c.failed += r->total.failed - r->base.failed;
	for (int i = 0; i < HIST_BUCKETS; i++)
		v->c.hist[i] += r->total.hist[i] - r->base.hist[i];
	if (r->max_wait_ns > v->max_wait_ns)
		v->max_wait_ns = r->max_wait_ns;
	for (size_t i = 0; i < TREND_LEN; i++)
		v->trend[i] += r->trend[(oldest + i) % TREND_LEN];
}

/*
 * Fill v from the members ids[0..n), which share a group and are sorted by
 * member key. Returns whether any member's site passes the filter.
 */
static bool view_group(const struct view_ctx *vc, const uint32_t *ids,
		       size_t n, struct view_row *v)
{
	const struct item *first = &vc->items[ids[0]], *prev = NULL;
	bool match = !filter_active(vc->q);
	uint32_t distinct = 0;
	uint64_t heaviest = 0;

	memset(v, 0, sizeof *v);
	v->type = first->type;
	v->site = first->site;
	v->object = first->object;
	v->row_id = first->row_id;
	for (size_t i = 0; i < n; i++) {
		const struct item *it = &vc->items[ids[i]];

		view_add(vc->m, v, it);
		if (i == 0 || it->wait > heaviest ||
		    (it->wait == heaviest && it->row_id < v->row_id)) {
			heaviest = it->wait;
			v->row_id = it->row_id;
		}
		if (prev == NULL || member_key(it, vc->q->coalesce) !=
				    member_key(prev, vc->q->coalesce))
			distinct++;
		if (!match && (prev == NULL || it->site != prev->site))
			match = site_matches(vc->q, it->site);
		prev = it;
	}
	v->n_objects = v->n_sites = 1;
	if (vc->q->coalesce == COALESCE_SITE) {
		v->n_objects = distinct;
		v->object = distinct == 1 ? v->object : 0;
	} else if (vc->q->coalesce == COALESCE_OBJECT) {
		v->n_sites = distinct;
		v->site = distinct == 1 ? v->site : 0;
	}
	return match;
}

/* Group, filter and coalesce the n items into vr; returns the count. */
static size_t view_build(const struct view_ctx *vc, size_t n,
			 struct view_row **vr)
{
	uint32_t *ids = view_members(vc, n);
	size_t out = 0;

	*vr = xreallocarray(NULL, n ? n : 1, sizeof **vr);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n; j++) {
			if (!same_group(&vc->items[ids[i]], &vc->items[ids[j]],
					vc->q->coalesce))
				break;
		}
		if (view_group(vc, ids + i, j - i, &(*vr)[out]))
			out++;
	}
	free(ids);
	return out;
}

/* Average wait per acquisition; 0 without acquisitions. */
static double view_avg(const struct view_row *v)
{
	if (v->c.acquisitions == 0)
		return 0;
	return (double)v->c.wait_ns / (double)v->c.acquisitions;
}

/* Compare two view rows on a numeric key, smallest first. */
static int cmp_key(const struct view_row *a, const struct view_row *b,
		   enum sort_key k)
{
	switch (k) {
	case SORT_WAIT:
		return cmp_double(a->wait_per_s, b->wait_per_s);
	case SORT_TOTAL:
		return cmp_u64(a->c.wait_ns, b->c.wait_ns);
	case SORT_AVG:
		return cmp_double(view_avg(a), view_avg(b));
	case SORT_COUNT:
		return cmp_u64(a->c.acquisitions, b->c.acquisitions);
	case SORT_CONTENDED:
		return cmp_u64(a->c.contended, b->c.contended);
	case SORT_MAX:
		return cmp_u64(a->max_wait_ns, b->max_wait_ns);
	default:
		return 0;
	}
}

/*
 * Compare view rows a and b on the query's key: biggest first unless
 * ascending. The site label is the exception: its natural order is
 * alphabetical, so the default (ascending == false) sorts A to Z and
 * ascending == true sorts Z to A.
 */
static int cmp_primary(const struct view_ctx *vc, uint32_t a, uint32_t b)
{
	int r;

	if (vc->q->sort == SORT_SITE)
		r = strcmp(vc->labels[a], vc->labels[b]);
	else
		r = -cmp_key(&vc->vr[a], &vc->vr[b], vc->q->sort);
	return vc->q->ascending ? -r : r;
}

/*
 * Order view rows by the query, then by total wait (biggest first), site,
 * object, type and row id, so equal keys come out the same on every run.
 */
static int cmp_view(const void *pa, const void *pb, void *arg)
{
	const struct view_ctx *vc = arg;
	uint32_t ia = *(const uint32_t *)pa, ib = *(const uint32_t *)pb;
	const struct view_row *a = &vc->vr[ia], *b = &vc->vr[ib];
	int r;

	if ((r = cmp_primary(vc, ia, ib)) != 0)
		return r;
	if ((r = -cmp_u64(a->c.wait_ns, b->c.wait_ns)) != 0)
		return r;
	if ((r = cmp_u64(a->site, b->site)) != 0)
		return r;
	if ((r = cmp_u64(a->object, b->object)) != 0)
		return r;
	if ((r = cmp_u64(a->type, b->type)) != 0)
		return r;
	return cmp_u64(a->row_id, b->row_id);
}

/*
 * Copies of the site labels of n view rows. Copied because a label function
 * may hand back a buffer it reuses on the next call.
 */
static char **view_labels(const struct model_query *q,
			  const struct view_row *vr, size_t n)
{
	char **labels = xreallocarray(NULL, n, sizeof *labels);

	for (size_t i = 0; i < n; i++) {
		char buf[32];
		const char *l = buf;

		/* Without labels, sort by address: fixed width hex. */
		if (q->site_label != NULL)
			l = q->site_label(q->ctx, vr[i].site);
		else
			snprintf(buf, sizeof buf, "%016" PRIx64, vr[i].site);
		labels[i] = xstrdup(l ? l : "");
	}
	return labels;
}

static void free_labels(char **labels, size_t n)
{
	for (size_t i = 0; labels != NULL && i < n; i++)
		free(labels[i]);
	free(labels);
}

/* Sort the n view rows vr (which it frees) into a new array. */
static struct view_row *view_sort(struct view_ctx *vc, struct view_row *vr,
				  size_t n)
{
	uint32_t *order = xreallocarray(NULL, n, sizeof *order);
	struct view_row *sorted = xreallocarray(NULL, n, sizeof *sorted);

	vc->vr = vr;
	if (vc->q->sort == SORT_SITE)
		vc->labels = view_labels(vc->q, vr, n);
	for (size_t i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, n, sizeof *order, cmp_view, vc);
	for (size_t i = 0; i < n; i++)
		sorted[i] = vr[order[i]];
	free_labels(vc->labels, n);
	free(order);
	free(vr);
	return sorted;
}

size_t model_view(const struct model *m, const struct model_query *q,
		  struct view_row **rows)
{
	struct item *items;
	size_t n_items = view_items(m, q, &items);
	struct view_ctx vc = { .m = m, .q = q, .items = items };
	size_t n = view_build(&vc, n_items, rows);

	free(items);
	if (n == 0) {
		free(*rows);
		*rows = NULL;
		return 0;
	}
	*rows = view_sort(&vc, *rows, n);
	return n;
}

