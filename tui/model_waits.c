/*
 * Waits in progress. A wait counts in the collector's numbers only once it
 * ends; until then each update lists it with its time so far, and a line
 * counts it as one contended acquisition of that time (WAIT, AVG, MAX),
 * its rate as what the waits grew by since the update before. When a wait
 * ends, its real count arrives and the estimate leaves in the same update:
 * the rate then gains the wait's time less what the estimates showed
 * already, so that no time is counted twice.
 */
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"
#include "model_items.h"
#include "xalloc.h"

/* Keep row id among the rows with waits in progress lately. */
static struct row_inprog *inprog_of(struct model *m, uint32_t id)
{
	struct row *r = &m->rows[id];

	if (r->inprog == NULL) {
		r->inprog = xcalloc(1, sizeof(*r->inprog));
		m->inprog_rows = xgrow(m->inprog_rows, &m->inprog_rows_cap,
				       m->n_inprog_rows + 1, 16,
				       sizeof(*m->inprog_rows));
		m->inprog_rows[m->n_inprog_rows++] = id;
	}
	return r->inprog;
}

/* Each row's waits of the last update become those of the one before. */
static void inprog_shift(struct model *m)
{
	for (size_t i = 0; i < m->n_inprog_rows; i++) {
		struct row_inprog *p = m->rows[m->inprog_rows[i]].inprog;

		p->prev2_ns = p->prev_ns;
		p->prev_ns = p->ns;
		p->ns = 0;
		p->max_ns = 0;
		p->n = 0;
		model_row_touch(m, m->inprog_rows[i]);
	}
}

/* Forget the rows whose waits have left both updates. */
static void inprog_prune(struct model *m)
{
	size_t k = 0;

	for (size_t i = 0; i < m->n_inprog_rows; i++) {
		uint32_t id = m->inprog_rows[i];
		struct row_inprog *p = m->rows[id].inprog;

		if (p->n == 0 && p->prev_ns == 0 && p->prev2_ns == 0) {
			free(p);
			m->rows[id].inprog = NULL;
			continue;
		}
		m->inprog_rows[k++] = id;
	}
	m->n_inprog_rows = k;
}

void model_set_waits(struct model *m, const struct model_wait *w, size_t n)
{
	inprog_shift(m);
	m->waits_now = xgrow(m->waits_now, &m->waits_now_cap, n, 16,
			     sizeof(*m->waits_now));
	m->n_waits_now = 0;
	for (size_t i = 0; i < n; i++) {
		struct row_inprog *p;

		if (model_row(m, w[i].row) == NULL)
			continue;
		m->waits_now[m->n_waits_now++] = w[i];
		p = inprog_of(m, w[i].row);
		p->ns += w[i].blocked_ns;
		p->n++;
		if (w[i].blocked_ns > p->max_ns)
			p->max_ns = w[i].blocked_ns;
		model_row_touch(m, w[i].row);
	}
	inprog_prune(m);
}

void model_inprog_fold(struct model *m)
{
	for (size_t i = 0; i < m->n_inprog_rows; i++) {
		struct row_inprog *p = m->rows[m->inprog_rows[i]].inprog;

		p->prev_ns = p->prev2_ns;
		model_row_touch(m, m->inprog_rows[i]);
	}
}

size_t model_waits(const struct model *m, const struct model_wait **out)
{
	*out = m->waits_now;
	return m->n_waits_now;
}

/*
 * The waits' time at the update before, as the rate subtracts it: at
 * least their time now less the interval per wait, so that a wait begun
 * before counting began (older than one interval) adds one interval.
 */
static uint64_t inprog_prev(const struct model *m, const struct row_inprog *p)
{
	uint64_t cap = m->interval_s > 0 ?
		       (uint64_t)(m->interval_s * 1e9) * p->n : UINT64_MAX;

	return p->ns > p->prev_ns && p->ns - p->prev_ns > cap ?
	       p->ns - cap : p->prev_ns;
}

/* A total's gain over the last interval, less what ended: never below 0. */
static double rate_with(const struct model *m, uint64_t last, uint64_t ns,
			uint64_t prev_ns)
{
	return model_rate(m, last + ns > prev_ns ? last + ns - prev_ns : 0);
}

void model_inprog_stats(const struct model *m, struct model_stats *s)
{
	uint64_t ns[2] = { 0, 0 }, prev[2] = { 0, 0 }, n = 0;

	for (size_t i = 0; i < m->n_inprog_rows; i++) {
		const struct row *r = &m->rows[m->inprog_rows[i]];
		int idle = r->role == ROLE_IDLE;

		ns[idle] += r->inprog->ns;
		prev[idle] += inprog_prev(m, r->inprog);
		n += r->inprog->n;
	}
	if (m->n_inprog_rows == 0)
		return;
	s->total.calls.wait_ns += ns[0] + ns[1];
	s->total.calls.contended += n;
	s->total.calls.acquisitions += n;
	s->lock_wait_ns += ns[0];
	s->cond_wait_ns += ns[1];
	s->wait_per_s = rate_with(m, m->all.last.wait_ns, ns[0] + ns[1],
				  prev[0] + prev[1]);
	s->cond_wait_per_s = rate_with(m, m->cond.last.wait_ns, ns[1], prev[1]);
	s->lock_wait_per_s = rate_with(m, m->all.last.wait_ns -
				       m->cond.last.wait_ns, ns[0], prev[0]);
}

void model_inprog_item(const struct model *m, const struct row *r,
		       struct item *it)
{
	const struct row_inprog *p = r->inprog;
	uint64_t last = it->last.wait_ns + p->ns, prev = inprog_prev(m, p);

	it->c.wait_ns += p->ns;
	it->c.contended += p->n;
	it->c.acquisitions += p->n;
	it->last.wait_ns = last > prev ? last - prev : 0;
	if (p->max_ns > it->max_wait)
		it->max_wait = p->max_ns;
}

bool model_row_key(const struct model *m, uint32_t id, enum lock_type *type,
		   uint64_t *site, uint64_t *object)
{
	const struct row *r = model_row(m, id);

	if (r == NULL)
		return false;
	*type = (enum lock_type)r->type;
	*site = r->site;
	*object = r->object;
	return true;
}
