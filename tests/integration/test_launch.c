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
#include "launch.h"

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

/*
 * Every wait is in a row's stacks, unwound or counted without a stack:
 * their counts sum to the row's contended count, their timeouts to its
 * timeouts, and their waits to its wait.
 */
static void check_stack_sums(const char *mode, const cJSON *snap, int *sampled)
{
	const cJSON *row, *st;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		double count = 0, timeouts = 0, wait = 0;

		cJSON_ArrayForEach(st, cJSON_GetObjectItem(row, "stacks")) {
			count += num_field(st, "count");
			timeouts += num_field(st, "timeouts");
			wait += num_field(st, "wait_ns");
			*sampled += cJSON_IsTrue(cJSON_GetObjectItem(st, "sampled"));
		}
		CHECK(count == num_field(row, "contended") &&
		      timeouts == num_field(row, "timeouts") &&
		      wait == num_field(row, "wait_ns"),
		      "%s: %s's stacks sum to %.0f contended, %.0f timeouts and "
		      "%.0f ns, the row has %.0f, %.0f and %.0f", mode,
		      str_field(cJSON_GetObjectItem(row, "site"), "symbol"), count,
		      timeouts, wait, num_field(row, "contended"),
		      num_field(row, "timeouts"), num_field(row, "wait_ns"));
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

/*
 * A SIGINT sent to qsptop alone is passed on to the command, as Ctrl-C
 * would reach it: the command dies of it, and qsptop with status 130.
 */
static void test_sigint_passed_on(void)
{
	char *out = tmp_path("sigint.out"), *err = tmp_path("sigint.err");
	char *argv[] = { qsptop, "-b", "-d", "0.1", "--", workload, "idle",
			 tmp_path("expect"), NULL };
	long deadline = monotonic_ms() + RUN_TIMEOUT_MS;
	pid_t q = start(argv, out, err);
	char *text = NULL;
	int status, child = 0;

	/* Once a table shows the workload's row, its main() runs. */
	while (monotonic_ms() < deadline &&
	       !((text = slurp_file(out, "")) && strstr(text, "site_mutex_a"))) {
		free(text);
		text = NULL;
		usleep(20000);
	}
	if (text && strstr(text, "- pid "))
		child = atoi(strstr(text, "- pid ") + 6);
	kill(q, SIGINT);
	status = wait_status(q, RUN_TIMEOUT_MS);
	free(text);
	text = slurp_file(err, "");
	CHECK(status == 130, "SIGINT to qsptop: expected status 130 (the command "
	      "died of it), got %d: %s", status, text);
	CHECK(child > 0 && kill(child, 0) < 0, "SIGINT to qsptop: the command "
	      "(pid %d) is gone", child);
	free(text);
}

/*
 * With --no-follow-exec, programs the target execs do not inherit the
 * collector: the exec'd program's own memory map holds no libqsptop, and
 * its counts reach no snapshot. (The collector clears QSPTOP_FD before
 * any exec, so a collector loaded into the exec'd program would still
 * send nothing: only its map shows it.)
 */
static void test_exec_not_followed(void)
{
	char *json = tmp_path("exec.json"), *expect = tmp_path("expect");
	char *maps = tmp_path("exec.maps");
	char cmd[PATH_MAX * 4];
	char *argv[] = { qsptop, "-b", "--no-follow-exec", "-j", json, "--",
			 "/bin/sh", "-c", cmd, NULL };
	struct run r;
	cJSON *snap;
	char *text;

	snprintf(cmd, sizeof(cmd), "cat /proc/self/maps > '%s'; exec %s mutex %s",
		 maps, workload, expect);
	r = run_argv(argv);
	snap = load_json(json);
	text = slurp_file(maps, "");
	CHECK(r.status == 0, "--no-follow-exec sh -c workload: exit %d", r.status);
	CHECK(strstr(text, "[stack]") != NULL,
	      "the exec'd cat wrote its memory map: got \"%.80s\"", text);
	CHECK(strstr(text, "libqsptop") == NULL,
	      "--no-follow-exec, the exec'd cat: expected no libqsptop in its "
	      "map, got: %s", strstr(text, "libqsptop") ? strstr(text, "libqsptop") : "");
	CHECK(snap && sum_rows(snap, "site_mutex_a", "mutex").rows == 0,
	      "--no-follow-exec: the exec'd workload was not followed");
	free(text);
	cJSON_Delete(snap);
	run_free(&r);
}

/*
 * By default the program the launched command execs is watched: qsptop
 * -- sh -c 'exec WORKLOAD' counts exactly what WORKLOAD counts, and the
 * header and the snapshot name the exec'd program.
 */
static void test_exec_followed(void)
{
	char *json = tmp_path("exec.json"), *expect = tmp_path("expect");
	char cmd[PATH_MAX * 4], name[PATH_MAX + 16];
	char *argv[] = { qsptop, "-b", "-d", "0.2", "-j", json, "--", "/bin/sh",
			 "-c", cmd, NULL };
	struct run r;
	cJSON *snap;

	snprintf(cmd, sizeof(cmd), "exec %s mutex %s", workload, expect);
	snprintf(name, sizeof(name), "%s mutex", workload);
	unlink(json);
	r = run_argv(argv);
	snap = load_json(json);
	CHECK(r.status == 0, "sh -c 'exec workload': exit %d: %s", r.status, r.err);
	CHECK(snap != NULL, "sh -c 'exec workload': snapshot is valid JSON");
	if (snap) {
		check_expectations("exec mutex", snap, expect);
		CHECK(strstr(str_field(snap, "command"), name) != NULL,
		      "the snapshot names the exec'd program: expected \"%s\", "
		      "got \"%s\"", name, str_field(snap, "command"));
	}
	CHECK(strstr(r.out, name) != NULL, "the batch header names the exec'd "
	      "program \"%s\": got %.300s", name, r.out);
	cJSON_Delete(snap);
	run_free(&r);
}

/*
 * -n holds whatever the launched command execs: -n 2 on sh -c 'exec sleep
 * 600' prints two tables and ends the sleep, long before it would end.
 */
static void test_exec_iterations(void)
{
	char *pidfile = tmp_path("exec.pid"), cmd[PATH_MAX + 64], *text;
	char *argv[] = { qsptop, "-b", "-d", "0.2", "-n", "2", "--", "/bin/sh",
			 "-c", cmd, NULL };
	struct run r;
	pid_t pid;
	bool gone;

	snprintf(cmd, sizeof(cmd), "echo $$ > '%s'; exec sleep 600", pidfile);
	r = run_capture(argv, 30000, 0);
	text = slurp_file(pidfile, "0");
	pid = (pid_t)atoi(text);
	gone = pid > 0 && kill(pid, 0) < 0;
	CHECK(r.status == 0, "-n 2 on sh -c 'exec sleep 600': expected exit 0 "
	      "within 30 s, got %d", r.status);
	CHECK(strstr(r.out, "sleep 600") && strstr(r.out, "CALL SITE"),
	      "-n 2 printed tables naming sleep 600: got %.300s", r.out);
	CHECK(gone, "-n 2: the exec'd sleep (pid %d) is gone", (int)pid);
	if (pid > 0 && !gone)
		kill(pid, SIGKILL);
	free(text);
	run_free(&r);
}

/* Read up to max PIDs, one a line, from path; how many. */
static int read_pids(const char *path, pid_t *pids, int max)
{
	FILE *f = fopen(path, "r");
	int n = 0, pid;

	while (f && n < max && fscanf(f, "%d", &pid) == 1)
		pids[n++] = pid;
	if (f)
		fclose(f);
	return n;
}

/* Whether pid is gone (or a zombie nobody waits for) within timeout_ms. */
static bool gone_within(pid_t pid, long timeout_ms)
{
	long deadline = monotonic_ms() + timeout_ms;
	char path[64], *stat;
	bool gone;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	do {
		stat = slurp_file(path, "");
		gone = kill(pid, 0) < 0 ||
		       (strrchr(stat, ')') && strrchr(stat, ')')[2] == 'Z');
		free(stat);
		if (!gone)
			usleep(20000);
	} while (!gone && monotonic_ms() < deadline);
	return gone;
}

/*
 * SIGTERM to qsptop ends the whole tree it launched: the shell, its two
 * background children, and an orphan whose parent exited first; by PID,
 * each one checked. The shell and its children ignore SIGTERM, so that
 * only the SIGKILL after the grace period ends them.
 */
static void test_sigterm_ends_tree(void)
{
	char *pidfile = tmp_path("tree.pids"), *out = tmp_path("tree.out");
	char *err = tmp_path("tree.err"), cmd[PATH_MAX + 256];
	char *argv[] = { qsptop, "-b", "-d", "0.2", "--", "/bin/sh", "-c", cmd,
			 NULL };
	long deadline = monotonic_ms() + RUN_TIMEOUT_MS;
	pid_t q, pids[4];
	int n = 0, status;

	unlink(pidfile);
	snprintf(cmd, sizeof(cmd), "trap '' TERM; (sleep 600 & echo $! >> '%1$s'); "
		 "sleep 600 & echo $! >> '%1$s'; sleep 600 & echo $! >> '%1$s'; "
		 "echo $$ >> '%1$s'; wait", pidfile);
	q = start(argv, out, err);
	while (monotonic_ms() < deadline &&
	       (n = read_pids(pidfile, pids, 4)) < 4)
		usleep(20000);
	CHECK(n == 4, "the launched tree wrote its 4 PIDs: got %d", n);
	kill(q, SIGTERM);
	status = wait_status(q, RUN_TIMEOUT_MS);
	CHECK(status == 0, "SIGTERM to qsptop: expected exit 0, got %d", status);
	for (int i = 0; i < n; i++) {
		bool gone = gone_within(pids[i], 10000);

		CHECK(gone, "SIGTERM to qsptop: process %d of the launched tree "
		      "(%s) is gone", (int)pids[i], i == 0 ? "an orphan" :
		      i == 3 ? "the shell" : "a child of the shell");
		if (!gone)
			kill(pids[i], SIGKILL);
	}
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
		"-j, --json", "--folded FILE", "--folded-holders FILE",
		"--wrapper GLOB", "std::mutex::lock*",
		"qemu_mutex_lock_impl", "-h, --help", "-V, --version", "-- CMD" };
	struct check_tally documented = { 0 };

	CHECK(r.status == 0, "--help exits 0");
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		TALLY(&documented, strstr(r.out, flags[i]) != NULL,
		      "no \"%s\"", flags[i]);
	CHECK_TALLY(&documented, "--help documents every option");
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
	find_paths("/tmp/qsptop-test-XXXXXX", "wl_locks");
	signal(SIGPIPE, SIG_IGN);
	test_usage_and_errors();
	test_exact_counts();
	test_sites_and_batch_output();
	test_cxx_locks();
	test_coalesce_and_sort_flags();
	test_exit_status();
	test_exec_not_followed();
	test_exec_followed();
	test_exec_iterations();
	test_sigterm_ends_tree();
	test_host_closes_collector_fds();
	test_iterations_end_launch();
	test_sigint_passed_on();
	test_batch_rows_limit();
	test_slow_client_merges();
	test_json_write_failure_keeps_old_file();
	remove_tmp();
	return check_summary();
}
