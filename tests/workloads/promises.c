/*
 * Workloads for the README's promises that test_promises checks.
 *
 *   wl_promises stubborn NOTES  ignores every signal it can: each one that
 *                               arrives adds "signal N BEFORE HANDLED" to
 *                               NOTES (CLOCK_MONOTONIC ms: it was sent
 *                               between the two); locks until killed
 *   wl_promises idle NOTES      lock waits and much longer idle waits:
 *                               two threads wait on a condition variable
 *                               (site_idle_wait), two contend lightly for
 *                               a mutex (site_lock_hold, site_lock_poll);
 *                               NOTES gets "waited 20" once the waiters
 *                               have waited 40 times (about 1 s each)
 *   wl_promises many N NOTES    4 threads each lock the same N mutexes
 *                               once, at site_many, then sleep; NOTES gets
 *                               "made COUNT"
 *   wl_promises fork NOTES      forks one child that starts no thread and
 *                               locks at child_lock on its main thread;
 *                               NOTES gets "child PID" once it has made
 *                               1000 lock calls
 *
 * Every mode first adds "ready PID" to NOTES; all but stubborn end on
 * SIGTERM (a forked child also when its parent is gone).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *notes;
static volatile sig_atomic_t end_asked;
static pthread_mutex_t work_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile long sink;

static void note(const char *fmt, long value)
{
	FILE *f = fopen(notes, "a");

	if (f) {
		fprintf(f, fmt, value);
		fputc('\n', f);
		fclose(f);
	}
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static void on_end(int sig)
{
	(void)sig;
	end_asked = 1;
}

static void end_on_sigterm(void)
{
	struct sigaction sa = { .sa_handler = on_end };

	sigaction(SIGTERM, &sa, NULL);
}

static void __attribute__((noinline)) work(void)
{
	pthread_mutex_lock(&work_lock);
	sink++;
	pthread_mutex_unlock(&work_lock);
}

/* --- stubborn: survives every signal but SIGKILL (and SIGSTOP) --- */

#define NSIG_SEEN 65
static volatile sig_atomic_t arrived[NSIG_SEEN];
static volatile long arrived_ms[NSIG_SEEN], before_ms[NSIG_SEEN];
static volatile long ran_ms;	/* when the main loop last ran, before it slept */

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/*
 * The signal was sent after the loop last ran (before_ms: a pending
 * signal is taken as soon as the thread runs) and before the handler
 * (arrived_ms): on a loaded machine these may be far apart.
 */
static void on_any(int sig)
{
	arrived_ms[sig] = now_ms();
	before_ms[sig] = ran_ms;
	arrived[sig]++;
}

static void catch_everything(void)
{
	struct sigaction sa = { .sa_handler = on_any };

	sigemptyset(&sa.sa_mask);
	for (int sig = 1; sig < NSIG_SEEN; sig++) {
		if (sig != SIGKILL && sig != SIGSTOP && sig != SIGCHLD)
			sigaction(sig, &sa, NULL);
	}
}

static void mode_stubborn(void)
{
	int told[NSIG_SEEN] = { 0 };

	catch_everything();
	note("ready %ld", (long)getpid());
	for (;;) {
		for (int sig = 1; sig < NSIG_SEEN; sig++) {
			for (; told[sig] < arrived[sig]; told[sig]++) {
				FILE *f = fopen(notes, "a");

				if (f) {
					fprintf(f, "signal %d %ld %ld\n", sig,
						(long)before_ms[sig],
						(long)arrived_ms[sig]);
					fclose(f);
				}
			}
		}
		work();
		ran_ms = now_ms();
		sleep_ms(10);
	}
}

/* --- idle: condvar waits that dwarf the lock waits --- */

static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cond = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t light_lock = PTHREAD_MUTEX_INITIALIZER;

/* A waiter that waits for work nearly all the time. */
static void __attribute__((noinline)) site_idle_wait(void)
{
	pthread_mutex_lock(&idle_lock);
	pthread_cond_wait(&idle_cond, &idle_lock);
	pthread_mutex_unlock(&idle_lock);
}

#define IDLE_WAITERS 2
#define WAITS_NOTED 20
static long idle_waits;

/* Waits; the first time each waiter could have waited WAITS_NOTED times, says so. */
static void *idle_waiter(void *arg)
{
	while (!end_asked) {
		site_idle_wait();
		if (__atomic_add_fetch(&idle_waits, 1, __ATOMIC_RELAXED) ==
		    IDLE_WAITERS * WAITS_NOTED)
			note("waited %ld", WAITS_NOTED);
	}
	return arg;
}

/* Wakes the waiters every 50 ms. */
static void *idle_waker(void *arg)
{
	while (!end_asked) {
		sleep_ms(50);
		pthread_mutex_lock(&idle_lock);
		pthread_cond_broadcast(&idle_cond);
		pthread_mutex_unlock(&idle_lock);
	}
	return arg;
}

/* Holds the light lock 2 ms in every 20. */
static void __attribute__((noinline)) site_lock_hold(void)
{
	pthread_mutex_lock(&light_lock);
	sleep_ms(2);
	pthread_mutex_unlock(&light_lock);
}

static void *holder(void *arg)
{
	while (!end_asked) {
		site_lock_hold();
		sleep_ms(18);
	}
	return arg;
}

/* Takes the light lock every millisecond: waits now and then. */
static void __attribute__((noinline)) site_lock_poll(void)
{
	pthread_mutex_lock(&light_lock);
	sink++;
	pthread_mutex_unlock(&light_lock);
}

static void *poller(void *arg)
{
	while (!end_asked) {
		site_lock_poll();
		sleep_ms(1);
	}
	return arg;
}

static void mode_idle(void)
{
	void *(*fns[])(void *) = { idle_waiter, idle_waiter, idle_waker, holder,
				   poller };
	pthread_t t[5];

	end_on_sigterm();
	for (int i = 0; i < 5; i++)
		pthread_create(&t[i], NULL, fns[i], NULL);
	note("ready %ld", (long)getpid());
	while (!end_asked)
		sleep_ms(10);
	pthread_mutex_lock(&idle_lock);
	pthread_cond_broadcast(&idle_cond);
	pthread_mutex_unlock(&idle_lock);
	for (int i = 0; i < 5; i++)
		pthread_join(t[i], NULL);
}

/* --- many: more locks than a small memory cap holds --- */

#define MANY_THREADS 4
static pthread_mutex_t *many;
static long nmany;

static void __attribute__((noinline)) site_many(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
	sink++;
	pthread_mutex_unlock(m);
}

static void *many_worker(void *arg)
{
	for (long i = 0; i < nmany; i++)
		site_many(&many[i]);
	return arg;
}

static void mode_many(long n)
{
	pthread_t t[MANY_THREADS];

	end_on_sigterm();
	nmany = n;
	many = calloc((size_t)n, sizeof(*many));
	if (many == NULL)
		exit(1);
	for (long i = 0; i < n; i++)
		pthread_mutex_init(&many[i], NULL);
	note("ready %ld", (long)getpid());
	for (int i = 0; i < MANY_THREADS; i++)
		pthread_create(&t[i], NULL, many_worker, NULL);
	for (int i = 0; i < MANY_THREADS; i++)
		pthread_join(t[i], NULL);
	note("made %ld", n * MANY_THREADS);
	while (!end_asked)
		sleep_ms(10);
}

/* --- fork: a child with no thread of its own --- */

static pthread_mutex_t child_lock_m = PTHREAD_MUTEX_INITIALIZER;

static void __attribute__((noinline)) child_lock(void)
{
	pthread_mutex_lock(&child_lock_m);
	sink++;
	pthread_mutex_unlock(&child_lock_m);
}

static void forked_child(pid_t parent)
{
	long calls = 0;

	prctl(PR_SET_PDEATHSIG, SIGTERM);
	while (!end_asked && getppid() == parent) {
		for (int i = 0; i < 100; i++)
			child_lock();
		calls += 100;
		if (calls == 1000)
			note("child %ld", (long)getpid());
		sleep_ms(1);
	}
	exit(0);
}

static void mode_fork(void)
{
	pid_t parent = getpid(), child;

	end_on_sigterm();
	note("ready %ld", (long)parent);
	for (int i = 0; i < 1000; i++)
		work();
	child = fork();
	if (child == 0)
		forked_child(parent);
	while (!end_asked) {
		work();
		sleep_ms(1);
	}
	if (child > 0) {
		kill(child, SIGTERM);
		waitpid(child, NULL, 0);
	}
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "stubborn") == 0)
		notes = argv[2], mode_stubborn();
	else if (argc == 3 && strcmp(argv[1], "idle") == 0)
		notes = argv[2], mode_idle();
	else if (argc == 4 && strcmp(argv[1], "many") == 0)
		notes = argv[3], mode_many(atol(argv[2]));
	else if (argc == 3 && strcmp(argv[1], "fork") == 0)
		notes = argv[2], mode_fork();
	else {
		fprintf(stderr, "usage: wl_promises stubborn|idle|fork NOTES, "
			"or many N NOTES\n");
		return 2;
	}
	return 0;
}
