/*
 * Loading the collector into a running process. One thread of the target
 * is borrowed with ptrace, made to call dlopen() on the collector, and put
 * back exactly as it was; the other threads never stop. README.md ("How
 * it works") has the outline; the traps are told where they are avoided.
 *
 * The thread runs a chain of calls laid out on its stack as signal frames
 * (inject_chain.c): each call returns into libc's __restore_rt, whose
 * rt_sigreturn starts the next, and the last frame holds the thread's own
 * registers, signal mask and FP/SSE/AVX state. We see it get there at the
 * rt_sigreturn system call stop and put the thread back ourselves; if we
 * are gone by then (killed, or given up waiting), rt_sigreturn puts it
 * back without us. Nothing we do ever raises a signal in the target.
 *
 * The ptrace work runs on a short-lived thread of ours: if a tracee cannot
 * be waited for (stuck in an uninterruptible sleep), that thread gives up
 * and exits, and the kernel detaches its tracees.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/clock.h"
#include "inject.h"
#include "inject_chain.h"
#include "inject_copy.h"
#include "inject_elf.h"
#include "inject_proc.h"
#include "inject_thread.h"

#define MIN_STACK_ROOM (32 * 1024)
#define MAX_ATTEMPTS 8
#define XSTATE_MAX 32768
#define SYSCALL_STOP (SIGTRAP | 0x80)	/* with PTRACE_O_TRACESYSGOOD */
#define BUSY_US 50
#define SPIN_US 500

/* Deadlines (inject_call_timeout_ms in inject.h). Finding a thread
 * (waiting for the loader's lock, or for a sleep to end) has one of its
 * own. */
static int stop_timeout_ms = 2000;
int inject_call_timeout_ms = 5000;
static int release_timeout_ms = 1000;
static int borrow_timeout_ms = 3000;

pid_t inject_last_tid;
long inject_last_syscall;

struct job {
	struct inject_target *t;
	char *msg;
	size_t len;
	int result;
	uint8_t xstate[XSTATE_MAX];
};

enum { RETRY = -2, LOADER_BUSY = -3 };
enum call_result { CALL_DONE, CALL_ABANDONED, CALL_EXITED };
enum stop {
	STOP_TIMEOUT, STOP_GONE,
	STOP_RETURNED,	/* at the rt_sigreturn our call returns into */
	STOP_SYSCALL,	/* another system call stop */
	STOP_EVENT, STOP_SIGNAL,
};

/*
 * Wait for tid to stop or go: 1, 0 at the deadline, -1 when gone. A call
 * stops at each of its system calls, a few microseconds apart: poll
 * without a pause for a moment, then with the shortest sleeps (a sleeper
 * gets the CPU back sooner than a yielder beside a busy process), then
 * back off.
 */
static int wait_tid(pid_t tid, int *status, int64_t deadline)
{
	uint64_t start = clock_now_ns(), waited_us;
	useconds_t nap = 20;

	for (;;) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);

		if (r == tid)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1;
		if (clock_now_ms() >= deadline)
			return 0;
		waited_us = (clock_now_ns() - start) / 1000;
		if (waited_us < BUSY_US)
			continue;
		if (waited_us < SPIN_US) {
			usleep(1);
			continue;
		}
		usleep(nap);
		if (nap < 2000)
			nap *= 2;
	}
}

/* The step whose frame the stopped thread's rt_sigreturn enters, or -1. */
static int entering(const struct inject_target *t, const struct borrow *b)
{
	struct user_regs_struct r;

	if (ptrace(PTRACE_GETREGS, b->tid, 0, &r) < 0 ||
	    r.orig_rax != SYS_rt_sigreturn || (long)r.rax != -ENOSYS ||
	    r.rip != t->restore_rt + RESTORE_RT_SYSCALL + SYSCALL_INSN_LEN)
		return -1;
	for (int i = 0; i < CHAIN; i++)
		if (r.rsp == b->slot[i] + 8)
			return i;
	return -1;
}

/* The next stop of the borrowed thread; *sig is the signal to pass on. */
static enum stop next_stop(const struct inject_target *t, struct borrow *b,
			   int64_t deadline, int *sig)
{
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
	if (*sig == SYSCALL_STOP) {
		b->step = entering(t, b);
		*sig = 0;
		b->dlopen_returned |= b->step > TO_DLOPEN && !b->loader_busy;
		return b->step == TO_THREAD ? STOP_RETURNED : STOP_SYSCALL;
	}
	return STOP_SIGNAL;
}

/* The borrowed thread went away: RETRY while its process lives. */
static int thread_lost(struct job *j)
{
	if (inject_process_alive(j->t->pid))
		return RETRY;
	return inject_exited(j->t, j->msg, j->len);
}

/* The thread is parked as the pick promised: in a call of that rank (or
 * better), with room on its own stack, and not inside dlopen itself. */
static bool parked_as_picked(const struct job *j, struct borrow *b,
			     enum borrow_rank rank)
{
	const struct user_regs_struct *r = &b->regs;
	long nr = (long)r->orig_rax;

	b->args[0] = r->rdi, b->args[1] = r->rsi, b->args[2] = r->rdx;
	b->args[3] = r->r10, b->args[4] = r->r8, b->args[5] = r->r9;
	b->rank = nr < 0 ? RANK_NEVER : inject_syscall_rank(j->t->pid, nr, b->args);
	b->nr = nr;
	return b->rank >= rank && b->rank > RANK_NEVER &&
	       (inject_only_syscall < 0 || nr == inject_only_syscall) &&
	       inject_stack_room(j->t->pid, r->rsp, r->fs_base) >= MIN_STACK_ROOM &&
	       inject_loader_owner(j->t, b->mem) != b->tid;
}

/* A system call stop of b: true at an exit, with the value returned. */
static bool at_exit(const struct borrow *b, long *value)
{
	struct __ptrace_syscall_info si;

	if (ptrace(PTRACE_GET_SYSCALL_INFO, b->tid, (void *)sizeof(si), &si) <= 0 ||
	    si.op != PTRACE_SYSCALL_INFO_EXIT)
		return false;
	*value = (long)si.exit.rval;
	return true;
}

static bool restarting(long value)
{
	return value == -ERESTARTSYS || value == -ERESTARTNOINTR ||
	       value == -ERESTARTNOHAND || value == -ERESTART_RESTARTBLOCK;
}

/*
 * The thread's call can only be resumed through the kernel's restart
 * block (a relative sleep, poll, a timed futex wait), which the
 * rt_sigreturn of our chain would end: borrowed now, the call would
 * return EINTR. So it goes on to the end of its call, its system calls
 * watched, and is borrowed as the call returns: 0 then. If it makes
 * another call first, takes a signal, or sleeps past the deadline, we
 * let go of it untouched (RETRY) and the kernel resumes the call itself.
 */
static int borrow_at_end(struct job *j, struct borrow *b, int64_t deadline)
{
	long nr = b->nr, value;
	bool interrupted = false, same;

	if (ptrace(PTRACE_SYSCALL, b->tid, 0, 0) < 0)
		return thread_lost(j);
	for (;;) {
		int st, w = wait_tid(b->tid, &st, interrupted ?
				     deadline + stop_timeout_ms : deadline);

		if (w == 0 && !interrupted) {
			interrupted = true;
			ptrace(PTRACE_INTERRUPT, b->tid, 0, 0);
			continue;
		}
		if (w == 0)
			return inject_fail(j->msg, j->len, "timed out waiting for "
					   "thread %d of PID %d to stop", (int)b->tid,
					   (int)j->t->pid);
		if (w < 0 || !WIFSTOPPED(st))
			return thread_lost(j);
		if (WSTOPSIG(st) != SYSCALL_STOP) {
			/* Our interrupt, a group stop, or a signal to deliver. */
			ptrace(PTRACE_DETACH, b->tid, 0, st >> 16 ? 0 : WSTOPSIG(st));
			b->slept = interrupted;
			return RETRY;
		}
		if (ptrace(PTRACE_GETREGS, b->tid, 0, &b->regs) < 0)
			return thread_lost(j);
		same = (long)b->regs.orig_rax == nr ||
		       (long)b->regs.orig_rax == SYS_restart_syscall;
		if (same && at_exit(b, &value) && !restarting(value))
			return 0;	/* its call returned value */
		if (!same || interrupted) {
			/* At another call, or stopped by our interrupt (a
			 * system call stop takes its place): the kernel
			 * restarts the call when we let go. */
			ptrace(PTRACE_DETACH, b->tid, 0, 0);
			b->slept = interrupted;
			return RETRY;
		}
		if (ptrace(PTRACE_SYSCALL, b->tid, 0, 0) < 0)
			return thread_lost(j);
	}
}

/*
 * Seize tid and stop it where it is. 0 when it is parked as safely as
 * the pick promised, RETRY when it moved on or left, -1 with msg.
 */
static int borrow_thread(struct job *j, struct borrow *b, enum borrow_rank rank,
			 int64_t deadline)
{
	const struct inject_target *t = j->t;
	int64_t stop_deadline = clock_now_ms() + stop_timeout_ms;
	int sig = 0;

	if (ptrace(PTRACE_SEIZE, b->tid, 0, PTRACE_O_TRACESYSGOOD) < 0) {
		if (errno == EPERM && inject_check_status(j->t, j->msg, j->len) < 0)
			return -1;	/* traced by someone since */
		if (errno == EPERM)
			return inject_not_permitted(t, j->msg, j->len);
		return thread_lost(j);
	}
	if (ptrace(PTRACE_INTERRUPT, b->tid, 0, 0) < 0)
		return thread_lost(j);
	for (;;) {
		switch (next_stop(t, b, stop_deadline, &sig)) {
		case STOP_TIMEOUT:
			/* Stuck in an uninterruptible sleep: a tracee can
			 * only be detached when stopped, so our thread's
			 * exit will let go of it. */
			return inject_fail(j->msg, j->len, "timed out waiting for thread "
					   "%d of PID %d to stop", (int)b->tid,
					   (int)t->pid);
		case STOP_GONE:
			return thread_lost(j);
		case STOP_EVENT:
			if (sig == SIGTRAP)
				goto stopped;
			ptrace(PTRACE_DETACH, b->tid, 0, 0);
			return inject_fail(j->msg, j->len, "PID %d was stopped during "
					   "attach", (int)t->pid);
		case STOP_RETURNED:
		case STOP_SYSCALL:
		case STOP_SIGNAL:	/* a signal came first: deliver it */
			ptrace(PTRACE_CONT, b->tid, 0, sig);
			break;
		}
	}
stopped:
	if (ptrace(PTRACE_GETREGS, b->tid, 0, &b->regs) < 0)
		return inject_exited(t, j->msg, j->len);
	if (!parked_as_picked(j, b, rank)) {
		ptrace(PTRACE_DETACH, b->tid, 0, 0);	/* nothing changed */
		return RETRY;
	}
	if ((long)b->regs.rax != -ERESTART_RESTARTBLOCK)
		return 0;
	if (!inject_resumes_from_args(b->nr, b->args))
		return borrow_at_end(j, b, deadline);
	/* Its remaining time is in its request: restarted as it is. */
	b->regs.rax = (unsigned long long)-ERESTARTNOHAND;
	return 0;
}

/*
 * The chain did not end in time: the thread may wait for a lock inside
 * dlopen (the loader lock, say). Restoring its registers now would leave
 * that dlopen half done, holding the loader lock: the process deadlocks
 * later. The chain needs no one to finish, so we just let go: whenever
 * dlopen returns, the thread gets back by itself.
 */
static enum call_result abandon(const struct inject_target *t, struct borrow *b)
{
	int64_t deadline = clock_now_ms() + release_timeout_ms;
	int sig = 0;

	if (ptrace(PTRACE_INTERRUPT, b->tid, 0, 0) < 0)
		return CALL_EXITED;
	switch (next_stop(t, b, deadline, &sig)) {
	case STOP_RETURNED:
		return CALL_DONE;	/* it returned just before the switch */
	case STOP_GONE:
		return CALL_EXITED;
	case STOP_TIMEOUT:
		return CALL_ABANDONED;	/* our thread's exit detaches it */
	case STOP_SYSCALL:
	case STOP_EVENT:
	case STOP_SIGNAL:
		break;
	}
	ptrace(PTRACE_DETACH, b->tid, 0, sig);
	return CALL_ABANDONED;
}

/*
 * At the rt_sigreturn into DLOPEN: unless the trylock took the loader's
 * lock, the thread goes on at RESTORE_STATE instead (rt_sigreturn takes
 * its frame from the stack pointer).
 */
static int skip_if_loader_busy(const struct inject_target *t, struct borrow *b)
{
	struct user_regs_struct r;

	if (inject_loader_owner(t, b->mem) == b->tid)
		return 0;
	b->loader_busy = true;
	if (ptrace(PTRACE_GETREGS, b->tid, 0, &r) < 0)
		return -1;
	r.rsp = b->slot[TO_RESTORE_STATE] + 8;
	return ptrace(PTRACE_SETREGS, b->tid, 0, &r) < 0 ? -1 : 0;
}

/*
 * Run the chain on the borrowed thread until it enters its last frame.
 * Its registers are the only thing we set: were we killed right after,
 * the thread would run the chain by itself.
 */
static enum call_result run_chain(const struct inject_target *t, struct borrow *b)
{
	int64_t deadline = clock_now_ms() + inject_call_timeout_ms;
	struct user_regs_struct r = b->regs;
	int sig = 0;

	r.rip = t->setcancelstate, r.rdi = PTHREAD_CANCEL_DISABLE;
	r.rsi = b->old_state_at, r.rax = 0, r.rsp = b->slot[chain_first_step(t)];
	/* Not in a system call any more: else the kernel "restarts" it at
	 * rip - 2 when we continue (SIGILL, reproduced). */
	r.orig_rax = (unsigned long long)-1;
	if (ptrace(PTRACE_SETREGS, b->tid, 0, &r) < 0 ||
	    ptrace(PTRACE_SYSCALL, b->tid, 0, 0) < 0)
		return CALL_EXITED;
	for (;;) {
		switch (next_stop(t, b, deadline, &sig)) {
		case STOP_RETURNED:
			return CALL_DONE;
		case STOP_GONE:
			return CALL_EXITED;
		case STOP_TIMEOUT:
			return abandon(t, b);
		case STOP_EVENT:
			/* Someone stops the process: the thread must still
			 * finish (it may hold the loader lock); it stops
			 * with the others when we detach. */
			sig = 0;
			break;
		case STOP_SYSCALL:
			if (b->step == TO_DLOPEN && chain_takes_loader_lock(t) &&
			    skip_if_loader_busy(t, b) < 0)
				return CALL_EXITED;
			break;
		case STOP_SIGNAL:
			break;
		}
		if (ptrace(PTRACE_SYSCALL, b->tid, 0, sig) < 0)
			return CALL_EXITED;
	}
}

/*
 * At the last frame's rt_sigreturn stop: mask, FP state and registers as
 * interrupted, the rt_sigreturn skipped (orig_rax -1), errno as it was,
 * then let go. In this order, dying halfway still lets rt_sigreturn
 * finish the job.
 */
static void put_back(struct borrow *b)
{
	struct user_regs_struct r = chain_resumed(&b->regs);

	r.orig_rax = (unsigned long long)-1;
	ptrace(PTRACE_SETSIGMASK, b->tid, (void *)sizeof(b->mask), &b->mask);
	ptrace(PTRACE_SETREGSET, b->tid, (void *)(uintptr_t)b->xstate_type,
	       &b->xstate);
	ptrace(PTRACE_SETREGS, b->tid, 0, &r);
	if (b->errno_at != 0)
		chain_put(b, b->errno_at, &b->saved_errno, sizeof(b->saved_errno));
	ptrace(PTRACE_DETACH, b->tid, 0, 0);
}

/* The C string at addr in the target, "" when unreadable. */
static void read_string(const struct borrow *b, uint64_t addr, char *out,
			size_t n)
{
	ssize_t got = addr ? pread(b->mem, out, n - 1, (off_t)addr) : -1;

	out[got > 0 ? got : 0] = '\0';
}

/*
 * What dlerror() would say after the thread's failed dlopen, read from
 * libc's thread-local error record (struct dl_action_result of glibc
 * 2.34+) instead of calling dlerror: a call returning into __restore_rt
 * cannot hand back a pointer, and every call is a risk.
 */
static void dl_error_text(const struct inject_target *t, const struct borrow *b,
			  char *out, size_t n)
{
	struct { int32_t errcode; uint8_t source, returned;
		 uint64_t objname, errstring; } res;
	char obj[256], text[256];
	uint64_t at;
	int64_t off;

	snprintf(out, n, "(no error text)");
	if (t->dlerror_got == 0 || chain_get(b, t->dlerror_got, &off, 8) < 0 ||
	    chain_get(b, b->regs.fs_base + (uint64_t)off, &at, 8) < 0 || at == 0 ||
	    at == UINT64_MAX || chain_get(b, at, &res, sizeof(res)) < 0)
		return;
	read_string(b, res.objname, obj, sizeof(obj));
	read_string(b, res.errstring, text, sizeof(text));
	if (text[0] == '\0')
		return;
	snprintf(out, n, "%s%s%s%s%s", obj, obj[0] ? ": " : "", text,
		 res.errcode ? ": " : "", res.errcode ? strerror(res.errcode) : "");
}

/* Where the thread's errno is, and its value; 0 when libc will not say. */
static void save_errno(const struct inject_target *t, struct borrow *b)
{
	int64_t off;

	b->errno_at = 0;
	if (!t->errno_known || t->dlerror_got == 0 ||
	    chain_get(b, t->dlerror_got, &off, 8) < 0)
		return;
	b->errno_at = b->regs.fs_base + (uint64_t)off - t->tls_dlerror +
		      t->tls_errno;
	if (chain_get(b, b->errno_at, &b->saved_errno, sizeof(b->saved_errno)) < 0)
		b->errno_at = 0;
}

/* Everything put_back needs, and the frame on the thread's stack. */
static int prepare(const struct inject_target *t, struct borrow *b)
{
	if (ptrace(PTRACE_GETSIGMASK, b->tid, (void *)sizeof(b->mask),
		   &b->mask) < 0 || chain_save_fpu(b) < 0 || chain_build(t, b) < 0)
		return -1;
	save_errno(t, b);
	return 0;
}

/* After qsptop_wake(): the thread back; the collector starts by itself. */
static int woken(struct job *j, struct borrow *b, enum call_result rc)
{
	if (rc == CALL_EXITED)
		return inject_exited(j->t, j->msg, j->len);
	if (rc == CALL_ABANDONED)
		return inject_fail(j->msg, j->len, "timed out waiting for a thread to "
				   "return from qsptop_wake in PID %d (it resumes by "
				   "itself when it does)", (int)j->t->pid);
	put_back(b);
	return INJECT_WOKEN;
}

/* dlopen (or qsptop_wake) in the borrowed thread, then put it back. */
static int load(struct job *j, struct borrow *b)
{
	struct inject_target *t = j->t;
	enum call_result rc;
	char why[600];
	bool loaded;

	if (prepare(t, b) < 0) {
		ptrace(PTRACE_DETACH, b->tid, 0, 0);	/* nothing changed */
		return inject_fail(j->msg, j->len, "cannot prepare thread %d of PID "
				   "%d: %s", (int)b->tid, (int)t->pid, strerror(errno));
	}
	inject_last_tid = b->tid;
	inject_last_syscall = b->nr;
	rc = run_chain(t, b);
	if (t->wake)
		return woken(j, b, rc);
	/* Gone after dlopen: a pthread_cancel acted on when its cancel
	 * state came back, as it would have in its system call. */
	if (rc == CALL_EXITED && b->dlopen_returned && inject_lib_mapped(t))
		return INJECT_LOADED;
	if (rc == CALL_EXITED)
		return inject_exited(t, j->msg, j->len);
	if (rc == CALL_ABANDONED) {
		t->dlopen_pending = true;
		return inject_fail(j->msg, j->len, "timed out waiting for a thread to "
				   "return from dlopen in PID %d (it resumes by itself "
				   "when dlopen returns)", (int)t->pid);
	}
	if (b->loader_busy) {
		put_back(b);
		return LOADER_BUSY;
	}
	loaded = inject_lib_mapped(t);
	if (!loaded)
		dl_error_text(t, b, why, sizeof(why));
	put_back(b);
	if (!loaded)
		return inject_fail(j->msg, j->len, "dlopen failed in PID %d: %s",
				   (int)t->pid, why);
	return INJECT_LOADED;
}

/*
 * Wait until no thread holds the loader's lock (a dlopen in progress):
 * a thread borrowed meanwhile could hold what that dlopen's constructors
 * wait for. 0, or -1 with msg at the deadline.
 */
static int wait_loader_free(struct job *j, int mem, int64_t deadline)
{
	pid_t owner;

	while ((owner = inject_loader_owner(j->t, mem)) > 0) {
		if (clock_now_ms() >= deadline)
			return inject_fail(j->msg, j->len, "thread %d of PID %d has "
					   "held the loader's lock (a dlopen in "
					   "progress) for over %d ms: try again",
					   (int)owner, (int)j->t->pid,
					   borrow_timeout_ms);
		usleep(10000);
	}
	return 0;
}

/* Why no thread could be borrowed, from what the pick saw. */
static int no_thread(struct job *j, const struct pick *p, bool slept)
{
	pid_t pid = j->t->pid;

	if (p->eintr_tid != 0)
		return inject_fail(j->msg, j->len, "no thread of PID %d can be borrowed "
				   "unseen: thread %d waits in %s, which any stop "
				   "ends with EINTR, and no other waits in a safe "
				   "call; --force borrows it anyway (its %s returns "
				   "EINTR once)", (int)pid, (int)p->eintr_tid,
				   inject_syscall_name(p->eintr_nr),
				   inject_syscall_name(p->eintr_nr));
	if (slept)
		return inject_fail(j->msg, j->len, "no thread of PID %d left its sleep "
				   "or wait within %d ms, and the others run or are "
				   "in calls unsafe to borrow: try again",
				   (int)pid, borrow_timeout_ms);
	return inject_fail(j->msg, j->len, "no thread of PID %d waited in a "
			   "system call where it is safe to borrow within %d ms "
			   "(all ran or were in unknown calls): try again when "
			   "it is less busy", (int)pid, borrow_timeout_ms);
}

/* Forced to borrow a thread whose call a stop fails: say so. */
static void note_eintr(struct job *j, const struct borrow *b)
{
	if (b->rank == RANK_EINTR)
		snprintf(j->t->warning, sizeof(j->t->warning), "warning: thread %d "
			 "of PID %d was borrowed from %s, which returned EINTR "
			 "(--force)", (int)b->tid, (int)j->t->pid,
			 inject_syscall_name(b->nr));
}

/* Borrow the safest thread that stays put, and load the library. */
static int borrow_and_load(struct job *j, int mem)
{
	int64_t deadline = clock_now_ms() + borrow_timeout_ms;
	pid_t skip[MAX_ATTEMPTS];
	bool slept = false;
	int nskip = 0;

	for (int i = 0; i < MAX_ATTEMPTS; i++) {
		struct borrow b = { .xstate = { j->xstate, XSTATE_MAX },
				    .mem = mem, .step = -1 };
		struct pick p;
		int rc;

		if (wait_loader_free(j, mem, deadline) < 0)
			return -1;
		inject_pick_thread(j->t, skip, nskip, deadline, &p);
		if (p.tid == 0 && !inject_process_alive(j->t->pid))
			return inject_exited(j->t, j->msg, j->len);
		if (p.tid == 0)
			return no_thread(j, &p, slept);
		b.tid = p.tid;
		rc = borrow_thread(j, &b, p.rank, deadline);
		slept |= b.slept;
		if (rc == RETRY && nskip < MAX_ATTEMPTS)
			skip[nskip++] = b.tid;
		if (rc == RETRY || (rc == 0 && (rc = load(j, &b)) == LOADER_BUSY))
			continue;
		if (rc >= 0)
			note_eintr(j, &b);
		return rc;
	}
	return inject_fail(j->msg, j->len, "the threads of PID %d kept leaving their "
			   "system calls while being stopped: try again",
			   (int)j->t->pid);
}

static void *inject_thread(void *arg)
{
	struct job *j = arg;
	sigset_t all;

	char path[64];
	int mem;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)j->t->pid);
	mem = open(path, O_RDWR | O_CLOEXEC);
	if (mem < 0) {
		j->result = inject_fail(j->msg, j->len, "cannot open %s: %s", path,
					strerror(errno));
		return NULL;
	}
	j->result = borrow_and_load(j, mem);
	close(mem);
	return NULL;
}

/*
 * Run the ptrace part for t on its own thread, holding the signals that
 * would end qsptop: dying halfway is safe, but the injection then ends in
 * a timeout's state, the collector loading when dlopen can finish.
 */
static int run_job(struct inject_target *t, char *msg, size_t len)
{
	struct job *j = calloc(1, sizeof(*j));
	sigset_t hold, old;
	pthread_t thread;
	int rc;

	if (j == NULL)
		return inject_fail(msg, len, "out of memory");
	*j = (struct job){ .t = t, .msg = msg, .len = len };

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
		rc = inject_fail(msg, len, "cannot start a thread: %s",
				 strerror(rc));
	else
		rc = j->result;
	free(j);
	return rc;
}

/* Run the job of loading t's library; the copy, if any, goes after. */
static int load_lib(struct inject_target *t, char *msg, size_t len)
{
	int rc;

	if (t->copy && inject_copy_lib(t, msg, len) < 0)
		return INJECT_FAILED;
	rc = run_job(t, msg, len);
	if (t->copy && t->dlopen_pending)
		snprintf(msg + strlen(msg), len - strlen(msg), "; its copy of the "
			 "collector stays in /tmp/%s there", t->copy_dir);
	inject_remove_copy(t);
	return rc;
}

/* All checks before attaching: 0 with t filled in, -1 with msg. */
static int preflight(struct inject_target *t, const char *lib, char *msg,
		     size_t len)
{
	return inject_check_status(t, msg, len) < 0 ||
	       inject_check_exe(t, msg, len) < 0 ||
	       inject_copy_check(t, lib, msg, len) < 0 ||
	       inject_check_maps(t, msg, len) < 0 ? -1 : 0;
}

/* The last inject_collector() failed in borrowing or loading. */
static bool failed_loading;

bool inject_failed_loading(void)
{
	return failed_loading;
}

int inject_collector(pid_t pid, const char *lib_path, bool force, char *msg,
		     size_t len)
{
	struct inject_target t = { .pid = pid, .force = force, .copy_tmp = -1,
			    .copy_fd = -1 };
	int rc;

	msg[0] = '\0';
	failed_loading = false;
	if (pid == getpid())
		return inject_fail(msg, len, "cannot attach qsptop to itself");
	if (preflight(&t, lib_path, msg, len) < 0)
		return INJECT_FAILED;
	if (t.already) {
		snprintf(msg, len, "%s", t.warning);
		return INJECT_ALREADY;
	}
	if (inject_resolve_libc(&t, msg, len) < 0)
		return INJECT_FAILED;
	inject_resolve_loader(&t);
	rc = load_lib(&t, msg, len);
	if (rc == INJECT_LOADED)
		snprintf(msg, len, "%s", t.warning);
	failed_loading = rc < 0;
	return rc < 0 ? INJECT_FAILED : rc;
}

int inject_wake(pid_t pid, const char *lib_path, bool force, char *msg,
		size_t len)
{
	struct inject_target t = { .pid = pid, .force = force, .copy_tmp = -1,
			    .copy_fd = -1 };
	int rc;

	msg[0] = '\0';
	if (preflight(&t, lib_path, msg, len) < 0)
		return INJECT_FAILED;
	if (!t.already)
		return inject_fail(msg, len, "PID %d has no collector to wake",
				   (int)pid);
	if (inject_resolve_libc(&t, msg, len) < 0 ||
	    inject_resolve_wake(&t, msg, len) < 0)
		return INJECT_FAILED;
	inject_resolve_loader(&t);
	rc = run_job(&t, msg, len);
	return rc < 0 ? INJECT_FAILED : rc;
}
