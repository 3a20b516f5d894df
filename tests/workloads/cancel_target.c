/*
 * A worker thread parked in pause(), for the injection tests: on SIGUSR1
 * the main thread cancels it and waits up to 5 s for it to end. Prints
 * "cancelled" when the cancellation took effect, "not cancelled"
 * otherwise; then, unless the worker was cancelled inside dlopen with the
 * loader lock held, loads a library (within 5 s) and prints "loader ok".
 * Then it waits for SIGTERM and exits 0 when both went right.
 *
 * The first pthread_cancel of a process dlopens libgcc_s (for unwinding),
 * which waits for the loader lock: a throwaway thread is cancelled at
 * start, so the real cancellation signal goes out at once, even while
 * another thread is inside dlopen.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define WAIT_FOR_USR1_S 60
#define JOIN_S 5

static void *worker(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* dlopen works: the loader lock is free. On a thread, with a deadline. */
static void *load_one(void *arg)
{
	(void)arg;
	return dlopen("libm.so.6", RTLD_NOW);
}

static int loader_works(void)
{
	struct timespec until;
	void *handle = NULL;
	pthread_t t;

	if (pthread_create(&t, NULL, load_one, NULL) != 0)
		return 0;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += JOIN_S;
	return pthread_timedjoin_np(t, &handle, &until) == 0 && handle != NULL;
}

/* Cancel a thread once, so that libgcc_s is loaded. */
static int warm_up_cancel(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, worker, NULL) != 0)
		return -1;
	pthread_cancel(t);
	return pthread_join(t, NULL);
}

int main(void)
{
	struct timespec limit = { WAIT_FOR_USR1_S, 0 }, until;
	sigset_t usr1;
	pthread_t w;
	void *ret = NULL;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigaddset(&usr1, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	sigdelset(&usr1, SIGTERM);
	if (warm_up_cancel() != 0 || pthread_create(&w, NULL, worker, NULL) != 0)
		return 2;
	printf("ready\n");
	if (sigtimedwait(&usr1, NULL, &limit) != SIGUSR1)
		return 3;
	pthread_cancel(w);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += JOIN_S;
	rc = pthread_timedjoin_np(w, &ret, &until);
	printf("%s\n", rc == 0 && ret == PTHREAD_CANCELED ? "cancelled"
							 : "not cancelled");
	if (!loader_works()) {
		printf("loader stuck\n");
		_exit(1);	/* exit() would wait for the loader lock */
	}
	printf("loader ok\n");
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGTERM);
	if (sigtimedwait(&usr1, NULL, &limit) != SIGTERM)
		return 3;
	return rc == 0 ? 0 : 1;
}
