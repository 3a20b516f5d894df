/*
 * A pre-fork server in small. The parent locks at parent_work on two
 * threads; each SIGUSR1 makes it fork a worker child, whose one thread
 * locks at child_work while its main thread sleeps. FILE gets a line
 * "parent PID" at start and "child PID" per child, which it reaps. On
 * SIGUSR2 a process makes exactly EXACT lock calls at exact_work, then
 * writes "exact PID". SIGTERM makes a process end with exit(0); a child
 * also ends when its parent is gone.
 *   wl_prefork FILE
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t parent_lock = PTHREAD_MUTEX_INITIALIZER;
#define EXACT 10000

static pthread_mutex_t child_lock;
static pthread_mutex_t exact_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile sig_atomic_t fork_asked, exact_asked, end_asked;
static volatile int sink;
static const char *file;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		fork_asked = 1;
	else if (sig == SIGUSR2)
		exact_asked = 1;
	else
		end_asked = 1;
}

static void nap(void)
{
	struct timespec ms = { 0, 1000000 };

	nanosleep(&ms, NULL);
}

static void __attribute__((noinline)) parent_work(void)
{
	pthread_mutex_lock(&parent_lock);
	sink++;
	pthread_mutex_unlock(&parent_lock);
}

static void __attribute__((noinline)) child_work(void)
{
	pthread_mutex_lock(&child_lock);
	sink++;
	pthread_mutex_unlock(&child_lock);
}

static void __attribute__((noinline)) exact_work(void)
{
	pthread_mutex_lock(&exact_lock);
	sink++;
	pthread_mutex_unlock(&exact_lock);
}

/* Lock a hundred times a millisecond until the process ends. */
static void *worker(void *work)
{
	for (;;) {
		for (int i = 0; i < 100; i++)
			((void (*)(void))work)();
		nap();
	}
	return NULL;
}

static void note(const char *what)
{
	FILE *f = fopen(file, "a");

	if (f) {
		fprintf(f, "%s %d\n", what, (int)getpid());
		fclose(f);
	}
}

/* EXACT calls at exact_work when asked, then say so. */
static void exact_if_asked(void)
{
	if (!exact_asked)
		return;
	exact_asked = 0;
	for (int i = 0; i < EXACT; i++)
		exact_work();
	note("exact");
}

static void start_worker(void (*work)(void))
{
	pthread_t t;

	pthread_create(&t, NULL, worker, (void *)work);
}

static void child(pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	pthread_mutex_init(&child_lock, NULL);
	start_worker(child_work);
	note("child");
	while (!end_asked && getppid() == parent) {
		exact_if_asked();
		nap();
	}
	exit(0);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };

	if (argc < 2)
		return 2;
	file = argv[1];
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	start_worker(parent_work);
	start_worker(parent_work);
	note("parent");
	while (!end_asked) {
		if (fork_asked) {
			pid_t parent = getpid();

			fork_asked = 0;
			if (fork() == 0)
				child(parent);
		}
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		exact_if_asked();
		nap();
	}
	return 0;
}
