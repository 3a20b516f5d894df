/*
 * What the injection tests share (test_inject, test_inject_borrow): the
 * workload started and watched, its threads found by the call they are
 * parked in, libraries built whose constructor does what a test needs,
 * and injection run with the test hooks of tui/inject.h. Header-only and
 * static inline, like harness.h: each program uses only some of it.
 */
#ifndef INJECT_TARGETS_H
#define INJECT_TARGETS_H

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
static inline void copy_library(void)
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
static inline char *read_text(const char *path)
{
	static char *kept[8];
	static int next;
	char **slot = &kept[next++ % 8];

	free(*slot);
	return *slot = slurp_file(path, "");
}

/* Start argv with its output in a file; no input. */
static inline void spawn(struct proc *p, char *const argv[], const char *name)
{
	static int seq;

	snprintf(p->out, sizeof(p->out), "%s/%s-%d.out", tmp, name, seq++);
	p->pid = start(argv, p->out, p->out);
}

/* Poll until the output of p holds text. */
static inline bool wait_output(const struct proc *p, const char *text, int ms)
{
	int64_t deadline = clock_now_ms() + ms;

	while (strstr(read_text(p->out), text) == NULL) {
		if (clock_now_ms() >= deadline)
			return false;
		usleep(5000);
	}
	return true;
}

static inline bool start_target(struct proc *p)
{
	char *argv[] = { workload, NULL };

	spawn(p, argv, "target");
	return wait_output(p, "ready\n", READY_MS);
}

/* Ask the workload to finish; its exit status, -1 if it had to be killed. */
static inline int stop_target(struct proc *p)
{
	kill(p->pid, SIGTERM);
	return wait_status(p->pid, EXIT_MS);
}

static inline void kill_proc(struct proc *p)
{
	kill(p->pid, SIGKILL);
	kill(p->pid, SIGCONT);
	waitpid(p->pid, NULL, 0);
}

static inline bool last_tick(const struct proc *p, struct tick *t)
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
static inline bool all_threads_progress(const struct proc *p)
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

static inline bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Inject and report how long it took, in ms. */
static inline int timed_inject(pid_t pid, const char *lib, char *msg,
			       size_t len, double *ms)
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

static inline char state_of(pid_t pid)
{
	char path[64], text[4096], state[32] = "?";

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (inject_slurp(path, text, sizeof(text)) > 0)
		inject_field(text, "State", state, sizeof(state));
	return state[0];
}

static inline bool wait_state(pid_t pid, char want)
{
	int64_t deadline = clock_now_ms() + 2000;

	while (state_of(pid) != want) {
		if (clock_now_ms() >= deadline)
			return false;
		usleep(2000);
	}
	return true;
}

/* The calls the workload's threads park in: each gets borrowed. */
static const long parked[] = { SYS_clock_nanosleep, SYS_epoll_wait, SYS_poll,
			       SYS_futex };

/* A library NAME whose constructor runs the C statements body. */
static inline void build_library(const char *name, const char *body, char *so,
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
static inline void build_slow_library(const char *name, int ms, char *so,
				      char *done, size_t n)
{
	char body[PATH_MAX + 128];

	snprintf(done, n, "%s/%s-done", tmp, name);
	snprintf(body, sizeof(body), "usleep(%d000); close(creat(\"%s\", 0644));",
		 ms, done);
	build_library(name, body, so, n);
}

/* The thread of pid parked in system call nr (looking for 5 s), or 0. */
static inline pid_t thread_in(pid_t pid, long nr)
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
static inline int forced_inject(pid_t pid, long nr, const char *so, char *msg,
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

/* "TID:STATE:SYSCALL" for each thread of pid, for failure messages. */
static inline const char *thread_states(pid_t pid)
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
static inline int qsptop_with(const char *option, pid_t pid, struct proc *q)
{
	char pidstr[16];
	char *argv[] = { qsptop, "-b", "-n", "1", "-d", "0.2", "-p", pidstr,
			 (char *)option, NULL };

	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	spawn(q, argv, "qsptop");
	return wait_status(q->pid, EXIT_MS);
}

#endif
