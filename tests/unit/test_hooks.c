/*
 * The hooks themselves, linked into this program (they take its lock
 * calls), with a stack capture of our own making: the time a capture
 * takes is time waited, a signal handler's lock call inside a hook passes
 * through and is counted as dropped, calls glibc refuses pass through
 * unrecorded, which lock a capture runs under, and every kind of mutex
 * and the spin lock are counted exactly (free, busy, waited for, relocked
 * by their owner, left by a dead owner) with glibc's own results,
 * whichever way a hook finds a lock busy; so are semaphore waits, with
 * glibc's return values and errno.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../collector/frames.h"
#include "../../collector/hooks.h"
#include "../../collector/rows.h"
#include "../../collector/state.h"
#include "../../collector/table.h"
#include "check.h"

/* No lock wrappers here. */
uint32_t frames_wrappers_gen;

int32_t frames_wrapper_step(struct frames_reader *r, uint64_t site)
{
	(void)r;
	(void)site;
	return 0;
}

/* The capture the hooks call: slow when asked, and able to be interrupted. */
static int capture_ms;
static int capture_signal;
/* Captures made, and those made while this thread held probe. */
static pthread_mutex_t *probe;
static int captures, captures_holding;

size_t frames_sync(void)
{
	return 0;
}

void frames_reclaim(uint64_t (*oldest)(void *ctx), void *ctx)
{
	(void)oldest;
	(void)ctx;
}

uint32_t frames_capture(struct frames_reader *r, uint64_t site,
			uint64_t *frames, uint32_t max)
{
	(void)r;
	captures++;
	if (probe && __atomic_load_n(&probe->__data.__owner, __ATOMIC_RELAXED) == gettid())
		captures_holding++;
	if (capture_ms)
		usleep((useconds_t)capture_ms * 1000);
	if (capture_signal)
		raise(capture_signal);
	if (max == 0)
		return 0;
	frames[0] = site;
	return 1;
}

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t in_handler = PTHREAD_MUTEX_INITIALIZER;
static int handler_rc = -1;
static struct rows rs;

static void on_signal(int sig)
{
	(void)sig;
	handler_rc = pthread_mutex_lock(&in_handler);
	pthread_mutex_unlock(&in_handler);
}

static int holding;
static uint64_t released_ns;

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Hold the lock ms milliseconds; holding says when it is held. */
static void *hold_for(void *ms)
{
	pthread_mutex_lock(&held);
	__atomic_store_n(&holding, 1, __ATOMIC_RELEASE);
	usleep((useconds_t)(long)ms * 1000);
	released_ns = monotonic_ns();
	pthread_mutex_unlock(&held);
	return NULL;
}

/* The wait_ns of the rows on object obj, after a scan. */
static uint64_t wait_on(const void *obj)
{
	uint64_t ns = 0;

	rows_scan(&rs);
	for (uint32_t r = 0; r < rs.n; r++) {
		if (rs.v[r].object == (uintptr_t)obj && rs.v[r].waits)
			ns += rs.v[r].waits->now.calls.wait_ns;
	}
	return ns;
}

/*
 * A wait whose stack capture itself takes 200 ms (blocked, say), on a
 * lock held 300 ms: the whole wait counts, from the call to the release,
 * not only what is left after the capture (whatever the scheduling).
 */
static void test_capture_time_is_waited(void)
{
	pthread_t t;
	uint64_t ns, called_ns;

	__atomic_store_n(&holding, 0, __ATOMIC_RELAXED);
	pthread_create(&t, NULL, hold_for, (void *)300L);
	while (!__atomic_load_n(&holding, __ATOMIC_ACQUIRE))
		sched_yield();
	capture_ms = 200;
	called_ns = monotonic_ns();
	pthread_mutex_lock(&held);
	pthread_mutex_unlock(&held);
	capture_ms = 0;
	pthread_join(t, NULL);
	ns = wait_on(&held);
	CHECK(ns + 50000000ull >= released_ns - called_ns,
	      "the wait counts from before the capture: %llu ns, the lock was "
	      "released %llu ns after the call",
	      (unsigned long long)ns, (unsigned long long)(released_ns - called_ns));
}

/*
 * A signal arriving inside a hook (here, during its capture) runs a
 * handler that locks: that call goes straight to libc, is not recorded,
 * and is counted as dropped.
 */
static void test_handler_inside_hook(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	pthread_t t;

	sigaction(SIGUSR1, &sa, NULL);
	__atomic_store_n(&holding, 0, __ATOMIC_RELAXED);
	pthread_create(&t, NULL, hold_for, (void *)200L);
	while (!__atomic_load_n(&holding, __ATOMIC_ACQUIRE))
		sched_yield();
	capture_signal = SIGUSR1;
	pthread_mutex_lock(&held);
	capture_signal = 0;
	pthread_mutex_unlock(&held);
	pthread_join(t, NULL);
	CHECK(handler_rc == 0, "the handler's lock call succeeded (%d)", handler_rc);
	CHECK_U64(tls_self.table->nested, 1);
	rows_scan(&rs);
	CHECK(rs.dropped >= 1, "the passed-through call is counted as dropped");
	for (uint32_t r = 0; r < rs.n; r++)
		CHECK(rs.v[r].object != (uintptr_t)&in_handler,
		      "the handler's lock call has no row");
}

/* A clock glibc refuses: EINVAL, the lock untouched, nothing recorded. */
static void test_refused_clock_passes_through(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec++;
	CHECK_U64(pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
	CHECK_U64(pthread_mutex_trylock(&m), 0);
	pthread_mutex_unlock(&m);
	rows_scan(&rs);
	for (uint32_t r = 0; r < rs.n; r++)
		CHECK(rs.v[r].object != (uintptr_t)&m || rs.v[r].acq_now == 1,
		      "only the trylock is recorded");
}

/*
 * Which critical section a capture lengthens. A lock wait captures before
 * it has the lock: nobody waits on the capturing thread. A condvar wait
 * cannot: the hook runs with the caller's mutex held on both sides of the
 * real wait (libc releases and re-takes it inside, out of sight), so its
 * one capture runs under that mutex, as README says ("Stacks").
 */
static void test_capture_under_which_lock(void)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	struct timespec past = { 1, 0 };
	pthread_t t;
	int rc;

	__atomic_store_n(&holding, 0, __ATOMIC_RELAXED);
	pthread_create(&t, NULL, hold_for, (void *)50L);
	while (!__atomic_load_n(&holding, __ATOMIC_ACQUIRE))
		sched_yield();
	probe = &held;
	captures = captures_holding = 0;
	pthread_mutex_lock(&held);
	pthread_mutex_unlock(&held);
	pthread_join(t, NULL);
	CHECK(captures == 1 && captures_holding == 0,
	      "a mutex wait captures once, before it holds the lock: %d "
	      "captures, %d holding it", captures, captures_holding);
	probe = &m;
	captures = captures_holding = 0;
	pthread_mutex_lock(&m);
	rc = pthread_cond_timedwait(&c, &m, &past);
	pthread_mutex_unlock(&m);
	probe = NULL;
	CHECK(rc == ETIMEDOUT && captures == 1 && captures_holding == 1,
	      "a condvar wait captures once, with its mutex held: rc %d, %d "
	      "captures, %d holding it", rc, captures, captures_holding);
}

/* What the rows of one lock hold, every site and thread together. */
struct lock_tally {
	uint64_t acquired, contended, failed, timeouts;
};

static struct lock_tally tally_on(const void *obj)
{
	struct lock_tally c = { 0 };

	rows_scan(&rs);
	for (uint32_t r = 0; r < rs.n; r++) {
		const struct row *w = &rs.v[r];

		if (w->object != (uintptr_t)obj)
			continue;
		c.acquired += w->acq_now;
		if (w->waits) {
			c.contended += w->waits->now.calls.contended;
			c.failed += w->waits->now.calls.failed;
			c.timeouts += w->waits->now.calls.timeouts;
		}
	}
	return c;
}

static void check_tally(const char *what, const void *obj,
			struct lock_tally want)
{
	struct lock_tally got = tally_on(obj);

	CHECK(got.acquired == want.acquired && got.contended == want.contended &&
	      got.failed == want.failed && got.timeouts == want.timeouts,
	      "%s: expected acquired %llu, contended %llu, failed %llu, "
	      "timeouts %llu; got %llu, %llu, %llu, %llu", what,
	      (unsigned long long)want.acquired,
	      (unsigned long long)want.contended,
	      (unsigned long long)want.failed,
	      (unsigned long long)want.timeouts,
	      (unsigned long long)got.acquired,
	      (unsigned long long)got.contended,
	      (unsigned long long)got.failed,
	      (unsigned long long)got.timeouts);
}

#define DEADLINE_NS 20000000000ull	/* only a hang takes this long */

/*
 * Another thread holding a lock through libc directly (unrecorded) until
 * released: by us (release), when the waiter sleeps in the kernel
 * (until_waiter), or when a spin lock shows a waiter (until_spinner);
 * or never (dies_holding: it exits with a robust mutex).
 */
struct holder {
	pthread_t thread;
	pthread_mutex_t *m;
	pthread_spinlock_t *spin;
	pid_t waiter;
	int until_waiter, until_spinner, dies_holding;
	int held, release, timed_out;
};

/* Whether thread tid sleeps in a futex call now. */
static bool in_futex(pid_t tid)
{
	char path[64], line[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	if (fgets(line, sizeof(line), f) == NULL)
		line[0] = 0;
	fclose(f);
	return atoi(line) == SYS_futex;
}

static bool may_release(struct holder *h)
{
	if (h->until_waiter)
		return in_futex(h->waiter);
	if (h->until_spinner)
		return __atomic_load_n(h->spin, __ATOMIC_RELAXED) < 0;
	return __atomic_load_n(&h->release, __ATOMIC_ACQUIRE);
}

static void *hold(void *arg)
{
	struct holder *h = arg;
	uint64_t deadline = monotonic_ns() + DEADLINE_NS;

	if (h->spin)
		real.spin_lock(h->spin);
	else
		real.mutex_lock(h->m);
	__atomic_store_n(&h->held, 1, __ATOMIC_RELEASE);
	if (h->dies_holding)
		return NULL;
	while (!may_release(h)) {
		if (monotonic_ns() > deadline) {
			h->timed_out = 1;
			break;
		}
		sched_yield();
	}
	if (h->spin)
		pthread_spin_unlock(h->spin);
	else
		pthread_mutex_unlock(h->m);
	return NULL;
}

static void hold_start(struct holder *h)
{
	h->waiter = (pid_t)syscall(SYS_gettid);
	pthread_create(&h->thread, NULL, hold, h);
	while (!__atomic_load_n(&h->held, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void hold_end(struct holder *h, const char *what)
{
	__atomic_store_n(&h->release, 1, __ATOMIC_RELEASE);
	pthread_join(h->thread, NULL);
	CHECK(!h->timed_out, "%s: the waiter was seen waiting", what);
}

struct mutex_kind {
	const char *name;
	int type;		/* -1: PTHREAD_MUTEX_INITIALIZER */
	int pshared, robust, protocol;
};

/*
 * An error-checking mutex relocked by its owner returns EDEADLK. Most
 * kinds find that out in the lock call, after a try found the lock busy:
 * a wait that ended without the lock. A priority-inheritance one's
 * trylock already refuses (EDEADLK, nothing tried): nothing is counted.
 */

static const struct mutex_kind mutex_kinds[] = {
	{ "default", -1, 0, 0, PTHREAD_PRIO_NONE },
	{ "normal", PTHREAD_MUTEX_NORMAL, 0, 0, PTHREAD_PRIO_NONE },
	{ "adaptive", PTHREAD_MUTEX_ADAPTIVE_NP, 0, 0, PTHREAD_PRIO_NONE },
	{ "errorcheck", PTHREAD_MUTEX_ERRORCHECK, 0, 0, PTHREAD_PRIO_NONE },
	{ "recursive", PTHREAD_MUTEX_RECURSIVE, 0, 0, PTHREAD_PRIO_NONE },
	{ "shared", PTHREAD_MUTEX_NORMAL, 1, 0, PTHREAD_PRIO_NONE },
	{ "robust", PTHREAD_MUTEX_NORMAL, 0, 1, PTHREAD_PRIO_NONE },
	{ "robust recursive", PTHREAD_MUTEX_RECURSIVE, 0, 1, PTHREAD_PRIO_NONE },
	{ "inherit", PTHREAD_MUTEX_NORMAL, 0, 0, PTHREAD_PRIO_INHERIT },
	{ "inherit errorcheck", PTHREAD_MUTEX_ERRORCHECK, 0, 0,
	  PTHREAD_PRIO_INHERIT },
};

static void mutex_make(pthread_mutex_t *m, const struct mutex_kind *k)
{
	pthread_mutexattr_t a;

	if (k->type < 0) {
		*m = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
		return;
	}
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, k->type);
	pthread_mutexattr_setpshared(&a, k->pshared ? PTHREAD_PROCESS_SHARED
						    : PTHREAD_PROCESS_PRIVATE);
	pthread_mutexattr_setrobust(&a, k->robust ? PTHREAD_MUTEX_ROBUST
						  : PTHREAD_MUTEX_STALLED);
	pthread_mutexattr_setprotocol(&a, k->protocol);
	pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
}

/* A lock held by another thread that runs out its time: ETIMEDOUT. */
static int timedlock_expired(pthread_mutex_t *m)
{
	struct timespec past;

	clock_gettime(CLOCK_REALTIME, &past);
	past.tv_sec -= 1;
	return pthread_mutex_timedlock(m, &past);
}

/*
 * Each kind of mutex: free, busy to a trylock and to a timed lock whose
 * time is up, waited for, and relocked by its owner, each counted as it
 * was and returning what glibc returns.
 */
static void test_mutex_kinds_counted_exactly(void)
{
	/* One lock of each kind, each with rows of its own. */
	static pthread_mutex_t locks[sizeof(mutex_kinds) / sizeof(mutex_kinds[0])];

	for (size_t i = 0; i < sizeof(mutex_kinds) / sizeof(mutex_kinds[0]); i++) {
		const struct mutex_kind *k = &mutex_kinds[i];
		bool recursive = k->type == PTHREAD_MUTEX_RECURSIVE;
		bool errorcheck = k->type == PTHREAD_MUTEX_ERRORCHECK;
		struct lock_tally want = { 3, 0, 2, 1 };
		struct holder h = { 0 };
		pthread_mutex_t *m = &locks[i];
		int rc;

		mutex_make(m, k);
		h.m = m;
		for (int n = 0; n < 3; n++) {
			rc = pthread_mutex_lock(m);
			CHECK(rc == 0, "%s: a free lock returns 0, got %d", k->name, rc);
			pthread_mutex_unlock(m);
		}
		hold_start(&h);
		rc = pthread_mutex_trylock(m);
		CHECK(rc == EBUSY, "%s: trylock of a held lock: EBUSY, got %d",
		      k->name, rc);
		rc = timedlock_expired(m);
		CHECK(rc == ETIMEDOUT, "%s: a timed lock held past its time: "
		      "ETIMEDOUT, got %d", k->name, rc);
		hold_end(&h, k->name);
		memset(&h, 0, sizeof(h));
		h.m = m;
		h.until_waiter = 1;
		hold_start(&h);
		rc = pthread_mutex_lock(m);
		CHECK(rc == 0, "%s: a lock waited for returns 0, got %d", k->name, rc);
		hold_end(&h, k->name);
		want.acquired++;
		want.contended++;
		if (recursive) {
			rc = pthread_mutex_lock(m);
			CHECK(rc == 0, "%s: relocked by its owner: 0, got %d",
			      k->name, rc);
			pthread_mutex_unlock(m);
			want.acquired++;
		} else if (errorcheck) {
			rc = pthread_mutex_lock(m);
			CHECK(rc == EDEADLK, "%s: relocked by its owner: EDEADLK, "
			      "got %d", k->name, rc);
			if (k->protocol != PTHREAD_PRIO_INHERIT) {
				want.failed++;
				want.timeouts++;
			}
		}
		pthread_mutex_unlock(m);
		check_tally(k->name, m, want);
		pthread_mutex_destroy(m);
	}
}

/*
 * A robust mutex whose owner died: lock and trylock return EOWNERDEAD
 * with the lock held, and each counts as one acquisition that did not
 * wait.
 */
static void test_owner_dead_counted_free(void)
{
	const struct mutex_kind *robust = &mutex_kinds[6];
	struct lock_tally want = { 0 };
	static pthread_mutex_t locks[2];

	for (int trylock = 0; trylock < 2; trylock++) {
		struct holder h = { .dies_holding = 1 };
		pthread_mutex_t *m = &locks[trylock];
		int rc;

		mutex_make(m, robust);
		h.m = m;
		hold_start(&h);
		pthread_join(h.thread, NULL);
		rc = trylock ? pthread_mutex_trylock(m) : pthread_mutex_lock(m);
		CHECK(rc == EOWNERDEAD, "%s of a dead owner's lock: EOWNERDEAD, "
		      "got %d", trylock ? "trylock" : "lock", rc);
		pthread_mutex_consistent(m);
		pthread_mutex_unlock(m);
		want.acquired = 1;
		check_tally(trylock ? "trylock, owner dead" : "lock, owner dead",
			    m, want);
		pthread_mutex_destroy(m);
	}
}

/* A spin lock: free, busy to a trylock, spun for; counted as such. */
static void test_spin_counted_exactly(void)
{
	struct lock_tally want = { 3, 0, 1, 0 };
	struct holder h = { 0 };
	pthread_spinlock_t l;
	int rc;

	pthread_spin_init(&l, PTHREAD_PROCESS_PRIVATE);
	h.spin = &l;
	for (int n = 0; n < 3; n++) {
		rc = pthread_spin_lock(&l);
		CHECK(rc == 0, "spin: a free lock returns 0, got %d", rc);
		pthread_spin_unlock(&l);
	}
	hold_start(&h);
	rc = pthread_spin_trylock(&l);
	CHECK(rc == EBUSY, "spin: trylock of a held lock: EBUSY, got %d", rc);
	hold_end(&h, "spin");
	if (l != 1) {
		printf("SKIP spin lock waited for: not glibc's x86_64 spin lock "
		       "(a free one holds %d)\n", l);
		check_skipped++;
	} else {
		memset(&h, 0, sizeof(h));
		h.spin = &l;
		h.until_spinner = 1;	/* its lock decrements the word */
		hold_start(&h);
		rc = pthread_spin_lock(&l);
		CHECK(rc == 0, "spin: a lock spun for returns 0, got %d", rc);
		pthread_spin_unlock(&l);
		hold_end(&h, "spin");
		want.acquired++;
		want.contended++;
	}
	check_tally("spin", (const void *)&l, want);
}

/* A thread that posts sem once the waiter sleeps, or signals it instead. */
struct poster {
	pthread_t thread;
	sem_t *sem;
	pthread_t waiter_thread;
	pid_t waiter;
	int interrupt;		/* pthread_kill(waiter, SIGUSR2) instead */
	int timed_out;
};

static void *post_when_waiting(void *arg)
{
	struct poster *p = arg;
	uint64_t deadline = monotonic_ns() + DEADLINE_NS;

	while (!in_futex(p->waiter)) {
		if (monotonic_ns() > deadline) {
			p->timed_out = 1;
			break;
		}
		sched_yield();
	}
	if (p->interrupt)
		pthread_kill(p->waiter_thread, SIGUSR2);
	else
		sem_post(p->sem);
	return NULL;
}

static void post_start(struct poster *p, sem_t *sem, int interrupt)
{
	memset(p, 0, sizeof(*p));
	p->sem = sem;
	p->interrupt = interrupt;
	p->waiter = (pid_t)syscall(SYS_gettid);
	p->waiter_thread = pthread_self();
	pthread_create(&p->thread, NULL, post_when_waiting, p);
}

static void post_end(struct poster *p, const char *what)
{
	pthread_join(p->thread, NULL);
	CHECK(!p->timed_out, "%s: the waiter was seen waiting", what);
}

static void on_usr2(int sig)
{
	(void)sig;
}

/* rc and errno of a sem call, checked against glibc's. */
static void check_sem_rc(const char *what, int rc, int err, int want_rc,
			 int want_err)
{
	CHECK(rc == want_rc && err == want_err,
	      "%s: expected %d, errno %d; got %d, errno %d", what, want_rc,
	      want_err, rc, err);
}

#define SEM_CALL(call, rc, err)                                            \
	do {                                                               \
		errno = 4321;                                              \
		rc = (call);                                               \
		err = errno;                                               \
	} while (0)

/*
 * Semaphore waits: free (three sem_wait), busy to sem_trywait (EAGAIN),
 * run out of time in sem_timedwait and sem_clockwait (ETIMEDOUT), waited
 * for until posted (0, errno untouched), interrupted by a handled signal
 * (EINTR; with SA_RESTART, Linux restarts the wait): each counted as a mutex call would be,
 * a failed wait as a timeout, with glibc's result and errno.
 */
static void test_sem_counted_exactly(void)
{
	struct sigaction sa = { .sa_handler = on_usr2 };
	struct lock_tally want = { 3, 0, 4, 3 };
	struct timespec past = { 1, 0 };
	struct poster p;
	static sem_t s;
	int rc, err;

	sigaction(SIGUSR2, &sa, NULL);
	sem_init(&s, 0, 3);
	for (int n = 0; n < 3; n++) {
		SEM_CALL(sem_wait(&s), rc, err);
		check_sem_rc("sem_wait, free", rc, err, 0, 4321);
	}
	SEM_CALL(sem_trywait(&s), rc, err);
	check_sem_rc("sem_trywait, zero", rc, err, -1, EAGAIN);
	SEM_CALL(sem_timedwait(&s, &past), rc, err);
	check_sem_rc("sem_timedwait, time up", rc, err, -1, ETIMEDOUT);
	SEM_CALL(sem_clockwait(&s, CLOCK_MONOTONIC, &past), rc, err);
	check_sem_rc("sem_clockwait, time up", rc, err, -1, ETIMEDOUT);
	post_start(&p, &s, 0);
	SEM_CALL(sem_wait(&s), rc, err);
	post_end(&p, "sem_wait, posted");
	check_sem_rc("sem_wait, posted while waiting", rc, err, 0, 4321);
	want.acquired++;
	want.contended++;
	post_start(&p, &s, 1);
	SEM_CALL(sem_wait(&s), rc, err);
	post_end(&p, "sem_wait, interrupted");
	check_sem_rc("sem_wait, interrupted", rc, err, -1, EINTR);
	check_tally("semaphore", &s, want);
	sem_destroy(&s);
}

/*
 * Arguments glibc refuses (a bad tv_nsec, a clock it does not take):
 * EINVAL and the semaphore untouched, as glibc leaves it, and no row.
 */
static void test_sem_refused_passes_through(void)
{
	struct timespec bad = { 1, -1 }, ok = { 1, 0 };
	static sem_t s;
	int rc, err, value = -1;

	sem_init(&s, 0, 1);
	SEM_CALL(sem_timedwait(&s, &bad), rc, err);
	check_sem_rc("sem_timedwait, tv_nsec -1", rc, err, -1, EINVAL);
	SEM_CALL(sem_clockwait(&s, CLOCK_PROCESS_CPUTIME_ID, &ok), rc, err);
	check_sem_rc("sem_clockwait, CPU-time clock", rc, err, -1, EINVAL);
	sem_getvalue(&s, &value);
	CHECK(value == 1, "the semaphore is untouched: value 1, got %d", value);
	check_tally("refused semaphore calls", &s, (struct lock_tally){ 0 });
	sem_destroy(&s);
}

int main(void)
{
	if (hooks_resolve() < 0)
		fprintf(stderr, "hooks_resolve: a function is missing\n");
	state_set_recording(true);
	test_capture_time_is_waited();
	test_handler_inside_hook();
	test_refused_clock_passes_through();
	test_capture_under_which_lock();
	test_mutex_kinds_counted_exactly();
	test_owner_dead_counted_free();
	test_spin_counted_exactly();
	test_sem_counted_exactly();
	test_sem_refused_passes_through();
	return check_summary();
}
