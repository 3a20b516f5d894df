/* Printing the table as text, one block per interval. */
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "batch.h"
#include "column.h"
#include "format.h"
#include "line.h"
#include "stuck_text.h"
#include "totals.h"
#include "xalloc.h"

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

/* A header line of items that give way whole when the width is short. */
static void print_items(FILE *out, int width, struct line_item *items,
			size_t n)
{
	char line[4096];

	line_layout(items, n, width, " - ", line, sizeof(line));
	fprintf(out, "%s\n", line);
}

/* Header line 1: who, which process, what state, how often. */
static void print_title(FILE *out, const struct app *a, int width,
			double interval_s)
{
	char version[32], pid[64], state[96], every[48], order[32];
	struct line_item items[] = {
		{ .text = version, .priority = 3 },
		{ .text = pid, .priority = 9 },
		{ .text = a->client.hello.command, .priority = 1, .shrink = true },
		{ .text = state, .priority = 10 },
		{ .text = every, .priority = 5 },
		{ .text = app_lock_order_text(a, order, sizeof(order)),
		  .priority = 11 },
	};

	snprintf(version, sizeof(version), "qsptop %s", QSPTOP_VERSION);
	app_pid_text(a, pid, sizeof(pid));
	app_state_text(a, state, sizeof(state));
	snprintf(every, sizeof(every), "interval %.2fs", interval_s);
	print_items(out, width, items, sizeof(items) / sizeof(items[0]));
}

/*
 * The header; with -N it says how many rows the table holds of how many,
 * while names are still to come it says so.
 */
static void print_header(FILE *out, const struct app *a, int width,
			 size_t shown, size_t total)
{
	struct line_item items[TOTALS_ITEMS + 2];
	char rows[64] = "", names[80];
	struct model_stats st;
	struct totals_text t;
	size_t n;

	app_stats(a, &st);
	print_title(out, a, width, st.interval_s);
	n = totals_items(&t, items, &st, &a->query, NULL);
	if (a->opt.rows)
		snprintf(rows, sizeof(rows), "rows %zu of %zu", shown, total);
	symbols_progress(a->symbols, format_utf8(), names, sizeof(names));
	items[n++] = (struct line_item){ .text = rows, .priority = 10 };
	items[n++] = (struct line_item){ .text = names, .priority = 9 };
	print_items(out, width, items, n);
	fputc('\n', out);
}

/* Text gathered for one write: batch output prints every row every time. */
struct outbuf {
	FILE *out;
	size_t at;
	char text[8192];
};

/* Add n bytes of text, or n spaces when text is NULL. */
static void outbuf_add(struct outbuf *b, const char *text, size_t n)
{
	while (n > 0) {
		size_t room = sizeof(b->text) - b->at, k = n < room ? n : room;

		if (text) {
			memcpy(b->text + b->at, text, k);
			text += k;
		} else {
			memset(b->text + b->at, ' ', k);
		}
		b->at += k;
		n -= k;
		if (b->at == sizeof(b->text)) {
			fwrite(b->text, 1, b->at, b->out);
			b->at = 0;
		}
	}
}

/* Add a cell of len bytes padded by pad spaces, to its right when left. */
static void outbuf_cell(struct outbuf *b, const char *text, size_t len,
			size_t pad, bool left)
{
	if (!left)
		outbuf_add(b, NULL, pad);
	outbuf_add(b, text, len);
	if (left)
		outbuf_add(b, NULL, pad);
}

/*
 * One line of cells, separated by a space, each aligned in its width as
 * printf's %-*s and %*s align it (by bytes), without printf's parsing and
 * written at once.
 */
static void print_cells(FILE *out, const struct column_place *p, size_t n,
			char cells[][520])
{
	struct outbuf b;	/* not zeroed: 8 KiB a line, for nothing */

	b.out = out;
	b.at = 0;

	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(cells[i]);
		size_t width = p[i].width > 0 ? (size_t)p[i].width : 0;
		size_t pad = width > len ? width - len : 0;
		char *at = b.text + b.at;

		if (b.at + pad + len + 1 > sizeof(b.text)) {
			outbuf_cell(&b, cells[i], len, pad, p[i].col->left);
		} else {
			/* The usual case, with room: in place. */
			memset(at + (p[i].col->left ? len : 0), ' ', pad);
			memcpy(at + (p[i].col->left ? 0 : pad), cells[i], len);
			b.at += pad + len;
		}
		b.text[b.at++] = i + 1 < n ? ' ' : '\n';	/* room: see above */
		if (b.at == sizeof(b.text)) {
			fwrite(b.text, 1, b.at, out);
			b.at = 0;
		}
	}
	fwrite(b.text, 1, b.at, out);
}

static void print_titles(FILE *out, const struct column_place *p, size_t n)
{
	char cells[COLUMNS_MAX][520];

	for (size_t i = 0; i < n; i++)
		format_copy(cells[i], sizeof(cells[i]), p[i].col->title);
	print_cells(out, p, n, cells);
}

static void print_row(FILE *out, const struct view_row *r,
		      const struct column_ctx *f, const struct column_place *p,
		      size_t n)
{
	struct column_ctx fc = *f;
	char cell[512], cells[COLUMNS_MAX][520];

	for (size_t i = 0; i < n; i++) {
		fc.width = p[i].width;
		p[i].col->cell(p[i].col, r, &fc, cell, sizeof(cell));
		format_fit_left(cells[i], sizeof(cells[i]), cell, p[i].width);
	}
	print_cells(out, p, n, cells);
}

/* Lines of a whole table built at a time: memory for these, not for all. */
#define BATCH_CHUNK 256

/* One table's column places and how its cells are formatted. */
struct batch_table {
	struct column_ctx f;
	struct column_place place[COLUMNS_MAX];
	size_t ncol;
};

static void print_rows(FILE *out, const struct batch_table *b,
		       const struct view_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		print_row(out, &rows[i], &b->f, b->place, b->ncol);
}

/* With -N, only the first rows asked for are built: the rest are only sorted. */
static void print_first(FILE *out, const struct app *a, int width,
			const struct batch_table *b)
{
	struct view_window w = { .limit = a->opt.rows };
	struct view_row *rows;
	size_t n = model_view_window(a->model, &a->query, &w, &rows);

	print_header(out, a, width, n, w.total);
	print_titles(out, b->place, b->ncol);
	print_rows(out, b, rows, n);
	free(rows);
}

/* Every row, built and printed a chunk at a time. */
static void print_all(FILE *out, const struct app *a, int width,
		      const struct batch_table *b)
{
	struct model_query q = a->query;
	struct model_table *t;
	size_t total, n;
	struct view_row *rows;

	q.numbers_only = true;	/* no histogram, no trend in these lines */
	t = model_table_new(a->model, &q);
	total = model_table_lines(t);
	rows = xreallocarray(NULL, BATCH_CHUNK, sizeof *rows);

	print_header(out, a, width, total, total);
	print_titles(out, b->place, b->ncol);
	for (size_t from = 0; from < total; from += n) {
		n = model_table_rows(t, from, BATCH_CHUNK, rows);
		print_rows(out, b, rows, n);
	}
	free(rows);
	model_table_free(t);
}

/* The lock-order warnings below the table, a line each; none: nothing. */
static void print_lock_orders(FILE *out, const struct app *a)
{
	const struct lock_order *o;
	size_t n = model_lock_orders(a->model, &o);
	char line[2048];

	if (n)
		fprintf(out, "\nLOCK ORDER: %zu pair%s taken in both orders\n", n,
			n == 1 ? "" : "s");
	for (size_t i = 0; i < n; i++) {
		lockorder_text(line, sizeof(line), a->symbols, &o[i]);
		fprintf(out, "  %s\n", line);
	}
}

/*
 * Under the table, the threads blocked on a lock for an interval (and
 * a second) or more, as the threads view shows them, with their holders.
 */
static void print_long_waits(FILE *out, const struct app *a)
{
	const struct model_wait *w;
	size_t n = model_waits(a->model, &w);
	const struct stuck_thread *t;
	struct stuck *st;
	char line[1024];
	bool any = false;

	for (size_t i = 0; i < n && !any; i++)
		any = app_stuck_lock_wait(a, &w[i]);
	if (!any || a->attach.pid <= 0 || a->outside[0])
		return;
	st = stuck_new(a->attach.pid, false);
	if (stuck_sample(st, a->symbols)) {
		app_stuck_waits(a, st);
		fprintf(out, "\nblocked on locks:\n%s\n", STUCK_TEXT_HEAD);
		for (size_t i = 0; i < n; i++) {
			if (!app_stuck_lock_wait(a, &w[i]) ||
			    (t = stuck_find(st, (pid_t)w[i].tid)) == NULL)
				continue;
			stuck_text_line(line, sizeof(line), st, a->symbols, t);
			fprintf(out, "%s\n", line);
		}
	}
	stuck_free(st);
}

void batch_print(FILE *out, const struct app *a)
{
	struct batch_table b = { .f = { .symbols = a->symbols,
					.model = a->model,
					.wrappers = a->wrappers,
					.site_style = SITE_BOTH,
					.sites = site_memo_new() } };
	int width = batch_width(a, out);

	b.ncol = column_layout(width, false, b.place);
	if (a->opt.rows)
		print_first(out, a, width, &b);
	else
		print_all(out, a, width, &b);
	site_memo_free(b.f.sites);
	print_lock_orders(out, a);
	print_long_waits(out, a);
	fputc('\n', out);
	fflush(out);
}
