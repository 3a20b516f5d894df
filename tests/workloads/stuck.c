/*
 * Threads stuck for good, for the threads view seen from outside (run
 * without qsptop, watched with qsptop -p PID --no-inject):
 *
 *   wl_stuck deadlock   thread "ab" takes lock_a then lock_b, "ba" takes
 *                       lock_b then lock_a: each holds what the other
 *                       waits for; "third" then waits for lock_a
 *   wl_stuck pipe       "holder" takes lock_p and reads a pipe nobody
 *                       writes; "waiter" waits for lock_p
 *   wl_stuck exited     "leaver" takes lock_x and exits holding it;
 *                       "waiter" waits for lock_x
 *   wl_stuck rwlock     "writer" write-locks rw_w and reads a pipe; "wwait"
 *                       and "rwait" wait to write and to read rw_w;
 *                       "reader" read-locks rw_r and reads the pipe,
 *                       "wreaders" waits to write rw_r
 *   wl_stuck spin       "spinner" and the main thread run, never in a
 *                       system call: no thread can be borrowed
 *   wl_stuck busy       4 threads "busy" take lock_c around a short count,
 *                       forever; on each SIGUSR1 the main thread prints
 *                       "count N", the acquisitions so far
 *
 * Each prints "tid NAME TID" for its named threads, then "ready" once
 * the locks are taken (the waits themselves follow at once); it runs
 * until SIGTERM or SIGKILL, or ends itself after 120 s (alarm).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LIFETIME_S 120
#define BUSY_THREADS 4

static pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_b = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_p = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_x = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_c = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw_w = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t rw_r = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t taken;
static int pipe_fds[2];
static volatile unsigned long count;
static volatile sig_atomic_t asked;

/* Name the calling thread and say its TID. */
static void hello(const char *name)
{
	pthread_setname_np(pthread_self(), name);
	printf("tid %s %ld\n", name, (long)syscall(SYS_gettid));
	fflush(stdout);
}

static void *ab_main(void *arg)
{
	(void)arg;
	hello("ab");
	pthread_mutex_lock(&lock_a);
	pthread_barrier_wait(&taken);
	pthread_mutex_lock(&lock_b);	/* site:ab */
	return NULL;
}

static void *ba_main(void *arg)
{
	(void)arg;
	hello("ba");
	pthread_mutex_lock(&lock_b);
	pthread_barrier_wait(&taken);
	pthread_mutex_lock(&lock_a);	/* site:ba */
	return NULL;
}

static void *third_main(void *arg)
{
	(void)arg;
	hello("third");
	pthread_barrier_wait(&taken);
	pthread_mutex_lock(&lock_a);	/* site:third */
	return NULL;
}

static void *holder_main(void *arg)
{
	char c;

	(void)arg;
	hello("holder");
	pthread_mutex_lock(&lock_p);
	pthread_barrier_wait(&taken);
	return read(pipe_fds[0], &c, 1) == 1 ? NULL : arg;
}

/* Take rw_w to write or rw_r to read (arg), then block reading the pipe. */
static void *rw_holder_main(void *arg)
{
	char c;

	hello(arg ? "writer" : "reader");
	if (arg)
		pthread_rwlock_wrlock(&rw_w);
	else
		pthread_rwlock_rdlock(&rw_r);
	pthread_barrier_wait(&taken);
	return read(pipe_fds[0], &c, 1) == 1 ? NULL : arg;
}

static void *wwait_main(void *arg)
{
	(void)arg;
	hello("wwait");
	pthread_barrier_wait(&taken);
	pthread_rwlock_wrlock(&rw_w);	/* site:wwait */
	return NULL;
}

static void *rwait_main(void *arg)
{
	(void)arg;
	hello("rwait");
	pthread_barrier_wait(&taken);
	pthread_rwlock_rdlock(&rw_w);	/* site:rwait */
	return NULL;
}

static void *wreaders_main(void *arg)
{
	(void)arg;
	hello("wreaders");
	pthread_barrier_wait(&taken);
	pthread_rwlock_wrlock(&rw_r);	/* site:wreaders */
	return NULL;
}

static void *leaver_main(void *arg)
{
	(void)arg;
	hello("leaver");
	pthread_mutex_lock(&lock_x);
	return NULL;		/* holding lock_x */
}

/* Wait for lock (after the barrier): the thread named name. */
static void *waiter_main(void *arg)
{
	hello("waiter");
	pthread_barrier_wait(&taken);
	pthread_mutex_lock(arg);	/* site:waiter */
	return NULL;
}

static void *busy_main(void *arg)
{
	(void)arg;
	hello("busy");
	for (;;) {
		pthread_mutex_lock(&lock_c);	/* site:busy */
		count++;
		pthread_mutex_unlock(&lock_c);
		for (volatile int i = 0; i < 200; i++)
			;
	}
	return NULL;
}

static void *spin_main(void *arg)
{
	(void)arg;
	hello("spinner");
	for (;;)
		count++;
	return NULL;
}

static void start(void *(*fn)(void *), void *arg)
{
	pthread_t t;

	if (pthread_create(&t, NULL, fn, arg) != 0) {
		perror("pthread_create");
		exit(1);
	}
}

static void on_usr1(int sig)
{
	(void)sig;
	asked = 1;
}

/* Answer each SIGUSR1 with the count so far. */
static void answer_counts(void)
{
	signal(SIGUSR1, on_usr1);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		pause();
		if (!asked)
			continue;
		asked = 0;
		pthread_mutex_lock(&lock_c);
		printf("count %lu\n", count);
		pthread_mutex_unlock(&lock_c);
		fflush(stdout);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	pthread_t leaver;

	alarm(LIFETIME_S);
	pthread_barrier_init(&taken, NULL, strcmp(mode, "deadlock") == 0 ? 4 :
			     strcmp(mode, "rwlock") == 0 ? 6 : 3);
	if (strcmp(mode, "deadlock") == 0) {
		start(ab_main, NULL);
		start(ba_main, NULL);
		start(third_main, NULL);
	} else if (strcmp(mode, "pipe") == 0) {
		if (pipe(pipe_fds) < 0)
			return 1;
		start(holder_main, NULL);
		start(waiter_main, &lock_p);
	} else if (strcmp(mode, "rwlock") == 0) {
		if (pipe(pipe_fds) < 0)
			return 1;
		start(rw_holder_main, "w");
		start(rw_holder_main, NULL);
		start(wwait_main, NULL);
		start(rwait_main, NULL);
		start(wreaders_main, NULL);
	} else if (strcmp(mode, "exited") == 0) {
		pthread_create(&leaver, NULL, leaver_main, NULL);
		pthread_join(leaver, NULL);
		pthread_barrier_destroy(&taken);
		pthread_barrier_init(&taken, NULL, 2);
		start(waiter_main, &lock_x);
	} else if (strcmp(mode, "spin") == 0) {
		start(spin_main, NULL);
		printf("ready\n");
		fflush(stdout);
		for (;;)
			count++;
	} else if (strcmp(mode, "busy") == 0) {
		for (int i = 0; i < BUSY_THREADS; i++)
			start(busy_main, NULL);
		answer_counts();
	} else {
		fprintf(stderr, "usage: wl_stuck deadlock|pipe|rwlock|exited|spin|busy\n");
		return 2;
	}
	pthread_barrier_wait(&taken);
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
