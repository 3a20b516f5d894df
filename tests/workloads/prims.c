/*
 * Holders of the other primitives (issue 24), one scene per mode; each
 * repeats 5 times a hold of ~40 ms that one waiter blocks behind:
 *
 *   nested     nest_outer takes lock A, then nest_inner takes B and
 *              holds both; nest_wait waits for B
 *   recursive  rec_outer takes a recursive mutex, rec_inner takes it
 *              again and lets go; rec_wait waits behind rec_outer's hold
 *   readers    two threads hold an rwlock for reading, at rd_hold and
 *              rd_hold_too; rd_wait_writer waits to write
 *   unnoted    rd_try_hold holds an rwlock for reading, taken with
 *              tryrdlock (which notes no holder); rd_wait_unnoted waits
 *              to write
 *   condvar    cv_holder takes a mutex, cv_wait returns from
 *              pthread_cond_wait with it and holds it 40 ms; cv_victim
 *              waits for that mutex
 *   spin       spin_hold holds a spinlock; spin_wait spins for it
 *   futex      futex_waiter sleeps in futex(FUTEX_WAIT) until
 *              futex_waker wakes it, 40 ms later
 *   semaphore  sem_waiter waits until sem_poster posts, 40 ms later
 *   semtimeout sem_waiter_timed waits 40 ms for a post that never comes
 *   exited     exit_hold's thread holds a mutex, lets go and exits;
 *              exit_wait waited behind it
 *   rechold    rec_hold takes a recursive mutex 5,000 times, takes it
 *              again and lets go at once, and holds it ~50 us in all;
 *              RESULTS gets "held_us" too
 *   live       readers, spin, futex and condvar again and again, until
 *              killed (qsptop -p); prints "cycle" after each round of
 *              the four
 *
 *   wl_prims MODE [RESULTS]
 *
 * RESULTS gets "wait_us MICROSECONDS": the waits the waiter timed. A
 * hold lasts until the waiter sleeps in futex(2) (a spinning one: has
 * begun to spin), so that every round has its wait on a loaded machine.
 * Ends itself after 60 s (alarm), whatever happens.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <linux/futex.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "scene.h"

enum { ROUNDS = 5, HOLD_US = 40000 };

static pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_b = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t rec;	/* recursive, made in main() */
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_spinlock_t spin;
static sem_t sem;
static int futex_word;
static int ready;	/* the holder's or waker's side: what it has done */
static int done;	/* the waiter's rounds done */
static uint64_t wait_ns;	/* what the waiter timed */
static uint64_t held_ns;	/* what rechold held */

/* Whether main, which runs the waiters, sleeps in futex(2): blocked. */
static bool waiter_blocked(void)
{
	char path[64], text[8] = "";
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)getpid());
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return true;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	return n >= 4 && strncmp(text, "202 ", 4) == 0;
}

/*
 * Hold for HOLD_US, then on until the waiter blocks (on a loaded machine
 * it may come late), 2 s at most.
 */
static void hold(void)
{
	sleep_us(HOLD_US);
	for (int i = 0; i < 20000 && !waiter_blocked(); i++)
		sleep_us(100);
}

/* Run the holder on a thread, and the waiter here, ROUNDS times. */
static void scene(void *(*holder)(void *), uint64_t (*waiter)(void))
{
	pthread_t h;

	pthread_create(&h, NULL, holder, NULL);
	for (int i = 0; i < ROUNDS; i++) {
		wait_for(&ready, i + 1);
		sleep_us(1000);
		wait_ns += waiter();
		step(&done);
	}
	pthread_join(h, NULL);
}

/* Lock m and let go: the time the lock took (in the caller's frame). */
#define TIMED_LOCK(m)                                                      \
	({                                                                 \
		uint64_t t0_ = now_ns(), t1_;                              \
		pthread_mutex_lock(m);                                     \
		t1_ = now_ns();                                            \
		pthread_mutex_unlock(m);                                   \
		t1_ - t0_;                                                 \
	})

static void __attribute__((noinline)) nest_inner(void)
{
	pthread_mutex_lock(&lock_b);
	step(&ready);
	hold();
	pthread_mutex_unlock(&lock_b);
}

static void __attribute__((noinline)) nest_outer(void)
{
	pthread_mutex_lock(&lock_a);
	nest_inner();
	pthread_mutex_unlock(&lock_a);
}

static void *nest_holder(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		nest_outer();
		wait_for(&done, i + 1);
	}
	return NULL;
}

static uint64_t __attribute__((noinline)) nest_wait(void)
{
	return TIMED_LOCK(&lock_b);
}

static void __attribute__((noinline)) rec_inner(void)
{
	pthread_mutex_lock(&rec);
	pthread_mutex_unlock(&rec);
}

static void __attribute__((noinline)) rec_outer(void)
{
	pthread_mutex_lock(&rec);
	rec_inner();
	step(&ready);
	hold();
	pthread_mutex_unlock(&rec);
}

static void __attribute__((noinline)) rec_hold(void)
{
	uint64_t t0;

	pthread_mutex_lock(&rec);
	t0 = now_ns();
	rec_inner();
	spin_us(50);
	held_ns += now_ns() - t0;
	pthread_mutex_unlock(&rec);
}

static void *rec_holds(void *arg)
{
	(void)arg;
	for (int i = 0; i < 5000; i++)
		rec_hold();
	return NULL;
}

static void *rec_holder(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		rec_outer();
		wait_for(&done, i + 1);
	}
	return NULL;
}

static uint64_t __attribute__((noinline)) rec_wait(void)
{
	return TIMED_LOCK(&rec);
}

static int readers_in;	/* readers holding the rwlock in this round */

/* The hold's second reader is in, or the first with the other in. */
static void readers_step(int round)
{
	if (__atomic_add_fetch(&readers_in, 1, __ATOMIC_ACQ_REL) == 2 * round)
		step(&ready);
}

static void __attribute__((noinline)) rd_hold(int round)
{
	pthread_rwlock_rdlock(&rw);
	readers_step(round);
	hold();
	pthread_rwlock_unlock(&rw);
}

static void __attribute__((noinline)) rd_hold_too(int round)
{
	pthread_rwlock_rdlock(&rw);
	readers_step(round);
	hold();
	pthread_rwlock_unlock(&rw);
}

static void rd_rounds(void (*hold)(int))
{
	for (int i = 0; i < ROUNDS; i++) {
		wait_for(&done, i);
		hold(i + 1);
		wait_for(&done, i + 1);
	}
}

static void *rd_other(void *arg)
{
	(void)arg;
	rd_rounds(rd_hold_too);
	return NULL;
}

/* Two readers at two sites: the holder scene() starts makes the second. */
static void *rd_holders(void *arg)
{
	pthread_t other;

	(void)arg;
	pthread_create(&other, NULL, rd_other, NULL);
	rd_rounds(rd_hold);
	pthread_join(other, NULL);
	return NULL;
}

static uint64_t __attribute__((noinline)) rd_wait_writer(void)
{
	uint64_t t0 = now_ns(), t1;

	pthread_rwlock_wrlock(&rw);
	t1 = now_ns();
	pthread_rwlock_unlock(&rw);
	return t1 - t0;
}

static void __attribute__((noinline)) rd_try_hold(void)
{
	while (pthread_rwlock_tryrdlock(&rw) != 0)
		sleep_us(100);
	step(&ready);
	hold();
	pthread_rwlock_unlock(&rw);
}

static void *rd_try_holder(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		rd_try_hold();
		wait_for(&done, i + 1);
	}
	return NULL;
}

static uint64_t __attribute__((noinline)) rd_wait_unnoted(void)
{
	uint64_t t0 = now_ns(), t1;

	pthread_rwlock_wrlock(&rw);
	t1 = now_ns();
	pthread_rwlock_unlock(&rw);
	return t1 - t0;
}

static pthread_mutex_t cv_mutex = PTHREAD_MUTEX_INITIALIZER;
static int cv_signalled;

/* Wait for the signal; back with the mutex, hold it 40 ms. */
static void __attribute__((noinline)) cv_wait(void)
{
	while (!cv_signalled)
		pthread_cond_wait(&cond, &cv_mutex);
	cv_signalled = 0;
	step(&ready);
	hold();
}

/* The mutex is taken here, before the wait: not the hold's site. */
static void *cv_holder(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		pthread_mutex_lock(&cv_mutex);
		cv_wait();
		pthread_mutex_unlock(&cv_mutex);
		wait_for(&done, i + 1);
	}
	return NULL;
}

/* A thread of its own signals each round. */
static void *cv_signaller(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		wait_for(&done, i);
		sleep_us(2000);
		pthread_mutex_lock(&cv_mutex);
		cv_signalled = 1;
		pthread_cond_signal(&cond);
		pthread_mutex_unlock(&cv_mutex);
	}
	return NULL;
}

static uint64_t __attribute__((noinline)) cv_victim(void)
{
	return TIMED_LOCK(&cv_mutex);
}

static int spinning;	/* the spin waiter is about to spin */

static void __attribute__((noinline)) spin_hold(void)
{
	pthread_spin_lock(&spin);
	step(&ready);
	sleep_us(HOLD_US);
	wait_for(&spinning, 1);
	sleep_us(1000);
	__atomic_store_n(&spinning, 0, __ATOMIC_RELEASE);
	pthread_spin_unlock(&spin);
}

static void *spin_holder(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		spin_hold();
		wait_for(&done, i + 1);
	}
	return NULL;
}

static uint64_t __attribute__((noinline)) spin_wait(void)
{
	uint64_t t0 = now_ns(), t1;

	step(&spinning);
	pthread_spin_lock(&spin);
	t1 = now_ns();
	pthread_spin_unlock(&spin);
	return t1 - t0;
}

/* Wake the waiter 40 ms after it is ready to sleep. */
static void __attribute__((noinline)) futex_waker(void)
{
	hold();
	__atomic_store_n(&futex_word, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *futex_wakes(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		wait_for(&done, i);
		step(&ready);
		futex_waker();
	}
	return NULL;
}

static uint64_t __attribute__((noinline)) futex_waiter(void)
{
	uint64_t t0 = now_ns();

	while (__atomic_load_n(&futex_word, __ATOMIC_ACQUIRE) == 0)
		syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, NULL,
			NULL, 0);
	__atomic_store_n(&futex_word, 0, __ATOMIC_RELEASE);
	return now_ns() - t0;
}

static void __attribute__((noinline)) sem_poster(void)
{
	hold();
	sem_post(&sem);
}

static void *sem_posts(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		wait_for(&done, i);
		step(&ready);
		sem_poster();
	}
	return NULL;
}

static uint64_t __attribute__((noinline)) sem_waiter(void)
{
	uint64_t t0 = now_ns();

	sem_wait(&sem);
	return now_ns() - t0;
}

/* Nobody posts: each round only lets the waiter start. */
static void *sem_nobody(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		wait_for(&done, i);
		step(&ready);
	}
	return NULL;
}

static uint64_t __attribute__((noinline)) sem_waiter_timed(void)
{
	uint64_t t0 = now_ns();
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_nsec += HOLD_US * 1000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	while (sem_timedwait(&sem, &t) != 0 && errno == EINTR)
		;
	return now_ns() - t0;
}

static void __attribute__((noinline)) exit_hold(void)
{
	pthread_mutex_lock(&lock_a);
	step(&ready);
	hold();
	pthread_mutex_unlock(&lock_a);
}

/* A thread a round, gone once it let go. */
static void *exit_holder(void *arg)
{
	(void)arg;
	exit_hold();
	return NULL;
}

static void *exit_holders(void *arg)
{
	for (int i = 0; i < ROUNDS; i++) {
		pthread_t t;

		pthread_create(&t, NULL, exit_holder, arg);
		pthread_join(t, NULL);
		wait_for(&done, i + 1);
	}
	return NULL;
}

static uint64_t __attribute__((noinline)) exit_wait(void)
{
	return TIMED_LOCK(&lock_a);
}

static void run(const char *mode);

/* The scenes of live, each from a fresh start. */
static void live(void)
{
	static const char *const scenes[] = { "readers", "spin", "futex",
					      "condvar" };

	for (;;) {
		for (unsigned i = 0; i < sizeof(scenes) / sizeof(scenes[0]); i++) {
			__atomic_store_n(&ready, 0, __ATOMIC_RELEASE);
			__atomic_store_n(&done, 0, __ATOMIC_RELEASE);
			__atomic_store_n(&readers_in, 0, __ATOMIC_RELEASE);
			run(scenes[i]);
		}
		printf("cycle\n");
		fflush(stdout);
	}
}

static void run(const char *mode)
{
	pthread_t helper;

	if (strcmp(mode, "live") == 0)
		live();
	else if (strcmp(mode, "nested") == 0)
		scene(nest_holder, nest_wait);
	else if (strcmp(mode, "recursive") == 0)
		scene(rec_holder, rec_wait);
	else if (strcmp(mode, "readers") == 0)
		scene(rd_holders, rd_wait_writer);
	else if (strcmp(mode, "unnoted") == 0)
		scene(rd_try_holder, rd_wait_unnoted);
	else if (strcmp(mode, "condvar") == 0) {
		pthread_create(&helper, NULL, cv_signaller, NULL);
		scene(cv_holder, cv_victim);
		pthread_join(helper, NULL);
	} else if (strcmp(mode, "spin") == 0)
		scene(spin_holder, spin_wait);
	else if (strcmp(mode, "futex") == 0)
		scene(futex_wakes, futex_waiter);
	else if (strcmp(mode, "semaphore") == 0)
		scene(sem_posts, sem_waiter);
	else if (strcmp(mode, "semtimeout") == 0)
		scene(sem_nobody, sem_waiter_timed);
	else if (strcmp(mode, "exited") == 0)
		scene(exit_holders, exit_wait);
	else if (strcmp(mode, "rechold") == 0) {
		pthread_create(&helper, NULL, rec_holds, NULL);
		pthread_join(helper, NULL);
	}
	else {
		fprintf(stderr, "usage: wl_prims nested|recursive|readers|"
			"unnoted|condvar|spin|futex|semaphore|semtimeout|exited|"
			"rechold|live "
			"[RESULTS]\n");
		_exit(2);
	}
}

int main(int argc, char **argv)
{
	pthread_mutexattr_t a;

	alarm(60);
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&rec, &a);
	pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
	sem_init(&sem, 0, 0);
	run(argc > 1 ? argv[1] : "");
	if (argc > 2) {
		FILE *f = fopen(argv[2], "w");

		if (f) {
			fprintf(f, "wait_us %llu\nheld_us %llu\n",
				(unsigned long long)wait_ns / 1000,
				(unsigned long long)held_ns / 1000);
			fclose(f);
		}
	}
	return 0;
}
