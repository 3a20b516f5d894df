/* What the keys of the interactive screen do. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../common/clock.h"
#include "client.h"
#include "export.h"
#include "export_pprof.h"
#include "field.h"
#include "lockset.h"
#include "roles.h"
#include "options.h"
#include "outfile.h"
#include "ui.h"
#include "xalloc.h"

#define SCROLL_MAX 100000
/* Table lines on screen before the first drawing says. */
#define PAGE_GUESS 100

void ui_message(struct ui *ui, bool error, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ui->message, sizeof(ui->message), fmt, ap);
	va_end(ap);
	ui->message_error = error;
}

/* Theme problems go to the status line; the last one stays visible. */
static void theme_warning(void *ctx, const char *message)
{
	ui_message(ctx, true, "theme: %s", message);
}

static void load_theme(struct ui *ui, const char *name)
{
	char err[512];

	if (theme_load(&ui->theme, name, theme_warning, ui, err, sizeof(err)) < 0) {
		ui_message(ui, true, "%s", err);
		theme_defaults(&ui->theme);
	}
	if (ui->monochrome)
		theme_monochrome(&ui->theme);
	ui->theme_changed = true;
}

/* The screen the keys come back to: the table, or only the threads view. */
static enum ui_mode home_mode(const struct ui *ui)
{
	return ui->app->outside[0] ? UI_THREADS : UI_TABLE;
}

void ui_init(struct ui *ui, struct app *a, const char *theme_name)
{
	const char *no_color = getenv("NO_COLOR");

	memset(ui, 0, sizeof(*ui));
	ui->app = a;
	ui->site_style = SITE_FUNCTION;
	ui->monochrome = no_color && *no_color;
	ui->ntheme_names = theme_list(ui->theme_names, 32);
	if (a->tasks == NULL)
		a->tasks = tasks_new(a->attach.pid);
	ui->tasks = a->tasks;	/* the app's: names read at first sight */
	ui->mode = home_mode(ui);
	load_theme(ui, theme_name ? theme_name : "default");
}

void ui_free(struct ui *ui)
{
	free(ui->rows);
	ui->rows = NULL;
	view_cache_free(ui->cache);
	ui->cache = NULL;
	ui->tasks = NULL;
}

static struct row_key key_of(const struct view_row *r)
{
	struct row_key k = { r->type, r->site, r->object };

	return k;
}

const struct view_row *ui_line(const struct ui *ui, size_t i)
{
	if (i < ui->first || i - ui->first >= ui->nheld)
		return NULL;
	return &ui->rows[i - ui->first];
}

/*
 * Build the held lines: all of them when paused (the table is frozen and
 * may be scrolled and exported whole), otherwise a page each side of the
 * page from line at. With follow, the selected row is looked for wherever
 * it went, and held. Returns its line, or SIZE_MAX.
 */
/* What the site labels and wrapper answers depend on: the names known. */
static uint64_t names_key(const struct app *a)
{
	return (uint64_t)symbols_generation(a->symbols) << 32 |
	       (uint32_t)symbols_modules(a->symbols);
}

static size_t fetch(struct ui *ui, size_t at, bool follow)
{
	struct app *a = ui->app;
	size_t page = ui->page > 0 ? (size_t)ui->page : PAGE_GUESS;
	struct view_window w = { .follow = follow && ui->has_sel_key,
				 .type = ui->sel_key.type,
				 .site = ui->sel_key.site,
				 .object = ui->sel_key.object };

	if (!ui->paused) {
		w.offset = at > page ? at - page : 0;
		w.limit = 3 * page;
	}
	free(ui->rows);
	a->query.filter = ui->filter[0] ? ui->filter : NULL;
	if (ui->cache == NULL)
		ui->cache = view_cache_new();
	ui->nheld = model_view_cached(a->model, &a->query, names_key(a), ui->cache,
				      &w, &ui->rows);
	ui->first = w.offset;
	ui->nrows = w.total;
	if (ui->selected >= ui->nrows)
		ui->selected = ui->nrows ? ui->nrows - 1 : 0;
	return w.found;
}

void ui_hold(struct ui *ui, size_t from, size_t n)
{
	if (from >= ui->nrows)
		return;
	if (n > ui->nrows - from)
		n = ui->nrows - from;
	if (from < ui->first || from + n > ui->first + ui->nheld)
		fetch(ui, from, false);
}

static void remember_selection(struct ui *ui)
{
	ui->has_sel_key = ui->nrows > 0;
	if (ui->has_sel_key) {
		ui_hold(ui, ui->selected, 1);
		ui->has_sel_key = ui_line(ui, ui->selected) != NULL;
	}
	if (ui->has_sel_key)
		ui->sel_key = key_of(ui_line(ui, ui->selected));
}

/*
 * Rebuild the rows now, paused or not: the query changed. The selection
 * stays on the row it was on, wherever the row moved.
 */
static void rebuild(struct ui *ui)
{
	size_t found = fetch(ui, ui->top, true);

	app_stats(ui->app, &ui->stats);
	if (found != SIZE_MAX)
		ui->selected = found;
}

/* Whether every line of the table is built. */
static bool holds_all(const struct ui *ui)
{
	return ui->first == 0 && ui->nheld == ui->nrows;
}

void ui_refresh(struct ui *ui)
{
	if (!ui->paused)
		rebuild(ui);
}

static void move_to(struct ui *ui, long index)
{
	if (index < 0 || ui->nrows == 0)
		index = 0;
	else if ((size_t)index >= ui->nrows)
		index = (long)ui->nrows - 1;
	ui->selected = (size_t)index;
	remember_selection(ui);
}

/* Scroll the table, or the detail and help screens. */
static void scroll_by(struct ui *ui, long rows)
{
	if (ui->mode == UI_TABLE) {
		move_to(ui, (long)ui->selected + rows);
		return;
	}
	/* The view clamps the end; this only keeps the sum in range. */
	rows += ui->scroll;
	ui->scroll = rows < 0 ? 0 : rows > SCROLL_MAX ? SCROLL_MAX : (int)rows;
}

static int page(const struct ui *ui)
{
	return ui->page > 1 ? ui->page - 1 : 1;
}

bool ui_sample_threads(struct ui *ui, bool now)
{
	struct app *a = ui->app;
	long ms = clock_now_ms();

	if (ui->mode != UI_THREADS ||
	    (!now && ms - ui->threads_ms < (long)(a->opt.delay_s * 1000)))
		return false;
	if (a->stuck == NULL)
		a->stuck = stuck_new(a->attach.pid, false);
	ui->threads_ms = ms;
	if (!stuck_sample(a->stuck, a->symbols))
		ui_message(ui, true, "threads: PID %d is gone", (int)a->attach.pid);
	else if (!a->outside[0])
		app_stuck_waits(a, a->stuck);
	return true;
}

/* Show the threads view (who waits for whom), or the table again. */
static void act_threads(struct ui *ui)
{
	if (ui->app->outside[0]) {
		ui->mode = UI_THREADS;
		ui_message(ui, false, "no lock table: the collector is not loaded");
		return;
	}
	ui->mode = ui->mode == UI_THREADS ? UI_TABLE : UI_THREADS;
	ui->scroll = 0;
	ui_sample_threads(ui, true);
}

static void act_up(struct ui *ui) { scroll_by(ui, -1); }
static void act_down(struct ui *ui) { scroll_by(ui, 1); }
static void act_page_up(struct ui *ui) { scroll_by(ui, -page(ui)); }
static void act_page_down(struct ui *ui) { scroll_by(ui, page(ui)); }
static void act_home(struct ui *ui) { scroll_by(ui, -(long)1e9); }
static void act_end(struct ui *ui) { scroll_by(ui, (long)1e9); }
static void act_quit(struct ui *ui) { ui->quit = true; }

static void act_help(struct ui *ui)
{
	ui->mode = ui->mode == UI_HELP ? home_mode(ui) : UI_HELP;
	ui->scroll = 0;
}

static void act_detail(struct ui *ui)
{
	if (ui->mode == UI_TABLE && ui->nrows > 0) {
		remember_selection(ui);
		ui->mode = UI_DETAIL;
		ui->scroll = 0;
	}
}

/* Esc: back to the table, or clear the filter when already there. */
static void act_back(struct ui *ui)
{
	if (ui->mode != home_mode(ui)) {
		ui->mode = home_mode(ui);
		return;
	}
	if (ui->filter[0]) {
		ui->filter[0] = '\0';
		rebuild(ui);
		ui_message(ui, false, "filter cleared");
	}
}

/* The index of the column showing field f, 0 when none does. */
static long column_index(const struct field *f)
{
	const struct column *c = column_of(f);

	return c ? c - column_at(0) : 0;
}

/*
 * Sort by the next sort key, step columns along (-1: to the left), in
 * that field's first order.
 */
static void move_sort(struct ui *ui, int step)
{
	long n = (long)column_count(), i = column_index(ui->app->query.sort);
	const struct field *f;

	do {
		i = (i + step + n) % n;
		f = column_at((size_t)i)->field;
	} while (f == NULL || f->key == NULL);
	ui->app->query.sort = f;
	ui->app->query.ascending = f->low_first;
	rebuild(ui);
}

static void act_sort_left(struct ui *ui) { move_sort(ui, -1); }
static void act_sort_right(struct ui *ui) { move_sort(ui, 1); }

static void act_invert(struct ui *ui)
{
	ui->app->query.ascending = !ui->app->query.ascending;
	rebuild(ui);
}

/*
 * Victims (the sort before) <-> culprits: the rows by the wait their
 * holds caused, holder rows first, with the holders' columns kept.
 */
static void act_culprits(struct ui *ui)
{
	struct model_query *q = &ui->app->query;
	bool was_on = ui->app->opt.holders;

	app_holders_on(ui->app);
	column_set_holders(true);
	q->culprits = !q->culprits;
	if (q->culprits) {
		ui->victims_sort = q->sort;
		ui->victims_ascending = q->ascending;
		q->sort = field_by_key("caused");
		q->ascending = false;
	} else if (ui->victims_sort) {
		q->sort = ui->victims_sort;
		q->ascending = ui->victims_ascending;
	}
	column_set_culprits(q->culprits);
	ui->has_sel_key = false;
	ui->selected = 0;
	rebuild(ui);
	ui_message(ui, false, !was_on ?
		   "holders on (from now): culprits, by the wait their holds caused (c: victims)" :
		   q->culprits ?
		   "culprits: by the wait their holds caused (c: victims)" :
		   "victims: by their own waits (c: culprits)");
}

static void act_coalesce(struct ui *ui)
{
	struct model_query *q = &ui->app->query;

	q->coalesce = (enum coalesce)((q->coalesce + 1) % COALESCE_COUNT);
	ui->has_sel_key = false;
	ui->selected = 0;
	rebuild(ui);
	ui_message(ui, false, "coalesce: %s", coalesce_name(q->coalesce));
}

/* One line per process, or the processes' rows of one code joined. */
static void act_processes(struct ui *ui)
{
	app_join_processes(ui->app, ui->app->query.code == NULL);
	ui->has_sel_key = false;
	ui->selected = 0;
	rebuild(ui);
	ui_message(ui, false, "processes: %s", ui->app->query.code ?
		   "joined (one line per code and lock)" : "one line each");
}

/* Show all lock types, then only the locks, then only the idle waits. */
static void act_types(struct ui *ui)
{
	struct model_query *q = &ui->app->query;
	char names[128];

	q->types = q->types == LOCKSET_LOCKS ? LOCKSET_IDLE :
		   q->types == LOCKSET_IDLE ? LOCKSET_ALL : LOCKSET_LOCKS;
	ui->has_sel_key = false;
	ui->selected = 0;
	rebuild(ui);
	lockset_name(q->types, names, sizeof(names));
	ui_message(ui, false, "types: %s", names);
}

/* Sort the idle waits after the locks, or among them. */
static void act_mix_idle(struct ui *ui)
{
	struct model_query *q = &ui->app->query;

	q->mix_idle = !q->mix_idle;
	rebuild(ui);
	ui_message(ui, false, "idle waits (condvar, futex-wake): %s",
		   q->mix_idle ? "sorted among the locks" : "after the locks");
}

/* Reset: a new baseline in qsptop; the target is never touched. */
static void act_reset(struct ui *ui)
{
	app_reset(ui->app);
	rebuild(ui);
	ui_message(ui, false, "reset: totals count from now");
}

/* Pausing builds the whole table once, to scroll and export it frozen. */
static void act_pause(struct ui *ui)
{
	ui->paused = !ui->paused;
	if (!ui->paused || !holds_all(ui))
		rebuild(ui);
}

static void act_site_style(struct ui *ui)
{
	ui->site_style = ui->site_style == SITE_FUNCTION ? SITE_LINE : SITE_FUNCTION;
}

static void act_theme(struct ui *ui)
{
	size_t next = 0;

	for (size_t i = 0; i < ui->ntheme_names; i++) {
		if (strcmp(ui->theme_names[i], ui->theme.name) == 0)
			next = (i + 1) % ui->ntheme_names;
	}
	if (ui->ntheme_names == 0)
		return;
	ui->message[0] = '\0';
	load_theme(ui, ui->theme_names[next]);
	if (ui->message[0] == '\0')
		ui_message(ui, false, "theme: %s%s", ui->theme.name,
			   ui->monochrome ? " (monochrome)" : "");
}

/* "qsptop-PID-YYYYmmdd-HHMMSS.ext" in the working directory. */
static char *export_path(struct ui *ui, const char *ext)
{
	static char name[128];
	time_t now = time(NULL);
	struct tm tm;

	if (ui->export_name)
		return ui->export_name(ui, ext);
	localtime_r(&now, &tm);
	snprintf(name, sizeof(name), "qsptop-%d-", (int)ui->app->attach.pid);
	strftime(name + strlen(name), sizeof(name) - strlen(name),
		 "%Y%m%d-%H%M%S.", &tm);
	snprintf(name + strlen(name), sizeof(name) - strlen(name), "%s", ext);
	return name;
}

#define EXPORT_SUFFIXES 99

/*
 * The generated name, or with "-N" before its extension when a regular
 * file of an earlier export in the same second is there. A link is left
 * to outfile_create(), which refuses it.
 */
static const char *free_export_path(struct ui *ui, const char *ext)
{
	static char path[160];
	const char *base = export_path(ui, ext);
	size_t stem = strlen(base) - strlen(ext) - 1;
	struct stat st;

	snprintf(path, sizeof(path), "%s", base);
	for (int n = 2; n <= EXPORT_SUFFIXES && lstat(path, &st) == 0 &&
	     S_ISREG(st.st_mode); n++)
		snprintf(path, sizeof(path), "%.*s-%d.%s", (int)stem, base, n, ext);
	return path;
}

/*
 * Write text (freed) to a new file named for ext. Only a new file: what
 * is already there, a link planted there too, stays as it is.
 */
static void write_export_data(struct ui *ui, const char *ext, void *data,
			      size_t len)
{
	const char *path = free_export_path(ui, ext);
	char err[512];

	if (outfile_create(path, data, len, err, sizeof(err)) < 0)
		ui_message(ui, true, "export failed: %s", err);
	else
		ui_message(ui, false, "wrote %s", path);
	free(data);
}

static void write_export(struct ui *ui, const char *ext, char *text)
{
	write_export_data(ui, ext, text, strlen(text));
}

/*
 * Write what is on screen: the shown rows, sorted, coalesced, filtered.
 * A table built only in part is built whole from the model again.
 */
static void act_export(struct ui *ui)
{
	struct app *a = ui->app;

	write_export(ui, "json", holds_all(ui) ?
		     export_rows_json(a, &a->query, ui->rows, ui->nrows,
				      &ui->stats) :
		     export_table_json(a, &a->query));
}

/* Write the stacks of the shown rows in folded form, for flame graphs. */
static void act_folded(struct ui *ui)
{
	struct app *a = ui->app;

	write_export(ui, "folded", holds_all(ui) ?
		     export_rows_folded(a, &a->query, ui->rows, ui->nrows) :
		     export_table_folded(a, &a->query));
}

/* Write the shown rows' waits as a pprof profile. */
static void act_pprof(struct ui *ui)
{
	struct app *a = ui->app;
	size_t len;
	uint8_t *data = export_table_pprof(a, &a->query, &len);

	write_export_data(ui, "pb.gz", data, len);
}

/* Flip the selected row's role, for this program from now on. */
static void act_role(struct ui *ui)
{
	const struct view_row *r = ui->mode == UI_HELP ? NULL :
				   ui_line(ui, ui->selected);
	char msg[256];

	if (r == NULL) {
		ui_message(ui, true, "role: no row selected");
		return;
	}
	if (roles_flip(ui->app, r, msg, sizeof(msg)))
		rebuild(ui);
	ui_message(ui, false, "%s", msg);
}

/* Attribute waits past the lock wrappers, or show the wrappers' rows. */
static void act_wrappers(struct ui *ui)
{
	struct model_query *q = &ui->app->query;
	size_t n = ui->app->wrappers ? wrappers_count(ui->app->wrappers) : 0;

	if (q->is_wrapper == NULL || n == 0) {
		ui_message(ui, false, "wrappers: none to skip");
		return;
	}
	q->skip_wrappers = !q->skip_wrappers;
	rebuild(ui);
	if (q->skip_wrappers)
		ui_message(ui, false, "wrappers: skipped (%zu pattern%s)", n,
			   n == 1 ? "" : "s");
	else
		ui_message(ui, false, "wrappers: shown");
}

static void open_prompt(struct ui *ui, enum ui_prompt p, const char *initial)
{
	ui->prompt = p;
	snprintf(ui->input, sizeof(ui->input), "%s", initial);
}

static void act_filter(struct ui *ui) { open_prompt(ui, PROMPT_FILTER, ui->filter); }

static void act_delay(struct ui *ui)
{
	char now[32];

	snprintf(now, sizeof(now), "%g", ui->app->opt.delay_s);
	open_prompt(ui, PROMPT_DELAY, now);
}

/* Apply a new refresh interval, here and in the collector. */
static void set_delay(struct ui *ui, const char *text)
{
	double d;

	if (!options_parse_delay(text, &d)) {
		ui_message(ui, true, "delay: expected seconds between %g and %g, got '%s'",
			   OPTIONS_DELAY_MIN_S, OPTIONS_DELAY_MAX_S, text);
		return;
	}
	ui->app->opt.delay_s = d;
	client_set_interval(&ui->app->client, (unsigned)(d * 1000 + 0.5));
	ui_message(ui, false, "refresh every %gs", d);
}

/* Finish the prompt: Enter applies, Esc abandons. */
static void close_prompt(struct ui *ui, bool apply)
{
	enum ui_prompt p = ui->prompt;

	ui->prompt = PROMPT_NONE;
	if (p == PROMPT_FILTER) {
		/* The filter applied as it was typed; Esc takes it away. */
		if (!apply)
			ui->filter[0] = '\0';
		rebuild(ui);
	} else if (p == PROMPT_DELAY && apply) {
		set_delay(ui, ui->input);
	}
}

/* Keys while a prompt is open edit its text. */
static void prompt_key(struct ui *ui, int key)
{
	size_t len = strlen(ui->input);

	if (key == K_ENTER || key == K_ESC) {
		close_prompt(ui, key == K_ENTER);
		return;
	} else if (key == K_BACKSPACE) {
		if (len > 0)
			ui->input[len - 1] = '\0';
	} else if (key >= ' ' && key < 0x7f && len + 1 < sizeof(ui->input)) {
		ui->input[len] = (char)key;
		ui->input[len + 1] = '\0';
	}
	if (ui->prompt == PROMPT_FILTER) {
		snprintf(ui->filter, sizeof(ui->filter), "%s", ui->input);
		ui->selected = 0;
		ui->has_sel_key = false;
		rebuild(ui);
	}
}

const struct key_binding key_bindings[] = {
	{ .keys = { 'q', K_F10 }, .label = "q F10", .hint = "q quit", .hint_rank = 10,
	  .help = "quit", .act = act_quit },
	{ .keys = { 'h', '?', K_F1 }, .label = "h ? F1", .hint = "h help", .hint_rank = 9,
	  .help = "this help (any of these keys again: back)",
	  .act = act_help },
	{ .keys = { K_UP, 'k' }, .label = "Up k",
	  .help = "select the row above / scroll up", .act = act_up },
	{ .keys = { K_DOWN, 'j' }, .label = "Down j",
	  .help = "select the row below / scroll down", .act = act_down },
	{ .keys = { K_PGUP }, .label = "PgUp",
	  .help = "one page up", .act = act_page_up },
	{ .keys = { K_PGDN }, .label = "PgDn",
	  .help = "one page down", .act = act_page_down },
	{ .keys = { K_HOME, 'g' }, .label = "Home g",
	  .help = "first row", .act = act_home },
	{ .keys = { K_END, 'G' }, .label = "End G",
	  .help = "last row", .act = act_end },
	{ .keys = { K_ENTER }, .label = "Enter", .hint = "Enter details", .hint_rank = 7,
	  .help = "details of the selected row", .act = act_detail },
	{ .keys = { K_ESC }, .label = "Esc",
	  .help = "back to the table; in the table, clear the filter",
	  .act = act_back },
	{ .keys = { '<', K_LEFT }, .label = "< Left", .hint = "</> sort", .hint_rank = 6,
	  .help = "sort by the column to the left", .act = act_sort_left },
	{ .keys = { '>', K_RIGHT, K_F6 }, .label = "> Right F6",
	  .help = "sort by the column to the right", .act = act_sort_right },
	{ .keys = { 'I' }, .label = "I", .hint = "I invert", .hint_rank = 2,
	  .help = "invert the sort order", .act = act_invert },
	{ .keys = { 'c' }, .label = "c", .hint = "c culprits", .hint_rank = 4,
	  .help = "victims <-> culprits: rows by the wait their holds caused, holders first",
	  .act = act_culprits },
	{ .keys = { 'm' }, .label = "m", .hint = "m coalesce", .hint_rank = 4,
	  .help = "coalesce: none -> site -> object", .act = act_coalesce },
	{ .keys = { 'p' }, .label = "p",
	  .help = "processes: one line each -> rows of one code and lock joined",
	  .act = act_processes },
	{ .keys = { 'H' }, .label = "H", .hint = "H threads", .hint_rank = 0,
	  .help = "threads view: each thread's state, the lock it waits for, "
		  "its holder, deadlocks, lock order (H: back)",
	  .act = act_threads },
	{ .keys = { 'T' }, .label = "T", .hint = "T types", .hint_rank = 6,
	  .help = "rows shown: all -> locks (the lock role) -> idle (the idle role) -> all",
	  .act = act_types },
	{ .keys = { 'i' }, .label = "i",
	  .help = "idle rows after the lock rows / among them",
	  .act = act_mix_idle },
	{ .keys = { 'R' }, .label = "R",
	  .help = "flip the selected row's role, lock <-> idle (kept for this program)",
	  .act = act_role },
	{ .keys = { 'r' }, .label = "r", .hint = "r reset", .hint_rank = 3,
	  .help = "reset: count from now (the target is not touched)",
	  .act = act_reset },
	{ .keys = { ' ' }, .label = "Space", .hint = "Space pause", .hint_rank = 3,
	  .help = "pause / resume the display (counting goes on)",
	  .act = act_pause },
	{ .keys = { 'd' }, .label = "d", .hint = "d delay", .hint_rank = 2,
	  .help = "set the refresh delay", .act = act_delay },
	{ .keys = { '/' }, .label = "/", .hint = "/ filter", .hint_rank = 8,
	  .help = "filter by call site, function, file, module or name; pid:N for one process",
	  .act = act_filter },
	{ .keys = { 's' }, .label = "s", .hint = "s site", .hint_rank = 2,
	  .help = "call site as function+offset or file:line",
	  .act = act_site_style },
	{ .keys = { 'e' }, .label = "e", .hint = "e export", .hint_rank = 5,
	  .help = "export what is shown as JSON (qsptop-PID-DATE.json)",
	  .act = act_export },
	{ .keys = { 'f' }, .label = "f", .hint = "f flame", .hint_rank = 1,
	  .help = "write the shown rows' stacks for flame graphs (qsptop-PID-DATE.folded)",
	  .act = act_folded },
	{ .keys = { 'P' }, .label = "P",
	  .help = "write the shown rows' waits as a pprof profile (qsptop-PID-DATE.pb.gz)",
	  .act = act_pprof },
	{ .keys = { 'w' }, .label = "w", .hint = "w wrappers", .hint_rank = 1,
	  .help = "skip lock wrappers (waits go to their callers) / show their rows",
	  .act = act_wrappers },
	{ .keys = { 't' }, .label = "t", .hint = "t theme", .hint_rank = 1,
	  .help = "next colour theme", .act = act_theme },
};
const size_t key_binding_count = sizeof(key_bindings) / sizeof(key_bindings[0]);

void ui_key(struct ui *ui, int key)
{
	if (key == K_RESIZE || key == KEY_NONE)
		return;
	ui->message[0] = '\0';
	if (ui->prompt != PROMPT_NONE) {
		prompt_key(ui, key);
		return;
	}
	for (size_t i = 0; i < key_binding_count; i++) {
		for (int j = 0; j < 3 && key_bindings[i].keys[j]; j++) {
			if (key_bindings[i].keys[j] == key) {
				key_bindings[i].act(ui);
				return;
			}
		}
	}
	ui_message(ui, false, "unknown key - h for help");
}
