/*
 * Workloads with known lock counts, for the integration tests.
 *
 *   wl_locks MODE EXPECT_FILE
 *
 * Each mode reaches named call sites a known number of times from several
 * threads, then writes one line per site to EXPECT_FILE:
 *   SYMBOL TYPE ACQUISITIONS FAILED MIN_WAIT_NS
 * Counts that depend on timing (condvar waits, trylock failures) are
 * counted by the workload itself. Every call site carries a "site:NAME"
 * comment on its line so that the test can check file:line.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4
#define ITERS 50000

static pthread_mutex_t mutex_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mutex_b = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t spin;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static volatile long shared;
static FILE *expect;

static void expect_site(const char *symbol, const char *type, long acq,
			long failed, long min_wait_ns)
{
	fprintf(expect, "%s %s %ld %ld %ld\n", symbol, type, acq, failed,
		min_wait_ns);
}

static void run_threads(void *(*fn)(void *), int n)
{
	pthread_t t[64];

	for (long i = 0; i < n; i++)
		pthread_create(&t[i], NULL, fn, (void *)i);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* --- mutex: two sites, two locks, contended from 4 threads --- */
static void __attribute__((noinline)) site_mutex_a(void)
{
	pthread_mutex_lock(&mutex_a); /* site:mutex_a */
	shared++;
	pthread_mutex_unlock(&mutex_a);
}

static void __attribute__((noinline)) site_mutex_b(void)
{
	pthread_mutex_lock(&mutex_b); /* site:mutex_b */
	shared++;
	pthread_mutex_unlock(&mutex_b);
}

static void *mutex_worker(void *arg)
{
	for (int i = 0; i < ITERS; i++) {
		site_mutex_a();
		if (i % 2 == 0)
			site_mutex_b();
	}
	return arg;
}

static void mode_mutex(void)
{
	run_threads(mutex_worker, THREADS);
	expect_site("site_mutex_a", "mutex", THREADS * ITERS, 0, 0);
	expect_site("site_mutex_b", "mutex", THREADS * ITERS / 2, 0, 0);
}

/* --- rwlock: readers and writers on one lock --- */
static void __attribute__((noinline)) site_read(void)
{
	pthread_rwlock_rdlock(&rwlock); /* site:rwlock_read */
	shared += 0;
	pthread_rwlock_unlock(&rwlock);
}

static void __attribute__((noinline)) site_write(void)
{
	pthread_rwlock_wrlock(&rwlock); /* site:rwlock_write */
	shared++;
	pthread_rwlock_unlock(&rwlock);
}

static void *rw_worker(void *arg)
{
	for (int i = 0; i < ITERS; i++) {
		if ((long)arg == 0 && i % 10 == 0)
			site_write();
		else
			site_read();
	}
	return arg;
}

static void mode_rwlock(void)
{
	run_threads(rw_worker, THREADS);
	expect_site("site_write", "rwlock-write", ITERS / 10, 0, 0);
	expect_site("site_read", "rwlock-read", THREADS * ITERS - ITERS / 10, 0, 0);
}

/* --- spinlock --- */
static void __attribute__((noinline)) site_spin(void)
{
	pthread_spin_lock(&spin); /* site:spin */
	shared++;
	pthread_spin_unlock(&spin);
}

static void *spin_worker(void *arg)
{
	for (int i = 0; i < ITERS; i++)
		site_spin();
	return arg;
}

static void mode_spin(void)
{
	pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
	run_threads(spin_worker, THREADS);
	expect_site("site_spin", "spinlock", THREADS * ITERS, 0, 0);
}

/* --- trylock: successes and failures counted by the workload --- */
static long try_ok[THREADS], try_busy[THREADS];

static void *try_worker(void *arg)
{
	long me = (long)arg;

	for (int i = 0; i < ITERS; i++) {
		int rc = pthread_mutex_trylock(&mutex_a); /* site:trylock */

		if (rc == 0) {
			try_ok[me]++;
			shared++;
			pthread_mutex_unlock(&mutex_a);
		} else if (rc == EBUSY) {
			try_busy[me]++;
		}
	}
	return arg;
}

static void mode_trylock(void)
{
	long ok = 0, busy = 0;

	run_threads(try_worker, THREADS);
	for (int i = 0; i < THREADS; i++) {
		ok += try_ok[i];
		busy += try_busy[i];
	}
	expect_site("try_worker", "mutex", ok, busy, 0);
}

/* --- condvar: a producer and consumers; waits counted by the workload --- */
static int queued, done_producing;
static long cond_waits[THREADS];

static void *consumer(void *arg)
{
	long me = (long)arg;

	pthread_mutex_lock(&mutex_a); /* site:cond_consumer_lock */
	for (;;) {
		while (queued == 0 && !done_producing) {
			pthread_cond_wait(&cond, &mutex_a); /* site:cond_wait */
			cond_waits[me]++;
		}
		if (queued == 0)
			break;
		queued--;
	}
	pthread_mutex_unlock(&mutex_a);
	return arg;
}

static void mode_cond(void)
{
	pthread_t t[THREADS];
	long waits = 0;

	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, consumer, (void *)i);
	for (int i = 0; i < 2000; i++) {
		pthread_mutex_lock(&mutex_b); /* site:cond_producer_lock */
		pthread_mutex_unlock(&mutex_b);
		pthread_mutex_lock(&mutex_a); /* site:cond_produce */
		queued++;
		pthread_cond_signal(&cond);
		pthread_mutex_unlock(&mutex_a);
		if (i % 100 == 0)
			sleep_ms(1);
	}
	pthread_mutex_lock(&mutex_a); /* site:cond_finish */
	done_producing = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&mutex_a);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < THREADS; i++)
		waits += cond_waits[i];
	expect_site("consumer", "condvar", waits, 0, 0);
	expect_site("consumer", "mutex", THREADS, 0, 0);
	expect_site("mode_cond", "mutex", 2000 * 2 + 1, 0, 0);
}

/*
 * --- blocking: a holder keeps the lock 200 ms after a waiter blocks on it;
 * the waiter must see it. Handshakes, not sleeps, order the two threads,
 * so a loaded machine cannot let the waiter in first.
 */
static int holding;

/* Until a thread sleeps in the kernel for m (glibc marks the word 2). */
static void wait_for_waiter(pthread_mutex_t *m)
{
	for (int i = 0; i < 10000; i++) {
		if (__atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) == 2)
			return;
		sleep_ms(1);
	}
}

static void *holder(void *arg)
{
	pthread_mutex_lock(&mutex_a); /* site:holder */
	__atomic_store_n(&holding, 1, __ATOMIC_RELEASE);
	wait_for_waiter(&mutex_a);
	sleep_ms(200);
	pthread_mutex_unlock(&mutex_a);
	return arg;
}

/* Start holder and return once it holds mutex_a. */
static void start_holder(pthread_t *t)
{
	__atomic_store_n(&holding, 0, __ATOMIC_RELAXED);
	pthread_create(t, NULL, holder, NULL);
	while (!__atomic_load_n(&holding, __ATOMIC_ACQUIRE))
		sleep_ms(1);
}

static void __attribute__((noinline)) site_blocked(void)
{
	pthread_mutex_lock(&mutex_a); /* site:blocked */
	pthread_mutex_unlock(&mutex_a);
}

static void mode_block(void)
{
	pthread_t t;
	struct timespec start, end;

	start_holder(&t);
	clock_gettime(CLOCK_MONOTONIC, &start);
	site_blocked();
	clock_gettime(CLOCK_MONOTONIC, &end);
	pthread_join(t, NULL);
	/* The waiter blocked at least until the holder let go. */
	expect_site("site_blocked", "mutex", 1, 0, 150000000);
	expect_site("holder", "mutex", 1, 0, 0);
}

/* --- timed locks: one times out against a holder, one succeeds later --- */
static void mode_timed(void)
{
	struct timespec abs;
	pthread_t t;
	int rc1, rc2;

	start_holder(&t);
	clock_gettime(CLOCK_REALTIME, &abs);
	abs.tv_nsec += 50 * 1000000;
	if (abs.tv_nsec >= 1000000000) {
		abs.tv_sec++;
		abs.tv_nsec -= 1000000000;
	}
	rc1 = pthread_mutex_timedlock(&mutex_a, &abs); /* site:timed_out */
	clock_gettime(CLOCK_MONOTONIC, &abs);
	abs.tv_sec += 5;
	rc2 = pthread_mutex_clocklock(&mutex_a, CLOCK_MONOTONIC, &abs); /* site:clocklock */
	if (rc2 == 0)
		pthread_mutex_unlock(&mutex_a);
	pthread_join(t, NULL);
	if (rc1 != ETIMEDOUT || rc2 != 0) {
		fprintf(stderr, "timedlock %d clocklock %d\n", rc1, rc2);
		exit(1);
	}
	/* Both calls are in mode_timed: one failed, one acquired. */
	expect_site("mode_timed", "mutex", 1, 1, 40000000);
}

/*
 * --- variants: every try/timed/clock form once per call, single-threaded,
 * so each function's counts are exact: uncontended forms acquire, timed
 * condvar waits time out (failed) ---
 */
#define VARIANT_CALLS 1000

static struct timespec abs_after(clockid_t clock, long ms)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	ts.tv_nsec += ms * 1000000;
	ts.tv_sec += ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	return ts;
}

static void __attribute__((noinline)) variant_rwlock_try(void)
{
	if (pthread_rwlock_tryrdlock(&rwlock) == 0)
		pthread_rwlock_unlock(&rwlock);
	if (pthread_rwlock_trywrlock(&rwlock) == 0)
		pthread_rwlock_unlock(&rwlock);
}

static void __attribute__((noinline)) variant_rwlock_timed(void)
{
	struct timespec rt = abs_after(CLOCK_REALTIME, 1000);
	struct timespec mono = abs_after(CLOCK_MONOTONIC, 1000);

	if (pthread_rwlock_timedrdlock(&rwlock, &rt) == 0)
		pthread_rwlock_unlock(&rwlock);
	if (pthread_rwlock_timedwrlock(&rwlock, &rt) == 0)
		pthread_rwlock_unlock(&rwlock);
	if (pthread_rwlock_clockrdlock(&rwlock, CLOCK_MONOTONIC, &mono) == 0)
		pthread_rwlock_unlock(&rwlock);
	if (pthread_rwlock_clockwrlock(&rwlock, CLOCK_MONOTONIC, &mono) == 0)
		pthread_rwlock_unlock(&rwlock);
}

static void __attribute__((noinline)) variant_mutex_timed(void)
{
	struct timespec rt = abs_after(CLOCK_REALTIME, 1000);
	struct timespec mono = abs_after(CLOCK_MONOTONIC, 1000);

	if (pthread_mutex_timedlock(&mutex_b, &rt) == 0)
		pthread_mutex_unlock(&mutex_b);
	if (pthread_mutex_clocklock(&mutex_b, CLOCK_MONOTONIC, &mono) == 0)
		pthread_mutex_unlock(&mutex_b);
}

static void __attribute__((noinline)) variant_spin_try(void)
{
	if (pthread_spin_trylock(&spin) == 0)
		pthread_spin_unlock(&spin);
}

static void __attribute__((noinline)) variant_cond_timeouts(void)
{
	struct timespec rt = abs_after(CLOCK_REALTIME, 1);
	struct timespec mono = abs_after(CLOCK_MONOTONIC, 1);

	pthread_mutex_lock(&mutex_a);
	pthread_cond_timedwait(&cond, &mutex_a, &rt);
	pthread_cond_clockwait(&cond, &mutex_a, CLOCK_MONOTONIC, &mono);
	pthread_mutex_unlock(&mutex_a);
}

static void mode_variants(void)
{
	pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
	for (int i = 0; i < VARIANT_CALLS; i++) {
		variant_rwlock_try();
		variant_rwlock_timed();
		variant_mutex_timed();
		variant_spin_try();
	}
	for (int i = 0; i < 20; i++)
		variant_cond_timeouts();
	expect_site("variant_rwlock_try", "rwlock-read", VARIANT_CALLS, 0, 0);
	expect_site("variant_rwlock_try", "rwlock-write", VARIANT_CALLS, 0, 0);
	expect_site("variant_rwlock_timed", "rwlock-read", 2 * VARIANT_CALLS, 0, 0);
	expect_site("variant_rwlock_timed", "rwlock-write", 2 * VARIANT_CALLS, 0, 0);
	expect_site("variant_mutex_timed", "mutex", 2 * VARIANT_CALLS, 0, 0);
	expect_site("variant_spin_try", "spinlock", VARIANT_CALLS, 0, 0);
	/* 40 timed-out waits of about 1 ms each: failed, with their time. */
	expect_site("variant_cond_timeouts", "condvar", 0, 40, 20000000);
	expect_site("variant_cond_timeouts", "mutex", 20, 0, 0);
}

/* --- churn: thousands of short threads; their counts outlive them --- */
#define CHURN_THREADS 2000
#define CHURN_ITERS 100

static void *churn_worker(void *arg)
{
	for (int i = 0; i < CHURN_ITERS; i++) {
		pthread_mutex_lock(&mutex_a); /* site:churn */
		shared++;
		pthread_mutex_unlock(&mutex_a);
	}
	return arg;
}

static void mode_churn(void)
{
	for (int i = 0; i < CHURN_THREADS / 8; i++)
		run_threads(churn_worker, 8);
	expect_site("churn_worker", "mutex", CHURN_THREADS * CHURN_ITERS, 0, 0);
}

/* --- fork: the child locks on its own; the parent's counts stay exact --- */
static void *fork_worker(void *arg)
{
	for (int i = 0; i < ITERS; i++)
		site_mutex_a();
	return arg;
}

static int child_work(void)
{
	pthread_t t[2];

	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, fork_worker, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return shared == 3 * ITERS + 2 * ITERS ? 7 : 1;
}

static void mode_fork(void)
{
	pthread_t t;
	int status;
	pid_t pid;

	pthread_create(&t, NULL, fork_worker, NULL);
	pthread_join(t, NULL);
	pthread_create(&t, NULL, fork_worker, NULL);
	pid = fork();
	if (pid == 0)
		_exit(0);	/* a child that does nothing */
	waitpid(pid, &status, 0);
	pthread_join(t, NULL);
	shared = 2 * ITERS + ITERS;	/* what the child starts from */
	pid = fork();
	if (pid == 0) {
		fflush(stdout);
		exit(child_work());
	}
	fork_worker(NULL);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 7) {
		fprintf(stderr, "child of fork was harmed: status %d\n", status);
		exit(1);
	}
	expect_site("site_mutex_a", "mutex", 3 * ITERS, 0, 0);
}

/* --- exit status: the launched command's status comes back --- */
static void mode_status(void)
{
	site_mutex_a();
	expect_site("site_mutex_a", "mutex", 1, 0, 0);
	fclose(expect);
	exit(42);
}

/*
 * --- closefds: like a daemon, close every descriptor (the collector's
 * included), reuse the numbers for our own pipes, and check that nothing
 * reads from or writes to them while the collector keeps running ---
 */
static void mode_closefds(void)
{
	int pipes[64][2], n = 0, bad = 0;
	char buf[8];

	for (int i = 0; i < ITERS; i++)
		site_mutex_a();
	for (int fd = 3; fd < 1024; fd++) {
		if (fd != fileno(expect))
			close(fd);
	}
	while (n < 64 && pipe(pipes[n]) == 0)
		n++;
	for (int i = 0; i < n; i++) {
		if (write(pipes[i][1], "abc", 3) != 3)
			bad++;
	}
	sleep_ms(2500);		/* the collector loops at least twice */
	for (int i = 0; i < ITERS; i++)
		site_mutex_a();
	for (int i = 0; i < n; i++) {
		ssize_t got = read(pipes[i][0], buf, sizeof(buf));

		if (got != 3 || memcmp(buf, "abc", 3) != 0) {
			fprintf(stderr, "pipe %d (fds %d,%d) read %zd bytes\n", i,
				pipes[i][0], pipes[i][1], got);
			bad++;
		}
	}
	if (bad) {
		fprintf(stderr, "collector touched %d of our descriptors\n", bad);
		exit(3);
	}
	expect_site("site_mutex_a", "mutex", 2 * ITERS, 0, 0);
}

/*
 * --- manyrows: 2000 locks touched from 4 threads for about a second, so
 * every update is large (rows beyond a thread's table share one row) ---
 */
#define MANY 2000
#define MANY_ROUNDS 25
static pthread_mutex_t many[MANY];

static void *many_worker(void *arg)
{
	for (int round = 0; round < MANY_ROUNDS; round++) {
		for (int i = 0; i < MANY; i++) {
			pthread_mutex_lock(&many[i]); /* site:many */
			pthread_mutex_unlock(&many[i]);
		}
		sleep_ms(40);
	}
	return arg;
}

static void mode_manyrows(void)
{
	for (int i = 0; i < MANY; i++)
		pthread_mutex_init(&many[i], NULL);
	sleep_ms(300);
	run_threads(many_worker, THREADS);
	expect_site("many_worker", "mutex", THREADS * MANY * MANY_ROUNDS, 0, 0);
}

/*
 * --- tui: fixed counts on distinct sites, then idle, for the screen tests:
 * site_alpha 5000, site_beta 3000, site_gamma 700 on each of 3 locks,
 * site_delta 400 read locks ---
 */
static pthread_mutex_t gamma_locks[3] = { PTHREAD_MUTEX_INITIALIZER,
	PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER };

static void __attribute__((noinline)) site_alpha(void)
{
	pthread_mutex_lock(&mutex_a); /* site:alpha */
	pthread_mutex_unlock(&mutex_a);
}

static void __attribute__((noinline)) site_beta(void)
{
	pthread_mutex_lock(&mutex_b); /* site:beta */
	pthread_mutex_unlock(&mutex_b);
}

static void __attribute__((noinline)) site_gamma(int i)
{
	pthread_mutex_lock(&gamma_locks[i]); /* site:gamma */
	pthread_mutex_unlock(&gamma_locks[i]);
}

static void __attribute__((noinline)) site_delta(void)
{
	pthread_rwlock_rdlock(&rwlock); /* site:delta */
	pthread_rwlock_unlock(&rwlock);
}

static void mode_tui(void)
{
	for (int i = 0; i < 5000; i++)
		site_alpha();
	for (int i = 0; i < 3000; i++)
		site_beta();
	for (int i = 0; i < 3 * 700; i++)
		site_gamma(i % 3);
	for (int i = 0; i < 400; i++)
		site_delta();
	expect_site("site_alpha", "mutex", 5000, 0, 0);
	fclose(expect);
	expect = NULL;
	for (;;)
		sleep_ms(1000);
}

/*
 * --- wrapper: every lock goes through app_lock(), reached from two paths.
 * path_a waits once behind a holder that keeps the lock 300 ms, path_b once
 * behind a 100 ms holder; each path also takes the lock uncontended
 * (path_a 1000 times, path_b 500). Expectation lines name the path, the
 * number of contended waits through it and their least total wait.
 */
static pthread_mutex_t wrapped = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t handoff = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t held_cond = PTHREAD_COND_INITIALIZER;
static int held;

static void __attribute__((noinline)) app_lock(pthread_mutex_t *m)
{
	pthread_mutex_lock(m); /* site:app_lock */
}

static void __attribute__((noinline)) app_unlock(pthread_mutex_t *m)
{
	pthread_mutex_unlock(m);
}

static void __attribute__((noinline)) path_a(void)
{
	app_lock(&wrapped); /* site:path_a */
	app_unlock(&wrapped);
}

static void __attribute__((noinline)) path_b(void)
{
	app_lock(&wrapped); /* site:path_b */
	app_unlock(&wrapped);
}

/* Hold the wrapped lock for arg milliseconds, telling main once it is held. */
static void *hold_wrapped(void *arg)
{
	pthread_mutex_lock(&wrapped);
	pthread_mutex_lock(&handoff);
	held = 1;
	pthread_cond_signal(&held_cond);
	pthread_mutex_unlock(&handoff);
	sleep_ms((long)arg);
	pthread_mutex_unlock(&wrapped);
	return NULL;
}

/* Make fn wait once behind a holder of ms milliseconds. */
static void wait_behind_holder(void (*fn)(void), long ms)
{
	pthread_t t;

	held = 0;
	pthread_create(&t, NULL, hold_wrapped, (void *)ms);
	pthread_mutex_lock(&handoff);
	while (!held)
		pthread_cond_wait(&held_cond, &handoff);
	pthread_mutex_unlock(&handoff);
	fn();
	pthread_join(t, NULL);
}

static void mode_wrapper(void)
{
	for (int i = 0; i < 1000; i++)
		path_a();
	for (int i = 0; i < 500; i++)
		path_b();
	wait_behind_holder(path_a, 300);
	wait_behind_holder(path_b, 100);
	/* SYMBOL TYPE ACQUISITIONS FAILED MIN_WAIT_NS, as every mode writes. */
	expect_site("app_lock", "mutex", 1502, 0, 390000000);
	fprintf(expect, "contended path_a 1 270000000\n");
	fprintf(expect, "contended path_b 1 90000000\n");
}

/*
 * --- busy: for attaching to a running process. Two workers lock forever,
 * one thread sits in epoll_wait, one in a condvar wait, main in nanosleep.
 * SIGTERM makes every thread finish; the workload then checks that each
 * worker's private count matches the shared one and exits 0.
 */
static volatile sig_atomic_t busy_stop;
static long busy_counts[2];

static void __attribute__((noinline)) site_busy(void)
{
	pthread_mutex_lock(&mutex_a); /* site:busy */
	shared++;
	pthread_mutex_unlock(&mutex_a);
}

static void *busy_worker(void *arg)
{
	long me = (long)arg;

	while (!busy_stop) {
		for (int i = 0; i < 100; i++, busy_counts[me]++)
			site_busy();
		sleep_ms(1);
	}
	return arg;
}

static void *busy_epoll(void *arg)
{
	struct epoll_event ev;
	int ep = epoll_create1(0);

	while (!busy_stop)
		epoll_wait(ep, &ev, 1, 100);
	close(ep);
	return arg;
}

static void *busy_cond(void *arg)
{
	struct timespec abs;

	pthread_mutex_lock(&mutex_b);
	while (!busy_stop) {
		clock_gettime(CLOCK_REALTIME, &abs);
		abs.tv_sec += 1;
		pthread_cond_timedwait(&cond, &mutex_b, &abs);
	}
	pthread_mutex_unlock(&mutex_b);
	return arg;
}

static void on_term(int sig)
{
	(void)sig;
	busy_stop = 1;
}

static void mode_busy(void)
{
	pthread_t t[4];

	signal(SIGTERM, on_term);
	pthread_create(&t[0], NULL, busy_worker, (void *)0L);
	pthread_create(&t[1], NULL, busy_worker, (void *)1L);
	pthread_create(&t[2], NULL, busy_epoll, NULL);
	pthread_create(&t[3], NULL, busy_cond, NULL);
	fclose(expect);
	expect = NULL;
	while (!busy_stop)
		sleep_ms(50);
	pthread_mutex_lock(&mutex_b);
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&mutex_b);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	if (shared != busy_counts[0] + busy_counts[1]) {
		fprintf(stderr, "busy: lost updates: %ld != %ld\n", (long)shared,
			busy_counts[0] + busy_counts[1]);
		exit(1);
	}
	exit(0);
}

/* --- idle: lock a little, then sleep until killed (for -p tests) --- */
static void mode_idle(void)
{
	for (int i = 0; i < 1000; i++)
		site_mutex_a();
	expect_site("site_mutex_a", "mutex", 1000, 0, 0);
	fclose(expect);
	expect = NULL;
	for (;;)
		sleep_ms(1000);
}

/* --- deaf: like idle, but a SIGINT is only noted, "sigint" in EXPECT_FILE --- */
static int deaf_fd = -1;

static void note_sigint(int sig)
{
	(void)sig;
	if (write(deaf_fd, "sigint\n", 7) != 7)
		_exit(3);
}

static void mode_deaf(void)
{
	struct sigaction sa = { .sa_handler = note_sigint, .sa_flags = SA_RESTART };

	fflush(expect);
	deaf_fd = fileno(expect);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	for (int i = 0; i < 1000; i++)
		site_mutex_a();
	for (;;)
		sleep_ms(1000);
}

/*
 * --- phases: the mutex mode's contention, then a line "phase 1" in
 * EXPECT_FILE and no lock call until SIGUSR1; then the same again,
 * "phase 2", and no lock call until killed: counts that stand still
 * while a test compares what qsptop serves with what it writes.
 */
static volatile sig_atomic_t phase_go;

static void on_phase(int sig)
{
	(void)sig;
	phase_go = 1;
}

static void mode_phases(void)
{
	signal(SIGUSR1, on_phase);
	for (int phase = 1; phase <= 2; phase++) {
		run_threads(mutex_worker, THREADS);
		fprintf(expect, "phase %d\n", phase);
		fflush(expect);
		while (phase == 1 && !phase_go)
			sleep_ms(20);
	}
	for (;;)
		sleep_ms(1000);
}

static const struct {
	const char *name;
	void (*run)(void);
} modes[] = {
	{ "mutex", mode_mutex }, { "rwlock", mode_rwlock }, { "spin", mode_spin },
	{ "trylock", mode_trylock }, { "cond", mode_cond }, { "block", mode_block },
	{ "timed", mode_timed }, { "churn", mode_churn }, { "fork", mode_fork },
	{ "status", mode_status }, { "idle", mode_idle }, { "deaf", mode_deaf },
	{ "closefds", mode_closefds }, { "manyrows", mode_manyrows },
	{ "variants", mode_variants }, { "tui", mode_tui },
	{ "wrapper", mode_wrapper }, { "busy", mode_busy },
	{ "phases", mode_phases },
};

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: wl_locks MODE EXPECT_FILE\n");
		return 2;
	}
	expect = fopen(argv[2], "w");
	if (expect == NULL) {
		perror(argv[2]);
		return 2;
	}
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (strcmp(argv[1], modes[i].name) == 0) {
			modes[i].run();
			fclose(expect);
			return 0;
		}
	}
	fprintf(stderr, "unknown mode %s\n", argv[1]);
	return 2;
}
