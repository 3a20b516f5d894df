/* Loading the collector into a running process with ptrace. */
#ifndef QSPTOP_INJECT_H
#define QSPTOP_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum inject_result {
	INJECT_FAILED = -1,	/* msg says why; the target runs on unharmed */
	INJECT_LOADED = 0,	/* dlopen succeeded in the target */
	INJECT_ALREADY = 1,	/* a libqsptop.so is already mapped there */
	INJECT_WOKEN = 2,	/* its qsptop_wake() was called */
};

/*
 * Check PID from /proc, then make one of its threads dlopen(lib_path) and
 * put the thread back as it was. A process under a seccomp filter is
 * refused unless force. On INJECT_FAILED msg holds a one-line error;
 * otherwise msg holds a warning to show the user, or "".
 */
int inject_collector(pid_t pid, const char *lib_path, bool force, char *msg,
		     size_t len);

/*
 * Whether the last inject_collector() failed past its checks, in
 * borrowing a thread or loading (no thread safe to borrow, the loader's
 * lock held, a timeout): the process itself was fit.
 */
bool inject_failed_loading(void);

/*
 * The same checks, then make one thread call qsptop_wake() in the
 * collector already mapped there: a forked child's collector, which has
 * no thread until asked, starts serving. INJECT_WOKEN or INJECT_FAILED.
 */
int inject_wake(pid_t pid, const char *lib_path, bool force, char *msg,
		size_t len);

/*
 * For the tests, which cannot see these otherwise: how long a borrowed
 * thread's call may take before it is given back (5000 ms; shortened to
 * test the giving back), and the thread borrowed last with the system
 * call it was parked in.
 */
extern int inject_call_timeout_ms;
extern pid_t inject_last_tid;
extern long inject_last_syscall;

#endif
