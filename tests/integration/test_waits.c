/*
 * Waits in progress, through the real program on wl_waits (issue 25,
 * collector side): a thread blocked for seconds shows in the snapshot
 * taken during its wait, both in its row (the wait so far counts) and in
 * "waiting" with its holder; once waits end, each counts once. While
 * held (issue 24): what a holder did while the waiter waited, as a share
 * of the wait it caused: in read(), computing, waiting for another lock.
 */
#include <arpa/inet.h>
#include <cJSON.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../unit/check.h"
#include "harness.h"

enum { RUN_TIMEOUT_MS = 120000 };

static char *results;	/* the workload's TIDs: result_number() */

/* qsptop -b --json over wl_waits MODE, with extra options; its snapshot. */
static cJSON *run_waits(const char *mode, char *const *opts)
{
	char *json = tmp_path("waits.json");
	struct args a = { 0 };

	results = tmp_path("results");
	args_add(&a, qsptop, "-b", "-w", "200", "-j", json, NULL);
	args_add_all(&a, opts);
	args_add(&a, "--", workload, (char *)mode, results, NULL);
	unlink(results);
	return snapshot_of_run(a.v, json, RUN_TIMEOUT_MS, mode);
}

/* The entry of "waiting" for thread tid, or NULL. */
static const cJSON *waiting_of(const cJSON *snap, long tid)
{
	const cJSON *w;

	cJSON_ArrayForEach(w, cJSON_GetObjectItem(snap, "waiting"))
		if ((long)num_field(w, "tid") == tid)
			return w;
	return NULL;
}

/*
 * A snapshot taken while a thread has been blocked for seconds: its row
 * counts the wait so far, and "waiting" lists it behind its holder.
 */
static void test_wait_in_progress(void)
{
	cJSON *snap = run_waits("sleep", (char *[]){ "-d", "1", "-n", "4", NULL });
	const cJSON *row = row_at_symbol(snap, "waiter_blocks"), *w;
	long waiter = result_number(results, "waiter");
	long holder = result_number(results, "holder");
	const char *sym, *state;

	CHECK(row != NULL, "sleep: a row at waiter_blocks");
	CHECK(num_field(row, "wait_ns") >= 2e9,
	      "sleep: the row counts the wait so far: expected >= 2 s, got %.0f ns",
	      num_field(row, "wait_ns"));
	CHECK(num_field(row, "contended") == 1,
	      "sleep: the wait in progress is one contended acquisition, got %.0f",
	      num_field(row, "contended"));
	w = waiting_of(snap, waiter);
	CHECK(w != NULL, "sleep: \"waiting\" lists the waiter %ld", waiter);
	sym = str_field(cJSON_GetObjectItem(w, "site"), "symbol");
	CHECK(sym && strcmp(sym, "waiter_blocks") == 0,
	      "sleep: the waiter is blocked at waiter_blocks, got %s",
	      sym ? sym : "none");
	CHECK(str_field(w, "type") && strcmp(str_field(w, "type"), "mutex") == 0,
	      "sleep: on a mutex, got %s", str_field(w, "type") ?
	      str_field(w, "type") : "none");
	CHECK(num_field(w, "blocked_ns") >= 2e9,
	      "sleep: blocked for >= 2 s, got %.0f ns", num_field(w, "blocked_ns"));
	CHECK((long)num_field(w, "held_by") == holder,
	      "sleep: held by the holder %ld, got %.0f", holder,
	      num_field(w, "held_by"));
	sym = str_field(cJSON_GetArrayItem(cJSON_GetObjectItem(w, "stack"), 1),
			"symbol");
	CHECK(sym && strcmp(sym, "waiter") == 0,
	      "sleep: the waiter's stack goes on to its caller, waiter, got %s",
	      sym ? sym : "none");
	state = str_field(w, "holder_state");
	CHECK(state && strcmp(state, "syscall:pause") == 0,
	      "sleep: the holder is in pause(), got %s", state ? state : "none");
	cJSON_Delete(snap);
}

/* Batch lists under the table a thread blocked for seconds, with its holder. */
static void test_batch_lists_long_waits(void)
{
	char *res = tmp_path("results"), held[64];
	struct run r;
	const char *line;

	unlink(res);
	r = run_capture((char *[]){ qsptop, "-b", "-d", "1", "-n", "3", "-w",
				    "200", "--", workload, "sleep", res, NULL },
			RUN_TIMEOUT_MS, 0);
	snprintf(held, sizeof(held), "held by %ld in pause()",
		 result_number(res, "holder"));
	line = strstr(r.out, "blocked on locks:");
	line = line ? strstr(line, "at waiter_blocks") : NULL;
	CHECK(line != NULL, "batch: expected \"blocked on locks:\" then the "
	      "waiter at waiter_blocks, got:\n%s", r.out);
	CHECK(line && strstr(line, held) &&
	      strchr(line, '\n') > strstr(line, held),
	      "batch: expected the waiter's line to say \"%s\", got:\n%s",
	      held, r.out);
	run_free(&r);
}

/*
 * Waits that ended count once each: no estimate is left over. (A loaded
 * machine may let a round's waiter come late, after the hold: 1 to 5.)
 */
static void test_ended_waits_count_once(void)
{
	cJSON *snap = run_waits("compute", (char *[]){ "-d", "0.1", NULL });
	const cJSON *row = row_at_symbol(snap, "waiter_blocks");
	double waits = num_field(row, "contended") + num_field(row, "timeouts");

	CHECK(row != NULL, "compute: a row at waiter_blocks");
	CHECK(waits >= 1 && waits <= 5 && waits == histogram_sum(row),
	      "compute: each ended wait counts once: expected the histogram's "
	      "%.0f waits (1 to 5), got %.0f", histogram_sum(row), waits);
	CHECK(num_field(row, "wait_ns") >= num_field(row, "max_wait_ns") &&
	      num_field(row, "wait_ns") <= 5 * num_field(row, "max_wait_ns"),
	      "compute: the wait is at most 5 times the longest: %.0f, max %.0f",
	      num_field(row, "wait_ns"), num_field(row, "max_wait_ns"));
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(snap, "waiting")) == 0,
	      "compute: nothing waits at the end");
	cJSON_Delete(snap);
}

/*
 * The share that holder_holds' while_held puts in key (a "syscalls.NAME"
 * or a field) of the time its holder spent in its work while the waiter
 * waited: at most the waiter's wait (all of it spent behind holder_holds)
 * and the work's own time as the scene measured it (work_us; a loaded
 * machine adds time between the work and the waiter's wake-up, in which
 * the holder does something else).
 */
static double held_share(const cJSON *snap, const char *mode, const char *key)
{
	const cJSON *row = row_at_symbol(snap, "holder_holds");
	const cJSON *held = cJSON_GetObjectItem(row, "while_held");
	double waited = num_field(row_at_symbol(snap, "waiter_blocks"), "wait_ns");
	double work = (double)result_number(results, "work_us") * 1000;
	double whole = work < waited ? work : waited, ns;

	CHECK(row != NULL && cJSON_IsObject(held),
	      "%s: holder_holds has while_held", mode);
	if (strncmp(key, "syscalls.", 9) == 0)
		ns = num_field(cJSON_GetObjectItem(held, "syscalls"), key + 9);
	else
		ns = num_field(held, key);
	CHECK(whole > 0, "%s: waiter_blocks waited (%.0f ns) behind work "
	      "(%.0f ns)", mode, waited, work);
	return whole > 0 ? ns / whole : 0;
}

/* A holder blocked in read() while it holds the lock: read, >= 80%. */
static void test_held_in_read(void)
{
	cJSON *snap = run_waits("read", (char *[]){ "-d", "0.2", "--holders",
				NULL });
	double share = held_share(snap, "read", "syscalls.read");

	CHECK(share >= 0.8, "read: >= 80%% of the wait behind read() in read(), "
	      "got %.1f%%", 100 * share);
	cJSON_Delete(snap);
}

/*
 * A holder that computes: on a CPU, or runnable when the loaded machine
 * has none free (the split follows the scheduler's own times).
 */
static void test_held_computing(void)
{
	cJSON *snap = run_waits("compute", (char *[]){ "-d", "0.2", "--holders",
				NULL });
	double run = held_share(snap, "compute", "running_ns");
	double ready = held_share(snap, "compute", "runnable_ns");

	CHECK(run + ready >= 0.8 && run > 0,
	      "compute: >= 80%% of the wait behind computing, got %.1f%% "
	      "running and %.1f%% runnable", 100 * run, 100 * ready);
	cJSON_Delete(snap);
}

/* A holder waiting for a second lock: lock_wait, naming that lock's row. */
static void test_held_in_lock_wait(void)
{
	cJSON *snap = run_waits("lock", (char *[]){ "-d", "0.2", "--holders",
				NULL });
	double share = held_share(snap, "lock", "lock_wait_ns");
	const cJSON *held = cJSON_GetObjectItem(row_at_symbol(snap, "holder_holds"),
						"while_held");
	const char *sym = str_field(cJSON_GetObjectItem(held, "lock_wait_site"),
				    "symbol");
	const char *name = str_field(held, "lock_wait_object");

	CHECK(share >= 0.8, "lock: >= 80%% of the wait behind the second lock "
	      "in a lock wait, got %.1f%%", 100 * share);
	CHECK(sym && strcmp(sym, "holder_works") == 0,
	      "lock: the lock waited for is taken at holder_works, got %s",
	      sym ? sym : "none");
	CHECK(name != NULL, "lock: and its object is named");
	cJSON_Delete(snap);
}

/* /metrics of 127.0.0.1:port, by curl; "" when none. */
static char *metrics(int port)
{
	char url[64];
	struct run r;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", port);
	r = run_capture((char *[]){ "curl", "-s", "-m", "10", url, NULL },
			20000, 0);
	free(r.err);
	return r.out;
}

/* Prometheus: one thread blocked at waiter_blocks now, by the gauge. */
static void test_waiting_gauge(void)
{
	const char *want = "qsptop_lock_waiting_threads{site=\"waiter_blocks";
	char where[32], *text = strdup(""), *line;
	int port = free_port();
	long deadline = monotonic_ms() + 30000;
	pid_t pid;

	if (run_quietly((char *[]){ "curl", "--version", NULL }) != 0) {
		printf("SKIP the gauge: curl not installed\n");
		free(text);
		return;
	}
	snprintf(where, sizeof(where), "127.0.0.1:%d", port);
	pid = start((char *[]){ qsptop, "-b", "-n", "0", "-d", "0.3", "--listen",
			       where, "--", workload, "sleep", NULL },
		    tmp_path("gauge.out"), tmp_path("gauge.err"));
	while (!strstr(text, want) && monotonic_ms() < deadline) {
		free(text);
		usleep(200000);
		text = metrics(port);
	}
	line = strstr(text, want);
	CHECK(line && strstr(line, "} 1\n") && strchr(line, '}') ==
	      strstr(line, "} 1\n"), "gauge: expected %s...} 1, got:\n%s",
	      want, text);
	kill(pid, SIGTERM);
	wait_status(pid, RUN_TIMEOUT_MS);
	free(text);
}

int main(void)
{
	find_paths("/tmp/qsptop-waits-XXXXXX", "wl_waits");
	signal(SIGPIPE, SIG_IGN);
	test_wait_in_progress();
	test_ended_waits_count_once();
	test_batch_lists_long_waits();
	test_held_in_read();
	test_held_computing();
	test_held_in_lock_wait();
	test_waiting_gauge();
	remove_tmp();
	return check_summary();
}
