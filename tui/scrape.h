/*
 * What --listen serves, built in the main loop from the counts since the
 * start (ledger.h): /metrics (metrics.h) and /debug/pprof/mutex, the
 * pprof profile of the waits since the previous request of it.
 */
#ifndef QSPTOP_SCRAPE_H
#define QSPTOP_SCRAPE_H

#include <stddef.h>
#include <stdint.h>

struct app;
struct scrape;

struct scrape *scrape_new(size_t top);
void scrape_free(struct scrape *s);

/*
 * The answer to a GET of path (a serve_fn, ctx an struct scrape_ctx):
 * body, length and content type; the HTTP status.
 */
struct scrape_ctx {
	struct scrape *scrape;
	struct app *app;
};

/* Answer the requests of a->serve waiting, if any: call after each read. */
void scrape_serve(struct app *a);

int scrape_answer(void *ctx, const char *path, uint8_t **body, size_t *len,
		  const char **content_type);

#endif
