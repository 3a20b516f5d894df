/*
 * End-to-end tests of the interactive screen's table and keys: the real
 * qsptop runs `wl_locks tui` in one tmux session, "t", and each test
 * sends its keys there and reads what the user would see (tmux.h). The
 * tests run in order on that one session: each leaves the table as it
 * found it, the exports count on the stamps of the ones before, and the
 * last resets the counts and quits.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tmux.h"

/* The rows of `wl_locks tui`, sorted by count, low to high and by site. */
#define ROWS_BY_COUNT_UP "delta:400 gamma:700 gamma:700 gamma:700 beta:3000 alpha:5000"
#define ROWS_BY_SITE "alpha:5000 beta:3000 gamma:2100 delta:400"
#define TITLE_START "qsptop " QSPTOP_VERSION " \u2502 pid "

/* Keep the first cols columns of s (UTF-8). */
static void clip_columns(char *s, int cols)
{
	int n = 0;

	for (char *p = s; *p; p++) {
		if (((unsigned char)*p & 0xc0) != 0x80 && n++ == cols) {
			*p = '\0';
			return;
		}
	}
}

/*
 * The title line as it should read at WIDTH columns with this delay: the
 * command line, last, is cut with an ellipsis when too long; *fits says
 * whether it fits whole.
 */
static void expected_title(char *out, size_t size, const char *delay, bool *fits)
{
	snprintf(out, size, TITLE_START "%d \u2502 running (launched) \u2502 every %ss "
		 "\u2502 %s tui %s/expect", workload_pid, delay, workload, tmp);
	*fits = columns_of(out) <= WIDTH;
	if (!*fits) {
		clip_columns(out, WIDTH - 1);
		strncat(out, "\u2026", size - strlen(out) - 1);
	}
}

static bool title_is(const void *want)
{
	char line[4096];

	screen_line(0, line, sizeof(line));
	return strcmp(line, want) == 0;
}

/* Wait for the title with this delay; false if it does not fit whole. */
static bool expect_title(const char *context, const char *delay)
{
	char want[16384], line[4096];
	bool fits, ok;

	expected_title(want, sizeof(want), delay, &fits);
	ok = wait_until(title_is, want, TIMEOUT_MS);
	screen_line(0, line, sizeof(line));
	CHECK_SCREEN(ok, "%s: title expected \"%.1000s\", got \"%.1000s\"", context, want, line);
	return fits;
}

/* --- the tests, in order: each leaves the table as it found it --- */

/* 1: the rows, sorted by count, and the header that says so. */
static void test_table_sorted_by_count(void)
{
	char line[4096];
	int end;

	SEE("start", "site_alpha");
	expect_rows("start, sorted by count", ROWS_BY_COUNT);
	CHECK_SCREEN(screen_lines() == HEIGHT, "the pane has %d lines, got %d",
		     HEIGHT, screen_lines());
	screen_line(0, line, sizeof(line));
	sscanf(line, TITLE_START "%d", &workload_pid);
	CHECK_SCREEN(workload_alive(workload_pid), "the title's pid %d is wl_locks",
		     workload_pid);
	if (!expect_title("start", "0.2"))
		fprintf(stderr, "note: the title is wider than %d columns here, its end "
			"is cut\n", WIDTH);
	CHECK_SCREEN(totals_have("sort count \u25bc") && totals_have("coalesce none") &&
		     totals_have("idle last") && !totals_have("filter"),
		     "header: expected \"sort count ▼\", \"coalesce none\", \"idle last\", "
		     "no filter");
	screen_line(title_line(&end), line, sizeof(line));
	CHECK_SCREEN(strstr(line, "OBJECT") && strstr(line, "WAIT/s") &&
		     strstr(line, "CONT%") && strstr(line, "AVG") &&
		     strstr(line, "MAX") && strstr(line, "TREND"),
		     "at %dx%d every column title shows, got \"%s\"", WIDTH, HEIGHT, line);
	CHECK_SCREEN(status_starts("q quit  h help"), "status: expected the key hints");
}

/* 2: I inverts the order, and again restores it. */
static void test_invert(void)
{
	keys("I", NULL);
	TOTALS("I", "sort count \u25b2");
	expect_rows("I: ascending", ROWS_BY_COUNT_UP);
	keys("I", NULL);
	TOTALS("I again", "sort count \u25bc");
	expect_rows("I again: descending", ROWS_BY_COUNT);
}

/* 3: < and > walk the sort key along the columns. */
static void test_sort_columns(void)
{
	keys("<", NULL);
	TOTALS("<", "sort total \u25bc");
	keys(">", ">", NULL);
	TOTALS("> >", "sort contended \u25bc");
	keys("<", NULL);
	TOTALS("<", "sort count \u25bc");
	expect_rows("back on count", ROWS_BY_COUNT);
	/* The arrow keys do the same. */
	keys("Right", NULL);
	TOTALS("Right", "sort contended \u25bc");
	keys("Left", NULL);
	TOTALS("Left", "sort count \u25bc");
}

/* 4: m cycles coalescing: none, site, object, none. */
static void test_coalesce(void)
{
	char line[4096];
	int end, gamma;

	keys("m", NULL);
	TOTALS("m", "coalesce site");
	STATUS("m", "coalesce: site");
	expect_rows("coalesce site: gamma's three locks in one row", ROWS_BY_SITE);
	title_line(&end);
	gamma = line_with("[3 objs]", 0);
	screen_line(gamma, line, sizeof(line));
	CHECK_SCREEN(gamma > 0 && strstr(line, "site_gamma") && acq_cell(line, end) == 2100,
		     "coalesce site: expected a site_gamma row \"[3 objs]\" with ACQ 2100, "
		     "got \"%s\"", line);
	CHECK_SCREEN(strstr(screen, " 700 ") == NULL, "coalesce site: no row of 700");
	keys("m", NULL);
	TOTALS("m m", "coalesce object");
	STATUS("m m", "coalesce: object");
	/* One site per object here: the same rows as none. */
	expect_rows("coalesce object", ROWS_BY_COUNT);
	keys("m", NULL);
	TOTALS("m m m", "coalesce none");
	STATUS("m m m", "coalesce: none");
	expect_rows("coalesce none: the 700 rows are back", ROWS_BY_COUNT);
	CHECK_SCREEN(strstr(screen, "[3 objs]") == NULL, "coalesce none: no \"[3 objs]\"");
}

/* 4b: T shows the locks only, then the idle waits only (none here), then all. */
static void test_types(void)
{
	TOTALS("start", "idle last");
	keys("T", NULL);
	TOTALS("T", "types locks");
	STATUS("T", "types: locks");
	expect_rows("T: every row here is a lock", ROWS_BY_COUNT);
	keys("T", NULL);
	TOTALS("T T", "types idle");
	SEE("T T: no condvar or futex-wake row here", "no rows of these types");
	GONE("T T: the lock rows are filtered out", "site_alpha");
	keys("T", NULL);
	CHECK_SCREEN(wait_until(lacks_text, "types ", TIMEOUT_MS),
		     "T T T: expected no types in the header");
	expect_rows("T T T: all types again", ROWS_BY_COUNT);
}

/* 5: / filters as it is typed; Enter keeps it, Esc in the table clears it. */
static void test_filter(void)
{
	keys("/", NULL);
	STATUS("/", "Filter: _");
	type_text("beta");
	STATUS("/beta", "Filter: beta_");
	expect_rows("typing beta filters live", "beta:3000");
	keys("Enter", NULL);
	TOTALS("Enter", "filter: beta");
	STATUS("Enter: the prompt closes", "q quit");
	expect_rows("filter beta", "beta:3000");
	CHECK_SCREEN(!strstr(screen, "site_alpha") && !strstr(screen, "site_delta"),
		     "filter beta: expected no alpha and no delta row");
	keys("Escape", NULL);
	STATUS("Esc", "filter cleared");
	expect_rows("Esc: all rows back", ROWS_BY_COUNT);
	CHECK_SCREEN(!totals_have("filter"), "Esc: expected no filter in the header");

	/* A filter that matches nothing says so; Esc at the prompt abandons it. */
	keys("/", NULL);
	type_text("zzz");
	SEE("/zzz", "no rows match the filter");
	keys("Escape", NULL);
	expect_rows("Esc at the prompt: the filter is abandoned", ROWS_BY_COUNT);
	CHECK_SCREEN(!totals_have("filter"), "Esc at the prompt: no filter in the header");
	/* Backspace edits the filter. */
	keys("/", NULL);
	type_text("betx");
	STATUS("/betx", "Filter: betx_");
	keys("BSpace", NULL);
	type_text("a");
	STATUS("/betx BSpace a", "Filter: beta_");
	expect_rows("/bet(x)a", "beta:3000");
	keys("Escape", NULL);
	expect_rows("Esc", ROWS_BY_COUNT);
}

/* 6: s shows call sites as file:line, and again as function+offset. */
static void test_site_style(void)
{
	char want[64], line[4096];
	int alpha_line = marker_line("locks.c", "alpha"), row;

	CHECK(alpha_line > 0, "locks.c has a site:alpha marker");
	snprintf(want, sizeof(want), "locks.c:%d ", alpha_line);
	keys("s", NULL);
	SEE("s", want);
	row = line_with(want, 0);
	screen_line(row, line, sizeof(line));
	CHECK_SCREEN(strstr(line, " 5000 ") != NULL,
		     "s: expected %s on the row of 5000, got \"%s\"", want, line);
	keys("s", NULL);
	SEE("s again", "site_alpha+0x");
	GONE("s again", "locks.c:");
	expect_rows("s again", ROWS_BY_COUNT);
}

/* Open the details of the selected row, check its count, go back. */
static void check_details_of(const char *context, const char *site, long acq)
{
	char want[64];

	keys("Enter", NULL);
	SEE(context, "DETAILS (Esc: back)");
	snprintf(want, sizeof(want), "acquisitions %ld ", acq);
	CHECK_SCREEN(strstr(screen, want) && strstr(screen, site),
		     "%s: expected the details of %s with \"%s\"", context, site, want);
	keys("Escape", NULL);
	SEE(context, "CALL SITE");
}

/* 7: Enter shows the selected row's details; a page that fits stays put; Esc goes back. */
static void test_details(void)
{
	int first;

	send_bytes(XTERM_HOME);
	keys("Enter", NULL);
	SEE("Home Enter", "DETAILS (Esc: back)");
	CHECK_SCREEN(strstr(screen, "mutex at site_alpha+0x") &&
		     strstr(screen, "acquisitions 5000 ") &&
		     strstr(screen, "wait histogram"),
		     "details of the first row: expected \"mutex at site_alpha+0x…\", "
		     "\"acquisitions 5000\" and \"wait histogram\"");
	first = acquisitions_line();
	/* The page fits the screen: Down does not scroll it off. */
	keys("Down", "Down", "Down", NULL);
	CHECK_SCREEN(wait_until(acquisitions_at, &first, TIMEOUT_MS),
		     "Down x3 on a page that fits: expected \"acquisitions\" to stay "
		     "on line %d, it is on %d", first, acquisitions_line());
	check_header_kept("details, Down x3", "DETAILS (Esc: back)");
	keys("Up", "Up", "Up", NULL);
	CHECK_SCREEN(wait_until(acquisitions_at, &first, TIMEOUT_MS),
		     "Up x3: expected \"acquisitions\" back on line %d, it is on %d",
		     first, acquisitions_line());
	/* The details fit the screen: End keeps them in sight. */
	send_bytes(XTERM_END);
	SEE("details, End", "wait histogram");
	check_header_kept("details, End", "DETAILS (Esc: back)");
	send_bytes(XTERM_HOME);
	CHECK_SCREEN(wait_until(acquisitions_at, &first, TIMEOUT_MS),
		     "details, Home: expected \"acquisitions\" back on line %d, it is on %d",
		     first, acquisitions_line());
	keys("Escape", NULL);
	SEE("Esc", "CALL SITE");
	GONE("Esc", "DETAILS");
	expect_rows("Esc: the table is back", ROWS_BY_COUNT);

	/* The selection moves: End, Home, Down, PgDn, PgUp, j, k, G, g. */
	send_bytes(XTERM_END);
	check_details_of("End Enter", "rwlock-read at site_delta+0x", 400);
	send_bytes(XTERM_HOME);
	check_details_of("Home Enter", "mutex at site_alpha+0x", 5000);
	keys("Down", NULL);
	check_details_of("Down Enter", "mutex at site_beta+0x", 3000);
	keys("PageDown", NULL);
	check_details_of("PgDn Enter", "rwlock-read at site_delta+0x", 400);
	keys("PageUp", NULL);
	check_details_of("PgUp Enter", "mutex at site_alpha+0x", 5000);
	keys("j", NULL);
	check_details_of("j Enter", "mutex at site_beta+0x", 3000);
	keys("k", NULL);
	check_details_of("k Enter", "mutex at site_alpha+0x", 5000);
	keys("G", NULL);
	check_details_of("G Enter", "rwlock-read at site_delta+0x", 400);
	keys("g", NULL);
	check_details_of("g Enter", "mutex at site_alpha+0x", 5000);
}

/* A help line: a key label at column 2 and words of its help. */
static bool help_line(const char *label, const char *text)
{
	char line[4096];
	int n = screen_lines();

	for (int i = 3; i < n - 1; i++) {
		screen_line(i, line, sizeof(line));
		if (strncmp(line, "  ", 2) == 0 && strncmp(line + 2, label, strlen(label)) == 0 &&
		    strstr(line, text))
			return true;
	}
	return false;
}

/*
 * Whether help_line() finds the line on a screen captured again until it
 * does (10 s, a deadline for a hang): a capture may come in the middle
 * of a redraw.
 */
static bool help_line_shown(const char *label, const char *text)
{
	long end = monotonic_ms() + 10000;

	do {
		capture();
		if (help_line(label, text))
			return true;
		usleep(50000);
	} while (monotonic_ms() < end);
	return false;
}

/* 8: h, ? and F1 show the help; h or Esc go back. */
static void test_help(void)
{
	static const char *const lines[][2] = {
		{ "q F10", "quit" }, { "m ", "coalesce" }, { "r ", "reset" },
		{ "e ", "export" }, { "/ ", "filter" }, { "Space", "pause" },
		/* The whole cycle of test_types, back to all. */
		{ "T ", "all -> locks (the lock role) -> idle (the idle role) -> all" },
		{ "R ", "flip the selected row's role" },
	};

	keys("h", NULL);
	SEE("h", "HELP (h or Esc: back)");
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		CHECK_SCREEN(help_line_shown(lines[i][0], lines[i][1]),
			     "help: expected a line \"  %s … %s …\"", lines[i][0], lines[i][1]);
	AT("h", "  q F10", 3);
	CHECK_SCREEN(strstr(screen, "Rows are hot") == NULL,
		     "h at %d lines: expected the help's last line below the screen", HEIGHT);
	/* The help is longer than the screen: it scrolls under the header. */
	keys("Down", NULL);
	AT("help, Down", "  h ? F1", 3);
	check_header_kept("help, Down", "HELP (h or Esc: back)");
	keys("Up", NULL);
	AT("help, Up", "  q F10", 3);
	send_bytes(XTERM_END);
	SEE("help, End: the last line shows", "Rows are hot");
	check_header_kept("help, End", "HELP (h or Esc: back)");
	send_bytes(XTERM_HOME);
	AT("help, Home", "  q F10", 3);
	keys("Escape", NULL);
	GONE("Esc", "HELP");
	expect_rows("Esc: the table is back", ROWS_BY_COUNT);
	keys("?", NULL);
	SEE("?", "HELP (h or Esc: back)");
	keys("h", NULL);
	GONE("? then h", "HELP");
	keys("F1", NULL);
	SEE("F1", "HELP (h or Esc: back)");
	keys("Escape", NULL);
	GONE("F1 then Esc", "HELP");
	expect_rows("help closed", ROWS_BY_COUNT);
}

static bool title_ends_paused(const void *unused)
{
	char line[4096];
	size_t n;

	(void)unused;
	screen_line(0, line, sizeof(line));
	n = strlen(line);
	return n >= 7 && strcmp(line + n - 7, " PAUSED") == 0;
}

/* 9: Space pauses, at the right end of the title; Space resumes. */
static void test_pause(void)
{
	keys("Space", NULL);
	CHECK_SCREEN(wait_until(title_ends_paused, NULL, TIMEOUT_MS),
		     "Space: expected the title line to end with \" PAUSED\"");
	CHECK_SCREEN(screen_lines() == HEIGHT, "paused: the screen keeps %d lines", HEIGHT);
	keys("Space", NULL);
	GONE("Space again", "PAUSED");
	expect_rows("resumed", ROWS_BY_COUNT);
}

/*
 * The status line names a theme other than *before: the last t's answer
 * stays there until the next t's arrives.
 */
static bool another_theme(const void *before)
{
	char line[4096];

	last_line(line, sizeof(line));
	return status_starts("theme: ") && strcmp(line, before) != 0;
}

/* t walks the themes and comes back to the default. */
static void test_themes_cycle(void)
{
	char line[4096], before[4096] = "";
	bool back = false;

	for (int i = 0; i < 10 && !back; i++) {
		keys("t", NULL);
		CHECK_SCREEN(wait_until(another_theme, before, TIMEOUT_MS),
			     "t: expected \"theme: NAME\" on the status line");
		last_line(line, sizeof(line));
		CHECK_SCREEN(strcmp(line, before) != 0, "t: expected another theme than "
			     "\"%s\"", before);
		snprintf(before, sizeof(before), "%s", line);
		expect_rows("t: the table stays", ROWS_BY_COUNT);
		back = strcmp(line, "theme: default") == 0;
	}
	CHECK_SCREEN(back, "t: expected to come back to \"theme: default\"");
}

static cJSON *exported(const char *context, char *name, size_t size);
static void press_export(const char *key);

/* Type a new delay into the d prompt (which starts with the current one). */
static void set_delay(const char *now, const char *text)
{
	keys("d", NULL);
	for (size_t i = 0; i < strlen(now); i++)
		keys("BSpace", NULL);
	type_text(text);
	keys("Enter", NULL);
}

/* d asks for the delay; a good one applies, a bad one is refused. */
static void test_delay_prompt(void)
{
	char name[PATH_MAX];
	cJSON *j;

	keys("d", NULL);
	STATUS("d", "Delay (s): 0.2_");
	keys("BSpace", "BSpace", "BSpace", NULL);
	STATUS("d, 3 x BSpace", "Delay (s): _");
	type_text("0.5");
	keys("Enter", NULL);
	STATUS("d 0.5 Enter", "refresh every 0.5s");
	expect_title("d 0.5 Enter", "0.5");
	press_export("e");
	j = exported("d 0.5, e", name, sizeof(name));
	CHECK(num_field(j, "interval_s") == 0.5, "d 0.5: %s: interval_s: expected 0.5, "
	      "got %g", name, num_field(j, "interval_s"));
	cJSON_Delete(j);
	set_delay("0.5", "abc");
	STATUS("d abc Enter", "delay: expected seconds between 0.01 and 3600, got 'abc'");
	expect_title("d abc: the delay stays", "0.5");
	set_delay("0.5", "0");
	STATUS("d 0 Enter", "delay: expected seconds between");
	set_delay("0.5", "0.2");
	STATUS("d 0.2 Enter", "refresh every 0.2s");
	expect_title("d 0.2 Enter", "0.2");
	expect_rows("after the delay changes", ROWS_BY_COUNT);
	/* Esc abandons the prompt and keeps the delay. */
	keys("d", NULL);
	type_text("9");
	STATUS("d 9", "Delay (s): 0.29_");
	keys("Escape", NULL);
	STATUS("d 9 Esc", "q quit");
	expect_title("d 9 Esc: the delay stays", "0.2");
}

/* "YYYYmmdd-HHMMSS" of the last file e or f wrote, or of a name planted. */
static char last_stamp[32];

/* The stamp of the time t in export names. */
static void stamp_of(char *out, size_t size, time_t t)
{
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(out, size, "%Y%m%d-%H%M%S", &tm);
}

/* Wait for the clock to start a second later than the stamp after. */
static void wait_second_after(const char *after)
{
	char now[32];

	for (;;) {
		stamp_of(now, sizeof(now), time(NULL));
		if (strcmp(now, after) > 0)
			return;
		usleep(10000);
	}
}

/*
 * Press e or f once the clock has left the second of the last export:
 * each export then gets a name of its own (a name taken is refused).
 */
static void press_export(const char *key)
{
	wait_second_after(last_stamp);
	keys(key, NULL);
}

/* The file named by "wrote NAME" on the status line, parsed. */
static cJSON *exported(const char *context, char *name, size_t size)
{
	char line[4096], path[2 * PATH_MAX], *text;
	int pid = 0;
	char date[16] = "", hms[16] = "", end[8] = "";
	cJSON *j;

	STATUS(context, "wrote qsptop-");
	last_line(line, sizeof(line));
	snprintf(name, size, "%s", strncmp(line, "wrote ", 6) == 0 ? line + 6 : "");
	CHECK_SCREEN(sscanf(name, "qsptop-%d-%8[0-9]-%6[0-9]%5s", &pid, date, hms, end) == 4 &&
		     pid == workload_pid && strlen(date) == 8 && strlen(hms) == 6 &&
		     strcmp(end, ".json") == 0,
		     "%s: expected \"wrote qsptop-%d-YYYYmmdd-HHMMSS.json\", got \"%s\"",
		     context, workload_pid, line);
	snprintf(last_stamp, sizeof(last_stamp), "%s-%s", date, hms);
	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	text = slurp_file(path, NULL);
	CHECK(text != NULL, "%s: %s exists in the working directory", context, path);
	j = text ? cJSON_Parse(text) : NULL;
	CHECK(text == NULL || j != NULL, "%s: %s is JSON: %.300s", context, name,
	      text ? text : "");
	free(text);
	return j;
}

/* 10: e writes what is shown; coalesced, it writes the coalesced rows. */
static void test_export(void)
{
	char name[PATH_MAX];
	const cJSON *row, *rows;
	double alpha = -1;
	int grouped = 0;
	cJSON *j;

	press_export("e");
	j = exported("e", name, sizeof(name));
	rows = cJSON_GetObjectItemCaseSensitive(j, "rows");
	CHECK(num_field(j, "schema") == 1, "%s: schema: expected 1, got %g", name,
	      num_field(j, "schema"));
	CHECK_STR(str_field(j, "sort"), "count");
	CHECK_STR(str_field(j, "coalesce"), "none");
	CHECK(num_field(j, "pid") == workload_pid, "%s: pid: expected %d, got %g", name,
	      workload_pid, num_field(j, "pid"));
	CHECK(cJSON_GetArraySize(rows) == 6, "%s: rows: expected 6, got %d", name,
	      cJSON_GetArraySize(rows));
	cJSON_ArrayForEach(row, rows) {
		const cJSON *site = cJSON_GetObjectItemCaseSensitive(row, "site");

		if (check_streq(str_field(site, "symbol"), "site_alpha"))
			alpha = num_field(row, "acquisitions");
	}
	CHECK(alpha == 5000, "%s: site_alpha acquisitions: expected 5000, got %g",
	      name, alpha);
	cJSON_Delete(j);

	keys("m", NULL);
	TOTALS("m", "coalesce site");
	expect_rows("m before the second export", ROWS_BY_SITE);
	press_export("e");
	j = exported("m e", name, sizeof(name));
	rows = cJSON_GetObjectItemCaseSensitive(j, "rows");
	CHECK_STR(str_field(j, "coalesce"), "site");
	CHECK(cJSON_GetArraySize(rows) == 4, "%s: coalesced rows: expected 4, got %d",
	      name, cJSON_GetArraySize(rows));
	cJSON_ArrayForEach(row, rows) {
		if (num_field(row, "n_objects") == 3 &&
		    cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(row, "object")) &&
		    num_field(row, "acquisitions") == 2100)
			grouped++;
	}
	CHECK(grouped == 1, "%s: expected one row with n_objects 3, object null and "
	      "2100 acquisitions, got %d", name, grouped);
	cJSON_Delete(j);
	keys("m", "m", NULL);
	TOTALS("m m", "coalesce none");
	expect_rows("back to coalesce none", ROWS_BY_COUNT);
}

/* tmp/qsptop-PID-STAMP.EXT for the time t; returns out. */
static char *export_file(char *out, size_t size, time_t t, const char *ext)
{
	char stamp[32];

	stamp_of(stamp, sizeof(stamp), t);
	snprintf(out, size, "%s/qsptop-%d-%s.%s", tmp, workload_pid, stamp, ext);
	return out;
}

/* Plant (or with target NULL remove) links at the names of 5 seconds. */
static void plant_links(time_t from, const char *target)
{
	static const char *const exts[] = { "json", "folded" };
	char path[PATH_MAX + 64];

	for (time_t t = from; t < from + 5; t++)
		for (int e = 0; e < 2; e++) {
			export_file(path, sizeof(path), t, exts[e]);
			if (target == NULL)
				unlink(path);
			else if (symlink(target, path) < 0)
				CHECK(0, "symlink %s: %s", path, strerror(errno));
		}
}

/*
 * 10b: e and f never write through a link planted at the name they
 * write: they say so on the status line and qsptop goes on. Two exports
 * in one second: the second leaves the first alone and takes "-2".
 */
static void test_export_planted_links(void)
{
	char victim[PATH_MAX + 16], line[4096], stamp[32], *text;
	FILE *f;
	time_t now;

	snprintf(victim, sizeof(victim), "%s/victim", tmp);
	f = fopen(victim, "w");
	if (f) {
		fputs("precious\n", f);
		fclose(f);
	}
	wait_second_after(last_stamp);
	now = time(NULL);
	plant_links(now, victim);
	keys("e", NULL);
	STATUS("e onto a planted link", "export failed: qsptop-");
	last_line(line, sizeof(line));
	CHECK_SCREEN(strstr(line, ".json is a symbolic link: not followed, nothing written"),
		     "e onto a planted link: expected \"….json is a symbolic link: "
		     "not followed, nothing written\", got \"%s\"", line);
	keys("f", NULL);
	SEE("f onto a planted link", ".folded is a symbolic link: not followed");
	text = slurp_file(victim, "(missing)");
	CHECK_STR(text, "precious\n");
	free(text);
	expect_rows("after refusing to export, qsptop goes on", ROWS_BY_COUNT);
	plant_links(now, NULL);
	/* Early in a second, so that both land in it. */
	stamp_of(stamp, sizeof(stamp), time(NULL));
	wait_second_after(stamp);
	keys("e", "e", NULL);
	SEE("e e in one second", "-2.json");
	stamp_of(last_stamp, sizeof(last_stamp), time(NULL));
	expect_rows("after e e", ROWS_BY_COUNT);
}

static bool all_rows_zero(const void *n_rows)
{
	char line[4096];
	int end, t = title_line(&end), n = screen_lines(), rows = 0;

	if (t < 0)
		return false;
	for (int i = t + 1; i < n - 1; i++) {
		screen_line(i, line, sizeof(line));
		if (line[0] == '\0' || line[0] == ' ')
			continue;
		if (acq_cell(line, end) != 0)
			return false;
		rows++;
	}
	return rows == *(const int *)n_rows;
}

/* 11: r starts the counts again from zero; the rows stay. */
static void test_reset(void)
{
	char line[4096], got[4096];
	int six = 6, end, alpha;
	bool zero;

	keys("r", NULL);
	STATUS("r", "reset: totals count from now");
	zero = wait_until(all_rows_zero, &six, TIMEOUT_MS);
	rows_shown(got, sizeof(got));
	CHECK_SCREEN(zero, "r: expected 6 rows with ACQ 0, got \"%s\"", got);
	title_line(&end);
	alpha = line_with("site_alpha", 3);
	screen_line(alpha, line, sizeof(line));
	CHECK_SCREEN(alpha > 0 && acq_cell(line, end) == 0,
		     "r: expected the site_alpha row's ACQ to read 0, got \"%s\"", line);
	CHECK_SCREEN(strstr(screen, "5000") == NULL, "r: expected no \"5000\" on the screen");
}

/* A screen size, and whether the site_alpha row must show at that size. */
struct size {
	int w, h;
	bool alpha;
};

static bool fits(const void *size)
{
	const struct size *sz = size;
	char line[4096];
	int n = screen_lines();

	if (n != sz->h)
		return false;
	for (int i = 0; i < n; i++) {
		screen_line(i, line, sizeof(line));
		if (columns_of(line) > sz->w)
			return false;
	}
	screen_line(0, line, sizeof(line));
	if (strstr(line, "pid ") == NULL)
		return false;
	screen_line(1, line, sizeof(line));
	if (strncmp(line, "lock wait ", 10) != 0)
		return false;
	screen_line(2, line, sizeof(line));
	return strstr(line, "CALL SITE") && (!sz->alpha || line_with("site_alpha", 3) > 0);
}

/*
 * 60 wide and redrawn: WAIT/s kept, OBJECT and TREND dropped (not an old
 * line cut by tmux, which would still hold OBJECT).
 */
static bool fits_60_redrawn(const void *size)
{
	char line[4096];

	if (!fits(size))
		return false;
	screen_line(2, line, sizeof(line));
	return strstr(line, "WAIT/s") && !strstr(line, "OBJECT") &&
	       !strstr(line, "TREND");
}

static bool resize(int w, int h)
{
	char ws[16], hs[16];

	snprintf(ws, sizeof(ws), "%d", w);
	snprintf(hs, sizeof(hs), "%d", h);
	return tmux(NULL, "resize-window", "-t", session, "-x", ws, "-y", hs, NULL) == 0;
}

/* 12: the screen follows the terminal's size. */
static void test_resize(void)
{
	struct size small = { 60, 15, true }, least = { 40, 8, false };
	struct size full = { WIDTH, HEIGHT, true };

	CHECK(resize(60, 15), "tmux resize-window -x 60 -y 15");
	CHECK_SCREEN(wait_until(fits_60_redrawn, &small, TIMEOUT_MS), "60x15: expected "
		     "15 lines of at most 60 columns: title, totals, column titles "
		     "with WAIT/s kept, OBJECT and TREND dropped, a site_alpha row");
	CHECK(resize(40, 8), "tmux resize-window -x 40 -y 8");
	CHECK_SCREEN(wait_until(fits, &least, TIMEOUT_MS),
		     "40x8 (the least size): expected the table, not the too-small notice");
	CHECK(resize(30, 6), "tmux resize-window -x 30 -y 6");
	SEE("30x6", "terminal too small (need 40\u00d78)");
	CHECK(resize(WIDTH, HEIGHT), "tmux resize-window back to %dx%d", WIDTH, HEIGHT);
	CHECK_SCREEN(wait_until(fits, &full, TIMEOUT_MS), "back to %dx%d: expected the "
		     "table", WIDTH, HEIGHT);
	SEE("back to full size", "TREND");
	GONE("back to full size", "terminal too small");
}

/* 13: q ends qsptop and the workload it launched. */
static void test_quit(void)
{
	long deadline;

	quit_session("main session");
	deadline = monotonic_ms() + TIMEOUT_MS;
	while (workload_alive(workload_pid) && monotonic_ms() < deadline)
		usleep(POLL_MS * 1000);
	CHECK(!workload_alive(workload_pid), "q: the launched workload (pid %d) ended",
	      workload_pid);
}

/* Start qsptop -d 0.2 on `wl_locks MODE tmp/MODE.expect` in session name. */
static bool start_expecting(const char *name, const char *mode)
{
	char program[3 * PATH_MAX], qwl[PATH_MAX + 8], qexp[PATH_MAX + 8];
	char expect[64];

	snprintf(expect, sizeof(expect), "%s.expect", mode);
	quoted(qwl, sizeof(qwl), workload);
	quoted(qexp, sizeof(qexp), tmp_path(expect));
	snprintf(program, sizeof(program), "%s %s %s", qwl, mode, qexp);
	return start_sized(name, WIDTH, HEIGHT, "", "-d 0.2", program);
}

/* The launched pid in the title of the current session, once shown; or 0. */
static int title_pid(const char *context)
{
	char line[4096];
	int pid = 0;

	SEE(context, TITLE_START);
	screen_line(0, line, sizeof(line));
	sscanf(line, TITLE_START "%d", &pid);
	return pid;
}

/* Wait for the launched workload to be gone; whether it is. */
static bool workload_gone(void)
{
	long deadline = monotonic_ms() + TIMEOUT_MS;

	while (workload_alive(workload_pid) && monotonic_ms() < deadline)
		usleep(POLL_MS * 1000);
	return !workload_alive(workload_pid);
}

/*
 * 14: Ctrl-C reaches the launched command too, as it would without
 * qsptop: the command dies of SIGINT, and qsptop with it, status 130.
 */
static void test_ctrl_c(void)
{
	char *text;

	session = "c";
	workload_pid = title_pid("Ctrl-C");
	SEE("Ctrl-C: the workload runs main", "site_mutex_a");
	keys("C-c", NULL);
	text = wait_exit_file("c", TIMEOUT_MS);
	CHECK(text && strcmp(text, "EXIT=130\n") == 0,
	      "Ctrl-C: expected \"EXIT=130\" (killed by SIGINT, as the command), got \"%s\"",
	      text ? text : "(no file within the deadline)");
	CHECK(workload_gone(), "Ctrl-C: the launched workload (pid %d) ended", workload_pid);
	free(text);
}

/* The workload noted the SIGINT it caught (wl_locks deaf). */
static bool sigint_noted(void)
{
	long deadline = monotonic_ms() + TIMEOUT_MS;
	char *text = NULL;

	while (!(text && strstr(text, "sigint\n")) && monotonic_ms() < deadline) {
		free(text);
		usleep(POLL_MS * 1000);
		text = slurp_file(tmp_path("deaf.expect"), "");
	}
	free(text);
	return monotonic_ms() < deadline;
}

/*
 * 15: a command that catches Ctrl-C and goes on is given 3 s, then ended
 * as when qsptop quits (SIGTERM); qsptop exits with its status, 143.
 */
static void test_ctrl_c_caught(void)
{
	char *text;

	session = "d";
	workload_pid = title_pid("Ctrl-C caught");
	SEE("Ctrl-C caught: the workload runs main", "site_mutex_a");
	keys("C-c", NULL);
	CHECK(sigint_noted(), "Ctrl-C caught: expected the workload to note the SIGINT");
	text = wait_exit_file("d", TIMEOUT_MS + 3000);
	CHECK(text && strcmp(text, "EXIT=143\n") == 0,
	      "Ctrl-C caught: expected \"EXIT=143\" (the command ended by SIGTERM "
	      "after the grace period), got \"%s\"", text ? text : "(no file within the deadline)");
	CHECK(workload_gone(), "Ctrl-C caught: the launched workload (pid %d) ended",
	      workload_pid);
	free(text);
}

int main(void)
{
	if (!tmux_begin("tui"))
		return check_summary();
	if (start_session("t", "", "")) {
		test_table_sorted_by_count();
		test_invert();
		test_sort_columns();
		test_coalesce();
		test_types();
		test_filter();
		test_site_style();
		test_details();
		test_help();
		test_pause();
		test_themes_cycle();
		test_delay_prompt();
		test_export();
		test_export_planted_links();
		test_reset();
		test_resize();
		test_quit();
	}
	/* Both at once: the server stays up while one ends. */
	if (start_expecting("d", "deaf") && start_expecting("c", "idle")) {
		test_ctrl_c();
		test_ctrl_c_caught();
	}
	return tmux_end("test_tui");
}
