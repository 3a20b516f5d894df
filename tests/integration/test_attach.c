/*
 * Attaching to running workloads: connecting to a preloaded collector,
 * injecting one with -p, attach cycles, and a hostile collector.
 */
#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../common/proto.h"
#include "../../common/sockpath.h"
#include "../unit/check.h"
#include "launch.h"

/* Start the idle workload preloaded and wait until it has locked. */
static pid_t start_idle(const char *expect)
{
	char preload[sizeof(library) + 16];
	pid_t pid;

	unlink(expect);
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", library);
	pid = start_with((char *[]){ workload, "idle", (char *)expect, NULL },
			 &(struct start_opts){ .env = preload });
	for (int i = 0; i < 500 && access(expect, F_OK) != 0; i++)
		usleep(10000);
	usleep(50000);
	return pid;
}

static int connect_socket(pid_t pid)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	sockpath_target(addr.sun_path, sizeof(addr.sun_path), geteuid(), pid);
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Garbage sent to a collector ends that connection and nothing else. */
static void check_collector_refuses_garbage(pid_t pid)
{
	struct timeval tv = { 5, 0 };
	char buf[65536];
	int fd = connect_socket(pid);
	ssize_t n;

	CHECK(fd >= 0, "connect to the preloaded process");
	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (send(fd, "GET / HTTP/1.0\r\n\r\nxxxxxxxxxxxxxxxxx", 35, MSG_NOSIGNAL) < 0)
		perror("send");
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		;
	CHECK(n == 0, "the collector closed a connection that sent garbage");
	close(fd);
	CHECK(kill(pid, 0) == 0, "the target survives garbage on its socket");
}

static void test_connect_to_preloaded(void)
{
	char *expect = tmp_path("idle.expect"), *json = tmp_path("p.json");
	char pidstr[16];
	pid_t pid = start_idle(expect);
	struct run r;
	cJSON *snap;

	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	check_collector_refuses_garbage(pid);
	r = run_argv((char *[]){ qsptop, "-b", "-d", "0.1", "-n", "2", "-j", json,
				 "-p", pidstr, NULL });
	snap = load_json(json);
	CHECK(r.status == 0, "-p PID -n 2: exit %d: %s", r.status, r.err);
	CHECK(sum_rows(snap, "site_mutex_a", "mutex").acq == 1000,
	      "-p sees the 1000 acquisitions made before it connected");
	CHECK_STR(snap ? str_field(snap, "state") : NULL, "running");
	CHECK(kill(pid, 0) == 0, "the target keeps running after qsptop leaves");
	cJSON_Delete(snap);
	run_free(&r);

	/* Two clients at once: each gets its own, complete view. */
	{
		char *j1 = tmp_path("two1.json"), *j2 = tmp_path("two2.json");
		char *a1[] = { qsptop, "-b", "-d", "0.1", "-n", "3", "-j", j1, "-p", pidstr, NULL };
		char *a2[] = { qsptop, "-b", "-d", "0.1", "-n", "3", "-j", j2, "-p", pidstr, NULL };
		pid_t q1 = start(a1, tmp_path("two1.out"), tmp_path("two1.err"));
		pid_t q2 = start(a2, tmp_path("two2.out"), tmp_path("two2.err"));
		int s1 = wait_status(q1, 20000), s2 = wait_status(q2, 20000);
		cJSON *k1 = load_json(j1), *k2 = load_json(j2);

		CHECK(s1 == 0 && s2 == 0, "two clients at once: exits %d and %d", s1, s2);
		CHECK(sum_rows(k1, "site_mutex_a", "mutex").acq == 1000 &&
		      sum_rows(k2, "site_mutex_a", "mutex").acq == 1000,
		      "two clients at once: each sees all 1000 acquisitions");
		cJSON_Delete(k1);
		cJSON_Delete(k2);
	}

	/* The collector vanishes under a connected qsptop. */
	unlink(json);
	{
		char *argv[] = { qsptop, "-b", "-d", "0.1", "-j", json, "-p", pidstr, NULL };
		char *out = tmp_path("vanish.out"), *err = tmp_path("vanish.err");
		pid_t q = start(argv, out, err);
		char *text;
		int status;

		CHECK(file_has_text(out, "CALL SITE", 30000),
		      "vanish: qsptop -p connected and printed a table");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		status = wait_status(q, 10000);
		text = slurp_file(err, "");
		CHECK(status == 1, "lost collector: expected exit 1, got %d", status);
		CHECK(strstr(text, "lost the collector of PID") != NULL,
		      "lost collector says so: %s", text);
		free(text);
		snap = load_json(json);
		CHECK(sum_rows(snap, "site_mutex_a", "mutex").acq == 1000,
		      "the snapshot is still written after the collector vanished");
		cJSON_Delete(snap);
	}
}

/*
 * A process that never had the collector: qsptop loads it, watches, leaves,
 * and the process runs on as before.
 */
static void test_no_collector_injects(void)
{
	char *json = tmp_path("inj.json");
	int in[2] = { -1, -1 };
	pid_t pid = pipe(in) == 0 ? fork() : -1;
	char pidstr[16];
	struct run r;
	cJSON *snap;

	/* cat waits in read() on a pipe: a call any stop restarts unseen. */
	if (pid == 0) {
		dup2(in[0], 0);
		close(in[1]);
		execl("/bin/cat", "cat", (char *)NULL);
		_exit(126);
	}
	close(in[0]);
	usleep(100000);
	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	r = run_argv((char *[]){ qsptop, "-b", "-d", "0.1", "-n", "2", "-j", json,
				 "-p", pidstr, NULL });
	snap = load_json(json);
	CHECK(r.status == 0, "-p on a process without collector: exit %d: %s",
	      r.status, r.err);
	CHECK(strstr(r.out, "(injected)") != NULL, "the header says it was injected");
	CHECK_STR(snap ? str_field(snap, "state") : NULL, "running");
	CHECK(kill(pid, 0) == 0, "the process runs on after qsptop leaves");
	cJSON_Delete(snap);
	run_free(&r);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(in[1]);
}

/* Entries in a /proc directory of a process (threads, descriptors). */
static int count_entries(pid_t pid, const char *what)
{
	char path[64], cmd[128], *text;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	snprintf(cmd, sizeof(cmd), "ls %s | wc -l > %s", path, tmp_path("count"));
	if (system(cmd) != 0)
		return -1;
	text = slurp_file(tmp_path("count"), "");
	n = atoi(text);
	free(text);
	return n;
}

/* Attach and detach 50 times: no crash, no hang, nothing leaked. */
static void check_attach_cycles(pid_t pid, const char *pidstr)
{
	int threads = count_entries(pid, "task"), fds = count_entries(pid, "fd");
	int failures = 0;

	for (int i = 0; i < 50; i++) {
		struct run r = run_argv((char *[]){ qsptop, "-b", "-d", "0.02", "-n", "1",
						     "-p", (char *)pidstr, NULL });

		failures += r.status != 0;
		run_free(&r);
	}
	CHECK(failures == 0, "50 attach/detach cycles: %d failed", failures);
	CHECK(kill(pid, 0) == 0, "the process survives 50 cycles");
	/* The last session's socket closes just after qsptop exits. */
	for (int i = 0; i < 100 && count_entries(pid, "fd") != fds; i++)
		usleep(20000);
	CHECK(count_entries(pid, "task") == threads, "no thread leaked: %d, then %d",
	      threads, count_entries(pid, "task"));
	CHECK(count_entries(pid, "fd") == fds, "no descriptor leaked: %d, then %d",
	      fds, count_entries(pid, "fd"));
}

/*
 * qsptop -p on a busy process that never had the collector: the collector
 * is loaded, counts arrive, quitting restores the process; a second -p
 * finds it dormant and wakes it; the process's own results stay right.
 */
static void test_attach_running(void)
{
	char *expect = tmp_path("busy.expect"), *json = tmp_path("busy.json");
	char pidstr[16];
	double first, second, took_s;
	long began;
	struct run r;
	cJSON *snap;
	pid_t pid;
	int status;

	unlink(expect);
	pid = start_with((char *[]){ workload, "busy", expect, NULL },
			 &(struct start_opts){ 0 });
	for (int i = 0; i < 500 && access(expect, F_OK) != 0; i++)
		usleep(10000);
	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	r = run_argv((char *[]){ qsptop, "-b", "-d", "0.2", "-n", "3", "-j", json,
				 "-p", pidstr, NULL });
	snap = load_json(json);
	first = sum_rows(snap, "site_busy", "mutex").acq;
	CHECK(r.status == 0 && strstr(r.out, "(injected)"),
	      "-p on a running process: exit %d, injected: %s", r.status, r.err);
	CHECK(first > 0, "-p on a running process sees its locks (%.0f)", first);
	cJSON_Delete(snap);
	run_free(&r);
	began = monotonic_ms();
	r = run_argv((char *[]){ qsptop, "-b", "-d", "0.2", "-n", "3", "-j", json,
				 "-p", pidstr, NULL });
	took_s = (double)(monotonic_ms() - began) / 1e3;
	snap = load_json(json);
	second = sum_rows(snap, "site_busy", "mutex").acq;
	CHECK(r.status == 0 && strstr(r.out, "(connected)"),
	      "a second -p connects to the loaded collector: exit %d: %s", r.status, r.err);
	CHECK(second > 0, "a second -p wakes it: counts go on (%.0f)", second);
	/* Its own baseline: neither the first session nor the dormant time. */
	CHECK(num_field(snap, "elapsed_s") > 0 &&
	      num_field(snap, "elapsed_s") <= took_s,
	      "the second session's elapsed_s is its own: expected at most "
	      "the %.2f s it ran, got %.2f s", took_s,
	      num_field(snap, "elapsed_s"));
	cJSON_Delete(snap);
	run_free(&r);
	check_attach_cycles(pid, pidstr);
	kill(pid, SIGTERM);
	status = wait_status(pid, 10000);
	CHECK(status == 0, "the process attached to finished its work correctly: %d", status);
}

/*
 * A process that listens where its own collector would and sends bytes to
 * whoever connects: a collector gone bad, inside its process (qsptop
 * refuses a socket served by anyone else).
 */
static pid_t impostor(const void *bytes, size_t len)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int ready[2], fd, cfd;
	char dir[108], c = 0;
	pid_t pid;

	if (pipe(ready) < 0)
		return -1;
	pid = fork();
	if (pid != 0) {
		close(ready[1]);
		if (read(ready[0], &c, 1) != 1)
			perror("impostor");
		close(ready[0]);
		return pid;
	}
	alarm(30);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	sockpath_dir(dir, sizeof(dir), geteuid());
	sockpath_make_private(dir);
	sockpath_self(addr.sun_path, sizeof(addr.sun_path));
	unlink(addr.sun_path);
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    listen(fd, 1) < 0 || write(ready[1], "r", 1) != 1)
		_exit(1);
	cfd = accept(fd, NULL, NULL);
	if (send(cfd, bytes, len, MSG_NOSIGNAL) < 0)
		_exit(1);
	pause();
	_exit(0);
}

/* qsptop -p against an impostor that sends bytes; returns qsptop's stderr. */
static char *against_impostor(const void *bytes, size_t len, int *status)
{
	pid_t target = impostor(bytes, len);
	char pidstr[16], path[108];
	char *out = tmp_path("fake.out"), *err = tmp_path("fake.err");
	pid_t q;

	snprintf(pidstr, sizeof(pidstr), "%d", (int)target);
	q = start((char *[]){ qsptop, "-b", "-p", pidstr, NULL }, out, err);
	*status = wait_status(q, 10000);
	sockpath_target(path, sizeof(path), geteuid(), target);
	unlink(path);
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
	return slurp_file(err, "");
}

static void test_hostile_collector(void)
{
	struct proto_hello h = { .magic = PROTO_MAGIC, .version = PROTO_VERSION - 1 };
	struct wbuf b = { 0 };
	int status;
	char *err = against_impostor("\xff\xff\xff\xff garbage garbage", 24, &status);

	CHECK(status == 1, "garbage from the socket: expected exit 1, got %d", status);
	CHECK(strstr(err, "garbage from the collector") != NULL, "says garbage: %s", err);
	free(err);
	proto_put_hello(&b, &h);
	err = against_impostor(b.data, b.len, &status);
	CHECK(status == 1, "version mismatch: expected exit 1, got %d", status);
	CHECK(strstr(err, "version mismatch") != NULL, "says version mismatch: %s", err);
	free(err);
	wbuf_free(&b);
	h.version = PROTO_VERSION;
	proto_put_hello(&b, &h);
	proto_put_stack(&b, &(struct proto_stack){ .id = 0xfffffff0u, .depth = 1,
						   .frames = { 0x1000 } });
	err = against_impostor(b.data, b.len, &status);
	CHECK(status == 1, "bad stack id: expected exit 1, got %d", status);
	CHECK(strstr(err, "collector sent a stack id out of range") != NULL,
	      "says the stack id is out of range: %s", err);
	free(err);
	wbuf_free(&b);
}

int main(void)
{
	find_paths("/tmp/qsptop-test-XXXXXX", "wl_locks");
	signal(SIGPIPE, SIG_IGN);
	test_no_collector_injects();
	test_attach_running();
	test_connect_to_preloaded();
	test_hostile_collector();
	remove_tmp();
	return check_summary();
}
