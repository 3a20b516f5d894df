/*
 * Never hurt the host: each test reproduces, with the real qsptop and a
 * small host (tests/workloads/safety.c), a way the collector once hung,
 * crashed or changed the process it watches.
 */
#include <cJSON.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../../common/sockpath.h"
#include "../unit/check.h"
#include "harness.h"

#define RUN_TIMEOUT_MS 60000

/* The whole RESULT file of a workload run. */
static char *result_of(const char *path)
{
	return slurp_file(path, "");
}

/* Run qsptop -b -d DELAY [-j JSON] -- wl_safety ARGS... RESULT. */
static int launch(const char *delay, const char *json, char *const *args,
		  const char *res)
{
	struct args a = { 0 };
	struct run r;

	args_add(&a, qsptop, "-b", "-d", delay, NULL);
	if (json)
		args_add(&a, "-j", json, NULL);
	args_add(&a, "--", workload, NULL);
	args_add_all(&a, args);
	args_add(&a, res, NULL);
	unlink(res);
	r = run_capture(a.v, RUN_TIMEOUT_MS, 0);
	if (r.status != 0)
		fprintf(stderr, "qsptop exited %d: %s\n", r.status, r.err);
	run_free(&r);
	return r.status;
}

/*
 * Lock calls glibc refuses (bad clock, tv_nsec out of range, a relock of
 * an error-checking mutex) return the same codes, and leave the locks in
 * the same state, with and without the collector.
 */
static void test_einval_side_by_side(void)
{
	char *bare = tmp_path("einval.bare"), *watched = tmp_path("einval.watched");
	char *a, *b;

	unlink(bare);
	CHECK(wait_status(start((char *[]){ workload, "einval", bare, NULL },
				NULL, NULL), 20000) == 0, "einval: runs bare");
	CHECK(launch("0.2", NULL, (char *[]){ "einval", NULL }, watched) == 0,
	      "einval: runs watched");
	a = result_of(bare);
	b = result_of(watched);
	CHECK(strstr(a, "done") != NULL, "einval: the bare run finished:\n%s", a);
	CHECK(strcmp(a, b) == 0, "einval: same results and lock states\nbare:\n%s"
	      "watched:\n%s", a, b);
	free(a);
	free(b);
}

/*
 * Children forked while the collector walks the loader's module list
 * (every 10 ms here) can still walk it and dlopen: glibc 2.36 leaves the
 * walk's lock held in a child forked in the middle of one.
 */
static void test_fork_during_walks(void)
{
	char *res = tmp_path("forks.res");
	char *text;

	CHECK(launch("0.01", NULL, (char *[]){ "forks", "300", NULL }, res) == 0,
	      "forks: qsptop and the host exit 0");
	text = result_of(res);
	CHECK(strncmp(text, "hung 0 of 300", 13) == 0,
	      "forks: no child hangs in dlopen: %s", text);
	free(text);
}

/* Whether the socket a process of our PID namespace would own exists. */
static bool socket_of(long pid)
{
	char dir[108], path[200];
	struct stat ns;

	sockpath_dir(dir, sizeof(dir), geteuid());
	if (stat("/proc/self/ns/pid", &ns) < 0)
		return false;
	snprintf(path, sizeof(path), "%s/%ld-%lu.sock", dir, pid,
		 (unsigned long)ns.st_ino);
	return access(path, F_OK) == 0;
}

/* Forked children that lock, then exit or exec, leave no socket behind. */
static void test_children_leave_nothing(void)
{
	char *res = tmp_path("children.res");
	char *text, *line;
	long pid, i;
	int children = 0, left = 0;

	CHECK(launch("0.1", NULL, (char *[]){ "children", "20", NULL }, res) == 0,
	      "children: qsptop and the host exit 0");
	text = result_of(res);
	CHECK(strstr(text, "done 20") != NULL, "children: all 20 ran: %s", text);
	for (line = text; line && sscanf(line, "child %ld %ld", &pid, &i) == 2;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		children++;
		left += socket_of(pid);
	}
	CHECK(children == 20 && left == 0,
	      "children: no socket file left: %d of %d children left one", left,
	      children);
	free(text);
}

/* A socket in our directory named name; listening, or left stale. */
static int make_socket(const char *name, bool listening, char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char dir[64];
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	sockpath_dir(dir, sizeof(dir), geteuid());
	sockpath_make_private(dir);
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s", dir, name);
	strcpy(path, addr.sun_path);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    (listening && listen(fd, 1) < 0)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!listening) {
		close(fd);
		return 0;
	}
	return fd;
}

/*
 * qsptop removes the sockets of killed processes, and no live one. The
 * names are this run's own (its PID for the namespace part), so that two
 * runs at once do not take each other's.
 */
static void test_stale_sockets_swept(void)
{
	char stale[108], live[108], *res = tmp_path("sweep.res");
	char stale_name[64], live_name[64];
	int fd;

	snprintf(stale_name, sizeof(stale_name), "999999998-%d.sock", (int)getpid());
	snprintf(live_name, sizeof(live_name), "999999999-%d.sock", (int)getpid());
	CHECK(make_socket(stale_name, false, stale) == 0 &&
	      access(stale, F_OK) == 0, "sweep: a stale socket made");
	fd = make_socket(live_name, true, live);
	CHECK(fd >= 0, "sweep: a live socket made");
	CHECK(launch("0.1", NULL, (char *[]){ "children", "1", NULL }, res) == 0,
	      "sweep: qsptop runs");
	CHECK(access(stale, F_OK) < 0, "sweep: the stale socket is gone");
	CHECK(access(live, F_OK) == 0, "sweep: the live socket is kept");
	if (fd >= 0) {
		int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK);

		CHECK(c < 0, "sweep: nobody connected to the live socket");
		if (c >= 0)
			close(c);
		close(fd);
	}
	unlink(live);
	unlink(stale);
}

/* The condvar row of the wait_forever function, from a snapshot. */
static const cJSON *cond_row(const cJSON *snap)
{
	const cJSON *row;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const char *sym = str_field(cJSON_GetObjectItem(row, "site"), "symbol");

		if (sym && strcmp(sym, "wait_forever") == 0 &&
		    strcmp(str_field(row, "type"), "condvar") == 0)
			return row;
	}
	return NULL;
}

/* Waits ended by pthread_cancel are counted: the mutex is held again. */
static void test_cancelled_waits_count(void)
{
	char *res = tmp_path("cancel.res"), *json = tmp_path("cancel.json");
	const cJSON *row;
	cJSON *snap;

	unlink(json);
	CHECK(launch("0.2", json, (char *[]){ "cancel", "200", NULL }, res) == 0,
	      "cancel: qsptop and the host exit 0");
	snap = load_json(json);
	row = snap ? cond_row(snap) : NULL;
	CHECK(row != NULL, "cancel: a condvar row for wait_forever");
	CHECK(row && num_field(row, "acquisitions") == 200 &&
	      num_field(row, "contended") == 200,
	      "cancel: 200 cancelled waits counted, got %.0f acquisitions, %.0f "
	      "contended", row ? num_field(row, "acquisitions") : -1,
	      row ? num_field(row, "contended") : -1);
	cJSON_Delete(snap);
}

/* Wait until path holds text, at most ms; whether it did. */
static bool wait_for_text(const char *path, const char *text, long ms)
{
	for (long end = monotonic_ms() + ms; monotonic_ms() < end; usleep(20000)) {
		char *s = result_of(path);
		bool found = strstr(s, text) != NULL;

		free(s);
		if (found)
			return true;
	}
	return false;
}

/* A host waiting for SIGUSR1, and a qsptop -p injected into it. */
struct attached {
	pid_t host, watcher;
	char res[PATH_MAX + 32], out[PATH_MAX + 32], err[PATH_MAX + 32];
};

static bool attach_to(struct attached *a, const char *mode)
{
	char pidstr[16];

	snprintf(a->res, sizeof(a->res), "%s/%s.res", tmp, mode);
	snprintf(a->out, sizeof(a->out), "%s/%s.out", tmp, mode);
	snprintf(a->err, sizeof(a->err), "%s/%s.err", tmp, mode);
	unlink(a->res);
	a->host = start((char *[]){ workload, (char *)mode, a->res, NULL }, NULL, NULL);
	if (!wait_for_text(a->res, "ready", 10000))
		return false;
	snprintf(pidstr, sizeof(pidstr), "%d", (int)a->host);
	a->watcher = start((char *[]){ qsptop, "-b", "-d", "0.2", "-p", pidstr, NULL },
			   a->out, a->err);
	/* Watched once the first table is out. */
	for (long end = monotonic_ms() + 15000; monotonic_ms() < end; usleep(20000)) {
		char *o = slurp_file(a->out, "");
		bool table = strstr(o, "TYPE") != NULL;

		free(o);
		if (table)
			return true;
	}
	return false;
}

/* End both, by PID; the host's exit status. */
static int detach_from(struct attached *a)
{
	kill(a->watcher, SIGTERM);
	wait_status(a->watcher, 10000);
	kill(a->host, SIGTERM);
	return wait_status(a->host, 10000);
}

/*
 * A host with 40 pthread keys and an allocator of its own that takes
 * pthread mutexes (its slow path one another thread holds long): new
 * threads that lock, wait and allocate under the injected collector must
 * all finish. A collector that allocated or set a pthread key inside a
 * lock call deadlocked here.
 */
static void test_allocator_that_locks(void)
{
	struct attached a;
	bool ok = attach_to(&a, "keys");

	CHECK(ok, "keys: qsptop -p attached to the host");
	kill(a.host, SIGUSR1);
	CHECK(ok && wait_for_text(a.res, "ok", 30000),
	      "keys: every thread of the host finished within 30 s");
	detach_from(&a);
}

/*
 * A host that puts its own socket at every descriptor number it did not
 * open, while the collector talks: not one byte of it is written or read
 * by the collector.
 */
static void test_descriptors_reused_by_host(void)
{
	struct attached a;
	bool ok = attach_to(&a, "fdsteal");
	char *text;

	CHECK(ok, "fdsteal: qsptop -p attached to the host");
	kill(a.host, SIGUSR1);
	CHECK(ok && wait_for_text(a.res, "foreign", 20000),
	      "fdsteal: the host finished its rounds");
	text = result_of(a.res);
	CHECK(strstr(text, "foreign 0 eaten 0") != NULL,
	      "fdsteal: nobody else wrote to or read from the host's socket: %s",
	      text);
	free(text);
	detach_from(&a);
}

/*
 * The collector never calls the host's allocator, nor anything that does
 * behind its back (pthread keys, dynamic TLS): its imports say so.
 */
static void test_no_host_allocator(void)
{
	static const char *const banned[] = {
		"malloc", "calloc", "realloc", "free", "strdup", "fopen",
		"opendir", "pthread_setspecific", "pthread_key_create",
		"__tls_get_addr", "backtrace", "_Unwind_Backtrace",
	};
	char cmd[PATH_MAX + 64], line[256];
	int imports = 0;
	struct check_tally clean = { 0 };
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -D --undefined-only '%s'", library);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		char *name = strrchr(line, ' ');
		char *at;

		if (name == NULL)
			continue;
		name++;
		name[strcspn(name, "@\n")] = '\0';
		at = name;
		imports++;
		for (size_t i = 0; i < sizeof(banned) / sizeof(banned[0]); i++)
			TALLY(&clean, strcmp(at, banned[i]) != 0,
			      "the collector imports %s", banned[i]);
	}
	if (p)
		pclose(p);
	CHECK(imports > 20, "nm lists the collector's imports (%d)", imports);
	CHECK_TALLY(&clean, "the collector imports none of the host's "
		    "allocator functions");
}

/*
 * The first child of pid, waiting for it until a deadline that only
 * catches a hang; -1 if there is none, at once if pid has exited (then
 * *status is its exit status).
 */
static pid_t find_child(pid_t pid, int *status)
{
	char path[64];
	long child = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	for (long end = monotonic_ms() + 30000; child <= 0 && monotonic_ms() < end;
	     usleep(20000)) {
		if (waitpid(pid, status, WNOHANG) == pid)
			return -1;
		f = fopen(path, "r");
		if (f && fscanf(f, "%ld", &child) != 1)
			child = -1;
		if (f)
			fclose(f);
	}
	return (pid_t)child;
}

/* Whether a live collector listens at path. */
static bool listening(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	ok = connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0;
	close(fd);
	return ok;
}

/* Wait until a collector listens at path, or a deadline that only catches a hang. */
static bool wait_listening(const char *path)
{
	for (long end = monotonic_ms() + 30000; monotonic_ms() < end; usleep(20000)) {
		if (listening(path))
			return true;
	}
	return false;
}

/*
 * Two processes with one PID (1) in two PID namespaces that share /tmp:
 * each keeps its own socket, neither removes the other's. Where unshare -p
 * cannot run (no privilege, no namespaces), the check is skipped with
 * unshare's exit status.
 */
static void test_pid_namespaces(void)
{
	char env[PATH_MAX + 32], expect[2][PATH_MAX + 32], path[2][108];
	char locks[PATH_MAX + 32];
	pid_t p[2], child[2] = { -1, -1 };
	int status[2] = { 0, 0 };

	snprintf(locks, sizeof(locks), "%s/tests/wl_locks", build);
	snprintf(env, sizeof(env), "LD_PRELOAD=%s", library);
	for (int i = 0; i < 2; i++) {
		snprintf(expect[i], sizeof(expect[i]), "%s/ns%d.expect", tmp, i);
		p[i] = start((char *[]){ "unshare", "-p", "-f", "env", env,
					 locks, "idle", expect[i], NULL },
			     NULL, NULL);
	}
	for (int i = 0; i < 2; i++) {
		child[i] = find_child(p[i], &status[i]);
		if (child[i] <= 0 || sockpath_target(path[i], sizeof(path[i]),
						     geteuid(), child[i]) < 0)
			path[i][0] = '\0';
	}
	if (child[0] <= 0 && child[1] <= 0 && status[0] && status[1]) {
		SKIP("pidns: unshare -p -f exited with status %d without a "
		     "child: PID namespaces are not available here",
		     WEXITSTATUS(status[0]));
	} else {
		CHECK(path[0][0] && path[1][0], "pidns: expected a child in "
		      "each namespace within 30 s, got PIDs %d and %d",
		      (int)child[0], (int)child[1]);
		CHECK(strcmp(path[0], path[1]) != 0, "pidns: two sockets: %s, %s",
		      path[0], path[1]);
		CHECK(path[0][0] && path[1][0] && wait_listening(path[0]) &&
		      wait_listening(path[1]),
		      "pidns: both collectors answer (%s, %s)", path[0], path[1]);
	}
	/* The namespace's first process ends all of it. */
	for (int i = 0; i < 2; i++) {
		if (child[i] > 0)
			kill(child[i], SIGKILL);
		if (kill(p[i], SIGKILL) == 0)
			wait_status(p[i], 5000);
	}
}

/*
 * qsptop run by another user against a process with the collector: one
 * line saying why it may not, and the process and its counts untouched.
 */
static void test_other_user_refused(void)
{
	char env[PATH_MAX + 32], expect[PATH_MAX + 32], locks[PATH_MAX + 32];
	char pidstr[16];
	struct run r;
	pid_t host;

	if (geteuid() != 0 || access("/usr/bin/setpriv", X_OK) != 0) {
		printf("SKIP: another user needs root and setpriv\n");
		return;
	}
	snprintf(env, sizeof(env), "LD_PRELOAD=%s", library);
	snprintf(expect, sizeof(expect), "%s/other.expect", tmp);
	snprintf(locks, sizeof(locks), "%s/tests/wl_locks", build);
	host = start_with((char *[]){ locks, "idle", expect, NULL },
			  &(struct start_opts){ .env = env });
	for (int i = 0; i < 300 && access(expect, F_OK) != 0; i++)
		usleep(10000);
	snprintf(pidstr, sizeof(pidstr), "%d", (int)host);
	r = run_capture((char *[]){ "setpriv", "--reuid=65534", "--regid=65534",
				    "--clear-groups", qsptop, "-b", "-n", "1",
				    "-p", pidstr, NULL }, 30000, 0);
	CHECK(r.status != 0 && strchr(r.err, '\n') == strrchr(r.err, '\n') &&
	      strstr(r.err, "not permitted") != NULL,
	      "another user: refused in one line: exit %d: %s", r.status, r.err);
	run_free(&r);
	r = run_capture((char *[]){ qsptop, "-b", "-d", "0.2", "-n", "1", "-j",
				    tmp_path("other.json"), "-p", pidstr, NULL },
			30000, 0);
	CHECK(r.status == 0 && strstr(r.out, "site_mutex_a") != NULL,
	      "the owner still watches it, counts and all: exit %d: %s", r.status,
	      r.err);
	run_free(&r);
	kill(host, SIGKILL);
	wait_status(host, 5000);
}

int main(void)
{
	find_paths("/tmp/qsptop-safety-XXXXXX", "wl_safety");
	signal(SIGPIPE, SIG_IGN);
	test_no_host_allocator();
	test_einval_side_by_side();
	test_cancelled_waits_count();
	test_children_leave_nothing();
	test_stale_sockets_swept();
	test_fork_during_walks();
	test_allocator_that_locks();
	test_descriptors_reused_by_host();
	test_pid_namespaces();
	test_other_user_refused();
	remove_tmp();
	return check_summary();
}
