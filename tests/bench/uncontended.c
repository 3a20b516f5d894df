/*
 * Scenario: uncontended locking. Each thread takes and releases its own
 * mutex in a loop. Reports ns per lock+unlock pair, per thread. With
 * wrapper=1 every lock goes through a wrapper function, bench_lock().
 *   threads=2 seconds=1 wrapper=0
 */
#include <stdalign.h>
#include <stdbool.h>
#include <stdlib.h>

#include "bench.h"

#define BATCH 256

/* One mutex per cache line, so the threads share nothing. */
struct own_lock {
	alignas(64) pthread_mutex_t mutex;
};

static bool through_wrapper;

/* A lock wrapper, as programs have them (my_lock(), qemu_mutex_lock()). */
static __attribute__((noinline)) void bench_lock(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
	__asm__ volatile("" ::: "memory");	/* not a tail call */
}

static uint64_t worker(int index, void *arg, const atomic_bool *stop)
{
	pthread_mutex_t *m = &((struct own_lock *)arg)[index].mutex;
	uint64_t ops = 0;

	while (!atomic_load_explicit(stop, memory_order_relaxed)) {
		for (int i = 0; i < BATCH; i++) {
			if (through_wrapper)
				bench_lock(m);
			else
				pthread_mutex_lock(m);
			pthread_mutex_unlock(m);
		}
		ops += BATCH;
	}
	return ops;
}

int main(int argc, char **argv)
{
	int threads;
	double seconds, elapsed;
	struct own_lock *locks;
	uint64_t ops;

	bench_init(argc, argv);
	threads = (int)bench_param("threads", 2);
	seconds = bench_param("seconds", 1);
	through_wrapper = bench_param("wrapper", 0) != 0;
	locks = aligned_alloc(64, sizeof(*locks) * (size_t)threads);
	if (locks == NULL)
		bench_fail("out of memory");
	for (int i = 0; i < threads; i++)
		pthread_mutex_init(&locks[i].mutex, NULL);
	ops = bench_run(threads, worker, locks, seconds, &elapsed);
	bench_result("ns_per_op", elapsed * 1e9 * threads / (double)ops);
	return bench_finish();
}
