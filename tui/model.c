/*
 * The front end's data model: rows indexed by the collector's ids, totals
 * and a reset baseline per row, the last interval and a trend ring per row;
 * per row, the contended waits by (stack, thread), found through one hash
 * table over all rows. Views are built on demand: expand (attribute wrapper
 * rows to their callers), group (by sorting member items), filter, sort.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "xalloc.h"

#define MODEL_MAX_ROWS (1u << 20)
#define MODEL_MAX_STACKS (1u << 20)
/* Past this many (row, stack, thread) entries, new ones are dropped. */
#define MODEL_MAX_ENTRIES (1u << 22)
/*
 * The collector numbers rows and stacks densely; an id far past those known
 * is garbage, refused before it can make us allocate for it.
 */
#define MODEL_MAX_ID_GAP 4096
#define NO_ROW UINT32_MAX
#define EMPTY_SLOT UINT32_MAX

/* Contended waits of one row through one stack in one thread. */
struct stack_entry {
	uint32_t stack;		/* or PROTO_NO_STACK */
	uint32_t tid;
	uint64_t count;		/* since monitoring began */
	uint64_t wait;
	uint64_t base_count;	/* at the last reset */
	uint64_t base_wait;
	uint64_t pending_count;	/* since the last tick */
	uint64_t pending_wait;
	uint64_t last_count;	/* the last closed interval */
	uint64_t last_wait;
};

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
	struct stack_entry *se;	/* in order of arrival */
	uint32_t n_se;
	uint32_t cap_se;
};

struct stack_def {
	uint8_t depth;		/* 0 while undefined */
	uint64_t frames[PROTO_STACK_DEPTH];
};

/* Where an entry lives: its row and index there; idx EMPTY_SLOT = free. */
struct entry_slot {
	uint32_t row;
	uint32_t idx;
};

struct model {
	struct row *rows;
	size_t cap;		/* rows allocated (defined or not) */
	struct stack_def *stacks;
	size_t stacks_cap;	/* stacks allocated (defined or not) */
	struct entry_slot *etab; /* open addressing, by (row, stack, tid) */
	size_t etab_cap;	/* a power of two, at least twice n_entries */
	size_t n_entries;
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
	for (size_t i = 0; i < m->cap; i++)
		free(m->rows[i].se);
	free(m->rows);
	free(m->stacks);
	free(m->etab);
	free(m);
}

/* The row of an id when it is defined, else NULL. */
static struct row *model_row(const struct model *m, uint32_t id)
{
	if (id >= m->cap || !m->rows[id].defined)
		return NULL;
	return &m->rows[id];
}

/* Make room for index id in array p of *cap elements, zeroing new slots. */
static void *grow_zeroed(void *p, size_t *cap, size_t id, size_t size)
{
	size_t n = *cap ? *cap : 64;

	if (id < *cap)
		return p;
	while (n <= id)
		n *= 2;
	p = xreallocarray(p, n, size);
	memset((char *)p + *cap * size, 0, (n - *cap) * size);
	*cap = n;
	return p;
}

/* Whether a new id is plausible after cap known ones. */
static bool id_ok(uint32_t id, size_t cap, uint32_t max)
{
	return id < max && id <= cap + MODEL_MAX_ID_GAP;
}

int model_define_row(struct model *m, const struct proto_row *r)
{
	struct row *row;

	if (!id_ok(r->id, m->cap, MODEL_MAX_ROWS))
		return -1;
	m->rows = grow_zeroed(m->rows, &m->cap, r->id, sizeof *m->rows);
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

/* ---- Stacks ---- */

int model_define_stack(struct model *m, const struct proto_stack *st)
{
	struct stack_def *s;

	if (!id_ok(st->id, m->stacks_cap, MODEL_MAX_STACKS) ||
	    st->depth == 0 || st->depth > PROTO_STACK_DEPTH)
		return -1;
	m->stacks = grow_zeroed(m->stacks, &m->stacks_cap, st->id,
				sizeof *m->stacks);
	s = &m->stacks[st->id];
	s->depth = st->depth;
	memcpy(s->frames, st->frames, st->depth * sizeof *s->frames);
	return 0;
}

/* The definition of a stack id, or NULL while it has none. */
static const struct stack_def *model_stack(const struct model *m,
					   uint32_t id)
{
	if (id >= m->stacks_cap || m->stacks[id].depth == 0)
		return NULL;
	return &m->stacks[id];
}

/* A 64-bit mix (the splitmix64 finalizer). */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The slot of (row, stack, tid): holding its entry, or free. */
static struct entry_slot *etab_probe(const struct model *m, uint32_t row,
				     uint32_t stack, uint32_t tid)
{
	size_t mask = m->etab_cap - 1;
	size_t i = mix(((uint64_t)row << 32 | stack) ^ mix(tid)) & mask;

	for (;; i = (i + 1) & mask) {
		struct entry_slot *s = &m->etab[i];
		const struct stack_entry *e;

		if (s->idx == EMPTY_SLOT)
			return s;
		e = &m->rows[s->row].se[s->idx];
		if (s->row == row && e->stack == stack && e->tid == tid)
			return s;
	}
}

/* Double the entry table and index every entry again. */
static void etab_grow(struct model *m)
{
	size_t cap = m->etab_cap ? m->etab_cap * 2 : 1024;

	free(m->etab);
	m->etab = xreallocarray(NULL, cap, sizeof *m->etab);
	memset(m->etab, 0xff, cap * sizeof *m->etab);
	m->etab_cap = cap;
	for (uint32_t r = 0; r < m->cap; r++) {
		for (uint32_t i = 0; i < m->rows[r].n_se; i++) {
			const struct stack_entry *e = &m->rows[r].se[i];

			*etab_probe(m, r, e->stack, e->tid) =
				(struct entry_slot){ r, i };
		}
	}
}

/* The entry of (row, stack, tid), created empty; NULL past the limit. */
static struct stack_entry *row_entry(struct model *m, uint32_t id,
				     uint32_t stack, uint32_t tid)
{
	struct row *row = &m->rows[id];
	struct entry_slot *s;
	struct stack_entry *e;

	if ((m->n_entries + 1) * 2 > m->etab_cap)
		etab_grow(m);
	s = etab_probe(m, id, stack, tid);
	if (s->idx != EMPTY_SLOT)
		return &row->se[s->idx];
	if (m->n_entries >= MODEL_MAX_ENTRIES)
		return NULL;
	if (row->n_se == row->cap_se) {
		row->cap_se = row->cap_se ? row->cap_se * 2 : 4;
		row->se = xreallocarray(row->se, row->cap_se, sizeof *row->se);
	}
	*s = (struct entry_slot){ id, row->n_se };
	e = &row->se[row->n_se++];
	memset(e, 0, sizeof *e);
	e->stack = stack;
	e->tid = tid;
	m->n_entries++;
	return e;
}

/*
 * Waits for an undefined row are dropped without counting: the row's DELTA
 * already counted them in unknown_rows. A stack id need not be defined yet.
 */
void model_apply_stack_delta(struct model *m, const struct proto_stack_delta *d)
{
	struct stack_entry *e;

	if (model_row(m, d->row) == NULL ||
	    (d->stack != PROTO_NO_STACK && d->stack >= MODEL_MAX_STACKS))
		return;
	e = row_entry(m, d->row, d->stack, d->tid);
	if (e == NULL)
		return;
	e->count += d->count;
	e->wait += d->wait_ns;
	e->pending_count += d->count;
	e->pending_wait += d->wait_ns;
}

/* ---- Intervals and reset ---- */

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
	for (uint32_t i = 0; i < row->n_se; i++) {
		struct stack_entry *e = &row->se[i];

		e->last_count = e->pending_count;
		e->last_wait = e->pending_wait;
		e->pending_count = 0;
		e->pending_wait = 0;
	}
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
		struct row *row = &m->rows[i];

		row->base = row->total;
		row->max_wait_ns = 0;
		for (uint32_t j = 0; j < row->n_se; j++) {
			row->se[j].base_count = row->se[j].count;
			row->se[j].base_wait = row->se[j].wait;
		}
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

/* ---- The attributed space ---- */

/*
 * A candidate line before grouping: a row as it is or, with wrappers
 * skipped, what is left of a wrapper row, or a caller its stacks went to.
 */
struct item {
	uint64_t site;
	uint64_t object;
	uint8_t type;
	bool keep;		/* a wrapper's remainder only when not empty */
	uint32_t row;		/* the row lending failures, histogram, max
				   and trend; NO_ROW for a caller only */
	uint32_t row_id;	/* the row named for the line */
	uint64_t acq;		/* since reset */
	uint64_t contended;
	uint64_t wait;
	uint64_t last_acq;	/* the last interval */
	uint64_t last_wait;
	uint32_t from;		/* the wrapper row adding to it now */
	uint64_t from_wait;	/* what that row has added */
	uint64_t best_wait;	/* the most one wrapper row added */
};

#define ATTR_UNKNOWN 0xff
#define ATTR_ALL_WRAPPERS 0xfe

/* Where the stacks of wrapper rows go, computed once per stack id. */
struct attrib {
	const struct model *m;
	const struct model_query *q;
	uint8_t *frame;		/* per stack: the first frame outside the
				   wrappers, or ATTR_*; NULL unless skipping */
};

static bool skipping(const struct model_query *q)
{
	return q->skip_wrappers && q->is_wrapper != NULL;
}

static void attrib_init(struct attrib *a, const struct model *m,
			const struct model_query *q)
{
	a->m = m;
	a->q = q;
	a->frame = NULL;
	if (skipping(q) && m->stacks_cap > 0) {
		a->frame = xreallocarray(NULL, m->stacks_cap, 1);
		memset(a->frame, ATTR_UNKNOWN, m->stacks_cap);
	}
}

/* Whether the stacks of row r are attributed to their callers. */
static bool attrib_row(const struct attrib *a, const struct row *r)
{
	return skipping(a->q) && a->q->is_wrapper(a->q->ctx, r->site);
}

/*
 * The site where entry e of row r counts: for a wrapper row and a defined
 * stack, the first frame outside every wrapper (the row's own site when all
 * frames are wrappers); otherwise the row's site.
 */
static uint64_t attrib_site(struct attrib *a, const struct row *r,
			    bool wrapper, const struct stack_entry *e)
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
	free(x.a.frame);
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

static int cmp_u64(uint64_t a, uint64_t b)
{
	return (a > b) - (a < b);
}

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

/* ---- Drill-down: the stacks and threads behind a line ---- */

/* Since-reset waits under one stack or thread id. */
struct part {
	uint32_t id;
	uint64_t count;
	uint64_t wait;
};

/* Whether the key (site, object, type) is grouped into line r. */
static bool in_line(const struct view_row *r, enum coalesce c, uint64_t site,
		    uint64_t object, uint8_t type)
{
	if (type != r->type)
		return false;
	if (c == COALESCE_SITE)
		return site == r->site;
	if (c == COALESCE_OBJECT)
		return object == r->object;
	return site == r->site && object == r->object;
}

static void parts_push(struct part **p, size_t *n, size_t *cap, uint32_t id,
		       const struct stack_entry *e)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*p = xreallocarray(*p, *cap, sizeof **p);
	}
	(*p)[(*n)++] = (struct part){ id, e->count - e->base_count,
				      e->wait - e->base_wait };
}

/*
 * The waits of the entries that count in line r, by stack or by thread id,
 * not yet summed. With wrappers skipped, a wrapper row's entry counts where
 * its stack is attributed.
 */
static size_t line_parts(const struct model *m, const struct model_query *q,
			 const struct view_row *r, bool by_thread,
			 struct part **out)
{
	struct attrib a;
	size_t n = 0, cap = 0;

	*out = NULL;
	attrib_init(&a, m, q);
	for (size_t i = 0; i < m->cap; i++) {
		const struct row *row = &m->rows[i];
		bool wrapper;

		if (!row->defined || row->n_se == 0 || row->type != r->type)
			continue;
		wrapper = attrib_row(&a, row);
		if (!wrapper && !in_line(r, q->coalesce, row->site,
					 row->object, row->type))
			continue;
		for (uint32_t j = 0; j < row->n_se; j++) {
			const struct stack_entry *e = &row->se[j];
			uint64_t site = attrib_site(&a, row, wrapper, e);

			if (in_line(r, q->coalesce, site, row->object,
				    row->type))
				parts_push(out, &n, &cap,
					   by_thread ? e->tid : e->stack, e);
		}
	}
	free(a.frame);
	return n;
}

static int cmp_part_id(const void *pa, const void *pb)
{
	const struct part *a = pa, *b = pb;

	return cmp_u64(a->id, b->id);
}

/* Most wait first, then most count, then lowest id. */
static int cmp_part_weight(const void *pa, const void *pb)
{
	const struct part *a = pa, *b = pb;
	int r;

	if ((r = -cmp_u64(a->wait, b->wait)) != 0)
		return r;
	if ((r = -cmp_u64(a->count, b->count)) != 0)
		return r;
	return cmp_u64(a->id, b->id);
}

/* Sum the parts of each id, drop empty sums, order heaviest first. */
static size_t parts_merge(struct part *p, size_t n)
{
	size_t out = 0;

	if (n == 0)
		return 0;
	qsort(p, n, sizeof *p, cmp_part_id);
	for (size_t i = 1; i < n; i++) {
		if (p[i].id == p[out].id) {
			p[out].count += p[i].count;
			p[out].wait += p[i].wait;
		} else {
			out += p[out].count != 0 || p[out].wait != 0;
			p[out] = p[i];
		}
	}
	out += p[out].count != 0 || p[out].wait != 0;
	qsort(p, out, sizeof *p, cmp_part_weight);
	return out;
}

size_t model_row_stacks(const struct model *m, const struct model_query *q,
			const struct view_row *r, struct stack_view **out)
{
	struct part *p;
	size_t n = line_parts(m, q, r, false, &p);

	n = parts_merge(p, n);
	*out = n ? xreallocarray(NULL, n, sizeof **out) : NULL;
	for (size_t i = 0; i < n; i++) {
		const struct stack_def *s = model_stack(m, p[i].id);

		(*out)[i] = (struct stack_view){
			.stack = p[i].id,
			.depth = s ? s->depth : 0,
			.frames = s ? s->frames : NULL,
			.count = p[i].count,
			.wait_ns = p[i].wait,
		};
	}
	free(p);
	return n;
}

size_t model_row_threads(const struct model *m, const struct model_query *q,
			 const struct view_row *r, struct thread_view **out)
{
	struct part *p;
	size_t n = line_parts(m, q, r, true, &p);

	n = parts_merge(p, n);
	*out = n ? xreallocarray(NULL, n, sizeof **out) : NULL;
	for (size_t i = 0; i < n; i++)
		(*out)[i] = (struct thread_view){ p[i].id, p[i].count,
						  p[i].wait };
	free(p);
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
