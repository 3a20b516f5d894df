/*
 * Faults around a watched process: clients killed, stopped for 10 s,
 * mute, talking garbage, twenty at once; qsptop killed in the middle of
 * an injection; signal storms whose handlers lock; the process forking,
 * exec'ing and exiting from a thread that is not main. The process never
 * stops (its throughput in every fault is printed), never dies, and the
 * well-behaved qsptop that launched it sees every acquisition it made.
 */
#include <cJSON.h>
#include <signal.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/proto.h"
#include "../../common/sockpath.h"
#include "../unit/check.h"
#include "harness.h"

static char progress[PATH_MAX + 32], result[PATH_MAX + 32];
static pid_t target;

/* The host's progress: its ops count at ms, the last line at or before. */
static long ops_at(long ms)
{
	char *text = slurp_file(progress, "");
	long t, ops, best = -1;

	for (char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (sscanf(p, "%ld %ld", &t, &ops) == 2 && t <= ms)
			best = ops;
	}
	free(text);
	return best;
}

/* The host's clock (ms since it started), from its last progress line. */
static long host_ms(void)
{
	char *text = slurp_file(progress, "");
	long t = -1, ops, last = -1;

	for (char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (sscanf(p, "%ld %ld", &t, &ops) == 2)
			last = t;
	}
	free(text);
	return last;
}

/* Throughput over [from, to) of the host's clock, ops per second. */
static double rate(long from, long to)
{
	long a = ops_at(from), b = ops_at(to);

	return to > from && a >= 0 && b >= a ? (b - a) * 1000.0 / (double)(to - from) : -1;
}

static double quiet_rate;

/*
 * Run a fault; the host must go on after it: its count of operations
 * grows again (the deadline only catches a hang). Its throughput is
 * printed, not judged: how fast depends on the machine's load.
 */
static void during(const char *fault, void (*fn)(void))
{
	long from = host_ms(), to, after, now = -1;
	bool went_on = false;
	double r;

	fn();
	after = ops_at(LONG_MAX);
	for (long end = monotonic_ms() + 30000; !went_on && monotonic_ms() < end;
	     usleep(20000))
		went_on = (now = ops_at(LONG_MAX)) > after;
	to = host_ms();
	r = rate(from, to);
	printf("%-40s host throughput %9.0f ops/s (%.2fx quiet)\n", fault, r,
	       quiet_rate > 0 ? r / quiet_rate : 0);
	CHECK(went_on, "%s: the host went on: expected more than %ld "
	      "operations within 30 s, got %ld", fault, after, now);
	CHECK(kill(target, 0) == 0, "%s: the host is alive", fault);
}

static void signal_storm(void)
{
	for (int i = 0; i < 500; i++) {
		kill(target, SIGUSR2);
		usleep(2000);
	}
}

/* A qsptop -p watching the host: pid, once it printed a table. */
static pid_t watcher(const char *delay)
{
	char pidstr[16], *out = tmp_path("watch.out");
	pid_t q;

	snprintf(pidstr, sizeof(pidstr), "%d", (int)target);
	unlink(out);
	q = start((char *[]){ qsptop, "-b", "-d", (char *)delay, "-p", pidstr, NULL },
		  out, tmp_path("watch.err"));
	CHECK(file_has_text(out, "TYPE", 30000),
	      "qsptop -p -d %s printed a table", delay);
	return q;
}

static void clients_killed(void)
{
	for (int i = 0; i < 3; i++) {
		pid_t q = watcher("0.05");

		kill(q, SIGKILL);
		wait_status(q, 5000);
	}
}

static void client_stopped(void)
{
	pid_t q = watcher("0.05");
	int status;

	kill(q, SIGSTOP);
	sleep(10);
	kill(q, SIGCONT);
	usleep(500000);
	kill(q, SIGTERM);
	status = wait_status(q, 10000);
	CHECK(status == 0, "a client stopped 10 s then ended: exit %d", status);
}

/* A raw connection to the host's collector, greeted or not. */
static int raw_client(bool greet)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct proto_client_hello h = { .magic = PROTO_MAGIC, .version = PROTO_VERSION };
	struct wbuf b = { 0 };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sockpath_target(addr.sun_path, sizeof(addr.sun_path), geteuid(), target);
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		close(fd);
		return -1;
	}
	if (greet) {
		proto_put_client_hello(&b, &h);
		proto_put_set_interval(&b, 10);
		if (send(fd, b.data, b.len, MSG_NOSIGNAL) < 0) {
			/* Refused already (all sessions taken): fine. */
		}
		wbuf_free(&b);
	}
	return fd;
}

static void client_never_reads(void)
{
	int fd = raw_client(true);

	CHECK(fd >= 0, "a mute client connects");
	sleep(3);
	if (fd >= 0)
		close(fd);
}

static void clients_send_garbage(void)
{
	unsigned seed = 7;
	uint8_t junk[4096];

	for (int round = 0; round < 20; round++) {
		int fd = raw_client(round % 2 == 0);

		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (uint8_t)rand_r(&seed);
		if (fd >= 0) {
			if (send(fd, junk, sizeof(junk), MSG_NOSIGNAL) < 0) {
				/* Dropped by the collector already: as it should. */
			}
			usleep(20000);
			close(fd);
		}
	}
}

static void twenty_clients(void)
{
	int fds[20];
	char buf[65536];

	for (int i = 0; i < 20; i++)
		fds[i] = raw_client(true);
	for (int round = 0; round < 10; round++) {
		for (int i = 0; i < 20; i++) {
			if (fds[i] >= 0 && recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT) < 0) {
				/* Nothing yet, or refused: both fine. */
			}
		}
		usleep(100000);
	}
	for (int i = 0; i < 20; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
	}
}

/* Whether our child pid still runs (a zombie does not). */
static bool alive(pid_t pid)
{
	int status;

	return waitpid(pid, &status, WNOHANG) == 0;
}

/*
 * qsptop killed at points of its injection into a process that had no
 * collector: the process survives every time, and a last qsptop works.
 */
static void test_killed_mid_injection(void)
{
	static const int delays_ms[] = { 1, 3, 6, 10, 20, 40, 80, 150 };
	char expect[PATH_MAX + 32], pidstr[16], locks[PATH_MAX + 32];
	pid_t host, q;
	struct run r;

	snprintf(expect, sizeof(expect), "%s/busy.expect", tmp);
	snprintf(locks, sizeof(locks), "%s/tests/wl_locks", build);
	host = start((char *[]){ locks, "busy", expect, NULL }, NULL, NULL);
	for (int i = 0; i < 300 && access(expect, F_OK) != 0; i++)
		usleep(10000);
	snprintf(pidstr, sizeof(pidstr), "%d", (int)host);
	for (size_t i = 0; i < sizeof(delays_ms) / sizeof(delays_ms[0]); i++) {
		q = start((char *[]){ qsptop, "-b", "-d", "0.1", "-p", pidstr, NULL },
			  tmp_path("inj.out"), tmp_path("inj.err"));
		usleep((useconds_t)delays_ms[i] * 1000);
		kill(q, SIGKILL);
		wait_status(q, 5000);
		usleep(50000);
		CHECK(alive(host), "qsptop killed %d ms into -p: the host lives",
		      delays_ms[i]);
	}
	r = run_capture((char *[]){ qsptop, "-b", "-d", "0.2", "-n", "2", "-p",
				    pidstr, NULL }, 30000, 0);
	CHECK(r.status == 0 && strstr(r.out, "site_busy"),
	      "after all that, qsptop -p still works: exit %d: %s", r.status, r.err);
	run_free(&r);
	kill(host, SIGTERM);
	CHECK(wait_status(host, 10000) == 0, "the host ends well");
}

/* Acquisitions on the host's rows, and what was dropped, from a snapshot. */
static double recorded(const cJSON *snap)
{
	const cJSON *row;
	double sum = 0;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const char *module = str_field(cJSON_GetObjectItem(row, "site"), "module");

		if (module && strstr(module, "wl_faults"))
			sum += num_field(row, "acquisitions");
	}
	return sum;
}

static void test_faults_around_a_watched_process(void)
{
	char json[PATH_MAX + 32], out[PATH_MAX + 32], err[PATH_MAX + 32];
	long made = -1;
	pid_t q;
	int status, child = -1;
	cJSON *snap;
	FILE *f;

	snprintf(json, sizeof(json), "%s/final.json", tmp);
	snprintf(out, sizeof(out), "%s/launch.out", tmp);
	snprintf(err, sizeof(err), "%s/launch.err", tmp);
	q = start((char *[]){ qsptop, "-b", "-d", "0.2", "-j", json, "--",
			      workload, progress, result, NULL }, out, err);
	for (int i = 0; i < 500 && host_ms() < 1000; i++)
		usleep(10000);
	target = first_child(q, 0);	/* the launched command */
	CHECK(target > 0, "the launched host runs");
	if (target <= 0)
		return;
	quiet_rate = rate(host_ms() - 800, host_ms());
	printf("%-40s host throughput %9.0f ops/s\n", "quiet", quiet_rate);
	during("SIGUSR2 storm, handlers lock", signal_storm);
	during("3 clients killed mid-stream", clients_killed);
	during("a client stopped for 10 s", client_stopped);
	during("a client that never reads", client_never_reads);
	during("20 clients sending garbage", clients_send_garbage);
	during("20 clients at once", twenty_clients);
	kill(target, SIGUSR1);		/* fork, exec, exit() from a thread */
	status = wait_status(q, 30000);
	CHECK(status == 0, "the launching qsptop exits 0 with its command: %d", status);
	f = fopen(result, "r");
	if (f && fscanf(f, "acquisitions %ld child %d", &made, &child) != 2)
		made = -1;
	if (f)
		fclose(f);
	CHECK(child == 0, "the host's child exec'd and exited 0 (%d)", child);
	snap = load_json(json);
	if (snap == NULL) {
		char *text = slurp_file(err, "");

		CHECK(false, "the final snapshot was written: %s", text);
		free(text);
	}
	if (snap) {
		double got = recorded(snap), dropped = num_field(snap, "dropped");
		const cJSON *mem = cJSON_GetObjectItem(snap, "collector_memory");

		printf("%-40s %.0f recorded + %.0f dropped, %ld made\n",
		       "after every fault", got, dropped, made);
		CHECK(made > 0 && got + dropped == (double)made,
		      "every acquisition is counted: %.0f recorded + %.0f dropped "
		      "(handlers inside hooks) = %ld made", got, dropped, made);
		CHECK(num_field(mem, "used") <= num_field(mem, "cap"),
		      "collector memory within its cap: %.0f of %.0f",
		      num_field(mem, "used"), num_field(mem, "cap"));
		cJSON_Delete(snap);
	}
}

int main(void)
{
	find_paths("/tmp/qsptop-faults-XXXXXX", "wl_faults");
	signal(SIGPIPE, SIG_IGN);
	snprintf(progress, sizeof(progress), "%s/progress", tmp);
	snprintf(result, sizeof(result), "%s/result", tmp);
	test_faults_around_a_watched_process();
	test_killed_mid_injection();
	remove_tmp();
	return check_summary();
}
