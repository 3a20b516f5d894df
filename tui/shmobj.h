/*
 * Locks in shared memory, one object across processes. A lock in a
 * MAP_SHARED mapping (a process-shared mutex or semaphore, PostgreSQL's
 * shared buffers) is the same lock in every process that maps it, at
 * whatever address: it is named by the mapping's file (device, inode)
 * and its offset there, and the table shows it under the tagged address
 * (procs.h) of the first process where it was seen.
 */
#ifndef QSPTOP_SHMOBJ_H
#define QSPTOP_SHMOBJ_H

#include <stdint.h>
#include <sys/types.h>

/* What one process maps, read from /proc/PID/maps when needed. */
struct shmobj;

struct shmobj *shmobj_new(pid_t pid);
void shmobj_free(struct shmobj *s);

/*
 * The object at addr in process index proc, tagged (procs.h): for a lock
 * in shared memory, the tagged address it was first seen at, in any
 * process; otherwise its own tagged address. 0 stays 0.
 */
uint64_t shmobj_object(struct shmobj *s, unsigned proc, uint64_t addr);

#endif
