/* Summing the thread tables into rows. */
#include <string.h>

#include "../common/clock.h"
#include "arena.h"
#include "rows.h"
#include "table.h"
#include "unwind.h"

/* What one scan carries from table to table. */
struct scan {
	struct rows *rs;
	uint32_t epoch;		/* the epoch this scan closes */
	uint64_t dropped;	/* live tables' drops */
	bool dead;		/* the table being read is of an exited thread */
};

/* Count events that could not be recorded on a row. */
static void drop(struct scan *sc, uint64_t n)
{
	if (sc->dead)
		sc->rs->dropped_retired += n;
	else
		sc->dropped += n;
}

static uint32_t key_hash(uint64_t site, uint64_t object, uint32_t type)
{
	return hash_fast(site * 31 + type) ^ hash_fast(object + 0x632be59bd9b4e019ull);
}

/* Rebuild the index at twice the size; false when memory is short. */
static bool grow_index(struct rows *rs)
{
	uint32_t cap = rs->index_cap ? rs->index_cap * 2 : 1024;
	uint32_t *index = arena_alloc(cap * sizeof(*index));

	if (index == NULL)
		return false;
	for (uint32_t r = 0; r < rs->n; r++) {
		const struct row *row = &rs->v[r];
		uint32_t i = key_hash(row->site, row->object, row->type) & (cap - 1);

		while (index[i] != 0)
			i = (i + 1) & (cap - 1);
		index[i] = r + 1;
	}
	arena_free(rs->index, rs->index_cap * sizeof(*index));
	rs->index = index;
	rs->index_cap = cap;
	return true;
}

/* Index slot of a key: its row, or the empty slot where it would go. */
static uint32_t *index_slot(struct rows *rs, uint64_t site, uint64_t object,
			    uint32_t type)
{
	uint32_t mask = rs->index_cap - 1;
	uint32_t i = key_hash(site, object, type) & mask;

	for (;; i = (i + 1) & mask) {
		uint32_t r = rs->index[i];
		const struct row *row = &rs->v[r - 1];

		if (r == 0 || (row->site == site && row->object == object &&
			       row->type == type))
			return &rs->index[i];
	}
}

/* Room for one more row; false when memory is short. */
static bool room_for_row(struct rows *rs)
{
	return arena_grow((void **)&rs->v, &rs->cap, rs->n, 256, sizeof(*rs->v));
}

/*
 * The id + 1 of a key's row, created when new; 0 when it cannot be had.
 * Past the memory cap a new key joins its site's "several objects" row.
 */
static uint32_t row_id(struct rows *rs, uint64_t site, uint64_t object,
		       uint32_t type)
{
	uint32_t *slot;
	struct row *row;

	if ((rs->n + 1) * 2 > rs->index_cap && !grow_index(rs) &&
	    (rs->n + 1) * 4 > rs->index_cap * 3)
		return 0;
	slot = index_slot(rs, site, object, type);
	if (*slot != 0)
		return *slot;
	if (object != 0 && (arena_tight() || !room_for_row(rs)))
		return row_id(rs, site, 0, type);
	if (!room_for_row(rs))
		return 0;
	row = &rs->v[rs->n++];
	memset(row, 0, sizeof(*row));
	row->site = site;
	row->object = object;
	row->type = type;
	*slot = rs->n;
	return rs->n;
}

/*
 * An entry's counts, each word read atomically: its thread may be adding.
 * The wait time first, as the thread writes it last (hooks.c, wait_end()).
 * Its acquisitions stay 0: the object slot has them.
 */
static void load_entry(struct lock_counts *c, const struct entry *e)
{
	lock_calls_load(&c->calls, &e->c.calls);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		c->hist[i] = table_load(&e->c.hist[i]);
}

/*
 * Add an entry's waits to its row. Interval maxima: an entry's
 * epoch_max_ns counts when it was recorded in the epoch this scan closes,
 * or in the next one (a thread that already saw the new epoch).
 */
static void scan_entry(struct scan *sc, const struct thread_table *t,
		       uint32_t r, struct entry *e)
{
	struct row *row = &sc->rs->v[r];
	struct row_waits *w = row->waits;
	struct wait_counts nostack = {
		.count = table_load(&e->nostack.count),
		.timeouts = table_load(&e->nostack.timeouts),
		.wait_ns = table_load(&e->nostack.wait_ns) };
	struct lock_counts c;
	uint32_t epoch;
	uint64_t max;

	/* The counts, then the maxima, which their waits wrote before them. */
	load_entry(&c, e);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	epoch = __atomic_load_n(&e->max_epoch, __ATOMIC_RELAXED);
	max = table_load(&e->epoch_max_ns);
	if (w == NULL && (w = row->waits = arena_alloc(sizeof(*w))) == NULL) {
		drop(sc, c.calls.contended + c.calls.failed);
		return;
	}
	lock_counts_add(&w->now, &c);
	if (sc->dead)
		lock_counts_add(&w->retired, &c);
	if ((epoch == sc->epoch || epoch == sc->epoch + 1) && max > w->scan_max_ns)
		w->scan_max_ns = max;
	max = table_load(&e->max_wait_ns);
	if (max > w->max_ns)
		w->max_ns = max;
	if (!wait_counts_empty(&nostack))
		stacks_add(&sc->rs->stacks, r, PROTO_NO_STACK, t->tid,
			   &e->nostack_row, &nostack, sc->dead);
}

/* Add one site's object table; via is the site's (see struct site_slot). */
static void scan_objects(struct scan *sc, struct thread_table *t,
			 struct obj_table *o, uint64_t via)
{
	struct rows *rs = sc->rs;
	uint64_t site = KEY_SITE(o->key);
	uint32_t type = KEY_TYPE(o->key);

	for (uint32_t i = 0; i <= o->mask; i++) {
		uint64_t object = __atomic_load_n(&o->slot[i].object, __ATOMIC_ACQUIRE);

		if (object == 0)
			continue;
		uint64_t acq = table_load(&o->slot[i].acquisitions);
		struct entry *e = __atomic_load_n(&obj_entries(o)[i], __ATOMIC_ACQUIRE);
		uint32_t *r = &obj_rows(o)[i];

		if (*r == 0 || *r > rs->n) {
			*r = row_id(rs, site, object == OBJECT_FOLDED ? 0 : object, type);
			if (*r != 0 && rs->v[*r - 1].via == 0)
				rs->v[*r - 1].via = via;
		}
		if (*r == 0) {
			drop(sc, acq + (e ? table_load(&e->c.calls.failed) : 0));
			continue;
		}
		rs->v[*r - 1].acq_now += acq;
		if (sc->dead)
			rs->v[*r - 1].acq_retired += acq;
		if (e) {
			e->row = *r;
			scan_entry(sc, t, *r - 1, e);
		}
	}
}

/* The row id + 1 of a thread's (key, object), as its scan set it; 0: none. */
static uint32_t row_of_key(const struct thread_table *t, uint64_t key,
			   uint64_t object)
{
	struct site_index *si = __atomic_load_n(&t->sites, __ATOMIC_ACQUIRE);
	struct obj_table *o;
	uint32_t i;

	for (i = hash_fast(key) & si->mask;; i = (i + 1) & si->mask) {
		uint64_t k = __atomic_load_n(&si->slot[i].key, __ATOMIC_ACQUIRE);

		if (k == 0)
			return 0;
		if (k == key)
			break;
	}
	o = __atomic_load_n(&si->slot[i].objects, __ATOMIC_ACQUIRE);
	for (i = hash_fast(object) & o->mask;; i = (i + 1) & o->mask) {
		uint64_t obj = __atomic_load_n(&o->slot[i].object, __ATOMIC_ACQUIRE);

		if (obj == 0)
			return 0;
		if (obj == object)
			return obj_rows(o)[i];
	}
}

uint32_t rows_of_key(struct rows *rs, uint64_t key, uint64_t object)
{
	if (object == OBJECT_FOLDED)
		object = 0;
	return row_id(rs, KEY_SITE(key), object, KEY_TYPE(key));
}

/*
 * A slot's longest holds into its row: that of the epoch this scan
 * closes (or the next one), as scan_entry() takes a wait's.
 */
static void scan_hold_max(struct scan *sc, struct row_holds *rh,
			  const struct hold_slot *s)
{
	uint32_t epoch = __atomic_load_n(&s->max_epoch, __ATOMIC_RELAXED);
	uint64_t max = table_load(&s->epoch_max_ns);

	if ((epoch == sc->epoch || epoch == sc->epoch + 1) && max > rh->scan_max_ns)
		rh->scan_max_ns = max;
	max = table_load(&s->max_ns);
	if (max > rh->max_ns)
		rh->max_ns = max;
}

/* Add a table's timed holds to their rows. */
static void scan_holds(struct scan *sc, struct thread_table *t)
{
	struct hold_table *h = __atomic_load_n(&t->holds, __ATOMIC_ACQUIRE);
	struct rows *rs = sc->rs;

	for (uint32_t i = 0; h && i < HOLD_SLOTS; i++) {
		struct hold_slot *s = &h->slot[i];
		uint64_t key = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE), ns, n;
		uint32_t r;
		struct row_holds *rh;

		if (key == 0)
			continue;
		r = row_of_key(t, key, s->object);
		if (r == 0 || r > rs->n)
			continue;
		rh = rs->v[r - 1].holds;
		if (rh == NULL && (rh = rs->v[r - 1].holds =
				   arena_alloc(sizeof(*rh))) == NULL)
			continue;
		ns = table_load(&s->hold_ns);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		n = table_load(&s->holds);
		rh->now_ns += ns;
		rh->now += n;
		scan_hold_max(sc, rh, s);
		if (sc->dead) {
			rh->retired_ns += ns;
			rh->retired += n;
		}
	}
}

/*
 * Note the wait t's thread is blocked in, if any. Read after its counts:
 * the thread clears t0 before they grow (struct wait_now), so a wait
 * that ends meanwhile counts once, ended, or not at all this scan. A
 * wait whose row this scan did not see yet shows from the next one.
 */
static void scan_wait(struct rows *rs, const struct thread_table *t,
		      uint64_t now)
{
	const struct wait_now *n = &t->waiting;
	uint64_t t0 = __atomic_load_n(&n->t0, __ATOMIC_ACQUIRE);
	uint64_t key, object, holder;
	uint32_t r;

	if (t0 == 0 || rs->n_waits == PROTO_WAITS_MAX)
		return;
	key = __atomic_load_n(&n->key, __ATOMIC_RELAXED);
	object = __atomic_load_n(&n->object, __ATOMIC_RELAXED);
	holder = __atomic_load_n(&n->holder, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&n->t0, __ATOMIC_RELAXED) != t0)
		return;		/* another wait meanwhile: the next scan */
	r = row_of_key(t, key, object);
	if (r == 0 || r > rs->n)
		return;
	rs->waits[rs->n_waits++] = (struct proto_wait){
		.tid = t->tid, .row = r - 1, .holder = (uint32_t)holder,
		.blocked_ns = now > t0 ? now - t0 : 0 };
}

/* Add a whole table; a dead one is retired and recycled. */
static void scan_table(struct scan *sc, struct thread_table *t)
{
	struct site_index *si = __atomic_load_n(&t->sites, __ATOMIC_ACQUIRE);
	uint64_t dropped = table_load(&t->dropped) + table_load(&t->nested);

	for (uint32_t i = 0; i <= si->mask; i++) {
		uint64_t key = __atomic_load_n(&si->slot[i].key, __ATOMIC_ACQUIRE);

		if (key)
			scan_objects(sc, t, __atomic_load_n(&si->slot[i].objects,
							    __ATOMIC_ACQUIRE),
				     __atomic_load_n(&si->slot[i].via,
						     __ATOMIC_RELAXED));
	}
	scan_holds(sc, t);
	stacks_scan_table(&sc->rs->stacks, t, sc->dead);
	order_scan_table(&sc->rs->order, &sc->rs->stacks, t, sc->rs->seq);
	drop(sc, dropped);
	if (!sc->dead)
		scan_wait(sc->rs, t, clock_now_ns());
}

/* Every row back to its retired part. */
static void begin_rows(struct rows *rs)
{
	for (uint32_t r = 0; r < rs->n; r++) {
		struct row *row = &rs->v[r];

		row->acq_now = row->acq_retired;
		if (row->holds) {
			row->holds->now_ns = row->holds->retired_ns;
			row->holds->now = row->holds->retired;
			row->holds->scan_max_ns = 0;
		}
		if (row->waits) {
			row->waits->now = row->waits->retired;
			row->waits->scan_max_ns = 0;
		}
	}
}

/* Carry a row's longest hold of the last scan to the sessions. */
static void hold_max_pending(struct rows *rs, struct row_holds *h)
{
	for (unsigned k = 0; h && h->scan_max_ns && k < SESSIONS_MAX; k++) {
		if ((rs->sessions & (1u << k)) &&
		    h->scan_max_ns > h->pending_max_ns[k])
			h->pending_max_ns[k] = h->scan_max_ns;
	}
}

/*
 * Mark rows that changed (every count only grows, so their sum changes
 * when any does); carry maxima to the sessions; total the folds.
 */
static void end_rows(struct rows *rs)
{
	rs->folded = 0;
	for (uint32_t r = 0; r < rs->n; r++) {
		struct row *row = &rs->v[r];
		struct row_waits *w = row->waits;
		uint64_t sum = row->acq_now;

		if (w)
			sum += lock_calls_sum(&w->now.calls);
		if (row->holds)
			sum += row->holds->now_ns + row->holds->now;
		if (sum != row->last_sum)
			row->changed_seq = rs->seq;
		row->last_sum = sum;
		if (row->object == 0)
			rs->folded += row->acq_now + (w ? w->now.calls.failed : 0);
		for (unsigned k = 0; w && w->scan_max_ns && k < SESSIONS_MAX; k++) {
			if ((rs->sessions & (1u << k)) &&
			    w->scan_max_ns > w->pending_max_ns[k])
				w->pending_max_ns[k] = w->scan_max_ns;
		}
		hold_max_pending(rs, row->holds);
	}
}

void rows_scan(struct rows *rs)
{
	struct scan sc = { .rs = rs };

	table_free_retired();
	sc.epoch = __atomic_load_n(&table_epoch, __ATOMIC_RELAXED);
	__atomic_store_n(&table_epoch, sc.epoch + 1, __ATOMIC_RELAXED);
	rs->seq++;
	begin_rows(rs);
	stacks_begin_scan(&rs->stacks);
	rs->threads_live = 0;
	rs->n_waits = 0;
	for (struct thread_table *t = table_first(); t; t = t->all_next) {
		if (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) != TABLE_LIVE)
			continue;
		sc.dead = table_thread_gone(t);
		if (sc.dead)
			table_sync_acquire(t);
		scan_table(&sc, t);
		if (sc.dead) {
			unwind_free(t);
			table_recycle(t);
		}
		else
			rs->threads_live++;
	}
	end_rows(rs);
	stacks_end_scan(&rs->stacks, rs->seq);
	rs->dropped = rs->dropped_retired + sc.dropped + table_claim_drops() +
		      rs->order.dropped;
}

void rows_session_start(struct rows *rs, unsigned k, bool baseline)
{
	for (uint32_t r = 0; r < rs->n; r++) {
		struct row_waits *w = rs->v[r].waits;
		struct row_holds *h = rs->v[r].holds;

		if (w)
			w->pending_max_ns[k] = baseline ? 0 : w->max_ns;
		if (h)
			h->pending_max_ns[k] = baseline ? 0 : h->max_ns;
	}
	rs->sessions |= 1u << k;
}

void rows_session_end(struct rows *rs, unsigned k)
{
	rs->sessions &= ~(1u << k);
}
