/*
 * A program started without the collector, for the injection tests:
 * threads parked in nanosleep, epoll_wait, poll and pthread_cond_wait,
 * fed by a main loop. Every ~100 ms it prints a "tick" line with each
 * thread's progress. On SIGTERM it stops feeding, checks that every item
 * reached its thread, prints "ok ..." and exits 0 (1 on a mismatch).
 * Interrupted waits (EINTR) are retried and counted, and so are SIGUSR1s.
 * With an argument, one more thread dlopens that library after "ready",
 * printing "loading" before and "loaded" after.
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define SAFETY_EXIT_S 120

static volatile sig_atomic_t stop_requested, usr1;
static long produced;		/* final once done is set */
static int done;
static long sleeps[2], epolled, polled, consumed, eintrs;
static int efd, pipefd[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static long queued;

static void on_term(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void on_usr1(int sig)
{
	(void)sig;
	usr1++;
}

static int finished(long got)
{
	return __atomic_load_n(&done, __ATOMIC_ACQUIRE) &&
	       got == __atomic_load_n(&produced, __ATOMIC_RELAXED);
}

static void nap_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000 };

	nanosleep(&ts, NULL);
}

static void *sleeper(void *arg)
{
	long *count = arg;

	while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
		nap_ms(3);
		__atomic_add_fetch(count, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *epoller(void *arg)
{
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN }, out;
	uint64_t v;

	(void)arg;
	epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev);
	while (!finished(epolled)) {
		int n = epoll_wait(ep, &out, 1, 50);

		if (n < 0 && errno == EINTR)
			__atomic_add_fetch(&eintrs, 1, __ATOMIC_RELAXED);
		if (n == 1 && read(efd, &v, sizeof(v)) == sizeof(v))
			__atomic_add_fetch(&epolled, (long)v, __ATOMIC_RELAXED);
	}
	close(ep);
	return NULL;
}

static void *poller(void *arg)
{
	struct pollfd p = { .fd = pipefd[0], .events = POLLIN };
	char buf[256];

	(void)arg;
	while (!finished(polled)) {
		int n = poll(&p, 1, 50);
		ssize_t got;

		if (n < 0 && errno == EINTR)
			__atomic_add_fetch(&eintrs, 1, __ATOMIC_RELAXED);
		if (n == 1 && (got = read(pipefd[0], buf, sizeof(buf))) > 0)
			__atomic_add_fetch(&polled, (long)got, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		while (queued == 0 && !done)
			pthread_cond_wait(&cond, &lock);
		__atomic_add_fetch(&consumed, queued, __ATOMIC_RELAXED);
		queued = 0;
		if (done)
			break;
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* One item to each waiting thread. */
static void produce(void)
{
	uint64_t one = 1;

	pthread_mutex_lock(&lock);
	queued++;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
	if (write(efd, &one, sizeof(one)) != sizeof(one) ||
	    write(pipefd[1], "x", 1) != 1)
		abort();
	__atomic_add_fetch(&produced, 1, __ATOMIC_RELAXED);
}

/* dlopen the library at arg, saying when it starts and ends. */
static void *loader(void *arg)
{
	printf("loading\n");
	if (dlopen(arg, RTLD_NOW) == NULL)
		printf("dlopen failed: %s\n", dlerror());
	else
		printf("loaded\n");
	return NULL;
}

static void tick(long n)
{
	printf("tick %ld sleep0=%ld sleep1=%ld epoll=%ld poll=%ld cond=%ld\n", n,
	       __atomic_load_n(&sleeps[0], __ATOMIC_RELAXED),
	       __atomic_load_n(&sleeps[1], __ATOMIC_RELAXED),
	       __atomic_load_n(&epolled, __ATOMIC_RELAXED),
	       __atomic_load_n(&polled, __ATOMIC_RELAXED),
	       __atomic_load_n(&consumed, __ATOMIC_RELAXED));
}

int main(int argc, char **argv)
{
	pthread_t th[5], ld;
	time_t start = time(NULL);
	struct sigaction sa = { .sa_handler = on_term };
	struct sigaction su = { .sa_handler = on_usr1 };
	int ok;

	setvbuf(stdout, NULL, _IOLBF, 0);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &su, NULL);
	efd = eventfd(0, 0);
	if (efd < 0 || pipe(pipefd) < 0)
		return 2;
	pthread_create(&th[0], NULL, sleeper, &sleeps[0]);
	pthread_create(&th[1], NULL, sleeper, &sleeps[1]);
	pthread_create(&th[2], NULL, epoller, NULL);
	pthread_create(&th[3], NULL, poller, NULL);
	pthread_create(&th[4], NULL, consumer, NULL);
	printf("ready\n");
	if (argc > 1 && pthread_create(&ld, NULL, loader, argv[1]) == 0)
		pthread_detach(ld);
	for (long i = 1; !stop_requested; i++) {
		produce();
		nap_ms(2);
		if (i % 40 == 0)
			tick(i / 40);
		if (time(NULL) - start > SAFETY_EXIT_S)
			return 3;
	}
	pthread_mutex_lock(&lock);
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < 5; i++)
		pthread_join(th[i], NULL);
	ok = epolled == produced && polled == produced && consumed == produced;
	printf("%s produced=%ld epoll=%ld poll=%ld cond=%ld sleeps=%ld,%ld "
	       "eintr=%ld usr1=%d\n", ok ? "ok" : "MISMATCH", produced, epolled,
	       polled, consumed, sleeps[0], sleeps[1], eintrs, (int)usr1);
	return ok ? 0 : 1;
}
