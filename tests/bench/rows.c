/*
 * Scenario: a hundred thousand rows that all change every interval. Each
 * thread takes its own mutexes in turn, over and over, from one call site.
 * Reports lock+unlock pairs per second, all threads together.
 *   threads=4 mutexes=25000 (per thread) seconds=5
 */
#include "bench.h"

#define BATCH 256

struct rows {
	pthread_mutex_t *mutex;
	size_t per_thread;
};

static uint64_t worker(int index, void *arg, const atomic_bool *stop)
{
	struct rows *r = arg;
	pthread_mutex_t *own = r->mutex + (size_t)index * r->per_thread;
	uint64_t ops = 0;
	size_t next = 0;

	while (!atomic_load_explicit(stop, memory_order_relaxed)) {
		for (int i = 0; i < BATCH; i++) {
			pthread_mutex_lock(&own[next]);
			pthread_mutex_unlock(&own[next]);
			if (++next == r->per_thread)
				next = 0;
		}
		ops += BATCH;
	}
	return ops;
}

int main(int argc, char **argv)
{
	struct rows r;
	double seconds, elapsed;
	size_t total;
	int threads;
	uint64_t ops;

	bench_init(argc, argv);
	threads = (int)bench_param("threads", 4);
	r.per_thread = (size_t)bench_param("mutexes", 25000);
	seconds = bench_param("seconds", 5);
	if (threads < 1 || r.per_thread < 1)
		bench_fail("threads and mutexes must be at least 1");
	total = (size_t)threads * r.per_thread;
	r.mutex = bench_alloc(sizeof(*r.mutex) * total);
	for (size_t i = 0; i < total; i++)
		pthread_mutex_init(&r.mutex[i], NULL);
	ops = bench_run(threads, worker, &r, seconds, &elapsed);
	bench_result("ops_per_s", (double)ops / elapsed);
	return bench_finish();
}
