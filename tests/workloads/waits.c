/*
 * Waits in progress and what their holders do meanwhile (issues 24, 25),
 * one scene per mode; in each, waiter_blocks() waits for a mutex that
 * a holder took first:
 *
 *   sleep    the holder keeps the mutex and sleeps until killed
 *   read     5 times: the holder blocks in read() on a pipe the main
 *            thread feeds 200 ms after the waiter blocked
 *   compute  5 times: the holder computes 200 ms
 *   lock     5 times: the holder waits for a second mutex that a third
 *            thread holds 200 ms
 *
 *   wl_waits MODE [RESULTS]
 *
 * RESULTS gets "NAME NUMBER" lines: the TIDs of the waiter and the
 * holder, written before the first wait, then (at the end) work_us, the
 * time the holder spent in its work with the lock held, all rounds: a
 * loaded machine stretches it, and the tests compare with it. Ends
 * itself after 60 s (alarm).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { ROUNDS = 5, HOLD_MS = 200 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t second = PTHREAD_MUTEX_INITIALIZER;
static int pipe_fd[2];
static const char *mode;
static int held_round;		/* rounds the holder has begun holding */
static int second_round;	/* rounds the third thread holds second in */
static int worked_round;	/* rounds the holder has done its work in */
static int waiter_tid, holder_tid;
static long work_us;		/* the holder's work, all rounds */

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&t, &t) != 0)
		;
}

static long now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static long now_ms(void)
{
	return now_us() / 1000;
}

/* Busy for ms milliseconds. */
static void spin_ms(long ms)
{
	long end = now_ms() + ms;
	volatile unsigned x = 0;

	while (now_ms() < end)
		for (int i = 0; i < 1000; i++)
			x += (unsigned)i;
}

static int load(int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static void store(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

/* Wait until *p reaches v. */
static void until(int *p, int v)
{
	while (load(p) < v)
		sleep_ms(1);
}

/* Whether thread tid is asleep (S in /proc), as a blocked waiter is. */
static int asleep(int tid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

/* What the holder does with the lock held, in this mode. */
static __attribute__((noinline)) void holder_works(void)
{
	char c;

	if (strcmp(mode, "sleep") == 0)
		for (;;)
			pause();
	if (strcmp(mode, "read") == 0)
		while (read(pipe_fd[0], &c, 1) != 1)
			;
	else if (strcmp(mode, "compute") == 0)
		spin_ms(HOLD_MS);
	else if (strcmp(mode, "lock") == 0) {
		pthread_mutex_lock(&second);
		pthread_mutex_unlock(&second);
	}
}

/* The holder's critical section: the row waiter_blocks() waits behind. */
static __attribute__((noinline)) void holder_holds(int round)
{
	long began;

	pthread_mutex_lock(&lock);
	store(&held_round, round);
	began = now_us();
	holder_works();
	work_us += now_us() - began;
	store(&worked_round, round);
	pthread_mutex_unlock(&lock);
}

static void *holder(void *arg)
{
	(void)arg;
	store(&holder_tid, (int)syscall(SYS_gettid));
	for (int round = 1; round <= ROUNDS; round++) {
		if (strcmp(mode, "lock") == 0)
			until(&second_round, round);
		holder_holds(round);
		sleep_ms(20);
	}
	return NULL;
}

static __attribute__((noinline)) void waiter_blocks(void)
{
	pthread_mutex_lock(&lock);
	pthread_mutex_unlock(&lock);
}

static void *waiter(void *arg)
{
	(void)arg;
	store(&waiter_tid, (int)syscall(SYS_gettid));
	for (int round = 1; round <= ROUNDS; round++) {
		until(&held_round, round);
		waiter_blocks();
	}
	return NULL;
}

/* The third thread of "lock": holds second HOLD_MS each round. */
static void *third(void *arg)
{
	(void)arg;
	for (int round = 1; round <= ROUNDS; round++) {
		pthread_mutex_lock(&second);
		store(&second_round, round);
		until(&held_round, round);
		sleep_ms(HOLD_MS);
		pthread_mutex_unlock(&second);
		until(&worked_round, round);	/* it got second: a new round */
	}
	return NULL;
}

static void write_results(const char *path, const char *how)
{
	FILE *f = path ? fopen(path, how) : NULL;

	if (f == NULL)
		return;
	if (how[0] == 'w')
		fprintf(f, "waiter %d\nholder %d\n", waiter_tid, holder_tid);
	else
		fprintf(f, "work_us %ld\n", work_us);
	fclose(f);
}

/* "read": feed the holder HOLD_MS after the waiter blocked, each round. */
static void feed(void)
{
	for (int round = 1; round <= ROUNDS; round++) {
		until(&held_round, round);
		while (!asleep(load(&waiter_tid)))
			sleep_ms(1);
		sleep_ms(HOLD_MS);
		if (write(pipe_fd[1], "x", 1) != 1)
			return;
	}
}

int main(int argc, char **argv)
{
	pthread_t h, w, t;

	if (argc < 2) {
		fprintf(stderr, "usage: wl_waits sleep|read|compute|lock [RESULTS]\n");
		return 2;
	}
	mode = argv[1];
	alarm(60);
	if (pipe(pipe_fd) != 0)
		return 1;
	if (strcmp(mode, "lock") == 0)
		pthread_create(&t, NULL, third, NULL);
	pthread_create(&h, NULL, holder, NULL);
	pthread_create(&w, NULL, waiter, NULL);
	until(&waiter_tid, 1);
	until(&holder_tid, 1);
	write_results(argc > 2 ? argv[2] : NULL, "w");
	if (strcmp(mode, "read") == 0)
		feed();
	pthread_join(w, NULL);
	pthread_join(h, NULL);
	if (strcmp(mode, "lock") == 0)
		pthread_join(t, NULL);
	write_results(argc > 2 ? argv[2] : NULL, "a");
	return 0;
}
