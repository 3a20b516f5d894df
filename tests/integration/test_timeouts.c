/*
 * Waits that time out, through the real programs: five 300 ms condvar
 * waits that all time out (tests/workloads/condtimed.c) are five
 * timeouts and 1.5 s of wait on the condvar's row, with an average wait
 * of their own; on every row with waits the average is above 0 and at
 * most the longest wait, and the share of calls that waited (CONT%) is
 * defined, also on the condvar's row, which acquired nothing.
 *
 * The condvar waits go through a lock wrapper, wait_until(). Counted on
 * the wrapper's row before qsptop named it (a preloaded collector, qsptop
 * -p --wrapper wait_until later), they reach the caller's line through
 * the row's stacks: the line has the five timeouts, and an average wait
 * of its own within its longest.
 */
#include <cJSON.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../unit/check.h"
#include "harness.h"

enum { RUN_TIMEOUT_MS = 60000 };

/*
 * Run qsptop -b -j JSON [FLAG ARG] -- wl_condtimed; the snapshot, or NULL.
 * Its tables go to *out (the caller frees).
 */
static cJSON *run_condtimed(const char *flag, const char *arg, char **out)
{
	char *json = tmp_path("timeouts.json");
	struct args a = { 0 };
	struct run r;

	args_add(&a, qsptop, "-b", "-d", "0.2", "-j", json, NULL);
	if (flag)
		args_add(&a, flag, arg, NULL);
	args_add(&a, "--", workload, NULL);
	unlink(json);
	r = run_capture(a.v, RUN_TIMEOUT_MS, 0);
	CHECK(r.status == 0, "qsptop exits 0, got %d: %s", r.status, r.err);
	*out = r.out;
	r.out = NULL;
	run_free(&r);
	return load_json(json);
}

/* The first row of a type, or NULL. */
static const cJSON *row_of(const cJSON *snap, const char *type)
{
	const cJSON *row;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		if (strcmp(str_field(row, "type"), type) == 0)
			return row;
	}
	return NULL;
}

/* The sum of field over the entries of a row's array (threads, stacks). */
static double sum_of(const cJSON *row, const char *array, const char *field)
{
	const cJSON *e;
	double sum = 0;

	cJSON_ArrayForEach(e, cJSON_GetObjectItem(row, array))
		sum += num_field(e, field);
	return sum;
}

/* The condvar's five timeouts: counted as waits, with their time. */
static void test_condvar_timeouts(const cJSON *snap)
{
	const cJSON *row = row_of(snap, "condvar");
	double wait_s, avg_ms;

	CHECK(row != NULL, "a condvar row");
	if (row == NULL)
		return;
	wait_s = num_field(row, "wait_ns") / 1e9;
	avg_ms = num_field(row, "avg_wait_ns") / 1e6;
	printf("condvar: %.0f timeouts, %.0f contended, %.3f s waited, "
	       "avg %.1f ms, max %.1f ms\n", num_field(row, "timeouts"),
	       num_field(row, "contended"), wait_s, avg_ms,
	       num_field(row, "max_wait_ns") / 1e6);
	CHECK(num_field(row, "timeouts") == 5, "condvar: 5 timeouts, got %.0f",
	      num_field(row, "timeouts"));
	CHECK(num_field(row, "failed") == 5,
	      "condvar: the timeouts are still failed: 5, got %.0f",
	      num_field(row, "failed"));
	CHECK(num_field(row, "contended") == 0, "condvar: 0 contended, got %.0f",
	      num_field(row, "contended"));
	/*
	 * Each wait lasts at least its 300 ms less the moment between the
	 * workload's clock read and the call; five follow one another in one
	 * thread, so together they fit in the time the counts cover (up to
	 * the snapshot's last update, 0.5 s of slack for the two clocks).
	 * How long past 300 ms each took depends on the machine's load.
	 */
	CHECK(wait_s >= 1.4 && wait_s <= num_field(snap, "elapsed_s") + 0.5,
	      "condvar: between 1.4 s and the %.3f s monitored waited, got "
	      "%.3f s", num_field(snap, "elapsed_s"), wait_s);
	CHECK(avg_ms >= 280 && fabs(avg_ms * 5 - wait_s * 1e3) < 1,
	      "condvar: avg one wait of at least 280 ms, a fifth of the "
	      "total %.3f s, got %.1f ms", wait_s, avg_ms);
	CHECK(sum_of(row, "threads", "timeouts") == 5 &&
	      sum_of(row, "threads", "count") == 0,
	      "condvar: its thread's 5 timeouts, 0 waits that got it; got %.0f "
	      "and %.0f", sum_of(row, "threads", "timeouts"),
	      sum_of(row, "threads", "count"));
}

/* On every row: AVG > 0 and AVG <= MAX when it waited. */
static void test_avg_within_max(const cJSON *snap)
{
	const cJSON *row;
	int waited = 0, bad = 0;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		double avg = num_field(row, "avg_wait_ns");
		double max = num_field(row, "max_wait_ns");

		if (num_field(row, "wait_ns") <= 0)
			continue;
		waited++;
		if (!(avg > 0 && avg <= max)) {
			bad++;
			printf("  %s row: avg %.0f ns, max %.0f ns\n",
			       str_field(row, "type"), avg, max);
		}
	}
	CHECK(waited >= 2, "rows that waited: the condvar's and the mutex's, "
	      "got %d", waited);
	CHECK(bad == 0, "rows with waits: 0 < avg <= max, %d broke it", bad);
}

/* The line of type's rows at a call site in fn, or NULL. */
static const cJSON *line_in(const cJSON *snap, const char *type, const char *fn)
{
	const cJSON *row;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const char *sym = str_field(cJSON_GetObjectItem(row, "site"), "symbol");

		if (strcmp(str_field(row, "type"), type) == 0 && sym &&
		    strcmp(sym, fn) == 0)
			return row;
	}
	return NULL;
}

/* wl_condtimed stay, preloaded, once its waits are over; its pid or -1. */
static pid_t start_stay(void)
{
	char preload[sizeof(library) + 16], *out = tmp_path("stay.out");
	pid_t pid;
	char *text = NULL;

	unlink(out);
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", library);
	pid = start_with((char *[]){ workload, "stay", NULL },
			 &(struct start_opts){ .out = out, .env = preload });
	for (int i = 0; i < 1000; i++) {
		free(text);
		text = slurp_file(out, "");
		if (strstr(text, "done"))
			break;
		usleep(10000);
	}
	CHECK(strstr(text, "done") != NULL, "wl_condtimed stay: its waits end, "
	      "got output \"%s\"", text);
	free(text);
	return pid;
}

/*
 * The caller of the wrapper, wait_until()'s waits given to it from the
 * wrapper row's stacks: five timeouts, 0 < avg <= max on every line.
 */
static void test_wrapper_caller_timeouts(void)
{
	char *json = tmp_path("wrapped.json"), pidstr[16];
	pid_t pid = start_stay();
	const cJSON *line, *st;
	double stack_timeouts = 0;
	cJSON *snap;
	struct run r;

	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	unlink(json);
	r = run_capture((char *[]){ qsptop, "-b", "-d", "0.2", "-n", "2", "-j",
				    json, "--wrapper", "wait_until", "-p",
				    pidstr, NULL }, RUN_TIMEOUT_MS, 0);
	kill(pid, SIGTERM);
	wait_status(pid, 10000);
	CHECK(r.status == 0, "-p --wrapper: qsptop exits 0, got %d: %s",
	      r.status, r.err);
	run_free(&r);
	snap = load_json(json);
	CHECK(snap != NULL, "-p --wrapper: a snapshot was written");
	if (snap == NULL)
		return;
	line = line_in(snap, "condvar", "sleeper_main");
	CHECK(line != NULL, "-p --wrapper: a condvar line at sleeper_main");
	if (line) {
		printf("wrapped condvar: %.0f timeouts, %.3f s waited, avg %.1f ms, "
		       "max %.1f ms\n", num_field(line, "timeouts"),
		       num_field(line, "wait_ns") / 1e9,
		       num_field(line, "avg_wait_ns") / 1e6,
		       num_field(line, "max_wait_ns") / 1e6);
		CHECK(num_field(line, "timeouts") == 5,
		      "-p --wrapper: the caller's line has 5 timeouts, got %.0f",
		      num_field(line, "timeouts"));
		cJSON_ArrayForEach(st, cJSON_GetObjectItem(line, "stacks"))
			stack_timeouts += num_field(st, "timeouts");
		CHECK(stack_timeouts == 5,
		      "-p --wrapper: its stacks hold the 5 timeouts, got %.0f",
		      stack_timeouts);
	}
	test_avg_within_max(snap);
	cJSON_Delete(snap);
}

/* The mutex fought over: contended waits, a share of calls that waited. */
static void test_mutex_fight(const cJSON *snap)
{
	const cJSON *row;
	double best = 0;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		if (strcmp(str_field(row, "type"), "mutex") == 0 &&
		    num_field(row, "contended") > best)
			best = num_field(row, "contended");
	}
	CHECK(best > 0, "the fought-over mutex waited: contended %.0f", best);
}

/*
 * The last table's condvar line: ACQ 0, and every call waited. The line
 * ends with WAIT/s WAIT ACQ CONT% AVG MAX, whatever the site holds.
 */
static void test_condvar_share(const char *tables)
{
	const char *line = NULL, *at = tables;
	char copy[512], *tok[64];
	size_t len;
	int n = 0;

	while ((at = strstr(at, "\ncondvar ")) != NULL)
		line = ++at;
	CHECK(line != NULL, "a condvar line in the batch tables");
	if (line == NULL)
		return;
	len = strcspn(line, "\n");
	snprintf(copy, sizeof(copy), "%.*s", (int)len, line);
	for (char *save, *t = strtok_r(copy, " ", &save); t && n < 64;
	     t = strtok_r(NULL, " ", &save))
		tok[n++] = t;
	CHECK(n >= 8, "condvar line: at least 8 columns, got %d", n);
	if (n < 8)
		return;
	CHECK(strcmp(tok[n - 4], "0") == 0, "condvar: ACQ 0, got %s", tok[n - 4]);
	CHECK(strcmp(tok[n - 3], "100.0") == 0, "condvar: CONT%% 100.0, got %s",
	      tok[n - 3]);
}

/* The first row of the last table: the fought-over mutex, not the condvar. */
static void test_mutex_first(const char *tables)
{
	const char *titles = NULL, *at = tables;

	while ((at = strstr(at, "\nTYPE ")) != NULL)
		titles = ++at;
	CHECK(titles != NULL, "a table in the batch output");
	if (titles == NULL)
		return;
	at = strchr(titles, '\n');
	CHECK(at && strncmp(at + 1, "mutex ", 6) == 0,
	      "default view: the mutex first, the idle condvar after; got "
	      "\"%.60s\"", at ? at + 1 : "");
}

/* --type mutex: only mutex rows, in the tables and the snapshot. */
static void test_type_mutex(void)
{
	char *tables = NULL, *at;
	cJSON *snap = run_condtimed("--type", "mutex", &tables);
	const cJSON *row;
	int rows = 0, others = 0;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		rows++;
		others += strcmp(str_field(row, "type"), "mutex") != 0;
	}
	CHECK(snap && rows > 0 && others == 0,
	      "--type mutex: JSON rows %d, of other types %d", rows, others);
	at = tables ? strstr(tables, "\ncondvar ") : NULL;
	CHECK(tables && at == NULL, "--type mutex: no condvar line in the tables");
	free(tables);
	cJSON_Delete(snap);
}

int main(void)
{
	char *tables = NULL;
	cJSON *snap;

	find_paths("/tmp/qsptop-timeouts-XXXXXX", "wl_condtimed");
	signal(SIGPIPE, SIG_IGN);
	snap = run_condtimed(NULL, NULL, &tables);
	test_condvar_share(tables ? tables : "");
	test_mutex_first(tables ? tables : "");
	free(tables);
	CHECK(snap != NULL, "a snapshot was written");
	if (snap) {
		test_condvar_timeouts(snap);
		test_avg_within_max(snap);
		test_mutex_fight(snap);
		cJSON_Delete(snap);
	}
	test_wrapper_caller_timeouts();
	test_type_mutex();
	remove_tmp();
	return check_summary();
}
