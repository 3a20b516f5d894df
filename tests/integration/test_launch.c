/*
 * End-to-end tests through the real programs: qsptop launches (or connects
 * to) workloads under the real collector, and the JSON it writes must hold
 * exactly the counts the workloads know they made, at the right lines.
 */
#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../common/proto.h"
#include "../../common/sockpath.h"
#include "../unit/check.h"
#include "harness.h"

#define RUN_TIMEOUT_MS 60000

/* Run argv with the usual deadline and no limits. */
static struct run run_argv(char *const argv[])
{
	return run_capture(argv, RUN_TIMEOUT_MS, 0);
}

/* A symbol names function fn: "fn", or a demangled "fn(args)". */
static int symbol_is(const char *sym, const char *fn)
{
	size_t n = strlen(fn);

	return sym && strncmp(sym, fn, n) == 0 && (sym[n] == '\0' || sym[n] == '(');
}

/* Totals over the rows of a function and lock type. */
struct sums {
	int rows;
	double acq, failed, wait;
	const cJSON *first;
};

static struct sums sum_rows(const cJSON *snap, const char *symbol,
			    const char *type)
{
	const cJSON *row;
	struct sums s = { 0 };

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const cJSON *site = cJSON_GetObjectItem(row, "site");
		const char *sym = str_field(site, "symbol");

		if (!symbol_is(sym, symbol) || strcmp(str_field(row, "type"), type))
			continue;
		if (s.rows++ == 0)
			s.first = row;
		s.acq += num_field(row, "acquisitions");
		s.failed += num_field(row, "failed");
		s.wait += num_field(row, "wait_ns");
	}
	return s;
}

/* Launch a workload mode under qsptop -b --json; returns the snapshot. */
static cJSON *launch_mode(const char *mode, struct run *r, const char *expect)
{
	char *json = tmp_path("snap.json");
	char *argv[] = { qsptop, "-b", "-d", "0.2", "-j", json, "--",
			 workload, (char *)mode, (char *)expect, NULL };

	unlink(json);
	*r = run_argv(argv);
	return load_json(json);
}

/* Compare every line of the workload's expectations with the snapshot. */
static void check_expectations(const char *mode, const cJSON *snap,
			       const char *expect)
{
	char sym[128], type[32];
	long acq, failed, min_wait;
	int lines = 0;
	FILE *f = fopen(expect, "r");

	while (f && fscanf(f, "%127s %31s %ld %ld %ld", sym, type, &acq, &failed,
			   &min_wait) == 5) {
		struct sums s = sum_rows(snap, sym, type);

		lines++;
		CHECK(s.rows > 0, "%s: no %s row for %s", mode, type, sym);
		CHECK(s.acq == acq, "%s: %s %s acquisitions: expected %ld, got %.0f",
		      mode, sym, type, acq, s.acq);
		CHECK(s.failed == failed, "%s: %s %s failed: expected %ld, got %.0f",
		      mode, sym, type, failed, s.failed);
		CHECK(s.wait >= min_wait, "%s: %s wait: expected >= %ld ns, got %.0f",
		      mode, sym, min_wait, s.wait);
	}
	if (f)
		fclose(f);
	CHECK(lines > 0, "%s: the workload wrote its expectations", mode);
}

/*
 * Every contended wait is in a row's stacks, unwound or counted without a
 * stack: their counts sum to the row's contended count and their waits to
 * its wait (timed-out waits are in both, though not acquisitions).
 */
static void check_stack_sums(const char *mode, const cJSON *snap, int *sampled)
{
	const cJSON *row, *st;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		double count = 0, wait = 0;

		cJSON_ArrayForEach(st, cJSON_GetObjectItem(row, "stacks")) {
			count += num_field(st, "count");
			wait += num_field(st, "wait_ns");
			*sampled += cJSON_IsTrue(cJSON_GetObjectItem(st, "sampled"));
		}
		CHECK(count == num_field(row, "contended") && wait == num_field(row, "wait_ns"),
		      "%s: %s's stacks sum to %.0f waits and %.0f ns, the row has %.0f and %.0f",
		      mode, str_field(cJSON_GetObjectItem(row, "site"), "symbol"), count, wait,
		      num_field(row, "contended"), num_field(row, "wait_ns"));
	}
}

/* The collector's own locks (libunwind's included) never show as rows. */
static void check_no_own_rows(const char *mode, const cJSON *snap)
{
	const cJSON *row;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const char *module = str_field(cJSON_GetObjectItem(row, "site"), "module");

		CHECK(!module || (!strstr(module, "libunwind") && !strstr(module, "libqsptop")),
		      "%s: a row from the collector's own library %s", mode, module);
	}
}

static void test_exact_counts(void)
{
	int sampled = 0;

	static const char *const modes[] = { "mutex", "rwlock", "spin", "trylock",
		"cond", "block", "timed", "churn", "fork", "variants", "wrapper" };

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		char *expect = tmp_path("expect");
		struct run r;
		cJSON *snap = launch_mode(modes[i], &r, expect);

		CHECK(r.status == 0, "%s: qsptop exited %d: %s", modes[i], r.status, r.err);
		CHECK(snap != NULL, "%s: snapshot is valid JSON", modes[i]);
		if (snap) {
			CHECK_STR(str_field(snap, "state"), "exited");
			CHECK(num_field(snap, "dropped") == 0, "%s: nothing dropped", modes[i]);
			check_expectations(modes[i], snap, expect);
			check_no_own_rows(modes[i], snap);
			check_stack_sums(modes[i], snap, &sampled);
		}
		cJSON_Delete(snap);
		run_free(&r);
	}
	/* Whether waits get sampled depends on their length; test_unwind checks
	 * the budget itself. */
	printf("waits counted without a stack in these runs: %d rows\n", sampled);
}

/* A site resolves to its function, the workload's file and the call's line. */
static void check_site_line(const cJSON *snap, const char *symbol,
			    const char *type, const char *source,
			    const char *marker)
{
	size_t slen = strlen(source);
	int want = marker_line(source, marker);
	struct sums s = sum_rows(snap, symbol, type);
	const cJSON *site = s.first ? cJSON_GetObjectItem(s.first, "site") : NULL;
	const char *file = site ? str_field(site, "file") : NULL;
	const char *module = site ? str_field(site, "module") : NULL;

	CHECK(site != NULL, "%s: has a site", symbol);
	if (site == NULL)
		return;
	CHECK(file && strlen(file) >= slen && !strcmp(file + strlen(file) - slen, source),
	      "%s: file expected .../%s, got %s", symbol, source, file ? file : "null");
	CHECK(want > 0 && num_field(site, "line") == want,
	      "%s: line expected %d, got %.0f", symbol, want, num_field(site, "line"));
	CHECK(module && strstr(module, "/wl_"), "%s: module is the workload, got %s",
	      symbol, module ? module : "null");
	CHECK(str_field(s.first, "object") != NULL, "%s: object is an address", symbol);
}

/* C++ standard locks, through libstdc++, count like the pthread calls. */
static void test_cxx_locks(void)
{
	char *json = tmp_path("cxx.json"), *expect = tmp_path("cxx.expect");
	char cxx[PATH_MAX];
	char *argv[] = { qsptop, "-b", "-d", "0.2", "-j", json, "--", cxx, expect,
			 NULL };
	struct run r;
	cJSON *snap;

	join(cxx, build, "/tests/wl_cxx");
	r = run_argv(argv);
	snap = load_json(json);
	CHECK(r.status == 0, "wl_cxx: exit %d: %s", r.status, r.err);
	if (snap) {
		check_expectations("cxx", snap, expect);
		check_site_line(snap, "use_mutex", "mutex", "cxx.cc", "cxx_mutex");
	}
	CHECK(snap != NULL, "wl_cxx: snapshot written");
	cJSON_Delete(snap);
	run_free(&r);
}

static void test_sites_and_batch_output(void)
{
	struct run r;
	cJSON *snap = launch_mode("mutex", &r, tmp_path("expect"));

	if (snap) {
		check_site_line(snap, "site_mutex_a", "mutex", "locks.c", "mutex_a");
		check_site_line(snap, "site_mutex_b", "mutex", "locks.c", "mutex_b");
		CHECK_STR(str_field(snap, "coalesce"), "none");
		CHECK_STR(str_field(snap, "sort"), "wait");
		CHECK(num_field(snap, "schema") == 1, "schema is 1");
		CHECK(num_field(snap, "threads") >= 4, "threads >= 4");
	}
	CHECK(strstr(r.out, "qsptop " QSPTOP_VERSION " - pid ") != NULL,
	      "batch header printed: %.200s", r.out);
	CHECK(strstr(r.out, "CALL SITE") && strstr(r.out, "WAIT/s"),
	      "batch column titles printed");
	CHECK(strstr(r.out, "site_mutex_a+0x") && strstr(r.out, "locks.c:"),
	      "batch row shows function+offset and file:line");
	cJSON_Delete(snap);
	run_free(&r);
	snap = launch_mode("spin", &r, tmp_path("expect"));
	if (snap)
		check_site_line(snap, "site_spin", "spinlock", "locks.c", "spin");
	cJSON_Delete(snap);
	run_free(&r);
	snap = launch_mode("rwlock", &r, tmp_path("expect"));
	if (snap) {
		check_site_line(snap, "site_read", "rwlock-read", "locks.c", "rwlock_read");
		check_site_line(snap, "site_write", "rwlock-write", "locks.c", "rwlock_write");
	}
	cJSON_Delete(snap);
	run_free(&r);
}

/* Coalescing by site folds objects; the totals stay the same. */
static void test_coalesce_and_sort_flags(void)
{
	char *json = tmp_path("coalesce.json"), *expect = tmp_path("expect");
	char *argv[] = { qsptop, "-b", "-m", "object", "-o", "count", "-j", json,
			 "--", workload, "mutex", expect, NULL };
	struct run r = run_argv(argv);
	cJSON *snap = load_json(json);
	const cJSON *rows = snap ? cJSON_GetObjectItem(snap, "rows") : NULL;
	const cJSON *row;
	double last = -1;
	int sorted = 1;

	CHECK(r.status == 0, "-m object -o count: exit %d: %s", r.status, r.err);
	CHECK_STR(snap ? str_field(snap, "coalesce") : NULL, "object");
	CHECK_STR(snap ? str_field(snap, "sort") : NULL, "count");
	cJSON_ArrayForEach(row, rows) {
		double acq = num_field(row, "acquisitions");

		if (last >= 0 && acq > last)
			sorted = 0;
		last = acq;
	}
	CHECK(sorted, "rows sorted by acquisitions, high to low");
	CHECK(cJSON_GetArraySize(rows) >= 2, "one row per lock");
	cJSON_Delete(snap);
	run_free(&r);
}

static void test_exit_status(void)
{
	struct run r;
	cJSON *snap = launch_mode("status", &r, tmp_path("expect"));
	struct sums s = sum_rows(snap, "site_mutex_a", "mutex");
	char *argv[] = { qsptop, "-b", "--", "/bin/sh", "-c", "kill -9 $$", NULL };

	CHECK(r.status == 42, "exit status of the command passed on: expected 42, got %d",
	      r.status);
	CHECK(s.acq == 1, "counts of a command that exits with a status: got %.0f", s.acq);
	cJSON_Delete(snap);
	run_free(&r);
	r = run_argv(argv);
	CHECK(r.status == 128 + 9, "killed command: expected status 137, got %d", r.status);
	CHECK(strstr(r.err, "killed by signal 9") != NULL, "says it was killed: %s", r.err);
	run_free(&r);
}

/*
 * A target that closes every descriptor and reuses the numbers: the
 * collector must leave the new files alone (the workload checks) and the
 * target must finish normally. Its counts are lost with the connection.
 */
static void test_host_closes_collector_fds(void)
{
	char *expect = tmp_path("expect");
	char *argv[] = { qsptop, "-b", "-d", "0.1", "--", workload, "closefds",
			 expect, NULL };
	struct run r = run_argv(argv);

	CHECK(r.status == 0, "closefds: the target finished cleanly, got %d: %s",
	      r.status, r.err);
	run_free(&r);
}

/*
 * A qsptop that stops reading (SIGSTOP) must not hold up the target, and
 * once it reads again it gets everything: updates merge, nothing is lost.
 */
static void test_slow_client_merges(void)
{
	char *expect = tmp_path("many.expect"), *json = tmp_path("many.json");
	char *argv[] = { qsptop, "-b", "-d", "0.02", "-j", json, "--", workload,
			 "manyrows", expect, NULL };
	char *out = tmp_path("many.out"), *err = tmp_path("many.err");
	pid_t q;
	int status, finished = 0;
	cJSON *snap;

	unlink(expect);
	q = start(argv, out, err);
	usleep(150000);
	kill(q, SIGSTOP);
	for (int i = 0; i < 3000 && !finished; i++) {
		finished = access(expect, F_OK) == 0;
		usleep(10000);
	}
	kill(q, SIGCONT);
	CHECK(finished, "the target ran to its end while qsptop was stopped");
	status = wait_status(q, RUN_TIMEOUT_MS);
	snap = load_json(json);
	CHECK(status == 0, "manyrows: exit %d", status);
	if (snap)
		check_expectations("manyrows", snap, expect);
	CHECK(snap != NULL, "manyrows: snapshot written");
	cJSON_Delete(snap);
}

/* --- stacks and wrappers: `wl_locks wrapper` --- */

/* Launch `wl_locks wrapper` on cmd under qsptop with extra flags. */
static cJSON *launch_wrapper(const char *cmd, const char *flag, const char *arg,
			     const char *folded, struct run *r)
{
	char *json = tmp_path("wrap.json"), *expect = tmp_path("wrap.expect");
	char *argv[16];
	int n = 0;

	argv[n++] = qsptop;
	argv[n++] = "-b";
	argv[n++] = "-d";
	argv[n++] = "0.2";
	argv[n++] = "-j";
	argv[n++] = json;
	argv[n++] = "--folded";
	argv[n++] = (char *)folded;
	if (flag) {
		argv[n++] = (char *)flag;
		argv[n++] = (char *)arg;
	}
	argv[n++] = "--";
	argv[n++] = (char *)cmd;
	argv[n++] = "wrapper";
	argv[n++] = expect;
	argv[n] = NULL;
	unlink(json);
	unlink(folded);
	*r = run_argv(argv);
	return load_json(json);
}

/* The least wait the workload says went through a path, or -1. */
static double expected_path_wait(const char *path)
{
	char word[64], name[64], line[256];
	long count, wait;
	double least = -1;
	FILE *f = fopen(tmp_path("wrap.expect"), "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s %63s %ld %ld", word, name, &count, &wait) == 4 &&
		    strcmp(word, "contended") == 0 && strcmp(name, path) == 0)
			least = (double)wait;
	}
	if (f)
		fclose(f);
	return least;
}

/* A stack's first frame (innermost) whose symbol names fn, or NULL. */
static const cJSON *frame_of(const cJSON *stack, const char *fn)
{
	const cJSON *frame;

	cJSON_ArrayForEach(frame, cJSON_GetObjectItem(stack, "frames"))
		if (symbol_is(str_field(frame, "symbol"), fn))
			return frame;
	return NULL;
}

/* The heaviest stack of a row that goes through function fn, or NULL. */
static const cJSON *stack_through(const cJSON *row, const char *fn)
{
	const cJSON *stack, *best = NULL;

	cJSON_ArrayForEach(stack, cJSON_GetObjectItem(row, "stacks"))
		if (frame_of(stack, fn) && (best == NULL ||
		    num_field(stack, "wait_ns") > num_field(best, "wait_ns")))
			best = stack;
	return best;
}

static double stacked_wait(const cJSON *row)
{
	const cJSON *stack;
	double sum = 0;

	cJSON_ArrayForEach(stack, cJSON_GetObjectItem(row, "stacks"))
		sum += num_field(stack, "wait_ns");
	return sum;
}

/*
 * With --wrapper app_lock the two paths are rows of their own, 3:1, and
 * the wrapper's row is empty: every acquisition counts on its caller.
 */
static void test_wrapper_splits_paths(void)
{
	char *folded = tmp_path("split.folded");
	struct run r;
	cJSON *snap = launch_wrapper(workload, "--wrapper", "app_lock", folded, &r);
	struct sums a = sum_rows(snap, "path_a", "mutex");
	struct sums b = sum_rows(snap, "path_b", "mutex");
	struct sums lock = sum_rows(snap, "app_lock", "mutex");
	double want_a = expected_path_wait("path_a"), want_b = expected_path_wait("path_b");

	CHECK(r.status == 0, "--wrapper app_lock: exit %d: %s", r.status, r.err);
	CHECK(snap != NULL, "--wrapper app_lock: snapshot written");
	CHECK(want_a > 0 && want_b > 0, "the workload wrote its path expectations");
	CHECK(a.rows == 1 && num_field(a.first, "contended") >= 1 && a.wait >= want_a,
	      "path_a row: expected contended >= 1 and wait >= %.0f, got %d rows, "
	      "wait %.0f", want_a, a.rows, a.wait);
	CHECK(b.rows == 1 && b.wait >= want_b, "path_b row: expected wait >= %.0f, "
	      "got %d rows, wait %.0f", want_b, b.rows, b.wait);
	CHECK(a.wait > b.wait && b.wait > 0 && a.wait / b.wait > 2 && a.wait / b.wait < 4.5,
	      "path_a:path_b wait should be about 3:1, got %.0f:%.0f", a.wait, b.wait);
	CHECK(lock.rows == 0, "the app_lock row is gone: its calls counted on "
	      "their callers (%d rows, %.0f acquisitions)", lock.rows, lock.acq);
	CHECK(a.acq == 1001 && b.acq == 501, "every acquisition on its caller: "
	      "path_a 1001, path_b 501, got %.0f and %.0f", a.acq, b.acq);
	if (a.first)
		check_site_line(snap, "path_a", "mutex", "locks.c", "path_a");
	cJSON_Delete(snap);
	run_free(&r);
}

/* A folded line: frames, one space, an integer. Returns the frames' end. */
static char *folded_split(char *line, double *value)
{
	char *space = strrchr(line, ' '), *end;

	if (space == NULL || space == line || strchr(line, ' ') != space ||
	    !isdigit((unsigned char)space[1]))
		return NULL;
	*value = strtod(space + 1, &end);
	if (*end != '\0' || strstr(line, ";;") || line[0] == ';' || space[-1] == ';')
		return NULL;
	*space = '\0';
	return space;
}

/* Whether folded frames belong to the line at fn on lock leaf. */
static int folded_at(const char *frames, const char *fn, const char *leaf)
{
	char tail[256], unwound[256];
	size_t n = strlen(frames);

	snprintf(tail, sizeof(tail), ";%s;%s", fn, leaf);
	snprintf(unwound, sizeof(unwound), "%s;[not_unwound];%s", fn, leaf);
	return (n >= strlen(tail) && strcmp(frames + n - strlen(tail), tail) == 0) ||
	       strcmp(frames, unwound) == 0;
}

/* Every line parses; returns the sum of those at fn on leaf (-1: bad line). */
static double folded_sum(const char *path, const char *fn, const char *leaf,
			 int *lines)
{
	char *text = slurp_file(path, ""), *save = NULL, *line;
	double sum = 0, value;

	*lines = 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		(*lines)++;
		if (folded_split(line, &value) == NULL) {
			fprintf(stderr, "bad folded line: %s\n", line);
			sum = -1;
			break;
		}
		if (folded_at(line, fn, leaf))
			sum += value;
	}
	free(text);
	return sum;
}

/* Without --wrapper: one app_lock row, whose stacks show both paths. */
static void test_wrapper_row_stacks(void)
{
	char *folded = tmp_path("whole.folded");
	char leaf[64];
	struct run r;
	cJSON *snap = launch_wrapper(workload, NULL, NULL, folded, &r);
	struct sums lock = sum_rows(snap, "app_lock", "mutex");
	const cJSON *sa = lock.first ? stack_through(lock.first, "path_a") : NULL;
	const cJSON *sb = lock.first ? stack_through(lock.first, "path_b") : NULL;
	const cJSON *fa = sa ? frame_of(sa, "path_a") : NULL;
	const char *file = fa ? str_field(fa, "file") : NULL;
	int want_line = marker_line("locks.c", "path_a"), lines = 0;
	double sum;

	CHECK(r.status == 0, "wrapper: exit %d: %s", r.status, r.err);
	if (snap)
		check_expectations("wrapper", snap, tmp_path("wrap.expect"));
	CHECK(lock.rows == 1, "wrapper: one app_lock mutex row, got %d", lock.rows);
	CHECK(lock.first && cJSON_GetArraySize(cJSON_GetObjectItem(lock.first, "stacks")) >= 2,
	      "app_lock: at least two stacks");
	CHECK(sa && sb && sa != sb, "app_lock: one stack through path_a, one through path_b");
	CHECK(sa && num_field(sa, "wait_ns") >= expected_path_wait("path_a") &&
	      num_field(sa, "count") >= 1, "path_a's stack: wait >= %.0f, got %.0f",
	      expected_path_wait("path_a"), sa ? num_field(sa, "wait_ns") : -1);
	CHECK(sb && num_field(sb, "wait_ns") >= expected_path_wait("path_b") &&
	      num_field(sb, "wait_ns") < num_field(sa, "wait_ns"),
	      "path_b's stack: wait >= %.0f and below path_a's, got %.0f",
	      expected_path_wait("path_b"), sb ? num_field(sb, "wait_ns") : -1);
	CHECK(fa && num_field(fa, "line") == want_line && file && strstr(file, "locks.c"),
	      "path_a's frame: expected locks.c:%d, got %s:%.0f", want_line,
	      file ? file : "null", fa ? num_field(fa, "line") : -1);
	CHECK(sa && symbol_is(str_field(cJSON_GetArrayItem(cJSON_GetObjectItem(sa, "frames"), 0),
					"symbol"), "app_lock"),
	      "frame #0 of a stack is the call site, in app_lock");
	snprintf(leaf, sizeof(leaf), "mutex@%s",
		 lock.first && str_field(lock.first, "object") ?
		 str_field(lock.first, "object") : "?");
	sum = folded_sum(folded, "app_lock", leaf, &lines);
	CHECK(lines > 0 && sum >= 0, "the folded file parses (%d lines)", lines);
	CHECK(lock.first && sum == stacked_wait(lock.first) && sum > 0,
	      "folded lines of app_lock sum to its stacked wait: expected %.0f, got %.0f",
	      lock.first ? stacked_wait(lock.first) : -1, sum);
	cJSON_Delete(snap);
	run_free(&r);
}

/* Start and end of function fn in binary path (nm), as file addresses. */
static int nm_range(const char *path, const char *fn, double *lo, double *hi)
{
	char cmd[PATH_MAX + 64], line[512], name[256], type[8];
	unsigned long long addr, size;
	FILE *p;
	int found = 0;

	snprintf(cmd, sizeof(cmd), "nm -S '%s'", path);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		if (sscanf(line, "%llx %llx %7s %255s", &addr, &size, type, name) == 4 &&
		    strcmp(name, fn) == 0) {
			*lo = (double)addr;
			*hi = (double)(addr + size);
			found = 1;
		}
	}
	if (p)
		pclose(p);
	return found;
}

/* Whether a stack has a frame at a module offset inside [lo, hi). */
static int frame_in(const cJSON *stack, double lo, double hi)
{
	const cJSON *frame;

	cJSON_ArrayForEach(frame, cJSON_GetObjectItem(stack, "frames")) {
		double off = num_field(frame, "offset");

		if (str_field(frame, "symbol") == NULL && off > lo && off <= hi)
			return 1;
	}
	return 0;
}

/* Frames in the stripped module: module+offset, nothing made up. */
static int stripped_frames_clean(const cJSON *row, const char *module)
{
	const cJSON *stack, *frame;
	int seen = 0;

	cJSON_ArrayForEach(stack, cJSON_GetObjectItem(row, "stacks")) {
		cJSON_ArrayForEach(frame, cJSON_GetObjectItem(stack, "frames")) {
			const char *m = str_field(frame, "module");

			if (m == NULL || strcmp(m, module) != 0)
				continue;
			seen++;
			if (str_field(frame, "symbol") || str_field(frame, "file") ||
			    !cJSON_IsNull(cJSON_GetObjectItem(frame, "line")) ||
			    num_field(frame, "offset") <= 0)
				return 0;
		}
	}
	return seen;
}

/* A stripped workload: stack frames as module+offset at the right code. */
static void test_stripped_stacks(void)
{
	char *stripped = tmp_path("wl_stripped"), cmd[3 * PATH_MAX];
	double a_lo = 0, a_hi = 0, b_lo = 0, b_hi = 0, most = -1;
	const cJSON *row, *rows, *heavy = NULL, *stack, *stacks;
	int a = 0, b = 0;
	struct run r;
	cJSON *snap;

	snprintf(cmd, sizeof(cmd), "objcopy --strip-all '%s' '%s'", workload, stripped);
	CHECK(system(cmd) == 0, "objcopy --strip-all made %s", stripped);
	CHECK(nm_range(workload, "path_a", &a_lo, &a_hi) &&
	      nm_range(workload, "path_b", &b_lo, &b_hi), "nm finds path_a and path_b");
	snap = launch_wrapper(stripped, NULL, NULL, tmp_path("strip.folded"), &r);
	CHECK(r.status == 0 && snap, "stripped: exit %d: %s", r.status, r.err);
	rows = snap ? cJSON_GetObjectItem(snap, "rows") : NULL;
	cJSON_ArrayForEach(row, rows)
		if (num_field(row, "wait_ns") > most) {
			most = num_field(row, "wait_ns");
			heavy = row;
		}
	CHECK(heavy && !str_field(cJSON_GetObjectItem(heavy, "site"), "symbol"),
	      "stripped: the heaviest row's site has no symbol");
	CHECK(heavy && stripped_frames_clean(heavy, stripped) > 0,
	      "stripped: frames in the workload have module and offset, no symbol, "
	      "file or line");
	stacks = heavy ? cJSON_GetObjectItem(heavy, "stacks") : NULL;
	cJSON_ArrayForEach(stack, stacks) {
		a += frame_in(stack, a_lo, a_hi);
		b += frame_in(stack, b_lo, b_hi);
	}
	CHECK(a == 1 && b == 1, "stripped: one stack returns into path_a's code, one "
	      "into path_b's (module offsets), got %d and %d", a, b);
	cJSON_Delete(snap);
	run_free(&r);
}

/*
 * The snapshot cannot be written at the end (file size limit, as a full
 * disk would): a clear error, a non-zero exit, and the old file intact.
 */
static void test_json_write_failure_keeps_old_file(void)
{
	char *json = tmp_path("full.json");
	char *argv[] = { qsptop, "-b", "-j", json, "--", workload, "mutex",
			 tmp_path("expect"), NULL };
	FILE *f = fopen(json, "w");
	struct run r;
	char *text;

	fputs("previous snapshot\n", f);
	fclose(f);
	/* The snapshot is larger than this limit, stderr is not. */
	r = run_capture(argv, RUN_TIMEOUT_MS, 1000);
	text = slurp_file(json, "");
	CHECK(r.status == 1, "JSON write failure: expected exit 1, got %d", r.status);
	CHECK(strstr(r.err, "cannot write the JSON snapshot") &&
	      strstr(r.err, "File too large"), "says why: %s", r.err);
	CHECK_STR(text, "previous snapshot\n");
	free(text);
	run_free(&r);
}

/* -n ends a launched command without calling it a failure. */
static void test_iterations_end_launch(void)
{
	char *argv[] = { qsptop, "-b", "-d", "0.1", "-n", "2", "--", workload,
			 "idle", tmp_path("expect"), NULL };
	struct run r = run_argv(argv);

	CHECK(r.status == 0, "-n 2 on a command that runs forever: exit %d", r.status);
	CHECK(r.err[0] == '\0', "-n 2: nothing on stderr, got: %s", r.err);
	CHECK(strstr(r.out, "CALL SITE") != NULL, "-n 2 printed tables");
	run_free(&r);
}

/* Programs the target execs do not inherit the collector. */
static void test_exec_not_followed(void)
{
	char *json = tmp_path("exec.json"), *expect = tmp_path("expect");
	char cmd[PATH_MAX * 3];
	char *argv[] = { qsptop, "-b", "-j", json, "--", "/bin/sh", "-c", cmd, NULL };
	struct run r;
	cJSON *snap;

	snprintf(cmd, sizeof(cmd), "%s mutex %s", workload, expect);
	r = run_argv(argv);
	snap = load_json(json);
	CHECK(r.status == 0, "sh -c workload: exit %d", r.status);
	CHECK(snap && sum_rows(snap, "site_mutex_a", "mutex").rows == 0,
	      "the exec'd workload was not followed");
	cJSON_Delete(snap);
	run_free(&r);
}

/* One line on stderr, starting with "qsptop: ", and the expected status. */
static void check_error(char *const argv[], int status, const char *needle)
{
	struct run r = run_argv(argv);

	CHECK(r.status == status, "%s %s: expected status %d, got %d (%s)", argv[1],
	      argv[2] ? argv[2] : "", status, r.status, r.err);
	CHECK(strncmp(r.err, "qsptop: ", 8) == 0 && strstr(r.err, needle),
	      "error mentions '%s': %s", needle, r.err);
	run_free(&r);
}

static void test_usage_and_errors(void)
{
	char *help[] = { qsptop, "--help", NULL };
	char *version[] = { qsptop, "-V", NULL };
	struct run r = run_argv(help);
	static const char *const flags[] = { "-p, --pid", "-d, --delay",
		"-n, --iterations", "-b, --batch", "-o, --sort", "-m, --coalesce",
		"-j, --json", "--folded FILE", "--wrapper GLOB", "std::mutex::lock*",
		"qemu_mutex_lock_impl", "-h, --help", "-V, --version", "-- CMD" };

	CHECK(r.status == 0, "--help exits 0");
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		CHECK(strstr(r.out, flags[i]) != NULL, "--help documents %s", flags[i]);
	run_free(&r);
	r = run_argv(version);
	CHECK(r.status == 0 && strstr(r.out, QSPTOP_VERSION), "-V prints the version");
	run_free(&r);
	check_error((char *[]){ qsptop, "-x", NULL }, 2, "unknown");
	check_error((char *[]){ qsptop, "-o", "bogus", "--", "true", NULL }, 2, "sort key");
	check_error((char *[]){ qsptop, "-m", "bogus", "--", "true", NULL }, 2, "coalesce");
	check_error((char *[]){ qsptop, "-d", "0", "--", "true", NULL }, 2, "-d");
	check_error((char *[]){ qsptop, "-b", NULL }, 2, "nothing to watch");
	check_error((char *[]){ qsptop, "-p", "4000000", NULL }, 1, "no process");
	check_error((char *[]){ qsptop, "-b", "--", "/nonexistent/cmd", NULL }, 127,
		    "cannot run");
	check_error((char *[]){ qsptop, "-j", "/nonexistent-dir/x.json", "--", "true",
				NULL }, 1, "/nonexistent-dir/x.json");
	check_error((char *[]){ qsptop, "--folded", "/nonexistent-dir/x.folded", "--",
				"true", NULL }, 1, "cannot write the folded stacks");
	check_error((char *[]){ qsptop, "--wrapper", "", "--", "true", NULL }, 2,
		    "--wrapper");
}

/* Start the idle workload preloaded and wait until it has locked. */
static pid_t start_idle(const char *expect)
{
	char preload[sizeof(library) + 16];
	pid_t pid;

	unlink(expect);
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", library);
	pid = start_with((char *[]){ workload, "idle", (char *)expect, NULL },
			 &(struct start_opts){ .env = preload });
	for (int i = 0; i < 500 && access(expect, F_OK) != 0; i++)
		usleep(10000);
	usleep(50000);
	return pid;
}

static int connect_socket(pid_t pid)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	sockpath_target(addr.sun_path, sizeof(addr.sun_path), geteuid(), pid);
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Garbage sent to a collector ends that connection and nothing else. */
static void check_collector_refuses_garbage(pid_t pid)
{
	struct timeval tv = { 5, 0 };
	char buf[65536];
	int fd = connect_socket(pid);
	ssize_t n;

	CHECK(fd >= 0, "connect to the preloaded process");
	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (send(fd, "GET / HTTP/1.0\r\n\r\nxxxxxxxxxxxxxxxxx", 35, MSG_NOSIGNAL) < 0)
		perror("send");
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		;
	CHECK(n == 0, "the collector closed a connection that sent garbage");
	close(fd);
	CHECK(kill(pid, 0) == 0, "the target survives garbage on its socket");
}

static void test_connect_to_preloaded(void)
{
	char *expect = tmp_path("idle.expect"), *json = tmp_path("p.json");
	char pidstr[16];
	pid_t pid = start_idle(expect);
	struct run r;
	cJSON *snap;

	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	check_collector_refuses_garbage(pid);
	r = run_argv((char *[]){ qsptop, "-b", "-d", "0.1", "-n", "2", "-j", json,
				 "-p", pidstr, NULL });
	snap = load_json(json);
	CHECK(r.status == 0, "-p PID -n 2: exit %d: %s", r.status, r.err);
	CHECK(sum_rows(snap, "site_mutex_a", "mutex").acq == 1000,
	      "-p sees the 1000 acquisitions made before it connected");
	CHECK_STR(snap ? str_field(snap, "state") : NULL, "running");
	CHECK(kill(pid, 0) == 0, "the target keeps running after qsptop leaves");
	cJSON_Delete(snap);
	run_free(&r);

	/* Two clients at once: each gets its own, complete view. */
	{
		char *j1 = tmp_path("two1.json"), *j2 = tmp_path("two2.json");
		char *a1[] = { qsptop, "-b", "-d", "0.1", "-n", "3", "-j", j1, "-p", pidstr, NULL };
		char *a2[] = { qsptop, "-b", "-d", "0.1", "-n", "3", "-j", j2, "-p", pidstr, NULL };
		pid_t q1 = start(a1, tmp_path("two1.out"), tmp_path("two1.err"));
		pid_t q2 = start(a2, tmp_path("two2.out"), tmp_path("two2.err"));
		int s1 = wait_status(q1, 20000), s2 = wait_status(q2, 20000);
		cJSON *k1 = load_json(j1), *k2 = load_json(j2);

		CHECK(s1 == 0 && s2 == 0, "two clients at once: exits %d and %d", s1, s2);
		CHECK(sum_rows(k1, "site_mutex_a", "mutex").acq == 1000 &&
		      sum_rows(k2, "site_mutex_a", "mutex").acq == 1000,
		      "two clients at once: each sees all 1000 acquisitions");
		cJSON_Delete(k1);
		cJSON_Delete(k2);
	}

	/* The collector vanishes under a connected qsptop. */
	unlink(json);
	{
		char *argv[] = { qsptop, "-b", "-d", "0.1", "-j", json, "-p", pidstr, NULL };
		char *out = tmp_path("vanish.out"), *err = tmp_path("vanish.err");
		pid_t q = start(argv, out, err);
		char *text;
		int status;

		usleep(400000);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		status = wait_status(q, 10000);
		text = slurp_file(err, "");
		CHECK(status == 1, "lost collector: expected exit 1, got %d", status);
		CHECK(strstr(text, "lost the collector of PID") != NULL,
		      "lost collector says so: %s", text);
		free(text);
		snap = load_json(json);
		CHECK(sum_rows(snap, "site_mutex_a", "mutex").acq == 1000,
		      "the snapshot is still written after the collector vanished");
		cJSON_Delete(snap);
	}
}

/*
 * A process that never had the collector: qsptop loads it, watches, leaves,
 * and the process runs on as before.
 */
static void test_no_collector_injects(void)
{
	char *json = tmp_path("inj.json");
	pid_t pid = fork();
	char pidstr[16];
	struct run r;
	cJSON *snap;

	if (pid == 0) {
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(126);
	}
	usleep(100000);
	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	r = run_argv((char *[]){ qsptop, "-b", "-d", "0.1", "-n", "2", "-j", json,
				 "-p", pidstr, NULL });
	snap = load_json(json);
	CHECK(r.status == 0, "-p on a process without collector: exit %d: %s",
	      r.status, r.err);
	CHECK(strstr(r.out, "(injected)") != NULL, "the header says it was injected");
	CHECK_STR(snap ? str_field(snap, "state") : NULL, "running");
	CHECK(kill(pid, 0) == 0, "the process runs on after qsptop leaves");
	cJSON_Delete(snap);
	run_free(&r);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Entries in a /proc directory of a process (threads, descriptors). */
static int count_entries(pid_t pid, const char *what)
{
	char path[64], cmd[128], *text;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	snprintf(cmd, sizeof(cmd), "ls %s | wc -l > %s", path, tmp_path("count"));
	if (system(cmd) != 0)
		return -1;
	text = slurp_file(tmp_path("count"), "");
	n = atoi(text);
	free(text);
	return n;
}

/* Attach and detach 50 times: no crash, no hang, nothing leaked. */
static void check_attach_cycles(pid_t pid, const char *pidstr)
{
	int threads = count_entries(pid, "task"), fds = count_entries(pid, "fd");
	int failures = 0;

	for (int i = 0; i < 50; i++) {
		struct run r = run_argv((char *[]){ qsptop, "-b", "-d", "0.02", "-n", "1",
						     "-p", (char *)pidstr, NULL });

		failures += r.status != 0;
		run_free(&r);
	}
	CHECK(failures == 0, "50 attach/detach cycles: %d failed", failures);
	CHECK(kill(pid, 0) == 0, "the process survives 50 cycles");
	/* The last session's socket closes just after qsptop exits. */
	for (int i = 0; i < 100 && count_entries(pid, "fd") != fds; i++)
		usleep(20000);
	CHECK(count_entries(pid, "task") == threads, "no thread leaked: %d, then %d",
	      threads, count_entries(pid, "task"));
	CHECK(count_entries(pid, "fd") == fds, "no descriptor leaked: %d, then %d",
	      fds, count_entries(pid, "fd"));
}

/*
 * qsptop -p on a busy process that never had the collector: the collector
 * is loaded, counts arrive, quitting restores the process; a second -p
 * finds it dormant and wakes it; the process's own results stay right.
 */
static void test_attach_running(void)
{
	char *expect = tmp_path("busy.expect"), *json = tmp_path("busy.json");
	char pidstr[16];
	double first, second;
	struct run r;
	cJSON *snap;
	pid_t pid;
	int status;

	unlink(expect);
	pid = start_with((char *[]){ workload, "busy", expect, NULL },
			 &(struct start_opts){ 0 });
	for (int i = 0; i < 500 && access(expect, F_OK) != 0; i++)
		usleep(10000);
	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	r = run_argv((char *[]){ qsptop, "-b", "-d", "0.2", "-n", "3", "-j", json,
				 "-p", pidstr, NULL });
	snap = load_json(json);
	first = sum_rows(snap, "site_busy", "mutex").acq;
	CHECK(r.status == 0 && strstr(r.out, "(injected)"),
	      "-p on a running process: exit %d, injected: %s", r.status, r.err);
	CHECK(first > 0, "-p on a running process sees its locks (%.0f)", first);
	cJSON_Delete(snap);
	run_free(&r);
	r = run_argv((char *[]){ qsptop, "-b", "-d", "0.2", "-n", "3", "-j", json,
				 "-p", pidstr, NULL });
	snap = load_json(json);
	second = sum_rows(snap, "site_busy", "mutex").acq;
	CHECK(r.status == 0 && strstr(r.out, "(connected)"),
	      "a second -p connects to the loaded collector: exit %d: %s", r.status, r.err);
	CHECK(second > 0, "a second -p wakes it: counts go on (%.0f)", second);
	/* Its own baseline: neither the first session nor the dormant time. */
	CHECK(num_field(snap, "elapsed_s") > 0 && num_field(snap, "elapsed_s") < 2.0,
	      "the second session's elapsed_s is its own: %.2f s",
	      num_field(snap, "elapsed_s"));
	cJSON_Delete(snap);
	run_free(&r);
	check_attach_cycles(pid, pidstr);
	kill(pid, SIGTERM);
	status = wait_status(pid, 10000);
	CHECK(status == 0, "the process attached to finished its work correctly: %d", status);
}

/*
 * A process that listens where its own collector would and sends bytes to
 * whoever connects: a collector gone bad, inside its process (qsptop
 * refuses a socket served by anyone else).
 */
static pid_t impostor(const void *bytes, size_t len)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int ready[2], fd, cfd;
	char dir[108], c = 0;
	pid_t pid;

	if (pipe(ready) < 0)
		return -1;
	pid = fork();
	if (pid != 0) {
		close(ready[1]);
		if (read(ready[0], &c, 1) != 1)
			perror("impostor");
		close(ready[0]);
		return pid;
	}
	alarm(30);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	sockpath_dir(dir, sizeof(dir), geteuid());
	sockpath_make_private(dir);
	sockpath_self(addr.sun_path, sizeof(addr.sun_path));
	unlink(addr.sun_path);
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    listen(fd, 1) < 0 || write(ready[1], "r", 1) != 1)
		_exit(1);
	cfd = accept(fd, NULL, NULL);
	if (send(cfd, bytes, len, MSG_NOSIGNAL) < 0)
		_exit(1);
	pause();
	_exit(0);
}

/* qsptop -p against an impostor that sends bytes; returns qsptop's stderr. */
static char *against_impostor(const void *bytes, size_t len, int *status)
{
	pid_t target = impostor(bytes, len);
	char pidstr[16], path[108];
	char *out = tmp_path("fake.out"), *err = tmp_path("fake.err");
	pid_t q;

	snprintf(pidstr, sizeof(pidstr), "%d", (int)target);
	q = start((char *[]){ qsptop, "-b", "-p", pidstr, NULL }, out, err);
	*status = wait_status(q, 10000);
	sockpath_target(path, sizeof(path), geteuid(), target);
	unlink(path);
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
	return slurp_file(err, "");
}

static void test_hostile_collector(void)
{
	struct proto_hello h = { .magic = PROTO_MAGIC, .version = 99 };
	struct wbuf b = { 0 };
	int status;
	char *err = against_impostor("\xff\xff\xff\xff garbage garbage", 24, &status);

	CHECK(status == 1, "garbage from the socket: expected exit 1, got %d", status);
	CHECK(strstr(err, "garbage from the collector") != NULL, "says garbage: %s", err);
	free(err);
	proto_put_hello(&b, &h);
	err = against_impostor(b.data, b.len, &status);
	CHECK(status == 1, "version mismatch: expected exit 1, got %d", status);
	CHECK(strstr(err, "version mismatch") != NULL, "says version mismatch: %s", err);
	free(err);
	wbuf_free(&b);
	h.version = PROTO_VERSION;
	proto_put_hello(&b, &h);
	proto_put_stack(&b, &(struct proto_stack){ .id = 0xfffffff0u, .depth = 1,
						   .frames = { 0x1000 } });
	err = against_impostor(b.data, b.len, &status);
	CHECK(status == 1, "bad stack id: expected exit 1, got %d", status);
	CHECK(strstr(err, "collector sent a stack id out of range") != NULL,
	      "says the stack id is out of range: %s", err);
	free(err);
	wbuf_free(&b);
}

/* The rows of each table in batch output: the counts, in order. */
static size_t table_rows(const char *out, size_t *rows, size_t max)
{
	size_t n = 0;
	const char *p = out;

	while ((p = strstr(p, "\nTYPE ")) != NULL && n < max) {
		size_t k = 0;

		p = strchr(p + 1, '\n');
		while (p && p[1] && p[1] != '\n') {
			k++;
			p = strchr(p + 1, '\n');
		}
		rows[n++] = k;
		if (p == NULL)
			break;
	}
	return n;
}

/*
 * -N limits each batch table to its first N rows (the header says of how
 * many), --json keeps every row; "all" is the default; bad counts are
 * usage errors, and --help documents it.
 */
static void test_batch_rows_limit(void)
{
	char *json = tmp_path("rows.json"), *expect = tmp_path("expect");
	char *argv[] = { qsptop, "-b", "-d", "0.2", "-N", "3", "-j", json,
			 "--", workload, "manyrows", expect, NULL };
	struct run r;
	size_t rows[64], n, over = 0;
	cJSON *snap;

	unlink(json);
	r = run_argv(argv);
	snap = load_json(json);
	n = table_rows(r.out, rows, 64);
	for (size_t i = 0; i < n; i++)
		over += rows[i] > 3;
	CHECK(r.status == 0 && n >= 2 && over == 0 && rows[n - 1] == 3,
	      "-N 3: %zu tables, %zu of them longer than 3 rows (exit %d)", n,
	      over, r.status);
	CHECK(strstr(r.out, " - rows 3 of 2000\n") != NULL,
	      "-N 3: the header says 3 rows of 2000: %.300s", r.out);
	CHECK(snap && sum_rows(snap, "many_worker", "mutex").rows == 2000,
	      "-N 3: the snapshot keeps all 2000 rows");
	cJSON_Delete(snap);
	run_free(&r);
	argv[5] = "all";
	r = run_argv(argv);
	n = table_rows(r.out, rows, 64);
	CHECK(r.status == 0 && n >= 2 && rows[n - 1] == 2000 &&
	      strstr(r.out, " - rows ") == NULL,
	      "-N all: every row, the header as without -N (%zu tables)", n);
	run_free(&r);
	check_error((char *[]){ qsptop, "-N", "0", "--", "true", NULL }, 2, "-N");
	check_error((char *[]){ qsptop, "--rows", "x", "--", "true", NULL }, 2,
		    "-N");
	r = run_argv((char *[]){ qsptop, "--help", NULL });
	CHECK(strstr(r.out, "-N, --rows N"), "--help documents -N, --rows");
	run_free(&r);
}

int main(void)
{
	char cmd[PATH_MAX + 16];

	find_paths("/tmp/qsptop-test-XXXXXX", "wl_locks");
	signal(SIGPIPE, SIG_IGN);
	test_usage_and_errors();
	test_exact_counts();
	test_sites_and_batch_output();
	test_cxx_locks();
	test_wrapper_splits_paths();
	test_wrapper_row_stacks();
	test_stripped_stacks();
	test_coalesce_and_sort_flags();
	test_exit_status();
	test_exec_not_followed();
	test_host_closes_collector_fds();
	test_iterations_end_launch();
	test_batch_rows_limit();
	test_slow_client_merges();
	test_json_write_failure_keeps_old_file();
	test_no_collector_injects();
	test_attach_running();
	test_connect_to_preloaded();
	test_hostile_collector();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
	return check_summary();
}
