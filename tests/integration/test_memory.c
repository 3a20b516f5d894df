/*
 * --max-memory bounds everything the collector maps in its target, the
 * unwind tables included: a target that loads a library with a large
 * .eh_frame (libwl_bigeh.so, generated) and contends on a lock, watched
 * with --max-memory 8, both launched and through -p, peaks at most
 * 8 + 4 MiB above the same program run bare. Its waits are all counted,
 * and their stacks still unwound (through the modules whose tables fit).
 */
#include <cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "harness.h"

#define CAP_MB 8
#define SLACK_MB 4
#define HANG_MS 60000

static char biglib[PATH_MAX];

/* How many tables qsptop's batch output at path holds. */
static int tables_in(const char *path)
{
	char *text = slurp_file(path, ""), *p = text;
	int n = 0;

	while ((p = strstr(p, "CALL SITE")) != NULL) {
		n++;
		p++;
	}
	free(text);
	return n;
}

/* Wait until path holds at least n tables; false after HANG_MS. */
static bool wait_tables(const char *path, int n)
{
	for (long end = monotonic_ms() + HANG_MS; tables_in(path) < n; usleep(20000))
		if (monotonic_ms() >= end)
			return false;
	return true;
}

/* The pid the workload noted as ready in res, waited for; -1 after HANG_MS. */
static pid_t wait_ready(const char *res)
{
	pid_t pid;

	for (long end = monotonic_ms() + HANG_MS;; usleep(20000)) {
		pid = note_pid(res, "ready", 0, NULL);
		if (pid > 0 || monotonic_ms() >= end)
			return pid;
	}
}

/* wl_memory's peak RSS (kB) alone; -1 if it failed. */
static long bare_peak_kb(void)
{
	char *res = tmp_path("bare.res");
	struct run r;

	unlink(res);
	r = run_capture((char *[]){ workload, biglib, res, "now", NULL },
			HANG_MS, 0);
	run_free(&r);
	return r.status == 0 ? result_number(res, "vmhwm_kb") : -1;
}

/*
 * The snapshot at path: the worker's contended waits on its row, and
 * whether they have a stack.
 */
static double worker_waits(const char *path, bool *stacks)
{
	cJSON *snap = load_json(path);
	const cJSON *row;
	double n = 0;

	*stacks = false;
	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const cJSON *site = cJSON_GetObjectItem(row, "site");

		if (!names_function(str_field(site, "symbol"), "worker"))
			continue;
		n += num_field(row, "contended");
		*stacks |= cJSON_GetArraySize(cJSON_GetObjectItem(row, "stacks")) > 0;
	}
	cJSON_Delete(snap);
	return n;
}

/*
 * The workload's peak RSS watched in mode ("launch" or "attach"), once
 * qsptop has scanned twice after the library was loaded; -1 on failure.
 */
static long watched_peak_kb(const char *mode)
{
	char *res = tmp_path("w.res"), *out = tmp_path("w.out");
	char *json = tmp_path("w.json"), cap[16], pidstr[16];
	bool launch = strcmp(mode, "launch") == 0;
	struct args a = { 0 };
	pid_t q, w = -1, pid;
	int n0, status;
	double waits;
	bool stacks;

	unlink(res);
	unlink(json);
	snprintf(cap, sizeof(cap), "%d", CAP_MB);
	args_add(&a, qsptop, "-b", "-d", "0.2", "--max-memory", cap, "-j", json, NULL);
	if (launch) {
		args_add(&a, "--", workload, biglib, res, "wait", NULL);
		q = start(a.v, out, out);
		pid = wait_ready(res);
	} else {
		w = start((char *[]){ workload, biglib, res, "wait", NULL }, NULL, NULL);
		pid = wait_ready(res);
		snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
		args_add(&a, "-p", pidstr, NULL);
		q = start(a.v, out, out);
	}
	n0 = tables_in(out);
	CHECK(pid > 0 && wait_tables(out, n0 + 2),
	      "%s: the workload got ready and qsptop printed two tables after",
	      mode);
	if (pid > 0)
		kill(pid, SIGUSR2);
	if (w > 0)
		CHECK(wait_status(w, HANG_MS) == 0, "%s: the workload exits 0", mode);
	/* Either way qsptop ends with the target, after its last update. */
	status = wait_status(q, HANG_MS);
	CHECK(status == 0, "%s: qsptop exits 0, not %d", mode, status);
	waits = worker_waits(json, &stacks);
	CHECK(waits == result_number(res, "waits") && waits > 0 && stacks,
	      "%s: the worker's %ld waits counted (%.0f), with stacks (%s)",
	      mode, result_number(res, "waits"), waits, stacks ? "yes" : "no");
	return result_number(res, "vmhwm_kb");
}

static void test_peak(const char *mode)
{
	long bare = bare_peak_kb(), watched = watched_peak_kb(mode);

	printf("%s, --max-memory %d: peak RSS %ld kB watched, %ld kB bare "
	       "(+%ld kB)\n", mode, CAP_MB, watched, bare, watched - bare);
	CHECK(bare > 0 && watched > 0 &&
	      watched <= bare + ((CAP_MB + SLACK_MB) << 10),
	      "%s: peak RSS at most %d MiB over bare: %ld kB watched, %ld kB "
	      "bare", mode, CAP_MB + SLACK_MB, watched, bare);
}

int main(void)
{
	find_paths("/tmp/qsptop-memory-XXXXXX", "wl_memory");
	join(biglib, build, "/tests/libwl_bigeh.so");
	test_peak("launch");
	test_peak("attach");
	remove_tmp();
	return check_summary();
}
