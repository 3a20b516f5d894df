/*
 * Waits that time out beside waits that end with the lock.
 *
 *   wl_condtimed    one thread waits on a condvar no one signals, five
 *                   times 300 ms (each wait times out), while two
 *                   threads fight over a mutex they hold 2 ms at a time;
 *                   the condvar waits go through a wrapper, wait_until()
 *   wl_condtimed stay   the same, then prints "done" and waits for SIGTERM
 *                       (for qsptop -p)
 *
 * Ends itself after 30 s (alarm), whatever happens.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUTS 5
#define TIMEOUT_MS 300
#define FIGHTS 100
#define HOLD_US 2000

static pthread_mutex_t quiet = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t fought = PTHREAD_MUTEX_INITIALIZER;

/* A lock wrapper around the timed condvar wait (for --wrapper wait_until). */
static int __attribute__((noinline)) wait_until(const struct timespec *until)
{
	return pthread_cond_timedwait(&never, &quiet, until);
}

/* Five timed waits on a condvar nobody signals. */
static void *sleeper_main(void *arg)
{
	int timed_out = 0;

	(void)arg;
	pthread_mutex_lock(&quiet);
	for (int i = 0; i < TIMEOUTS; i++) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += (TIMEOUT_MS % 1000) * 1000000L;
		until.tv_sec += TIMEOUT_MS / 1000 + until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		if (wait_until(&until) == ETIMEDOUT)
			timed_out++;
	}
	pthread_mutex_unlock(&quiet);
	printf("timed out %d of %d\n", timed_out, TIMEOUTS);
	return NULL;
}

/* Take the fought-over mutex and keep it a moment, again and again. */
static void *fighter_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < FIGHTS; i++) {
		pthread_mutex_lock(&fought);
		usleep(HOLD_US);
		pthread_mutex_unlock(&fought);
		usleep(100);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t sleeper, fighter[2];

	alarm(30);
	pthread_create(&sleeper, NULL, sleeper_main, NULL);
	for (int i = 0; i < 2; i++)
		pthread_create(&fighter[i], NULL, fighter_main, NULL);
	pthread_join(sleeper, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(fighter[i], NULL);
	if (argc > 1 && strcmp(argv[1], "stay") == 0) {
		printf("done\n");
		fflush(stdout);
		pause();
	}
	return 0;
}
