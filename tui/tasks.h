/*
 * Names of the target's threads (/proc/PID/task/TID/comm), cached: a name
 * is read again at most once a second, and kept once the thread is gone.
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

#endif
