/* Types shared by the collector and the front end. */
#ifndef QSPTOP_TYPES_H
#define QSPTOP_TYPES_H

#include <stdint.h>

#define QSPTOP_VERSION "0.1.0"

/* The primitive a row counts. Values travel on the wire: append only. */
enum lock_type {
	LOCK_MUTEX,
	LOCK_RWLOCK_READ,
	LOCK_RWLOCK_WRITE,
	LOCK_SPIN,
	LOCK_CONDVAR,
	LOCK_FUTEX,		/* a futex wait made through syscall() */
	LOCK_FUTEX_WAKE,	/* a futex wake that woke someone */
	LOCK_SEMAPHORE,		/* a POSIX semaphore wait (sem_wait, ...) */
	LOCK_TYPE_COUNT
};

/*
 * Log2 histogram of waits in nanoseconds: bucket i counts waits in
 * [2^i, 2^(i+1)) ns, bucket 0 also takes 0 ns and the last bucket takes
 * everything from 2^(HIST_BUCKETS-1) ns (about 2 s) up.
 */
#define HIST_BUCKETS 32

/* Name of a lock type as used in the JSON snapshot ("mutex", ...). */
const char *lock_type_name(enum lock_type type);

/* Parse a lock type name; returns -1 when unknown. */
int lock_type_parse(const char *name);

/* Histogram bucket of a wait of ns nanoseconds. */
static inline unsigned hist_bucket(uint64_t ns)
{
	unsigned b;

	if (ns < 2)
		return 0;
	b = 63 - (unsigned)__builtin_clzll(ns);
	return b < HIST_BUCKETS ? b : HIST_BUCKETS - 1;
}

#endif
