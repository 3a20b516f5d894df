/*
 * End-to-end tests of screens that each run a program and a size of
 * their own in a tmux session (tmux.h): the theme options, the wrapper
 * stacks of `wl_locks wrapper`, the long C++ names of wl_cxxname at 80x24
 * and in batch output, the names of wl_names_stripped's sites and locks,
 * and `make demo` on a terminal (as README's sample
 * shows it) and without one.
 * Each test starts and quits its own session; none needs another's.
 */
#include <ctype.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tmux.h"

/* True when the pane's escapes (capture-pane -e) set any colour. */
static bool pane_has_colour(void)
{
	char *out = NULL;
	bool colour = false;

	tmux(&out, "capture-pane", "-p", "-e", "-t", session, NULL);
	for (const char *p = out ? out : ""; (p = strstr(p, "\033[")) != NULL;) {
		p += 2;
		while (*p && *p != 'm' && !isalpha((unsigned char)*p)) {
			char *next;
			long v = strtol(p, &next, 10);

			p = next;

			if ((v >= 30 && v <= 38) || (v >= 40 && v <= 48) ||
			    (v >= 90 && v <= 97) || (v >= 100 && v <= 107))
				colour = true;
			if (*p == ';' || *p == ':')
				p++;
			else if (!isdigit((unsigned char)*p))
				break;
		}
	}
	free(out);
	return colour;
}

/* The directories of "(in DIR, DIR...)" in text all exist, and some are named. */
static bool only_existing_dirs(const char *text)
{
	const char *p = strstr(text, "(in ");
	char dir[PATH_MAX];
	int n = 0;

	if (p == NULL)
		return false;
	for (p += 4; *p && *p != ')'; n++) {
		size_t len = strcspn(p, ",)");
		struct stat st;

		snprintf(dir, sizeof(dir), "%.*s", (int)len, p);
		if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
			return false;
		p += len;
		p += strncmp(p, ", ", 2) == 0 ? 2 : 0;
	}
	return n > 0;
}

/* NO_COLOR, -t mono and -t light start and show the table. */
static void test_theme_options(void)
{
	static const struct {
		const char *name, *env, *args;
		bool colour;
	} runs[] = {
		{ "nocolor", "NO_COLOR=1", "", false },
		{ "mono", "", "-t mono", false },
		{ "light", "", "-t light", true },
	};
	char err[PATH_MAX + 16], out[PATH_MAX + 16], *text;
	int status;
	pid_t pid;

	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		if (!start_session(runs[i].name, runs[i].env, runs[i].args))
			continue;
		expect_rows(runs[i].name, ROWS_BY_COUNT);
		CHECK_SCREEN(status_starts("q quit"), "%s: expected the key hints on the "
			     "status line, not a warning", runs[i].name);
		CHECK_SCREEN(pane_has_colour() == runs[i].colour, "%s: expected %s",
			     runs[i].name, runs[i].colour ? "colours" : "no colour at all");
		quit_session(runs[i].name);
	}

	/* An unknown theme is a usage error, before anything starts. */
	snprintf(out, sizeof(out), "%s/nosuch.out", tmp);
	snprintf(err, sizeof(err), "%s/nosuch.err", tmp);
	pid = start((char *[]){ qsptop, "-t", "nosuch", "--", "true", NULL }, out, err);
	waitpid(pid, &status, 0);
	text = slurp_file(err, NULL);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 2,
	      "-t nosuch: expected exit 2, got status %d", status);
	CHECK(text && strstr(text, "no theme named 'nosuch'; themes: default, light, mono"),
	      "-t nosuch: expected \"no theme named 'nosuch'; themes: default, light, "
	      "mono\" on stderr, got \"%s\"", text ? text : "(nothing)");
	CHECK(text && only_existing_dirs(text),
	      "-t nosuch: expected only directories that exist in \"(in DIR, ...)\", "
	      "got \"%s\"", text ? text : "(nothing)");
	free(text);
}

/*
 * 14: `wl_locks wrapper` under --wrapper app_lock: path_a and path_b are
 * rows; w shows app_lock's row whole, whose details list the stacks of
 * both paths and scroll under the header; w again splits it. The rows add
 * up to the same acquisitions all along.
 */
static void test_wrapper_stacks(void)
{
	long total;
	int first;

	if (!start_mode("w", "wrapper", "", "--wrapper app_lock"))
		return;
	SEE("wrapper workload", "exited with status 0 (launched)");
	TOTALS("wrapper workload exited", " seen, 0 live");
	SEE("--wrapper app_lock: a row for path_a", "path_a+0x");
	SEE("--wrapper app_lock: a row for path_b", "path_b+0x");
	total = acq_total();
	CHECK_SCREEN(total >= 1502, "--wrapper app_lock: the rows add up to "
		     "%ld acquisitions, expected at least app_lock's 1502", total);
	keys("w", NULL);
	STATUS("w", "wrappers: shown");
	GONE("w: the paths fold back into app_lock", "path_a+0x");
	CHECK_SCREEN(acq_total() == total, "w: the rows add up to %ld "
		     "acquisitions, %ld before", acq_total(), total);
	send_bytes(XTERM_HOME);
	keys("Enter", NULL);
	SEE("Enter on app_lock", "DETAILS (Esc: back)");
	CHECK_SCREEN(strstr(screen, "mutex at app_lock+0x") && strstr(screen, "stack 1: wait ") &&
		     strstr(screen, "path_a+0x") && strstr(screen, "(locks.c:"),
		     "details of app_lock: expected \"stack 1: wait …\" with a frame "
		     "\"path_a+0x… (locks.c:…)\"");
	first = acquisitions_line();
	keys("Down", NULL);
	CHECK_SCREEN(wait_until(acquisitions_at, &(int){ first - 1 }, TIMEOUT_MS),
		     "Down: expected \"acquisitions\" one line up, on %d, it is on %d",
		     first - 1, acquisitions_line());
	check_header_kept("stacks, Down", "DETAILS (Esc: back)");
	keys("PageDown", NULL);
	GONE("stacks, PgDn", "acquisitions ");
	check_header_kept("stacks, PgDn", "DETAILS (Esc: back)");
	send_bytes(XTERM_END);
	SEE("stacks, End", "threads that waited");
	SEE("stacks, End", "path_b+0x");
	check_header_kept("stacks, End", "DETAILS (Esc: back)");
	CHECK_SCREEN(screen_lines() == HEIGHT, "stacks, End: the screen keeps %d lines",
		     HEIGHT);
	keys("Escape", NULL);
	SEE("Esc", "CALL SITE");
	GONE("Esc", "DETAILS");
	keys("w", NULL);
	STATUS("w again", "wrappers: skipped (");
	SEE("w again: path_a has its row again", "path_a+0x");
	CHECK_SCREEN(acq_total() == total, "w again: the rows add up to %ld "
		     "acquisitions, %ld before", acq_total(), total);
	quit_session("wrapper session");
}

/* The first line of README.md's sample screen that starts with prefix. */
static void readme_line(const char *prefix, char *out, size_t size)
{
	char path[PATH_MAX + 16], *text, *p;

	snprintf(path, sizeof(path), "%s/README.md", root);
	text = slurp_file(path, "");
	p = strstr(text, "\n```\n");
	while (p && strncmp(p + 1, prefix, strlen(prefix)) != 0)
		p = strchr(p + 1, '\n');
	snprintf(out, size, "%.*s", p ? (int)strcspn(p + 1, "\n") : 0, p ? p + 1 : "");
	free(text);
}

/* The screen's line that starts with prefix, right spaces cut, or "". */
static void screen_line_starting(const char *prefix, char *out, size_t size)
{
	int i = line_starting(prefix);
	size_t n;

	screen_line(i < 0 ? screen_lines() : i, out, size);
	n = strlen(out);
	while (n > 0 && out[n - 1] == ' ')
		out[--n] = '\0';
}

/* README's sample screen has the columns and key hints of 140 columns. */
static void check_readme_sample(void)
{
	static const char *const prefixes[] = { "TYPE ", "q quit " };
	char want[4096], got[4096];

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		readme_line(prefixes[i], want, sizeof(want));
		screen_line_starting(prefixes[i], got, sizeof(got));
		CHECK_SCREEN(strcmp(want, got) == 0, "README's sample at %d columns: "
			     "expected its line \"%s\" as on the screen, \"%s\"",
			     WIDTH, want, got);
	}
}

/*
 * 16: `make demo` on a terminal stays live past five refreshes until q;
 * without one it prints five batch tables and ends.
 */
static void test_make_demo(void)
{
	static char cmd[8 * PATH_MAX];
	char qroot[PATH_MAX + 8], qbuild[PATH_MAX + 16], qexit[PATH_MAX + 32];
	char path[PATH_MAX + 32], build_arg[PATH_MAX + 8], w[16], h[16];
	char *argv[] = { "make", "-s", "-C", root, build_arg, "demo", NULL };
	struct run r;
	char *text;

	snprintf(build_arg, sizeof(build_arg), "BUILD=%s", build);
	r = run_capture(argv, 60000, 0);
	CHECK(r.status == 0 && text_occurrences(r.out, "CALL SITE") == 5,
	      "make demo without a terminal: expected exit 0 and 5 tables, got "
	      "exit %d and %d tables:\n%s%s", r.status,
	      text_occurrences(r.out, "CALL SITE"), r.out, r.err);
	run_free(&r);

	session = "demo";
	quoted(qroot, sizeof(qroot), root);
	quoted(qbuild, sizeof(qbuild), build_arg);
	exit_file(path, sizeof(path), session);
	quoted(qexit, sizeof(qexit), path);
	snprintf(cmd, sizeof(cmd), "cd %s && ESCDELAY=25 TERM=xterm-256color "
		 "LANG=C.UTF-8 make -s %s demo; echo EXIT=$? > %s", qroot,
		 qbuild, qexit);
	snprintf(w, sizeof(w), "%d", WIDTH);
	snprintf(h, sizeof(h), "%d", HEIGHT);
	if (tmux(NULL, "new-session", "-d", "-x", w, "-y", h, "-s", session,
		 cmd, NULL) != 0) {
		CHECK(0, "make demo: tmux new-session failed");
		return;
	}
	SEE("make demo on a terminal", "CALL SITE");
	STATUS("make demo: the key hints", "q quit");
	check_readme_sample();
	/* Refreshes are a second apart: seven of them. */
	sleep(7);
	capture();
	text = slurp_file(path, NULL);
	CHECK_SCREEN(text == NULL && strstr(screen, "CALL SITE"),
		     "make demo: expected the live screen after 7 s, got exit "
		     "file \"%s\"", text ? text : "(none)");
	free(text);
	quit_session("make demo");
}

/* --- narrow screens and long C++ names (wl_cxxname) --- */

/* Whether s is, whole, a match of the extended regular expression re. */
static bool matches(const char *re, const char *s)
{
	char anchored[512];
	regex_t r;
	bool ok;

	snprintf(anchored, sizeof(anchored), "^(%s)$", re);
	if (regcomp(&r, anchored, REG_EXTENDED | REG_NOSUB) != 0)
		return false;
	ok = regexec(&r, s, 0, NULL, 0) == 0;
	regfree(&r);
	return ok;
}

/*
 * Split line at sep (runs of it count once) and check that every piece is
 * a whole item, one of res; the first piece that is not goes to odd.
 */
static bool items_whole(const char *line, const char *sep,
			const char *const *res, size_t n, char *odd, size_t size)
{
	const char *p = line;

	while (*p) {
		const char *end = strstr(p, sep);
		size_t len = end ? (size_t)(end - p) : strlen(p);
		bool known = len == 0;

		snprintf(odd, size, "%.*s", (int)len, p);
		for (size_t i = 0; i < n && !known; i++)
			known = matches(res[i], odd);
		if (!known)
			return false;
		p = end ? end + strlen(sep) : p + len;
	}
	odd[0] = '\0';
	return true;
}

#define DURATION "[0-9.]+(ns|us|ms|s)"
#define SEP_BAR " \u2502 "

/* Line 1 of the header: every item whole. */
static const char *const totals_items[] = {
	"lock wait " DURATION "/s", "idle wait " DURATION "/s",
	"acq [0-9.]+[KMGTP]?/s", "threads [0-9]+ seen, [0-9]+ live",
	"sort (wait|total|avg|count|contended|max|site) (\u25bc|\u25b2)",
	"coalesce (none|site|object)", "dropped [0-9]+", "idle last",
	"types [a-z, -]+",
	"unseen waits: [0-9]+ threads? in [^,]+(, [0-9]+ in [^,]+)*",
};

/* The key hints of the status line. */
static const char *const hint_items[] = {
	"q quit", "h help", "Enter details", "</> sort", "I invert", "m coalesce",
	"r reset", "/ filter", "e export", "f flame", "w wrappers", "Space pause",
	"T types", "d delay", "s site", "t theme",
};

/*
 * The title: the fixed items whole; the command line, last, whole or
 * cut at its end with an ellipsis.
 */
static void check_title_items(const char *line, const char *command)
{
	static const char *const fixed[] = {
		"qsptop [0-9.]+", "pid [0-9]+", "running \\(launched\\)", "every 0\\.2s",
	};
	const char *last = line, *p;
	char odd[4096], head[4096];
	size_t len;

	while ((p = strstr(last, SEP_BAR)) != NULL)
		last = p + strlen(SEP_BAR);
	snprintf(head, sizeof(head), "%.*s", (int)(last - line), line);
	len = strlen(last);
	CHECK_SCREEN(items_whole(head, SEP_BAR, fixed, 4, odd, sizeof(odd)),
		     "80x24 title: \"%s\" is not a whole item", odd);
	if (len >= 3 && strcmp(last + len - 3, "\u2026") == 0)
		len -= 3;
	CHECK_SCREEN(strncmp(last, command, len) == 0 && len > 0 &&
		     (len == strlen(last) ? strcmp(last, command) == 0 : true),
		     "80x24 title: expected the command \"%s\", whole or cut with "
		     "\"\u2026\", last; got \"%s\"", command, last);
}

/* The text of a row under the CALL SITE title, up to the next column. */
static void site_cell(const char *titles, const char *row, char *out, size_t size)
{
	const char *site = strstr(titles, "CALL SITE");
	const char *next = site ? strstr(site, "WAIT/s") : NULL;
	int from = site ? (int)(site - titles) : 0;
	int to = next ? (int)(next - titles) : from;
	int a = column_byte(row, from), b = column_byte(row, to);

	snprintf(out, size, "%.*s", b > a ? b - a : 0, row + a);
}

/*
 * 17: at 80x24, the default terminal: every header and status item is
 * whole or absent, AVG and MAX are shown, and CALL SITE shows the long
 * C++ method's own name.
 */
static void test_narrow_cxx(void)
{
	char wl[PATH_MAX], program[PATH_MAX + 16], line[4096], titles[4096];
	char odd[4096], cell[4096];
	int row;

	join(wl, build, "/tests/wl_cxxname");
	quoted(program, sizeof(program), wl);
	strcat(program, " 60");
	if (!start_sized("cxx", 80, 24, "", "-d 0.2", program))
		return;
	SEE("80x24", "checkout_connection_for_request");
	SEE("80x24", "every 0.2s");
	screen_line(0, line, sizeof(line));
	snprintf(program, sizeof(program), "%s 60", wl);
	check_title_items(line, program);
	screen_line(1, line, sizeof(line));
	CHECK_SCREEN(items_whole(line, SEP_BAR, totals_items, sizeof(totals_items) /
				 sizeof(totals_items[0]), odd, sizeof(odd)),
		     "80x24 totals: \"%s\" is not a whole item", odd);
	CHECK_SCREEN(strncmp(line, "lock wait ", 10) == 0 && strstr(line, "idle wait "),
		     "80x24 totals: expected \"lock wait …\" and \"idle wait …\" first");
	last_line(line, sizeof(line));
	CHECK_SCREEN(items_whole(line, "  ", hint_items, sizeof(hint_items) /
				 sizeof(hint_items[0]), odd, sizeof(odd)),
		     "80x24 status: \"%s\" is not a whole key hint", odd);
	CHECK_SCREEN(strncmp(line, "q quit  h help", 14) == 0 && strstr(line, "/ filter"),
		     "80x24 status: expected \"q quit\", \"h help\" and \"/ filter\"");
	screen_line(2, titles, sizeof(titles));
	CHECK_SCREEN(strstr(titles, "CALL SITE") && strstr(titles, " AVG") &&
		     strstr(titles, " MAX") && strstr(titles, "WAIT/s") &&
		     !strstr(titles, "OBJECT"), "80x24 column titles: expected CALL "
		     "SITE, WAIT/s, AVG and MAX, no OBJECT");
	row = line_with("checkout_connection_for_request", 3);
	screen_line(row, line, sizeof(line));
	site_cell(titles, line, cell, sizeof(cell));
	CHECK_SCREEN(strstr(cell, "checkout_connection_for_request") != NULL,
		     "80x24: expected \"checkout_connection_for_request\" in the "
		     "CALL SITE column, got \"%s\"", cell);
	quit_session("80x24");
}

/*
 * The live screen names what has no name of its own (wl_names, stripped):
 * the hot site in a static function reads "wl_names_stripped+0x… ←
 * exported_fn", and OBJECT names the global struct's lock stats+0x10 and
 * the heap table's @table_insert (its first locker).
 */
static void test_live_names(void)
{
	char wl[PATH_MAX], program[PATH_MAX + 16], line[512];

	join(wl, build, "/tests/wl_names_stripped");
	quoted(program, sizeof(program), wl);
	if (!start_sized("names", WIDTH, HEIGHT, "", "-d 0.2", program))
		return;
	SEE("stripped static site", "\u2190 exported_fn");
	screen_line(line_with("\u2190 exported_fn", 3), line, sizeof(line));
	CHECK_SCREEN(strstr(line, "wl_names_stripped+0x") != NULL,
		     "stripped static site: expected \"wl_names_stripped+0x… "
		     "\u2190 exported_fn\" on one line");
	SEE("a global struct's lock", "stats+0x10");
	SEE("a heap lock", "@table_insert");
	quit_session("names");
}

/* A row of the last table of batch output that contains needle, or NULL. */
static const char *last_table_row(const char *out, const char *needle,
				  char *titles, size_t size)
{
	const char *t = NULL, *p = out, *row;

	while ((p = strstr(p, "CALL SITE")) != NULL)
		t = p++;
	if (t == NULL)
		return NULL;
	while (t > out && t[-1] != '\n')
		t--;
	snprintf(titles, size, "%.*s", (int)strcspn(t, "\n"), t);
	row = strstr(t, needle);
	while (row && row > t && row[-1] != '\n')
		row--;
	return row;
}

/* The JSON's lock and idle waits: apart by role, adding up to the rows'. */
static void check_wait_totals(const cJSON *snap)
{
	const cJSON *rows = cJSON_GetObjectItemCaseSensitive(snap, "rows"), *r;
	double all = 0, cond = 0;
	bool named = false;

	cJSON_ArrayForEach(r, rows) {
		const char *symbol = str_field(cJSON_GetObjectItemCaseSensitive(r, "site"),
					       "symbol");

		all += num_field(r, "wait_ns");
		if (strcmp(str_field(r, "role") ? str_field(r, "role") : "", "idle") == 0)
			cond += num_field(r, "wait_ns");
		named |= symbol && strncmp(symbol, "storage::engine::connection_pool<", 33) == 0 &&
			 strstr(symbol, ">::checkout_connection_for_request(std::vector<") != NULL;
	}
	CHECK(num_field(snap, "cond_wait_ns") == cond && cond > 0,
	      "JSON cond_wait_ns: expected the idle rows' %.0f ns, got %.0f",
	      cond, num_field(snap, "cond_wait_ns"));
	CHECK(num_field(snap, "lock_wait_ns") == all - cond && all - cond > 0,
	      "JSON lock_wait_ns: expected the other rows' %.0f ns, got %.0f",
	      all - cond, num_field(snap, "lock_wait_ns"));
	CHECK(num_field(snap, "lock_wait_per_s_ns") >= 0 &&
	      num_field(snap, "cond_wait_per_s_ns") >= 0,
	      "JSON: expected lock_wait_per_s_ns and cond_wait_per_s_ns");
	CHECK(named, "JSON: expected a site symbol with the method's full name");
}

/*
 * 18: batch output, 132 columns: CALL SITE shows the method's name; the
 * header and the JSON tell lock waits from condition variable waits.
 */
static void test_cxx_batch(void)
{
	char wl[PATH_MAX], json[PATH_MAX + 16], titles[4096], cell[4096];
	char *argv[] = { qsptop, "-b", "-d", "0.2", "-j", json, "--", wl, "0.6", NULL };
	const char *row;
	struct run r;
	cJSON *snap;

	join(wl, build, "/tests/wl_cxxname");
	snprintf(json, sizeof(json), "%s/cxx.json", tmp);
	r = run_capture(argv, 30000, 0);
	CHECK(r.status == 0, "wl_cxxname in batch: expected exit 0, got %d: %s",
	      r.status, r.err);
	CHECK(strstr(r.out, "\nlock wait ") && strstr(r.out, " - idle wait "),
	      "batch header: expected \"lock wait\" and \"idle wait\":\n%s", r.out);
	row = last_table_row(r.out, "checkout_connection_for_request", titles,
			     sizeof(titles));
	if (row) {
		char line[4096];

		snprintf(line, sizeof(line), "%.*s", (int)strcspn(row, "\n"), row);
		site_cell(titles, line, cell, sizeof(cell));
		CHECK(strstr(cell, "checkout_connection_for_request") &&
		      strstr(cell, "(cxxname.cc:") && columns_of(line) <= 132,
		      "batch: expected \"checkout_connection_for_request\" and "
		      "\"(cxxname.cc:\" in CALL SITE of a line of at most 132 "
		      "columns, got \"%s\" in:\n%s", cell, line);
	}
	CHECK(row != NULL, "batch: expected a row of "
	      "checkout_connection_for_request:\n%s", r.out);
	snap = load_json(json);
	CHECK(snap != NULL, "wl_cxxname: expected a JSON snapshot in %s", json);
	if (snap)
		check_wait_totals(snap);
	cJSON_Delete(snap);
	run_free(&r);
}

/*
 * The empty table says what was looked at (the hooked calls, the collector
 * preloaded) and what was not: threads parked in pthread_barrier_wait.
 */
static void test_empty_explained(void)
{
	char wl[PATH_MAX], program[PATH_MAX + 16];

	join(wl, build, "/tests/wl_unseen");
	quoted(program, sizeof(program), wl);
	strcat(program, " barrier 3");
	if (!start_sized("empty", WIDTH, HEIGHT, "", "-d 0.2", program))
		return;
	SEE("empty table", "no lock calls seen yet");
	SEE("empty table", "Looked at: the calls qsptop hooks (pthread mutexes,");
	SEE("empty table", "with the collector preloaded at launch.");
	SEE("empty table", "Not seen: 3 threads in pthread_barrier_wait: waits no "
	    "hook times");
	TOTALS("empty table", "unseen waits: 3 threads in pthread_barrier_wait");
	quit_session("empty table");
}

int main(void)
{
	if (!tmux_begin("screens"))
		return check_summary();
	test_theme_options();
	test_wrapper_stacks();
	test_narrow_cxx();
	test_empty_explained();
	test_cxx_batch();
	test_live_names();
	test_make_demo();
	return tmux_end("test_screens");
}
