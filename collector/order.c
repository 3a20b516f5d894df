/* Lock order: threads' nestings, merged, and the pairs seen both ways. */
#include <string.h>

#include "../common/clock.h"
#include "../common/hash.h"
#include "arena.h"
#include "frames.h"
#include "order.h"

/* The thread's order table, allocated at its first nesting; NULL if none. */
static struct order_table *order_of(struct thread_table *t)
{
	if (t->order == NULL)
		__atomic_store_n(&t->order, arena_alloc_table(sizeof(*t->order)),
				 __ATOMIC_RELEASE);
	return t->order;
}

static uint32_t edge_hash(uint64_t held_key, uint64_t held, uint64_t key,
			  uint64_t lock)
{
	return hash_fast(held_key ^ held * 3 ^ key * 5 ^ lock * 7);
}

void order_note(struct thread_table *t, uint64_t held_key, uint64_t held,
		uint64_t key, uint64_t lock)
{
	struct order_table *o = order_of(t);
	struct order_edge *e;
	uint32_t i;

	if (o == NULL) {
		table_add(&t->dropped, 1);
		return;
	}
	for (i = edge_hash(held_key, held, key, lock) % ORDER_EDGES;;
	     i = (i + 1) % ORDER_EDGES) {
		e = &o->edge[i];
		if (e->then_key == 0)
			break;
		if (e->then_key == key && e->then_object == lock &&
		    e->first_key == held_key && e->first_object == held) {
			table_add(&e->hits, 1);
			return;
		}
	}
	if (o->used >= ORDER_EDGES_USED) {
		table_add(&t->dropped, 1);
		return;
	}
	o->used++;
	e->first_key = held_key;
	e->first_object = held;
	e->then_object = lock;
	e->depth = frames_capture(&t->reader, KEY_SITE(key), e->frames,
				  ORDER_FRAMES);
	e->hits = 1;
	e->t0 = clock_now_ns();
	__atomic_store_n(&e->then_key, key, __ATOMIC_RELEASE);
}

/* ---- The collector's side ---- */

/* The merged nesting like e, added if new; NULL when there is no room. */
static struct order_merged *merged_for(struct order_set *os,
				       struct stacks *ss,
				       const struct order_edge *e, bool *added)
{
	struct order_merged *m;

	*added = false;
	for (uint32_t k = 0; k < os->n; k++) {
		m = &os->e[k];
		if (m->first_key == e->first_key && m->then_key == e->then_key &&
		    m->first_object == e->first_object &&
		    m->then_object == e->then_object) {
			if (e->t0 < m->t0)
				m->t0 = e->t0;
			return m;
		}
	}
	if (os->n >= ORDER_MERGED_MAX ||
	    !arena_grow((void **)&os->e, &os->cap, os->n, 64, sizeof(*os->e)))
		return NULL;
	m = &os->e[os->n++];
	*m = (struct order_merged){ .first_key = e->first_key,
		.first_object = e->first_object, .then_key = e->then_key,
		.then_object = e->then_object, .t0 = e->t0,
		.stack = stacks_define(ss, e->frames, e->depth) };
	*added = true;
	return m;
}

/* Whether w stands for the pair (a, b) in either orientation. */
static bool warning_is(const struct order_warning *w,
		       const struct order_merged *a,
		       const struct order_merged *b)
{
	return (w->first_key == a->first_key && w->then_key == a->then_key &&
		w->rev_held_key == b->first_key && w->rev_key == b->then_key) ||
	       (w->first_key == b->first_key && w->then_key == b->then_key &&
		w->rev_held_key == a->first_key && w->rev_key == a->then_key);
}

/*
 * The warning for first, then rev (its reverse, seen later), made when
 * new; -1 when there is no room.
 */
static int warning_for(struct order_set *os, const struct order_merged *first,
		       const struct order_merged *rev)
{
	struct order_warning *w;

	for (uint32_t k = 0; k < os->nw; k++)
		if (warning_is(&os->w[k], first, rev))
			return (int)k;
	if (os->nw >= ORDER_WARNINGS_MAX ||
	    !arena_grow((void **)&os->w, &os->wcap, os->nw, 16, sizeof(*os->w)))
		return -1;
	w = &os->w[os->nw];
	*w = (struct order_warning){ .first_key = first->first_key,
		.then_key = first->then_key, .rev_held_key = rev->first_key,
		.rev_key = rev->then_key };
	w->m = (struct proto_lock_order){ .id = os->nw, .stack = rev->stack,
		.then_stack = first->stack,
		.first_object = first->first_object,
		.first_site = KEY_SITE(first->first_key),
		.then_object = first->then_object,
		.then_site = KEY_SITE(first->then_key),
		.rev_held_site = KEY_SITE(rev->first_key),
		.rev_site = KEY_SITE(rev->then_key) };
	return (int)os->nw++;
}

/* Attach m to warning k, counting what it saw so far; once per nesting. */
static void attach(struct order_set *os, struct order_merged *m, int k,
		   uint64_t seq)
{
	if (m->warning)
		return;
	m->warning = (uint32_t)k + 1;
	os->w[k].m.count += m->hits;
	os->w[k].changed_seq = seq;
}

/*
 * A nesting just merged: if its objects were seen the other way round
 * (the first such earlier nesting), both count towards one warning,
 * whose first order is the one seen first.
 */
static void find_reversal(struct order_set *os, struct order_merged *m,
			  uint64_t seq)
{
	for (uint32_t k = 0; k + 1 < os->n; k++) {
		struct order_merged *r = &os->e[k];
		int w;

		if (r->first_object != m->then_object ||
		    r->then_object != m->first_object)
			continue;
		w = r->t0 <= m->t0 ? warning_for(os, r, m)
				   : warning_for(os, m, r);
		if (w < 0)
			return;
		attach(os, r, w, seq);
		attach(os, m, w, seq);
		return;
	}
}

/* Merge one thread nesting: new, or its hits since the last scan. */
static void scan_edge(struct order_set *os, struct stacks *ss,
		      struct order_edge *e, uint64_t seq)
{
	uint64_t hits = table_load(&e->hits), grew = hits - e->hits_seen;
	struct order_merged *m;
	bool added;

	if (e->global == ORDER_NO_ROOM) {
		os->dropped += grew;
		e->hits_seen = hits;
		return;
	}
	if (e->global == 0) {
		m = merged_for(os, ss, e, &added);
		if (m == NULL) {
			e->global = ORDER_NO_ROOM;
			os->dropped += grew;
			e->hits_seen = hits;
			return;
		}
		e->global = (uint32_t)(m - os->e) + 1;
		if (added)
			find_reversal(os, m, seq);
	}
	m = &os->e[e->global - 1];
	e->hits_seen = hits;
	m->hits += grew;
	if (grew && m->warning) {
		os->w[m->warning - 1].m.count += grew;
		os->w[m->warning - 1].changed_seq = seq;
	}
}

void order_scan_table(struct order_set *os, struct stacks *ss,
		      struct thread_table *t, uint64_t seq)
{
	struct order_table *o = __atomic_load_n(&t->order, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; o && i < ORDER_EDGES; i++) {
		struct order_edge *e = &o->edge[i];

		if (__atomic_load_n(&e->then_key, __ATOMIC_ACQUIRE))
			scan_edge(os, ss, e, seq);
	}
}
