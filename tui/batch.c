/* Printing the table as text, one block per interval. */
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "format.h"

#define SITE_WIDTH 60

static void print_header(FILE *out, const struct app *a)
{
	struct model_stats st;
	char wait[32], acq[32];

	model_stats(a->model, &st);
	format_duration(wait, sizeof(wait), st.wait_per_s);
	format_count(acq, sizeof(acq), st.acq_per_s);
	fprintf(out, "qsptop %s - pid %d %s - %s (%s) - interval %.2fs\n",
		QSPTOP_VERSION, (int)a->attach.pid, a->client.hello.command,
		app_state_name(a), a->attach.mode, st.interval_s);
	fprintf(out, "threads %u seen, %u live - wait %s/s - acq %s/s - "
		"dropped %llu - sort %s%s - coalesce %s\n\n",
		st.threads_seen, st.threads_live, wait, acq,
		(unsigned long long)st.dropped, a->query.ascending ? "-" : "",
		sort_key_name(a->query.sort), coalesce_name(a->query.coalesce));
}

static void print_titles(FILE *out)
{
	for (size_t i = 0; i < column_count; i++) {
		const struct column *c = &columns[i];

		fprintf(out, c->left ? "%-*s" : "%*s", c->width, c->title);
		fputc(i + 1 < column_count ? ' ' : '\n', out);
	}
}

static void print_row(FILE *out, const struct view_row *r,
		      const struct format_ctx *f)
{
	char cell[512], fitted[520];

	for (size_t i = 0; i < column_count; i++) {
		const struct column *c = &columns[i];

		c->cell(r, f, cell, sizeof(cell));
		if (c->width == 0) {
			format_fit_left(fitted, sizeof(fitted), cell, SITE_WIDTH);
			fprintf(out, "%s\n", fitted);
		} else {
			fprintf(out, c->left ? "%-*s " : "%*s ", c->width, cell);
		}
	}
}

void batch_print(FILE *out, const struct app *a)
{
	struct format_ctx f = { .symbols = a->symbols, .site_style = SITE_BOTH };
	struct view_row *rows;
	size_t n = model_view(a->model, &a->query, &rows);

	print_header(out, a);
	print_titles(out);
	for (size_t i = 0; i < n; i++)
		print_row(out, &rows[i], &f);
	fputc('\n', out);
	fflush(out);
	free(rows);
}
