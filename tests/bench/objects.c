/*
 * Scenario: many threads with many locks of their own, all alive at once.
 * Each thread initialises its own mutexes, waits for every other thread,
 * takes each of its mutexes rounds times, and waits again before exiting,
 * so the peak memory holds every thread's records together. Reports the
 * time from the first start to the last exit.
 *   threads=200 objects=400 rounds=5
 */
#include <stdlib.h>

#include "bench.h"

static pthread_barrier_t all_started, all_done;
static size_t objects;
static int rounds;

static void *own_locks(void *arg)
{
	pthread_mutex_t *m = bench_alloc(sizeof(*m) * objects);

	(void)arg;
	for (size_t i = 0; i < objects; i++)
		pthread_mutex_init(&m[i], NULL);
	pthread_barrier_wait(&all_started);
	for (int r = 0; r < rounds; r++) {
		for (size_t i = 0; i < objects; i++) {
			pthread_mutex_lock(&m[i]);
			pthread_mutex_unlock(&m[i]);
		}
	}
	pthread_barrier_wait(&all_done);
	free(m);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned threads;
	pthread_t *t;

	bench_init(argc, argv);
	threads = (unsigned)bench_param("threads", 200);
	objects = (size_t)bench_param("objects", 400);
	rounds = (int)bench_param("rounds", 5);
	if (threads < 1)
		bench_fail("threads must be at least 1");
	t = bench_alloc(sizeof(*t) * threads);
	pthread_barrier_init(&all_started, NULL, threads);
	pthread_barrier_init(&all_done, NULL, threads);
	bench_phase_begin();
	for (unsigned i = 0; i < threads; i++)
		bench_thread(&t[i], own_locks, NULL);
	for (unsigned i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	bench_result("elapsed_s", bench_phase_end());
	return bench_finish();
}
