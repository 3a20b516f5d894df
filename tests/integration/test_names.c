/*
 * What the table names, through the real program on wl_names: a call
 * site without a symbol (a static function of a stripped program) shows
 * its nearest named caller, `prog+0x… ← exported_fn`, in the batch table
 * and as site.named_caller in the JSON; locks are named by their data
 * symbol (log_mutex, stats+0x10) or, on the heap, by the first function
 * seen locking them (@table_insert); the JSON threads carry the names
 * the threads gave themselves.
 */
#include <cJSON.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../unit/check.h"
#include "harness.h"

enum { RUN_TIMEOUT_MS = 120000 };

/* One run of qsptop on a workload: its batch output and snapshot. */
struct names_run {
	char *out;
	cJSON *snap;
};

/* qsptop -b -n 4 -j on program (it runs until qsptop ends it). */
static struct names_run run_names(const char *program)
{
	char *json = tmp_path("names.json"), path[PATH_MAX + 64];
	struct names_run nr = { 0 };
	struct args a = { 0 };
	struct run r;

	snprintf(path, sizeof(path), "%s/tests/%s", build, program);
	args_add(&a, qsptop, "-b", "-d", "0.3", "-n", "4", "-w", "200", "-j",
		 json, "--", path, NULL);
	unlink(json);
	r = run_capture(a.v, RUN_TIMEOUT_MS, 0);
	CHECK(r.status == 0, "%s: qsptop exits 0, got %d: %s", program,
	      r.status, r.err);
	nr.out = r.out;
	free(r.err);
	nr.snap = load_json(json);
	CHECK(nr.snap != NULL, "%s: a JSON snapshot", program);
	return nr;
}

static void names_free(struct names_run *nr)
{
	free(nr->out);
	cJSON_Delete(nr->snap);
}

/* The first row with a stack whose frame 0 or 1 is fn: fn's own wait. */
static const cJSON *row_waited_in(const cJSON *snap, const char *fn)
{
	const cJSON *row;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const cJSON *stack = cJSON_GetArrayItem(
			cJSON_GetObjectItem(row, "stacks"), 0);
		const cJSON *frames = cJSON_GetObjectItem(stack, "frames");

		for (int i = 0; i < 2; i++) {
			const char *sym = str_field(cJSON_GetArrayItem(frames, i),
						    "symbol");

			if (sym && strcmp(sym, fn) == 0 &&
			    num_field(row, "contended") > 0)
				return row;
		}
	}
	return NULL;
}

/* The row whose call site's symbol is fn and that waited. */
static const cJSON *row_at(const cJSON *snap, const char *fn)
{
	const cJSON *row;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const char *sym = str_field(cJSON_GetObjectItem(row, "site"),
					    "symbol");

		if (sym && strcmp(sym, fn) == 0 &&
		    num_field(row, "contended") > 0)
			return row;
	}
	return NULL;
}

/* Whether a line of text holds both a and b. */
static bool line_with(const char *text, const char *a, const char *b)
{
	for (const char *p = text; p && *p;) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char line[1024];

		snprintf(line, sizeof(line), "%.*s", (int)len, p);
		if (strstr(line, a) && strstr(line, b))
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

/*
 * cold_static()'s lock, stripped: its stacks name nothing but the
 * thread's start, which names neither its caller nor its lock. So one
 * contended row has neither a symbol nor a named caller, and no name
 * anywhere is a thread's start.
 */
static void check_no_thread_start(const struct names_run *nr)
{
	const cJSON *row;
	int bare = 0;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(nr->snap, "rows")) {
		const cJSON *site = cJSON_GetObjectItem(row, "site");
		const char *caller = str_field(cJSON_GetObjectItem(site,
					       "named_caller"), "symbol");
		const char *object = str_field(row, "object_name");

		bare += num_field(row, "contended") > 0 &&
			str_field(site, "symbol") == NULL && caller == NULL;
		CHECK(!caller || !strstr(caller, "start"),
		      "stripped: a site's named caller is %s, a thread's start",
		      caller);
		CHECK(!object || !strstr(object, "start"),
		      "stripped: a lock is named %s, a thread's start", object);
	}
	CHECK(bare == 1, "stripped: cold_static's row alone has no name at "
	      "all, expected 1 such row, got %d", bare);
	CHECK(!strstr(nr->out, "start_thread"),
	      "stripped: the batch table names start_thread:\n%s", nr->out);
}

/* The hot lock taken in the stripped program's static hot_static(). */
static void test_stripped_caller(void)
{
	struct names_run nr = run_names("wl_names_stripped");
	const cJSON *row = row_at(nr.snap, "exported_fn"), *site, *caller;

	/* The arrow is ASCII when the locale is not UTF-8. */
	CHECK(line_with(nr.out, "wl_names_stripped+0x", "\u2190 exported_fn") ||
	      line_with(nr.out, "wl_names_stripped+0x", "<- exported_fn"),
	      "stripped: a CALL SITE reads wl_names_stripped+0x… \u2190 "
	      "exported_fn in the batch table; got:\n%s", nr.out);
	CHECK(row == NULL, "stripped: no row's own symbol is exported_fn "
	      "(its call is in the static hot_static), got one");
	row = row_waited_in(nr.snap, "exported_fn");
	site = cJSON_GetObjectItem(row, "site");
	caller = cJSON_GetObjectItem(site, "named_caller");
	CHECK(row && cJSON_IsNull(cJSON_GetObjectItem(site, "symbol")),
	      "stripped: the hot row's site has no symbol");
	CHECK_STR(str_field(caller, "symbol"), "exported_fn");
	CHECK(num_field(caller, "depth") == 1,
	      "stripped: named_caller.depth 1 (exported_fn calls the site's "
	      "function), got %g", num_field(caller, "depth"));
	row = row_at(nr.snap, "stats_add");
	caller = cJSON_GetObjectItem(cJSON_GetObjectItem(row, "site"),
				     "named_caller");
	CHECK(row && cJSON_IsNull(caller),
	      "stripped: stats_add's site, named itself, has named_caller null");
	check_no_thread_start(&nr);
	names_free(&nr);
}

/* Lock names: data symbols, and the first locker of a heap lock. */
static void test_lock_names(void)
{
	struct names_run nr = run_names("wl_names");
	static const struct {
		const char *fn, *name, *from;
	} want[] = {
		{ "log_write", "log_mutex", "symbol" },
		{ "stats_add", "stats+0x10", "symbol" },
		{ "hot_static", "hot_mutex", "symbol" },
		{ "table_insert", "table_insert", "first_locker" },
		{ "table_lookup", "table_insert", "first_locker" },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const cJSON *row = row_at(nr.snap, want[i].fn);
		char shown[80];

		CHECK(row != NULL, "a contended row at %s", want[i].fn);
		CHECK_STR(str_field(row, "object_name"), want[i].name);
		CHECK_STR(str_field(row, "object_name_from"), want[i].from);
		snprintf(shown, sizeof(shown), "%s%s",
			 strcmp(want[i].from, "symbol") ? "@" : "", want[i].name);
		CHECK(line_with(nr.out, want[i].fn, shown),
		      "OBJECT shows %s on %s's line; got:\n%s", shown,
		      want[i].fn, nr.out);
	}
	names_free(&nr);
}

/* The threads entries carry the name the waiting thread gave itself. */
static void test_thread_names(void)
{
	struct names_run nr = run_names("wl_names");
	const cJSON *row = row_at(nr.snap, "log_write");
	const cJSON *thread = cJSON_GetArrayItem(
		cJSON_GetObjectItem(row, "threads"), 0);

	CHECK(thread != NULL, "log_write's row has a thread that waited");
	CHECK_STR(str_field(thread, "name"), "nm-waiter");
	names_free(&nr);
}

/*
 * On the live screen, the filter finds a line by its names, not only by
 * its call site's: typed, it keeps the line whose named caller or lock
 * name holds it (shown, on the kept line with it), and drops a line that
 * has nothing of it (gone).
 */
static void check_filter(const char *program, const char *filter,
			 const char *shown, const char *with, const char *gone)
{
	static int runs;
	char sock[64], cmd[PATH_MAX * 3], *screen;

	/* A server of its own each time: one killed may still be going. */
	snprintf(sock, sizeof(sock), "qsptop-names-%d-%d", (int)getpid(),
		 ++runs);
	snprintf(cmd, sizeof(cmd), "%s -d 0.3 -- %s/tests/%s", qsptop, build,
		 program);
	tmux_quietly(sock, "new-session", "-d", "-s", "t", "-x", "200", "-y",
		     "40", cmd, NULL);
	CHECK(tmux_until(sock, gone, true), "%s: the screen shows %s before "
	      "the filter", program, gone);
	tmux_quietly(sock, "send-keys", "-t", "t", "/", NULL);
	tmux_quietly(sock, "send-keys", "-t", "t", "-l", filter, NULL);
	tmux_quietly(sock, "send-keys", "-t", "t", "Enter", NULL);
	CHECK(tmux_until(sock, gone, false), "%s: the filter %s drops %s",
	      program, filter, gone);
	screen = tmux_last_screen();
	CHECK(line_with(screen, shown, with), "%s: the filter %s keeps the "
	      "line with %s and %s; got:\n%s", program, filter, shown, with,
	      screen);
	free(screen);
	tmux_quietly(sock, "send-keys", "-t", "t", "q", NULL);
	tmux_quietly(sock, "kill-server", NULL);
}

/* The filter matches named callers and lock names too. */
static void test_filter_names(void)
{
	if (tmux_quietly("qsptop-names-v", "-V", NULL) != 0) {
		SKIP("no tmux");
		return;
	}
	check_filter("wl_names_stripped", "exported_fn", "wl_names_stripped+0x",
		     "exported_fn", "stats_add");
	check_filter("wl_names", "stats+0x10", "stats_add", "stats+0x10",
		     "log_write");
}

int main(void)
{
	find_paths("/tmp/qsptop-names-XXXXXX", "wl_names");
	signal(SIGPIPE, SIG_IGN);
	test_stripped_caller();
	test_lock_names();
	test_thread_names();
	test_filter_names();
	remove_tmp();
	return check_summary();
}
