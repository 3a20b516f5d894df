/*
 * A steady host for the fault tests: 4 threads lock without end, a
 * signal handler takes a lock whenever SIGUSR2 arrives, and every 100 ms
 * a line "MS OPS" goes to PROGRESS (ops: acquisitions so far), so a test
 * can see the host never stopped. On SIGUSR1 it forks a child that execs
 * /bin/true, then one of its threads (not main) calls exit(0), after
 * writing "acquisitions N" (every lock it took, handlers included) to
 * RESULT.
 *
 *   wl_faults PROGRESS RESULT
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4

static pthread_mutex_t locks[THREADS];
static pthread_mutex_t in_handler = PTHREAD_MUTEX_INITIALIZER;
static long counts[THREADS];
static long handler_count;
static volatile sig_atomic_t ending;
static const char *progress_path, *result_path;

static void on_usr2(int sig)
{
	(void)sig;
	pthread_mutex_lock(&in_handler);
	__atomic_add_fetch(&handler_count, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&in_handler);
}

static void on_usr1(int sig)
{
	(void)sig;
	ending = 1;
}

static void *worker(void *arg)
{
	long i = (long)arg;

	while (!ending) {
		for (int k = 0; k < 1000; k++) {
			pthread_mutex_lock(&locks[i]);
			__atomic_store_n(&counts[i], counts[i] + 1, __ATOMIC_RELAXED);
			pthread_mutex_unlock(&locks[i]);
		}
		usleep(100);
	}
	return NULL;
}

static long total(void)
{
	long n = 0;

	for (int i = 0; i < THREADS; i++)
		n += __atomic_load_n(&counts[i], __ATOMIC_RELAXED);
	return n + __atomic_load_n(&handler_count, __ATOMIC_RELAXED);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* The last act: a child that execs, then exit() from this thread. */
static void *ender(void *arg)
{
	FILE *f;
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	f = fopen(result_path, "w");
	if (f) {
		fprintf(f, "acquisitions %ld\nchild %d\n", total(),
			WIFEXITED(status) ? WEXITSTATUS(status) : 128);
		fclose(f);
	}
	exit(0);
	return arg;
}

int main(int argc, char **argv)
{
	struct sigaction usr1 = { .sa_handler = on_usr1 };
	struct sigaction usr2 = { .sa_handler = on_usr2, .sa_flags = SA_RESTART };
	pthread_t t[THREADS], end;
	long start = now_ms();

	if (argc < 3)
		return 2;
	progress_path = argv[1];
	result_path = argv[2];
	sigaction(SIGUSR1, &usr1, NULL);
	sigaction(SIGUSR2, &usr2, NULL);
	for (long i = 0; i < THREADS; i++) {
		pthread_mutex_init(&locks[i], NULL);
		pthread_create(&t[i], NULL, worker, (void *)i);
	}
	while (!ending) {
		FILE *f = fopen(progress_path, "a");

		if (f) {
			fprintf(f, "%ld %ld\n", now_ms() - start, total());
			fclose(f);
		}
		usleep(100000);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_create(&end, NULL, ender, NULL);
	pthread_join(end, NULL);
	return 1;	/* not reached: ender exits */
}
