/*
 * The items of a view: every row as it is or, with wrappers skipped,
 * wrapper rows split by their stacks and attributed to their callers; with
 * wrappers shown, the rows the collector counted on a wrapper's caller
 * back on the wrapper's row.
 */
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"
#include "model_items.h"
#include "procs.h"
#include "xalloc.h"

void item_name_row(const struct model *m, struct item *it, uint32_t id)
{
	const struct row *r = &m->rows[id];

	it->row_id = id;
	it->proc = (uint16_t)procs_of(r->site);
	it->role = r->role;
	it->role_from = r->role_from;
}

void item_of_row(const struct model *m, const struct model_query *q,
			uint32_t id, struct item *it)
{
	const struct row *r = &m->rows[id];

	it->site = row_site(q, r);
	it->object = r->object;
	it->c = r->since.calls;
	it->last = r->iv.last;
	it->max_wait = r->max_wait_ns;
	it->max_hold = r->max_hold_ns;
	it->row = id;
	item_name_row(m, it, id);
	it->type = r->type;
	it->keep = true;
	if (r->inprog)
		model_inprog_item(m, r, it);
}

/* Add the waits of an entry to an item: contended acquisitions, timeouts. */
static void item_add_entry(struct item *it, const struct stack_entry *e)
{
	struct lock_calls calls = wait_counts_calls(&e->w);

	lock_calls_add(&it->c, &calls);
	it->last.acq += e->iv.last.acq;
	it->last.wait_ns += e->iv.last.wait_ns;
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
	lock_calls_sub(&it->c, &moved.c);
	it->last.acq = lock_counts_sub_sat(it->last.acq, moved.last.acq);
	it->last.wait_ns = lock_counts_sub_sat(it->last.wait_ns,
					       moved.last.wait_ns);
	it->keep = !lock_calls_empty(&it->c);
}

/* Which wrapper row adds to a caller item now, and how much it added. */
struct caller {
	uint32_t from;		/* the wrapper row adding to it now */
	uint64_t from_wait;	/* what that row has added */
	uint64_t best_wait;	/* the most one wrapper row added */
};

/*
 * Items under construction: one per row in one pass over the rows, then,
 * when there are wrapper rows, their stacks' waits on the items of their
 * callers, found through an index of the first item of each key.
 */
struct expand {
	struct attrib a;
	struct item *items;
	size_t n, cap;
	uint32_t *wrappers;	/* ids of the wrapper rows, in order */
	size_t n_wrappers, wrappers_cap;
	size_t n_entries;	/* entries of the wrapper rows */
	size_t n_moved;		/* rows shown in their wrapper */
	struct caller *callers;	/* per item */
	uint32_t *slots;	/* item index or EMPTY_SLOT */
	size_t mask;
};

/* Make room for n more items. */
static void expand_room(struct expand *x, size_t n)
{
	x->items = xgrow(x->items, &x->cap, x->n + n, 64, sizeof *x->items);
}

/* Note wrapper row id: its stacks are attributed after every row's item. */
static void expand_wrapper(struct expand *x, const struct model *m,
			   uint32_t id)
{
	x->wrappers = xgrow(x->wrappers, &x->wrappers_cap, x->n_wrappers + 1,
			    64, sizeof *x->wrappers);
	x->wrappers[x->n_wrappers++] = id;
	x->n_entries += m->rows[id].n_se;
	item_remainder(m, &m->rows[id], &x->items[x->n]);
}

/*
 * One item per row: whole, or a wrapper row's remainder. Rows of one site
 * in a row (many locks taken at one place) ask is_wrapper once.
 */
static void expand_rows(struct expand *x, const struct model *m)
{
	bool skipping = attrib_skipping(x->a.q), wrapper = false;
	uint64_t site = 0;

	for (uint32_t i = 0; i < m->cap; i++) {
		const struct row *r = &m->rows[i];

		if (!r->defined)
			continue;
		if (skipping && (x->n == 0 || r->site != site)) {
			wrapper = attrib_row(&x->a, r);
			site = r->site;
		}
		expand_room(x, 1);
		item_of_row(m, x->a.q, i, &x->items[x->n]);
		x->n_moved += x->items[x->n].site != r->site;
		if (wrapper)
			expand_wrapper(x, m, i);
		x->n++;
	}
}

/* The slot of a key: holding the first item of that key, or free. */
static uint32_t *expand_slot(struct expand *x, uint64_t site,
			     uint64_t object, uint8_t type)
{
	size_t i = hash_mix(site ^ hash_mix(object ^ hash_mix(type))) & x->mask;

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

/* Index the rows' items, with room for a caller item per wrapper entry. */
static void expand_index(struct expand *x)
{
	size_t need = x->n + x->n_entries, nslots = 1;

	expand_room(x, x->n_entries);
	x->callers = xreallocarray(NULL, need ? need : 1, sizeof *x->callers);
	while (nslots < 2 * need)
		nslots *= 2;
	x->slots = xreallocarray(NULL, nslots, sizeof *x->slots);
	memset(x->slots, 0xff, nslots * sizeof *x->slots);
	x->mask = nslots - 1;
	for (size_t i = 0; i < x->n; i++) {
		const struct item *it = &x->items[i];
		uint32_t *slot = expand_slot(x, it->site, it->object, it->type);

		if (*slot == EMPTY_SLOT)
			*slot = (uint32_t)i;
		x->callers[i] = (struct caller){ NO_ROW, 0, 0 };
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
	struct caller *c;

	if (*slot == EMPTY_SLOT) {
		*slot = (uint32_t)x->n++;
		it = &x->items[*slot];
		memset(it, 0, sizeof *it);
		it->site = site;
		it->object = r->object;
		it->type = r->type;
		it->row = NO_ROW;
		item_name_row(x->a.m, it, id);
		x->callers[*slot] = (struct caller){ NO_ROW, 0, 0 };
	}
	it = &x->items[*slot];
	c = &x->callers[*slot];
	it->keep = true;
	item_add_entry(it, e);
	/* The wrapper row's longest wait is the only bound known for these. */
	if ((e->w.count || e->w.timeouts) && r->max_wait_ns > it->max_wait)
		it->max_wait = r->max_wait_ns;
	if (c->from != id) {
		c->from = id;
		c->from_wait = 0;
	}
	c->from_wait += e->w.wait_ns;
	if (it->row == NO_ROW && c->from_wait > c->best_wait) {
		c->best_wait = c->from_wait;
		item_name_row(x->a.m, it, id);
	}
}

/* The wrapper rows' defined stacks, on the items of their callers. */
static void expand_callers(struct expand *x, const struct model *m)
{
	expand_index(x);
	for (size_t w = 0; w < x->n_wrappers; w++) {
		uint32_t id = x->wrappers[w];
		const struct row *r = &m->rows[id];

		for (uint32_t j = 0; j < r->n_se; j++) {
			if (model_stack(m, r->se[j].stack) != NULL)
				expand_entry(x, id, &r->se[j]);
		}
	}
}

/*
 * Put the items of one key next to each other, in order of the first of
 * each: a line is made of adjacent items of one key.
 */
static void expand_gather(struct expand *x)
{
	struct item *out = xreallocarray(NULL, x->n, sizeof *out);
	uint32_t *next = xreallocarray(NULL, x->n, sizeof *next);
	uint32_t *last = xreallocarray(NULL, x->n, sizeof *last);
	size_t k = 0;

	expand_index(x);
	for (size_t i = 0; i < x->n; i++) {
		const struct item *it = &x->items[i];
		uint32_t first = *expand_slot(x, it->site, it->object, it->type);

		next[i] = EMPTY_SLOT;
		last[i] = (uint32_t)i;
		if (first != i) {
			next[last[first]] = (uint32_t)i;
			last[first] = (uint32_t)i;
		}
	}
	for (size_t i = 0; i < x->n; i++) {
		const struct item *it = &x->items[i];

		if (*expand_slot(x, it->site, it->object, it->type) != i)
			continue;
		for (uint32_t j = (uint32_t)i; j != EMPTY_SLOT; j = next[j])
			out[k++] = x->items[j];
	}
	free(x->items);
	x->items = out;
	x->cap = x->n;
	free(next);
	free(last);
}

size_t model_items(const struct model *m, const struct model_query *q,
		   struct item **out)
{
	struct expand x = { 0 };
	size_t n = 0;

	attrib_init(&x.a, m, q);
	expand_room(&x, m->n_defined + 1);
	expand_rows(&x, m);
	if (x.n_wrappers > 0)
		expand_callers(&x, m);
	else if (x.n_moved > 0)
		expand_gather(&x);
	if (x.n_wrappers == 0)
		n = x.n;	/* only a wrapper's remainder can be dropped */
	for (size_t i = 0; x.n_wrappers > 0 && i < x.n; i++) {
		if (x.items[i].keep)
			x.items[n++] = x.items[i];
	}
	attrib_done(&x.a);
	free(x.wrappers);
	free(x.callers);
	free(x.slots);
	*out = x.items;
	return n;
}
