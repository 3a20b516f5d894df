/*
 * The thread injection borrows (tui/inject*.c, linked in): which one is
 * chosen, by the call it is parked in and the stack it runs on, and what
 * happens while it runs our call. A dlopen that does not return in time
 * gives its thread back anyway, as it does when qsptop is killed
 * mid-call; a target that exits meanwhile, or holds the loader's lock,
 * comes to no harm. Signals sent meanwhile (a pthread_cancel) are not
 * lost, no signal disposition changes, and the borrowed thread's
 * registers come back.
 */
#include "inject_targets.h"

/* Workloads: a worker to cancel, registers checked, a heap altstack. */
static char workload_cancel[PATH_MAX], workload_regs[PATH_MAX];
static char workload_altstack[PATH_MAX];

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
	/* Once: refused, the pick looks for another thread till its deadline. */
	thread_in(p.pid, SYS_pause);
	inject_only_syscall = SYS_pause;
	rc = timed_inject(p.pid, library, msg, sizeof(msg), &ms);
	inject_only_syscall = -1;
	CHECK(rc == INJECT_FAILED, "a thread on a heap alternate stack was "
	      "borrowed: %d \"%s\"", rc, msg);
	rc = stop_target(&p);
	CHECK(rc == 0 && strstr(read_text(p.out), "canary ok") != NULL,
	      "the heap below the alternate stack: exit %d: %s", rc,
	      read_text(p.out));
}

/*
 * A target busy for longer than the first look for a safe thread (all its
 * threads run), then parked in a read of a pipe: qsptop waits for it to
 * park and loads, instead of giving up while it is busy.
 */
static void test_waits_while_target_busy(void)
{
	int fds[2], status = 0;
	char msg[512], c;
	double ms;
	pid_t pid;
	int rc;

	if (pipe(fds) < 0) {
		CHECK(0, "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		int64_t until = clock_now_ms() + 800;

		close(fds[1]);
		while (clock_now_ms() < until)
			;
		_exit(read(fds[0], &c, 1) == 0 ? 0 : 1);
	}
	close(fds[0]);
	rc = timed_inject(pid, library, msg, sizeof(msg), &ms);
	CHECK(rc == INJECT_LOADED, "a target busy for 800 ms then parked in "
	      "read: expected INJECT_LOADED, got %d \"%s\"", rc, msg);
	close(fds[1]);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0, "the busy target: status 0x%x", status);
}

int main(void)
{
	find_paths("/tmp/qsptop-inject-borrow-XXXXXX", "wl_inject_target");
	join(workload_cancel, build, "/tests/wl_cancel_target");
	join(workload_regs, build, "/tests/wl_regs_target");
	join(workload_altstack, build, "/tests/wl_altstack_target");
	chmod(tmp, 0755);
	copy_library();
	signal(SIGPIPE, SIG_IGN);
	test_syscall_ranks();
	test_timeout_gives_thread_back();
	test_signals_during_call();
	test_target_exits_during_call();
	test_qsptop_beside_slow_dlopen();
	test_no_deadlock_through_loader_lock();
	test_cancel_during_call();
	test_keeps_ignored_segv();
	test_registers_come_back();
	test_skips_thread_on_heap_stack();
	test_waits_while_target_busy();
	remove_tmp();
	return check_summary();
}
