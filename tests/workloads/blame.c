/*
 * Holders and the waits they cause (issue 24), one scene per mode:
 *
 *   split     a waiter blocks 10 times behind 40 ms holds taken at
 *             hold_long, then 10 times behind 4 ms holds at hold_short
 *   handover  5 times: H1 holds 40 ms (handover_first); H2, waiting
 *             first, gets it next (handover_second) and holds it 10 ms;
 *             the waiter (handover_wait), waiting 1 ms later, waits
 *             behind both
 *   holds     one thread takes a lock 20,000 times (hold_many), holding
 *             it ~50 us each time
 *   share     one thread holds a lock 80% of 3 s (hold_share): 50 us in,
 *             12.5 us out
 *   rwholds   one thread takes an rwlock to write 5,000 times
 *             (rw_hold_many), ~50 us each time
 *   spinholds the same with a spinlock (spin_hold_many)
 *   condhold  one thread takes a lock 1,000 times (cond_hold) and each
 *             time waits 2 ms on a condvar nobody signals: the lock is
 *             free while it waits (pthread_cond_wait releases it)
 *   rwlock    5 times: a writer holds an rwlock 40 ms (rw_hold); a
 *             writer (rw_write_wait) and then a reader (rw_read_wait)
 *             wait behind it
 *   live      split again and again, until killed (the screen tests)
 *
 *   wl_blame MODE [RESULTS]
 *
 * RESULTS gets what the scene measured of itself, "NAME MICROSECONDS"
 * lines: the waits each waiter saw, the holds each holder made (a loaded
 * machine stretches sleeps and spins: the tests compare with these).
 *
 * Ends itself after 60 s (alarm), whatever happens.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "scene.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
/* What the scene measured, in ns: its RESULTS. */
static uint64_t wait_long_ns, wait_short_ns, wait_both_ns, second_hold_ns,
	held_ns, loop_ns, rw_write_ns, rw_read_ns;
/* The holds of holds and share: how many, and their squares' sum (us^2). */
static uint64_t holds_made;
static double held_sq_us2;
static int phase;	/* the holder's step, read by the waiter */
static int done;	/* the waiter's step, read by the holder */

static void __attribute__((noinline)) hold_long(void)
{
	pthread_mutex_lock(&lock);
	step(&phase);
	sleep_us(40000);
	pthread_mutex_unlock(&lock);
}

static void __attribute__((noinline)) hold_short(void)
{
	pthread_mutex_lock(&lock);
	step(&phase);
	sleep_us(4000);
	pthread_mutex_unlock(&lock);
}

/* The holder of split: each hold waits for the waiter to be done. */
static void *split_holder(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20; i++) {
		if (i < 10)
			hold_long();
		else
			hold_short();
		wait_for(&done, i + 1);
	}
	return NULL;
}

/* Lock and unlock; the time the lock took. */
static uint64_t __attribute__((noinline)) split_wait(void)
{
	uint64_t t0 = now_ns(), t1;

	pthread_mutex_lock(&lock);
	t1 = now_ns();
	pthread_mutex_unlock(&lock);
	return t1 - t0;
}

static void split(void)
{
	pthread_t h;

	__atomic_store_n(&phase, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&done, 0, __ATOMIC_RELEASE);
	pthread_create(&h, NULL, split_holder, NULL);
	for (int i = 0; i < 20; i++) {
		wait_for(&phase, i + 1);
		*(i < 10 ? &wait_long_ns : &wait_short_ns) += split_wait();
		step(&done);
	}
	pthread_join(h, NULL);
}

static void __attribute__((noinline)) handover_first(void)
{
	pthread_mutex_lock(&lock);
	step(&phase);
	sleep_us(40000);
	pthread_mutex_unlock(&lock);
}

static void __attribute__((noinline)) handover_second(void)
{
	uint64_t t0;

	pthread_mutex_lock(&lock);
	t0 = now_ns();
	sleep_us(10000);
	second_hold_ns += now_ns() - t0;
	pthread_mutex_unlock(&lock);
}

static void *handover_h1(void *arg)
{
	(void)arg;
	for (int i = 0; i < 5; i++) {
		handover_first();
		wait_for(&done, i + 1);
	}
	return NULL;
}

static void *handover_h2(void *arg)
{
	(void)arg;
	for (int i = 0; i < 5; i++) {
		wait_for(&phase, i + 1);
		handover_second();
		wait_for(&done, i + 1);
	}
	return NULL;
}

static uint64_t __attribute__((noinline)) handover_wait(void)
{
	uint64_t t0 = now_ns(), t1;

	pthread_mutex_lock(&lock);
	t1 = now_ns();
	pthread_mutex_unlock(&lock);
	return t1 - t0;
}

static void handover(void)
{
	pthread_t h1, h2;

	pthread_create(&h1, NULL, handover_h1, NULL);
	pthread_create(&h2, NULL, handover_h2, NULL);
	for (int i = 0; i < 5; i++) {
		wait_for(&phase, i + 1);
		sleep_us(1000);
		wait_both_ns += handover_wait();
		step(&done);
	}
	pthread_join(h1, NULL);
	pthread_join(h2, NULL);
}

/*
 * Count a hold of ns: the tests bound the sampled estimate of the time
 * held by its spread (a preempted hold stretches one sample a lot).
 */
static void note_hold(uint64_t ns)
{
	held_ns += ns;
	holds_made++;
	held_sq_us2 += (double)ns / 1000 * ((double)ns / 1000);
}

static void __attribute__((noinline)) hold_many(void)
{
	uint64_t t0;

	pthread_mutex_lock(&lock);
	t0 = now_ns();
	spin_us(50);
	note_hold(now_ns() - t0);
	pthread_mutex_unlock(&lock);
}

static void *holds(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20000; i++)
		hold_many();
	return NULL;
}

static void __attribute__((noinline)) hold_share(void)
{
	uint64_t t0;

	pthread_mutex_lock(&lock);
	t0 = now_ns();
	spin_us(50);
	note_hold(now_ns() - t0);
	pthread_mutex_unlock(&lock);
}

static void *share(void *arg)
{
	uint64_t t0 = now_ns(), until = t0 + 3000000000u;

	(void)arg;
	while (now_ns() < until) {
		hold_share();
		spin_us(12);
	}
	loop_ns = now_ns() - t0;
	return NULL;
}

static pthread_spinlock_t spin;

static void __attribute__((noinline)) rw_hold_many(void)
{
	uint64_t t0;

	pthread_rwlock_wrlock(&rwlock);
	t0 = now_ns();
	spin_us(50);
	note_hold(now_ns() - t0);
	pthread_rwlock_unlock(&rwlock);
}

static void __attribute__((noinline)) spin_hold_many(void)
{
	uint64_t t0;

	pthread_spin_lock(&spin);
	t0 = now_ns();
	spin_us(50);
	note_hold(now_ns() - t0);
	pthread_spin_unlock(&spin);
}

static void *rwholds(void *arg)
{
	(void)arg;
	for (int i = 0; i < 5000; i++)
		rw_hold_many();
	return NULL;
}

static void *spinholds(void *arg)
{
	(void)arg;
	pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
	for (int i = 0; i < 5000; i++)
		spin_hold_many();
	return NULL;
}

static pthread_cond_t never = PTHREAD_COND_INITIALIZER;

/* Take lock and wait 2 ms on a condvar: held only around the wait. */
static void __attribute__((noinline)) cond_hold(void)
{
	struct timespec until;
	uint64_t t0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 2000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&lock);
	t0 = now_ns();
	pthread_cond_timedwait(&never, &lock, &until);
	loop_ns += now_ns() - t0;
	pthread_mutex_unlock(&lock);
}

static void *condhold(void *arg)
{
	(void)arg;
	for (int i = 0; i < 1000; i++)
		cond_hold();
	return NULL;
}

static void __attribute__((noinline)) rw_hold(void)
{
	pthread_rwlock_wrlock(&rwlock);
	step(&phase);
	sleep_us(40000);
	pthread_rwlock_unlock(&rwlock);
}

static void *rw_holder(void *arg)
{
	(void)arg;
	for (int i = 0; i < 5; i++) {
		rw_hold();
		wait_for(&done, 2 * (i + 1));
	}
	return NULL;
}

static uint64_t __attribute__((noinline)) rw_write_wait(void)
{
	uint64_t t0 = now_ns(), t1;

	pthread_rwlock_wrlock(&rwlock);
	t1 = now_ns();
	pthread_rwlock_unlock(&rwlock);
	return t1 - t0;
}

static uint64_t __attribute__((noinline)) rw_read_wait(void)
{
	uint64_t t0 = now_ns(), t1;

	pthread_rwlock_rdlock(&rwlock);
	t1 = now_ns();
	pthread_rwlock_unlock(&rwlock);
	return t1 - t0;
}

static void *rw_reader(void *arg)
{
	(void)arg;
	for (int i = 0; i < 5; i++) {
		wait_for(&phase, i + 1);
		rw_read_ns += rw_read_wait();
		step(&done);
	}
	return NULL;
}

/* The writer waits 1 ms after the hold began; the reader on its own. */
static void rwlocks(void)
{
	pthread_t h, r;

	pthread_create(&h, NULL, rw_holder, NULL);
	pthread_create(&r, NULL, rw_reader, NULL);
	for (int i = 0; i < 5; i++) {
		wait_for(&phase, i + 1);
		sleep_us(1000);
		rw_write_ns += rw_write_wait();
		step(&done);
	}
	pthread_join(h, NULL);
	pthread_join(r, NULL);
}

/* Run fn on a thread of its own: the watched program is multi-threaded. */
static void on_thread(void *(*fn)(void *))
{
	pthread_t t;

	pthread_create(&t, NULL, fn, NULL);
	pthread_join(t, NULL);
}

static void write_results(const char *path)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		return;
	fprintf(f, "wait_long_us %llu\nwait_short_us %llu\nwait_both_us %llu\n"
		"second_hold_us %llu\nheld_us %llu\nloop_us %llu\n"
		"rw_write_us %llu\nrw_read_us %llu\nholds_made %llu\n"
		"held_sq_us2 %.0f\n",
		(unsigned long long)wait_long_ns / 1000,
		(unsigned long long)wait_short_ns / 1000,
		(unsigned long long)wait_both_ns / 1000,
		(unsigned long long)second_hold_ns / 1000,
		(unsigned long long)held_ns / 1000,
		(unsigned long long)loop_ns / 1000,
		(unsigned long long)rw_write_ns / 1000,
		(unsigned long long)rw_read_ns / 1000,
		(unsigned long long)holds_made, held_sq_us2);
	fclose(f);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	alarm(60);
	if (strcmp(mode, "split") == 0)
		split();
	else if (strcmp(mode, "handover") == 0)
		handover();
	else if (strcmp(mode, "holds") == 0)
		on_thread(holds);
	else if (strcmp(mode, "share") == 0)
		on_thread(share);
	else if (strcmp(mode, "rwholds") == 0)
		on_thread(rwholds);
	else if (strcmp(mode, "spinholds") == 0)
		on_thread(spinholds);
	else if (strcmp(mode, "condhold") == 0)
		on_thread(condhold);
	else if (strcmp(mode, "rwlock") == 0)
		rwlocks();
	else if (strcmp(mode, "live") == 0)
		for (;;)
			split();
	else {
		fprintf(stderr, "usage: wl_blame split|handover|holds|share|"
			"rwholds|spinholds|condhold|rwlock|live\n");
		return 2;
	}
	if (argc > 2)
		write_results(argv[2]);
	return 0;
}
