/*
 * The deadlock a borrowed thread could close through the loader lock:
 * main holds M and waits for M2 (a plain futex wait, the only kind of
 * thread there is to borrow); a worker is inside dlopen, holding the
 * loader lock, in a constructor that waits for M; M2's holder sleeps a
 * while, then lets go. Unwatched, it all unwinds and prints "done". Run
 * as: loader_lock PLUGIN, where PLUGIN's constructor prints "constructor"
 * and locks the mutex whose address is in $LOADER_LOCK_MUTEX.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t m2 = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t holding;
static const char *plugin;

static void *loader(void *arg)
{
	(void)arg;
	if (dlopen(plugin, RTLD_NOW) == NULL)
		printf("dlopen: %s\n", dlerror());
	return NULL;
}

static void *holder(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&m2);
	pthread_barrier_wait(&holding);
	sleep(2);
	pthread_mutex_unlock(&m2);
	return NULL;
}

int main(int argc, char **argv)
{
	char address[32];
	pthread_t l, h;

	if (argc != 2) {
		fprintf(stderr, "usage: loader_lock PLUGIN\n");
		return 2;
	}
	plugin = argv[1];
	snprintf(address, sizeof(address), "%p", (void *)&m);
	setenv("LOADER_LOCK_MUTEX", address, 1);
	setvbuf(stdout, NULL, _IONBF, 0);
	pthread_barrier_init(&holding, NULL, 2);
	pthread_mutex_lock(&m);
	pthread_create(&h, NULL, holder, NULL);
	pthread_barrier_wait(&holding);
	pthread_create(&l, NULL, loader, NULL);
	pthread_mutex_lock(&m2);	/* held by holder for 2 s */
	pthread_mutex_unlock(&m2);
	pthread_mutex_unlock(&m);	/* the constructor goes on */
	pthread_join(l, NULL);
	pthread_join(h, NULL);
	printf("done\n");
	return 0;
}
