/*
 * What the screen tests share: a private tmux server on a socket of the
 * test's own, qsptop started in its sessions, keys sent with send-keys,
 * the pane read back with capture-pane, and waits that poll the screen
 * for the state they expect; nothing sleeps blindly. Header-only and
 * static inline, like harness.h.
 */
#ifndef QSPTOP_TEST_TMUX_H
#define QSPTOP_TEST_TMUX_H

#include <errno.h>
#include <stdbool.h>

#include "../../common/types.h"
#include "harness.h"

#define TIMEOUT_MS 5000
#define POLL_MS 50
#define WIDTH 140
#define HEIGHT 30
#define MAX_ARGS 64

/* The rows of `wl_locks tui`, sorted by count, high to low. */
#define ROWS_BY_COUNT "alpha:5000 beta:3000 gamma:700 gamma:700 gamma:700 delta:400"

static char sock[64];
static char sock_path[PATH_MAX];	/* tmux leaves its socket file behind */
static const char *session = "t";
static char *screen;		/* the last capture of the pane */
static int workload_pid;	/* the launched wl_locks, from the header */

/* Built before anything starts, so that a signal handler can use them. */
static char *kill_server_argv[] = { "tmux", "-L", sock, "kill-server", NULL };
static char *remove_tmp_argv[] = { "rm", "-rf", tmp, NULL };

/* Screen checks show the screen they looked at. */
#define CHECK_SCREEN(cond, ...)                                            \
	do {                                                               \
		char what_[16384];                                         \
		snprintf(what_, sizeof(what_), __VA_ARGS__);               \
		CHECK(cond, "%s\n--- screen (%s) ---\n%s\n--- end of screen ---", \
		      what_, session, screen ? screen : "(none captured)"); \
	} while (0)

/* True while pid is still the workload (not gone, not a reused pid). */
static inline bool workload_alive(int pid)
{
	char path[64], cmd[256] = "";
	FILE *f;
	size_t n;

	if (pid <= 0 || kill(pid, 0) != 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	n = fread(cmd, 1, sizeof(cmd) - 1, f);
	cmd[n] = '\0';
	fclose(f);
	return strstr(cmd, "wl_locks") != NULL;
}

/* At exit: our server, its socket, the workload if still there, tmp. */
static inline void cleanup(void)
{
	run_quietly(kill_server_argv);
	if (sock_path[0])
		unlink(sock_path);
	if (workload_alive(workload_pid))
		kill(workload_pid, SIGKILL);
	if (tmp[0])
		remove_tmp();
}

/* On a signal: the server, its socket and tmp; async-signal-safe only. */
static inline void on_signal(int sig)
{
	(void)sig;
	run_quietly(kill_server_argv);
	if (sock_path[0])
		unlink(sock_path);
	run_quietly(remove_tmp_argv);
	_exit(1);
}

/*
 * tmux -L SOCK ARGS... (NULL-terminated). With out, its stdout is
 * returned there (malloc'ed). Returns the exit status, 127 without tmux.
 */
static inline int tmux(char **out, ...)
{
	char *argv[MAX_ARGS];
	int n = 0, fds[2], status;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	va_list ap;
	pid_t pid;

	argv[n++] = "tmux";
	argv[n++] = "-L";
	argv[n++] = sock;
	argv[n++] = "-f";
	argv[n++] = "/dev/null";
	va_start(ap, out);
	while (n < MAX_ARGS - 1 && (argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	if (pipe(fds) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(out ? fds[1] : null, 1);
		dup2(null, 2);
		close(fds[0]);
		close(fds[1]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		ssize_t got;

		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			buf = realloc(buf, cap);
		}
		got = read(fds[0], buf + len, cap - len - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		len += (size_t)got;
	}
	close(fds[0]);
	buf[len] = '\0';
	if (out)
		*out = buf;
	else
		free(buf);
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Capture the pane into screen; an empty screen when that fails. */
static inline void capture(void)
{
	char *out = NULL;

	free(screen);
	screen = NULL;
	if (tmux(&out, "capture-pane", "-p", "-t", session, NULL) != 0) {
		free(out);
		out = strdup("");
	}
	screen = out;
}

/* send-keys with tmux key names, NULL-terminated. */
static inline void keys(const char *first, ...)
{
	char *argv[MAX_ARGS];
	int n = 0;
	va_list ap;

	argv[n++] = (char *)first;
	va_start(ap, first);
	while (n < MAX_ARGS - 1 && (argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	for (int i = 0; i < n; i++)
		tmux(NULL, "send-keys", "-t", session, argv[i], NULL);
}

static inline void type_text(const char *text)
{
	tmux(NULL, "send-keys", "-t", session, "-l", text, NULL);
}

/*
 * Bytes as a real xterm sends them. tmux sends Home and End as \e[1~ and
 * \e[4~, which are not xterm-256color's khome and kend (\eOH, \eOF).
 */
static inline void send_bytes(const char *bytes)
{
	char *argv[MAX_ARGS];
	char hex[MAX_ARGS][4];
	int n = 0;

	argv[n++] = "tmux";
	argv[n++] = "-L";
	argv[n++] = sock;
	argv[n++] = "send-keys";
	argv[n++] = "-t";
	argv[n++] = (char *)session;
	argv[n++] = "-H";
	for (int i = 0; bytes[i] && n < MAX_ARGS - 1; i++) {
		snprintf(hex[i], sizeof(hex[i]), "%02x", (unsigned char)bytes[i]);
		argv[n++] = hex[i];
	}
	argv[n] = NULL;
	run_quietly(argv);
}

#define XTERM_HOME "\033OH"
#define XTERM_END "\033OF"

/* --- reading the captured screen --- */

static inline int screen_lines(void)
{
	int n = 0;

	for (const char *p = screen; p && *p; p++)
		n += *p == '\n';
	return n;
}

/* Line i of the screen (no newline); "" past the end. */
static inline void screen_line(int i, char *buf, size_t size)
{
	const char *p = screen ? screen : "";
	size_t len;

	while (i > 0 && *p) {
		if (*p++ == '\n')
			i--;
	}
	len = strcspn(p, "\n");
	if (len >= size)
		len = size - 1;
	memcpy(buf, p, len);
	buf[len] = '\0';
}

/* Columns a line takes: one per UTF-8 character (all of ours are narrow). */
static inline int columns_of(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* The first line at or after from that contains needle, or -1. */
static inline int line_with(const char *needle, int from)
{
	char line[4096];
	int n = screen_lines();

	for (int i = from; i < n; i++) {
		screen_line(i, line, sizeof(line));
		if (strstr(line, needle))
			return i;
	}
	return -1;
}

static inline void last_line(char *buf, size_t size)
{
	int n = screen_lines();

	screen_line(n > 0 ? n - 1 : 0, buf, size);
}

static inline bool status_starts(const char *prefix)
{
	char line[4096];

	last_line(line, sizeof(line));
	return strncmp(line, prefix, strlen(prefix)) == 0;
}

/* The table: its title line and where the ACQ column ends (-1: none). */
static inline int title_line(int *acq_end)
{
	char line[4096];
	int t = line_with("CALL SITE", 0);
	const char *acq;

	*acq_end = -1;
	if (t < 0)
		return -1;
	screen_line(t, line, sizeof(line));
	if (strncmp(line, "TYPE", 4) != 0)
		return -1;
	acq = strstr(line, "ACQ");
	if (acq)
		*acq_end = (int)(acq - line) + 3;
	return t;
}

/* The byte of line at column col (the title line is ASCII, rows may not be). */
static inline int column_byte(const char *line, int col)
{
	int i = 0;

	for (; line[i] && col > 0; i++)
		col -= ((unsigned char)line[i + 1] & 0xc0) != 0x80;
	return i;
}

/* The ACQ cell of a row line: right-aligned, ending under "ACQ". */
static inline long acq_cell(const char *line, int end_column)
{
	int end = column_byte(line, end_column), start = end;
	char *stop;
	long v;

	if (end <= 0 || (int)strlen(line) < end || (line[end] && line[end] != ' '))
		return -1;
	while (start > 0 && line[start - 1] != ' ')
		start--;
	if (start == end)
		return -1;
	v = strtol(line + start, &stop, 10);
	return stop == line + end ? v : -1;
}

/* The name a row goes by: the function after "site_", or its file:line. */
static inline void row_name(const char *line, char *name, size_t size)
{
	const char *p = strstr(line, "site_");
	size_t n = 0;

	if (p)
		p += 5;
	else if ((p = strstr(line, "locks.c:")) == NULL)
		p = "?";
	while (p[n] && p[n] != '+' && p[n] != ' ' && n + 1 < size)
		n++;
	memcpy(name, p, n);
	name[n] = '\0';
}

/* The rows shown, as "name:acq name:acq ..." in screen order. */
static inline void rows_shown(char *out, size_t size)
{
	char line[4096], name[128];
	int end, t = title_line(&end), n = screen_lines();
	size_t len = 0;

	out[0] = '\0';
	if (t < 0) {
		snprintf(out, size, "(no table)");
		return;
	}
	/* The rows are between the titles and the status line. */
	for (int i = t + 1; i < n - 1; i++) {
		screen_line(i, line, sizeof(line));
		if (line[0] == '\0' || line[0] == ' ')
			continue;
		row_name(line, name, sizeof(name));
		len += (size_t)snprintf(out + len, size - len, "%s%s:%ld",
					len ? " " : "", name, acq_cell(line, end));
		if (len >= size)
			return;
	}
}

/* The sum of the ACQ cells of the rows shown; -1 if one is not a number. */
static inline long acq_total(void)
{
	char line[4096];
	int end, t = title_line(&end), n = screen_lines();
	long sum = 0;

	if (t < 0)
		return -1;
	for (int i = t + 1; i < n - 1; i++) {
		long v;

		screen_line(i, line, sizeof(line));
		if (line[0] == '\0' || line[0] == ' ')
			continue;
		if ((v = acq_cell(line, end)) < 0)
			return -1;
		sum += v;
	}
	return sum;
}

/* --- waiting for the screen --- */

typedef bool (*screen_pred)(const void *arg);

/* Capture every POLL_MS until pred holds or timeout_ms have passed. */
static inline bool wait_until(screen_pred pred, const void *arg, int timeout_ms)
{
	long deadline = monotonic_ms() + timeout_ms;

	for (;;) {
		capture();
		if (pred(arg))
			return true;
		if (monotonic_ms() >= deadline)
			return false;
		usleep(POLL_MS * 1000);
	}
}

static inline bool has_text(const void *needle)
{
	return strstr(screen, needle) != NULL;
}

static inline bool lacks_text(const void *needle)
{
	return strstr(screen, needle) == NULL;
}

static inline bool rows_are(const void *want)
{
	char got[4096];

	rows_shown(got, sizeof(got));
	return strcmp(got, want) == 0;
}

static inline bool status_is_prefix(const void *prefix)
{
	return status_starts(prefix);
}

static inline bool wait_for(const char *needle)
{
	return wait_until(has_text, needle, TIMEOUT_MS);
}

static inline bool wait_gone(const char *needle)
{
	return wait_until(lacks_text, needle, TIMEOUT_MS);
}

#define SEE(context, needle)                                               \
	CHECK_SCREEN(wait_for(needle), "%s: expected \"%s\" on the screen within %d ms", \
		     context, needle, TIMEOUT_MS)

#define GONE(context, needle)                                              \
	CHECK_SCREEN(wait_gone(needle), "%s: expected \"%s\" to leave the screen " \
		     "within %d ms", context, needle, TIMEOUT_MS)

#define STATUS(context, prefix)                                            \
	CHECK_SCREEN(wait_until(status_is_prefix, prefix, TIMEOUT_MS),     \
		     "%s: expected the status line to start with \"%s\"",  \
		     context, prefix)

/* Wait for exactly these rows; a failure names what came instead. */
static inline bool expect_rows(const char *context, const char *want)
{
	char got[4096];
	bool ok = wait_until(rows_are, want, TIMEOUT_MS);

	rows_shown(got, sizeof(got));
	CHECK_SCREEN(ok, "%s: rows expected \"%s\", got \"%s\"", context, want, got);
	return ok;
}

/* Header line 2 (totals) contains text. */
static inline bool totals_have(const char *text)
{
	char line[4096];

	screen_line(1, line, sizeof(line));
	return strstr(line, text) != NULL;
}

static inline bool totals_have_pred(const void *text)
{
	return totals_have(text);
}

#define TOTALS(context, text)                                              \
	CHECK_SCREEN(wait_until(totals_have_pred, text, TIMEOUT_MS),       \
		     "%s: expected \"%s\" in the header's second line", context, text)

/* --- the session --- */

/* A path for the shell, in single quotes. */
static inline void quoted(char *out, size_t size, const char *s)
{
	size_t n = 0;

	out[n++] = '\'';
	for (; *s && n + 6 < size; s++) {
		if (*s == '\'') {
			memcpy(out + n, "'\\''", 4);
			n += 4;
		} else {
			out[n++] = *s;
		}
	}
	out[n++] = '\'';
	out[n] = '\0';
}

static inline void exit_file(char *out, size_t size, const char *name)
{
	snprintf(out, size, "%s/exit-%s", tmp, name);
}

/*
 * Start qsptop ARGS -- PROGRAM in session name, w x h; env and args
 * may be "", program is for the shell.
 */
static inline bool start_sized(const char *name, int width, int height,
			       const char *env, const char *args,
			       const char *program)
{
	static char cmd[16 * PATH_MAX];
	char qdir[PATH_MAX + 8], qtop[PATH_MAX + 8], qexit[PATH_MAX + 32];
	char path[PATH_MAX + 32], w[16], h[16];
	int rc;

	session = name;
	quoted(qdir, sizeof(qdir), tmp);
	quoted(qtop, sizeof(qtop), qsptop);
	exit_file(path, sizeof(path), name);
	quoted(qexit, sizeof(qexit), path);
	/*
	 * set -m and a trap on INT: qsptop is the terminal's foreground job,
	 * and Ctrl-C does not end the shell, as with a user's shell.
	 */
	snprintf(cmd, sizeof(cmd), "set -m; trap : INT; cd %s && ESCDELAY=25 TERM=xterm-256color "
		 "LANG=C.UTF-8 TMPDIR=%s %s %s %s -- %s; echo EXIT=$? > %s", qdir,
		 qdir, env, qtop, args, program, qexit);
	snprintf(w, sizeof(w), "%d", width);
	snprintf(h, sizeof(h), "%d", height);
	rc = tmux(NULL, "new-session", "-d", "-x", w, "-y", h, "-s", name, cmd, NULL);
	if (rc == 0 && sock_path[0] == '\0') {
		char *out = NULL;

		tmux(&out, "display-message", "-p", "-t", name, "#{socket_path}", NULL);
		if (out && out[0] == '/')
			snprintf(sock_path, sizeof(sock_path), "%.*s",
				 (int)strcspn(out, "\n"), out);
		free(out);
	}
	CHECK(rc == 0, "%s: tmux new-session: expected exit 0, got %d", name, rc);
	return rc == 0;
}

/* Start qsptop on `wl_locks MODE` in session name; env and args may be "". */
static inline bool start_mode(const char *name, const char *mode,
			      const char *env, const char *args)
{
	static char program[4 * PATH_MAX], all_args[PATH_MAX];
	char qwl[PATH_MAX + 8], qexp[PATH_MAX + 32], path[PATH_MAX + 32];

	quoted(qwl, sizeof(qwl), workload);
	snprintf(path, sizeof(path), "%s/expect", tmp);
	quoted(qexp, sizeof(qexp), path);
	snprintf(program, sizeof(program), "%s %s %s", qwl, mode, qexp);
	snprintf(all_args, sizeof(all_args), "%s -o count -d 0.2", args);
	return start_sized(name, WIDTH, HEIGHT, env, all_args, program);
}

/* Start qsptop on `wl_locks tui` in session name. */
static inline bool start_session(const char *name, const char *env, const char *args)
{
	return start_mode(name, "tui", env, args);
}

/* Wait until the session's command has written its exit file. */
static inline char *wait_exit_file(const char *name, int timeout_ms)
{
	char path[PATH_MAX + 32];
	long deadline = monotonic_ms() + timeout_ms;

	exit_file(path, sizeof(path), name);
	for (;;) {
		char *text = slurp_file(path, NULL);

		if (text && strchr(text, '\n'))
			return text;
		free(text);
		if (monotonic_ms() >= deadline)
			return NULL;
		usleep(POLL_MS * 1000);
	}
}

/* q ends qsptop, which ends the workload it launched, and exits 0. */
static inline void quit_session(const char *context)
{
	char *text;

	keys("q", NULL);
	text = wait_exit_file(session, TIMEOUT_MS);
	capture();
	CHECK_SCREEN(text && strcmp(text, "EXIT=0\n") == 0,
		     "%s: q: expected \"EXIT=0\" in the exit file within %d ms, got \"%s\"",
		     context, TIMEOUT_MS, text ? text : "(no file)");
	free(text);
}


/* --- screens that scroll under the header --- */

/* Scrolled or not, lines 0-2 keep the header and the screen's title. */
static inline void check_header_kept(const char *context, const char *title)
{
	char l0[4096], l1[4096], l2[4096];

	screen_line(0, l0, sizeof(l0));
	screen_line(1, l1, sizeof(l1));
	screen_line(2, l2, sizeof(l2));
	CHECK_SCREEN(strncmp(l0, "qsptop ", 7) == 0 && strncmp(l1, "lock wait ", 10) == 0 &&
		     strstr(l2, title),
		     "%s: expected the title \"qsptop …\", the totals \"lock wait …\" and "
		     "\"%s\" to stay on lines 0-2, got \"%s\", \"%s\", \"%s\"",
		     context, title, l0, l1, l2);
}

/* The line of the screen that starts with prefix, or -1. */
static inline int line_starting(const char *prefix)
{
	char line[4096];
	int n = screen_lines();

	for (int i = 0; i < n; i++) {
		screen_line(i, line, sizeof(line));
		if (strncmp(line, prefix, strlen(prefix)) == 0)
			return i;
	}
	return -1;
}
/* A line prefix expected on a line of the screen. */
struct at {
	const char *prefix;
	int line;
};

static inline bool starts_at(const void *arg)
{
	const struct at *a = arg;

	return line_starting(a->prefix) == a->line;
}

#define AT(context, prefix_, line_)                                        \
	do {                                                               \
		struct at at_ = { prefix_, line_ };                        \
		CHECK_SCREEN(wait_until(starts_at, &at_, TIMEOUT_MS),      \
			     "%s: expected \"%s\" on line %d, it is on %d", \
			     context, prefix_, line_, line_starting(prefix_)); \
	} while (0)

/* The line where the details show the acquisitions, or -1. */
static inline int acquisitions_line(void)
{
	return line_with("acquisitions ", 0);
}

static inline bool acquisitions_at(const void *line)
{
	return acquisitions_line() == *(const int *)line;
}
/* --- a test program's start and end --- */

static long tmux_started_ms;

/*
 * Start a screen test NAME: its tmux socket qsptop-NAME-PID, its scratch
 * directory /tmp/qNAME-XXXXXX, the paths of the build, and cleanup at
 * exit and on signals. False, with a failed check, when tmux is missing.
 */
static inline bool tmux_begin(const char *name)
{
	char *version = NULL, tmp_template[64];
	int rc;

	tmux_started_ms = monotonic_ms();
	snprintf(sock, sizeof(sock), "qsptop-%s-%d", name, (int)getpid());
	/* Our own server, shell and settings, whoever runs the test. */
	unsetenv("TMUX");
	setenv("SHELL", "/bin/sh", 1);
	signal(SIGPIPE, SIG_IGN);
	rc = tmux(&version, "-V", NULL);
	free(version);
	if (rc != 0) {
		printf("skipped: tmux not installed\n");
		CHECK(0, "tmux is needed for the screen tests (tmux -V exited %d)", rc);
		return false;
	}
	snprintf(tmp_template, sizeof(tmp_template), "/tmp/q%s-XXXXXX", name);
	find_paths(tmp_template, "wl_locks");
	atexit(cleanup);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	return true;
}

/* End a screen test: how long program took, then the summary line. */
static inline int tmux_end(const char *program)
{
	free(screen);
	screen = NULL;
	printf("%s took %.1f s\n", program,
	       (double)(monotonic_ms() - tmux_started_ms) / 1000);
	return check_summary();
}

#endif
