/*
 * A process tree as one target, through the real programs: -p with a
 * list of PIDs, and -p PARENT --children on a parent that forks workers
 * sharing a process-shared mutex and semaphore. One table holds every
 * worker's calls, exactly, each row with its PID; a worker forked while
 * watched joins; one that exits keeps its totals; bad -p lists are
 * one-line errors.
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

#define LOCKS 1000		/* as tests/workloads/tree.c makes them */
#define SEMS 200
#define WORKERS 4
#define LINE_TIMEOUT_MS 30000

static char notes[PATH_MAX + 32];

/* The PID on the n-th line of the notes starting with what, or -1. */
static pid_t note_line(const char *what, int n)
{
	return note_pid_wait(notes, what, n, LINE_TIMEOUT_MS);
}

/* Wait until the notes have n lines starting with what. */
static bool wait_notes(const char *what, int n)
{
	long deadline = monotonic_ms() + LINE_TIMEOUT_MS;

	while (note_lines(notes, what) < n && monotonic_ms() < deadline)
		usleep(10000);
	return note_lines(notes, what) >= n;
}

/* Wait until n workers have done their calls (one of them may exit). */
static bool wait_finished(int n)
{
	long deadline = monotonic_ms() + LINE_TIMEOUT_MS;

	while (note_lines(notes, "done") + note_lines(notes, "exited") < n &&
	       monotonic_ms() < deadline)
		usleep(10000);
	return note_lines(notes, "done") + note_lines(notes, "exited") >= n;
}

/* Wait until batch output at path has printed n more tables than now. */
static bool wait_tables(const char *path, int n)
{
	long deadline = monotonic_ms() + LINE_TIMEOUT_MS;
	int want = file_occurrences(path, "CALL SITE") + n;

	while (file_occurrences(path, "CALL SITE") < want && monotonic_ms() < deadline)
		usleep(20000);
	return file_occurrences(path, "CALL SITE") >= want;
}

/* The acquisitions of pid's rows whose call site is in function fn. */
static double pid_acquisitions(const cJSON *snap, pid_t pid, const char *fn)
{
	const cJSON *row;
	double sum = 0;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const cJSON *site = cJSON_GetObjectItem(row, "site");

		if (num_field(row, "pid") == pid &&
		    names_function(str_field(site, "symbol"), fn))
			sum += num_field(row, "acquisitions");
	}
	return sum;
}

/* Whether the rows at fn, of n processes, all name one object. */
static bool one_object(const cJSON *snap, const char *fn, int n)
{
	const cJSON *row;
	const char *object = NULL;
	int rows = 0;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const cJSON *site = cJSON_GetObjectItem(row, "site");

		if (!names_function(str_field(site, "symbol"), fn))
			continue;
		if (object && strcmp(object, str_field(row, "object")) != 0)
			return false;
		object = str_field(row, "object");
		rows++;
	}
	return rows == n;
}

/* The state that the snapshot's processes give pid, or NULL. */
static const char *process_state(const cJSON *snap, pid_t pid)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, cJSON_GetObjectItem(snap, "processes"))
		if (num_field(p, "pid") == pid)
			return str_field(p, "state");
	return NULL;
}

/* Each worker's calls on its own rows, exactly. */
static void check_worker(const cJSON *snap, const char *label, pid_t pid)
{
	double locks = pid_acquisitions(snap, pid, "worker_lock");
	double sems = pid_acquisitions(snap, pid, "worker_sem");

	CHECK(locks == LOCKS && sems == SEMS,
	      "%s %d: its %d mutex and %d semaphore calls on rows with its "
	      "PID, exactly; got %.0f and %.0f", label, (int)pid, LOCKS, SEMS,
	      locks, sems);
}

/* Start wl_tree (the first worker exits after its work); its PID. */
static pid_t start_tree(const char *name)
{
	char wl[PATH_MAX + 32];

	snprintf(notes, sizeof(notes), "%s/%s", tmp, name);
	snprintf(wl, sizeof(wl), "%s/tests/wl_tree", build);
	return start((char *[]){ wl, notes, "exit", NULL }, NULL, NULL);
}

/*
 * -p PARENT --children: the four workers there at the start, a fifth
 * forked while watched, one that exits: one table, every call counted.
 */
static void test_children(void)
{
	char *json = tmp_path("children.json"), *out = tmp_path("children.out");
	char pidstr[16], header[64];
	pid_t parent = start_tree("notes.children"), q, w[WORKERS + 1], gone;
	cJSON *snap;

	CHECK(note_line("parent", 0) == parent, "the parent started");
	CHECK(wait_notes("worker", WORKERS), "the parent forked %d workers",
	      WORKERS);
	for (int i = 0; i < WORKERS; i++)
		w[i] = note_line("worker", i);
	snprintf(pidstr, sizeof(pidstr), "%d", (int)parent);
	q = start((char *[]){ qsptop, "-b", "-d", "0.2", "-w", "200", "-j", json,
			      "-p", pidstr, "--children", NULL }, out,
		  tmp_path("children.err"));
	/* The header counts the processes watched: the parent and 4 workers. */
	snprintf(header, sizeof(header), "pid %d +%d ", (int)parent, WORKERS);
	CHECK(file_has_text(out, header, LINE_TIMEOUT_MS),
	      "the header names the parent and its %d workers ('%s')", WORKERS,
	      header);
	/* Counted from the first update of each one's collector on. */
	CHECK(wait_tables(out, 3), "three tables after they joined");
	for (int i = 0; i < WORKERS; i++)
		kill(w[i], SIGUSR2);
	CHECK(wait_notes("done", WORKERS - 1) && wait_notes("exited", 1),
	      "the workers did their calls, the first one exited");
	gone = note_line("exited", 0);

	kill(parent, SIGUSR1);
	w[WORKERS] = note_line("worker", WORKERS);
	snprintf(header, sizeof(header), "pid %d +%d ", (int)parent, WORKERS + 1);
	CHECK(file_has_text(out, header, LINE_TIMEOUT_MS) && wait_tables(out, 3),
	      "a worker forked while watched joins the table ('%s')", header);
	kill(w[WORKERS], SIGUSR2);
	CHECK(wait_notes("done", WORKERS), "the fifth worker did its calls");
	/* Each collector sends its counts at its next tick: two tables on. */
	CHECK(wait_tables(out, 2), "two more tables after the last calls");
	kill(q, SIGTERM);
	CHECK(wait_status(q, 20000) == 0, "qsptop ends well on SIGTERM");

	snap = load_json(json);
	CHECK(snap != NULL, "a snapshot was written");
	if (snap) {
		for (int i = 0; i <= WORKERS; i++)
			check_worker(snap, i == WORKERS ? "the fifth worker" :
				     w[i] == gone ? "the worker that exited" :
				     "worker", w[i]);
		CHECK(one_object(snap, "worker_lock", WORKERS + 1),
		      "the shared mutex is one object on the %d workers' rows",
		      WORKERS + 1);
		CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(snap, "processes")) ==
		      WORKERS + 2, "processes lists the parent and %d workers: %d",
		      WORKERS + 1,
		      cJSON_GetArraySize(cJSON_GetObjectItem(snap, "processes")));
		CHECK(process_state(snap, gone) &&
		      strcmp(process_state(snap, gone), "exited") == 0,
		      "the worker that exited is 'exited' in processes: %s",
		      process_state(snap, gone) ? process_state(snap, gone) : "absent");
		CHECK(process_state(snap, parent) &&
		      strcmp(process_state(snap, parent), "running") == 0,
		      "the parent is 'running' in processes");
	}
	cJSON_Delete(snap);
	kill(parent, SIGTERM);
	CHECK(wait_status(parent, 10000) == 0, "the parent ends well");
}

/*
 * The line of a snapshot whose stacks pass through function fn (its
 * site may be several), or NULL.
 */
static const cJSON *object_line(const cJSON *snap, const char *fn)
{
	const cJSON *row, *st, *fr;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows"))
		cJSON_ArrayForEach(st, cJSON_GetObjectItem(row, "stacks"))
			cJSON_ArrayForEach(fr, cJSON_GetObjectItem(st, "frames"))
				if (names_function(str_field(fr, "symbol"), fn))
					return row;
	return NULL;
}

/* Whether the threads of line l are of pids a and b, both there. */
static bool pids_of_threads(const cJSON *l, pid_t a, pid_t b)
{
	const cJSON *t;
	bool seen_a = false, seen_b = false, other = false;

	cJSON_ArrayForEach(t, cJSON_GetObjectItem(l, "threads")) {
		pid_t pid = (pid_t)num_field(t, "pid");

		seen_a |= pid == a;
		seen_b |= pid == b;
		other |= pid != a && pid != b;
	}
	return seen_a && seen_b && !other;
}

/* The lock both workers share is one line of both, joined. */
static void check_shared(const cJSON *snap, const char *fn, double calls,
			 pid_t a, pid_t b)
{
	const cJSON *l = object_line(snap, fn);

	CHECK(l && num_field(l, "acquisitions") == calls &&
	      num_field(l, "n_objects") == 1 && num_field(l, "n_sites") == 1 &&
	      cJSON_IsNull(cJSON_GetObjectItem(l, "pid")),
	      "--join-processes: the shared lock at %s, one code and one object "
	      "in both processes, is one line: %.0f calls expected, got %.0f "
	      "in %.0f objects of %.0f sites", fn, calls,
	      l ? num_field(l, "acquisitions") : -1,
	      l ? num_field(l, "n_objects") : -1, l ? num_field(l, "n_sites") : -1);
	CHECK(l && pids_of_threads(l, a, b),
	      "--join-processes: the line's threads are of both processes, "
	      "each thread with its pid");
}

/* The semaphore they share: one line, every call of both. */
static void check_semaphore(const cJSON *snap, double calls)
{
	const cJSON *row, *l = NULL;
	int lines = 0;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows"))
		if (strcmp(str_field(row, "type"), "semaphore") == 0) {
			l = row;
			lines++;
		}
	CHECK(lines == 1 && num_field(l, "acquisitions") == calls,
	      "--join-processes: the shared semaphore is one line of %.0f calls; got "
	      "%d lines, the last of %.0f", calls, lines,
	      l ? num_field(l, "acquisitions") : -1);
}

/*
 * -p W1,W2 --join-processes: two workers in one table, each lock they
 * share at one code one line of both, exactly; W1 ends with _exit()
 * after its calls, and qsptop still ends well.
 */
static void test_pid_list(void)
{
	char *json = tmp_path("list.json"), *out = tmp_path("list.out");
	char list[40], header[64];
	pid_t parent = start_tree("notes.list"), q, w1, w2;
	cJSON *snap;

	CHECK(wait_notes("worker", WORKERS), "the parent forked its workers");
	/* The list's first is the worker that ends with _exit(). */
	w1 = note_line("exiter", 0);
	w2 = note_line("worker", note_line("worker", 0) == w1 ? 1 : 0);
	snprintf(list, sizeof(list), "%d,%d", (int)w1, (int)w2);
	q = start((char *[]){ qsptop, "-b", "-d", "0.2", "-w", "200", "-j", json,
			      "--join-processes", "-p", list, NULL }, out,
		  tmp_path("list.err"));
	snprintf(header, sizeof(header), "pids %s ", list);
	CHECK(file_has_text(out, header, LINE_TIMEOUT_MS) && wait_tables(out, 3),
	      "the header names both PIDs ('%s')", header);
	kill(w1, SIGUSR2);
	kill(w2, SIGUSR2);
	CHECK(wait_finished(2), "both workers did their calls");
	CHECK(wait_tables(out, 2), "two more tables after the calls");
	CHECK(file_has_text(out, " PROC ", 1000),
	      "the batch table has a PROC column");
	kill(q, SIGTERM);
	CHECK(wait_status(q, 20000) == 0, "qsptop -p W1,W2 ends well on SIGTERM");
	snap = load_json(json);
	if (snap) {
		check_shared(snap, "worker_lock", 2 * LOCKS, w1, w2);
		check_semaphore(snap, 2 * SEMS);
		CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(snap, "processes")) == 2,
		      "processes lists the two PIDs only");
	}
	CHECK(snap != NULL, "a snapshot of the list was written");
	cJSON_Delete(snap);
	kill(parent, SIGTERM);
	CHECK(wait_status(parent, 10000) == 0, "the parent ends well");
}

/*
 * qsptop ARGS fails with status and a one-line error holding needle (a
 * usage error adds the "Try 'qsptop --help'" hint).
 */
static void check_error(char **argv, int status, const char *needle)
{
	struct run r = run_capture(argv, 20000, 0);
	const char *nl = strchr(r.err, '\n'), *found = strstr(r.err, needle);

	CHECK(r.status == status && strncmp(r.err, "qsptop: ", 8) == 0 &&
	      found && nl && found < nl &&
	      (nl[1] == '\0' || strncmp(nl + 1, "Try 'qsptop --help'", 19) == 0),
	      "%s %s: status %d and one line with '%s'; got %d: %s", argv[1],
	      argv[2] ? argv[2] : "", status, needle, r.status, r.err);
	run_free(&r);
}

/*
 * qsptop -- sh -c 'exec wl_tree': a launched command's tree is watched
 * whole by default, through the exec; its workers' calls are counted
 * exactly, and their threads in the total.
 */
static void test_launched(void)
{
	char *json = tmp_path("launched.json"), *out = tmp_path("launched.out");
	char wl[PATH_MAX + 32], header[64];
	pid_t q, parent, w[WORKERS];
	cJSON *snap;

	snprintf(notes, sizeof(notes), "%s/notes.launched", tmp);
	snprintf(wl, sizeof(wl), "%s/tests/wl_tree", build);
	q = start((char *[]){ qsptop, "-b", "-d", "0.2", "-w", "200", "-j", json,
			      "--", "sh", "-c", "exec \"$0\" \"$1\"", wl, notes,
			      NULL }, out,
		  tmp_path("launched.err"));
	parent = note_line("parent", 0);
	CHECK(parent > 0 && wait_notes("worker", WORKERS),
	      "the launched parent forked its workers");
	snprintf(header, sizeof(header), "pid %d +%d ", (int)parent, WORKERS);
	CHECK(file_has_text(out, header, LINE_TIMEOUT_MS) && wait_tables(out, 3),
	      "the launched command and its %d workers are watched ('%s')",
	      WORKERS, header);
	for (int i = 0; i < WORKERS; i++) {
		w[i] = note_line("worker", i);
		kill(w[i], SIGUSR2);
	}
	CHECK(wait_notes("done", WORKERS), "the workers did their calls");
	CHECK(wait_tables(out, 2), "two more tables after the calls");
	kill(parent, SIGTERM);
	CHECK(wait_status(q, 20000) == 0,
	      "qsptop ends with the launched command, with its status 0");
	snap = load_json(json);
	CHECK(snap != NULL, "a snapshot of the launched tree");
	for (int i = 0; snap && i < WORKERS; i++)
		check_worker(snap, "launched worker", w[i]);
	CHECK(snap && num_field(snap, "threads") == WORKERS,
	      "the snapshot's threads count each worker's one thread: %.0f",
	      snap ? num_field(snap, "threads") : -1);
	cJSON_Delete(snap);
}

static void test_errors(void)
{
	char self[32];

	snprintf(self, sizeof(self), "%d,4000000", (int)getpid());
	check_error((char *[]){ qsptop, "-p", "12,abc", NULL }, 2, "'abc'");
	check_error((char *[]){ qsptop, "-p", "12,", NULL }, 2, "'12,'");
	check_error((char *[]){ qsptop, "-p", "12,12", NULL }, 2, "PID 12 given twice");
	check_error((char *[]){ qsptop, "-p", self, NULL }, 1, "no process 4000000");
	check_error((char *[]){ qsptop, "--children", NULL }, 2,
		    "--children: nothing to watch");
	check_error((char *[]){ qsptop, "--children", "--no-children", "--",
				"true", NULL }, 2, "either --children or");
}

int main(void)
{
	find_paths("/tmp/qsptop-tree-XXXXXX", "wl_tree");
	test_errors();
	test_pid_list();
	test_children();
	test_launched();
	remove_tmp();
	return check_summary();
}
