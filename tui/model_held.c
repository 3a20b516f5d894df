/*
 * While held: what the holders at a row's sites did while others waited
 * for them, as the collector sampled it (collector/heldby.h), since reset.
 */
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"
#include "xalloc.h"

/* Add ns in call nr to h; past its room, to the calls not named. */
static void add_call(struct held_view *h, uint32_t nr, uint64_t ns)
{
	const size_t room = sizeof(h->sys) / sizeof(h->sys[0]);
	size_t i;

	for (i = 0; i < h->nsys; i++)
		if (h->sys[i].nr == nr)
			break;
	if (i == h->nsys) {
		if (h->nsys == room) {
			i = room - 1;
			h->sys[i].nr = PROTO_HELD_OTHER_CALL;
		} else {
			h->nsys++;
			h->sys[i].nr = nr;
			h->sys[i].ns = 0;
		}
	}
	h->sys[i].ns += ns;
}

void model_apply_while_held(struct model *m, uint32_t row,
			    const struct proto_while_held *d, uint32_t lock_row)
{
	struct row *r = model_row(m, row);
	struct held_view *h;

	if (r == NULL)
		return;
	if (r->held == NULL) {
		r->held = xcalloc(1, sizeof(*r->held));
		m->held_rows = xgrow(m->held_rows, &m->held_rows_cap,
				     m->n_held_rows + 1, 16, sizeof(*m->held_rows));
		m->held_rows[m->n_held_rows++] = row;
	}
	h = r->held;
	h->running_ns += d->running_ns;
	h->runnable_ns += d->runnable_ns;
	h->lock_wait_ns += d->lock_wait_ns;
	h->exited_ns += d->exited_ns;
	if (lock_row)
		h->lock_row = lock_row;
	for (unsigned i = 0; i < d->nsys && i < PROTO_HELD_SYSCALLS; i++)
		if (d->sys[i].ns)
			add_call(h, d->sys[i].nr, d->sys[i].ns);
	model_row_touch(m, row);
}

void model_held_reset(struct model *m)
{
	for (size_t i = 0; i < m->n_held_rows; i++) {
		struct held_view *h = m->rows[m->held_rows[i]].held;

		*h = (struct held_view){ .lock_row = h->lock_row };
	}
}

/* Whether row r is of line v (its type, site, object). */
static bool in_line(const struct row *r, const struct view_row *v)
{
	return r->type == v->type && (v->site == 0 || r->site == v->site) &&
	       (v->object == 0 || r->object == v->object);
}

static int heavier(const void *a, const void *b)
{
	uint64_t x = ((const struct held_call *)a)->ns;
	uint64_t y = ((const struct held_call *)b)->ns;

	return (x < y) - (x > y);
}

bool model_while_held(const struct model *m, const struct view_row *v,
		      struct held_view *out)
{
	bool any = false;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < m->n_held_rows; i++) {
		const struct row *r = &m->rows[m->held_rows[i]];
		const struct held_view *h = r->held;

		if (!in_line(r, v))
			continue;
		any = true;
		out->running_ns += h->running_ns;
		out->runnable_ns += h->runnable_ns;
		out->lock_wait_ns += h->lock_wait_ns;
		out->exited_ns += h->exited_ns;
		if (h->lock_row)
			out->lock_row = h->lock_row;
		for (size_t k = 0; k < h->nsys; k++)
			add_call(out, h->sys[k].nr, h->sys[k].ns);
	}
	qsort(out->sys, out->nsys, sizeof(out->sys[0]), heavier);
	return any;
}
