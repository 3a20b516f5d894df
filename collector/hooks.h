/* The real pthread functions behind the interposed ones. */
#ifndef QSPTOP_HOOKS_H
#define QSPTOP_HOOKS_H

#include <pthread.h>
#include <time.h>

struct real_functions {
	int (*mutex_lock)(pthread_mutex_t *);
	int (*mutex_trylock)(pthread_mutex_t *);
	int (*mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
	int (*mutex_clocklock)(pthread_mutex_t *, clockid_t,
			       const struct timespec *);
	int (*rwlock_rdlock)(pthread_rwlock_t *);
	int (*rwlock_wrlock)(pthread_rwlock_t *);
	int (*rwlock_tryrdlock)(pthread_rwlock_t *);
	int (*rwlock_trywrlock)(pthread_rwlock_t *);
	int (*rwlock_timedrdlock)(pthread_rwlock_t *, const struct timespec *);
	int (*rwlock_timedwrlock)(pthread_rwlock_t *, const struct timespec *);
	int (*rwlock_clockrdlock)(pthread_rwlock_t *, clockid_t,
				  const struct timespec *);
	int (*rwlock_clockwrlock)(pthread_rwlock_t *, clockid_t,
				  const struct timespec *);
	int (*spin_lock)(pthread_spinlock_t *);
	int (*spin_trylock)(pthread_spinlock_t *);
	int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *);
	int (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *,
			      const struct timespec *);
	int (*cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t,
			      const struct timespec *);
};

extern struct real_functions real;

/* Look up every real function; -1 when one is missing. */
int hooks_resolve(void);

#endif
