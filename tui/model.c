/*
 * The front end's data model: rows indexed by the collector's ids, totals
 * and a reset baseline per row, the last interval and a trend ring per row.
 * Views are built on demand: group (by sorting member ids), filter, sort.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "xalloc.h"

#define MODEL_MAX_ROWS (1u << 20)
/*
 * The collector numbers rows densely; an id far past the rows known is
 * garbage, refused before it can make us allocate for it.
 */
#define MODEL_MAX_ID_GAP 4096

struct row {
	bool defined;
	uint8_t type;
	uint64_t site;
	uint64_t object;
	struct counts total;	/* since monitoring began */
	struct counts base;	/* totals at the last reset */
	uint64_t max_wait_ns;	/* since reset */
	uint64_t pending_acq;	/* since the last tick */
	uint64_t pending_wait;
	uint64_t last_acq;	/* the last closed interval */
	uint64_t last_wait;
	uint64_t trend[TREND_LEN]; /* ring, next slot is ticks % TREND_LEN */
};

struct model {
	struct row *rows;
	size_t cap;		/* rows allocated (defined or not) */
	uint64_t ticks;
	bool have_tick;
	uint64_t last_tick_ns;
	double interval_s;	/* 0 until two ticks have been seen */
	uint64_t last_acq;	/* all rows, last interval */
	uint64_t last_wait;
	uint32_t threads_seen;
	uint32_t threads_live;
	uint64_t dropped;
	uint64_t unknown_rows;
};

static const char *const sort_key_names[SORT_KEY_COUNT] = {
	[SORT_WAIT] = "wait",
	[SORT_TOTAL] = "total",
	[SORT_AVG] = "avg",
	[SORT_COUNT] = "count",
	[SORT_CONTENDED] = "contended",
	[SORT_MAX] = "max",
	[SORT_SITE] = "site",
};

static const char *const coalesce_names[COALESCE_COUNT] = {
	[COALESCE_NONE] = "none",
	[COALESCE_SITE] = "site",
	[COALESCE_OBJECT] = "object",
};

struct model *model_new(void)
{
	struct model *m = xreallocarray(NULL, 1, sizeof *m);

	memset(m, 0, sizeof *m);
	return m;
}

void model_free(struct model *m)
{
	if (m == NULL)
		return;
	free(m->rows);
	free(m);
}

/* The row of an id when it is defined, else NULL. */
static struct row *model_row(const struct model *m, uint32_t id)
{
	if (id >= m->cap || !m->rows[id].defined)
		return NULL;
	return &m->rows[id];
}

/* Make room for row id, zeroing the new slots. */
static void model_grow(struct model *m, uint32_t id)
{
	size_t cap = m->cap ? m->cap : 64;

	if (id < m->cap)
		return;
	while (cap <= id)
		cap *= 2;
	m->rows = xreallocarray(m->rows, cap, sizeof *m->rows);
	memset(m->rows + m->cap, 0, (cap - m->cap) * sizeof *m->rows);
	m->cap = cap;
}

int model_define_row(struct model *m, const struct proto_row *r)
{
	struct row *row;

	if (r->id >= MODEL_MAX_ROWS || r->id > m->cap + MODEL_MAX_ID_GAP)
		return -1;
	model_grow(m, r->id);
	row = &m->rows[r->id];
	row->defined = true;
	row->type = r->type;
	row->site = r->site;
	row->object = r->object;
	return 0;
}

void model_apply_delta(struct model *m, const struct proto_delta *d)
{
	struct row *row = model_row(m, d->row);

	if (row == NULL) {
		m->unknown_rows++;
		return;
	}
	row->total.acquisitions += d->acquisitions;
	row->total.contended += d->contended;
	row->total.wait_ns += d->wait_ns;
	row->total.failed += d->failed;
	for (int i = 0; i < HIST_BUCKETS; i++)
		row->total.hist[i] += d->hist[i];
	if (d->max_wait_ns > row->max_wait_ns)
		row->max_wait_ns = d->max_wait_ns;
	row->pending_acq += d->acquisitions;
	row->pending_wait += d->wait_ns;
}

/* Close the interval of one row; pos is the trend slot of this tick. */
static void model_tick_row(struct model *m, struct row *row, size_t pos)
{
	row->last_acq = row->pending_acq;
	row->last_wait = row->pending_wait;
	row->trend[pos] = row->pending_wait;
	row->pending_acq = 0;
	row->pending_wait = 0;
	m->last_acq += row->last_acq;
	m->last_wait += row->last_wait;
}

void model_tick(struct model *m, const struct proto_tick *t)
{
	size_t pos = m->ticks % TREND_LEN;

	m->interval_s = 0;
	if (m->have_tick && t->monotonic_ns > m->last_tick_ns)
		m->interval_s =
			(double)(t->monotonic_ns - m->last_tick_ns) / 1e9;
	m->have_tick = true;
	m->last_tick_ns = t->monotonic_ns;
	m->last_acq = 0;
	m->last_wait = 0;
	for (size_t i = 0; i < m->cap; i++) {
		if (m->rows[i].defined)
			model_tick_row(m, &m->rows[i], pos);
	}
	m->threads_seen = t->threads_seen;
	m->threads_live = t->threads_live;
	m->dropped = t->dropped;
	m->ticks++;
}

void model_set_origin(struct model *m, uint64_t monotonic_ns)
{
	if (m->have_tick)
		return;
	m->have_tick = true;
	m->last_tick_ns = monotonic_ns;
}

void model_reset(struct model *m)
{
	for (size_t i = 0; i < m->cap; i++) {
		m->rows[i].base = m->rows[i].total;
		m->rows[i].max_wait_ns = 0;
	}
}

/* Amount per second over the last interval; 0 while its length is unknown. */
static double model_rate(const struct model *m, uint64_t amount)
{
	return m->interval_s > 0 ? (double)amount / m->interval_s : 0;
}

/* Add the since-reset counts of a row to c. */
static void counts_add_since(struct counts *c, const struct row *row)
{
	c->acquisitions += row->total.acquisitions - row->base.acquisitions;
	c->contended += row->total.contended - row->base.contended;
	c->wait_ns += row->total.wait_ns - row->base.wait_ns;
	c->failed += row->total.failed - row->base.failed;
	for (int i = 0; i < HIST_BUCKETS; i++)
		c->hist[i] += row->total.hist[i] - row->base.hist[i];
}

void model_stats(const struct model *m, struct model_stats *s)
{
	memset(s, 0, sizeof *s);
	for (size_t i = 0; i < m->cap; i++) {
		if (m->rows[i].defined)
			counts_add_since(&s->total, &m->rows[i]);
	}
	s->ticks = m->ticks;
	s->threads_seen = m->threads_seen;
	s->threads_live = m->threads_live;
	s->dropped = m->dropped;
	s->unknown_rows = m->unknown_rows;
	s->interval_s = m->interval_s;
	s->wait_per_s = model_rate(m, m->last_wait);
	s->acq_per_s = model_rate(m, m->last_acq);
}

/* ---- Building a view ---- */

/* What the grouping and sorting comparators need. */
struct view_ctx {
	const struct model *m;
	const struct model_query *q;
	const struct view_row *vr;
	char **labels;		/* per view row, only for SORT_SITE */
};

static int cmp_u64(uint64_t a, uint64_t b)
{
	return (a > b) - (a < b);
}

static int cmp_double(double a, double b)
{
	return (a > b) - (a < b);
}

/* The grouping key of a row (site or object) and the other one. */
static uint64_t group_key(const struct row *r, enum coalesce c)
{
	return c == COALESCE_OBJECT ? r->object : r->site;
}

static uint64_t member_key(const struct row *r, enum coalesce c)
{
	return c == COALESCE_OBJECT ? r->site : r->object;
}

/* Order row ids by group key, type, member key, id. */
static int cmp_members(const void *pa, const void *pb, void *arg)
{
	const struct view_ctx *vc = arg;
	uint32_t ia = *(const uint32_t *)pa, ib = *(const uint32_t *)pb;
	const struct row *a = &vc->m->rows[ia], *b = &vc->m->rows[ib];
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

/* Ids of the defined rows, in group order; returns their number. */
static size_t view_members(const struct view_ctx *vc, uint32_t **ids)
{
	const struct model *m = vc->m;
	size_t n = 0;

	*ids = xreallocarray(NULL, m->cap, sizeof **ids);
	for (size_t i = 0; i < m->cap; i++) {
		if (m->rows[i].defined)
			(*ids)[n++] = (uint32_t)i;
	}
	if (vc->q->coalesce != COALESCE_NONE)
		qsort_r(*ids, n, sizeof **ids, cmp_members, (void *)vc);
	return n;
}

/* Whether rows a and b fall in the same view row. */
static bool same_group(const struct row *a, const struct row *b,
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

/* Add the since-reset counts, max, rates and trend of row id to v. */
static void view_add(const struct model *m, struct view_row *v, uint32_t id)
{
	const struct row *r = &m->rows[id];
	size_t oldest = m->ticks % TREND_LEN;

	counts_add_since(&v->c, r);
	if (r->max_wait_ns > v->max_wait_ns)
		v->max_wait_ns = r->max_wait_ns;
	v->wait_per_s += model_rate(m, r->last_wait);
	v->acq_per_s += model_rate(m, r->last_acq);
	for (size_t i = 0; i < TREND_LEN; i++)
		v->trend[i] += r->trend[(oldest + i) % TREND_LEN];
}

/* Since-reset wait of a row. */
static uint64_t row_wait(const struct row *r)
{
	return r->total.wait_ns - r->base.wait_ns;
}

/*
 * Fill v from the members ids[0..n), which share a group and are sorted by
 * member key. Returns whether any member's site passes the filter.
 */
static bool view_group(const struct view_ctx *vc, const uint32_t *ids,
		       size_t n, struct view_row *v)
{
	const struct model *m = vc->m;
	const struct row *first = &m->rows[ids[0]], *prev = NULL;
	bool match = !filter_active(vc->q);
	uint32_t distinct = 0;
	uint64_t heaviest = 0;

	memset(v, 0, sizeof *v);
	v->type = first->type;
	v->site = first->site;
	v->object = first->object;
	v->row_id = ids[0];
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &m->rows[ids[i]];

		view_add(m, v, ids[i]);
		if (i == 0 || row_wait(r) > heaviest ||
		    (row_wait(r) == heaviest && ids[i] < v->row_id)) {
			heaviest = row_wait(r);
			v->row_id = ids[i];
		}
		if (prev == NULL || member_key(r, vc->q->coalesce) !=
				    member_key(prev, vc->q->coalesce))
			distinct++;
		if (!match && (prev == NULL || r->site != prev->site))
			match = site_matches(vc->q, r->site);
		prev = r;
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

/* Group, filter and coalesce the defined rows into vr; returns the count. */
static size_t view_build(const struct view_ctx *vc, struct view_row **vr)
{
	const struct model *m = vc->m;
	uint32_t *ids;
	size_t n = view_members(vc, &ids), out = 0;

	*vr = xreallocarray(NULL, n, sizeof **vr);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n; j++) {
			if (!same_group(&m->rows[ids[i]], &m->rows[ids[j]],
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
	struct view_ctx vc = { .m = m, .q = q };
	size_t n = view_build(&vc, rows);

	if (n == 0) {
		free(*rows);
		*rows = NULL;
		return 0;
	}
	*rows = view_sort(&vc, *rows, n);
	return n;
}

const char *sort_key_name(enum sort_key k)
{
	if ((unsigned)k >= SORT_KEY_COUNT)
		return "unknown";
	return sort_key_names[k];
}

int sort_key_parse(const char *name)
{
	for (int i = 0; name != NULL && i < SORT_KEY_COUNT; i++) {
		if (strcmp(name, sort_key_names[i]) == 0)
			return i;
	}
	return -1;
}

const char *coalesce_name(enum coalesce c)
{
	if ((unsigned)c >= COALESCE_COUNT)
		return "unknown";
	return coalesce_names[c];
}

int coalesce_parse(const char *name)
{
	for (int i = 0; name != NULL && i < COALESCE_COUNT; i++) {
		if (strcmp(name, coalesce_names[i]) == 0)
			return i;
	}
	return -1;
}
