/*
 * The threads view from outside (qsptop -p PID --no-inject), on programs
 * started without qsptop (tests/workloads/stuck.c): an AB/BA deadlock is
 * one deadlock of its two threads with their call sites, a third thread
 * waits behind it, and the process stays deadlocked exactly as it was;
 * a lock's holder blocked in read() on a pipe ends the chain there; a
 * holder that exited is named so; a read-write lock's waiters point to
 * its writer; a busy process keeps running while it
 * is looked at; and when loading the collector fails (no thread can be
 * borrowed), qsptop -p shows the same view instead of only an error.
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

enum { READY_MS = 5000, BLOCKED_MS = 10000, RUN_MS = 30000, STOP_MS = 10000 };

/* A workload started for a test: its PID and output file. */
struct target {
	pid_t pid;
	char out[PATH_MAX + 32];
};

/* Start wl_stuck MODE and wait for its "ready". */
static bool start_target(struct target *t, const char *mode)
{
	snprintf(t->out, sizeof(t->out), "%s/%s.out", tmp, mode);
	t->pid = start((char *[]){ workload, (char *)mode, NULL }, t->out, t->out);
	return file_has_text(t->out, "ready\n", READY_MS);
}

static void stop_target(struct target *t)
{
	kill(t->pid, SIGKILL);
	wait_status(t->pid, STOP_MS);
}

/* The TID the workload gave its thread name ("tid NAME TID"), or -1. */
static int tid_of(const struct target *t, const char *name)
{
	char what[32];

	snprintf(what, sizeof(what), "tid %s", name);
	return note_pid(t->out, what, 0, NULL);
}

/* Thread tid's /proc syscall line into line. */
static bool syscall_of(pid_t pid, int tid, char *line, size_t size)
{
	char path[96];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, tid);
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	ok = fgets(line, (int)size, f) != NULL;
	fclose(f);
	return ok;
}

/* Wait until thread tid sleeps in futex(2) (202); its syscall line. */
static bool wait_futex(pid_t pid, int tid, char *line, size_t size)
{
	for (long end = monotonic_ms() + BLOCKED_MS; monotonic_ms() < end;
	     usleep(10000))
		if (syscall_of(pid, tid, line, size) && strncmp(line, "202 ", 4) == 0)
			return true;
	return false;
}

/* Run qsptop with args and -j into a fresh file; its run and snapshot. */
static cJSON *view(char *const args[], struct run *r)
{
	char *json = tmp_path("view.json"), *argv[16];
	int n = 0;

	argv[n++] = qsptop;
	argv[n++] = "-b";
	argv[n++] = "-n";
	argv[n++] = "1";
	argv[n++] = "-d";
	argv[n++] = "0.2";
	argv[n++] = "-j";
	argv[n++] = json;
	for (int i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	unlink(json);
	*r = run_capture(argv, RUN_MS, 0);
	return load_json(json);
}

/* The --no-inject view of pid. */
static cJSON *view_outside(pid_t pid, struct run *r)
{
	char pidstr[16];

	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	return view((char *[]){ "-p", pidstr, "--no-inject", NULL }, r);
}

/* The snapshot's "waiting" entry of thread tid, or NULL. */
static const cJSON *waiting_of(const cJSON *snap, int tid)
{
	const cJSON *w;

	cJSON_ArrayForEach(w, cJSON_GetObjectItem(snap, "waiting"))
		if ((int)num_field(w, "tid") == tid)
			return w;
	return NULL;
}

/* Whether w's site is the line of wl_stuck marked site:name. */
static bool site_is(const cJSON *w, const char *name)
{
	const cJSON *site = cJSON_GetObjectItem(w, "site");
	const char *file = str_field(site, "file");
	size_t n = file ? strlen(file) : 0;

	return n >= 7 && strcmp(file + n - 7, "stuck.c") == 0 &&
	       (int)num_field(site, "line") == marker_line("stuck.c", name);
}

/* Whether the deadlock d has exactly the threads a and b. */
static bool deadlock_of(const cJSON *d, int a, int b)
{
	const cJSON *tids = cJSON_GetObjectItem(d, "tids");
	int x, y;

	if (cJSON_GetArraySize(tids) != 2 ||
	    cJSON_GetArraySize(cJSON_GetObjectItem(d, "objects")) != 2)
		return false;
	x = cJSON_GetArrayItem(tids, 0)->valueint;
	y = cJSON_GetArrayItem(tids, 1)->valueint;
	return (x == a && y == b) || (x == b && y == a);
}

/* The deadlock's two threads and the third, as the snapshot reports them. */
static void check_deadlock_json(const cJSON *snap, int ab, int ba, int third)
{
	const cJSON *deadlocks = cJSON_GetObjectItem(snap, "deadlocks");
	const cJSON *w_ab = waiting_of(snap, ab), *w_ba = waiting_of(snap, ba);
	const cJSON *w_third = waiting_of(snap, third);

	CHECK(cJSON_GetArraySize(deadlocks) == 1 &&
	      deadlock_of(cJSON_GetArrayItem(deadlocks, 0), ab, ba),
	      "expected one deadlock of threads %d and %d, got %s", ab, ba,
	      snap ? cJSON_PrintUnformatted(deadlocks) : "no snapshot");
	CHECK(w_ab && site_is(w_ab, "ab") && (int)num_field(w_ab, "held_by") == ba,
	      "thread ab waits at stuck.c:%d for a lock held by %d",
	      marker_line("stuck.c", "ab"), ba);
	CHECK(w_ba && site_is(w_ba, "ba") && (int)num_field(w_ba, "held_by") == ab,
	      "thread ba waits at stuck.c:%d for a lock held by %d",
	      marker_line("stuck.c", "ba"), ab);
	CHECK(w_third && site_is(w_third, "third") &&
	      (int)num_field(w_third, "held_by") == ab &&
	      strcmp(str_field(w_third, "holder_state"), "blocked") == 0,
	      "thread third waits for lock_a, held by %d (blocked): got %s", ab,
	      w_third ? cJSON_PrintUnformatted(w_third) : "nothing");
	CHECK(w_ab && strcmp(str_field(w_ab, "type"), "mutex") == 0 &&
	      cJSON_GetArraySize(cJSON_GetObjectItem(w_ab, "stack")) >= 1,
	      "a waiting thread has its type and stack");
}

/* Whether the collector library is mapped into pid. */
static bool collector_mapped(pid_t pid)
{
	char path[64];
	char *maps;
	bool mapped;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = slurp_file(path, "");
	mapped = strstr(maps, "libqsptop.so") != NULL;
	free(maps);
	return mapped;
}

/*
 * An AB/BA deadlock and a thread behind it, viewed from outside: one
 * deadlock, and afterwards each thread is still in the very same wait.
 */
static void test_deadlock(void)
{
	struct target t;
	char before[3][512], after[512];
	const char *names[3] = { "ab", "ba", "third" };
	int tids[3];
	bool blocked = start_target(&t, "deadlock");
	struct run r;
	cJSON *snap;

	for (int i = 0; i < 3; i++) {
		tids[i] = tid_of(&t, names[i]);
		blocked = blocked && wait_futex(t.pid, tids[i], before[i],
						sizeof(before[i]));
	}
	CHECK(blocked, "the deadlock workload's threads block: %s",
	      slurp_file(t.out, ""));
	snap = view_outside(t.pid, &r);
	printf("deadlock:\n%s", r.out);
	CHECK(r.status == 0 && strstr(r.out, "DEADLOCK") != NULL,
	      "qsptop --no-inject: expected exit 0 and DEADLOCK, got %d: %s%s",
	      r.status, r.out, r.err);
	check_deadlock_json(snap, tids[0], tids[1], tids[2]);
	CHECK(kill(t.pid, 0) == 0, "the deadlocked process is alive afterwards");
	for (int i = 0; i < 3; i++)
		CHECK(syscall_of(t.pid, tids[i], after, sizeof(after)) &&
		      strcmp(after, before[i]) == 0,
		      "thread %s stays in the same wait: before %s, after %s",
		      names[i], before[i], after);
	CHECK(!collector_mapped(t.pid), "--no-inject loaded the collector");
	run_free(&r);
	cJSON_Delete(snap);
	stop_target(&t);
}

/* The chain of a lock whose holder is blocked reading a pipe, or gone. */
static void test_chain_end(const char *mode, const char *holder,
			   const char *state, const char *text)
{
	struct target t;
	char line[512];
	bool blocked = start_target(&t, mode);
	int waiter = tid_of(&t, "waiter"), held = tid_of(&t, holder);
	const cJSON *w;
	struct run r;
	cJSON *snap;

	blocked = blocked && wait_futex(t.pid, waiter, line, sizeof(line));
	CHECK(blocked, "%s: the waiter blocks: %s", mode, slurp_file(t.out, ""));
	snap = view_outside(t.pid, &r);
	w = waiting_of(snap, waiter);
	printf("%s:\n%s", mode, r.out);
	CHECK(w && (int)num_field(w, "held_by") == held &&
	      strcmp(str_field(w, "holder_state"), state) == 0 &&
	      site_is(w, "waiter"),
	      "%s: expected the waiter held by %d (%s) at stuck.c:%d, got %s",
	      mode, held, state, marker_line("stuck.c", "waiter"),
	      w ? cJSON_PrintUnformatted(w) : "nothing");
	CHECK(strstr(r.out, text) != NULL, "%s: expected \"%s\" in the view: %s",
	      mode, text, r.out);
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(snap, "deadlocks")) == 0,
	      "%s: no deadlock", mode);
	run_free(&r);
	cJSON_Delete(snap);
	stop_target(&t);
}

/* The entry of thread name, its type, holder and holder state as wanted. */
static void check_rw(const cJSON *snap, const struct target *t,
		     const char *name, const char *type, int holder,
		     const char *state)
{
	const cJSON *w = waiting_of(snap, tid_of(t, name));
	const cJSON *held = cJSON_GetObjectItem(w, "held_by");
	const char *got = str_field(w, "holder_state");

	CHECK(w && strcmp(str_field(w, "type"), type) == 0 && site_is(w, name) &&
	      (holder ? (int)num_field(w, "held_by") == holder :
			cJSON_IsNull(held)) &&
	      (state ? got && strcmp(got, state) == 0 : got == NULL),
	      "rwlock: expected %s waiting for %s at stuck.c:%d, held by %d (%s), "
	      "got %s", name, type, marker_line("stuck.c", name), holder,
	      state ? state : "null", w ? cJSON_PrintUnformatted(w) : "nothing");
}

/*
 * Read-write locks: a writer and a reader wait for the writer that holds
 * the lock (it reads a pipe), a writer waits for a reader, who is not
 * named.
 */
static void test_rwlock(void)
{
	struct target t;
	char line[512];
	const char *waiters[] = { "wwait", "rwait", "wreaders" };
	bool blocked = start_target(&t, "rwlock");
	int writer = tid_of(&t, "writer");
	struct run r;
	cJSON *snap;

	for (int i = 0; i < 3; i++)
		blocked = blocked && wait_futex(t.pid, tid_of(&t, waiters[i]), line,
						sizeof(line));
	CHECK(blocked, "rwlock: the waiters block: %s", slurp_file(t.out, ""));
	snap = view_outside(t.pid, &r);
	printf("rwlock:\n%s", r.out);
	check_rw(snap, &t, "wwait", "rwlock-write", writer, "syscall:read");
	check_rw(snap, &t, "rwait", "rwlock-read", writer, "syscall:read");
	check_rw(snap, &t, "wreaders", "rwlock-write", 0, NULL);
	CHECK(strstr(r.out, "held by readers") != NULL,
	      "rwlock: a writer waiting for readers says so: %s", r.out);
	run_free(&r);
	cJSON_Delete(snap);
	stop_target(&t);
}

/* The count the busy workload reports on SIGUSR1 (the n-th report). */
static long busy_count(const struct target *t, int n)
{
	kill(t->pid, SIGUSR1);
	return note_pid_wait(t->out, "count", n, READY_MS);
}

/* A busy process viewed from outside lists its threads and keeps going. */
static void test_busy(void)
{
	struct target t;
	bool ready = start_target(&t, "busy");
	long before = busy_count(&t, 0), after;
	struct run r;
	cJSON *snap = view_outside(t.pid, &r);
	int listed = 0;

	after = busy_count(&t, 1);
	CHECK(ready && before >= 0, "the busy workload answers: %s",
	      slurp_file(t.out, ""));
	/* The state after the name: spaces skipped, not the letters of busy. */
	for (const char *p = r.out; (p = strstr(p, " busy ")) != NULL; p++) {
		const char *state = p + strlen(" busy ");

		state += strspn(state, " ");
		listed += strncmp(state, "running", 7) == 0 ||
			  strncmp(state, "blocked", 7) == 0;
	}
	CHECK(listed == 4, "the view lists 4 busy threads, running or blocked: %s",
	      r.out);
	CHECK(after > before, "the busy process keeps counting across the "
	      "view: %ld then %ld", before, after);
	run_free(&r);
	cJSON_Delete(snap);
	stop_target(&t);
}

/*
 * Without --no-inject, a process with no thread to borrow: qsptop says
 * why it could not load the collector, shows the threads from outside,
 * and exits 1.
 */
static void test_fallback(void)
{
	struct target t;
	bool ready = start_target(&t, "spin");
	char pidstr[16];
	struct run r;
	cJSON *snap;

	snprintf(pidstr, sizeof(pidstr), "%d", (int)t.pid);
	snap = view((char *[]){ "-p", pidstr, NULL }, &r);
	printf("fallback:\n%s%s", r.out, r.err);
	CHECK(ready, "the spinning workload starts: %s", slurp_file(t.out, ""));
	CHECK(r.status == 1 && strstr(r.err, "no thread of PID") != NULL,
	      "expected exit 1 and why on stderr, got %d: %s", r.status, r.err);
	CHECK(strstr(r.out, "outside view: the collector could not be loaded") &&
	      strstr(r.out, "spinner ") && strstr(r.out, "running"),
	      "expected the threads view from outside, got: %s", r.out);
	CHECK(snap && str_field(snap, "outside") &&
	      cJSON_IsArray(cJSON_GetObjectItem(snap, "waiting")),
	      "the snapshot says it was taken from outside");
	CHECK(!collector_mapped(t.pid), "the collector was not loaded");
	run_free(&r);
	cJSON_Delete(snap);
	stop_target(&t);
}

int main(void)
{
	find_paths("/tmp/qsptop-stuck-XXXXXX", "wl_stuck");
	signal(SIGPIPE, SIG_IGN);
	test_deadlock();
	test_chain_end("pipe", "holder", "syscall:read", "in read() on pipe:[");
	test_chain_end("exited", "leaver", "exited", "held by exited thread");
	test_rwlock();
	test_busy();
	test_fallback();
	remove_tmp();
	return check_summary();
}
