/*
 * A debuginfod server that never answers does not stall qsptop: with
 * DEBUGINFOD_URLS naming a socket that takes connections and says nothing
 * (and an empty cache) and a 120 s timeout, a stripped program's tables
 * come and the user is told the server did not answer, in batch mode and
 * on the live screen, and q quits: none of it waits for the server.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "../unit/check.h"
#include "harness.h"

/*
 * The server's timeout is set far beyond every deadline here: a qsptop
 * that waited for the server would wait FETCH_TIMEOUT_S, and each deadline
 * catches that with room for a loaded machine; none measures speed.
 */
#define FETCH_TIMEOUT_S "120"
#define INTERVAL_MS 300
#define RUN_DEADLINE_MS 30000
#define QUIT_DEADLINE_MS 30000
#define SCREEN_DEADLINE_MS 30000

static char stripped[PATH_MAX];
static char tmux_sock[64], tmux_path[PATH_MAX];
static pid_t workload_pid;	/* the launched program, from qsptop's header */

/*
 * A listening socket on 127.0.0.1 that is never accepted from: the kernel
 * completes the connections, nobody ever answers them. Its port.
 */
static int silent_server(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(fd, 64) < 0 || getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		return -1;
	return ntohs(a.sin_port);
}

/* The pid after "pid " in text, or 0. */
static pid_t pid_in(const char *text)
{
	const char *p = text ? strstr(text, "pid ") : NULL;

	return p ? (pid_t)atoi(p + 4) : 0;
}

/*
 * Whether pid has ended: gone, or a zombie (the tmux server that would
 * reap qsptop ends with its session; its orphans wait for an init).
 */
static bool ended(pid_t pid)
{
	char path[64], *stat;
	const char *close;
	bool zombie;

	if (kill(pid, 0) != 0)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	stat = slurp_file(path, "");
	close = strrchr(stat, ')');
	zombie = close && close[1] == ' ' && close[2] == 'Z';
	free(stat);
	return zombie;
}

/* How many times needle occurs in text. */
static int count(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static void test_batch_keeps_pace(void)
{
	char *out = tmp_path("batch.out"), *err = tmp_path("batch.err");
	char *argv[] = { qsptop, "-b", "-d", "0.3", "-n", "3", "--", stripped,
			 NULL };
	long started = monotonic_ms(), first = -1;
	pid_t q = start(argv, out, err);
	char *text = NULL, *errors;
	int status = -1;

	while (monotonic_ms() - started < RUN_DEADLINE_MS) {
		free(text);
		text = slurp_file(out, "");
		if (first < 0 && strstr(text, "CALL SITE"))
			first = monotonic_ms() - started;
		if (waitpid(q, &status, WNOHANG) == q)
			break;
		usleep(10000);
	}
	if (waitpid(q, &status, WNOHANG) == 0) {
		kill(q, SIGKILL);
		waitpid(q, &status, 0);
		CHECK(0, "batch: 3 refreshes done within %d ms", RUN_DEADLINE_MS);
	}
	free(text);
	text = slurp_file(out, "");
	errors = slurp_file(err, "");
	workload_pid = pid_in(text);
	CHECK(first >= 0, "batch: the first table within %d ms, long before "
	      "the server's %s s timeout", RUN_DEADLINE_MS, FETCH_TIMEOUT_S);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "batch: exit 0, got status 0x%x: %s", status, errors);
	CHECK(count(text, "CALL SITE") == 3, "batch: 3 tables, got %d:\n%s",
	      count(text, "CALL SITE"), text);
	CHECK(strstr(text, "wl_demo_stripped+0x") != NULL,
	      "batch: sites as module+offset:\n%s", text);
	CHECK(strstr(errors, "debuginfod: http://127.0.0.1:") &&
	      strstr(errors, "did not answer") && count(errors, "debuginfod") == 1,
	      "batch: told once that the server did not answer, got: %s", errors);
	if (workload_pid > 0 && kill(workload_pid, 0) == 0)
		kill(workload_pid, SIGKILL);
	free(text);
	free(errors);
}

/* tmux -L SOCK -f /dev/null ARGS... quietly, output in out if given. */
static int tmux(const char *out, ...)
{
	char *argv[16] = { "tmux", "-L", tmux_sock, "-f", "/dev/null" };
	int n = 5;
	va_list ap;

	va_start(ap, out);
	while (n < 15 && (argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	return wait_status(start(argv, out ? out : "/dev/null", "/dev/null"),
			   RUN_DEADLINE_MS);
}

/* The screen, once it shows needle or at the deadline; malloc'd. */
static char *screen_with(const char *needle, long deadline_ms)
{
	char *shot = tmp_path("screen");
	long until = monotonic_ms() + deadline_ms;
	char *text = NULL;

	do {
		free(text);
		tmux(shot, "capture-pane", "-p", "-t", "d", NULL);
		text = slurp_file(shot, "");
		if (strstr(text, needle))
			break;
		usleep(20000);
	} while (monotonic_ms() < until);
	return text;
}

static void test_live_quits_at_once(void)
{
	char cmd[3 * PATH_MAX], *pane = tmp_path("pane"), *text, *pid_text;
	char stat_path[64], *stat;
	pid_t q;
	long asked;

	snprintf(cmd, sizeof(cmd), "exec '%s' -d 0.3 -- '%s'", qsptop, stripped);
	if (tmux(NULL, "new-session", "-d", "-x", "120", "-y", "30", "-s", "d",
		 cmd, NULL) != 0) {
		CHECK(0, "live: tmux new-session");
		return;
	}
	tmux(pane, "display-message", "-p", "-t", "d", "#{pane_pid}", NULL);
	pid_text = slurp_file(pane, "");
	q = (pid_t)atoi(pid_text);
	free(pid_text);
	text = screen_with("_stripped+0x", SCREEN_DEADLINE_MS);
	workload_pid = pid_in(text);
	CHECK(strstr(text, "_stripped+0x"),
	      "live: the table within %d ms:\n%s", SCREEN_DEADLINE_MS, text);
	free(text);
	text = screen_with("debuginfod", SCREEN_DEADLINE_MS);
	CHECK(strstr(text, "debuginfod: fetching ") ||
	      strstr(text, "did not answer"),
	      "live: says debuginfod is fetching or did not answer:\n%s", text);
	free(text);
	asked = monotonic_ms();
	tmux(NULL, "send-keys", "-t", "d", "q", NULL);
	while (q > 0 && !ended(q) && monotonic_ms() - asked < QUIT_DEADLINE_MS)
		usleep(10000);
	snprintf(stat_path, sizeof(stat_path), "/proc/%d/stat", (int)q);
	stat = slurp_file(stat_path, "(gone)");
	CHECK(q > 0 && ended(q), "live: q ends qsptop (pid %d) within %d ms, "
	      "its state: %s", (int)q, QUIT_DEADLINE_MS, stat);
	free(stat);
	if (q > 0 && !ended(q))
		kill(q, SIGKILL);
	if (workload_pid > 0 && kill(workload_pid, 0) == 0)
		kill(workload_pid, SIGKILL);
	tmux(NULL, "kill-server", NULL);
	unlink(tmux_path);	/* tmux leaves its socket file behind */
}

/*
 * Without libdebuginfod.so.1 (Debian's libdebuginfod1) nothing is fetched:
 * the checks against a server are skipped, and qsptop says once why.
 */
static void test_library_missing(void)
{
	char *out = tmp_path("nolib.out"), *err = tmp_path("nolib.err");
	char *argv[] = { qsptop, "-b", "-d", "0.3", "-n", "2", "--", stripped,
			 NULL };
	int status = wait_status(start(argv, out, err), RUN_DEADLINE_MS);
	char *text = slurp_file(out, ""), *errors = slurp_file(err, "");

	SKIP("libdebuginfod.so.1 cannot be loaded (libdebuginfod1 is not "
	     "installed): no fetch from a server tested");
	CHECK(status == 0 && strstr(errors, "debuginfod: cannot load "
				    "libdebuginfod.so.1 (install libdebuginfod1)") &&
	      count(errors, "debuginfod: ") == 1,
	      "no libdebuginfod: exit 0 and told once that it cannot be loaded, "
	      "got exit %d: %s", status, errors);
	workload_pid = pid_in(text);
	if (workload_pid > 0 && kill(workload_pid, 0) == 0)
		kill(workload_pid, SIGKILL);
	free(text);
	free(errors);
}

/* Whether this process can load libdebuginfod.so.1, as qsptop's helper does. */
static bool have_libdebuginfod(void)
{
	void *so = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);

	if (so)
		dlclose(so);
	return so != NULL;
}

int main(void)
{
	char cmd[3 * PATH_MAX + 32], urls[64];
	int port;

	find_paths("/tmp/qdbg-XXXXXX", "wl_demo");
	join(stripped, tmp, "/wl_demo_stripped");
	snprintf(cmd, sizeof(cmd), "objcopy --strip-all '%s' '%s'", workload,
		 stripped);
	CHECK(system(cmd) == 0, "objcopy --strip-all made %s", stripped);
	port = silent_server();
	CHECK(port > 0, "a silent server listens on 127.0.0.1");
	snprintf(urls, sizeof(urls), "http://127.0.0.1:%d", port);
	setenv("DEBUGINFOD_URLS", urls, 1);
	setenv("DEBUGINFOD_CACHE_PATH", tmp_path("cache"), 1);
	setenv("DEBUGINFOD_TIMEOUT", FETCH_TIMEOUT_S, 1);
	snprintf(tmux_sock, sizeof(tmux_sock), "qsptop-dbg-%d", (int)getpid());
	snprintf(tmux_path, sizeof(tmux_path), "%s/tmux-%u/%s",
		 getenv("TMUX_TMPDIR") ? getenv("TMUX_TMPDIR") : "/tmp",
		 (unsigned)getuid(), tmux_sock);
	unsetenv("TMUX");
	if (!have_libdebuginfod()) {
		test_library_missing();
		remove_tmp();
		return check_summary();
	}
	test_batch_keeps_pace();
	if (tmux(NULL, "-V", NULL) == 0)
		test_live_quits_at_once();
	else
		SKIP("tmux is not installed");
	remove_tmp();
	return check_summary();
}
