/*
 * The front end's data model: rows indexed by the collector's ids, totals
 * since the last reset per row (a reset zeroes them, QSP's baseline without
 * keeping the base), the last interval per row, and for rows that waited a
 * histogram and a trend ring; per row, the contended waits by (stack,
 * thread), found through one hash table over all rows. Views are built in
 * model_view.c, drill-downs in model_drill.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"
#include "xalloc.h"

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
	for (size_t i = 0; i < m->cap; i++) {
		free(m->rows[i].se);
		free(m->rows[i].inprog);
		free(m->rows[i].held);
	}
	free(m->held_rows);
	free(m->rows);
	free(m->waits_now);
	free(m->inprog_rows);
	free(m->active);
	free(m->touched.ids);
	free(m->role_dirty.ids);
	free(m->waits);
	free(m->stacks);
	lockorder_free(&m->lock_orders);
	free(m->etab);
	first_stacks_free(m->firsts);
	blame_free(m->blame);
	holders_free(m->holders);
	tid_set_free(m->tids);
	free(m);
}

struct row *model_row(const struct model *m, uint32_t id)
{
	if (id >= m->cap || !m->rows[id].defined)
		return NULL;
	return &m->rows[id];
}

/* Make room for index id in array p of *cap elements, zeroing new slots. */
static void *grow_zeroed(void *p, size_t *cap, size_t id, size_t size)
{
	size_t old = *cap;

	p = xgrow(p, cap, id + 1, 64, size);
	memset((char *)p + old * size, 0, (*cap - old) * size);
	return p;
}

/* Whether a new id is plausible after cap known ones. */
static bool id_ok(uint32_t id, size_t cap, uint32_t max)
{
	return id < max && id <= cap + MODEL_MAX_ID_GAP;
}

/* Put id in list l unless there already (*mark: the row's mark for l). */
static void id_list_add(struct id_list *l, uint64_t *mark, uint32_t id)
{
	if (*mark == l->epoch + 1)
		return;
	*mark = l->epoch + 1;
	l->ids = xgrow(l->ids, &l->cap, l->n + 1, 64, sizeof *l->ids);
	l->ids[l->n++] = id;
}

/* Empty list l, its ids in *ids (valid until it grows again); how many. */
static size_t id_list_take(struct id_list *l, uint32_t **ids)
{
	size_t n = l->n;

	*ids = l->ids;
	l->n = 0;
	l->epoch++;
	return n;
}

/*
 * Note that the evidence for row id's role changed: it was defined, or it
 * waited. Acquisitions alone and a closed interval change no role.
 */
static void role_touch(struct model *m, uint32_t id)
{
	id_list_add(&m->role_dirty, &m->rows[id].role_dirty_in, id);
}

/* Note that the numbers of row id changed. */
static void row_touch(struct model *m, uint32_t id)
{
	id_list_add(&m->touched, &m->rows[id].touched_in, id);
}

void model_row_touch(struct model *m, uint32_t id)
{
	row_touch(m, id);
}

/*
 * A row defined (or given another type) takes its type's role, its waits
 * moving with it: a row redefined keeps its counts.
 */
static void role_default(struct model *m, struct row *row, unsigned type)
{
	if (row->defined) {
		model_set_role(m, (uint32_t)(row - m->rows), role_of_type(type),
			       ROLE_FROM_TYPE, 0);
		return;
	}
	row->role = (uint8_t)role_of_type(type);
	row->role_from = ROLE_FROM_TYPE;
	row->role_gen = 0;
}

int model_define_row(struct model *m, const struct proto_row *r)
{
	struct row *row;

	if (!id_ok(r->id, m->cap, MODEL_MAX_ROWS))
		return -1;
	m->rows = grow_zeroed(m->rows, &m->cap, r->id, sizeof *m->rows);
	row = &m->rows[r->id];
	if (row->defined)
		m->structure++;		/* a row's key changed */
	m->n_defined += !row->defined;
	if (!row->defined || row->type != r->type)
		role_default(m, row, r->type);
	row->defined = true;
	row->type = r->type;
	row->site = r->site;
	row->object = r->object;
	row->via = r->via;
	row_touch(m, r->id);
	role_touch(m, r->id);
	blame_row_defined(m, r->id);
	return 0;
}

/* Whether a delta carries waits: a wait time or a histogram count. */
static bool delta_waited(const struct proto_delta *d)
{
	return d->c.calls.wait_ns != 0 ||
	       (!d->hist_empty && lock_counts_hist_any(&d->c));
}

/* Give a row its waits, empty, when it has none yet. */
static void row_waits_make(struct model *m, struct row *row)
{
	if (row->waits == 0) {
		m->waits = xgrow(m->waits, &m->waits_cap, m->n_waits + 1, 64,
				 sizeof *m->waits);
		memset(&m->waits[m->n_waits], 0, sizeof *m->waits);
		row->waits = (uint32_t)++m->n_waits;
	}
}

size_t model_take_touched(struct model *m, const void *taker, uint32_t **ids)
{
	m->touched_by = taker;
	return id_list_take(&m->touched, ids);
}

size_t model_take_role_dirty(struct model *m, uint32_t **ids)
{
	return id_list_take(&m->role_dirty, ids);
}

/* Put row id among those the next tick closes. */
static void row_activate(struct model *m, uint32_t id)
{
	row_touch(m, id);
	if (m->rows[id].active)
		return;
	m->active = xgrow(m->active, &m->active_cap, m->n_active + 1, 64,
			  sizeof *m->active);
	m->active[m->n_active++] = id;
	m->rows[id].active = true;
}

void model_apply_delta(struct model *m, const struct proto_delta *d)
{
	struct row *row = model_row(m, d->row);

	if (row == NULL) {
		m->unknown_rows++;
		return;
	}
	if (d->hist_empty) {
		lock_calls_add(&row->since.calls, &d->c.calls);
		lock_calls_add(&m->since.calls, &d->c.calls);
	} else {
		lock_counts_add(&row->since, &d->c);
		lock_counts_add(&m->since, &d->c);
	}
	if (row->role == ROLE_IDLE)
		m->since_cond_wait += d->c.calls.wait_ns;
	if (delta_waited(d))
		row_waits_make(m, row);
	if (d->c.calls.contended || d->c.calls.timeouts || d->c.calls.wait_ns)
		role_touch(m, d->row);
	if (d->max_wait_ns > row->max_wait_ns)
		row->max_wait_ns = d->max_wait_ns;
	if (d->max_hold_ns > row->max_hold_ns)
		row->max_hold_ns = d->max_hold_ns;
	interval_add(&row->iv, d->c.calls.acquisitions, d->c.calls.wait_ns);
	row_activate(m, d->row);
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

const struct stack_def *model_stack(const struct model *m,
					   uint32_t id)
{
	if (id >= m->stacks_cap || m->stacks[id].depth == 0)
		return NULL;
	return &m->stacks[id];
}

size_t model_stack_ids(const struct model *m)
{
	return m->stacks_cap;
}

size_t model_stack_frames(const struct model *m, uint32_t id,
			  const uint64_t **frames)
{
	const struct stack_def *s = model_stack(m, id);

	*frames = s ? s->frames : NULL;
	return s ? s->depth : 0;
}

/* The slot of (row, stack, tid): holding its entry, or free. */
static struct entry_slot *etab_probe(const struct model *m, uint32_t row,
				     uint32_t stack, uint32_t tid)
{
	size_t mask = m->etab_cap - 1;
	size_t i = hash_mix(((uint64_t)row << 32 | stack) ^ hash_mix(tid)) & mask;

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
	size_t cap_se = row->cap_se;
	struct entry_slot *s;
	struct stack_entry *e;

	if ((m->n_entries + 1) * 2 > m->etab_cap)
		etab_grow(m);
	s = etab_probe(m, id, stack, tid);
	if (s->idx != EMPTY_SLOT)
		return &row->se[s->idx];
	if (m->n_entries >= MODEL_MAX_ENTRIES)
		return NULL;
	row->se = xgrow(row->se, &cap_se, row->n_se + 1, 4, sizeof *row->se);
	row->cap_se = (uint32_t)cap_se;
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
	row_activate(m, d->row);
	role_touch(m, d->row);
	if (d->stack != PROTO_NO_STACK)
		first_stack_note(m, m->rows[d->row].object, d->stack);
	tid_note(m, d->tid);
	wait_counts_add(&e->w, &d->w);
	interval_add(&e->iv, d->w.count, d->w.wait_ns);
}

/* ---- Blame ---- */

void model_apply_blame(struct model *m, uint32_t row, uint64_t site,
		       unsigned type, const struct wait_counts *w)
{
	uint32_t holder;

	if (model_row(m, row) == NULL)
		return;
	holder = blame_add(m, row, site, type, w);
	row_touch(m, row);
	if (holder == NO_ROW || model_row(m, holder) == NULL)
		return;
	m->rows[holder].since.calls.caused_wait_ns += w->wait_ns;
	m->since.calls.caused_wait_ns += w->wait_ns;
	m->rows[holder].iv.pending.caused_ns += w->wait_ns;
	row_activate(m, holder);
}

/* ---- Intervals and reset ---- */

/* Zero the slots of a trend ring from its upto to tick t, not included. */
static void trend_catch_up(struct row_waits *w, uint64_t t)
{
	for (uint64_t k = w->upto; k < t && k < w->upto + TREND_LEN; k++)
		w->trend[k % TREND_LEN] = 0;
	if (t > w->upto)
		w->upto = t;
}

/* Whether every interval a row keeps, the current one too, is empty. */
static bool row_quiet(const struct row *row)
{
	if (!interval_quiet(&row->iv))
		return false;
	for (uint32_t i = 0; i < row->n_se; i++) {
		if (!interval_quiet(&row->se[i].iv))
			return false;
	}
	return true;
}

/* Close the interval of one row at tick t (m->ticks). */
static void model_tick_row(struct model *m, struct row *row, uint64_t t)
{
	interval_tick(&row->iv);
	if (row->waits) {
		struct row_waits *w = &m->waits[row->waits - 1];

		trend_catch_up(w, t);
		w->trend[t % TREND_LEN] = row->iv.last.wait_ns;
		w->upto = t + 1;
	}
	m->all.last.acq += row->iv.last.acq;
	m->all.last.wait_ns += row->iv.last.wait_ns;
	if (row->role == ROLE_IDLE)
		m->cond.last.wait_ns += row->iv.last.wait_ns;
	for (uint32_t i = 0; i < row->n_se; i++)
		interval_tick(&row->se[i].iv);
}

/*
 * Close the interval of the active rows; the others have nothing to
 * close. A row leaves the list once all it keeps is zero.
 */
static void model_tick_rows(struct model *m)
{
	for (size_t i = 0; i < m->n_active;) {
		struct row *row = &m->rows[m->active[i]];

		model_tick_row(m, row, m->ticks);
		row_touch(m, m->active[i]);
		if (row_quiet(row)) {
			row->active = false;
			m->active[i] = m->active[--m->n_active];
		} else {
			i++;
		}
	}
}

void model_tick(struct model *m, const struct proto_tick *t)
{
	m->prev_interval_s = m->interval_s;
	interval_tick(&m->all);		/* the rows' ticks fill in the last */
	interval_tick(&m->cond);
	m->interval_s = 0;
	if (!m->have_tick)
		m->span_from_ns = t->monotonic_ns;
	if (m->have_tick && t->monotonic_ns > m->last_tick_ns)
		m->interval_s =
			(double)(t->monotonic_ns - m->last_tick_ns) / 1e9;
	m->have_tick = true;
	m->last_tick_ns = t->monotonic_ns;
	model_tick_rows(m);
	m->threads_seen = t->threads_seen;
	m->threads_live = t->threads_live;
	m->dropped = t->dropped;
	m->folded = t->folded;
	m->memory_used = t->memory_used;
	m->memory_cap = t->memory_cap;
	m->ticks++;
}

/* Merge the last interval of a row into the one before it. */
static void fold_row(struct model *m, struct row *row, size_t last,
		     size_t before)
{
	interval_fold(&row->iv);
	if (row->waits) {
		struct row_waits *w = &m->waits[row->waits - 1];

		trend_catch_up(w, m->ticks);
		w->trend[before] += w->trend[last];
		w->trend[last] = 0;
	}
	for (uint32_t i = 0; i < row->n_se; i++)
		interval_fold(&row->se[i].iv);
}

/*
 * The collector's exit flush closes an interval of a few milliseconds, in
 * which waits that end make absurd rates: it joins the interval before.
 */
void model_fold_last_interval(struct model *m)
{
	if (m->ticks < 2)
		return;
	for (size_t i = 0; i < m->cap; i++) {
		if (m->rows[i].defined)
			fold_row(m, &m->rows[i], (m->ticks - 1) % TREND_LEN,
				 (m->ticks - 2) % TREND_LEN);
	}
	m->structure++;
	m->interval_s += m->prev_interval_s;
	interval_fold(&m->all);
	interval_fold(&m->cond);
	model_inprog_fold(m);
	m->ticks--;
}

void model_set_origin(struct model *m, uint64_t monotonic_ns)
{
	if (m->have_tick)
		return;
	m->have_tick = true;
	m->last_tick_ns = monotonic_ns;
	m->span_from_ns = monotonic_ns;
}

void model_reset(struct model *m)
{
	for (size_t i = 0; i < m->cap; i++) {
		struct row *row = &m->rows[i];

		memset(&row->since, 0, sizeof row->since);
		row->max_wait_ns = 0;
		row->max_hold_ns = 0;
		for (uint32_t j = 0; j < row->n_se; j++)
			memset(&row->se[j].w, 0, sizeof row->se[j].w);
	}
	memset(&m->since, 0, sizeof m->since);
	m->since_cond_wait = 0;
	blame_reset(m);
	holders_reset(m);
	model_held_reset(m);
	m->span_from_ns = m->last_tick_ns;
	m->structure++;
}

/*
 * The totals of all rows since reset. Every delta applied goes to exactly
 * one defined row, and a reset zeroes every row, so the sums kept beside
 * the rows equal the sums over them.
 */
void model_stats(const struct model *m, struct model_stats *s)
{
	memset(s, 0, sizeof *s);
	s->total = m->since;
	s->ticks = m->ticks;
	s->threads_seen = m->threads_seen;
	s->threads_live = m->threads_live;
	s->dropped = m->dropped;
	s->folded = m->folded;
	s->memory_used = m->memory_used;
	s->memory_cap = m->memory_cap;
	s->unknown_rows = m->unknown_rows;
	memcpy(s->unseen, m->unseen, m->n_unseen * sizeof m->unseen[0]);
	s->n_unseen = m->n_unseen;
	s->interval_s = m->interval_s;
	s->wait_per_s = model_rate(m, m->all.last.wait_ns);
	s->acq_per_s = model_rate(m, m->all.last.acq);
	s->cond_wait_per_s = model_rate(m, m->cond.last.wait_ns);
	s->lock_wait_per_s = model_rate(m, m->all.last.wait_ns -
					   m->cond.last.wait_ns);
	s->cond_wait_ns = m->since_cond_wait;
	s->lock_wait_ns = m->since.calls.wait_ns - m->since_cond_wait;
	model_inprog_stats(m, s);
}

void model_note_unseen(struct model *m, const struct unseen_wait *w, size_t n)
{
	m->n_unseen = n < UNSEEN_KINDS ? n : UNSEEN_KINDS;
	memcpy(m->unseen, w, m->n_unseen * sizeof *w);
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

void model_put_lock_order(struct model *m, const struct lock_order *w)
{
	lockorder_put(&m->lock_orders, w);
}

size_t model_lock_orders(const struct model *m, const struct lock_order **out)
{
	*out = m->lock_orders.v;
	return m->lock_orders.n;
}
