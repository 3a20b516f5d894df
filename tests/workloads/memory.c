/*
 * A target with a large library loaded and a contended lock, for the
 * memory cap's test: the collector must not build unwind tables past
 * its cap, however large the library's .eh_frame.
 *
 *   wl_memory LIB RESULT now    dlopen LIB, contend, write RESULT, exit
 *   wl_memory LIB RESULT wait   the same, but contend only after SIGUSR2
 *                               (RESULT first gets "ready PID")
 *
 * The worker waits 20 times on a lock the holder keeps until the worker
 * sleeps on it. RESULT gets "waits N" (those waits) and "vmhwm_kb N" (the
 * peak RSS) at the end.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WAITS 20

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int turn;		/* 1: the worker's turn to wait */
static pid_t worker_tid;
static long waits;
static volatile sig_atomic_t go;

static void on_usr2(int sig)
{
	(void)sig;
	go = 1;
}

/* Wait until the flag *p is v. */
static void await(int *p, int v)
{
	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != v)
		sched_yield();
}

/* Whether thread tid sleeps (state S in its stat). */
static int sleeping(pid_t tid)
{
	char path[64], buf[256], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

/* Wait WAITS times on the lock, each time while the holder holds it. */
static void *worker(void *arg)
{
	__atomic_store_n(&worker_tid, (pid_t)gettid(), __ATOMIC_RELEASE);
	for (int i = 0; i < WAITS; i++) {
		await(&turn, 1);
		pthread_mutex_lock(&lock); /* site:contended */
		pthread_mutex_unlock(&lock);
		__atomic_store_n(&turn, 0, __ATOMIC_RELEASE);
	}
	return arg;
}

/* Hold the lock until the worker sleeps on it, WAITS times. */
static void *holder(void *arg)
{
	while (__atomic_load_n(&worker_tid, __ATOMIC_ACQUIRE) == 0)
		sched_yield();
	for (int i = 0; i < WAITS; i++) {
		pthread_mutex_lock(&lock);
		__atomic_store_n(&turn, 1, __ATOMIC_RELEASE);
		while (!sleeping(worker_tid))
			sched_yield();
		pthread_mutex_unlock(&lock);
		waits++;
		await(&turn, 0);
	}
	return arg;
}

static long peak_rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "VmHWM:", 6) == 0)
			kb = atol(line + 6);
	if (f)
		fclose(f);
	return kb;
}

/* Append one line to path. */
static void note(const char *path, const char *name, long value)
{
	FILE *f = fopen(path, "a");

	if (f) {
		fprintf(f, "%s %ld\n", name, value);
		fclose(f);
	}
}

int main(int argc, char **argv)
{
	pthread_t t[2];

	if (argc != 4) {
		fprintf(stderr, "usage: wl_memory LIB RESULT now|wait\n");
		return 2;
	}
	if (dlopen(argv[1], RTLD_NOW) == NULL) {
		fprintf(stderr, "wl_memory: %s\n", dlerror());
		return 1;
	}
	if (strcmp(argv[3], "wait") == 0) {
		signal(SIGUSR2, on_usr2);
		note(argv[2], "ready", getpid());
		while (!go)
			usleep(10000);
	}
	pthread_create(&t[0], NULL, worker, NULL);
	pthread_create(&t[1], NULL, holder, NULL);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	note(argv[2], "waits", waits);
	note(argv[2], "vmhwm_kb", peak_rss_kb());
	return 0;
}
