/*
 * Building a view: group the items (model_items.c) into lines, filter
 * them, order them (model_order.c), and build the table rows of the lines
 * asked for. Every line gets its numbers; only the lines returned get a
 * histogram and a trend.
 */
#include <stdlib.h>
#include <string.h>

#include "lockset.h"
#include "model_impl.h"
#include "model_items.h"
#include "procs.h"
#include "xalloc.h"

/* What grouping and building need. */
struct view_ctx {
	const struct model *m;
	const struct model_query *q;
	const struct item *items;
	uint32_t *ids;		/* item indices in group order */
	struct site_set judged;	/* sites the filter has looked at */
	bool *match;		/* per judged site: its label matches */
};

/* The grouping key of an item (site or object) and the other one. */
static uint64_t group_key(const struct item *it, enum coalesce c)
{
	return c == COALESCE_OBJECT ? it->object : it->site;
}

static uint64_t member_key(const struct item *it, enum coalesce c)
{
	return c == COALESCE_OBJECT ? it->site : it->object;
}

/* An item's place in group order: group key, type, member key, index. */
struct member {
	uint64_t group;
	uint64_t member;
	uint32_t type;
	uint32_t index;
};

static int cmp_member(const void *pa, const void *pb)
{
	const struct member *a = pa, *b = pb;
	int r;

	if ((r = cmp_u64(a->group, b->group)) != 0)
		return r;
	if ((r = cmp_u64(a->type, b->type)) != 0)
		return r;
	if ((r = cmp_u64(a->member, b->member)) != 0)
		return r;
	return cmp_u64(a->index, b->index);
}

/* Indices of the n items, in group order. */
static uint32_t *view_members(const struct view_ctx *vc, size_t n)
{
	enum coalesce c = vc->q->coalesce;
	uint32_t *ids = xreallocarray(NULL, n ? n : 1, sizeof *ids);
	struct member *mb;

	if (c == COALESCE_NONE) {
		for (size_t i = 0; i < n; i++)
			ids[i] = (uint32_t)i;
		return ids;
	}
	mb = xreallocarray(NULL, n ? n : 1, sizeof *mb);
	for (size_t i = 0; i < n; i++) {
		const struct item *it = &vc->items[i];

		mb[i] = (struct member){ group_key(it, c), member_key(it, c),
					 it->type, (uint32_t)i };
	}
	qsort(mb, n, sizeof *mb, cmp_member);
	for (size_t i = 0; i < n; i++)
		ids[i] = mb[i].index;
	free(mb);
	return ids;
}

/*
 * Whether items a and b fall in the same line. Uncoalesced, items of one
 * key (a row and rows shown in their wrapper) are adjacent.
 */
static bool same_group(const struct item *a, const struct item *b,
		       enum coalesce c)
{
	if (c == COALESCE_NONE)
		return a->type == b->type && a->site == b->site &&
		       a->object == b->object;
	return a->type == b->type && group_key(a, c) == group_key(b, c);
}

static bool filter_active(const struct model_query *q)
{
	return q->filter != NULL && q->filter[0] != '\0' &&
	       q->site_label != NULL;
}

/* Whether the label of a site contains the filter; each site asked once. */
static bool site_matches(struct view_ctx *vc, uint64_t site)
{
	const struct model_query *q = vc->q;
	size_t before = vc->judged.n;
	uint32_t i = site_set_add(&vc->judged, site);

	if (vc->judged.n != before) {
		const char *label = procs_filter(q->filter) ? NULL :
				    q->site_label(q->ctx, site);

		vc->match = xreallocarray(vc->match, vc->judged.cap,
					  sizeof *vc->match);
		vc->match[i] = procs_filter(q->filter) ?
			       procs_pid(procs_of(site)) == procs_filter(q->filter) :
			       label != NULL && strcasestr(label, q->filter) != NULL;
	}
	return vc->match[i];
}

/*
 * Whether the names of an item's row hold the filter: a stripped site
 * named by its caller, a lock by its name. Asked for each item whose site
 * did not match: only while a filter is typed.
 */
static bool names_match(struct view_ctx *vc, const struct item *it)
{
	const struct model_query *q = vc->q;
	const char *names;

	if (q->row_names == NULL || procs_filter(q->filter))
		return false;
	names = q->row_names(q->ctx, it->site, it->object, it->row_id);
	return names != NULL && strcasestr(names, q->filter) != NULL;
}

/* Whether the query shows a line of a lock type and role. */
static bool type_shown(const struct model_query *q, unsigned type,
		       unsigned role)
{
	return q->types == 0 || lockset_shows(q->types, type, role);
}

/* Add the counts, rates and max of an item to l. */
static void line_add(const struct model *m, struct line *l,
		     const struct item *it)
{
	lock_calls_add(&l->c, &it->c);
	l->objects_folded |= it->object == 0;
	l->wait_per_s += model_rate(m, it->last.wait_ns);
	l->acq_per_s += model_rate(m, it->last.acq);
	l->caused_per_s += model_rate(m, it->last.caused_ns);
	l->elapsed_s = m->last_tick_ns > m->span_from_ns
		? (double)(m->last_tick_ns - m->span_from_ns) / 1e9 : 0;
	if (it->max_wait > l->max_wait)
		l->max_wait = it->max_wait;
	if (it->max_hold > l->max_hold)
		l->max_hold = it->max_hold;
}

/* Count objects or sites; a line of several has none of its own. */
static void line_distinct(struct line *l, enum coalesce c, uint32_t distinct)
{
	l->n_objects = l->n_sites = 1;
	if (c == COALESCE_SITE) {
		l->n_objects = distinct;
		l->object = distinct == 1 ? l->object : 0;
	} else if (c == COALESCE_OBJECT) {
		l->n_sites = distinct;
		l->site = distinct == 1 ? l->site : 0;
	}
}

/*
 * Fill l from the members ids[first .. first + n), which share a group and
 * are sorted by member key. Returns whether any member's site passes the
 * filter.
 */
static bool line_of(struct view_ctx *vc, uint32_t first, uint32_t n,
		    struct line *l)
{
	const uint32_t *ids = vc->ids + first;
	const struct item *it = &vc->items[ids[0]], *prev = NULL;
	enum coalesce c = vc->q->coalesce;
	bool match = !filter_active(vc->q);
	uint32_t distinct = 0;
	uint64_t heaviest = 0;

	memset(l, 0, sizeof *l);
	l->type = it->type;
	l->site = it->site;
	l->object = it->object;
	l->proc = it->proc;
	l->first = first;
	l->n = n;
	for (uint32_t i = 0; i < n; i++, prev = it) {
		it = &vc->items[ids[i]];
		line_add(vc->m, l, it);
		/* A line has the row id and role of its heaviest row. */
		if (i == 0 || it->c.wait_ns > heaviest ||
		    (it->c.wait_ns == heaviest && it->row_id < l->row_id)) {
			heaviest = it->c.wait_ns;
			l->row_id = it->row_id;
			l->role = it->role;
			l->role_from = it->role_from;
		}
		if (prev == NULL || member_key(it, c) != member_key(prev, c))
			distinct++;
		if (!match && procs_filter(vc->q->filter))
			match = procs_pid(it->proc) ==
				procs_filter(vc->q->filter);
		else if (!match && (prev == NULL || it->site != prev->site))
			match = site_matches(vc, it->site);
		if (!match && filter_active(vc->q))
			match = names_match(vc, it);
		l->procs_mixed |= it->proc != l->proc;
	}
	line_distinct(l, c, distinct);
	return match && type_shown(vc->q, l->type, l->role);
}

/* Where the members of a line are: ids[first .. first + n). */
struct group {
	uint32_t first;
	uint32_t n;
};

/* The numbers of line l in a table row; its histogram and trend untouched. */
static void line_numbers(const struct line *l, struct view_row *v)
{
	v->type = l->type;
	v->role = (enum role)l->role;
	v->role_from = (enum role_from)l->role_from;
	v->site = l->site;
	v->object = l->object;
	v->n_objects = l->n_objects;
	v->n_sites = l->n_sites;
	v->objects_folded = l->objects_folded;
	v->procs_mixed = l->procs_mixed;
	v->proc = l->proc;
	v->row_id = l->row_id;
	v->c.calls = l->c;
	v->max_wait_ns = l->max_wait;
	v->max_hold_ns = l->max_hold;
	v->wait_per_s = l->wait_per_s;
	v->acq_per_s = l->acq_per_s;
	v->caused_per_s = l->caused_per_s;
	v->elapsed_s = l->elapsed_s;
}

/*
 * Group, filter and coalesce the n items into lines, keeping of each its
 * members and its order key; returns the count.
 */
static size_t view_lines(struct view_ctx *vc, size_t n, struct group **groups,
			 struct order **order)
{
	struct view_row numbers = { 0 };
	size_t count = 0;
	struct line l;

	vc->ids = view_members(vc, n);
	*groups = xreallocarray(NULL, n ? n : 1, sizeof **groups);
	*order = xreallocarray(NULL, n ? n : 1, sizeof **order);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n; j++) {
			if (!same_group(&vc->items[vc->ids[i]],
					&vc->items[vc->ids[j]], vc->q->coalesce))
				break;
		}
		if (!line_of(vc, (uint32_t)i, (uint32_t)(j - i), &l))
			continue;
		(*groups)[count] = (struct group){ (uint32_t)i,
						   (uint32_t)(j - i) };
		line_numbers(&l, &numbers);
		order_key(vc->q, &numbers, (uint32_t)count, &(*order)[count]);
		count++;
	}
	order_sites(vc->q, *order, count);
	return count;
}

/* Add what row r lends a line: histogram, trend. */
static void row_lend(const struct model *m, const struct row *r,
		     struct view_row *v)
{
	const struct row_waits *w = row_waits(m, r);

	/* Only waits fill a histogram: a row that never waited has none. */
	if (w == NULL)
		return;
	for (int i = 0; i < HIST_BUCKETS; i++)
		v->c.hist[i] += r->since.hist[i];
	for (size_t i = 0; i < TREND_LEN; i++) {
		if (m->ticks + i >= TREND_LEN)
			v->trend[i] += row_trend(w, m->ticks + i - TREND_LEN);
	}
}

/* The table row of the line of group g: its numbers, what its rows lend. */
static void view_row_of(struct view_ctx *vc, const struct group *g,
			struct view_row *v)
{
	struct line l;

	line_of(vc, g->first, g->n, &l);
	memset(v, 0, sizeof *v);
	line_numbers(&l, v);
	for (uint32_t i = 0; i < l.n; i++) {
		const struct item *it = &vc->items[vc->ids[l.first + i]];

		if (it->row != NO_ROW && !vc->q->numbers_only)
			row_lend(vc->m, &vc->m->rows[it->row], v);
	}
}

void view_row_single(const struct model *m, const struct model_query *q,
		     uint32_t id, bool full, struct view_row *v)
{
	struct item it;
	uint32_t ids[1] = { 0 };
	struct view_ctx vc = { .m = m, .q = q, .items = &it, .ids = ids };
	struct line l;

	item_of_row(m, q, id, &it);
	line_of(&vc, 0, 1, &l);
	memset(v, 0, sizeof *v);
	line_numbers(&l, v);
	if (full)
		row_lend(m, &m->rows[id], v);
}

/*
 * The rank of the followed line: of the lines with its key (site, object
 * and type are in their order keys), the one that sorts first. SIZE_MAX
 * when none has it.
 */
static size_t view_find(const struct view_window *w,
			const struct order *order, size_t n)
{
	size_t best = SIZE_MAX;

	for (size_t i = 0; i < n; i++) {
		const uint64_t *k = order[i].key;

		if (k[WORD_SITE] != w->site || k[WORD_OBJECT] != w->object ||
		    k[WORD_TYPE_ROW] >> 32 != (uint64_t)w->type)
			continue;
		if (best == SIZE_MAX || order_cmp(&order[i], &order[best]) < 0)
			best = i;
	}
	return best == SIZE_MAX ? SIZE_MAX : order_rank(order, n, &order[best]);
}

void view_bounds(const struct view_window *w, size_t n, size_t *from,
			size_t *to)
{
	size_t f = w->found;

	*from = w->offset < n ? w->offset : n;
	*to = w->limit && w->limit < n - *from ? *from + w->limit : n;
	if (f == SIZE_MAX || (f >= *from && f < *to))
		return;
	if (w->limit == 0) {
		*from = f < *from ? f : *from;
		return;
	}
	*from = f - (f < w->limit / 2 ? f : w->limit / 2);
	*to = w->limit < n - *from ? *from + w->limit : n;
}

/* A view's lines, keyed; in order where order_range() has been. */
struct model_table {
	struct view_ctx vc;
	struct item *items;
	struct group *groups;
	struct order *order;
	size_t n;
};

/* Group, filter and key the lines of a view, in no order yet. */
static struct model_table *table_build(const struct model *m,
				       const struct model_query *q)
{
	struct model_table *t = xcalloc(1, sizeof *t);
	size_t n_items = model_items(m, q, &t->items);

	t->vc = (struct view_ctx){ .m = m, .q = q, .items = t->items };
	t->n = view_lines(&t->vc, n_items, &t->groups, &t->order);
	return t;
}

/* Build the table rows of lines [from, from + n), which are in order. */
static void table_rows(struct model_table *t, size_t from, size_t n,
		       struct view_row *rows)
{
	for (size_t i = 0; i < n; i++)
		view_row_of(&t->vc, &t->groups[t->order[from + i].line],
			    &rows[i]);
}

struct model_table *model_table_new(const struct model *m,
				    const struct model_query *q)
{
	struct model_table *t = table_build(m, q);

	order_range(t->order, t->n, 0, t->n);
	return t;
}

size_t model_table_lines(const struct model_table *t)
{
	return t->n;
}

size_t model_table_rows(struct model_table *t, size_t from, size_t n,
			struct view_row *rows)
{
	if (from >= t->n)
		return 0;
	if (n > t->n - from)
		n = t->n - from;
	table_rows(t, from, n, rows);
	return n;
}

/* The line keys in order, as model_drill() takes them from view rows. */
void model_table_drill(const struct model_table *t, struct drill *out)
{
	struct line_key *keys = xreallocarray(NULL, t->n ? t->n : 1,
					      sizeof *keys);

	for (size_t i = 0; i < t->n; i++) {
		const uint64_t *k = t->order[i].key;

		keys[i] = (struct line_key){ k[WORD_SITE], k[WORD_OBJECT],
					     (uint8_t)(k[WORD_TYPE_ROW] >> 32) };
	}
	drill_keys(t->vc.m, t->vc.q, keys, t->n, out);
	free(keys);
}

void model_table_free(struct model_table *t)
{
	if (t == NULL)
		return;
	free(t->order);
	free(t->groups);
	free(t->vc.ids);
	free(t->vc.match);
	site_set_free(&t->vc.judged);
	free(t->items);
	free(t);
}

size_t model_view_window(const struct model *m, const struct model_query *q,
			 struct view_window *w, struct view_row **rows)
{
	struct model_table *t = table_build(m, q);
	size_t n = t->n, from, to;

	w->total = n;
	w->found = w->follow ? view_find(w, t->order, n) : SIZE_MAX;
	view_bounds(w, n, &from, &to);
	w->offset = from;
	order_range(t->order, n, from, to);
	*rows = to > from ? xreallocarray(NULL, to - from, sizeof **rows) : NULL;
	table_rows(t, from, to - from, *rows);
	model_table_free(t);
	return to - from;
}

size_t model_view(const struct model *m, const struct model_query *q,
		  struct view_row **rows)
{
	struct view_window w = { 0 };

	return model_view_window(m, q, &w, rows);
}
