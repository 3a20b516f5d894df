/*
 * A process tree sharing locks. The parent maps a process-shared mutex and
 * a POSIX semaphore (MAP_SHARED) and forks 4 workers, one more per
 * SIGUSR1. FILE gets "parent PID", then "worker PID" per worker. A worker
 * idles until SIGUSR2; then it makes exactly LOCKS calls at worker_lock
 * (the shared mutex, held WAIT_US at each of its first WAITS calls, so
 * that the others wait) and SEMS sem_wait calls at worker_sem (the count
 * posted first: none waits), writes "done PID", and idles again, or with
 * "exit" as second argument for the first worker, writes "exited PID" and
 * exits. SIGTERM ends the parent and the workers with it.
 *   wl_tree FILE
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WORKERS 4
#define LOCKS 1000
#define SEMS 200
#define WAITS 20
#define WAIT_US 2000

struct shared {
	pthread_mutex_t lock;
	sem_t sem;
};

static struct shared *sh;
static volatile sig_atomic_t fork_asked, go_asked, end_asked;
static volatile int sink;
static const char *file;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		fork_asked = 1;
	else if (sig == SIGUSR2)
		go_asked = 1;
	else
		end_asked = 1;
}

static void nap(void)
{
	struct timespec ms = { 0, 1000000 };

	nanosleep(&ms, NULL);
}

static void note(const char *what)
{
	FILE *f = fopen(file, "a");

	if (f == NULL)
		exit(1);
	fprintf(f, "%s %d\n", what, (int)getpid());
	fclose(f);
}

static void __attribute__((noinline)) worker_lock(int i)
{
	pthread_mutex_lock(&sh->lock);
	if (i < WAITS)
		usleep(WAIT_US);
	sink++;
	pthread_mutex_unlock(&sh->lock);
}

static void __attribute__((noinline)) worker_sem(void)
{
	sem_wait(&sh->sem);
}

/*
 * The calls. After each of the first WAITS, which hold the lock, a nap
 * outside it: the other workers take it meanwhile, and this one then
 * waits for them (glibc's mutex is not fair: without the nap, one
 * worker could take it again and again while the others only wait).
 */
static void work(void)
{
	for (int i = 0; i < LOCKS; i++) {
		worker_lock(i);
		if (i < WAITS)
			nap();
	}
	for (int i = 0; i < SEMS; i++)
		sem_post(&sh->sem);
	for (int i = 0; i < SEMS; i++)
		worker_sem();
}

/*
 * End as forked workers often do, with _exit(): no exit handler runs, so
 * the collector says no goodbye. Its counts go out at its ticks (every
 * 0.2 s in the tests) first: a second of naps.
 */
static void exit_quietly(void)
{
	for (int i = 0; i < 1000; i++)
		nap();
	note("exited");
	_exit(0);
}

static void worker(bool exit_after)
{
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (exit_after)
		note("exiter");
	note("worker");
	while (!end_asked) {
		if (go_asked) {
			go_asked = 0;
			work();
			if (exit_after)
				exit_quietly();
			note("done");
		}
		nap();
	}
	exit(0);
}

static void spawn(bool exit_after)
{
	pid_t pid = fork();

	if (pid == 0)
		worker(exit_after);
	if (pid < 0)
		exit(1);
}

static void make_shared(void)
{
	pthread_mutexattr_t a;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		exit(1);
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&sh->lock, &a);
	sem_init(&sh->sem, 1, 0);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	bool exit_first = argc > 2;

	if (argc < 2)
		return 2;
	file = argv[1];
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	make_shared();
	note("parent");
	for (int i = 0; i < WORKERS; i++)
		spawn(exit_first && i == 0);
	while (!end_asked) {
		if (fork_asked) {
			fork_asked = 0;
			spawn(false);
		}
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		nap();
	}
	return 0;
}
