/*
 * Which thread of the target to borrow, judged from /proc before it is
 * touched (inject_thread.c), and who holds the loader's lock. Shared by
 * the inject*.c modules; the threads view (stuck.c) takes the system
 * calls' names and the mutex owner's offset from here too.
 */
#ifndef QSPTOP_INJECT_THREAD_H
#define QSPTOP_INJECT_THREAD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct inject_target;

/* In glibc's pthread_mutex_t: the owner's TID. */
#define MUTEX_OWNER_AT 8

/*
 * How a thread parked in a system call may be borrowed, worst to best.
 * Every rank above NEVER is a call the loader and malloc never make
 * holding their locks.
 */
enum borrow_rank {
	RANK_NEVER,	/* unknown, running, or under a mask of its own */
	RANK_EINTR,	/* a stop alone fails it with EINTR: --force only */
	RANK_AT_END,	/* its restart would not survive: borrowed as it returns */
	RANK_LOCK_WAIT,	/* plain FUTEX_WAIT: glibc's own locks wait so too */
	RANK_FUTEX,	/* a condvar, join or semaphore wait */
	RANK_SAFE,	/* restarts by itself after a stop */
};

/* The thread chosen, and the first seen in a call a stop would fail. */
struct pick {
	pid_t tid;
	enum borrow_rank rank;
	pid_t eintr_tid;
	long eintr_nr;
};

/* For the tests: a system call to borrow a thread from (-1: any safe one). */
extern long inject_only_syscall;

/* How a thread parked in system call nr (arguments a) may be borrowed. */
enum borrow_rank inject_syscall_rank(pid_t pid, long nr, const uint64_t a[6]);
/* A relative sleep that restarted from the start sleeps what was left. */
bool inject_resumes_from_args(long nr, const uint64_t a[6]);
/* The name of system call nr, for messages. */
const char *inject_syscall_name(long nr);
/*
 * The best thread to borrow, rescanning a while for a safe one and, while
 * none can be borrowed, until give_up (clock_now_ms); tid 0: none.
 */
void inject_pick_thread(const struct inject_target *t, const pid_t *skip,
			int nskip, int64_t give_up, struct pick *p);
/* The loader lock's owner, read through mem: a TID, 0 free, -1 unknown. */
pid_t inject_loader_owner(const struct inject_target *t, int mem);

#endif
