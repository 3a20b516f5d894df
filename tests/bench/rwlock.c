/*
 * Scenario (off by default; an example of adding one): threads sharing a
 * read-mostly rwlock, one write in write_every acquisitions. Reports
 * acquisitions per second, all threads together.
 *   threads=4 write_every=100 seconds=1
 */
#include "bench.h"

#define BATCH 100

struct shared {
	pthread_rwlock_t lock;
	unsigned write_every;
};

static uint64_t worker(int index, void *arg, const atomic_bool *stop)
{
	struct shared *s = arg;
	uint64_t ops = 0, n = 0;

	(void)index;
	while (!atomic_load_explicit(stop, memory_order_relaxed)) {
		for (unsigned i = 0; i < BATCH; i++) {
			if (s->write_every && ++n % s->write_every == 0)
				pthread_rwlock_wrlock(&s->lock);
			else
				pthread_rwlock_rdlock(&s->lock);
			pthread_rwlock_unlock(&s->lock);
		}
		ops += BATCH;
	}
	return ops;
}

int main(int argc, char **argv)
{
	struct shared s = { .lock = PTHREAD_RWLOCK_INITIALIZER };
	double seconds, elapsed;
	int threads;
	uint64_t ops;

	bench_init(argc, argv);
	threads = (int)bench_param("threads", 4);
	s.write_every = (unsigned)bench_param("write_every", 100);
	seconds = bench_param("seconds", 1);
	ops = bench_run(threads, worker, &s, seconds, &elapsed);
	bench_result("ops_per_s", (double)ops / elapsed);
	return bench_finish();
}
