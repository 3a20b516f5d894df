/*
 * Scenario: a hundred thousand rows of which only a few change. Every
 * mutex is taken once before the timed phase (warmup seconds before it),
 * so qsptop knows all the rows; in the phase one thread takes only the
 * first `changing` of them in turn, over and over. What a refresh costs
 * then should follow the rows that change and the rows shown, not the
 * rows known. Reports lock+unlock pairs per second.
 *   mutexes=100000 changing=100 seconds=5 warmup=1
 */
#include <time.h>

#include "bench.h"

#define BATCH 256

struct quiet {
	pthread_mutex_t *mutex;
	size_t changing;
};

/* One lock+unlock, at the call site of every row of the scenario. */
static void __attribute__((noinline)) lock_pair(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
	pthread_mutex_unlock(m);
}

static uint64_t worker(int index, void *arg, const atomic_bool *stop)
{
	struct quiet *q = arg;
	uint64_t ops = 0;
	size_t next = 0;

	(void)index;
	while (!atomic_load_explicit(stop, memory_order_relaxed)) {
		for (int i = 0; i < BATCH; i++) {
			lock_pair(&q->mutex[next]);
			if (++next == q->changing)
				next = 0;
		}
		ops += BATCH;
	}
	return ops;
}

int main(int argc, char **argv)
{
	struct quiet q;
	double seconds, warmup, elapsed;
	size_t total;
	uint64_t ops;

	bench_init(argc, argv);
	total = (size_t)bench_param("mutexes", 100000);
	q.changing = (size_t)bench_param("changing", 100);
	seconds = bench_param("seconds", 5);
	warmup = bench_param("warmup", 1);
	if (q.changing < 1 || q.changing > total)
		bench_fail("changing must be 1 to mutexes");
	q.mutex = bench_alloc(sizeof(*q.mutex) * total);
	for (size_t i = 0; i < total; i++)
		pthread_mutex_init(&q.mutex[i], NULL);
	for (size_t i = 0; i < total; i++)
		lock_pair(&q.mutex[i]);
	nanosleep(&(struct timespec){ (time_t)warmup,
				      (long)((warmup - (long)warmup) * 1e9) },
		  NULL);
	ops = bench_run(1, worker, &q, seconds, &elapsed);
	bench_result("ops_per_s", (double)ops / elapsed);
	return bench_finish();
}
