/*
 * Injection into running processes (tui/inject*.c, linked in): the collector
 * loads into a workload that never preloaded it, the workload's parked
 * threads keep working and its results stay exact, every refusal says why
 * and leaves the target running, and a dlopen that does not return in time
 * gives its thread back anyway, as it does when qsptop is killed mid-call.
 * Signals sent meanwhile (a pthread_cancel) are not lost, no signal
 * disposition changes, and the borrowed thread's registers come back.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/clock.h"
#include "../../common/proto.h"
#include "../../common/sockpath.h"
#include "../../tui/inject.h"
#include "../../tui/inject_proc.h"
#include "../../tui/inject_thread.h"
#include "../unit/check.h"
#include "harness.h"

#define READY_MS 5000
#define PROGRESS_MS 30000	/* catches a stalled thread, not a slow one */
#define EXIT_MS 15000
#define REPEATS 10

/* Workloads: a worker to cancel, registers checked, a heap altstack. */
static char workload_cancel[PATH_MAX], workload_regs[PATH_MAX];
static char workload_altstack[PATH_MAX];

/* A started program and the file holding its output. */
struct proc {
	pid_t pid;
	char out[PATH_MAX + 32];
};

/* A "tick" line of the workload: the progress of each of its threads. */
struct tick {
	long n, sleep0, sleep1, epoll, poll, cond;
};

/* Test a copy of the collector: a rebuild meanwhile cannot change it. */
static void copy_library(void)
{
	char cmd[3 * PATH_MAX];

	snprintf(cmd, sizeof(cmd), "cp %s %s/libqsptop.so", library, tmp);
	if (system(cmd) != 0) {
		fprintf(stderr, "cannot copy %s\n", library);
		exit(1);
	}
	join(library, tmp, "/libqsptop.so");
}

/* The file's text, "" if none; kept until 8 more calls. */
static char *read_text(const char *path)
{
	static char *kept[8];
	static int next;
	char **slot = &kept[next++ % 8];

	free(*slot);
	return *slot = slurp_file(path, "");
}

/* Start argv with its output in a file; no input. */
static void spawn(struct proc *p, char *const argv[], const char *name)
{
	static int seq;

	snprintf(p->out, sizeof(p->out), "%s/%s-%d.out", tmp, name, seq++);
	p->pid = start(argv, p->out, p->out);
}

/* Poll until the output of p holds text. */
static bool wait_output(const struct proc *p, const char *text, int ms)
{
	int64_t deadline = clock_now_ms() + ms;

	while (strstr(read_text(p->out), text) == NULL) {
		if (clock_now_ms() >= deadline)
			return false;
		usleep(5000);
	}
	return true;
}

static bool start_target(struct proc *p)
{
	char *argv[] = { workload, NULL };

	spawn(p, argv, "target");
	return wait_output(p, "ready\n", READY_MS);
}

/* Ask the workload to finish; its exit status, -1 if it had to be killed. */
static int stop_target(struct proc *p)
{
	kill(p->pid, SIGTERM);
	return wait_status(p->pid, EXIT_MS);
}

static void kill_proc(struct proc *p)
{
	kill(p->pid, SIGKILL);
	kill(p->pid, SIGCONT);
	waitpid(p->pid, NULL, 0);
}

static bool last_tick(const struct proc *p, struct tick *t)
{
	const char *text = read_text(p->out), *at = NULL, *s = text;

	while ((s = strstr(s, "tick ")) != NULL)
		at = s++;
	return at != NULL &&
	       sscanf(at, "tick %ld sleep0=%ld sleep1=%ld epoll=%ld poll=%ld "
		      "cond=%ld", &t->n, &t->sleep0, &t->sleep1, &t->epoll,
		      &t->poll, &t->cond) == 6;
}

/*
 * Every thread of the workload moves on from where it is now: each of its
 * counts grows past the last tick line's (the first one awaited too).
 */
static bool all_threads_progress(const struct proc *p)
{
	int64_t deadline = clock_now_ms() + PROGRESS_MS;
	struct tick a, b;

	while (!last_tick(p, &a)) {
		if (clock_now_ms() >= deadline)
			return false;
		usleep(10000);
	}
	do {
		usleep(10000);
		if (last_tick(p, &b) && b.n > a.n && b.sleep0 > a.sleep0 &&
		    b.sleep1 > a.sleep1 && b.epoll > a.epoll &&
		    b.poll > a.poll && b.cond > a.cond)
			return true;
	} while (clock_now_ms() < deadline);
	return false;
}

/* Mappings of PID whose path ends with name. */
static int count_mapped(pid_t pid, const char *name)
{
	char path[64], line[PATH_MAX + 256];
	size_t n = strlen(name);
	int count = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		size_t m = strcspn(line, "\n");

		count += m >= n && strncmp(line + m - n, name, n) == 0;
	}
	if (f != NULL)
		fclose(f);
	return count;
}

static void on_hello(void *ctx, const struct proto_hello *m)
{
	*(struct proto_hello *)ctx = *m;
}

/* Connect to the collector of pid (retrying 2 s) and read its HELLO. */
static bool collector_says_hello_as(pid_t pid, uid_t uid)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	static struct proto_hello hello;
	struct proto_visitor v = { .hello = on_hello };
	int64_t deadline = clock_now_ms() + 2000;
	static uint8_t buf[1 << 16];
	struct proto_frame f;
	size_t len = 0;
	char err[128];
	long used = 0;
	int fd;

	sockpath_target(addr.sun_path, sizeof(addr.sun_path), uid, pid);
	for (;;) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0)
			break;
		close(fd);
		if (clock_now_ms() >= deadline)
			return false;
		usleep(10000);
	}
	while (used == 0 && len < sizeof(buf)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, (int)(deadline + 1000 - clock_now_ms())) <= 0 ||
		    (n = read(fd, buf + len, sizeof(buf) - len)) <= 0)
			break;
		len += (size_t)n;
		used = proto_split(buf, len, &f, err, sizeof(err));
	}
	close(fd);
	memset(&hello, 0, sizeof(hello));
	return used > 0 && f.type == MSG_HELLO &&
	       proto_decode(&f, &v, &hello, err, sizeof(err)) == 0 &&
	       hello.magic == PROTO_MAGIC && hello.pid == (uint32_t)pid;
}

static bool collector_says_hello(pid_t pid)
{
	return collector_says_hello_as(pid, geteuid());
}

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Inject and report how long it took, in ms. */
static int timed_inject(pid_t pid, const char *lib, char *msg, size_t len,
			double *ms)
{
	struct timespec a, b;
	int rc;

	/* A thread borrowed from epoll_wait sees one EINTR: only with
	 * --force (the workload counts them). */
	bool force = inject_only_syscall == SYS_epoll_wait;

	clock_gettime(CLOCK_MONOTONIC, &a);
	rc = inject_collector(pid, lib, force, msg, len);
	clock_gettime(CLOCK_MONOTONIC, &b);
	*ms = (double)(b.tv_sec - a.tv_sec) * 1e3 +
	      (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	return rc;
}

static void test_syscall_ranks(void)
{
	int pipefd[2], sock[2], file = open("/proc/self/exe", O_RDONLY);
	struct timeval tv = { 5, 0 };
	uint64_t a[6] = { 0 };

	CHECK(pipe(pipefd) == 0 && file >= 0 &&
	      socketpair(AF_UNIX, SOCK_STREAM, 0, sock) == 0,
	      "pipe/open/socketpair failed");
	/* A stop alone fails these with EINTR (signal(7)). */
	CHECK_U64(inject_syscall_rank(getpid(), SYS_epoll_wait, a), RANK_EINTR);
	CHECK_U64(inject_syscall_rank(getpid(), SYS_rt_sigtimedwait, a), RANK_EINTR);
	CHECK_U64(inject_syscall_rank(getpid(), SYS_semtimedop, a), RANK_EINTR);
	/* Relative sleeps, poll and timed futex waits need the restart block. */
	CHECK_U64(inject_syscall_rank(getpid(), SYS_clock_nanosleep, a), RANK_AT_END);
	CHECK_U64(inject_syscall_rank(getpid(), SYS_nanosleep, a), RANK_AT_END);
	CHECK_U64(inject_syscall_rank(getpid(), SYS_poll, a), RANK_AT_END);
	a[1] = TIMER_ABSTIME;
	CHECK_U64(inject_syscall_rank(getpid(), SYS_clock_nanosleep, a), RANK_SAFE);
	/* sleep(): its remaining time lands in its own request. */
	a[1] = 0, a[2] = a[3] = (uint64_t)(uintptr_t)&tv;
	CHECK_U64(inject_syscall_rank(getpid(), SYS_clock_nanosleep, a), RANK_SAFE);
	a[2] = a[3] = 0;
	a[1] = FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG;	/* pthread_cond_wait */
	CHECK_U64(inject_syscall_rank(getpid(), SYS_futex, a), RANK_FUTEX);
	a[1] = FUTEX_WAIT | FUTEX_PRIVATE_FLAG;		/* a lock */
	CHECK_U64(inject_syscall_rank(getpid(), SYS_futex, a), RANK_LOCK_WAIT);
	a[3] = (uint64_t)(uintptr_t)&tv;		/* timed */
	CHECK_U64(inject_syscall_rank(getpid(), SYS_futex, a), RANK_AT_END);
	a[1] = FUTEX_WAKE, a[3] = 0;
	CHECK_U64(inject_syscall_rank(getpid(), SYS_futex, a), RANK_NEVER);
	a[0] = (uint64_t)pipefd[0];
	CHECK_U64(inject_syscall_rank(getpid(), SYS_read, a), RANK_SAFE);
	a[0] = (uint64_t)sock[0];
	CHECK_U64(inject_syscall_rank(getpid(), SYS_recvfrom, a), RANK_SAFE);
	setsockopt(sock[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	CHECK_U64(inject_syscall_rank(getpid(), SYS_recvfrom, a), RANK_EINTR);
	a[0] = (uint64_t)file;				/* the loader's kind */
	CHECK_U64(inject_syscall_rank(getpid(), SYS_read, a), RANK_NEVER);
	CHECK_U64(inject_syscall_rank(getpid(), SYS_mmap, a), RANK_NEVER);
	{
		/* Waits under a mask of their own are never borrowed. */
		sigset_t set;
		uint64_t arg[2] = { 0, 8 };	/* pselect6's { set, size } */
		uint64_t b[6] = { 0 };

		CHECK_U64(inject_syscall_rank(getpid(), SYS_rt_sigsuspend, b),
			  RANK_NEVER);
		CHECK_U64(inject_syscall_rank(getpid(), SYS_ppoll, b), RANK_SAFE);
		b[3] = (uint64_t)(uintptr_t)&set;
		CHECK_U64(inject_syscall_rank(getpid(), SYS_ppoll, b), RANK_NEVER);
		b[3] = 0, b[5] = (uint64_t)(uintptr_t)arg;
		CHECK_U64(inject_syscall_rank(getpid(), SYS_pselect6, b), RANK_SAFE);
		arg[0] = (uint64_t)(uintptr_t)&set;
		CHECK_U64(inject_syscall_rank(getpid(), SYS_pselect6, b), RANK_NEVER);
		b[5] = 0, b[4] = (uint64_t)(uintptr_t)&set;
		CHECK_U64(inject_syscall_rank(getpid(), SYS_epoll_pwait, b),
			  RANK_NEVER);
	}
	close(pipefd[0]);
	close(pipefd[1]);
	close(sock[0]);
	close(sock[1]);
	close(file);
}

static void test_loads_into_running_target(void)
{
	char msg[512], junk[PATH_MAX + 32], want[64];
	struct proc p;
	double ms;
	int rc, fd, maps;

	if (!start_target(&p)) {
		CHECK(0, "workload did not start: %s", read_text(p.out));
		kill_proc(&p);
		return;
	}
	CHECK(count_mapped(p.pid, "/libqsptop.so") == 0,
	      "the workload should start without the collector");

	/* A failing dlopen reports dlerror's text and changes nothing. */
	snprintf(junk, sizeof(junk), "%s/not_a_library.so", tmp);
	fd = open(junk, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	for (int i = 0; i < 64; i++)
		CHECK(write(fd, "this is not an ELF file at all\n", 31) == 31,
		      "write");
	close(fd);
	rc = inject_collector(p.pid, junk, false, msg, sizeof(msg));
	snprintf(want, sizeof(want), "dlopen failed in PID %d: ", (int)p.pid);
	CHECK(rc == INJECT_FAILED && starts_with(msg, want) &&
	      strstr(msg, "invalid ELF header") != NULL,
	      "expected \"%s... invalid ELF header\", got %d \"%s\"", want, rc,
	      msg);
	CHECK(all_threads_progress(&p), "threads stalled after a failed dlopen");

	rc = timed_inject(p.pid, library, msg, sizeof(msg), &ms);
	CHECK(rc == INJECT_LOADED && msg[0] == '\0',
	      "inject: expected INJECT_LOADED and no message, got %d \"%s\"",
	      rc, msg);
	printf("injected in %.2f ms through thread %d parked in syscall %ld\n",
	       ms, (int)inject_last_tid, inject_last_syscall);
	maps = count_mapped(p.pid, "/libqsptop.so");
	CHECK(maps > 0, "libqsptop.so is not in /proc/%d/maps", (int)p.pid);
	CHECK(collector_says_hello(p.pid),
	      "no HELLO from the injected collector's socket");
	CHECK(all_threads_progress(&p), "threads stalled after the injection");

	/* Twice: the library is there, nothing is loaded again. */
	rc = inject_collector(p.pid, library, false, msg, sizeof(msg));
	CHECK(rc == INJECT_ALREADY, "second inject: expected INJECT_ALREADY, "
	      "got %d \"%s\"", rc, msg);
	CHECK(count_mapped(p.pid, "/libqsptop.so") == maps,
	      "the second inject changed the mappings");
	CHECK(collector_says_hello(p.pid), "no HELLO after the second inject");

	rc = stop_target(&p);
	CHECK(rc == 0 && strstr(read_text(p.out), "\nok ") != NULL,
	      "workload: expected exit 0 and \"ok\", got %d:\n%s", rc,
	      read_text(p.out));
}

/* Expect inject to fail with a message starting with want. */
static void expect_refusal(pid_t pid, const char *lib, const char *want)
{
	char msg[512];
	int rc = inject_collector(pid, lib, false, msg, sizeof(msg));

	CHECK(rc == INJECT_FAILED && starts_with(msg, want),
	      "PID %d: expected \"%s...\", got %d \"%s\"", (int)pid, want, rc,
	      msg);
}

static char state_of(pid_t pid)
{
	char path[64], text[4096], state[32] = "?";

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (inject_slurp(path, text, sizeof(text)) > 0)
		inject_field(text, "State", state, sizeof(state));
	return state[0];
}

static bool wait_state(pid_t pid, char want)
{
	int64_t deadline = clock_now_ms() + 2000;

	while (state_of(pid) != want) {
		if (clock_now_ms() >= deadline)
			return false;
		usleep(2000);
	}
	return true;
}

static void start_sleep(struct proc *p)
{
	char *argv[] = { "/bin/sleep", "60", NULL };

	spawn(p, argv, "sleep");
	wait_state(p->pid, 'S');
}

static void test_refuses_missing_and_stopped(void)
{
	char want[128];
	struct proc p;
	pid_t gone = fork();

	if (gone == 0)
		_exit(0);
	waitpid(gone, NULL, 0);
	snprintf(want, sizeof(want), "no process with PID %d", (int)gone);
	expect_refusal(gone, library, want);
	snprintf(want, sizeof(want), "cannot attach qsptop to itself");
	expect_refusal(getpid(), library, want);

	start_sleep(&p);
	kill(p.pid, SIGSTOP);
	CHECK(wait_state(p.pid, 'T'), "sleep did not stop");
	snprintf(want, sizeof(want), "PID %d is stopped (state T", (int)p.pid);
	expect_refusal(p.pid, library, want);
	CHECK(state_of(p.pid) == 'T', "the stopped process changed state");
	kill(p.pid, SIGCONT);
	CHECK(wait_state(p.pid, 'S'), "sleep did not continue after SIGCONT");
	kill_proc(&p);
}

static void test_refuses_traced(void)
{
	char want[128];
	struct proc p;

	start_sleep(&p);
	CHECK(ptrace(PTRACE_SEIZE, p.pid, 0, 0) == 0, "seize: %s",
	      strerror(errno));
	snprintf(want, sizeof(want), "PID %d is already traced by PID %d "
		 "(a debugger?)", (int)p.pid, (int)getpid());
	expect_refusal(p.pid, library, want);
	kill_proc(&p);
}

static void test_refuses_static(void)
{
	char src[PATH_MAX + 32], bin[PATH_MAX + 32], cmd[3 * PATH_MAX];
	char want[128];
	struct proc p;
	FILE *f;

	snprintf(src, sizeof(src), "%s/static.c", tmp);
	snprintf(bin, sizeof(bin), "%s/static", tmp);
	f = fopen(src, "w");
	fputs("#include <unistd.h>\nint main(void) { pause(); return 0; }\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -static -o %s %s 2>/dev/null", bin, src);
	if (system(cmd) != 0) {
		printf("note: cc -static failed; static binary test skipped\n");
		return;
	}
	char *argv[] = { bin, NULL };
	spawn(&p, argv, "static");
	wait_state(p.pid, 'S');
	snprintf(want, sizeof(want), "PID %d is a static binary: start it "
		 "with qsptop -- CMD", (int)p.pid);
	expect_refusal(p.pid, library, want);
	kill_proc(&p);
}

/* Another user may not trace our target: the injection runs as nobody. */
static void test_refuses_other_user(void)
{
	char msg[512] = "", want[128];
	struct proc p;
	int fds[2];
	pid_t child;

	if (geteuid() != 0) {
		printf("note: not root; other-user test skipped\n");
		return;
	}
	if (!start_target(&p)) {
		CHECK(0, "workload did not start");
		kill_proc(&p);
		return;
	}
	CHECK(pipe(fds) == 0, "pipe");
	child = fork();
	if (child == 0) {
		int rc = -9;

		close(fds[0]);
		if (setgroups(0, NULL) == 0 && setresgid(65534, 65534, 65534) == 0 &&
		    setresuid(65534, 65534, 65534) == 0)
			rc = inject_collector(p.pid, library, false, msg,
					      sizeof(msg));
		if (write(fds[1], &rc, sizeof(rc)) < 0 ||
		    write(fds[1], msg, strlen(msg) + 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	{
		int rc = 0;
		ssize_t n = read(fds[0], &rc, sizeof(rc));

		n = read(fds[0], msg, sizeof(msg) - 1);
		msg[n > 0 ? n : 0] = '\0';
		snprintf(want, sizeof(want), "not permitted to trace PID %d",
			 (int)p.pid);
		CHECK(rc == INJECT_FAILED && starts_with(msg, want),
		      "as nobody: expected \"%s...\", got %d \"%s\"", want, rc,
		      msg);
	}
	close(fds[0]);
	waitpid(child, NULL, 0);
	CHECK(all_threads_progress(&p), "target stalled after refusal");
	CHECK(stop_target(&p) == 0, "target failed after refusal: %s",
	      read_text(p.out));
}

/* Root attaches to a service running as another user (nobody). */
static void test_root_loads_into_other_user(void)
{
	char *argv[] = { "/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
			 "--clear-groups", workload, NULL };
	char msg[512];
	struct proc p;
	int rc;

	if (geteuid() != 0) {
		printf("note: not root; root-to-nobody test skipped\n");
		return;
	}
	spawn(&p, argv, "nobody");
	if (!wait_output(&p, "ready\n", READY_MS)) {
		CHECK(0, "workload as nobody did not start: %s", read_text(p.out));
		kill_proc(&p);
		return;
	}
	rc = inject_collector(p.pid, library, false, msg, sizeof(msg));
	CHECK(rc == INJECT_LOADED, "expected INJECT_LOADED, got %d \"%s\"", rc,
	      msg);
	CHECK(collector_says_hello_as(p.pid, 65534),
	      "no HELLO on nobody's socket");
	CHECK(all_threads_progress(&p), "threads stalled");
	rc = stop_target(&p);
	CHECK(rc == 0, "workload as nobody: exit %d:\n%s", rc, read_text(p.out));
}

/*
 * The copy of the collector lib in a directory of the target's /tmp: the
 * target maps it, the copy and its directory are gone, and the collector
 * is found there again.
 */
static void expect_copy_loaded(pid_t pid, const char *lib)
{
	char msg[512], path[64], line[PATH_MAX + 256], *at = NULL, *end = NULL;
	int rc = inject_collector(pid, lib, false, msg, sizeof(msg));
	FILE *f;

	CHECK(rc == INJECT_LOADED, "hidden library: expected INJECT_LOADED, "
	      "got %d \"%s\"", rc, msg);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	while (f != NULL && end == NULL && fgets(line, sizeof(line), f)) {
		at = strstr(line, " /tmp/qsptop-lib-");
		end = at ? strstr(at, "/libqsptop.so (deleted)\n") : NULL;
	}
	if (f != NULL)
		fclose(f);
	CHECK(end != NULL, "hidden library: no removed copy mapped in PID %d",
	      (int)pid);
	if (end != NULL) {
		*end = '\0';
		CHECK(access(at + 1, F_OK) < 0 && errno == ENOENT,
		      "hidden library: %s is left behind", at + 1);
	}
	rc = inject_collector(pid, lib, false, msg, sizeof(msg));
	CHECK(rc == INJECT_ALREADY, "hidden library: expected INJECT_ALREADY "
	      "the second time, got %d \"%s\"", rc, msg);
}

static void build_slow_library(const char *name, int ms, char *so, char *done,
			       size_t n);
static const char *thread_states(pid_t pid);

/*
 * A copy whose dlopen is given up on (its constructor outlasts the call's
 * deadline) stays where the borrowed thread will open it: once its
 * directory is removed, any user could put a library of theirs under
 * that name in /tmp before the dlopen gets to it. Through the real
 * qsptop -p: a copy of it beside a slow libqsptop.so, in dir, which the
 * target (argv: a workload with a tmpfs over dir) does not see.
 */
static void test_pending_copy_stays(const char *dir, char *const argv[])
{
	char slow[PATH_MAX + 32], done[PATH_MAX + 32], bin[PATH_MAX + 64];
	char cmd[8 * PATH_MAX], copy[PATH_MAX + 64], pidstr[16];
	char *qargv[] = { bin, "-b", "-n", "1", "-p", pidstr, NULL };
	const char *at;
	struct proc p, q;
	int rc;

	/* Longer than qsptop waits for a dlopen (5 s). */
	build_slow_library("slowcollector", 6500, slow, done, sizeof(slow));
	snprintf(bin, sizeof(bin), "%s/slow/qsptop", dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/slow && cp %s %s && "
		 "cp %s %s/slow/libqsptop.so", dir, qsptop, bin, slow, dir);
	CHECK(system(cmd) == 0, "cannot set up %s", bin);
	spawn(&p, argv, "unshared");
	if (!wait_output(&p, "ready\n", READY_MS)) {
		CHECK(0, "unshared workload did not start: %s", read_text(p.out));
		kill_proc(&p);
		return;
	}
	snprintf(pidstr, sizeof(pidstr), "%d", (int)p.pid);
	spawn(&q, qargv, "slow-qsptop");
	rc = wait_status(q.pid, EXIT_MS);
	at = strstr(read_text(q.out), "stays in /tmp/qsptop-lib-");
	CHECK(rc == 1 && at != NULL, "slow copy: expected a timeout that keeps "
	      "the copy, got exit %d: %s", rc, read_text(q.out));
	if (at != NULL) {
		snprintf(copy, sizeof(copy), "/proc/%d/root%.*s", (int)p.pid,
			 (int)strcspn(at + 9, " \n"), at + 9);
		CHECK(access(copy, F_OK) == 0, "slow copy: %s was removed while "
		      "its dlopen was pending", copy);
	}
	for (int64_t end = clock_now_ms() + 10000;
	     access(done, F_OK) != 0 && clock_now_ms() < end;)
		usleep(10000);
	CHECK(access(done, F_OK) == 0, "slow copy: its constructor never ran");
	CHECK(all_threads_progress(&p), "slow copy: threads stalled: %s",
	      thread_states(p.pid));
	CHECK(stop_target(&p) == 0, "slow copy: target failed: %s",
	      read_text(p.out));
}

/* A thread id, and a library the target cannot see (a mount namespace). */
static void test_refuses_thread_and_hidden_library(void)
{
	char want[PATH_MAX + 128], dir[PATH_MAX + 32], lib[PATH_MAX + 64];
	char cmd[4 * PATH_MAX], path[64];
	struct proc p;
	struct dirent *e;
	pid_t tid = 0;
	DIR *d;

	if (!start_target(&p)) {
		CHECK(0, "workload did not start");
		kill_proc(&p);
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/task", (int)p.pid);
	d = opendir(path);
	while (d != NULL && (e = readdir(d)) != NULL)
		if (atoi(e->d_name) > 0 && atoi(e->d_name) != p.pid)
			tid = atoi(e->d_name);
	if (d != NULL)
		closedir(d);
	snprintf(want, sizeof(want), "PID %d is a thread of process %d",
		 (int)tid, (int)p.pid);
	expect_refusal(tid, library, want);
	expect_refusal(p.pid, "/nonexistent/libqsptop.so",
		       "cannot find the collector library");
	CHECK(stop_target(&p) == 0, "target failed: %s", read_text(p.out));

	/* The target runs with a tmpfs over the directory of the library. */
	snprintf(dir, sizeof(dir), "%s/hidden", tmp);
	snprintf(lib, sizeof(lib), "%s/libqsptop.so", dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s && cp %s %s", dir, library, lib);
	if (geteuid() != 0 || system(cmd) != 0) {
		printf("note: mount namespace test skipped\n");
		return;
	}
	snprintf(cmd, sizeof(cmd), "mount -t tmpfs none %s && exec %s", dir,
		 workload);
	char *argv[] = { "/usr/bin/unshare", "-m", "--propagation", "private",
			 "/bin/sh", "-c", cmd, NULL };
	spawn(&p, argv, "unshared");
	if (!wait_output(&p, "ready\n", READY_MS)) {
		printf("note: unshare failed; mount namespace test skipped\n");
		kill_proc(&p);
		return;
	}
	expect_copy_loaded(p.pid, lib);
	CHECK(stop_target(&p) == 0, "target failed: %s", read_text(p.out));
	test_pending_copy_stays(dir, argv);
}

/* The calls the workload's threads park in: each gets borrowed. */
static const long parked[] = { SYS_clock_nanosleep, SYS_epoll_wait, SYS_poll,
			       SYS_futex };

/* A library NAME whose constructor runs the C statements body. */
static void build_library(const char *name, const char *body, char *so,
			  size_t n)
{
	char src[PATH_MAX + 32], cmd[4 * PATH_MAX];
	FILE *f;

	snprintf(src, sizeof(src), "%s/%s.c", tmp, name);
	snprintf(so, n, "%s/lib%s.so", tmp, name);
	f = fopen(src, "w");
	fprintf(f, "#include <errno.h>\n#include <fcntl.h>\n#include <linux/futex.h>\n"
		"#include <pthread.h>\n#include <signal.h>\n"
		"#include <stdio.h>\n#include <stdlib.h>\n"
		"#include <sys/syscall.h>\n#include <time.h>\n#include <unistd.h>\n"
		"__attribute__((constructor)) static void ctor(void)\n{ %s }\n",
		body);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -shared -fPIC -o %s %s", so, src);
	CHECK(system(cmd) == 0, "cannot build %s", so);
}

/* A library NAME whose constructor sleeps ms and then leaves a file. */
static void build_slow_library(const char *name, int ms, char *so, char *done,
			       size_t n)
{
	char body[PATH_MAX + 128];

	snprintf(done, n, "%s/%s-done", tmp, name);
	snprintf(body, sizeof(body), "usleep(%d000); close(creat(\"%s\", 0644));",
		 ms, done);
	build_library(name, body, so, n);
}

/* Thread tid (a name in /proc/PID/task) of pid is traced now. */
static bool thread_traced(pid_t pid, const char *tid)
{
	char path[320], text[4096], v[32];

	snprintf(path, sizeof(path), "/proc/%d/task/%s/status", (int)pid, tid);
	return inject_slurp(path, text, sizeof(text)) > 0 &&
	       inject_field(text, "TracerPid", v, sizeof(v)) && atoi(v) != 0;
}

/* Wait up to ms for thread tid of pid to be traced; false at the deadline. */
static bool wait_tracer(pid_t pid, pid_t tid, int ms)
{
	int64_t deadline = clock_now_ms() + ms;
	char name[16];

	snprintf(name, sizeof(name), "%d", (int)tid);
	while (clock_now_ms() < deadline) {
		if (thread_traced(pid, name))
			return true;
		usleep(1000);
	}
	return false;
}

/* The thread of pid parked in system call nr (looking for 5 s), or 0. */
static pid_t thread_in(pid_t pid, long nr)
{
	int64_t deadline = clock_now_ms() + 5000;
	char path[320], text[256];
	pid_t found = 0;

	while (found == 0 && clock_now_ms() < deadline) {
		struct dirent *e;
		DIR *d;

		snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
		d = opendir(path);
		while (d != NULL && found == 0 && (e = readdir(d)) != NULL) {
			snprintf(path, sizeof(path), "/proc/%d/task/%s/syscall",
				 (int)pid, e->d_name);
			if (e->d_name[0] != '.' &&
			    inject_slurp(path, text, sizeof(text)) > 0 &&
			    atol(text) == nr)
				found = (pid_t)atoi(e->d_name);
		}
		if (d != NULL)
			closedir(d);
		usleep(1000);
	}
	return found;
}

/*
 * Inject while forcing the thread parked in system call nr. The hook makes
 * the injector give up at once when no thread is parked there, and under
 * load the target's threads move in and out of their calls: retry then.
 */
static int forced_inject(pid_t pid, long nr, const char *so, char *msg,
			 size_t len, double *ms)
{
	int rc = INJECT_FAILED;

	for (int tries = 0; tries < 10; tries++) {
		thread_in(pid, nr);
		inject_only_syscall = nr;
		rc = timed_inject(pid, so, msg, len, ms);
		inject_only_syscall = -1;
		if (rc != INJECT_FAILED || !starts_with(msg, "no thread of PID"))
			break;
		usleep(50000);
	}
	return rc;
}

/*
 * The constructor outlasts the deadline: the injection gives up, and the
 * borrowed thread still returns to its own work when dlopen finishes.
 */
static void timeout_in(long nr, const char *so, const char *done)
{
	char msg[512];
	struct proc p;
	double ms;
	int rc;

	unlink(done);
	if (!start_target(&p)) {
		CHECK(0, "workload did not start");
		kill_proc(&p);
		return;
	}
	inject_call_timeout_ms = 300;
	rc = forced_inject(p.pid, nr, so, msg, sizeof(msg), &ms);
	inject_call_timeout_ms = 5000;
	CHECK(rc == INJECT_FAILED &&
	      starts_with(msg, "timed out waiting for a thread to return from "
			  "dlopen"), "syscall %ld: expected a timeout, got %d "
	      "\"%s\"", nr, rc, msg);
	/*
	 * It gives up after the 300 ms asked, not before, and well before
	 * the 5 s default would have: the upper bound leaves a loaded machine
	 * 3.7 s to notice.
	 */
	CHECK(ms >= 300 && ms < 4000,
	      "the timeout: expected 300 ms to 4 s, took %.0f ms", ms);
	printf("timed out after %.0f ms in thread %d (syscall %ld)\n", ms,
	       (int)inject_last_tid, inject_last_syscall);
	CHECK(inject_last_syscall == nr, "borrowed syscall %ld, wanted %ld",
	      inject_last_syscall, nr);
	{
		int64_t deadline = clock_now_ms() + 5000;

		while (access(done, F_OK) != 0 && clock_now_ms() < deadline)
			usleep(10000);
	}
	CHECK(access(done, F_OK) == 0, "the slow constructor never finished");
	CHECK(all_threads_progress(&p), "syscall %ld: threads stalled after "
	      "the timeout", nr);
	rc = stop_target(&p);
	CHECK(rc == 0 && strstr(read_text(p.out), "\nok ") != NULL,
	      "syscall %ld: workload after timeout: expected exit 0 and "
	      "\"ok\", got %d:\n%s", nr, rc, read_text(p.out));
}

static void test_timeout_gives_thread_back(void)
{
	char so[PATH_MAX + 32], done[PATH_MAX + 32];

	build_slow_library("slow", 1500, so, done, sizeof(so));
	for (size_t i = 0; i < sizeof(parked) / sizeof(parked[0]); i++)
		timeout_in(parked[i], so, done);
}


/*
 * While the borrowed thread runs dlopen it gets a SIGUSR1 (its handler
 * runs) and the process is stopped: the thread finishes, is put back,
 * and stops with the others; SIGCONT resumes them all.
 */
static void test_signals_during_call(void)
{
	char so[PATH_MAX + 32], done[PATH_MAX + 32], msg[512];
	struct proc p;
	pid_t tid, child;
	double ms;
	int rc;

	build_slow_library("pause", 800, so, done, sizeof(so));
	if (!start_target(&p)) {
		CHECK(0, "workload did not start");
		kill_proc(&p);
		return;
	}
	tid = thread_in(p.pid, SYS_epoll_wait);
	CHECK(tid != 0, "no thread in epoll_wait");
	child = fork();
	if (child == 0) {
		/* Once the thread is borrowed, inside the constructor. */
		wait_tracer(p.pid, tid, 10000);
		usleep(100000);
		syscall(SYS_tgkill, p.pid, tid, SIGUSR1);
		usleep(100000);
		kill(p.pid, SIGSTOP);
		_exit(0);
	}
	rc = forced_inject(p.pid, SYS_epoll_wait, so, msg, sizeof(msg), &ms);
	waitpid(child, NULL, 0);
	CHECK(rc == INJECT_LOADED, "expected INJECT_LOADED, got %d \"%s\"", rc,
	      msg);
	CHECK(strstr(msg, "borrowed from epoll_wait, which returned EINTR "
		     "(--force)") != NULL, "forced into epoll_wait, qsptop does "
	      "not say so: \"%s\"", msg);
	CHECK(inject_last_tid == tid, "borrowed %d, not %d", (int)inject_last_tid,
	      (int)tid);
	CHECK(access(done, F_OK) == 0, "the constructor did not finish");
	CHECK(wait_state(p.pid, 'T'), "the process is not stopped (state %c)",
	      state_of(p.pid));
	kill(p.pid, SIGCONT);
	CHECK(all_threads_progress(&p), "threads stalled after SIGCONT");
	rc = stop_target(&p);
	CHECK(rc == 0 && strstr(read_text(p.out), " usr1=1\n") != NULL,
	      "expected exit 0 and usr1=1, got %d:\n%s", rc, read_text(p.out));
}

/* The target dies while its thread is inside dlopen. */
static void test_target_exits_during_call(void)
{
	char so[PATH_MAX + 32], done[PATH_MAX + 32], msg[512], want[64];
	struct proc p;
	pid_t child;
	int rc;

	build_slow_library("doomed", 400, so, done, sizeof(so));
	if (!start_target(&p)) {
		CHECK(0, "workload did not start");
		kill_proc(&p);
		return;
	}
	child = fork();
	if (child == 0) {
		usleep(100000);
		kill(p.pid, SIGKILL);
		_exit(0);
	}
	rc = inject_collector(p.pid, so, false, msg, sizeof(msg));
	waitpid(child, NULL, 0);
	snprintf(want, sizeof(want), "process %d exited during attach",
		 (int)p.pid);
	CHECK(rc == INJECT_FAILED && check_streq(msg, want),
	      "expected \"%s\", got %d \"%s\"", want, rc, msg);
	kill_proc(&p);
}

#define ANY_CALL (-1L)

/*
 * A thread of pid that is traced by someone and parked in system call nr
 * (a futex call: with operation FUTEX_WAIT, the way locks wait; ANY_CALL:
 * wherever it is), or 0.
 */
static pid_t traced_in(pid_t pid, long nr)
{
	char path[320], text[8192];
	pid_t found = 0;
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d != NULL && found == 0 && (e = readdir(d)) != NULL) {
		uint64_t op = 0;
		long in = -1;

		if (e->d_name[0] == '.' || !thread_traced(pid, e->d_name))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/syscall",
			 (int)pid, e->d_name);
		if (nr == ANY_CALL ||
		    (inject_slurp(path, text, sizeof(text)) > 0 &&
		     sscanf(text, "%ld %*x %" SCNx64, &in, &op) == 2 && in == nr &&
		     (nr != SYS_futex || (op & FUTEX_CMD_MASK) == FUTEX_WAIT)))
			found = (pid_t)atoi(e->d_name);
	}
	if (d != NULL)
		closedir(d);
	return found;
}

/* Poll up to ms for traced_in(pid, nr); the thread, or 0. */
static pid_t wait_traced_in(pid_t pid, long nr, int ms)
{
	int64_t deadline = clock_now_ms() + ms;
	pid_t tid;

	while ((tid = traced_in(pid, nr)) == 0 && clock_now_ms() < deadline)
		usleep(2000);
	return tid;
}

/* "TID:STATE:SYSCALL" for each thread of pid, for failure messages. */
static const char *thread_states(pid_t pid)
{
	static char out[1024];
	char path[320], text[8192], state[32];
	struct dirent *e;
	size_t used = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	out[0] = '\0';
	while (d != NULL && (e = readdir(d)) != NULL && used < sizeof(out) - 64) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status", (int)pid,
			 e->d_name);
		if (inject_slurp(path, text, sizeof(text)) <= 0 ||
		    !inject_field(text, "State", state, sizeof(state)))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/syscall",
			 (int)pid, e->d_name);
		if (inject_slurp(path, text, sizeof(text)) <= 0)
			text[0] = '\0';
		used += (size_t)snprintf(out + used, sizeof(out) - used,
					 "%s:%c:%.*s ", e->d_name, state[0],
					 (int)strcspn(text, " \n"), text);
	}
	if (d != NULL)
		closedir(d);
	return out;
}

/* Run qsptop [option] -b -n 1 -p pid to its end; its exit status. */
static int qsptop_with(const char *option, pid_t pid, struct proc *q)
{
	char pidstr[16];
	char *argv[] = { qsptop, "-b", "-n", "1", "-d", "0.2", "-p", pidstr,
			 (char *)option, NULL };

	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	spawn(q, argv, "qsptop");
	return wait_status(q->pid, EXIT_MS);
}

/*
 * Another thread of the target is inside a slow constructor, holding the
 * loader lock. qsptop -p borrows no thread while it is held (a thread
 * waiting for it in our dlopen could hold what the constructor waits
 * for: the process would hang for good): it waits, and refuses, naming
 * the holder, when the lock outlasts its wait. Killed meanwhile, it
 * leaves nothing behind. Either way, once the dlopen ends, the threads
 * go on and a second qsptop -p loads.
 */
static void qsptop_during_slow_dlopen(const char *so, bool kill_it)
{
	char pidstr[16];
	struct proc p, q;
	bool traced = false;
	int rc;
	char *argv[] = { workload, (char *)so, NULL };
	char *qargv[] = { qsptop, "-b", "-n", "1", "-d", "0.2", "-p", pidstr,
			  NULL };

	spawn(&p, argv, "locked");
	if (!wait_output(&p, "loading\n", READY_MS)) {
		CHECK(0, "workload did not start its dlopen: %s", read_text(p.out));
		kill_proc(&p);
		return;
	}
	snprintf(pidstr, sizeof(pidstr), "%d", (int)p.pid);
	spawn(&q, qargv, "qsptop");
	for (int64_t end = clock_now_ms() + 1000; clock_now_ms() < end;)
		traced |= traced_in(p.pid, ANY_CALL) != 0;
	CHECK(!traced, "qsptop borrowed a thread of PID %d while another held "
	      "the loader lock", (int)p.pid);
	if (kill_it)
		kill(q.pid, SIGKILL);
	rc = wait_status(q.pid, EXIT_MS);
	CHECK(kill_it ? rc == 128 + SIGKILL : rc == 1 &&
	      strstr(read_text(q.out), "held the loader's lock") != NULL,
	      "qsptop -p beside a slow dlopen: expected %s, got exit %d: %s",
	      kill_it ? "its death" : "a refusal naming the loader lock", rc,
	      read_text(q.out));
	CHECK(wait_output(&p, "loaded\n", 10000), "the slow dlopen did not end: "
	      "%s", read_text(p.out));
	CHECK(all_threads_progress(&p), "threads stalled after qsptop %s: %s",
	      kill_it ? "was killed" : "refused", thread_states(p.pid));
	rc = qsptop_with(NULL, p.pid, &q);
	CHECK(rc == 0, "qsptop -p after the dlopen: exit %d: %s", rc,
	      read_text(q.out));
	rc = stop_target(&p);
	CHECK(rc == 0 && strstr(read_text(p.out), "\nok ") != NULL,
	      "target after qsptop %s: expected exit 0 and \"ok\", got %d:\n%s",
	      kill_it ? "was killed" : "refused", rc, read_text(p.out));
}

/*
 * The deadlock a borrowed thread could close (tests/workloads/
 * loader_lock.c): every thread qsptop could borrow holds a mutex that a
 * constructor, running under the loader lock, waits for. A borrowed
 * thread whose dlopen waited for the loader lock would never give its
 * mutex back. qsptop waits for the lock instead, and the program ends.
 */
static void test_no_deadlock_through_loader_lock(void)
{
	char so[PATH_MAX + 32], pidstr[16], program[PATH_MAX + 32];
	char *qargv[] = { qsptop, "-b", "-n", "1", "-d", "0.2", "-p", pidstr,
			  NULL };
	char *argv[] = { program, so, NULL };
	struct proc p, q;
	int rc;

	build_library("waits_for_main", "void *m; setvbuf(stdout, NULL, "
		      "_IONBF, 0); write(1, \"constructor\\n\", 12); sscanf("
		      "getenv(\"LOADER_LOCK_MUTEX\"), \"%p\", &m); "
		      "pthread_mutex_lock(m); pthread_mutex_unlock(m);", so,
		      sizeof(so));
	join(program, build, "/tests/wl_loader_lock");
	spawn(&p, argv, "loader_lock");
	if (!wait_output(&p, "constructor\n", READY_MS)) {
		CHECK(0, "loader_lock did not reach its constructor: %s",
		      read_text(p.out));
		kill_proc(&p);
		return;
	}
	snprintf(pidstr, sizeof(pidstr), "%d", (int)p.pid);
	spawn(&q, qargv, "qsptop");
	CHECK(wait_output(&p, "done\n", EXIT_MS), "qsptop -p hung the program "
	      "through the loader lock: threads %s\n%s", thread_states(p.pid),
	      read_text(p.out));
	rc = wait_status(p.pid, EXIT_MS);
	CHECK(rc == 0, "loader_lock exit %d:\n%s", rc, read_text(p.out));
	rc = wait_status(q.pid, EXIT_MS);
	printf("qsptop beside the loader lock: exit %d: %s", rc,
	       read_text(q.out));
}

static void test_qsptop_beside_slow_dlopen(void)
{
	char so[PATH_MAX + 32];

	/* Longer than qsptop waits for the loader lock (3 s). */
	build_library("locker", "struct timespec t = { 5, 0 }; int w = 0; "
		      "syscall(SYS_futex, &w, FUTEX_WAIT, 0, &t, 0, 0);", so,
		      sizeof(so));
	qsptop_during_slow_dlopen(so, false);
	qsptop_during_slow_dlopen(so, true);
}

/*
 * pthread_cancel reaches the borrowed thread while it runs dlopen: the
 * cancellation waits until dlopen is done, then acts, whether the
 * injection completes or was given up (and the cancel came after), even
 * when the constructor sleeps (a cancellation point) or sets its signal
 * mask (pthread_sigmask always unblocks SIGCANCEL), as the collector's
 * does. Acted on inside dlopen, it would end the thread holding the
 * loader lock: the workload's next dlopen would hang.
 */
static void cancel_during_call(const char *name, const char *body,
			       int timeout_ms, bool gives_up)
{
	bool after = strstr(name, "after") != NULL;
	char so[PATH_MAX + 32], msg[512];
	char *argv[] = { workload_cancel, NULL };
	struct proc p;
	pid_t child;
	double ms;
	int rc;

	build_library(name, body, so, sizeof(so));
	spawn(&p, argv, "cancel");
	if (!wait_output(&p, "ready\n", READY_MS)) {
		CHECK(0, "cancel workload did not start: %s", read_text(p.out));
		kill_proc(&p);
		return;
	}
	child = fork();
	if (child == 0) {
		/* Once the borrowed worker sleeps in the constructor, or
		 * (after) once qsptop let go of it there. */
		pid_t tid = wait_traced_in(p.pid, SYS_clock_nanosleep, 30000);

		while (after && tid != 0 && traced_in(p.pid, SYS_clock_nanosleep))
			usleep(2000);
		if (tid != 0)
			kill(p.pid, SIGUSR1);	/* main cancels the worker */
		_exit(0);
	}
	inject_call_timeout_ms = timeout_ms;
	rc = forced_inject(p.pid, SYS_pause, so, msg, sizeof(msg), &ms);
	inject_call_timeout_ms = 5000;
	waitpid(child, NULL, 0);
	CHECK(gives_up ? rc == INJECT_FAILED : rc == INJECT_LOADED,
	      "%s: got %d \"%s\"", name, rc, msg);
	wait_output(&p, "\nloader ", EXIT_MS);
	kill(p.pid, SIGTERM);
	rc = wait_status(p.pid, EXIT_MS);
	CHECK(rc == 0 && strstr(read_text(p.out), "\ncancelled\n") != NULL &&
	      strstr(read_text(p.out), "\nloader ok\n") != NULL,
	      "%s: pthread_cancel during the call: expected \"cancelled\" and "
	      "\"loader ok\", got exit %d:\n%s", name, rc, read_text(p.out));
}

static void test_cancel_during_call(void)
{
	/* As the collector's constructor does around pthread_create. */
	const char *unmask = "sigset_t all, old; sigfillset(&all); "
			     "pthread_sigmask(SIG_SETMASK, &all, &old); "
			     "pthread_sigmask(SIG_SETMASK, &old, 0); ";
	char body[256];

	/* The injection gives up or completes; the constructor unmasks. */
	cancel_during_call("cancel-late", "usleep(1500000);", 300, true);
	cancel_during_call("cancel", "usleep(400000);", 5000, false);
	snprintf(body, sizeof(body), "%susleep(400000);", unmask);
	cancel_during_call("cancel-unmasked", body, 5000, false);
	snprintf(body, sizeof(body), "%susleep(1500000);", unmask);
	cancel_during_call("cancel-after-give-up-unmasked", body, 300, true);
}

/* The SIGSEGV mask bit is set in the SigIgn line of pid's status. */
static bool ignores_segv(pid_t pid)
{
	char path[64], text[8192], v[32];

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	return inject_slurp(path, text, sizeof(text)) > 0 &&
	       inject_field(text, "SigIgn", v, sizeof(v)) &&
	       (strtoull(v, NULL, 16) & (1ULL << (SIGSEGV - 1)));
}

/* Injection never changes how the process handles a signal. */
static void test_keeps_ignored_segv(void)
{
	char msg[512];
	struct proc p;
	bool started;
	int rc;

	signal(SIGSEGV, SIG_IGN);	/* inherited across exec */
	started = start_target(&p);
	signal(SIGSEGV, SIG_DFL);
	if (!started || !ignores_segv(p.pid)) {
		CHECK(0, "workload did not start ignoring SIGSEGV");
		kill_proc(&p);
		return;
	}
	rc = inject_collector(p.pid, library, false, msg, sizeof(msg));
	CHECK(rc == INJECT_LOADED, "expected INJECT_LOADED, got %d \"%s\"", rc,
	      msg);
	CHECK(ignores_segv(p.pid), "the injection reset PID %d's ignored "
	      "SIGSEGV to the default", (int)p.pid);
	CHECK(all_threads_progress(&p), "threads stalled");
	rc = stop_target(&p);
	CHECK(rc == 0, "workload ignoring SIGSEGV: exit %d:\n%s", rc,
	      read_text(p.out));
}

/* The last "probes N" count of the register workload, or -1. */
static long last_probes(const struct proc *p)
{
	const char *text = read_text(p->out), *at = NULL, *s = text;
	long n = -1;

	while ((s = strstr(s, "probes ")) != NULL)
		at = s++;
	if (at != NULL)
		sscanf(at, "probes %ld", &n);
	return n;
}

/* Wait until the register workload has made 100 more probes. */
static bool probes_advance(const struct proc *p)
{
	int64_t deadline = clock_now_ms() + 5000;
	long from = last_probes(p);

	while (last_probes(p) < from + 100) {
		if (clock_now_ms() >= deadline)
			return false;
		usleep(10000);
	}
	return true;
}

/* Probes of the register workload that found registers (or errno) changed. */
static int changed_probes(const char *text, bool count_errno)
{
	int n = 0, gpr, vec, err;

	for (const char *s = text; (s = strstr(s, "\nbad ")) != NULL; s++)
		if (sscanf(s, "\nbad %*d gpr=%d vec=%d errno=%d", &gpr, &vec,
			   &err) == 3)
			n += gpr > 0 || vec > 0 || (count_errno && err > 0);
	return n;
}

/*
 * The borrowed thread's general and FP/AVX registers are back as they
 * were once it returns to its system call, whether the call completes or
 * is given up, though the library's constructor clobbers them; so is its
 * errno when the call completes (after a give-up nobody is there to put
 * it back).
 */
static void registers_after(const char *so, const char *done, int timeout_ms)
{
	char *argv[] = { workload_regs, NULL }, msg[512];
	bool gave_up = done != NULL;
	struct proc p;
	double ms;
	int rc;

	spawn(&p, argv, "regs");
	if (!wait_output(&p, "ready\n", READY_MS)) {
		if (strstr(read_text(p.out), "no AVX") == NULL)
			CHECK(0, "register workload did not start: %s",
			      read_text(p.out));
		else
			SKIP("this CPU has no AVX: the register test needs it");
		kill_proc(&p);
		return;
	}
	CHECK(probes_advance(&p), "the register workload does not run");
	inject_call_timeout_ms = timeout_ms;
	rc = forced_inject(p.pid, SYS_nanosleep, so, msg, sizeof(msg), &ms);
	inject_call_timeout_ms = 5000;
	CHECK(gave_up ? rc == INJECT_FAILED : rc == INJECT_LOADED,
	      "register workload: got %d \"%s\"", rc, msg);
	while (gave_up && access(done, F_OK) != 0 && probes_advance(&p))
		;
	CHECK(probes_advance(&p), "the borrowed thread did not come back");
	rc = stop_target(&p);
	CHECK(rc == 0 && strstr(read_text(p.out), "\ndone ") != NULL &&
	      changed_probes(read_text(p.out), !gave_up) == 0,
	      "after %s: registers changed: exit %d:\n%s", gave_up ?
	      "a timed-out call" : "a call", rc, read_text(p.out));
}

static void test_registers_come_back(void)
{
	char so[PATH_MAX + 32], done[PATH_MAX + 32];
	char body[2 * PATH_MAX];

	build_library("clobber", "__asm__ volatile(\"vzeroall\"); errno = EIO;",
		      so, sizeof(so));
	registers_after(so, NULL, 5000);
	snprintf(done, sizeof(done), "%s/clobber-slow-done", tmp);
	snprintf(body, sizeof(body), "usleep(600000); close(creat(\"%s\", 0644)); "
		 "__asm__ volatile(\"vzeroall\"); errno = EIO;", done);
	build_library("clobber-slow", body, so, sizeof(so));
	registers_after(so, done, 200);
}

/* Start the workload under a seccomp filter that allows everything. */
static bool start_filtered_target(struct proc *p)
{
	static struct sock_filter allow[] = {
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { 1, allow };

	snprintf(p->out, sizeof(p->out), "%s/filtered.out", tmp);
	p->pid = fork();
	if (p->pid == 0) {
		int fd = open(p->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(fd, 1);
		dup2(fd, 2);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0)
			execl(workload, workload, (char *)NULL);
		_exit(126);
	}
	return wait_output(p, "ready\n", READY_MS);
}

/* Under a seccomp filter -p refuses in one line, unless --force is given. */
static void test_seccomp_needs_force(void)
{
	char want[128], *err;
	struct proc p, q;
	int rc;

	if (!start_filtered_target(&p)) {
		CHECK(0, "filtered workload did not start: %s", read_text(p.out));
		kill_proc(&p);
		return;
	}
	rc = qsptop_with(NULL, p.pid, &q);
	snprintf(want, sizeof(want), "qsptop: PID %d runs under a seccomp "
		 "filter", (int)p.pid);
	err = read_text(q.out);
	CHECK(rc == 1 && starts_with(err, want) &&
	      strstr(err, "--force") != NULL &&
	      strchr(err, '\n') == strrchr(err, '\n'),
	      "qsptop -p on a filtered process: expected exit 1 and one line "
	      "\"%s...--force...\", got %d: %s", want, rc, err);
	CHECK(count_mapped(p.pid, "/libqsptop.so") == 0,
	      "the refusal loaded the collector anyway");
	{
		char *argv[] = { qsptop, "--help", NULL };

		spawn(&q, argv, "help");
		rc = wait_status(q.pid, EXIT_MS);
		CHECK(rc == 0 && strstr(read_text(q.out), "--force") != NULL,
		      "--help documents --force: %s", read_text(q.out));
	}
	rc = qsptop_with("--force", p.pid, &q);
	CHECK(rc == 0 && strstr(read_text(q.out), "(injected)") != NULL,
	      "qsptop --force -p on a filtered process: exit %d: %s", rc,
	      read_text(q.out));
	CHECK(all_threads_progress(&p), "threads stalled after --force");
	rc = stop_target(&p);
	CHECK(rc == 0, "filtered workload after --force: exit %d:\n%s", rc,
	      read_text(p.out));
}

/* Become uid (and gid uid) for good; false if not permitted. */
static bool become(uid_t uid)
{
	return setgroups(0, NULL) == 0 && setresgid(uid, uid, uid) == 0 &&
	       setresuid(uid, uid, uid) == 0;
}

/* Start /bin/sleep as uid; its pid. */
static pid_t sleep_as(uid_t uid)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (become(uid))
			execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(126);
	}
	return pid;
}

/*
 * A process of uid (0: stay root) that serves path as a fake collector:
 * it binds and listens there (making the directory first when mkdir),
 * says so on ready, sends one HELLO to whoever connects, and exits.
 */
static pid_t fake_collector(uid_t uid, const char *path, bool mkdir_first,
			    int ready)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	alarm(20);
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	if (uid == 0 || become(uid)) {
		struct proto_hello h = { .magic = PROTO_MAGIC,
					 .version = PROTO_VERSION };
		int fd = socket(AF_UNIX, SOCK_STREAM, 0), c;
		struct wbuf b = { 0 };
		char dir[sizeof(addr.sun_path)];

		snprintf(dir, sizeof(dir), "%s", path);
		if (mkdir_first)
			mkdir(dirname(dir), 0700);
		unlink(path);	/* left by a killed process of that PID */
		if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0 &&
		    listen(fd, 1) == 0 && write(ready, "r", 1) == 1 &&
		    (c = accept(fd, NULL, NULL)) >= 0) {
			proto_put_hello(&b, &h);
			if (write(c, b.data, b.len) < 0)
				_exit(1);
			usleep(100000);
		}
	}
	_exit(0);
}

/* Start a fake collector at path and wait until it listens. */
static pid_t fake_collector_ready(uid_t uid, const char *path, bool mkdir_first)
{
	int fds[2];
	char c = 0;
	pid_t pid;

	if (pipe(fds) < 0)
		return -1;
	pid = fake_collector(uid, path, mkdir_first, fds[1]);
	close(fds[1]);
	{
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };

		if (poll(&pfd, 1, READY_MS) != 1 || read(fds[0], &c, 1) != 1)
			c = 0;
	}
	close(fds[0]);
	CHECK(c == 'r', "the fake collector at %s did not start", path);
	return pid;
}

/* qsptop -p pid must refuse in one line that names path and says why. */
static void expect_socket_refused(pid_t pid, const char *path, const char *why)
{
	struct proc q;
	const char *err;
	int rc = qsptop_with(NULL, pid, &q);

	err = read_text(q.out);
	CHECK(rc == 1 && starts_with(err, "qsptop: refusing ") &&
	      strstr(err, path) != NULL && strstr(err, why) != NULL &&
	      strchr(err, '\n') == strrchr(err, '\n'),
	      "expected one line refusing %s (%s...), got %d: %s", path, why,
	      rc, err);
}

static void end_pid(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/*
 * Another local user made /tmp/qsptop-UID of the target's user (or it is
 * a symlink, or open to others) and listens where the collector would:
 * qsptop -p must not talk to it.
 */
static void test_refuses_foreign_socket_directory(void)
{
	/* Users no one has, distinct for each run of this test. */
	uid_t victim = 2000000000u + (uid_t)(getpid() % 100000) * 2;
	uid_t other = victim + 1;
	char dir[108], path[108], cmd[256], why[128], elsewhere[PATH_MAX + 16];
	pid_t target, fake;

	if (geteuid() != 0) {
		printf("note: not root; socket directory test skipped\n");
		return;
	}
	target = sleep_as(victim);
	wait_state(target, 'S');
	sockpath_dir(dir, sizeof(dir), victim);
	sockpath_target(path, sizeof(path), victim, target);

	fake = fake_collector_ready(other, path, true);	/* other's dir */
	snprintf(why, sizeof(why), "belongs to uid %u", (unsigned)other);
	expect_socket_refused(target, path, why);
	end_pid(fake);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0, "%s", cmd);

	mkdir(dir, 0777);		/* the right owner, open to all */
	CHECK(chown(dir, victim, victim) == 0 && chmod(dir, 0777) == 0,
	      "chown/chmod %s", dir);
	fake = fake_collector_ready(other, path, false);
	expect_socket_refused(target, path, "open to other users");
	end_pid(fake);
	CHECK(system(cmd) == 0, "%s", cmd);

	snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", tmp);
	mkdir(elsewhere, 0700);		/* a symlink to a good-looking dir */
	CHECK(chown(elsewhere, victim, victim) == 0 &&
	      symlink(elsewhere, dir) == 0, "symlink %s", dir);
	fake = fake_collector_ready(0, path, false);
	expect_socket_refused(target, path, "symbolic link");
	end_pid(fake);
	unlink(dir);
	end_pid(target);
}

/* A process other than the target listens at its socket path. */
static void test_refuses_listener_not_target(void)
{
	char path[108], why[128];
	pid_t target = sleep_as(geteuid()), fake;

	wait_state(target, 'S');
	sockpath_target(path, sizeof(path), geteuid(), target);
	fake = fake_collector_ready(0, path, false);
	snprintf(why, sizeof(why), "served by PID %d", (int)fake);
	expect_socket_refused(target, path, why);
	CHECK(count_mapped(target, "/libqsptop.so") == 0,
	      "the refusal loaded the collector");
	end_pid(fake);
	unlink(path);
	end_pid(target);
}

/*
 * A thread inside a signal handler on a small alternate stack from the
 * heap, parked in pause(): the heap below that stack is not stack room,
 * so the thread is not borrowed and the heap stays as it was.
 */
static void test_skips_thread_on_heap_stack(void)
{
	char *argv[] = { workload_altstack, NULL }, msg[512];
	struct proc p;
	double ms;
	int rc;

	spawn(&p, argv, "altstack");
	if (!wait_output(&p, "in handler\n", READY_MS)) {
		CHECK(0, "altstack workload did not start: %s", read_text(p.out));
		kill_proc(&p);
		return;
	}
	rc = forced_inject(p.pid, SYS_pause, library, msg, sizeof(msg), &ms);
	CHECK(rc == INJECT_FAILED, "a thread on a heap alternate stack was "
	      "borrowed: %d \"%s\"", rc, msg);
	rc = stop_target(&p);
	CHECK(rc == 0 && strstr(read_text(p.out), "canary ok") != NULL,
	      "the heap below the alternate stack: exit %d: %s", rc,
	      read_text(p.out));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void test_repeated_fresh_targets(void)
{
	double ms[REPEATS];
	char msg[512];

	for (int i = 0; i < REPEATS; i++) {
		struct proc p;
		int rc;

		ms[i] = -1;
		if (!start_target(&p)) {
			CHECK(0, "round %d: workload did not start", i);
			kill_proc(&p);
			continue;
		}
		rc = forced_inject(p.pid, parked[i % 4], library, msg, sizeof(msg),
				   &ms[i]);
		CHECK(rc == INJECT_LOADED, "round %d: got %d \"%s\"", i, rc, msg);
		CHECK(collector_says_hello(p.pid), "round %d: no HELLO", i);
		CHECK(all_threads_progress(&p), "round %d: threads stalled", i);
		rc = stop_target(&p);
		CHECK(rc == 0, "round %d: workload exit %d:\n%s", i, rc,
		      read_text(p.out));
		printf("round %d: injected in %.2f ms (syscall %ld)\n", i, ms[i],
		       inject_last_syscall);
		CHECK(inject_last_syscall == parked[i % 4], "round %d: borrowed "
		      "syscall %ld", i, inject_last_syscall);
	}
	qsort(ms, REPEATS, sizeof(ms[0]), cmp_double);
	printf("injection time over %d fresh targets: min %.2f ms, median "
	       "%.2f ms, max %.2f ms\n", REPEATS, ms[0], ms[REPEATS / 2],
	       ms[REPEATS - 1]);
}

int main(void)
{
	find_paths("/tmp/qsptop-inject-XXXXXX", "wl_inject_target");
	join(workload_cancel, build, "/tests/wl_cancel_target");
	join(workload_regs, build, "/tests/wl_regs_target");
	join(workload_altstack, build, "/tests/wl_altstack_target");
	chmod(tmp, 0755);
	copy_library();
	signal(SIGPIPE, SIG_IGN);
	test_syscall_ranks();
	test_loads_into_running_target();
	test_refuses_missing_and_stopped();
	test_refuses_traced();
	test_refuses_static();
	test_refuses_other_user();
	test_root_loads_into_other_user();
	test_refuses_thread_and_hidden_library();
	test_timeout_gives_thread_back();
	test_signals_during_call();
	test_target_exits_during_call();
	test_qsptop_beside_slow_dlopen();
	test_no_deadlock_through_loader_lock();
	test_cancel_during_call();
	test_keeps_ignored_segv();
	test_registers_come_back();
	test_seccomp_needs_force();
	test_refuses_foreign_socket_directory();
	test_refuses_listener_not_target();
	test_skips_thread_on_heap_stack();
	test_repeated_fresh_targets();
	remove_tmp();
	return check_summary();
}
