/*
 * The hooks themselves, linked into this program (they take its lock
 * calls), with a stack capture of our own making: the time a capture
 * takes is time waited, a signal handler's lock call inside a hook passes
 * through and is counted as dropped, calls glibc refuses pass through
 * unrecorded, and which lock a capture runs under.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../collector/frames.h"
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
			ns += rs.v[r].waits->now.wait_ns;
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

int main(void)
{
	state_set_recording(true);
	test_capture_time_is_waited();
	test_handler_inside_hook();
	test_refused_clock_passes_through();
	test_capture_under_which_lock();
	return check_summary();
}
