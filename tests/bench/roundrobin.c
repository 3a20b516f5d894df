/*
 * Scenario: many uncontended mutexes from one call site. One thread takes
 * and releases the mutexes of an array in turn. Reports ns per pair.
 *   mutexes=2000 seconds=1
 */
#include "bench.h"

#define BATCH 256

struct ring {
	pthread_mutex_t *mutex;
	size_t n;
};

static uint64_t worker(int index, void *arg, const atomic_bool *stop)
{
	struct ring *r = arg;
	uint64_t ops = 0;
	size_t next = 0;

	(void)index;
	while (!atomic_load_explicit(stop, memory_order_relaxed)) {
		for (int i = 0; i < BATCH; i++) {
			pthread_mutex_lock(&r->mutex[next]);
			pthread_mutex_unlock(&r->mutex[next]);
			if (++next == r->n)
				next = 0;
		}
		ops += BATCH;
	}
	return ops;
}

int main(int argc, char **argv)
{
	struct ring r;
	double seconds, elapsed;
	uint64_t ops;

	bench_init(argc, argv);
	r.n = (size_t)bench_param("mutexes", 2000);
	seconds = bench_param("seconds", 1);
	if (r.n == 0)
		bench_fail("mutexes=0");
	r.mutex = bench_alloc(sizeof(*r.mutex) * r.n);
	for (size_t i = 0; i < r.n; i++)
		pthread_mutex_init(&r.mutex[i], NULL);
	ops = bench_run(1, worker, &r, seconds, &elapsed);
	bench_result("ns_per_op", elapsed * 1e9 / (double)ops);
	return bench_finish();
}
