/*
 * The interactive screen without a terminal: keys go to ui_key(), the
 * screen is drawn by view_draw() into a buffer and read back as text.
 */
#include <cJSON.h>
#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "../../tui/format.h"
#include "../../tui/model_impl.h"
#include "../../tui/site.h"
#include "../../tui/screen.h"
#include "../../tui/ui.h"
#include "../../tui/view.h"
#include "../../tui/wrappers.h"
#include "app_fixture.h"
#include "check.h"

#define SEC 1000000000ull

static struct app app;
static struct ui ui;
static struct screen *scr;
static char export_path[256];

/* Rows: A (3 acquisitions/s heavy), B, and C on two objects of one site. */
static const struct proto_row rows[] = {
	{ 0, LOCK_MUTEX, 0x401000, 0x7000, 0 },
	{ 1, LOCK_MUTEX, 0x402000, 0x7100, 0 },
	{ 2, LOCK_RWLOCK_WRITE, 0x403000, 0x7200, 0 },
	{ 3, LOCK_RWLOCK_WRITE, 0x403000, 0x7300, 0 },
};

static void add(uint32_t row, uint64_t acq, uint64_t wait_ns)
{
	struct proto_delta d = { .row = row, .c.calls = { .acquisitions = acq,
				 .contended = acq / 10, .wait_ns = wait_ns },
				 .max_wait_ns = wait_ns / 4 };

	d.c.hist[10] = acq / 10;
	model_apply_delta(app.model, &d);
}

static void tick(uint64_t seq)
{
	struct proto_tick t = { .seq = seq, .monotonic_ns = seq * SEC,
				.threads_seen = 3, .threads_live = 2 };

	model_tick(app.model, &t);
	app.client.ticks++;
	app.client.last_tick_ns = t.monotonic_ns;
}

static char *export_name(struct ui *u, const char *ext)
{
	(void)u;
	(void)ext;
	return export_path;
}

static void setup(void)
{
	app_fixture(&app, "./server --port 80");
	app.query = (struct model_query){ .sort = field_by_key("wait"),
		.site_label = site_label, .ctx = app.symbols };
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		model_define_row(app.model, &rows[i]);
	model_set_origin(app.model, 0);
	add(0, 1000, 3 * SEC / 10);
	add(1, 5000, SEC / 100);
	add(2, 200, SEC / 10);
	add(3, 100, SEC / 20);
	tick(1);
	ui_init(&ui, &app, "default");
	ui.export_name = export_name;
	ui_refresh(&ui);
	scr = screen_new(120, 30);
}

static const char *line(int y)
{
	static char buf[8][1024];
	static int next;
	char *b = buf[next++ % 8];

	screen_line(scr, y, b, 1024);
	return b;
}

static void draw(int w, int h)
{
	if (scr->w != w || scr->h != h)
		screen_resize(scr, w, h);
	view_draw(scr, &ui);
}

/* The screen line holding text, or -1. */
static int find(const char *text)
{
	for (int y = 0; y < scr->h; y++) {
		if (strstr(line(y), text))
			return y;
	}
	return -1;
}

static void dump(void)
{
	for (int y = 0; y < scr->h; y++)
		fprintf(stderr, "|%s\n", line(y));
}

#define CHECK_SCREEN(cond, ...)                                            \
	do {                                                               \
		int ok_ = !!(cond);                                        \
		CHECK(ok_, __VA_ARGS__);                                   \
		if (!ok_)                                                  \
			dump();                                            \
	} while (0)

/* One check of a tally over the screen; the screen is shown if it fails. */
#define CHECK_SCREEN_TALLY(t, what)                                        \
	do {                                                               \
		CHECK_TALLY((t), (what));                                  \
		if ((t)->failed)                                           \
			dump();                                            \
	} while (0)

static void keys(const char *s)
{
	for (; *s; s++)
		ui_key(&ui, *s);
}

static void test_table(void)
{
	struct check_tally hints = { 0 };

	draw(140, 30);
	CHECK_SCREEN(strstr(line(0), "qsptop " QSPTOP_VERSION) && strstr(line(0), "pid 4242") &&
		     strstr(line(0), "./server --port 80") && strstr(line(0), "running (launched)"),
		     "header line 1");
	CHECK_SCREEN(strstr(line(1), "threads 3 seen, 2 live") && strstr(line(1), "sort wait") &&
		     strstr(line(1), "coalesce none"), "header line 2");
	CHECK_SCREEN(strstr(line(2), "TYPE") && strstr(line(2), "CALL SITE") &&
		     strstr(line(2), "WAIT/s") && strstr(line(2), "TREND"), "column titles");
	/* By wait per second: 0x401000 (300ms), 0x403000 #2 (100ms), #3, 0x402000. */
	CHECK_SCREEN(find("0x401000") == 3 && find("0x402000") == 6, "rows by wait/s");
	CHECK_SCREEN(strstr(line(3), "1000") && strstr(line(3), "300ms"), "row cells");
	CHECK_SCREEN(strstr(line(29), "q quit"), "key hints on the status line");
	draw(240, 30);
	for (size_t i = 0; i < key_binding_count; i++)
		TALLY(&hints, !key_bindings[i].hint ||
		      strstr(line(29), key_bindings[i].hint),
		      "no hint '%s'", key_bindings[i].hint);
	CHECK_SCREEN_TALLY(&hints, "the status line hints every key that has a hint");
	draw(140, 30);
}

static void test_sort_keys(void)
{
	ui_key(&ui, '<');	/* wait -> site, A to Z first */
	draw(140, 30);
	CHECK_SCREEN(strstr(line(1), "sort site \u25b2") && find("0x401000") == 3 &&
		     find("0x402000") == 4, "sort by site, A to Z, under an up arrow");
	ui_key(&ui, 'I');
	draw(140, 30);
	CHECK_SCREEN(strstr(line(1), "sort site \u25bc") && find("0x403000") == 3 &&
		     find("0x401000") == 6, "sort by site inverted, Z to A, under a down arrow");
	/* Each key's own first order: count high to low, whatever site had. */
	keys(">>>");		/* site -> wait -> total -> count */
	draw(140, 30);
	CHECK_SCREEN(strstr(line(1), "sort count") && find("0x402000") == 3, "sort by count");
	ui_key(&ui, 'I');
	draw(140, 30);
	CHECK_SCREEN(find("0x402000") == 6 && strstr(line(1), "\u25b2"), "inverted");
	keys("I<<");		/* back to wait, descending */
	draw(140, 30);
	CHECK_SCREEN(strstr(line(1), "sort wait \u25bc"), "back to wait");
}

static void test_coalesce(void)
{
	ui_key(&ui, 'm');
	draw(140, 30);
	CHECK_SCREEN(strstr(line(1), "coalesce site") && find("[2 objs]") > 0 &&
		     strstr(line(find("[2 objs]")), "300"), "site coalescing folds objects");
	ui_key(&ui, 'm');
	draw(140, 30);
	CHECK_SCREEN(strstr(line(1), "coalesce object"), "object coalescing");
	ui_key(&ui, 'm');
	draw(140, 30);
	CHECK_SCREEN(strstr(line(1), "coalesce none") && find("[2 objs]") < 0, "back to none");
}

static void test_filter(void)
{
	keys("/402");
	draw(140, 30);
	CHECK_SCREEN(strstr(line(29), "Filter: 402_") && find("0x402000") == 3 &&
		     find("0x401000") < 0, "filter applies while typing");
	ui_key(&ui, K_ENTER);
	draw(140, 30);
	CHECK_SCREEN(strstr(line(1), "filter: 402") && find("0x401000") < 0, "filter kept");
	ui_key(&ui, K_ESC);
	draw(140, 30);
	CHECK_SCREEN(find("0x401000") == 3 && strstr(line(29), "filter cleared"),
		     "Esc clears the filter");
	keys("/zzz");
	ui_key(&ui, K_ESC);
	draw(140, 30);
	CHECK_SCREEN(find("0x401000") == 3, "Esc at the prompt drops the filter");
}

/* The selection stays on its row when the order changes under it. */
static void test_selection_follows_row(void)
{
	ui_key(&ui, K_DOWN);	/* 0x403000 object 0x7200 */
	add(1, 1, 5 * SEC);	/* 0x402000 becomes the heaviest */
	tick(2);
	ui_refresh(&ui);
	draw(140, 30);
	CHECK(ui.rows[ui.selected].object == 0x7200,
	      "selected row followed: expected object 0x7200, got 0x%llx",
	      (unsigned long long)ui.rows[ui.selected].object);
	ui_key(&ui, K_HOME);
}

static void test_detail_and_help(void)
{
	struct check_tally keys = { 0 };
	struct check_tally cols = { 0 };

	ui_key(&ui, K_ENTER);
	draw(140, 30);
	CHECK_SCREEN(find("DETAILS") >= 0 && find("acquisitions") >= 0 &&
		     find("wait histogram") >= 0 && find("p50 <") >= 0, "detail screen");
	ui_key(&ui, K_ESC);
	ui_key(&ui, 'h');
	draw(120, 60);
	for (size_t i = 0; i < key_binding_count; i++)
		TALLY(&keys, find(key_bindings[i].help) >= 0, "'%s' missing",
		      key_bindings[i].help);
	CHECK_SCREEN_TALLY(&keys, "help lists every key");
	for (size_t i = 0; i < column_count(); i++)
		TALLY(&cols, find(column_at(i)->help) >= 0, "%s not explained",
		      column_at(i)->title);
	CHECK_SCREEN_TALLY(&cols, "help explains every column");
	draw(120, 20);
	ui_key(&ui, K_END);
	ui_key(&ui, K_END);
	draw(120, 20);
	CHECK_SCREEN(strstr(line(1), "sort wait") && strstr(line(2), "HELP") &&
		     find("Rows are hot") == 18, "End: header kept, the page's end in sight");
	ui_key(&ui, K_HOME);
	draw(120, 20);
	CHECK_SCREEN(find(key_bindings[0].help) == 3, "Home: the page's start");
	ui_key(&ui, 'h');
	draw(140, 30);
	CHECK_SCREEN(find("TYPE") == 2, "h again: back to the table");
}

static void test_pause_and_reset(void)
{
	struct check_tally zeroed = { 0 };

	ui_key(&ui, ' ');
	add(0, 777777, SEC);
	tick(3);
	ui_refresh(&ui);
	draw(140, 30);
	CHECK_SCREEN(strstr(line(0), "PAUSED") && find("778K") < 0, "paused: display frozen");
	ui_key(&ui, ' ');
	draw(140, 30);
	CHECK_SCREEN(!strstr(line(0), "PAUSED") && find("779K") > 0, "resumed: new data");
	ui_key(&ui, 'r');
	draw(140, 30);
	for (size_t i = 0; i < ui.nrows; i++)
		TALLY(&zeroed, ui.rows[i].c.calls.acquisitions == 0,
		      "row %zu: expected 0 acquisitions, got %" PRIu64, i,
		      ui.rows[i].c.calls.acquisitions);
	CHECK_TALLY(&zeroed, "after r, every row counts from zero");
	tick(5);
	CHECK(app_elapsed_s(&app) == 2.0, "elapsed counts from the reset: expected 2 s, got %g",
	      app_elapsed_s(&app));
	CHECK_SCREEN(strstr(line(29), "reset"), "reset says so");
}

static void test_export(void)
{
	cJSON *j;
	char *text;
	FILE *f;
	long n;

	snprintf(export_path, sizeof(export_path), "/tmp/qsptop-view-%d.json", (int)getpid());
	keys("m/403");
	ui_key(&ui, K_ENTER);
	ui_key(&ui, 'e');
	draw(140, 30);
	CHECK_SCREEN(strstr(line(29), "wrote /tmp/qsptop-view-"), "export says where");
	f = fopen(export_path, "r");
	CHECK(f != NULL, "export file exists");
	if (f == NULL)
		return;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	CHECK(fread(text, 1, (size_t)n, f) == (size_t)n, "read export");
	fclose(f);
	j = cJSON_Parse(text);
	CHECK(j != NULL, "export is JSON");
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(j, "rows")) == 1,
	      "export holds what is shown: one coalesced, filtered row");
	CHECK_STR(cJSON_GetObjectItem(j, "coalesce")->valuestring, "site");
	CHECK_STR(cJSON_GetObjectItem(j, "filter")->valuestring, "403");
	cJSON_Delete(j);
	free(text);
	unlink(export_path);
	ui_key(&ui, K_ESC);
	keys("mm");
}

/* The name e (ext "json") or f writes at time t: "qsptop-4242-...". */
static void name_at(char *out, size_t size, time_t t, const char *ext)
{
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(out, size, "qsptop-4242-%Y%m%d-%H%M%S.", &tm);
	snprintf(out + strlen(out), size - strlen(out), "%s", ext);
}

static const char *status_line(void)
{
	draw(140, 30);
	return line(29);
}

/* The file's text; "" when there is none. */
static char *file_text(const char *path)
{
	char *text = check_file_text(path);

	return text ? text : calloc(1, 1);
}

/* Links planted at the names of the next seconds: e and f do not follow them. */
static void check_planted_links(void)
{
	static const char *const exts[] = { "json", "folded" };
	char name[128];
	time_t now = time(NULL);
	char *text;

	for (int e = 0; e < 2; e++)
		for (time_t t = now; t < now + 3; t++) {
			name_at(name, sizeof(name), t, exts[e]);
			if (symlink(e ? "/nonexistent-qsptop-test" : "victim", name) < 0)
				CHECK(0, "symlink %s: %s", name, strerror(errno));
		}
	ui_key(&ui, 'e');
	CHECK_SCREEN(strstr(status_line(), "is a symbolic link: not followed, nothing written"),
		     "e onto a planted link: an error on the status line");
	ui_key(&ui, 'f');
	CHECK_SCREEN(strstr(status_line(), "export failed: qsptop-4242-") &&
		     strstr(status_line(), ".folded is a symbolic link: not followed"),
		     "f onto a planted dangling link: an error on the status line");
	text = file_text("victim");
	CHECK_STR(text, "precious\n");
	free(text);
	CHECK(access("/nonexistent-qsptop-test", F_OK) < 0,
	      "the dangling link's target is not created");
	for (int e = 0; e < 2; e++)
		for (time_t t = now; t < now + 3; t++) {
			name_at(name, sizeof(name), t, exts[e]);
			unlink(name);
		}
}

/*
 * Two exports in one second: the second finds the first, leaves it, and
 * takes the name with "-2", even when what is shown has changed since
 * (coalesced by site).
 */
static void check_twice_in_a_second(void)
{
	char name[128], *text;
	cJSON *j;
	time_t t;

	for (int tries = 0; tries < 3; tries++) {
		t = time(NULL);
		ui_key(&ui, 'e');
		ui_key(&ui, 'e');
		if (time(NULL) == t)
			break;
	}
	CHECK_SCREEN(strstr(status_line(), "wrote qsptop-4242-") &&
		     strstr(status_line(), "-2.json"),
		     "the second e of a second: written beside the first, -2");
	ui_key(&ui, 'm');
	ui_key(&ui, 'e');
	name_at(name, sizeof(name), t, "json");
	text = file_text(name);
	j = cJSON_Parse(text);
	CHECK(check_streq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "coalesce")), "none"),
	      "%s still holds the first export (coalesce none): %.200s", name, text);
	cJSON_Delete(j);
	free(text);
	ui_key(&ui, 'm');
	ui_key(&ui, 'm');
}

/* A write that fails (file size limit) says why and leaves no file. */
static void check_full_disk(void)
{
	struct rlimit rl, small;
	char name[128];
	time_t t = time(NULL);

	getrlimit(RLIMIT_FSIZE, &rl);
	small = (struct rlimit){ 100, rl.rlim_max };
	setrlimit(RLIMIT_FSIZE, &small);
	ui_key(&ui, 'e');
	setrlimit(RLIMIT_FSIZE, &rl);
	CHECK_SCREEN(strstr(status_line(), ".json: File too large"),
		     "e past the file size limit: says why");
	name_at(name, sizeof(name), t, "json");
	CHECK(t != time(NULL) || access(name, F_OK) < 0,
	      "%s: no partial export is left", name);
}

/* e and f write new files in the working directory, and only new ones. */
static void test_generated_names(void)
{
	char dir[] = "/tmp/qsptop-view-XXXXXX", cwd[PATH_MAX], cmd[64];
	FILE *f;

	if (mkdtemp(dir) == NULL || getcwd(cwd, sizeof(cwd)) == NULL ||
	    chdir(dir) < 0) {
		CHECK(0, "set-up: a scratch directory: %s", strerror(errno));
		return;
	}
	f = fopen("victim", "w");
	if (f) {
		fputs("precious\n", f);
		fclose(f);
	}
	ui.export_name = NULL;
	signal(SIGXFSZ, SIG_IGN);
	check_planted_links();
	check_full_disk();
	check_twice_in_a_second();
	ui.export_name = export_name;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (chdir(cwd) < 0 || system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

/* Narrow screens drop columns; tiny ones say they are too small. */
/* Stands for a lock wrapper: the code around 0x401000. */
static bool test_is_wrapper(void *ctx, uint64_t address)
{
	(void)ctx;
	return address >= 0x401000 && address < 0x402000;
}

/* The file the last export wrote, or NULL. */
static char *read_export(void)
{
	return check_file_text(export_path);
}

/*
 * Row 0 (mutex at 0x401000 on 0x7000) waits through two stacks and once
 * without one: stack 1 from 0x500000 (two threads), stack 2 from 0x600000.
 */
static void feed_stacks(void)
{
	static const struct proto_stack stacks[] = {
		{ 1, 3, { 0x401000, 0x500010, 0x700000 } },
		{ 2, 3, { 0x401000, 0x600010, 0x700000 } },
	};
	static const struct proto_stack_delta deltas[] = {
		{ .row = 0, .stack = 1, .tid = 101, .w = { .count = 2, .wait_ns = 60 * SEC / 100 } },
		{ .row = 0, .stack = 1, .tid = 102, .w = { .count = 1, .wait_ns = 15 * SEC / 100 } },
		{ .row = 0, .stack = 2, .tid = 101, .w = { .count = 3, .wait_ns = 20 * SEC / 100 } },
		{ .row = 0, .stack = PROTO_NO_STACK, .tid = 103,
		  .w = { .count = 1, .wait_ns = 5 * SEC / 100 } },
	};
	struct check_tally defined = { 0 };

	for (size_t i = 0; i < sizeof(stacks) / sizeof(stacks[0]); i++)
		TALLY(&defined, model_define_stack(app.model, &stacks[i]) == 0,
		      "stack %zu: expected defined, got -1", i);
	CHECK_TALLY(&defined, "every stack defined");
	add(0, 70, SEC);
	for (size_t i = 0; i < sizeof(deltas) / sizeof(deltas[0]); i++)
		model_apply_stack_delta(app.model, &deltas[i]);
	tick(6);
	ui_refresh(&ui);
}

/* Enter on row 0: its stacks, heaviest first, frames, the threads. */
static void check_stack_details(void)
{
	int s1, s2;

	ui_key(&ui, K_HOME);
	ui_key(&ui, K_ENTER);
	draw(120, 80);
	s1 = find("stack 1: wait 750ms (75.0% of the row's stacked wait), count 3");
	s2 = find("stack 2: wait 200ms (20.0% of the row's stacked wait), count 3");
	CHECK_SCREEN(find("mutex at 0x401000") == 3, "the details of row 0");
	CHECK_SCREEN(s1 > 0 && s2 > s1, "stacks heaviest first with wait, share, count");
	CHECK_SCREEN(s1 > 0 && strstr(line(s1 + 1), "#0  0x401000 ?\? (?\?) [?\?]") &&
		     strstr(line(s1 + 2), "#1  0x500010 ?\? (?\?) [?\?]") &&
		     strstr(line(s1 + 3), "#2  0x700000"), "frames innermost first, ?? unknown");
	CHECK_SCREEN(find("stack 3: wait 50.0ms (5.0% of") > s2 && find("not unwound") > s2,
		     "the waits without a stack come last");
	CHECK_SCREEN(find("threads that waited") > s2 && find("TID") > s2, "threads header");
	CHECK_SCREEN(find("101      ?") > 0 && strstr(line(find("101      ?")), "800ms") &&
		     strstr(line(find("101      ?")), " 5"), "thread 101: 800ms in 5 waits");
	CHECK_SCREEN(find("102      ?") > find("101      ?") &&
		     find("103      ?") > find("102      ?"), "threads heaviest first");
	CHECK_SCREEN(find("wait histogram") > 0 && find("acquisitions") > 0,
		     "numbers and histogram kept");
}

/* On a short screen the page scrolls under a header that stays. */
static void check_stack_scroll(void)
{
	draw(120, 12);
	ui_key(&ui, K_PGDN);
	ui_key(&ui, K_PGDN);
	draw(120, 12);
	CHECK_SCREEN(strstr(line(1), "sort wait") && strstr(line(2), "DETAILS") &&
		     find("acquisitions") < 0 && find("#") > 0,
		     "PgDn: frames in sight, header kept");
	ui_key(&ui, K_END);
	draw(120, 12);
	CHECK_SCREEN(find("103      ?") == 10, "End: the last thread on the last line");
	ui_key(&ui, K_HOME);
	draw(120, 12);
	CHECK_SCREEN(find("acquisitions") > 0, "Home: back to the top");
	ui_key(&ui, K_ESC);
}

/* f writes folded stacks, root first, the lock as the leaf. */
static void check_folded(void)
{
	char *text;

	snprintf(export_path, sizeof(export_path), "/tmp/qsptop-view-%d.folded",
		 (int)getpid());
	ui_key(&ui, 'f');
	draw(140, 30);
	CHECK_SCREEN(strstr(line(29), "wrote /tmp/qsptop-view-"), "f says where");
	text = read_export();
	CHECK(text && strstr(text, "0x700000;0x500010;0x401000;mutex@0x7000 750000000\n") &&
	      strstr(text, "0x700000;0x600010;0x401000;mutex@0x7000 200000000\n") &&
	      strstr(text, "0x401000;[not_unwound];mutex@0x7000 50000000\n"),
	      "folded lines: got \"%s\"", text ? text : "(no file)");
	free(text);
	unlink(export_path);
}

/* w splits the wrapper's row by caller, and again shows it whole. */
static void check_wrapper_toggle(void)
{
	app.query.is_wrapper = test_is_wrapper;
	app.wrappers = wrappers_new(app.symbols);
	wrappers_add(app.wrappers, "test_wrapper");
	ui_key(&ui, 'w');
	draw(140, 30);
	CHECK_SCREEN(strstr(line(29), "wrappers: skipped (1 pattern)") &&
		     find("0x500010") > 0 && find("0x600010") > 0,
		     "w: rows at the callers 0x500010 and 0x600010");
	ui_key(&ui, 'w');
	draw(140, 30);
	CHECK_SCREEN(strstr(line(29), "wrappers: shown") && find("0x500010") < 0,
		     "w again: the wrapper's row whole");
	app.query.is_wrapper = NULL;
	wrappers_free(app.wrappers);
	app.wrappers = NULL;
}

/*
 * blocked by: a holder of no site is "readers" when of type rwlock-read
 * (a writer behind readers none of whom was noted), else "holder
 * unknown"; heaviest first.
 */
static void check_unknown_holders(void)
{
	struct wait_counts w = { .count = 2, .wait_ns = SEC / 10 };
	int by, readers, unknown;

	blame_add(app.model, 0, 0, LOCK_RWLOCK_READ, &w);
	w.wait_ns = SEC / 20;
	blame_add(app.model, 0, 0, LOCK_MUTEX, &w);
	app.opt.holders = true;
	ui_key(&ui, K_HOME);
	ui_key(&ui, K_ENTER);
	draw(120, 80);
	by = find("blocked by");
	readers = find("readers");
	unknown = find("holder unknown");
	CHECK_SCREEN(by > 0 && readers > by && unknown > readers,
		     "blocked by: \"readers\" (100ms), then \"holder unknown\" "
		     "(50.0ms)");
	ui_key(&ui, K_ESC);
	app.opt.holders = false;
}

/* The detail screen shows what STACK and STACK_DELTA messages said. */
static void test_stacks(void)
{
	feed_stacks();
	check_stack_details();
	check_stack_scroll();
	check_folded();
	check_wrapper_toggle();
	check_unknown_holders();
}

static void test_sizes(void)
{
	struct check_tally fit = { 0 };

	draw(60, 15);
	for (int y = 0; y < 15; y++)
		TALLY(&fit, (int)strlen(line(y)) <= 60 * 3,
		      "line %d: %zu bytes", y, strlen(line(y)));
	CHECK_SCREEN_TALLY(&fit, "every line fits 60 columns");
	CHECK_SCREEN(strstr(line(2), "CALL SITE") && !strstr(line(2), "TREND"),
		     "60 columns: TREND dropped, CALL SITE kept");
	draw(80, 24);
	CHECK_SCREEN(strstr(line(2), " AVG") && strstr(line(2), " MAX") &&
		     !strstr(line(2), "OBJECT"), "80 columns: AVG and MAX before OBJECT");
	CHECK_SCREEN(strncmp(line(1), "lock wait ", 10) == 0 &&
		     strstr(line(1), "\u2502 idle wait ") && !strstr(line(1), "coalesce"),
		     "80 columns: lock and idle waits first, coalescing given way whole");
	draw(39, 8);
	CHECK_SCREEN(strstr(line(0), "terminal too small (need 40\u00d78)"), "too small");
	draw(40, 8);
	CHECK_SCREEN(strstr(line(2), "CALL SITE"), "40x8 shows the table");
	draw(140, 30);
}

struct fit_case {
	const char *in;
	int width;
	const char *want;
};

static void test_formatting(void)
{
	static const struct fit_case fits[] = {
		{ "main.c:42", 20, "main.c:42" },
		{ "/very/long/path/to/file.c:1234", 12, "\u2026file.c:1234" },
		{ "\u2581\u2582\u2583\u2584", 4, "\u2581\u2582\u2583\u2584" },
		{ "\u2581\u2582\u2583\u2584", 3, "\u2026\u2583\u2584" },
	};
	uint64_t trend[TREND_LEN] = { 0 };
	char buf[256];

	for (size_t i = 0; i < sizeof(fits) / sizeof(fits[0]); i++) {
		format_fit_left(buf, sizeof(buf), fits[i].in, fits[i].width);
		CHECK_STR(buf, fits[i].want);
	}
	trend[TREND_LEN - 1] = 100;
	trend[TREND_LEN - 2] = 1;
	format_sparkline(buf, sizeof(buf), trend, TREND_LEN);
	CHECK(strstr(buf, "\u2581\u2588") != NULL && buf[0] == ' ',
	      "sparkline: empty, lowest bar for any wait, full bar at the max: '%s'", buf);
	format_set_utf8(false);
	format_sparkline(buf, sizeof(buf), trend, TREND_LEN);
	CHECK(strlen(buf) == TREND_LEN && buf[TREND_LEN - 1] == '@', "ASCII sparkline: '%s'", buf);
	format_fit_left(buf, sizeof(buf), "abcdef", 4);
	CHECK_STR(buf, "~def");
	format_set_utf8(true);
	format_duration(buf, sizeof(buf), 950);
	CHECK_STR(buf, "950ns");
	format_duration(buf, sizeof(buf), 12345);
	CHECK_STR(buf, "12.3us");
	format_duration(buf, sizeof(buf), 2.5e9);
	CHECK_STR(buf, "2.50s");
	format_count(buf, sizeof(buf), 9999);
	CHECK_STR(buf, "9999");
	format_count(buf, sizeof(buf), 1234567);
	CHECK_STR(buf, "1.23M");
}

/* The formats of durations and counts as printf wrote them before. */
static void duration_by_printf(char *buf, size_t size, double ns)
{
	if (ns < 1000)
		snprintf(buf, size, "%.0fns", ns);
	else if (ns < 1e6)
		snprintf(buf, size, "%.*fus", ns < 1e4 ? 2 : ns < 1e5 ? 1 : 0, ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, size, "%.*fms", ns < 1e7 ? 2 : ns < 1e8 ? 1 : 0, ns / 1e6);
	else
		snprintf(buf, size, "%.2fs", ns / 1e9);
}

static void count_by_printf(char *buf, size_t size, double n)
{
	static const char units[] = " KMGTP";
	int u = 0;

	if (n < 10000) {
		snprintf(buf, size, "%.0f", n);
		return;
	}
	while (n >= 1000 && u < 5) {
		n /= 1000;
		u++;
	}
	snprintf(buf, size, "%.*f%c", n < 10 ? 2 : n < 100 ? 1 : 0, n, units[u]);
}

/*
 * Durations and counts are formatted without printf; over values of every
 * magnitude, at the edges of each format and at ties, the text is printf's.
 */
static void test_numbers_as_printf(void)
{
	struct check_tally dur = { 0 }, cnt = { 0 }, cut = { 0 };
	char got[64], want[64];
	uint64_t seed = 12345;

	for (int i = 0; i < 200000; i++) {
		double mag = (double)(i % 20) - 1, v;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		v = pow(10, mag) * (double)(seed >> 11) / (double)(1ull << 53) * 10;
		if (i % 7 == 0)	/* a tie or an edge: k/2 at a scale */
			v = (double)(seed >> 44) / 2 * pow(10, (double)(i % 13) - 3);
		format_duration(got, sizeof(got), v);
		duration_by_printf(want, sizeof(want), v);
		TALLY(&dur, !strcmp(got, want), "duration %.17g: '%s', printf '%s'",
		      v, got, want);
		format_count(got, sizeof(got), v);
		count_by_printf(want, sizeof(want), v);
		TALLY(&cnt, !strcmp(got, want), "count %.17g: '%s', printf '%s'", v,
		      got, want);
	}
	CHECK_TALLY(&dur, "durations are printed as printf prints them");
	CHECK_TALLY(&cnt, "counts are printed as printf prints them");
	format_duration(got, 4, 123456789);
	TALLY(&cut, !strcmp(got, "123"), "cut to 3 bytes: '%s'", got);
	CHECK_TALLY(&cut, "a short buffer gets the start of the text");
}

/* Addresses and copies, made without printf, read as printf made them. */
static void test_hex_and_copy_as_printf(void)
{
	static const uint64_t values[] = { 0, 1, 15, 16, 0xdeadbeef,
					   0x7f939eb114d8, UINT64_MAX };
	static const char *const texts[] = { "", "a", "pthread_mutex_lock",
					     "\u2190 caller" };
	char got[64], want[64];

	for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
		format_hex(got, sizeof(got), values[i]);
		snprintf(want, sizeof(want), "0x%" PRIx64, values[i]);
		CHECK_STR(got, want);
	}
	format_hex(got, 5, 0xdeadbeef);
	CHECK_STR(got, "0xde");
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		for (size_t size = 1; size < 24; size += 5) {
			format_copy(got, size, texts[i]);
			snprintf(want, size, "%s", texts[i]);
			CHECK_STR(got, want);
		}
	}
}

static void test_screen_buffer(void)
{
	struct screen *s = screen_new(10, 2);
	char buf[64];

	CHECK(screen_puts(s, 8, 0, SLOT_NORMAL, "abcdef", -1) == 2, "clipped at the edge");
	screen_puts(s, 0, 1, SLOT_NORMAL, "x\u4e2dy", -1);
	screen_line(s, 0, buf, sizeof(buf));
	CHECK_STR(buf, "        ab");
	screen_line(s, 1, buf, sizeof(buf));
	CHECK_STR(buf, "x?y");
	screen_puts(s, -2, 0, SLOT_NORMAL, "1234", -1);
	screen_line(s, 0, buf, sizeof(buf));
	CHECK_STR(buf, "34      ab");
	screen_free(s);
}

/* ---- A table bigger than the screen ---- */

#define BIG_ROWS 5000

/* Whether the lines on screen are the whole view's lines at their places. */
static bool shown_rows_match(void)
{
	struct view_row *full;
	size_t n = model_view(app.model, &app.query, &full), bad = 0;

	for (int i = 0; i < ui.page && ui.top + (size_t)i < n; i++) {
		const struct view_row *r = ui_line(&ui, ui.top + (size_t)i);

		bad += r == NULL || memcmp(r, &full[ui.top + (size_t)i], sizeof *r) != 0;
	}
	free(full);
	return n == ui.nrows && bad == 0;
}

/* The line of a row's object in the whole view, or -1. */
static long line_of_object(uint64_t object)
{
	struct view_row *full;
	size_t n = model_view(app.model, &app.query, &full);
	long at = -1;

	for (size_t i = 0; i < n && at < 0; i++)
		if (full[i].object == object)
			at = (long)i;
	free(full);
	return at;
}

/* BIG_ROWS more rows, waits 1..BIG_ROWS ns: all below the first four. */
static void feed_big_table(void)
{
	for (uint32_t i = 0; i < BIG_ROWS; i++) {
		struct proto_row r = { 10 + i, LOCK_MUTEX, 0x404000 + i % 7 * 16,
				       0x900000 + i * 8, 0 };

		model_define_row(app.model, &r);
		add(10 + i, 10, 1 + i);
	}
	tick(7);
	ui_refresh(&ui);
}

/* Only the lines around the screen are built; they are the view's. */
static void check_window_shown(void)
{
	draw(140, 30);
	CHECK_SCREEN(ui.nrows == BIG_ROWS + 4 && ui.nheld < ui.nrows &&
		     ui.nheld >= (size_t)ui.page && shown_rows_match(),
		     "big table: %zu of %zu lines built, those shown the view's",
		     ui.nheld, ui.nrows);
	ui_key(&ui, K_END);
	draw(140, 30);
	CHECK_SCREEN(ui.selected == ui.nrows - 1 && ui.first > 0 &&
		     ui.top + (size_t)ui.page == ui.nrows && shown_rows_match(),
		     "End: the last lines built and shown");
	keys("kkk");
	ui_key(&ui, K_PGUP);
	draw(140, 30);
	CHECK_SCREEN(shown_rows_match(), "PgUp near the end: the view's lines");
	ui_key(&ui, K_HOME);
	draw(140, 30);
	CHECK_SCREEN(ui.selected == 0 && ui.top == 0 && shown_rows_match(),
		     "Home: back to the top");
}

/* A row selected far down follows when it jumps to the top. */
static void check_selection_jumps(void)
{
	uint64_t object;

	for (int i = 0; i < 100; i++)
		ui_key(&ui, K_PGDN);
	draw(140, 30);
	object = ui_line(&ui, ui.selected)->object;
	add(10 + (uint32_t)((object - 0x900000) / 8), 1, 9 * SEC);
	tick(8);
	ui_refresh(&ui);
	draw(140, 30);
	CHECK_SCREEN(line_of_object(object) == 0 && ui.selected == 0 &&
		     ui_line(&ui, 0)->object == object && shown_rows_match(),
		     "the selection followed its row from far down to line %ld",
		     line_of_object(object));
	ui_key(&ui, K_ENTER);
	draw(140, 30);
	CHECK_SCREEN(find("DETAILS") == 2 && find("0x") > 0, "its details");
	ui_key(&ui, K_ESC);
}

/* Paused, the whole table is built: frozen, scrolled to its end. */
static void check_paused_whole(void)
{
	struct view_row *before;
	size_t n = model_view(app.model, &app.query, &before);

	ui_key(&ui, ' ');
	CHECK(ui.nheld == ui.nrows && ui.first == 0,
	      "paused: all %zu lines built, got %zu", ui.nrows, ui.nheld);
	add(12, 5, 50 * SEC);
	tick(9);
	ui_refresh(&ui);
	ui_key(&ui, K_END);
	draw(140, 30);
	CHECK_SCREEN(strstr(line(0), "PAUSED") && ui.nheld == n &&
		     memcmp(ui_line(&ui, n - 1), &before[n - 1], sizeof *before) == 0 &&
		     memcmp(ui_line(&ui, 5), &before[5], sizeof *before) == 0,
		     "paused: End shows the frozen table's end");
	free(before);
	ui_key(&ui, ' ');
	ui_key(&ui, K_HOME);
	draw(140, 30);
	CHECK_SCREEN(ui.nheld < ui.nrows && shown_rows_match(),
		     "resumed: the new data, built around the screen");
}

/* e and f write the whole table even when only a part is built. */
static void check_big_exports(void)
{
	char *text;
	cJSON *j;

	snprintf(export_path, sizeof(export_path), "/tmp/qsptop-view-%d.json",
		 (int)getpid());
	ui_key(&ui, 'e');
	text = read_export();
	j = text ? cJSON_Parse(text) : NULL;
	CHECK(j && cJSON_GetArraySize(cJSON_GetObjectItem(j, "rows")) ==
		   (int)ui.nrows, "e: all %zu rows written", ui.nrows);
	cJSON_Delete(j);
	free(text);
	unlink(export_path);
	snprintf(export_path, sizeof(export_path), "/tmp/qsptop-view-%d.folded",
		 (int)getpid());
	ui_key(&ui, 'f');
	text = read_export();
	CHECK(text && strstr(text, ";mutex@0x7000 "), "f: the stacks written");
	free(text);
	unlink(export_path);
}

static void test_big_table(void)
{
	feed_big_table();
	check_window_shown();
	check_selection_jumps();
	check_paused_whole();
	check_big_exports();
}

int main(void)
{
	if (setlocale(LC_ALL, "C.UTF-8") == NULL)
		setlocale(LC_ALL, "en_US.UTF-8");
	format_set_utf8(true);
	setup();
	test_table();
	test_sort_keys();
	test_coalesce();
	test_filter();
	test_selection_follows_row();
	test_detail_and_help();
	test_pause_and_reset();
	test_export();
	test_generated_names();
	test_stacks();
	test_sizes();
	test_formatting();
	test_numbers_as_printf();
	test_hex_and_copy_as_printf();
	test_screen_buffer();
	test_big_table();
	ui_free(&ui);
	tasks_free(app.tasks);
	screen_free(scr);
	model_free(app.model);
	symbols_free(app.symbols);
	return check_summary();
}
