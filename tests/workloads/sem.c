/*
 * Semaphore waits with a known truth.
 *
 *   wl_sem RESULT   a waiter thread takes a semaphore five times with
 *                   sem_wait while a poster posts it every 100 ms; the
 *                   main thread makes four 100 ms sem_timedwait calls on
 *                   a semaphore nobody posts (each times out). RESULT
 *                   gets the time spent in each kind of call, measured
 *                   around the calls: "posted_ns N", "posted_count N",
 *                   "timed_ns N", "timeouts N".
 *
 * Ends itself after 30 s (alarm), whatever happens.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define POSTS 5
#define POST_EVERY_US 100000
#define TIMED 4
#define TIMED_MS 100

static sem_t posted, never;
static uint64_t posted_ns;
static int posted_count;

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Post the semaphore every 100 ms. */
static void *poster_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < POSTS; i++) {
		usleep(POST_EVERY_US);
		sem_post(&posted);
	}
	return NULL;
}

/* Take the semaphore as it is posted, timing each wait. */
static void *waiter_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < POSTS; i++) {
		uint64_t t0 = now_ns(CLOCK_MONOTONIC);

		if (sem_wait(&posted) == 0)
			posted_count++;
		posted_ns += now_ns(CLOCK_MONOTONIC) - t0;
	}
	return NULL;
}

/* A sem_timedwait that runs out its 100 ms; the time it took into *ns. */
static int timed_out(uint64_t *ns)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	uint64_t until = now_ns(CLOCK_REALTIME) + TIMED_MS * 1000000ull;
	struct timespec ts = { (time_t)(until / 1000000000ull),
			       (long)(until % 1000000000ull) };
	int rc = sem_timedwait(&never, &ts);
	int err = errno;

	*ns += now_ns(CLOCK_MONOTONIC) - t0;
	return rc == -1 && err == ETIMEDOUT;
}

int main(int argc, char **argv)
{
	pthread_t poster, waiter;
	uint64_t timed_ns = 0;
	int timeouts = 0;
	FILE *f;

	alarm(30);
	sem_init(&posted, 0, 0);
	sem_init(&never, 0, 0);
	pthread_create(&waiter, NULL, waiter_main, NULL);
	pthread_create(&poster, NULL, poster_main, NULL);
	for (int i = 0; i < TIMED; i++)
		timeouts += timed_out(&timed_ns);
	pthread_join(poster, NULL);
	pthread_join(waiter, NULL);
	f = argc > 1 ? fopen(argv[1], "w") : stdout;
	if (f == NULL)
		return 1;
	fprintf(f, "posted_ns %llu\nposted_count %d\ntimed_ns %llu\ntimeouts %d\n",
		(unsigned long long)posted_ns, posted_count,
		(unsigned long long)timed_ns, timeouts);
	fclose(f);
	return 0;
}
