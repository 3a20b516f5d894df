/*
 * The interposed pthread functions.
 *
 * Every lock-like call tries the lock first. When that succeeds, the only
 * work is one counter bump in the calling thread's own table: no clock, no
 * syscall, no allocation, no write another thread makes. Only a busy lock
 * pays for two clock reads and the wait bookkeeping.
 *
 * Preloaded, the dynamic linker binds callers to these functions by name.
 * Dlopen'ed into a running process, got.c points callers' GOT slots at
 * them instead; after a detach, callers that still arrive (function
 * pointers copied while attached, threads parked in a wait) pass through.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "collector.h"
#include "hooks.h"
#include "table.h"
#include "unwind.h"

#define EXPORT __attribute__((visibility("default")))
#define CALLER ((uint64_t)(uintptr_t)__builtin_return_address(0))
#define unlikely(x) __builtin_expect(!!(x), 0)

struct real_functions real;

/* Resolve on first use when a hook runs before the library constructor. */
#define REAL(field)                                                        \
	(unlikely(real.field == NULL) ? (hooks_resolve(), real.field)     \
				      : real.field)

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The calling thread's entry for a key; NULL while the collector is off. */
static inline struct entry *find(uint64_t site, const void *obj,
				 enum lock_type type)
{
	if (unlikely(!collector_recording()))
		return NULL;
	return table_find(site, (uintptr_t)obj, type);
}

/* Count an acquisition that did not wait. */
static inline void count_free(uint64_t site, const void *obj,
			      enum lock_type type)
{
	struct entry *e = find(site, obj, type);

	if (e)
		table_add(&e->acquisitions, 1);
}

/* Count a trylock that found the lock busy. */
static void count_busy(uint64_t site, const void *obj, enum lock_type type)
{
	struct entry *e = find(site, obj, type);

	if (e)
		table_add(&e->failed, 1);
}

/* The longest wait of the collector's current epoch, for interval maxima. */
static void note_max(struct entry *e, uint64_t ns)
{
	uint32_t epoch = __atomic_load_n(&table_epoch, __ATOMIC_RELAXED);

	if (ns > e->max_wait_ns)
		table_store(&e->max_wait_ns, ns);
	if (e->max_epoch != epoch) {
		table_store(&e->epoch_max_ns, ns);
		__atomic_store_n(&e->max_epoch, epoch, __ATOMIC_RELAXED);
	} else if (ns > e->epoch_max_ns) {
		table_store(&e->epoch_max_ns, ns);
	}
}

/* A blocking call in progress: where it will be counted, and since when. */
struct wait {
	struct thread_table *table;
	struct entry *entry;
	struct stack_use *use;
	uint64_t t0;
};

/*
 * Before blocking: find the entry and the stack's counter. Unwinding here
 * costs this thread time it would spend waiting anyway, and never
 * lengthens the critical section of whoever holds the lock.
 */
static void wait_begin(struct wait *w, uint64_t site, const void *obj,
		       enum lock_type type)
{
	int saved_errno = errno;

	w->entry = find(site, obj, type);
	w->table = tls_table;
	w->use = w->entry ? unwind_use(w->table, w->entry, site) : NULL;
	errno = saved_errno;
	w->t0 = now_ns();
}

/*
 * After the call returned rc: a clock read and a few stores. A wait that
 * ended without the lock (timeout, error) counts as failed, but its time
 * is still time the thread waited.
 */
static void wait_end(const struct wait *w, int rc)
{
	uint64_t ns = now_ns() - w->t0;
	struct entry *e = w->entry;
	int acquired = rc == 0 || rc == EOWNERDEAD;

	if (e == NULL)
		return;
	if (acquired) {
		table_add(&e->acquisitions, 1);
		table_add(&e->contended, 1);
	} else {
		table_add(&e->failed, 1);
	}
	table_add(&e->wait_ns, ns);
	table_add(&e->hist[hist_bucket(ns)], 1);
	note_max(e, ns);
	if (w->use) {
		table_add(&w->use->count, (uint64_t)acquired);
		table_add(&w->use->wait_ns, ns);
	}
	unwind_earn(w->table, ns);
}

/* A try result that ends the call: acquired, or an error other than busy. */
static inline int try_settles(int rc)
{
	return rc != EBUSY;
}

/*
 * Every blocking hook has one shape: try, else time the blocking call.
 * TRY_THEN_WAIT spells it once. A robust mutex whose owner died is
 * acquired with EOWNERDEAD, which the caller must see unchanged.
 */
#define TRY_THEN_WAIT(try_call, wait_call, obj, type)                      \
	do {                                                               \
		int rc_ = try_call;                                        \
		struct wait w_;                                            \
		if (try_settles(rc_)) {                                    \
			if (rc_ == 0 || rc_ == EOWNERDEAD)                 \
				count_free(CALLER, obj, type);             \
			return rc_;                                        \
		}                                                          \
		wait_begin(&w_, CALLER, obj, type);                        \
		rc_ = wait_call;                                           \
		wait_end(&w_, rc_);                                        \
		return rc_;                                                \
	} while (0)

/* A trylock hook: count the acquisition or the busy lock. */
#define TRY_ONLY(try_call, obj, type)                                      \
	do {                                                               \
		int rc_ = try_call;                                        \
		if (rc_ == 0 || rc_ == EOWNERDEAD)                         \
			count_free(CALLER, obj, type);                     \
		else if (rc_ == EBUSY)                                     \
			count_busy(CALLER, obj, type);                     \
		return rc_;                                                \
	} while (0)

EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
	TRY_THEN_WAIT(REAL(mutex_trylock)(m), REAL(mutex_lock)(m), m, LOCK_MUTEX);
}

EXPORT int pthread_mutex_trylock(pthread_mutex_t *m)
{
	TRY_ONLY(REAL(mutex_trylock)(m), m, LOCK_MUTEX);
}

EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m,
				   const struct timespec *abstime)
{
	TRY_THEN_WAIT(REAL(mutex_trylock)(m), REAL(mutex_timedlock)(m, abstime),
		      m, LOCK_MUTEX);
}

EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clock,
				   const struct timespec *abstime)
{
	TRY_THEN_WAIT(REAL(mutex_trylock)(m),
		      REAL(mutex_clocklock)(m, clock, abstime), m, LOCK_MUTEX);
}

EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
	TRY_THEN_WAIT(REAL(rwlock_tryrdlock)(l), REAL(rwlock_rdlock)(l),
		      l, LOCK_RWLOCK_READ);
}

EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
	TRY_THEN_WAIT(REAL(rwlock_trywrlock)(l), REAL(rwlock_wrlock)(l),
		      l, LOCK_RWLOCK_WRITE);
}

EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
	TRY_ONLY(REAL(rwlock_tryrdlock)(l), l, LOCK_RWLOCK_READ);
}

EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
	TRY_ONLY(REAL(rwlock_trywrlock)(l), l, LOCK_RWLOCK_WRITE);
}

EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *l,
				      const struct timespec *abstime)
{
	TRY_THEN_WAIT(REAL(rwlock_tryrdlock)(l),
		      REAL(rwlock_timedrdlock)(l, abstime), l, LOCK_RWLOCK_READ);
}

EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *l,
				      const struct timespec *abstime)
{
	TRY_THEN_WAIT(REAL(rwlock_trywrlock)(l),
		      REAL(rwlock_timedwrlock)(l, abstime), l, LOCK_RWLOCK_WRITE);
}

EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t clock,
				      const struct timespec *abstime)
{
	TRY_THEN_WAIT(REAL(rwlock_tryrdlock)(l),
		      REAL(rwlock_clockrdlock)(l, clock, abstime), l,
		      LOCK_RWLOCK_READ);
}

EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t clock,
				      const struct timespec *abstime)
{
	TRY_THEN_WAIT(REAL(rwlock_trywrlock)(l),
		      REAL(rwlock_clockwrlock)(l, clock, abstime), l,
		      LOCK_RWLOCK_WRITE);
}

EXPORT int pthread_spin_lock(pthread_spinlock_t *l)
{
	TRY_THEN_WAIT(REAL(spin_trylock)(l), REAL(spin_lock)(l),
		      (const void *)l, LOCK_SPIN);
}

EXPORT int pthread_spin_trylock(pthread_spinlock_t *l)
{
	TRY_ONLY(REAL(spin_trylock)(l), (const void *)l, LOCK_SPIN);
}

/*
 * A condvar wait always blocks: every call is an acquisition that waited,
 * timed from the call until the mutex is held again (libc re-takes it
 * internally, out of our sight). A timeout counts as failed.
 */
EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	struct wait w;
	int rc;

	wait_begin(&w, CALLER, c, LOCK_CONDVAR);
	rc = REAL(cond_wait)(c, m);
	wait_end(&w, rc);
	return rc;
}

EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
				  const struct timespec *abstime)
{
	struct wait w;
	int rc;

	wait_begin(&w, CALLER, c, LOCK_CONDVAR);
	rc = REAL(cond_timedwait)(c, m, abstime);
	wait_end(&w, rc);
	return rc;
}

EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m,
				  clockid_t clock,
				  const struct timespec *abstime)
{
	struct wait w;
	int rc;

	wait_begin(&w, CALLER, c, LOCK_CONDVAR);
	rc = REAL(cond_clockwait)(c, m, clock, abstime);
	wait_end(&w, rc);
	return rc;
}

/*
 * Our hooks' own addresses. Inside this library, pthread_mutex_lock means
 * whatever the global scope binds first: libc's, when we were dlopen'ed.
 * Hidden aliases always mean ours.
 */
#define OURS(name) \
	extern __typeof(name) ours_##name __attribute__((alias(#name), copy(name), visibility("hidden")))
OURS(pthread_mutex_lock);
OURS(pthread_mutex_trylock);
OURS(pthread_mutex_timedlock);
OURS(pthread_mutex_clocklock);
OURS(pthread_rwlock_rdlock);
OURS(pthread_rwlock_wrlock);
OURS(pthread_rwlock_tryrdlock);
OURS(pthread_rwlock_trywrlock);
OURS(pthread_rwlock_timedrdlock);
OURS(pthread_rwlock_timedwrlock);
OURS(pthread_rwlock_clockrdlock);
OURS(pthread_rwlock_clockwrlock);
OURS(pthread_spin_lock);
OURS(pthread_spin_trylock);
OURS(pthread_cond_wait);
OURS(pthread_cond_timedwait);
OURS(pthread_cond_clockwait);

#define HOOK(field, name, version) \
	{ #name, version, (void *)ours_##name, (void **)&real.field }
static const struct hooked hooked[] = {
	HOOK(mutex_lock, pthread_mutex_lock, NULL),
	HOOK(mutex_trylock, pthread_mutex_trylock, NULL),
	HOOK(mutex_timedlock, pthread_mutex_timedlock, NULL),
	HOOK(mutex_clocklock, pthread_mutex_clocklock, NULL),
	HOOK(rwlock_rdlock, pthread_rwlock_rdlock, NULL),
	HOOK(rwlock_wrlock, pthread_rwlock_wrlock, NULL),
	HOOK(rwlock_tryrdlock, pthread_rwlock_tryrdlock, NULL),
	HOOK(rwlock_trywrlock, pthread_rwlock_trywrlock, NULL),
	HOOK(rwlock_timedrdlock, pthread_rwlock_timedrdlock, NULL),
	HOOK(rwlock_timedwrlock, pthread_rwlock_timedwrlock, NULL),
	HOOK(rwlock_clockrdlock, pthread_rwlock_clockrdlock, NULL),
	HOOK(rwlock_clockwrlock, pthread_rwlock_clockwrlock, NULL),
	HOOK(spin_lock, pthread_spin_lock, NULL),
	HOOK(spin_trylock, pthread_spin_trylock, NULL),
	/*
	 * Plain dlsym may hand back the pre-2.3.2 condvar ABI; every caller a
	 * modern toolchain links binds the 2.3.2 one, and only those callers
	 * may be sent to our hooks (got.c skips the others).
	 */
	HOOK(cond_wait, pthread_cond_wait, "GLIBC_2.3.2"),
	HOOK(cond_timedwait, pthread_cond_timedwait, "GLIBC_2.3.2"),
	HOOK(cond_clockwait, pthread_cond_clockwait, NULL),
};
#define NHOOKED (sizeof(hooked) / sizeof(hooked[0]))

bool hooks_interposed(void)
{
	return dlsym(RTLD_DEFAULT, "pthread_mutex_lock") ==
	       (void *)ours_pthread_mutex_lock;
}

static void *lookup(void *handle, const struct hooked *h)
{
	return h->version ? dlvsym(handle, h->name, h->version)
			  : dlsym(handle, h->name);
}

/*
 * libc's own definition. RTLD_NEXT from a library dlopen'ed RTLD_LOCAL
 * searches a scope the library is not in; ask libc by handle instead.
 */
static void *lookup_libc(const struct hooked *h)
{
	static void *libc;

	if (libc == NULL)
		libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
	return libc ? lookup(libc, h) : NULL;
}

int hooks_resolve(void)
{
	bool interposed = hooks_interposed();
	int missing = 0;

	for (size_t i = 0; i < NHOOKED; i++) {
		const struct hooked *h = &hooked[i];
		void *p = interposed ? lookup(RTLD_NEXT, h) : NULL;

		if (p == NULL || p == h->hook)
			p = lookup_libc(h);
		if (p == NULL || p == h->hook) {
			missing++;
			p = NULL;
		}
		__atomic_store_n(h->real, p, __ATOMIC_RELEASE);
	}
	return missing ? -1 : 0;
}

const struct hooked *hooks_find(const char *name)
{
	for (size_t i = 0; i < NHOOKED; i++) {
		if (strcmp(hooked[i].name, name) == 0)
			return &hooked[i];
	}
	return NULL;
}
