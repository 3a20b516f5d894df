/*
 * Scenario: threads sharing one lock, with some work inside and outside
 * it (inside= and outside= are steps of bench_spin; about 1.1 ns each
 * here). Reports acquisitions per second, all threads together, and what
 * the work took per acquisition as measured before the timed phase.
 *   threads=4 inside=185 outside=185 seconds=1  (~200 ns each here)
 */
#include "bench.h"

#define BATCH 64
#define CALIBRATION_CALLS 20000

struct shared {
	pthread_mutex_t mutex;
	unsigned inside, outside;
};

static uint64_t worker(int index, void *arg, const atomic_bool *stop)
{
	struct shared *s = arg;
	uint64_t ops = 0;

	(void)index;
	while (!atomic_load_explicit(stop, memory_order_relaxed)) {
		for (int i = 0; i < BATCH; i++) {
			pthread_mutex_lock(&s->mutex);
			bench_spin(s->inside);
			pthread_mutex_unlock(&s->mutex);
			bench_spin(s->outside);
		}
		ops += BATCH;
	}
	return ops;
}

/* What bench_spin(steps) takes, in ns; for the record, not for sizing. */
static double spin_ns(unsigned steps)
{
	uint64_t t0 = bench_now_ns();

	for (int i = 0; i < CALIBRATION_CALLS; i++)
		bench_spin(steps);
	return (double)(bench_now_ns() - t0) / CALIBRATION_CALLS;
}

int main(int argc, char **argv)
{
	struct shared s = { .mutex = PTHREAD_MUTEX_INITIALIZER };
	double seconds, elapsed;
	int threads;
	uint64_t ops;

	bench_init(argc, argv);
	threads = (int)bench_param("threads", 4);
	s.inside = (unsigned)bench_param("inside", 185);
	s.outside = (unsigned)bench_param("outside", 185);
	seconds = bench_param("seconds", 1);
	bench_result("inside_ns", spin_ns(s.inside));
	bench_result("outside_ns", spin_ns(s.outside));
	ops = bench_run(threads, worker, &s, seconds, &elapsed);
	bench_result("ops_per_s", (double)ops / elapsed);
	return bench_finish();
}
