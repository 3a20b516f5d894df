/*
 * The threads view on the live screen, in tmux at 80x24, on an AB/BA
 * deadlock started without qsptop (wl_stuck deadlock): with --no-inject
 * it is the only screen, DEADLOCK in the header and on the deadlocked
 * threads; with the collector loaded, the table's header says DEADLOCK
 * by itself (nothing moves: qsptop looks from outside), H shows the
 * threads over the table and H again brings the table back.
 */
#include "../unit/check.h"
#include "harness.h"
#include "tmux.h"

enum { INJECT_MS = 20000 };

/* Start qsptop -p pid ARGS in session name, 80x24. */
static bool start_watching(const char *name, pid_t pid, const char *args)
{
	static char cmd[8 * PATH_MAX];
	char qdir[PATH_MAX + 8], qtop[PATH_MAX + 8], qexit[PATH_MAX + 32];
	char path[PATH_MAX + 32];
	int rc;

	session = name;
	quoted(qdir, sizeof(qdir), tmp);
	quoted(qtop, sizeof(qtop), qsptop);
	exit_file(path, sizeof(path), name);
	quoted(qexit, sizeof(qexit), path);
	snprintf(cmd, sizeof(cmd), "cd %s && TERM=xterm-256color LANG=C.UTF-8 "
		 "%s -d 0.2 -p %d %s; echo EXIT=$? > %s", qdir, qtop, (int)pid,
		 args, qexit);
	rc = tmux(NULL, "new-session", "-d", "-x", "80", "-y", "24", "-s", name,
		  cmd, NULL);
	CHECK(rc == 0, "%s: tmux new-session: expected exit 0, got %d", name, rc);
	return rc == 0;
}

/* Start the deadlock workload and wait for its "ready"; its PID. */
static pid_t start_deadlock(const char *out)
{
	char wl[PATH_MAX + 32];
	pid_t pid;

	join(wl, build, "/tests/wl_stuck");
	pid = start((char *[]){ wl, "deadlock", NULL }, out, out);
	CHECK(file_has_text(out, "ready\n", TIMEOUT_MS),
	      "the deadlock workload starts: %s", slurp_file(out, ""));
	return pid;
}

/* The first screen line holding needle, or "" (into buf). */
static void line_of(const char *needle, char *buf, size_t size)
{
	int i = line_with(needle, 0);

	buf[0] = '\0';
	if (i >= 0)
		screen_line(i, buf, size);
}

/* --no-inject: the threads view is the screen, DEADLOCK on it. */
static void test_outside(void)
{
	char *out = tmp_path("outside.out"), l0[1024];
	pid_t pid = start_deadlock(out);

	if (!start_watching("outside", pid, "--no-inject"))
		return;
	SEE("--no-inject", " ab ");
	SEE("--no-inject", "held by");
	screen_line(0, l0, sizeof(l0));
	CHECK_SCREEN(strstr(l0, "DEADLOCK") && strstr(l0, "(outside)"),
		     "the header says DEADLOCK and how qsptop looks: \"%s\"", l0);
	CHECK_SCREEN(line_with("DEADLOCK 1, thread", 0) >= 0,
		     "the deadlocked threads' stacks are shown");
	keys("H", NULL);
	STATUS("H from outside", "no lock table");
	SEE("H from outside", " ab ");
	quit_session("--no-inject");
	CHECK(kill(pid, 0) == 0, "the deadlocked process is alive afterwards");
	kill(pid, SIGKILL);
	wait_status(pid, TIMEOUT_MS);
}

/* With the collector: H toggles between the table and the threads view. */
static void test_toggle(void)
{
	char *out = tmp_path("toggle.out"), line[1024];
	pid_t pid = start_deadlock(out);

	if (!start_watching("toggle", pid, ""))
		return;
	CHECK_SCREEN(wait_until(has_text, "(injected)", INJECT_MS),
		     "the collector is loaded within %d ms", INJECT_MS);
	SEE("the table", "lock wait");
	/*
	 * Nothing moves and threads sit in lock calls no hook saw begin: qsptop
	 * looks at the threads from outside by itself, and the table's header
	 * says DEADLOCK, the table staying on screen.
	 */
	CHECK_SCREEN(wait_until(has_text, "DEADLOCK", INJECT_MS),
		     "the table, stuck: DEADLOCK within %d ms", INJECT_MS);
	screen_line(0, line, sizeof(line));
	CHECK_SCREEN(strstr(line, "DEADLOCK") && line_with("lock wait", 0) >= 0 &&
		     line_with("held by", 0) < 0,
		     "the table's header says DEADLOCK by itself: \"%s\"", line);
	keys("H", NULL);
	SEE("H", "held by");
	line_of(" ab ", line, sizeof(line));
	CHECK_SCREEN(strstr(line, "blocked") && line_with("(blocked) DEADLOCK", 0) >= 0,
		     "H: thread ab is blocked, in a deadlock: \"%s\"", line);
	SEE("H", "DEADLOCK 1, thread");
	keys("H", NULL);
	SEE("H again", "lock wait");
	GONE("H again", "held by");
	quit_session("toggle");
	CHECK(kill(pid, 0) == 0, "the deadlocked process is alive afterwards");
	kill(pid, SIGKILL);
	wait_status(pid, TIMEOUT_MS);
}

int main(void)
{
	if (!tmux_begin("stuck"))
		return check_summary();
	test_outside();
	test_toggle();
	return tmux_end("test_stuck_tui");
}
