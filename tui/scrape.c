/*
 * The endpoint's pages. The profile of /debug/pprof/mutex holds what
 * grew since the previous request: the scrape keeps, per (row, stack),
 * the waits as the last profile saw them, and per row its acquisitions
 * and the wait its holds caused.
 */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/clock.h"
#include "app.h"
#include "export_pprof.h"
#include "idmap.h"
#include "ledger.h"
#include "metrics.h"
#include "scrape.h"
#include "serve.h"
#include "xalloc.h"

/* A row's counts as the last profile saw them. */
struct row_seen {
	uint64_t acquisitions;
	uint64_t caused_wait_ns;
};

struct scrape {
	struct metrics *metrics;
	struct wait_counts *waits;	/* as the last profile saw them */
	size_t nwaits, waits_cap;
	struct idmap wait_ids;		/* (row_id, stack) -> index + 1 */
	struct row_seen *acq;		/* per row, likewise */
	size_t nacq, acq_cap;
	struct idmap acq_ids;		/* row_id -> index + 1 */
	int64_t last_ns;		/* CLOCK_REALTIME of the last profile */
};

struct scrape *scrape_new(size_t top)
{
	struct scrape *s = xcalloc(1, sizeof(*s));

	s->metrics = metrics_new(top);
	return s;
}

void scrape_free(struct scrape *s)
{
	if (!s)
		return;
	metrics_free(s->metrics);
	free(s->waits);
	free(s->acq);
	idmap_free(&s->wait_ids);
	idmap_free(&s->acq_ids);
	free(s);
}

/* What the last profile saw of key, added (zero) if new. */
static struct wait_counts *seen_waits(struct scrape *s, uint64_t key)
{
	uint32_t i = idmap_get(&s->wait_ids, key);

	if (i)
		return &s->waits[i - 1];
	s->waits = xgrow(s->waits, &s->waits_cap, s->nwaits + 1, 256,
			 sizeof(*s->waits));
	memset(&s->waits[s->nwaits], 0, sizeof(*s->waits));
	idmap_put(&s->wait_ids, key, (uint32_t)++s->nwaits);
	return &s->waits[s->nwaits - 1];
}

static struct row_seen *seen_acq(struct scrape *s, uint32_t row_id)
{
	uint32_t i = idmap_get(&s->acq_ids, row_id);

	if (i)
		return &s->acq[i - 1];
	s->acq = xgrow(s->acq, &s->acq_cap, s->nacq + 1, 256, sizeof(*s->acq));
	s->acq[s->nacq] = (struct row_seen){ 0 };
	idmap_put(&s->acq_ids, row_id, (uint32_t)++s->nacq);
	return &s->acq[s->nacq - 1];
}

/*
 * Line r's stacks (into out), acquisitions and caused wait (in *r) as
 * what grew since the last profile, which from now on saw them as they
 * are; how many stacks.
 */
static size_t since_last(struct scrape *s, struct view_row *r,
			 const struct line_drill *d, struct stack_view *out)
{
	struct row_seen *seen_row = seen_acq(s, r->row_id), now = {
		r->c.calls.acquisitions, r->c.calls.caused_wait_ns };

	r->c.calls.acquisitions = now.acquisitions - seen_row->acquisitions;
	r->c.calls.caused_wait_ns = lock_counts_sub_sat(now.caused_wait_ns,
						seen_row->caused_wait_ns);
	*seen_row = now;
	for (size_t j = 0; j < d->n_stacks; j++) {
		struct wait_counts *seen = seen_waits(s,
			(uint64_t)r->row_id << 32 | d->stacks[j].stack);

		out[j] = d->stacks[j];
		wait_counts_sub(&out[j].w, seen);
		*seen = d->stacks[j].w;
	}
	return d->n_stacks;
}

static int64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The profile of the waits since the last one (since the start, at first). */
static uint8_t *profile_since(struct scrape *s, struct app *a, size_t *len)
{
	struct pprof *p = pprof_new(a->symbols);
	struct ledger_view v;
	int64_t now = realtime_ns();
	int64_t span = s->last_ns ? now - s->last_ns :
		       (int64_t)(app_elapsed_s(a) * 1e9);

	ledger_view(a->ledger, a, &v);
	for (size_t i = 0; i < v.n; i++) {
		const struct line_drill *d = &v.line[i];
		struct stack_view *st = xreallocarray(NULL, d->n_stacks + 1,
						      sizeof(*st));
		size_t n = since_last(s, &v.rows[i], d, st);

		export_pprof_line(p, a, &v.rows[i], st, n);
		/* The model's holder stacks are since reset: the site alone. */
		export_pprof_caused(p, a, &v.rows[i], NULL, 0);
		free(st);
	}
	ledger_view_free(&v);
	s->last_ns = now;
	return pprof_finish(p, now, span, len);
}

static char *metrics_page(struct scrape *s, struct app *a)
{
	struct ledger_view v;
	char *text;

	ledger_view(a->ledger, a, &v);
	text = metrics_text(s->metrics, a, &v);
	ledger_view_free(&v);
	return text;
}

int scrape_answer(void *ctx, const char *path, uint8_t **body, size_t *len,
		  const char **content_type)
{
	struct scrape_ctx *c = ctx;
	char *text;

	if (strcmp(path, "/debug/pprof/mutex") == 0) {
		*body = profile_since(c->scrape, c->app, len);
		*content_type = "application/octet-stream";
		return MHD_HTTP_OK;
	}
	if (strcmp(path, "/metrics") == 0) {
		text = metrics_page(c->scrape, c->app);
		*content_type = "text/plain; version=0.0.4; charset=utf-8";
	} else {
		text = xstrdup(strcmp(path, "/") == 0 ?
			       "qsptop: /metrics /debug/pprof/mutex\n" :
			       "not found: try /metrics or /debug/pprof/mutex\n");
		*content_type = "text/plain; charset=utf-8";
	}
	*body = (uint8_t *)text;
	*len = strlen(text);
	return strcmp(path, "/") == 0 || strcmp(path, "/metrics") == 0 ?
	       MHD_HTTP_OK : MHD_HTTP_NOT_FOUND;
}

void scrape_serve(struct app *a)
{
	struct scrape_ctx ctx = { a->scrape, a };

	if (a->serve)
		serve_answer(a->serve, scrape_answer, &ctx);
}
