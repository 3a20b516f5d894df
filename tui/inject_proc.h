/*
 * The process to inject into, as /proc describes it and the other
 * injection modules complete it, and the checks made in /proc before it
 * is touched (inject_proc.c). Shared by the inject*.c modules; not for use
 * outside them.
 */
#ifndef QSPTOP_INJECT_PROC_H
#define QSPTOP_INJECT_PROC_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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
/* Find libc, the loader and whether the collector is mapped already. */
int inject_check_maps(struct inject_target *t, char *msg, size_t len);
/* The library t->lib is mapped in the target now. */
bool inject_lib_mapped(const struct inject_target *t);
/* Bytes of the thread's own stack below rsp (tcb: its fs base); 0: none. */
uint64_t inject_stack_room(pid_t pid, uint64_t rsp, uint64_t tcb);

#endif
