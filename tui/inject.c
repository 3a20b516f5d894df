/*
 * Loading the collector into a running process. One thread of the target
 * is borrowed with ptrace, made to call dlopen() on the collector, and put
 * back exactly as it was; the other threads never stop. FACTS.md
 * ("Injection into a running process") has the recipe and its traps.
 *
 * The ptrace work runs on a short-lived thread of ours: if a tracee cannot
 * be waited for (stuck in an uninterruptible sleep), that thread gives up
 * and exits, and the kernel detaches its tracees.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "inject.h"
#include "inject_proc.h"

#define RED_ZONE 128
#define MIN_STACK_ROOM (32 * 1024)
#define MAX_ATTEMPTS 5
#define XSTATE_MAX 32768
#define RTLD_NOW_FLAG 2
#define SIGCANCEL 32		/* glibc's pthread_cancel signal */
/* The kernel's internal "restart me" results, as seen in rax at a stop. */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

/* Deadlines; the tests shorten the call one. */
static int stop_timeout_ms = 2000;
static int call_timeout_ms = 5000;
static int release_timeout_ms = 1000;

/* For the tests: the thread borrowed last and the call it was parked in. */
static pid_t inject_last_tid;
static long inject_last_syscall;

/* One borrowed thread and everything needed to put it back. */
struct borrow {
	pid_t tid;
	int mem;			/* /proc/PID/mem */
	struct user_regs_struct regs;	/* as interrupted */
	struct user_fpregs_struct fp;
	struct iovec xstate;
	int xstate_type;		/* NT_X86_XSTATE, or NT_PRFPREG */
	bool segv_blocked;
	int deferred;			/* a signal to deliver at detach */
	uint64_t slot;			/* the return address of our calls */
	uint64_t path;			/* lib, on the thread's stack */
};

struct job {
	struct target *t;
	char *msg;
	size_t len;
	int result;
	uint8_t xstate[XSTATE_MAX];
};

enum { RETRY = -2 };
enum call_result { CALL_DONE, CALL_ABANDONED, CALL_EXITED };
enum stop { STOP_TIMEOUT, STOP_GONE, STOP_RETURNED, STOP_EVENT, STOP_SIGNAL };

/* Wait for tid to stop or go: 1, 0 at the deadline, -1 when gone. */
static int wait_tid(pid_t tid, int *status, int64_t deadline)
{
	useconds_t nap = 20;

	for (;;) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);

		if (r == tid)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1;
		if (now_ms() >= deadline)
			return 0;
		usleep(nap);
		if (nap < 2000)
			nap *= 2;
	}
}

/* The next stop of the borrowed thread; *ret is rax when it returned. */
static enum stop next_stop(struct borrow *b, int64_t deadline, int *sig,
			   uint64_t *ret)
{
	struct user_regs_struct r;
	int st, w = wait_tid(b->tid, &st, deadline);

	if (w == 0)
		return STOP_TIMEOUT;
	if (w < 0 || !WIFSTOPPED(st))
		return STOP_GONE;
	*sig = WSTOPSIG(st);
	if (st >> 16 == PTRACE_EVENT_STOP)
		return STOP_EVENT;
	if (st >> 16 != 0) {
		*sig = 0;	/* an event we did not ask for */
		return STOP_SIGNAL;
	}
	if (*sig == SIGSEGV && ptrace(PTRACE_GETREGS, b->tid, 0, &r) == 0 &&
	    r.rip == FAKE_RETURN && r.rsp == b->slot + 8) {
		*ret = r.rax;
		return STOP_RETURNED;
	}
	return STOP_SIGNAL;
}

/*
 * Seize tid and stop it where it is. 0 when it is parked as safely as
 * rank promised, RETRY when it moved on or left, -1 with msg.
 */
static int borrow_thread(struct job *j, struct borrow *b, int rank)
{
	const struct target *t = j->t;
	int64_t deadline = now_ms() + stop_timeout_ms;
	uint64_t a[6], room, unused;
	int sig = 0;

	if (ptrace(PTRACE_SEIZE, b->tid, 0, 0) < 0) {
		if (errno == EPERM && check_status(j->t, j->msg, j->len) < 0)
			return -1;	/* traced by someone since */
		if (errno == EPERM)
			return not_permitted(t, j->msg, j->len);
		return process_alive(t->pid) ? RETRY : exited(t, j->msg, j->len);
	}
	if (ptrace(PTRACE_INTERRUPT, b->tid, 0, 0) < 0)
		return process_alive(t->pid) ? RETRY : exited(t, j->msg, j->len);
	for (;;) {
		switch (next_stop(b, deadline, &sig, &unused)) {
		case STOP_TIMEOUT:
			/* Stuck in an uninterruptible sleep: a tracee can
			 * only be detached when stopped, so our thread's
			 * exit will let go of it. */
			return fail(j->msg, j->len, "timed out waiting for thread "
				    "%d of PID %d to stop", (int)b->tid,
				    (int)t->pid);
		case STOP_GONE:
			return process_alive(t->pid) ? RETRY
						     : exited(t, j->msg, j->len);
		case STOP_EVENT:
			if (sig == SIGTRAP)
				goto stopped;
			ptrace(PTRACE_DETACH, b->tid, 0, 0);
			return fail(j->msg, j->len, "PID %d was stopped during "
				    "attach", (int)t->pid);
		case STOP_RETURNED:
		case STOP_SIGNAL:	/* a signal came first: deliver it */
			ptrace(PTRACE_CONT, b->tid, 0, sig);
			break;
		}
	}
stopped:
	if (ptrace(PTRACE_GETREGS, b->tid, 0, &b->regs) < 0)
		return exited(t, j->msg, j->len);
	a[0] = b->regs.rdi, a[1] = b->regs.rsi, a[2] = b->regs.rdx;
	a[3] = b->regs.r10, a[4] = b->regs.r8, a[5] = b->regs.r9;
	room = stack_room(t->pid, b->regs.rsp);
	if ((long)b->regs.orig_rax < 0 || room < MIN_STACK_ROOM ||
	    syscall_rank(t->pid, (long)b->regs.orig_rax, a) < rank ||
	    (inject_only_syscall >= 0 &&
	     (long)b->regs.orig_rax != inject_only_syscall)) {
		ptrace(PTRACE_DETACH, b->tid, 0, 0);	/* nothing changed */
		return RETRY;
	}
	return 0;
}

/* Save the FP/SSE/AVX state as a whole, and the legacy part for abandon. */
static int save_fpu(struct borrow *b)
{
	b->xstate_type = NT_X86_XSTATE;
	if (ptrace(PTRACE_GETREGSET, b->tid, (void *)(uintptr_t)NT_X86_XSTATE,
		   &b->xstate) < 0) {
		b->xstate_type = NT_PRFPREG;
		b->xstate.iov_len = sizeof(b->fp);
		if (ptrace(PTRACE_GETREGSET, b->tid, (void *)(uintptr_t)NT_PRFPREG,
			   &b->xstate) < 0)
			return -1;
	}
	return ptrace(PTRACE_GETFPREGS, b->tid, 0, &b->fp) < 0 ? -1 : 0;
}

static int put(const struct borrow *b, uint64_t addr, const void *buf,
	       size_t n)
{
	return pwrite(b->mem, buf, n, (off_t)addr) == (ssize_t)n ? 0 : -1;
}

/*
 * The registers rt_sigreturn gives the thread if it has to get back on
 * its own: those it was interrupted with, its system call restarted as
 * the kernel would after a signal without handler (a nanosleep cannot be
 * restarted after sigreturn and returns EINTR).
 */
static void fill_ucontext(ucontext_t *c, const struct user_regs_struct *r,
			  uint64_t fx)
{
	greg_t *g = c->uc_mcontext.gregs;
	long rax = (long)r->rax;

	memset(c, 0, sizeof(*c));
	/* An invalid mode: rt_sigreturn then leaves the altstack alone. */
	c->uc_stack.ss_flags = SS_ONSTACK | SS_DISABLE;
	g[REG_R8] = (greg_t)r->r8, g[REG_R9] = (greg_t)r->r9;
	g[REG_R10] = (greg_t)r->r10, g[REG_R11] = (greg_t)r->r11;
	g[REG_R12] = (greg_t)r->r12, g[REG_R13] = (greg_t)r->r13;
	g[REG_R14] = (greg_t)r->r14, g[REG_R15] = (greg_t)r->r15;
	g[REG_RDI] = (greg_t)r->rdi, g[REG_RSI] = (greg_t)r->rsi;
	g[REG_RBP] = (greg_t)r->rbp, g[REG_RBX] = (greg_t)r->rbx;
	g[REG_RDX] = (greg_t)r->rdx, g[REG_RAX] = (greg_t)r->rax;
	g[REG_RCX] = (greg_t)r->rcx, g[REG_RSP] = (greg_t)r->rsp;
	g[REG_RIP] = (greg_t)r->rip, g[REG_EFL] = (greg_t)r->eflags;
	g[REG_CSGSFS] = (greg_t)((r->cs & 0xffff) | (r->gs & 0xffff) << 16 |
				 (r->fs & 0xffff) << 32 | (r->ss & 0xffff) << 48);
	if (rax == -ERESTARTSYS || rax == -ERESTARTNOINTR ||
	    rax == -ERESTARTNOHAND) {
		g[REG_RAX] = (greg_t)r->orig_rax;
		g[REG_RIP] = (greg_t)(r->rip - 2);	/* back onto syscall */
	} else if (rax == -ERESTART_RESTARTBLOCK) {
		g[REG_RAX] = -EINTR;
	}
	c->uc_mcontext.fpregs = (fpregset_t)(uintptr_t)fx;
}

/*
 * Below the red zone, keeping the SysV alignment: the library path, a
 * signal frame (FP state and ucontext) that abandon() can point the thread
 * at, and the return slot of our calls, where the kernel expects the
 * frame's return address.
 */
static int build_frame(const struct target *t, struct borrow *b)
{
	uint64_t top = (b->regs.rsp - RED_ZONE) & ~15ULL, fx, uc;
	size_t n = strlen(t->lib) + 1;
	struct user_fpregs_struct fp = b->fp;
	ucontext_t c;

	b->path = (top - n) & ~15ULL;
	fx = (b->path - sizeof(fp)) & ~63ULL;
	uc = (fx - sizeof(c)) & ~15ULL;
	b->slot = uc - 8;
	/* No xsave magic: rt_sigreturn restores the legacy (fxsave) part. */
	memset((char *)&fp + 464, 0, sizeof(fp) - 464);
	fill_ucontext(&c, &b->regs, fx);
	return put(b, b->path, t->lib, n) < 0 || put(b, fx, &fp, sizeof(fp)) < 0 ||
	       put(b, uc, &c, sizeof(c)) < 0 ? -1 : 0;
}

/*
 * The call did not return in time: the thread may wait for a lock inside
 * dlopen (the loader lock, say). Restoring its registers now would leave
 * that dlopen half done, holding the loader lock: the process deadlocks
 * later. Detaching as is would crash it when dlopen returns to the fake
 * address. So the return slot now points at libc's __restore_rt above the
 * signal frame built with the call: whenever dlopen returns, rt_sigreturn
 * puts back the thread's registers, signal mask and FP/SSE state, and it
 * returns to its system call (restarted, or EINTR). Then we let go.
 */
static enum call_result abandon(const struct target *t, struct borrow *b,
				uint64_t *ret)
{
	int64_t deadline = now_ms() + release_timeout_ms;
	uint64_t back = t->restore_rt, mask = blocked_signals(t->pid, b->tid);
	int sig = 0;

	if (put(b, b->slot + 8 + offsetof(ucontext_t, uc_sigmask), &mask,
		sizeof(mask)) < 0 ||
	    put(b, b->slot, &back, sizeof(back)) < 0 ||
	    ptrace(PTRACE_INTERRUPT, b->tid, 0, 0) < 0)
		return CALL_EXITED;
	switch (next_stop(b, deadline, &sig, ret)) {
	case STOP_RETURNED:
		return CALL_DONE;	/* it returned just before the switch */
	case STOP_GONE:
		return CALL_EXITED;
	case STOP_TIMEOUT:
		return CALL_ABANDONED;	/* our thread's exit detaches it */
	case STOP_EVENT:
		sig = 0;
		break;
	case STOP_SIGNAL:
		break;
	}
	ptrace(PTRACE_DETACH, b->tid, 0, sig);
	return CALL_ABANDONED;
}

/* Run fn(a0, a1) on the borrowed thread; *ret is what it returned. */
static enum call_result call(const struct target *t, struct borrow *b,
			     uint64_t fn, uint64_t a0, uint64_t a1,
			     uint64_t *ret)
{
	int64_t deadline = now_ms() + call_timeout_ms;
	struct user_regs_struct r = b->regs;
	uint64_t fake = FAKE_RETURN;
	int sig = 0;

	r.rip = fn, r.rdi = a0, r.rsi = a1, r.rax = 0, r.rsp = b->slot;
	/* Not in a system call any more: else the kernel "restarts" it at
	 * fn - 2 when we continue (SIGILL, reproduced). */
	r.orig_rax = (unsigned long long)-1;
	if (put(b, b->slot, &fake, sizeof(fake)) < 0 ||
	    ptrace(PTRACE_SETREGS, b->tid, 0, &r) < 0 ||
	    ptrace(PTRACE_CONT, b->tid, 0, 0) < 0)
		return CALL_EXITED;
	for (;;) {
		switch (next_stop(b, deadline, &sig, ret)) {
		case STOP_RETURNED:
			return CALL_DONE;
		case STOP_GONE:
			return CALL_EXITED;
		case STOP_TIMEOUT:
			return abandon(t, b, ret);
		case STOP_EVENT:
			/* Someone stops the process: the thread must still
			 * finish (it may hold the loader lock); it stops
			 * with the others when we detach. */
			sig = 0;
			break;
		case STOP_SIGNAL:
			/* Cancellation would unwind dlopen halfway (the
			 * thread was in a cancellable call): hold it. */
			if (sig == SIGCANCEL) {
				b->deferred = sig;
				sig = 0;
			}
			break;
		}
		if (ptrace(PTRACE_CONT, b->tid, 0, sig) < 0)
			return CALL_EXITED;
	}
}

/* Registers and FP state as interrupted, then let go: the system call
 * restarts (or returns EINTR where the kernel never restarts it). */
static void put_back(struct borrow *b)
{
	uint64_t mask;

	ptrace(PTRACE_SETREGSET, b->tid, (void *)(uintptr_t)b->xstate_type,
	       &b->xstate);
	ptrace(PTRACE_SETREGS, b->tid, 0, &b->regs);
	/* The fault unblocked SIGSEGV (its handler is the default). */
	if (b->segv_blocked &&
	    ptrace(PTRACE_GETSIGMASK, b->tid, (void *)sizeof(mask), &mask) == 0) {
		mask |= SIGSEGV_BIT;
		ptrace(PTRACE_SETSIGMASK, b->tid, (void *)sizeof(mask), &mask);
	}
	ptrace(PTRACE_DETACH, b->tid, 0, b->deferred);
}

/* The C string at addr in the target. */
static void read_string(const struct borrow *b, uint64_t addr, char *out,
			size_t n)
{
	ssize_t got = addr ? pread(b->mem, out, n - 1, (off_t)addr) : -1;

	out[got > 0 ? got : 0] = '\0';
	if (got <= 0)
		snprintf(out, n, "(no error text)");
}

/* dlopen in the borrowed thread, dlerror if it fails, then put it back. */
static int load(struct job *j, struct borrow *b)
{
	const struct target *t = j->t;
	uint64_t handle = 0, text = 0, mask = 0;
	enum call_result rc;
	char why[512];

	if (ptrace(PTRACE_GETSIGMASK, b->tid, (void *)sizeof(mask), &mask) < 0 ||
	    save_fpu(b) < 0 || build_frame(t, b) < 0) {
		ptrace(PTRACE_DETACH, b->tid, 0, 0);	/* nothing changed */
		return fail(j->msg, j->len, "cannot prepare thread %d of PID "
			    "%d: %s", (int)b->tid, (int)t->pid, strerror(errno));
	}
	b->segv_blocked = mask & SIGSEGV_BIT;
	inject_last_tid = b->tid;
	inject_last_syscall = (long)b->regs.orig_rax;
	rc = call(t, b, t->dlopen, b->path, RTLD_NOW_FLAG, &handle);
	if (rc == CALL_DONE && handle == 0)
		rc = call(t, b, t->dlerror, 0, 0, &text);
	if (rc == CALL_EXITED)
		return exited(t, j->msg, j->len);
	if (rc == CALL_ABANDONED)
		return fail(j->msg, j->len, "timed out waiting for a thread to "
			    "return from dlopen in PID %d (it resumes by itself "
			    "when dlopen returns)", (int)t->pid);
	if (handle == 0)
		read_string(b, text, why, sizeof(why));
	put_back(b);
	if (handle == 0)
		return fail(j->msg, j->len, "dlopen failed in PID %d: %s",
			    (int)t->pid, why);
	return INJECT_LOADED;
}

/* Borrow the safest thread that stays put, and load the library. */
static int borrow_and_load(struct job *j)
{
	pid_t skip[MAX_ATTEMPTS];

	for (int i = 0; i < MAX_ATTEMPTS; i++) {
		struct borrow b = { .xstate = { j->xstate, XSTATE_MAX } };
		char path[64];
		int rank, rc;

		b.tid = pick_thread(j->t, skip, i, &rank);
		if (b.tid == 0)
			return fail(j->msg, j->len, "no thread of PID %d waits "
				    "in a system call where it is safe to borrow "
				    "(all run or are in unknown calls): try "
				    "again when it is less busy", (int)j->t->pid);
		rc = borrow_thread(j, &b, rank);
		skip[i] = b.tid;
		if (rc == RETRY)
			continue;
		if (rc < 0)
			return rc;
		snprintf(path, sizeof(path), "/proc/%d/mem", (int)j->t->pid);
		b.mem = open(path, O_RDWR | O_CLOEXEC);
		if (b.mem < 0) {
			ptrace(PTRACE_DETACH, b.tid, 0, 0);
			return fail(j->msg, j->len, "cannot open %s: %s", path,
				    strerror(errno));
		}
		rc = load(j, &b);
		close(b.mem);
		return rc;
	}
	return fail(j->msg, j->len, "the threads of PID %d kept leaving their "
		    "system calls while being stopped: try again",
		    (int)j->t->pid);
}

static void *inject_thread(void *arg)
{
	struct job *j = arg;
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	j->result = borrow_and_load(j);
	return NULL;
}

/*
 * Run the ptrace part on its own thread, holding the signals that would
 * end qsptop: dying halfway would leave the target's thread at our fake
 * return address.
 */
static int run_job(struct job *j)
{
	sigset_t hold, old;
	pthread_t thread;
	int rc;

	sigemptyset(&hold);
	sigaddset(&hold, SIGINT);
	sigaddset(&hold, SIGTERM);
	sigaddset(&hold, SIGHUP);
	sigaddset(&hold, SIGQUIT);
	sigaddset(&hold, SIGTSTP);
	pthread_sigmask(SIG_BLOCK, &hold, &old);
	rc = pthread_create(&thread, NULL, inject_thread, j);
	if (rc == 0)
		pthread_join(thread, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return fail(j->msg, j->len, "cannot start a thread: %s",
			    strerror(rc));
	return j->result;
}

int inject_collector(pid_t pid, const char *lib_path, char *msg, size_t len)
{
	struct target t = { .pid = pid };
	struct job *j;
	int rc;

	msg[0] = '\0';
	if (pid == getpid())
		return fail(msg, len, "cannot attach qsptop to itself");
	if (preflight(&t, lib_path, msg, len) < 0)
		return INJECT_FAILED;
	if (t.already) {
		snprintf(msg, len, "%s", t.warning);
		return INJECT_ALREADY;
	}
	if (resolve_libc(&t, msg, len) < 0)
		return INJECT_FAILED;
	j = calloc(1, sizeof(*j));
	if (j == NULL)
		return fail(msg, len, "out of memory");
	j->t = &t;
	j->msg = msg;
	j->len = len;
	rc = run_job(j);
	free(j);
	if (rc == INJECT_LOADED)
		snprintf(msg, len, "%s", t.warning);
	return rc < 0 ? INJECT_FAILED : rc;
}
