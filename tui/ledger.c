/*
 * The ledger: at each reset, every row's counts (a whole view_row, so that
 * a row the model no longer lists still has its labels) and every stack's
 * waits (with its frames, which the model may not list again either) are
 * added to what earlier resets took; views add them back.
 */
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "field.h"
#include "idmap.h"
#include "ledger.h"
#include "xalloc.h"

/* What resets took from one stack of one row. */
struct carried_stack {
	uint32_t row_id, stack;
	uint8_t depth;
	uint64_t *frames;		/* NULL for PROTO_NO_STACK */
	struct wait_counts w;
	uint32_t next;			/* the row's next one, index + 1; 0: none */
	bool seen;			/* during a view: the model has it */
};

struct ledger {
	struct view_row *rows;		/* what resets took, per row */
	uint32_t *first;		/* per row: its first stack, index + 1 */
	bool *seen;			/* per row, during a view */
	size_t nrows, rows_cap;
	struct idmap row_ids;		/* row_id -> index + 1 in rows */
	struct carried_stack *stacks;
	size_t nstacks, stacks_cap;
	struct idmap stack_ids;		/* (row_id, stack) -> index + 1 */
};

struct ledger *ledger_new(void)
{
	return xcalloc(1, sizeof(struct ledger));
}

void ledger_free(struct ledger *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->nstacks; i++)
		free(l->stacks[i].frames);
	free(l->rows);
	free(l->first);
	free(l->seen);
	free(l->stacks);
	idmap_free(&l->row_ids);
	idmap_free(&l->stack_ids);
	free(l);
}

struct model_query ledger_query(const struct app *a)
{
	return (struct model_query){ .coalesce = COALESCE_NONE,
		.sort = field_by_key("wait"), .mix_idle = true,
		.site_label = a->query.site_label, .ctx = a->query.ctx };
}

static uint64_t stack_key(uint32_t row_id, uint32_t stack)
{
	return (uint64_t)row_id << 32 | stack;
}

/* The index of r's row among those carried, added (zero counts) if new. */
static size_t carried_row(struct ledger *l, const struct view_row *r)
{
	uint32_t i = idmap_get(&l->row_ids, r->row_id);
	struct view_row *c;

	if (i)
		return i - 1;
	l->rows = xgrow(l->rows, &l->rows_cap, l->nrows + 1, 64, sizeof(*l->rows));
	l->first = xreallocarray(l->first, l->rows_cap, sizeof(*l->first));
	l->seen = xreallocarray(l->seen, l->rows_cap, sizeof(*l->seen));
	c = &l->rows[l->nrows];
	*c = *r;
	memset(&c->c, 0, sizeof(c->c));
	c->max_wait_ns = 0;
	c->wait_per_s = c->acq_per_s = 0;
	memset(c->trend, 0, sizeof(c->trend));
	l->first[l->nrows] = 0;
	idmap_put(&l->row_ids, r->row_id, (uint32_t)++l->nrows);
	return l->nrows - 1;
}

/* The carried stack sv of row (index k), added (no waits) if new. */
static struct carried_stack *carried_stack(struct ledger *l, size_t k,
					   uint32_t row_id,
					   const struct stack_view *sv)
{
	uint32_t i = idmap_get(&l->stack_ids, stack_key(row_id, sv->stack));
	struct carried_stack *c;

	if (i)
		return &l->stacks[i - 1];
	l->stacks = xgrow(l->stacks, &l->stacks_cap, l->nstacks + 1, 256,
			  sizeof(*l->stacks));
	c = &l->stacks[l->nstacks];
	*c = (struct carried_stack){ .row_id = row_id, .stack = sv->stack,
		.depth = sv->frames ? sv->depth : 0, .next = l->first[k] };
	if (sv->frames) {
		c->frames = xreallocarray(NULL, sv->depth ? sv->depth : 1,
					  sizeof(*c->frames));
		memcpy(c->frames, sv->frames, sv->depth * sizeof(*c->frames));
	}
	idmap_put(&l->stack_ids, stack_key(row_id, sv->stack),
		  (uint32_t)++l->nstacks);
	l->first[k] = (uint32_t)l->nstacks;
	return c;
}

void ledger_carry(struct ledger *l, const struct app *a)
{
	struct model_query q = ledger_query(a);
	struct view_row *rows = NULL;
	size_t n = model_view(a->model, &q, &rows);
	struct drill d;

	model_drill(a->model, &q, rows, n, &d);
	for (size_t i = 0; i < n; i++) {
		size_t k = carried_row(l, &rows[i]);
		struct view_row *c = &l->rows[k];

		lock_counts_add(&c->c, &rows[i].c);
		if (rows[i].max_wait_ns > c->max_wait_ns)
			c->max_wait_ns = rows[i].max_wait_ns;
		for (size_t j = 0; j < d.line[i].n_stacks; j++)
			wait_counts_add(&carried_stack(l, k, rows[i].row_id,
						       &d.line[i].stacks[j])->w,
					&d.line[i].stacks[j].w);
	}
	model_drill_free(&d);
	free(rows);
}

/* Row r's counts with what the ledger carries for it; its index + 1, or 0. */
static uint32_t add_row(struct ledger *l, struct view_row *r)
{
	uint32_t k = idmap_get(&l->row_ids, r->row_id);

	if (k) {
		lock_counts_add(&r->c, &l->rows[k - 1].c);
		if (l->rows[k - 1].max_wait_ns > r->max_wait_ns)
			r->max_wait_ns = l->rows[k - 1].max_wait_ns;
		l->seen[k - 1] = true;
	}
	return k;
}

/*
 * Append to out a line's stacks: the model's (d, may be NULL) with what
 * is carried added, then the carried ones the model did not give. How
 * many.
 */
static size_t line_stacks(struct ledger *l, uint32_t k, uint32_t row_id,
			  const struct line_drill *d, struct stack_view *out)
{
	size_t n = 0;

	for (size_t j = 0; d && j < d->n_stacks; j++) {
		uint32_t c = idmap_get(&l->stack_ids,
				       stack_key(row_id, d->stacks[j].stack));

		out[n] = d->stacks[j];
		if (c) {
			wait_counts_add(&out[n].w, &l->stacks[c - 1].w);
			l->stacks[c - 1].seen = true;
		}
		n++;
	}
	for (uint32_t c = k ? l->first[k - 1] : 0; c; c = l->stacks[c - 1].next) {
		struct carried_stack *cs = &l->stacks[c - 1];

		if (!cs->seen)
			out[n++] = (struct stack_view){ .stack = cs->stack,
				.depth = cs->depth, .frames = cs->frames,
				.w = cs->w };
		cs->seen = false;
	}
	return n;
}

void ledger_view(struct ledger *l, const struct app *a, struct ledger_view *v)
{
	struct model_query q = ledger_query(a);
	size_t n_model, room, used = 0;
	struct drill d;

	memset(v, 0, sizeof(*v));
	n_model = model_view(a->model, &q, &v->rows);
	model_drill(a->model, &q, v->rows, n_model, &d);
	v->rows = xreallocarray(v->rows, n_model + l->nrows + 1, sizeof(*v->rows));
	if (l->nrows)
		memset(l->seen, 0, l->nrows * sizeof(*l->seen));
	room = l->nstacks + 1;
	for (size_t i = 0; i < n_model; i++)
		room += d.line[i].n_stacks;
	v->stacks = xreallocarray(NULL, room, sizeof(*v->stacks));
	v->line = xreallocarray(NULL, n_model + l->nrows + 1, sizeof(*v->line));

	for (size_t i = 0; i < n_model; i++) {
		uint32_t k = add_row(l, &v->rows[i]);

		v->line[i] = (struct line_drill){ .stacks = v->stacks + used };
		v->line[i].n_stacks = line_stacks(l, k, v->rows[i].row_id,
						  &d.line[i], v->stacks + used);
		used += v->line[i].n_stacks;
	}
	v->n = n_model;
	for (size_t k = 0; k < l->nrows; k++) {
		if (l->seen[k])
			continue;
		v->rows[v->n] = l->rows[k];
		v->line[v->n] = (struct line_drill){ .stacks = v->stacks + used };
		v->line[v->n].n_stacks = line_stacks(l, (uint32_t)k + 1,
						     l->rows[k].row_id, NULL,
						     v->stacks + used);
		used += v->line[v->n++].n_stacks;
	}
	model_drill_free(&d);
}

void ledger_view_free(struct ledger_view *v)
{
	free(v->rows);
	free(v->line);
	free(v->stacks);
}
