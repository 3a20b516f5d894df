/*
 * Waits whose role their type does not tell, side by side (issue 23):
 *
 *   token   4 threads pass one token, GIL-style: a mutex, a flag and a
 *           5 ms timed condvar wait re-armed until the token is free;
 *           each keeps the token ~5 ms (token_take: a lock on a condvar)
 *   pool    2 workers wait on a condvar for jobs posted every 50 ms
 *           (pool_next_job: idle, as its type says)
 *   park    2 workers park on a mutex a controller holds on purpose
 *           300 ms at a time (park_wait: idle on a mutex)
 *
 *   wl_roles [SECONDS]   runs all three for SECONDS (default 3)
 *
 * Ends itself after 60 s (alarm), whatever happens.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define TOKEN_THREADS 4
#define TOKEN_WAIT_MS 5
#define TOKEN_HOLD_US 5000
#define POOL_WORKERS 2
#define POOL_EVERY_US 50000
#define PARK_WORKERS 2
#define PARK_HOLD_US 300000

static volatile bool stop;

static pthread_mutex_t token_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t token_free = PTHREAD_COND_INITIALIZER;
static bool token_held;

static pthread_mutex_t pool_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_work = PTHREAD_COND_INITIALIZER;
static int pool_jobs;

static pthread_mutex_t park_mutex = PTHREAD_MUTEX_INITIALIZER;

/* The time ms from now on the realtime clock. */
static struct timespec after_ms(long ms)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_nsec += ms * 1000000L;
	t.tv_sec += t.tv_nsec / 1000000000L;
	t.tv_nsec %= 1000000000L;
	return t;
}

/* Wait for the token, 5 ms at a time, as CPython's take_gil does. */
static void __attribute__((noinline)) token_take(void)
{
	pthread_mutex_lock(&token_mutex);
	while (token_held) {
		struct timespec until = after_ms(TOKEN_WAIT_MS);

		pthread_cond_timedwait(&token_free, &token_mutex, &until);
	}
	token_held = true;
	pthread_mutex_unlock(&token_mutex);
}

static void token_drop(void)
{
	pthread_mutex_lock(&token_mutex);
	token_held = false;
	pthread_cond_signal(&token_free);
	pthread_mutex_unlock(&token_mutex);
}

static void *token_main(void *arg)
{
	(void)arg;
	while (!stop) {
		token_take();
		usleep(TOKEN_HOLD_US);
		token_drop();
	}
	return NULL;
}

/* Wait for a job (or the end); false at the end. */
static bool __attribute__((noinline)) pool_next_job(void)
{
	bool got;

	pthread_mutex_lock(&pool_mutex);
	while (pool_jobs == 0 && !stop)
		pthread_cond_wait(&pool_work, &pool_mutex);
	got = pool_jobs > 0;
	pool_jobs -= got;
	pthread_mutex_unlock(&pool_mutex);
	return got;
}

static void *pool_main(void *arg)
{
	(void)arg;
	while (pool_next_job())
		;
	return NULL;
}

/* Wait until the controller lets the parked workers go. */
static void __attribute__((noinline)) park_wait(void)
{
	pthread_mutex_lock(&park_mutex);
	pthread_mutex_unlock(&park_mutex);
}

static void *park_main(void *arg)
{
	(void)arg;
	while (!stop) {
		park_wait();
		usleep(100);
	}
	return NULL;
}

/* Hold the parking mutex, let go a moment, post a job now and then. */
static void control(double seconds)
{
	struct timespec start, now;
	long elapsed_us = 0;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (elapsed_us < (long)(seconds * 1e6)) {
		pthread_mutex_lock(&park_mutex);
		for (long held = 0; held < PARK_HOLD_US; held += POOL_EVERY_US) {
			usleep(POOL_EVERY_US);
			pthread_mutex_lock(&pool_mutex);
			pool_jobs++;
			pthread_cond_signal(&pool_work);
			pthread_mutex_unlock(&pool_mutex);
		}
		pthread_mutex_unlock(&park_mutex);
		usleep(1000);
		clock_gettime(CLOCK_MONOTONIC, &now);
		elapsed_us = (now.tv_sec - start.tv_sec) * 1000000L +
			     (now.tv_nsec - start.tv_nsec) / 1000;
	}
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3;
	pthread_t t[TOKEN_THREADS + POOL_WORKERS + PARK_WORKERS];
	int n = 0;

	alarm(60);
	for (int i = 0; i < TOKEN_THREADS; i++)
		pthread_create(&t[n++], NULL, token_main, NULL);
	for (int i = 0; i < POOL_WORKERS; i++)
		pthread_create(&t[n++], NULL, pool_main, NULL);
	for (int i = 0; i < PARK_WORKERS; i++)
		pthread_create(&t[n++], NULL, park_main, NULL);
	control(seconds);
	stop = true;
	pthread_mutex_lock(&pool_mutex);
	pthread_cond_broadcast(&pool_work);
	pthread_mutex_unlock(&pool_mutex);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("done\n");
	return 0;
}
