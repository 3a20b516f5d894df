/*
 * Threads parked in waits, hooked or not, for the "unseen waits" header.
 *
 *   wl_unseen barrier N   N threads wait in pthread_barrier_wait (which
 *                         qsptop does not hook) on a barrier only the
 *                         main thread reaches, on SIGUSR1: then they
 *                         exit and it prints "released"; nothing is
 *                         contended
 *   wl_unseen hooked      two threads wait in pthread_mutex_lock for a
 *                         mutex the main thread holds, one in sem_wait on
 *                         a semaphore nobody posts: waits a hook times;
 *                         once all three sleep, one more thread waits in
 *                         pthread_barrier_wait, which tells the test that
 *                         qsptop looked at the threads while they slept
 *
 * Each prints "ready" once its threads are started, then runs until
 * SIGTERM (exit 0), or ends itself after 30 s (alarm).
 */
#include <dirent.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_THREADS 4096
#define LIFETIME_S 30

static pthread_barrier_t barrier;
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static sem_t never;
static volatile sig_atomic_t release;

static void *barrier_main(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&barrier);
	return NULL;
}

static void *mutex_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&held);
	pthread_mutex_unlock(&held);
	return NULL;
}

static void *sem_main(void *arg)
{
	(void)arg;
	sem_wait(&never);
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	release = 1;
}

static void on_term(int sig)
{
	(void)sig;
	_exit(0);
}

/* Start n threads running fn, with small stacks so that thousands fit. */
static void start_threads(void *(*fn)(void *), int n)
{
	pthread_attr_t attr;
	pthread_t t;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t, &attr, fn, NULL) != 0) {
			perror("pthread_create");
			exit(2);
		}
	pthread_attr_destroy(&attr);
}

static void say(const char *what)
{
	printf("%s\n", what);
	fflush(stdout);
}

/* Wait for SIGTERM or the alarm. */
static _Noreturn void park(void)
{
	for (;;)
		pause();
}

static int barrier_mode(int n)
{
	pthread_barrier_init(&barrier, NULL, (unsigned)n + 1);
	signal(SIGUSR1, on_usr1);
	start_threads(barrier_main, n);
	say("ready");
	while (!release)
		usleep(10000);
	pthread_barrier_wait(&barrier);
	say("released");
	park();
}

/* Whether thread tid of this process sleeps in a futex call now. */
static int in_futex(const char *tid)
{
	char path[300];
	long nr = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%s/syscall", tid);
	f = fopen(path, "r");
	if (f && fscanf(f, "%ld", &nr) != 1)
		nr = -1;
	if (f)
		fclose(f);
	return nr == SYS_futex;
}

/* How many threads of this process sleep in a futex call now. */
static int threads_in_futex(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)) != NULL)
		n += e->d_name[0] != '.' && in_futex(e->d_name);
	if (d)
		closedir(d);
	return n;
}

static int hooked_mode(void)
{
	sem_init(&never, 0, 0);
	pthread_mutex_lock(&held);
	start_threads(mutex_main, 2);
	start_threads(sem_main, 1);
	while (threads_in_futex() < 3)
		usleep(1000);
	pthread_barrier_init(&barrier, NULL, 2);
	start_threads(barrier_main, 1);
	say("ready");
	park();
}

int main(int argc, char **argv)
{
	signal(SIGTERM, on_term);
	alarm(LIFETIME_S);
	if (argc == 3 && strcmp(argv[1], "barrier") == 0 &&
	    atoi(argv[2]) > 0 && atoi(argv[2]) <= MAX_THREADS)
		return barrier_mode(atoi(argv[2]));
	if (argc == 2 && strcmp(argv[1], "hooked") == 0)
		return hooked_mode();
	fprintf(stderr, "usage: wl_unseen barrier N | hooked\n");
	return 2;
}
