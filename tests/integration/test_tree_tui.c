/*
 * A process tree on the live screen, through the real program under
 * tmux: qsptop -- wl_tree shows the PROC column and every worker's rows;
 * the filter pid:N keeps one worker's; by object, the details of the
 * mutex they share split it by process; p joins the workers' rows of
 * one code and lock, and splits them again; q ends the whole tree.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "tmux.h"

#define WORKERS 4

static char notes[PATH_MAX + 32];

/* The PID on the n-th "what" line of the notes, waited for. */
static pid_t note_line(const char *what, int n)
{
	return note_pid_wait(notes, what, n, 30000);
}

/*
 * Whether the screen has a row "TYPE PID OBJECT fn" of each of pids (the
 * OBJECT an address or a name: fn may be in it too).
 */
static bool rows_of(const pid_t *pids, int n, const char *fn)
{
	for (int i = 0; i < n; i++) {
		char want[64];
		const char *p = screen;
		bool found = false;

		snprintf(want, sizeof(want), " %d ", (int)pids[i]);
		while (!found && (p = strstr(p, want)) != NULL) {
			const char *eol = strchr(p, '\n');
			const char *at = strstr(p, fn);

			found = at && (eol == NULL || at < eol);
			p += strlen(want);
		}
		if (!found)
			return false;
	}
	return true;
}

/* Whether each of pids is on the screen at a line's start ("   PID "). */
static bool shows_pids(const pid_t *pids, int n)
{
	for (int i = 0; i < n; i++) {
		char want[32];

		snprintf(want, sizeof(want), "\n   %-8d ", (int)pids[i]);
		if (!strstr(screen, want))
			return false;
	}
	return true;
}

/* Whether a line of fn has PROC "-" (right-aligned): rows of several processes. */
static bool joined_row(const void *fn)
{
	const char *p = screen;

	while ((p = strstr(p, "     - ")) != NULL) {
		const char *eol = strchr(p, '\n');
		const char *at = strstr(p, fn);

		if (at && (eol == NULL || at < eol))
			return true;
		p += 5;
	}
	return false;
}

struct rows_want {
	const pid_t *pids;
	int n;
};

static bool has_worker_rows(const void *arg)
{
	const struct rows_want *w = arg;

	return rows_of(w->pids, w->n, "worker_lock");
}

/* Wait until pid is gone (qsptop reaps what it launched). */
static bool gone(pid_t pid)
{
	long deadline = monotonic_ms() + 10000;

	while (kill(pid, 0) == 0 && monotonic_ms() < deadline)
		usleep(10000);
	return kill(pid, 0) != 0;
}

static void test_tree_screen(void)
{
	char program[2 * PATH_MAX + 64], filter[32], title[64];
	pid_t parent, w[WORKERS];
	struct rows_want all = { w, WORKERS }, one = { w + 1, 1 };

	snprintf(notes, sizeof(notes), "%s/notes", tmp);
	snprintf(program, sizeof(program), "%s/tests/wl_tree %s", build, notes);
	if (!start_sized("tree", WIDTH, HEIGHT, "", "-d 0.2", program))
		return;
	parent = note_line("parent", 0);
	for (int i = 0; i < WORKERS; i++)
		w[i] = note_line("worker", i);
	snprintf(title, sizeof(title), "pid %d +%d ", (int)parent, WORKERS);
	CHECK_SCREEN(wait_until(has_text, title, 30000),
		     "the title names the launched command and its %d workers "
		     "('%s')", WORKERS, title);
	CHECK_SCREEN(wait_until(has_text, " PROC ", TIMEOUT_MS),
		     "the table has a PROC column");
	for (int i = 0; i < WORKERS; i++)
		kill(w[i], SIGUSR2);
	CHECK_SCREEN(wait_until(has_worker_rows, &all, 30000),
		     "a worker_lock row of each worker, with its PID");
	snprintf(filter, sizeof(filter), "pid:%d", (int)w[1]);
	keys("/", NULL);
	type_text(filter);
	keys("Enter", NULL);
	CHECK_SCREEN(wait_until(has_worker_rows, &one, TIMEOUT_MS) &&
		     !rows_of(w, 1, "worker_lock") &&
		     !rows_of(w + 2, 1, "worker_lock"),
		     "/%s keeps that worker's rows only", filter);
	keys("Escape", NULL);
	CHECK_SCREEN(wait_until(has_worker_rows, &all, TIMEOUT_MS),
		     "Esc: every worker's rows again");
	/* By object, the lock they share is one line; its details split it. */
	keys("m", "m", NULL);
	CHECK_SCREEN(wait_until(has_text, "coalesce object", TIMEOUT_MS),
		     "m m: coalesced by object");
	keys("Enter", NULL);
	CHECK_SCREEN(wait_until(has_text, "processes that waited", TIMEOUT_MS) &&
		     shows_pids(w, WORKERS),
		     "the details of the shared mutex split its waits by "
		     "process, each worker's PID there");
	keys("Escape", NULL);
	CHECK_SCREEN(wait_until(has_text, "CALL SITE", TIMEOUT_MS),
		     "Esc: back to the table");
	/* Uncoalesced, p joins the workers' rows of one code and lock. */
	keys("m", NULL);
	CHECK_SCREEN(wait_until(has_text, "coalesce none", TIMEOUT_MS),
		     "m: back to no coalescing");
	keys("p", NULL);
	CHECK_SCREEN(wait_until(has_text, "processes: joined", TIMEOUT_MS) &&
		     wait_until(joined_row, "worker_lock", TIMEOUT_MS) &&
		     !rows_of(w, WORKERS, "worker_lock"),
		     "p: one worker_lock line of every worker (PROC -)");
	keys("p", NULL);
	CHECK_SCREEN(wait_until(has_worker_rows, &all, TIMEOUT_MS),
		     "p again: a worker_lock line per worker");
	quit_session("q on the tree");
	CHECK(gone(parent) && gone(w[0]), "q ended the launched parent and "
	      "its workers");
}

int main(void)
{
	if (!tmux_begin("tree"))
		return check_summary();
	test_tree_screen();
	return tmux_end("test_tree_tui");
}
