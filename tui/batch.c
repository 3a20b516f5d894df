/* Printing the table as text, one block per interval. */
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "batch.h"
#include "format.h"

/* Without -w, COLUMNS or a terminal, lines are as wide as a wide terminal. */
#define BATCH_WIDTH 132

/* -w, else COLUMNS, else the terminal's width, else BATCH_WIDTH. */
static int batch_width(const struct app *a, FILE *out)
{
	const char *env = getenv("COLUMNS");
	struct winsize ws;
	char *end;
	long n;

	if (a->opt.width)
		return a->opt.width;
	n = env ? strtol(env, &end, 10) : 0;
	if (env && *env && *end == '\0' && n >= 40 && n <= 1000)
		return (int)n;
	if (isatty(fileno(out)) && ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 &&
	    ws.ws_col >= 40)
		return ws.ws_col;
	return BATCH_WIDTH;
}

/* A header line, cut to the width. */
static void print_line(FILE *out, int width, const char *line)
{
	fprintf(out, "%.*s\n", width, line);
}

/*
 * The header; with -N it says how many rows the table holds of how many,
 * while names are still to come it says so.
 */
static void print_header(FILE *out, const struct app *a, int width,
			 size_t shown, size_t total)
{
	struct model_stats st;
	char lock[32], cond[32], acq[32], losses[96], rows[64] = "", types[128];
	char note[80], names[96] = "", line[8192];

	model_stats(a->model, &st);
	format_losses(losses, sizeof(losses), &st);
	format_duration(lock, sizeof(lock), st.lock_wait_per_s);
	format_duration(cond, sizeof(cond), st.cond_wait_per_s);
	format_count(acq, sizeof(acq), st.acq_per_s);
	format_types(types, sizeof(types), &a->query, " - ");
	snprintf(line, sizeof(line), "qsptop %s - pid %d %s - %s (%s) - "
		 "interval %.2fs", QSPTOP_VERSION, (int)a->attach.pid,
		 a->client.hello.command, app_state_name(a), a->attach.mode,
		 st.interval_s);
	print_line(out, width, line);
	if (a->opt.rows)
		snprintf(rows, sizeof(rows), " - rows %zu of %zu", shown, total);
	symbols_progress(a->symbols, format_utf8(), note, sizeof(note));
	if (note[0])
		snprintf(names, sizeof(names), " - %s", note);
	snprintf(line, sizeof(line), "threads %u seen, %u live - lock wait %s/s"
		 " - cond wait %s/s - acq %s/s - %s - sort %s%s%s - coalesce %s%s%s",
		 st.threads_seen, st.threads_live, lock, cond, acq, losses,
		 a->query.ascending ? "-" : "", a->query.sort->key, types,
		 coalesce_name(a->query.coalesce), rows, names);
	print_line(out, width, line);
	fputc('\n', out);
}

/* One line of cells, separated by a space, each aligned in its width. */
static void print_cells(FILE *out, const struct column_place *p, size_t n,
			char cells[][520])
{
	for (size_t i = 0; i < n; i++)
		fprintf(out, p[i].col->left ? "%-*s%s" : "%*s%s", p[i].width,
			cells[i], i + 1 < n ? " " : "\n");
}

static void print_titles(FILE *out, const struct column_place *p, size_t n)
{
	char cells[16][520];

	for (size_t i = 0; i < n; i++)
		snprintf(cells[i], sizeof(cells[i]), "%s", p[i].col->title);
	print_cells(out, p, n, cells);
}

static void print_row(FILE *out, const struct view_row *r,
		      const struct format_ctx *f, const struct column_place *p,
		      size_t n)
{
	struct format_ctx fc = *f;
	char cell[512], cells[16][520];

	for (size_t i = 0; i < n; i++) {
		fc.width = p[i].width;
		p[i].col->cell(p[i].col, r, &fc, cell, sizeof(cell));
		format_fit_left(cells[i], sizeof(cells[i]), cell, p[i].width);
	}
	print_cells(out, p, n, cells);
}

/* Only the first rows asked for (-N) are built: the rest are only sorted. */
void batch_print(FILE *out, const struct app *a)
{
	struct format_ctx f = { .symbols = a->symbols, .site_style = SITE_BOTH };
	struct view_window w = { .limit = a->opt.rows };
	struct view_row *rows;
	size_t n = model_view_window(a->model, &a->query, &w, &rows);
	struct column_place place[16];
	int width = batch_width(a, out);
	size_t ncol = format_layout(width, false, place);

	print_header(out, a, width, n, w.total);
	print_titles(out, place, ncol);
	for (size_t i = 0; i < n; i++)
		print_row(out, &rows[i], &f, place, ncol);
	fputc('\n', out);
	fflush(out);
	free(rows);
}
