/*
 * Waits no hook times are named in the header and the JSON: threads parked
 * in pthread_barrier_wait (which qsptop does not hook) and nothing
 * contended read "unseen waits: 8 threads in pthread_barrier_wait", with
 * the collector injected (-p) and preloaded (-- CMD), and the snapshot's
 * unseen_waits says the same; threads that sleep in hooked calls (a
 * mutex, sem_wait) are not counted; threads that are gone are forgotten.
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

enum { READY_MS = 5000, SEEN_MS = 20000, STOP_MS = 10000 };

#define BARRIER_THREADS "8"

/* The unseen waits of a snapshot as "kind:threads kind:threads". */
static void unseen_of(const cJSON *snap, char *out, size_t size)
{
	const cJSON *w;
	size_t len = 0;

	out[0] = '\0';
	cJSON_ArrayForEach(w, cJSON_GetObjectItem(snap, "unseen_waits"))
		len += (size_t)snprintf(out + len, size - len, "%s%s:%.0f",
					len ? " " : "", str_field(w, "kind"),
					num_field(w, "threads"));
	if (snap == NULL)
		snprintf(out, size, "(no snapshot)");
	else if (!cJSON_IsArray(cJSON_GetObjectItem(snap, "unseen_waits")))
		snprintf(out, size, "(no unseen_waits array)");
}

/*
 * Start qsptop -b with args, wait until its tables show header, then stop
 * it with SIGTERM; its tables into *tables (the caller frees), the
 * snapshot it wrote returned (NULL if none).
 */
static cJSON *watch_until(const char *label, char *const args[],
			  const char *header, char **tables)
{
	char *out = tmp_path("tables"), *err = tmp_path("err");
	char *json = tmp_path("snap.json"), *argv[32];
	bool seen;
	pid_t q;
	int n = 0, status;

	argv[n++] = qsptop;
	argv[n++] = "-b";
	argv[n++] = "-d";
	argv[n++] = "0.2";
	argv[n++] = "-w";
	argv[n++] = "400";
	argv[n++] = "-j";
	argv[n++] = json;
	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	/* Not an earlier run's tables or snapshot. */
	unlink(json);
	unlink(out);
	q = start(argv, out, err);
	seen = file_has_text(out, header, SEEN_MS);
	kill(q, SIGTERM);
	status = wait_status(q, STOP_MS);
	*tables = slurp_file(out, "");
	CHECK(seen, "%s: expected \"%s\" in the header within %d ms; the tables:\n%s",
	      label, header, SEEN_MS, *tables);
	CHECK(status == 0, "%s: qsptop exits 0 on SIGTERM, got %d", label, status);
	return load_json(json);
}

/* Start wl_unseen with args, and wait for its "ready"; its pid. */
static pid_t start_workload(char *const args[])
{
	char *out = tmp_path("workload.out"), *argv[8];
	int n = 0;
	pid_t pid;

	argv[n++] = workload;
	for (int i = 0; args[i] && n < 7; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	pid = start(argv, out, out);
	CHECK(file_has_text(out, "ready", READY_MS), "the workload says ready");
	return pid;
}

/* The snapshot names the barrier's threads, and nothing else. */
static void check_barrier_json(const char *label, const cJSON *snap)
{
	char got[1024];

	unseen_of(snap, got, sizeof(got));
	printf("%s: unseen_waits %s\n", label, got);
	CHECK(strcmp(got, "pthread_barrier_wait:" BARRIER_THREADS) == 0,
	      "%s: expected unseen_waits pthread_barrier_wait:%s, got %s", label,
	      BARRIER_THREADS, got);
	CHECK(snap && cJSON_GetArraySize(cJSON_GetObjectItem(snap, "rows")) == 0,
	      "%s: and no row: nothing was contended", label);
}

/* qsptop -p PID: the collector injected while the threads already wait. */
static void test_injected(void)
{
	pid_t pid = start_workload((char *[]){ "barrier", BARRIER_THREADS, NULL });
	char pidstr[16], *tables = NULL;
	cJSON *snap;

	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	snap = watch_until("injected", (char *[]){ "-p", pidstr, NULL },
			   "unseen waits: " BARRIER_THREADS
			   " threads in pthread_barrier_wait", &tables);
	CHECK(strstr(tables, "running (injected)") != NULL,
	      "injected: the header says the collector was injected");
	check_barrier_json("injected", snap);
	kill(pid, SIGTERM);
	CHECK(wait_status(pid, STOP_MS) == 0, "injected: the workload ends cleanly");
	free(tables);
	cJSON_Delete(snap);
}

/* qsptop -- CMD: the collector preloaded before the threads wait. */
static void test_launched(void)
{
	char *tables = NULL;
	cJSON *snap = watch_until("launched",
				  (char *[]){ "--", workload, "barrier",
					      BARRIER_THREADS, NULL },
				  "unseen waits: " BARRIER_THREADS
				  " threads in pthread_barrier_wait", &tables);

	check_barrier_json("launched", snap);
	free(tables);
	cJSON_Delete(snap);
}

/*
 * Two threads asleep in pthread_mutex_lock, one in sem_wait, all hooked;
 * the one barrier thread that follows shows that qsptop looked at them
 * while they slept.
 */
static void test_hooked(void)
{
	char *tables = NULL, got[1024];
	cJSON *snap = watch_until("hooked",
				  (char *[]){ "--", workload, "hooked", NULL },
				  "unseen waits: 1 thread in pthread_barrier_wait",
				  &tables);

	unseen_of(snap, got, sizeof(got));
	printf("hooked: unseen_waits %s\n", got);
	CHECK(strcmp(got, "pthread_barrier_wait:1") == 0,
	      "hooked: expected only the barrier's thread unseen "
	      "(pthread_barrier_wait:1), got %s", got);
	CHECK(!strstr(tables, "pthread_mutex_lock") && !strstr(tables, "sem_wait"),
	      "hooked: no header names the hooked waits:\n%s", tables);
	free(tables);
	cJSON_Delete(snap);
}

/* Whether a header line after offset at of path lacks "unseen waits". */
static bool later_header_without(const char *path, size_t at)
{
	char *text = slurp_file(path, ""), *line;
	bool found = false;

	line = strlen(text) > at ? text + at : NULL;
	while (line && (line = strstr(line, "\nlock wait ")) != NULL) {
		char *end = strchr(line + 1, '\n');

		if (end == NULL)
			break;	/* not whole yet */
		*end = '\0';
		found = strstr(line, "unseen waits") == NULL;
		*end = '\n';
		if (found)
			break;
		line = end;
	}
	free(text);
	return found;
}

/* The barrier's threads, released, exit: the header forgets them. */
static void test_gone(void)
{
	pid_t pid = start_workload((char *[]){ "barrier", BARRIER_THREADS, NULL });
	char *out = tmp_path("gone.tables"), pidstr[16], *text;
	long deadline;
	bool forgot = false;
	size_t at;
	pid_t q;

	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	unlink(out);
	q = start((char *[]){ qsptop, "-b", "-d", "0.2", "-w", "400", "-p",
			      pidstr, NULL }, out, tmp_path("gone.err"));
	CHECK(file_has_text(out, "unseen waits: " BARRIER_THREADS " threads",
			    SEEN_MS), "gone: the parked threads are named first");
	kill(pid, SIGUSR1);
	CHECK(file_has_text(tmp_path("workload.out"), "released", READY_MS),
	      "gone: the workload released its threads");
	text = slurp_file(out, "");
	at = strlen(text);
	free(text);
	for (deadline = monotonic_ms() + SEEN_MS; !forgot &&
	     monotonic_ms() < deadline; usleep(20000))
		forgot = later_header_without(out, at);
	text = slurp_file(out, "");
	CHECK(forgot, "gone: expected a header without \"unseen waits\" once the "
	      "threads exited, within %d ms; the tables:\n%s", SEEN_MS, text);
	free(text);
	kill(q, SIGTERM);
	CHECK(wait_status(q, STOP_MS) == 0, "gone: qsptop exits 0 on SIGTERM");
	kill(pid, SIGTERM);
	CHECK(wait_status(pid, STOP_MS) == 0, "gone: the workload ends cleanly");
}

int main(void)
{
	find_paths("/tmp/qsptop-unseen-XXXXXX", "wl_unseen");
	signal(SIGPIPE, SIG_IGN);
	test_injected();
	test_launched();
	test_hooked();
	test_gone();
	remove_tmp();
	return check_summary();
}
