/*
 * The /proc and ELF half of injection, shared by inject_proc.c (checks,
 * libc symbols, choosing a thread) and inject.c (the ptrace work). Not for
 * use outside them.
 */
#ifndef QSPTOP_INJECT_PROC_H
#define QSPTOP_INJECT_PROC_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The syscall instruction in __restore_rt (mov $15,%rax; syscall). */
#define RESTORE_RT_SYSCALL 7
/* In glibc's pthread_mutex_t: the recursion count and the owner's TID. */
#define MUTEX_COUNT_AT 4
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

/* What the checks learn about the process to inject into. */
struct inject_target {
	pid_t pid;
	uid_t euid;			/* as we know them */
	gid_t egid;
	char lib[PATH_MAX];		/* the collector, absolute */
	/* The target's libc: its path inside the target's root, or, when
	 * removed since it was mapped, its /proc/PID/map_files entry. */
	char libc[PATH_MAX + 64];
	bool libc_removed;
	uint64_t libc_start;		/* start of libc's offset-0 mapping */
	char ldso[PATH_MAX + 64];	/* the loader, named as libc is */
	bool ldso_removed;
	uint64_t ldso_start;
	uint64_t dlopen, setcancelstate, restore_rt;
	/* The loader's lock (0: not found), and libc's calls to take it;
	 * whether the target's TIDs differ from ours (a PID namespace). */
	uint64_t load_lock, mutex_trylock, mutex_unlock;
	bool pid_ns;
	/* libc's thread-local dlerror record and errno: the GOT slot that
	 * holds the record's offset from the thread pointer (0: unknown),
	 * and both variables' offsets in libc's TLS block. */
	uint64_t dlerror_got, tls_dlerror, tls_errno;
	bool errno_known;
	bool already;			/* a file named like lib is mapped */
	/* That mapped collector, named as libc is, and the start of its
	 * offset-0 mapping; with wake set, the borrowed thread calls
	 * qsptop_wake() there instead of dlopen. */
	char mapped_lib[PATH_MAX + 64];
	bool mapped_removed;
	uint64_t mapped_start, wake;
	bool force;			/* even under a seccomp filter */
	/* The library is not visible to the target: it loads a copy, in
	 * the directory copy_dir of its /tmp (copy_tmp), and copy_fd. */
	bool copy;
	char copy_dir[32];
	int copy_tmp, copy_fd;
	/* A borrowed thread may still be in dlopen: its path must stay ours. */
	bool dlopen_pending;
	char warning[256];
};

/* For the tests: a system call to borrow a thread from (-1: any safe one). */
extern long inject_only_syscall;

/* Read a small file whole, NUL-terminated; -1 on failure. */
ssize_t inject_slurp(const char *path, char *buf, size_t size);
/* The value of "key:" in a /proc status text into out; false when absent. */
bool inject_field(const char *text, const char *key, char *out, size_t n);
/* Format a one-line error into msg; returns -1. */
__attribute__((format(printf, 3, 4)))
int inject_fail(char *msg, size_t len, const char *fmt, ...);
/* Fail with why the target may not be traced, and what to do; -1. */
int inject_not_permitted(const struct inject_target *t, char *msg, size_t len);
/* Fail with "process PID exited during attach"; -1. */
int inject_exited(const struct inject_target *t, char *msg, size_t len);
/* The process is still there and not a zombie. */
bool inject_process_alive(pid_t pid);
/* State, tracer, thread-ness and seccomp mode, from /proc/PID/status. */
int inject_check_status(struct inject_target *t, char *msg, size_t len);
/* All checks before attaching: 0 with t filled in, -1 with msg. */
int inject_preflight(struct inject_target *t, const char *lib, char *msg, size_t len);
/* Copy the library where the target sees it (t->copy); -1 with msg. */
int inject_copy_lib(struct inject_target *t, char *msg, size_t len);
/* Remove that copy, if any: the target's mapping of it stays valid. While
 * a dlopen may still open it, it stays (another user could put a library
 * of theirs under a name set free). */
void inject_remove_copy(struct inject_target *t);
/* dlopen, pthread_setcancelstate, __restore_rt, libc's TLS, in the target. */
int inject_resolve_libc(struct inject_target *t, char *msg, size_t len);
/* The loader's lock in the target, as t->load_lock; 0 when not found. */
void inject_resolve_loader(struct inject_target *t);
/* qsptop_wake in the collector already mapped in the target, as t->wake. */
int inject_resolve_wake(struct inject_target *t, char *msg, size_t len);
/* The library t->lib is mapped in the target now. */
bool inject_lib_mapped(const struct inject_target *t);
/* Bytes of the thread's own stack below rsp (tcb: its fs base); 0: none. */
uint64_t inject_stack_room(pid_t pid, uint64_t rsp, uint64_t tcb);
/* How a thread parked in system call nr (arguments a) may be borrowed. */
enum borrow_rank inject_syscall_rank(pid_t pid, long nr, const uint64_t a[6]);
/* A relative sleep that restarted from the start sleeps what was left. */
bool inject_resumes_from_args(long nr, const uint64_t a[6]);
/* The name of system call nr, for messages. */
const char *inject_syscall_name(long nr);
/* The best thread to borrow, rescanning a while for a safe one; tid 0: none. */
void inject_pick_thread(const struct inject_target *t, const pid_t *skip,
			int nskip, struct pick *p);
/* The loader lock's owner, read through mem: a TID, 0 free, -1 unknown. */
pid_t inject_loader_owner(const struct inject_target *t, int mem);

#endif
