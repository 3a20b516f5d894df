/*
 * Scenario: many uncontended mutexes from one call site. One thread takes
 * and releases the mutexes of an array in turn, or with random=1 in one
 * fixed pseudo-random order (every mutex once a round), which no
 * prefetcher can follow. Reports ns per pair.
 *   mutexes=2000 random=0 seconds=1
 */
#include "bench.h"

#define BATCH 256

struct ring {
	pthread_mutex_t *mutex;
	uint32_t *order;	/* NULL: in turn */
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
			size_t k = r->order ? r->order[next] : next;

			pthread_mutex_lock(&r->mutex[k]);
			pthread_mutex_unlock(&r->mutex[k]);
			if (++next == r->n)
				next = 0;
		}
		ops += BATCH;
	}
	return ops;
}

/* 0..n-1 shuffled (Fisher-Yates), the same every run. */
static uint32_t *shuffled(size_t n)
{
	uint32_t *v = bench_alloc(sizeof(*v) * n);
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (size_t i = 0; i < n; i++)
		v[i] = (uint32_t)i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j;
		uint32_t tmp;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		j = (size_t)(x % (i + 1));
		tmp = v[i];
		v[i] = v[j];
		v[j] = tmp;
	}
	return v;
}

int main(int argc, char **argv)
{
	struct ring r = { 0 };
	double seconds, elapsed;
	uint64_t ops;

	bench_init(argc, argv);
	r.n = (size_t)bench_param("mutexes", 2000);
	seconds = bench_param("seconds", 1);
	if (r.n == 0)
		bench_fail("mutexes=0");
	if (bench_param("random", 0) != 0)
		r.order = shuffled(r.n);
	r.mutex = bench_alloc(sizeof(*r.mutex) * r.n);
	for (size_t i = 0; i < r.n; i++)
		pthread_mutex_init(&r.mutex[i], NULL);
	ops = bench_run(1, worker, &r, seconds, &elapsed);
	bench_result("ns_per_op", elapsed * 1e9 / (double)ops);
	return bench_finish();
}
