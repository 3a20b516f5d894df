/* The real pthread functions behind the interposed ones. */
#ifndef QSPTOP_HOOKS_H
#define QSPTOP_HOOKS_H

#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <time.h>

struct real_functions {
	int (*mutex_lock)(pthread_mutex_t *);
	int (*mutex_trylock)(pthread_mutex_t *);
	int (*mutex_unlock)(pthread_mutex_t *);
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
	int (*rwlock_unlock)(pthread_rwlock_t *);
	int (*spin_lock)(pthread_spinlock_t *);
	int (*spin_trylock)(pthread_spinlock_t *);
	int (*spin_unlock)(pthread_spinlock_t *);
	int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *);
	int (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *,
			      const struct timespec *);
	int (*cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t,
			      const struct timespec *);
	long (*syscall)(long, ...);
	int (*sem_wait)(sem_t *);
	int (*sem_trywait)(sem_t *);
	int (*sem_post)(sem_t *);
	int (*sem_timedwait)(sem_t *, const struct timespec *);
	int (*sem_clockwait)(sem_t *, clockid_t, const struct timespec *);
	/*
	 * libc's own trylock, whoever else interposes it: for the mutexes
	 * private to the collector (table.c's sentinels), which no other tool
	 * needs to see.
	 */
	int (*libc_mutex_trylock)(pthread_mutex_t *);
};

extern struct real_functions real;

/* One hooked function: what callers bind to, and where each side lives. */
struct hooked {
	const char *name;
	const char *version;	/* callers must bind this version; NULL: any */
	void *hook;		/* ours */
	void **real;		/* where hooks_resolve() keeps libc's */
	bool holders;		/* patched only while holders are tracked */
};

/*
 * Look up every real function; -1 when one is missing. Interposed
 * (preloaded), through RTLD_NEXT; dlopen'ed, in libc itself.
 */
int hooks_resolve(void);

/* libc's sem_clockwait, for the collector's own semaphores: never recorded. */
int hooks_own_sem_clockwait(sem_t *s, clockid_t clock,
			    const struct timespec *abstime);

/* Whether the dynamic linker binds callers to our hooks (LD_PRELOAD). */
bool hooks_interposed(void);

/* The hooked function called name, or NULL. */
const struct hooked *hooks_find(const char *name);

#endif
