/* The roles of rows: what decides them, and moving a row's waits with it. */
#include "model_impl.h"

size_t model_row_ids(const struct model *m)
{
	return m->cap;
}

/* How many distinct threads waited on a row (its stack entries). */
static uint32_t row_threads(const struct row *r)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < r->n_se; i++) {
		uint32_t j;

		if (r->se[i].w.count + r->se[i].w.timeouts == 0)
			continue;
		for (j = 0; j < i; j++) {
			if (r->se[j].tid == r->se[i].tid &&
			    r->se[j].w.count + r->se[j].w.timeouts != 0)
				break;
		}
		n += j == i;
	}
	return n;
}

bool model_role_input(const struct model *m, uint32_t id, bool threads,
		      struct role_input *in)
{
	const struct row *r = model_row(m, id);

	if (r == NULL)
		return false;
	in->site = r->site;
	in->role = (enum role)r->role;
	in->from = (enum role_from)r->role_from;
	in->gen = r->role_gen;
	in->e = (struct role_evidence){ .type = r->type, .c = r->since.calls };
	if (threads)
		in->e.threads = row_threads(r);
	return true;
}

/* Move a row's waits into the idle total (to_idle) or out of it. */
static void totals_move(struct model *m, const struct row *r, int to_idle)
{
	if (to_idle) {
		m->since_cond_wait += r->since.calls.wait_ns;
		m->cond.last.wait_ns += r->iv.last.wait_ns;
		m->cond.prev.wait_ns += r->iv.prev.wait_ns;
	} else {
		m->since_cond_wait -= r->since.calls.wait_ns;
		m->cond.last.wait_ns -= r->iv.last.wait_ns;
		m->cond.prev.wait_ns -= r->iv.prev.wait_ns;
	}
}

void model_set_role(struct model *m, uint32_t id, enum role role,
		    enum role_from from, uint32_t gen)
{
	struct row *r = model_row(m, id);

	if (r == NULL)
		return;
	if (r->role != role) {
		totals_move(m, r, role == ROLE_IDLE);
		r->role = (uint8_t)role;
		m->structure++;
	}
	r->role_from = (uint8_t)from;
	r->role_gen = gen;
}
