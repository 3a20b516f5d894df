/* The processes a launched command started: found and ended, nothing else. */
#ifndef QSPTOP_TREE_H
#define QSPTOP_TREE_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Make qsptop the reaper of the launched command's orphans, so that a
 * process that outlives its parent stays ours to find and end. Call
 * before launching.
 */
void tree_adopt(void);

/*
 * The children of parent's threads (/proc/PID/task/TID/children) into out
 * (at most max); how many.
 */
size_t tree_children(pid_t parent, pid_t *out, size_t max);

/*
 * Send sig to every descendant of root (not root itself) and to every
 * orphan of it adopted by qsptop; reap orphans that are gone. Returns how
 * many were signalled (0: none left). root 0: the orphans only.
 */
int tree_signal(pid_t root, int sig);

#endif
