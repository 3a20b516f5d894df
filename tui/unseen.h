/*
 * Waits qsptop cannot see. A thread blocked in a futex call that no hook
 * times (inside a libc function qsptop does not intercept, such as
 * pthread_barrier_wait, or made by a syscall instruction of the program's
 * own) is found by sampling /proc once a second and named by what it
 * waits in (waitkind.h). A kind counts the threads seen in it so far
 * that were still alive at the last look: threads that come and go do
 * not pile up.
 */
#ifndef QSPTOP_UNSEEN_H
#define QSPTOP_UNSEEN_H

#include <stddef.h>
#include <sys/types.h>

#include "model.h"
#include "symbols.h"

/* Threads looked at per sample, at most: the next sample goes on from there. */
#define UNSEEN_THREADS_PER_SAMPLE 256

struct unseen;

/* A sampler of the threads of pid; nothing is read yet. */
struct unseen *unseen_new(pid_t pid);
void unseen_free(struct unseen *u);

/*
 * At most once a second, look at the next UNSEEN_THREADS_PER_SAMPLE
 * threads; a thread /proc will not show (another user's, one gone
 * meanwhile) is skipped, one whose wait cannot be named yet is looked at
 * again in a later sample.
 */
void unseen_sample(struct unseen *u, struct symbols *symbols);

/*
 * The kinds of unseen waits so far into out[max], the waits for a lock
 * before the idle ones (pthread_join, condition variables), each part
 * with the most threads first. Returns how many.
 */
size_t unseen_waits(const struct unseen *u, struct unseen_wait *out,
		    size_t max);

/* Whether threads waiting in function name wait for work or a thread's end. */
bool unseen_idle_kind(const char *name);

/* Whether a kind is only ever caught in passing, and so not counted. */
bool unseen_brief_kind(const char *name);

#endif
