/*
 * Names of the target's threads (/proc/PID/task/TID/comm), cached: a name
 * is read again at most once a second, and kept once the thread is gone.
 * A target in a PID namespace of its own reports TIDs of that namespace:
 * each is matched with ours by the threads' NSpid lines.
 */
#ifndef QSPTOP_TASKS_H
#define QSPTOP_TASKS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct tasks;

/* An empty cache for the threads of pid. */
struct tasks *tasks_new(pid_t pid);
void tasks_free(struct tasks *t);

/*
 * The name of thread tid, or "?" when it is not known. /proc is read only
 * while the target is alive, and at most once a second per thread.
 */
const char *tasks_name(struct tasks *t, uint32_t tid, bool alive);

/*
 * The target reports its threads by TIDs of a PID namespace of its own (a
 * container's), not by ours.
 */
bool tasks_own_pidns(const struct tasks *t);

/* Our TID of the thread it reports as tid; 0 while not known. */
uint32_t tasks_host_tid(struct tasks *t, uint32_t tid, bool alive);

#endif
