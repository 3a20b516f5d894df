/*
 * Drawing the interactive screen into a screen buffer: header, table,
 * detail and help screens, status line. Only term.c shows the buffer.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explain.h"
#include "format.h"
#include "line.h"
#include "lockset.h"
#include "names.h"
#include "procs.h"
#include "site.h"
#include "stuck_text.h"
#include "totals.h"
#include "view.h"
#include "view_held.h"
#include "view_threads.h"
#include "xalloc.h"

#define HEADER_LINES 2
#define HOT_SHARE 0.25
#define WARM_SHARE 0.05
#define HIST_BAR 30
/* Lines of the off-screen page; it grows for longer pages. */
#define PAGE_LINES 128
/* The detail screen shows at most this many stacks and threads. */
#define STACKS_SHOWN 100
#define THREADS_SHOWN 100

static const char *sep(void)
{
	return format_utf8() ? " \u2502 " : " | ";
}

/*
 * Fill line y with slot and lay the items out on it, whole or not at
 * all; the screen's last cell is never shown (term.c), so not used.
 */
static void draw_items(struct screen *s, int y, enum theme_slot slot,
		       struct line_item *items, size_t n, const char *between)
{
	int width = y == s->h - 1 ? s->w - 1 : s->w;
	char text[2048];

	screen_fill(s, 0, y, s->w, slot, L' ');
	line_layout(items, n, width, between, text, sizeof(text));
	screen_puts(s, 0, y, slot, text, width);
}

/* Whether the threads view's last look found a deadlock. */
static bool deadlocked(const struct app *a)
{
	const struct stuck_deadlock *d;

	return a->stuck && stuck_deadlocks(a->stuck, &d) > 0;
}

/*
 * Header line 1: who, what state, how often, the command line (cut at
 * its end rather than left out); names still to come and PAUSED at the
 * right.
 */
static void draw_title(struct screen *s, const struct ui *ui)
{
	const struct app *a = ui->app;
	char version[32], pid[64], state[160], every[48], names[96], order[32];
	struct line_item items[] = {
		{ .text = version, .priority = 3 },
		{ .text = pid, .priority = 8 },
		{ .text = state, .priority = 9 },
		{ .text = every, .priority = 5 },
		{ .text = a->opt.holders ? "holders on" : NULL, .priority = 6 },
		{ .text = a->client.hello.command, .priority = 1, .shrink = true },
		{ .text = NULL, .priority = 7, .right = true }, /* names to come */
		{ .text = ui->paused ? "PAUSED" : NULL, .priority = 10, .right = true },
		{ .text = deadlocked(a) ? "DEADLOCK" : NULL, .priority = 11,
		  .right = true },
		{ .text = app_lock_order_text(a, order, sizeof(order)),
		  .priority = 10, .right = true },
	};
	struct line_item *paused = &items[7], *deadlock = &items[8];
	struct line_item *lock_order = &items[9];
	symbols_progress(a->symbols, format_utf8(), names, sizeof(names));
	items[6].text = names[0] ? names : NULL;
	app_state_text(a, state, sizeof(state));
	snprintf(version, sizeof(version), "qsptop %s", QSPTOP_VERSION);
	app_pid_text(a, pid, sizeof(pid));
	snprintf(every, sizeof(every), "every %gs", a->opt.delay_s);
	draw_items(s, 0, SLOT_HEADER, items, sizeof(items) / sizeof(items[0]), sep());
	if (paused->x >= 0)
		screen_paint(s, paused->x, 0, paused->width, SLOT_ERROR);
	if (deadlock->x >= 0)
		screen_paint(s, deadlock->x, 0, deadlock->width, SLOT_ALARM);
	if (lock_order->x >= 0)
		screen_paint(s, lock_order->x, 0, lock_order->width, SLOT_WARM);
}

/*
 * Header line 2: the waits of lock rows and of idle rows (threads
 * waiting for work) apart, acquisitions, the filter, threads,
 * sort, coalescing, losses; losses come first when there are some.
 */
static void draw_totals(struct screen *s, const struct ui *ui)
{
	struct line_item items[TOTALS_ITEMS];
	struct totals_text t;
	size_t n = totals_items(&t, items, &ui->stats, &ui->app->query,
				 ui->filter);

	draw_items(s, 1, SLOT_HEADER, items, n, sep());
}

static void draw_titles(struct screen *s, const struct ui *ui, int y,
			const struct column_place *p, size_t n)
{
	screen_fill(s, 0, y, s->w, SLOT_COLUMN, L' ');
	for (size_t i = 0; i < n; i++) {
		bool sorted = p[i].col->field == ui->app->query.sort;
		enum theme_slot slot = sorted ? SLOT_SORTED : SLOT_COLUMN;
		int len = (int)strlen(p[i].col->title);
		int x = p[i].col->left ? p[i].x : p[i].x + p[i].width - len;

		if (sorted)
			screen_fill(s, p[i].x, y, p[i].width, slot, L' ');
		screen_puts(s, x, y, slot, p[i].col->title, p[i].width);
	}
}

/* Hot, warm or cool by the row's share of the wait in the last interval. */
static enum theme_slot heat(const struct ui *ui, const struct view_row *r)
{
	double total = ui->stats.wait_per_s;
	double share = total > 0 ? r->wait_per_s / total : 0;

	if (share >= HOT_SHARE)
		return SLOT_HOT;
	return share >= WARM_SHARE ? SLOT_WARM : SLOT_COOL;
}

static void draw_row(struct screen *s, const struct ui *ui, int y,
		     const struct view_row *r, bool selected,
		     const struct column_place *p, size_t n)
{
	struct column_ctx f = { .symbols = ui->app->symbols,
				.model = ui->app->model,
				.wrappers = ui->app->wrappers,
				.site_style = ui->site_style };
	enum theme_slot slot = selected ? SLOT_SELECTION : heat(ui, r);
	char cell[512], fitted[520];

	screen_fill(s, 0, y, s->w, slot, L' ');
	for (size_t i = 0; i < n; i++) {
		const struct column *c = p[i].col;
		enum theme_slot cs = c->sparkline && !selected ? SLOT_SPARKLINE : slot;
		int len;

		f.width = p[i].width;
		c->cell(c, r, &f, cell, sizeof(cell));
		format_fit_left(fitted, sizeof(fitted), cell, p[i].width);
		len = screen_width(fitted);
		screen_puts(s, c->left ? p[i].x : p[i].x + p[i].width - len, y, cs,
			    fitted, p[i].width);
	}
}

/* Whether the query hides some lock types. */
static bool types_filtered(const struct model_query *q)
{
	return q->types != 0 && q->types != LOCKSET_ALL;
}

/* Keep the selected row on screen. */
static void scroll_into_view(struct ui *ui)
{
	if (ui->selected < ui->top)
		ui->top = ui->selected;
	if (ui->page > 0 && ui->selected >= ui->top + (size_t)ui->page)
		ui->top = ui->selected - (size_t)ui->page + 1;
	if (ui->top > 0 && ui->top + (size_t)ui->page > ui->nrows)
		ui->top = ui->nrows > (size_t)ui->page ? ui->nrows - (size_t)ui->page : 0;
}

/*
 * Text from (x, y) in lines of at most width columns, broken at spaces;
 * returns the lines it took.
 */
static int draw_wrapped(struct screen *s, int x, int y, int width,
			const char *text)
{
	int lines = 0;

	while (*text && width > 0) {
		int len = (int)strlen(text), cut = len;

		if (len > width) {
			for (cut = width; cut > 0 && text[cut] != ' '; cut--)
				;
			if (cut == 0)
				cut = width;
		}
		screen_puts(s, x, y + lines++, SLOT_NORMAL, text, cut);
		text += cut;
		while (*text == ' ')
			text++;
	}
	return lines;
}

/*
 * The empty table: no lock call yet, what qsptop looked at and what it
 * found that no hook times.
 */
static void draw_empty(struct screen *s, const struct ui *ui, int y)
{
	char text[1024];
	int width = s->w - 2;

	screen_puts(s, 1, y, SLOT_NORMAL, "no lock calls seen yet", -1);
	y += 2;
	explain_looked(text, sizeof(text), ui->app->attach.mode);
	y += draw_wrapped(s, 1, y, width, text);
	explain_unseen(text, sizeof(text), &ui->stats);
	y += draw_wrapped(s, 1, y, width, text);
	if (explain_idle(text, sizeof(text), &ui->stats))
		draw_wrapped(s, 1, y, width, text);
}

static void draw_table(struct screen *s, struct ui *ui)
{
	struct column_place p[COLUMNS_MAX];
	size_t n = column_layout(s->w, true, p);
	int y0 = HEADER_LINES + 1;

	ui->page = s->h - y0 - 1;
	scroll_into_view(ui);
	ui_hold(ui, ui->top, (size_t)ui->page);
	draw_titles(s, ui, HEADER_LINES, p, n);
	for (int i = 0; i < ui->page && ui->top + (size_t)i < ui->nrows; i++) {
		size_t r = ui->top + (size_t)i;
		const struct view_row *row = ui_line(ui, r);

		if (row != NULL)
			draw_row(s, ui, y0 + i, row, r == ui->selected, p, n);
	}
	if (ui->nrows == 0 && ui->filter[0])
		screen_puts(s, 1, y0, SLOT_NORMAL,
			    "no rows match the filter (Esc clears it)", -1);
	else if (ui->nrows == 0 && types_filtered(&ui->app->query))
		screen_puts(s, 1, y0, SLOT_NORMAL,
			    "no rows of these types (T: the next types)", -1);
	else if (ui->nrows == 0)
		draw_empty(s, ui, y0);
}

/* The upper bound of the bucket holding fraction p of the waits. */
static double percentile_ns(const struct lock_counts *c, double p)
{
	uint64_t total = 0, seen = 0;

	for (int i = 0; i < HIST_BUCKETS; i++)
		total += c->hist[i];
	for (int i = 0; i < HIST_BUCKETS && total; i++) {
		seen += c->hist[i];
		if ((double)seen >= p * (double)total)
			return (double)(2ull << i);
	}
	return 0;
}

/*
 * "function+off (file:line) [module]" in width columns, after the
 * inlined functions that make the call when there are some, or how many
 * sites a group has. When it does not fit whole, the module goes and the
 * rest is fitted (site_fit()); a function's name shortened there
 * is returned, whole, to be shown beside; NULL otherwise.
 */
static const char *detail_site(char *buf, size_t size, const struct ui *ui,
			       const struct view_row *r, int width)
{
	struct symbols *sym = ui->app->symbols;
	struct frame_info fi;
	char site[700], module[300];
	const char *name;

	if (r->n_sites > 1) {
		snprintf(buf, size, "%u call sites", r->n_sites);
		return NULL;
	}
	symbols_resolve(sym, r->site, 1, &fi);
	snprintf(module, sizeof(module), " [%s]", fi.module ? fi.module : "??");
	if (fi.n_inlined)
		site_chain(site, sizeof(site), sym, r->site);
	else
		site_fit(site, sizeof(site), sym, r->site, true, 0);
	snprintf(buf, size, "%s%s", site, module);
	if (screen_width(buf) <= width)
		return NULL;
	site_fit(buf, size, sym, r->site, true, width);
	name = fi.n_inlined ? fi.function : fi.symbol;
	return name && !strstr(buf, name) ? name : NULL;
}

/* A long name over as many lines as it takes, after its label. */
static int detail_long_name(struct screen *s, const char *label,
			    const char *name, int y)
{
	int room = s->w - 14;
	size_t len = strlen(name);

	screen_puts(s, 1, y, SLOT_NORMAL, label, -1);
	for (size_t at = 0; room > 0 && at < len; at += (size_t)room)
		screen_puts(s, 14, y++, SLOT_NORMAL, name + at, room);
	return y;
}

/*
 * The caller naming a site without a symbol, and the lock: its address
 * and name (names.h), or how many locks the line covers.
 */
static int detail_names(struct screen *s, const struct ui *ui,
			const struct view_row *r, int y)
{
	struct app *a = ui->app;
	struct frame_info fi;
	unsigned depth;
	char name[256];

	if (names_caller(a->symbols, a->model, r, &fi, &depth))
		screen_printf(s, 1, y++, SLOT_NORMAL, "called from  %s+0x%" PRIx64
			      " (%u frame%s out, on the heaviest stack)",
			      fi.symbol, fi.offset, depth, depth > 1 ? "s" : "");
	if (r->n_objects > 1) {
		screen_printf(s, 1, y++, SLOT_NORMAL, "objects      %u locks",
			      r->n_objects);
		return y;
	}
	switch (names_object(a->symbols, a->wrappers, a->model, r->object,
			     name, sizeof(name))) {
	case NAME_SYMBOL:
		screen_printf(s, 1, y++, SLOT_NORMAL, "object       0x%" PRIx64
			      " %s", procs_addr(r->object), name);
		break;
	case NAME_LOCKER:
		screen_printf(s, 1, y++, SLOT_NORMAL, "object       0x%" PRIx64
			      ", first seen locked by %s", procs_addr(r->object), name);
		break;
	default:
		screen_printf(s, 1, y++, SLOT_NORMAL, "object       0x%" PRIx64,
			      procs_addr(r->object));
	}
	return y;
}

/* Lines of the detail screen; returns the next free line. */
static int detail_numbers(struct screen *s, const struct ui *ui,
			  const struct view_row *r, int y)
{
	char site[1024], wait[32], rate[32], avg[32], max[32], p[3][32];
	const char *type = lock_type_name(r->type);
	const char *full = detail_site(site, sizeof(site), ui, r,
				       s->w - 1 - (int)strlen(type) - 4);

	format_duration(wait, sizeof(wait), (double)r->c.calls.wait_ns);
	format_duration(rate, sizeof(rate), r->wait_per_s);
	format_duration(avg, sizeof(avg), row_avg_wait(r));
	format_duration(max, sizeof(max), row_max_wait(r));
	format_duration(p[0], sizeof(p[0]), percentile_ns(&r->c, 0.5));
	format_duration(p[1], sizeof(p[1]), percentile_ns(&r->c, 0.9));
	format_duration(p[2], sizeof(p[2]), percentile_ns(&r->c, 0.99));
	screen_printf(s, 1, y++, SLOT_NORMAL, "%s at %s", type, site);
	if (full)
		y = detail_long_name(s, "function", full, y);
	y = detail_names(s, ui, r, y);
	screen_printf(s, 1, y++, SLOT_NORMAL, "role %s (from %s; R flips it)",
		      role_name(r->role), role_from_name(r->role_from));
	screen_printf(s, 1, y++, SLOT_NORMAL, "acquisitions %" PRIu64 "   contended %"
		      PRIu64 "   timeouts %" PRIu64 " (%.1f%% waited)   failed %"
		      PRIu64, r->c.calls.acquisitions, r->c.calls.contended, r->c.calls.timeouts,
		      100.0 * lock_counts_wait_share(&r->c), r->c.calls.failed);
	screen_printf(s, 1, y++, SLOT_NORMAL, "wait         %s total   %s/s now   "
		      "avg %s   max %s", wait, rate, avg, max);
	screen_printf(s, 1, y++, SLOT_NORMAL, "contended waits: p50 < %s   p90 < %s"
		      "   p99 < %s", p[0], p[1], p[2]);
	return y + 1;
}

/* The log2 histogram of contended waits, one bar per non-empty range. */
static int detail_histogram(struct screen *s, const struct lock_counts *c, int y)
{
	uint64_t most = 0;
	int lo = HIST_BUCKETS, hi = -1;

	for (int i = 0; i < HIST_BUCKETS; i++) {
		if (c->hist[i] == 0)
			continue;
		lo = i < lo ? i : lo;
		hi = i;
		most = c->hist[i] > most ? c->hist[i] : most;
	}
	screen_puts(s, 1, y++, SLOT_COLUMN, "wait histogram (contended acquisitions)", -1);
	if (hi < 0)
		screen_puts(s, 3, y++, SLOT_NORMAL, "no contended acquisition yet", -1);
	for (int i = lo; i <= hi; i++) {
		char from[32], to[32];
		int bar = (int)((c->hist[i] * HIST_BAR + most - 1) / most);

		format_duration(from, sizeof(from), i ? (double)(1ull << i) : 0);
		format_duration(to, sizeof(to), (double)(2ull << i));
		screen_printf(s, 3, y, SLOT_NORMAL, "%7s - %-7s %10" PRIu64 " ", from,
			      to, c->hist[i]);
		screen_fill(s, 33, y++, bar, SLOT_SPARKLINE,
			    format_utf8() ? L'\u2588' : L'#');
	}
	return y + 1;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/*
 * "0xADDR function+off (file:line) [module]", after the inlined functions
 * that make the call when there are some; "??" where unknown.
 */
static void detail_frame(char *buf, size_t size, struct symbols *sym,
			 uint64_t address)
{
	struct frame_info fi;
	char fn[512], line[300], chain[768];

	symbols_resolve(sym, address, 1, &fi);
	if (fi.n_inlined) {
		site_chain(chain, sizeof(chain), sym, address);
		snprintf(buf, size, "0x%" PRIx64 " %s [%s]", procs_addr(address), chain,
			 fi.module ? fi.module : "??");
		return;
	}
	if (fi.symbol)
		snprintf(fn, sizeof(fn), "%s+0x%" PRIx64, fi.symbol, fi.offset);
	else
		snprintf(fn, sizeof(fn), "??");
	if (fi.file && fi.line > 0)
		snprintf(line, sizeof(line), "%s:%d", base_name(fi.file), fi.line);
	else
		snprintf(line, sizeof(line), "??");
	if (fi.module && !fi.symbol)
		snprintf(buf, size, "0x%" PRIx64 " %s (%s) [%s+0x%" PRIx64 "]",
			 procs_addr(address), fn, line, fi.module, fi.module_offset);
	else
		snprintf(buf, size, "0x%" PRIx64 " %s (%s) [%s]", procs_addr(address), fn,
			 line, fi.module ? fi.module : "??");
}

/* Whether frames in wrappers are skipped, so worth telling apart. */
static bool in_skipped_wrapper(const struct model_query *q, uint64_t address)
{
	return q->skip_wrappers && q->is_wrapper && q->is_wrapper(q->ctx, address);
}

/* One stack: its share of the line's stacked wait, then its frames. */
static int detail_stack(struct screen *s, const struct ui *ui,
			const struct stack_view *sv, size_t number,
			uint64_t total, int y)
{
	const struct model_query *q = &ui->app->query;
	char wait[32], frame[1024];

	format_duration(wait, sizeof(wait), (double)sv->w.wait_ns);
	screen_printf(s, 1, y++, SLOT_NORMAL, "stack %zu: wait %s (%.1f%% of the "
		      "row's stacked wait), count %" PRIu64, number, wait,
		      total ? 100.0 * (double)sv->w.wait_ns / (double)total : 0,
		      sv->w.count);
	if (sv->frames == NULL)
		screen_puts(s, 3, y++, SLOT_COOL, "?? not unwound: waits recorded "
			    "without a stack (stacks are sampled)", -1);
	for (unsigned i = 0; sv->frames && i < sv->depth; i++) {
		detail_frame(frame, sizeof(frame), ui->app->symbols, sv->frames[i]);
		screen_printf(s, 3, y++, in_skipped_wrapper(q, sv->frames[i]) ?
			      SLOT_COOL : SLOT_NORMAL, "#%-2u %s", i, frame);
	}
	return y + 1;
}

/* The line's stacks, heaviest first. */
static int detail_stacks(struct screen *s, const struct ui *ui,
			 const struct view_row *r, int y)
{
	const struct app *a = ui->app;
	struct stack_view *sv;
	size_t n = model_row_stacks(a->model, &a->query, r, &sv);
	uint64_t total = 0;

	for (size_t i = 0; i < n; i++)
		total += sv[i].w.wait_ns;
	screen_printf(s, 1, y++, SLOT_COLUMN, "stacks of the contended waits%s",
		      a->query.skip_wrappers ? " (lock wrappers skipped: w shows them)" : "");
	if (n == 0)
		screen_puts(s, 3, y++, SLOT_NORMAL, "no stack recorded yet", -1);
	for (size_t i = 0; i < n && i < STACKS_SHOWN; i++)
		y = detail_stack(s, ui, &sv[i], i + 1, total, y);
	if (n > STACKS_SHOWN)
		screen_printf(s, 1, y++, SLOT_NORMAL, "... and %zu lighter stacks",
			      n - STACKS_SHOWN);
	free(sv);
	return y + (n == 0 || n > STACKS_SHOWN);
}

/*
 * A thread's TID for the thread view: as the target knows it and, when
 * it runs in a PID namespace of its own, as we do ("7 (31520)").
 */
static void thread_label(char *out, size_t size, struct ui *ui, uint32_t tid,
			 bool alive)
{
	uint32_t host;

	if (!tasks_own_pidns(ui->tasks)) {
		snprintf(out, size, "%u", tid);
		return;
	}
	host = tasks_host_tid(ui->tasks, tid, alive);
	if (host)
		snprintf(out, size, "%u (%u)", tid, host);
	else
		snprintf(out, size, "%u (?)", tid);
}

/* One process's share of a line's waits. */
struct proc_share {
	uint16_t proc;
	struct wait_counts w;
};

/*
 * A line of a lock several processes share: its waits split by process
 * (PID, wait, waits), from its threads'. Nothing for other lines.
 */
static int detail_processes(struct screen *s, struct ui *ui,
			    const struct view_row *r, int y)
{
	struct thread_view *tv;
	size_t n = r->procs_mixed ?
		   model_row_threads(ui->app->model, &ui->app->query, r, &tv) : 0;
	struct proc_share *p;
	size_t k = 0;
	char wait[32];

	if (!r->procs_mixed)
		return y;
	p = xreallocarray(NULL, n ? n : 1, sizeof(*p));

	for (size_t i = 0; i < n; i++) {
		size_t j = 0;

		while (j < k && p[j].proc != tv[i].proc)
			j++;
		if (j == k)
			p[k++] = (struct proc_share){ .proc = tv[i].proc };
		wait_counts_add(&p[j].w, &tv[i].w);
	}
	screen_puts(s, 1, y++, SLOT_COLUMN, "processes that waited", -1);
	screen_printf(s, 3, y++, SLOT_NORMAL, "%-8s %9s %10s", "PID", "WAIT",
		      "WAITS");
	for (size_t j = 0; j < k; j++) {
		format_duration(wait, sizeof(wait), (double)p[j].w.wait_ns);
		screen_printf(s, 3, y++, SLOT_NORMAL, "%-8d %9s %10" PRIu64,
			      (int)procs_pid(p[j].proc), wait,
			      lock_waits(p[j].w.count, p[j].w.timeouts));
	}
	free(p);
	free(tv);
	return y + 1;
}

/* The threads that waited behind the line: TID, name, wait, waits. */
static int detail_threads(struct screen *s, struct ui *ui,
			  const struct view_row *r, int y)
{
	struct app *a = ui->app;
	struct thread_view *tv;
	size_t n = model_row_threads(a->model, &a->query, r, &tv);
	bool alive = a->client.state == TARGET_RUNNING && !a->child_reaped;
	int width = tasks_own_pidns(ui->tasks) ? 19 : 8;
	char wait[32], tid[32];

	screen_puts(s, 1, y++, SLOT_COLUMN, "threads that waited", -1);
	if (n == 0)
		screen_puts(s, 3, y++, SLOT_NORMAL, "none yet", -1);
	else
		screen_printf(s, 3, y++, SLOT_NORMAL, "%-*s %-16s %9s %10s",
			      width, width > 8 ? "TID (HOST TID)" : "TID",
			      "NAME", "WAIT", "WAITS");
	for (size_t i = 0; i < n && i < THREADS_SHOWN; i++) {
		format_duration(wait, sizeof(wait), (double)tv[i].w.wait_ns);
		thread_label(tid, sizeof(tid), ui, tv[i].tid, alive);
		screen_printf(s, 3, y++, SLOT_NORMAL, "%-*s %-16s %9s %10" PRIu64,
			      width, tid, tasks_name(ui->tasks, tv[i].tid, alive),
			      wait, lock_waits(tv[i].w.count, tv[i].w.timeouts));
	}
	if (n > THREADS_SHOWN)
		screen_printf(s, 3, y++, SLOT_NORMAL, "... and %zu more threads",
			      n - THREADS_SHOWN);
	free(tv);
	return y;
}

/* Holder or waiter sites a detail section lists, at most. */
#define BLAME_SHOWN 8
/* Frames of a holder's stack shown under its site, at most. */
#define HOLDER_FRAMES_SHOWN 5

/* Holder stacks a holding line's details list, at most. */
#define HOLDER_STACKS_SHOWN 4

/* "fn <- caller <- ...": the first frames of h, innermost first. */
static void holder_frames(char *buf, size_t size, struct symbols *sym,
			  const struct holder_view *h)
{
	size_t len = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < h->depth && i < HOLDER_FRAMES_SHOWN &&
			     len < size; i++) {
		struct frame_info fi;
		const char *name;

		symbols_resolve(sym, h->frames[i], 1, &fi);
		name = fi.function ? fi.function : fi.symbol ? fi.symbol : "??";
		len += (size_t)snprintf(buf + len, size - len, "%s%s",
					i ? " <- " : "", name);
	}
}

/*
 * Under a "blocked by" holder site: the stack its holders released the
 * lock from most often while others waited, innermost first, when one
 * was captured.
 */
static int detail_holder_stack(struct screen *s, struct ui *ui,
			       const struct view_row *r,
			       const struct blame_view *b, int y)
{
	struct view_row v = { .site = b->site, .type = (enum lock_type)b->type,
			      .object = r->object };
	struct holder_view h;
	char frames[512];

	if (b->site == 0 || model_holder_stacks(ui->app->model, &v, &h, 1) == 0)
		return y;
	holder_frames(frames, sizeof(frames), ui->app->symbols, &h);
	screen_printf(s, 5, y++, SLOT_NORMAL, "released at %s", frames);
	return y;
}

/*
 * "released while others waited": a holding line's holder stacks, most
 * releases first, each with its share of the caused wait. Nothing when
 * none was captured.
 */
static int detail_holder_stacks(struct screen *s, struct ui *ui,
				const struct view_row *r, int y)
{
	struct holder_view h[HOLDER_STACKS_SHOWN];
	size_t n = model_holder_stacks(ui->app->model, r, h,
				       HOLDER_STACKS_SHOWN);
	char caused[32], frames[512];

	if (n == 0)
		return y;
	screen_puts(s, 1, y++, SLOT_COLUMN, "released while others waited", -1);
	screen_printf(s, 3, y++, SLOT_NORMAL, "%9s %8s  %s", "CAUSED",
		      "RELEASES", "STACK");
	for (size_t i = 0; i < n; i++) {
		format_duration(caused, sizeof(caused), (double)h[i].caused_ns);
		holder_frames(frames, sizeof(frames), ui->app->symbols, &h[i]);
		screen_printf(s, 3, y++, SLOT_NORMAL, "%9s %8" PRIu64 "  %s",
			      caused, h[i].releases, frames);
	}
	return y + 1;
}

/*
 * "blocked by": the holder sites the line's waits were spent behind, or
 * "blocking": the waiter sites its holds made wait; heaviest first, with
 * wait, waits and share. Nothing when there are none.
 */
static int detail_blame(struct screen *s, struct ui *ui,
			const struct view_row *r, bool blocking, int y)
{
	struct blame_view v[BLAME_SHOWN];
	size_t n = model_blame(ui->app->model, r, blocking, v, BLAME_SHOWN);
	uint64_t total = 0;
	char site[512], wait[32];

	if (n == 0)
		return y;
	for (size_t i = 0; i < n; i++)
		total += v[i].w.wait_ns;
	screen_puts(s, 1, y++, SLOT_COLUMN, blocking ? "blocking" : "blocked by", -1);
	screen_printf(s, 3, y++, SLOT_NORMAL, "%-40s %9s %8s %6s",
		      blocking ? "WAITER SITE" : "HOLDER SITE", "WAIT",
		      "WAITS", "SHARE");
	for (size_t i = 0; i < n; i++) {
		if (v[i].site)
			site_fit(site, sizeof(site), ui->app->symbols, v[i].site,
				 false, 40);
		else
			snprintf(site, sizeof(site), "%s",
				 v[i].type == LOCK_RWLOCK_READ ? "readers"
							       : "holder unknown");
		format_duration(wait, sizeof(wait), (double)v[i].w.wait_ns);
		screen_printf(s, 3, y++, SLOT_NORMAL, "%-40s %9s %8" PRIu64
			      " %5.1f%%", site, wait,
			      lock_waits(v[i].w.count, v[i].w.timeouts),
			      total ? 100.0 * (double)v[i].w.wait_ns /
					      (double)total : 0);
		if (!blocking)
			y = detail_holder_stack(s, ui, r, &v[i], y);
	}
	return y + 1;
}

/* The detail page of the selected row; returns its height. */
static int detail_page(struct screen *s, struct ui *ui)
{
	const struct view_row *r;
	char trend[256];
	int y;

	ui_hold(ui, ui->selected, 1);
	r = ui_line(ui, ui->selected);
	if (r == NULL)
		return 0;
	y = detail_numbers(s, ui, r, 0);
	y = detail_processes(s, ui, r, y);
	format_sparkline(trend, sizeof(trend), r->trend, TREND_LEN);
	screen_puts(s, 1, y, SLOT_NORMAL, "trend        ", -1);
	screen_puts(s, 14, y, SLOT_SPARKLINE, trend, -1);
	y = detail_histogram(s, &r->c, y + 2);
	if (ui->app->opt.holders) {
		y = detail_blame(s, ui, r, false, y);
		y = detail_blame(s, ui, r, true, y);
		y = detail_holder_stacks(s, ui, r, y);
		y = view_held_detail(s, ui, r, y);
	} else {
		screen_puts(s, 1, y, SLOT_NORMAL, "holders      off (c, or "
			    "--holders, tracks them: blocked by, blocking)", -1);
		y += 2;
	}
	y = detail_stacks(s, ui, r, y);
	return detail_threads(s, ui, r, y);
}

/* The help page: every key binding and column; returns its height. */
static int help_page(struct screen *s, struct ui *ui)
{
	int y = 0;

	(void)ui;
	for (size_t i = 0; i < key_binding_count; i++, y++) {
		screen_puts(s, 2, y, SLOT_SORTED, key_bindings[i].label, 12);
		screen_puts(s, 15, y, SLOT_NORMAL, key_bindings[i].help, -1);
	}
	screen_puts(s, 1, ++y, SLOT_COLUMN, "Columns", -1);
	for (size_t i = 0; i < column_count(); i++) {
		screen_puts(s, 2, ++y, SLOT_SORTED, column_at(i)->title, 12);
		screen_puts(s, 15, y, SLOT_NORMAL, column_at(i)->help, -1);
	}
	screen_puts(s, 1, y + 2, SLOT_NORMAL, "Rows are hot (>= 25% of the wait), "
		    "warm (>= 5%) or cool. Reset never touches the target.", -1);
	return y + 3;
}

/*
 * A scrollable page under the header: drawn whole off screen, then the
 * window the scroll position selects is copied below the page's title.
 */
static void draw_page(struct screen *s, struct ui *ui, const char *title,
		      int (*page)(struct screen *, struct ui *))
{
	struct screen *full = screen_new(s->w, PAGE_LINES);
	int top = HEADER_LINES + 1, room = s->h - top - 1;
	int height = page(full, ui);

	if (height > full->h) {
		screen_resize(full, s->w, height);
		height = page(full, ui);
	}
	if (height > full->h)
		height = full->h;
	ui->page = room;	/* what PgUp and PgDn move by */
	if (ui->scroll > height - room)
		ui->scroll = height > room ? height - room : 0;
	screen_fill(s, 0, HEADER_LINES, s->w, SLOT_COLUMN, L' ');
	screen_puts(s, 1, HEADER_LINES, SLOT_COLUMN, title, -1);
	for (int y = 0; y < room && ui->scroll + y < height; y++)
		memcpy(&s->cells[(size_t)(top + y) * (size_t)s->w],
		       &full->cells[(size_t)(ui->scroll + y) * (size_t)s->w],
		       (size_t)s->w * sizeof(struct cell));
	screen_free(full);
}

/* Key hints of the detail and help pages. */
static struct line_item page_hints[] = {
	{ .text = "Esc back", .priority = 10 },
	{ .text = "Up/Down scroll", .priority = 5 },
	{ .text = "q quit", .priority = 9 },
};

/* Key hints of the threads view. */
static struct line_item threads_hints[] = {
	{ .text = "q quit", .priority = 10 },
	{ .text = "H table", .priority = 8 },
	{ .text = "Up/Down scroll", .priority = 5 },
	{ .text = "h help", .priority = 9 },
};

/* The threads view's key hints: H goes back only where there is a table. */
static void draw_threads_hints(struct screen *s, const struct ui *ui, int y)
{
	threads_hints[1].text = ui->app->outside[0] ? NULL : "H table";
	draw_items(s, y, SLOT_STATUS, threads_hints, sizeof(threads_hints) /
		   sizeof(threads_hints[0]), "  ");
}

/* The table's key hints, from the key table, the most needed kept longest. */
static void draw_key_hints(struct screen *s, int y)
{
	struct line_item items[32];
	size_t n = 0;

	for (size_t i = 0; i < key_binding_count && n < 32; i++)
		if (key_bindings[i].hint)
			items[n++] = (struct line_item){
				.text = key_bindings[i].hint,
				.priority = key_bindings[i].hint_rank };
	draw_items(s, y, SLOT_STATUS, items, n, "  ");
}

/* The prompt being typed, a message, or the key hints. */
static void draw_status(struct screen *s, const struct ui *ui)
{
	int y = s->h - 1;

	screen_fill(s, 0, y, s->w, SLOT_STATUS, L' ');
	if (ui->prompt != PROMPT_NONE)
		screen_printf(s, 0, y, SLOT_STATUS, "%s%s_",
			      ui->prompt == PROMPT_FILTER ? "Filter: " : "Delay (s): ",
			      ui->input);
	else if (ui->message[0])
		screen_puts(s, 0, y, ui->message_error ? SLOT_ERROR : SLOT_STATUS,
			    ui->message, -1);
	else if (ui->mode == UI_TABLE)
		draw_key_hints(s, y);
	else if (ui->mode == UI_THREADS)
		draw_threads_hints(s, ui, y);
	else
		draw_items(s, y, SLOT_STATUS, page_hints, sizeof(page_hints) /
			   sizeof(page_hints[0]), "  ");
}

void view_draw(struct screen *s, struct ui *ui)
{
	screen_clear(s, SLOT_NORMAL);
	if (s->w < VIEW_MIN_W || s->h < VIEW_MIN_H) {
		screen_printf(s, 0, 0, SLOT_ERROR, "terminal too small (need %d%s%d)",
			      VIEW_MIN_W, format_utf8() ? "\u00d7" : "x", VIEW_MIN_H);
		return;
	}
	draw_title(s, ui);
	if (ui->mode == UI_THREADS)
		view_threads_summary(s, ui, 1);
	else
		draw_totals(s, ui);
	if (ui->mode == UI_THREADS)
		draw_page(s, ui, STUCK_TEXT_HEAD, view_threads_page);
	else if (ui->mode == UI_DETAIL)
		draw_page(s, ui, "DETAILS (Esc: back)", detail_page);
	else if (ui->mode == UI_HELP)
		draw_page(s, ui, "HELP (h or Esc: back)", help_page);
	else
		draw_table(s, ui);
	draw_status(s, ui);
}
