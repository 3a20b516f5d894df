/*
 * The ledger: at each reset, every row's counts (a whole view_row, so that
 * a row the model no longer lists still has its labels) and every stack's
 * waits are added to what earlier resets took; views add them back.
 */
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "field.h"
#include "idmap.h"
#include "ledger.h"
#include "xalloc.h"

struct ledger {
	struct view_row *rows;		/* what resets took, per row */
	size_t nrows, rows_cap;
	struct idmap row_ids;		/* row_id -> index + 1 in rows */
	struct wait_counts *waits;	/* what resets took, per stack of a row */
	size_t nwaits, waits_cap;
	struct idmap wait_ids;		/* (row_id, stack) -> index + 1 */
	bool *seen;			/* per row, during a view */
};

struct ledger *ledger_new(void)
{
	return xcalloc(1, sizeof(struct ledger));
}

void ledger_free(struct ledger *l)
{
	if (!l)
		return;
	free(l->rows);
	free(l->waits);
	free(l->seen);
	idmap_free(&l->row_ids);
	idmap_free(&l->wait_ids);
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

/* The carried row of r's row, added (zero counts) if new. */
static struct view_row *carried_row(struct ledger *l, const struct view_row *r)
{
	uint32_t i = idmap_get(&l->row_ids, r->row_id);
	struct view_row *c;

	if (i)
		return &l->rows[i - 1];
	l->rows = xgrow(l->rows, &l->rows_cap, l->nrows + 1, 64, sizeof(*l->rows));
	c = &l->rows[l->nrows++];
	*c = *r;
	memset(&c->c, 0, sizeof(c->c));
	c->max_wait_ns = 0;
	c->wait_per_s = c->acq_per_s = 0;
	memset(c->trend, 0, sizeof(c->trend));
	idmap_put(&l->row_ids, r->row_id, (uint32_t)l->nrows);
	return c;
}

static struct wait_counts *carried_waits(struct ledger *l, uint64_t key)
{
	uint32_t i = idmap_get(&l->wait_ids, key);

	if (i)
		return &l->waits[i - 1];
	l->waits = xgrow(l->waits, &l->waits_cap, l->nwaits + 1, 256,
			 sizeof(*l->waits));
	memset(&l->waits[l->nwaits], 0, sizeof(*l->waits));
	idmap_put(&l->wait_ids, key, (uint32_t)++l->nwaits);
	return &l->waits[l->nwaits - 1];
}

void ledger_carry(struct ledger *l, const struct app *a)
{
	struct model_query q = ledger_query(a);
	struct view_row *rows = NULL;
	size_t n = model_view(a->model, &q, &rows);
	struct drill d;

	model_drill(a->model, &q, rows, n, &d);
	for (size_t i = 0; i < n; i++) {
		struct view_row *c = carried_row(l, &rows[i]);

		lock_counts_add(&c->c, &rows[i].c);
		if (rows[i].max_wait_ns > c->max_wait_ns)
			c->max_wait_ns = rows[i].max_wait_ns;
		for (size_t j = 0; j < d.line[i].n_stacks; j++) {
			const struct stack_view *sv = &d.line[i].stacks[j];

			wait_counts_add(carried_waits(l, stack_key(rows[i].row_id,
								   sv->stack)),
					&sv->w);
		}
	}
	model_drill_free(&d);
	free(rows);
}

/* Add to the view's rows and stacks what the ledger carries. */
static void add_carried(struct ledger *l, struct ledger_view *v)
{
	for (size_t i = 0; i < v->n_model; i++) {
		struct view_row *r = &v->rows[i];
		uint32_t k = idmap_get(&l->row_ids, r->row_id);

		if (k) {
			lock_counts_add(&r->c, &l->rows[k - 1].c);
			if (l->rows[k - 1].max_wait_ns > r->max_wait_ns)
				r->max_wait_ns = l->rows[k - 1].max_wait_ns;
			l->seen[k - 1] = true;
		}
		for (size_t j = 0; j < v->drill.line[i].n_stacks; j++) {
			struct stack_view *sv = &v->drill.line[i].stacks[j];
			uint32_t w = idmap_get(&l->wait_ids,
					       stack_key(r->row_id, sv->stack));

			if (w)
				wait_counts_add(&sv->w, &l->waits[w - 1]);
		}
	}
}

void ledger_view(struct ledger *l, const struct app *a, struct ledger_view *v)
{
	struct model_query q = ledger_query(a);

	memset(v, 0, sizeof(*v));
	v->n_model = v->n = model_view(a->model, &q, &v->rows);
	model_drill(a->model, &q, v->rows, v->n, &v->drill);
	l->seen = xreallocarray(l->seen, l->nrows ? l->nrows : 1,
				sizeof(*l->seen));
	memset(l->seen, 0, l->nrows * sizeof(*l->seen));
	add_carried(l, v);
	v->rows = xreallocarray(v->rows, v->n + l->nrows + 1, sizeof(*v->rows));
	for (size_t i = 0; i < l->nrows; i++)
		if (!l->seen[i])
			v->rows[v->n++] = l->rows[i];
}

void ledger_view_free(struct ledger_view *v)
{
	model_drill_free(&v->drill);
	free(v->rows);
}
