/*
 * Who waits for whom, seen from outside the target: each thread's state
 * from /proc (running, blocked on a lock, in another system call), the
 * lock and its call site from the thread's stack (read with
 * process_vm_readv, as waitkind.h does: nothing is stopped), the lock's
 * holder from the lock itself in the target's memory (glibc 2.36's
 * pthread_mutex_t owner, pthread_rwlock_t writer), and the cycles of
 * threads that wait for each other: deadlocks.
 */
#ifndef QSPTOP_STUCK_H
#define QSPTOP_STUCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbols.h"

/* Return addresses kept per blocked thread, the call site first. */
#define STUCK_FRAMES 24
/* Members of one deadlock, at most. */
#define STUCK_CYCLE_MAX 16

enum stuck_state {
	STUCK_RUNNING,		/* on a CPU, or between calls */
	STUCK_LOCK,		/* blocked on a lock: type, object, site */
	STUCK_SYSCALL,		/* in another system call: call */
	STUCK_OTHER,		/* stopped, traced, or not readable */
};

struct stuck_thread {
	pid_t tid;		/* ours */
	pid_t ns_tid;		/* in the target's PID namespace */
	char name[20];
	char proc_state;	/* /proc's state letter: R, S, D, T... */
	enum stuck_state state;
	long nr;		/* the system call (LOCK, SYSCALL) */
	char call[96];		/* "read() on pipe:[123]", "futex (pthread_join)" */
	const char *type;	/* LOCK: "mutex", "rwlock-read", "rwlock-write" */
	uint64_t object;	/* LOCK: the lock's address */
	uint64_t word, pc;	/* the futex word (or first argument), where */
	uint64_t stack[STUCK_FRAMES];	/* LOCK: the call site, then callers */
	unsigned depth;
	int64_t since_ms;	/* first seen in this same wait (clock_now_ms) */
	pid_t holder;		/* LOCK: the holder, ours; 0 unknown or none */
	pid_t holder_ns;	/* as the lock names it (its namespace's TID) */
	bool holder_exited;	/* the lock names a thread that is gone */
	bool readers_hold;	/* a writer waits for the readers to leave */
	int deadlock;		/* the deadlock it is part of, or -1 */
};

struct stuck_deadlock {
	size_t n;
	size_t member[STUCK_CYCLE_MAX];	/* thread indexes, each waiting for the next */
};

struct stuck;

/*
 * A view of the threads of pid; nothing is read yet. With own_modules the
 * process's modules are read from its maps into the symbols (no collector
 * reports them).
 */
struct stuck *stuck_new(pid_t pid, bool own_modules);
void stuck_free(struct stuck *s);

/* Look at every thread now. False when the process is gone. */
bool stuck_sample(struct stuck *s, struct symbols *symbols);

/* A lock wait the collector reports (it knows what /proc cannot say). */
struct stuck_wait {
	pid_t tid;
	const char *type;	/* lock_type_name() */
	uint64_t object;	/* 0: not known */
	uint64_t site;
	uint64_t blocked_ns;
	pid_t holder;		/* the lock's owner TID; 0: unknown */
};

/*
 * Take the collector's waits in progress into the last sample: each of
 * those threads is blocked on that lock, at that site, behind that
 * holder; deadlocks are found again.
 */
void stuck_add_waits(struct stuck *s, const struct stuck_wait *w, size_t n);

/* The threads of the last sample, by TID. */
size_t stuck_threads(const struct stuck *s, const struct stuck_thread **out);

/* The deadlocks of the last sample. */
size_t stuck_deadlocks(const struct stuck *s, const struct stuck_deadlock **out);

/* The thread of the last sample whose TID (ours) is tid, or NULL. */
const struct stuck_thread *stuck_find(const struct stuck *s, pid_t tid);

/*
 * What the holder of t's lock does: "running", "blocked", "syscall:NAME"
 * or "exited"; NULL when t waits for no known holder.
 */
const char *stuck_holder_state(const struct stuck *s,
			       const struct stuck_thread *t, char *buf,
			       size_t size);

/* The process's PID. */
pid_t stuck_pid(const struct stuck *s);

#endif
