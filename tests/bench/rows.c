/*
 * Scenario: a hundred thousand rows that all change every interval, or
 * of which only a few do. Each thread takes its own mutexes in turn, over
 * and over, from one call site: all of them, or only its first
 * `changing`. Every mutex is taken once before the timed phase, which
 * starts warmup seconds later: the phase measures rows that exist and
 * change, not their creation (the collector's CPU for that is in
 * collector_cpu_ms). With few changing, what a refresh costs should
 * follow the rows that change and the rows shown, not the rows known.
 * Reports lock+unlock pairs per second, all threads together.
 *   threads=4 mutexes=25000 (per thread) changing=mutexes seconds=5
 *   warmup=1
 */
#include <time.h>

#include "bench.h"

#define BATCH 256

struct rows {
	pthread_mutex_t *mutex;
	size_t per_thread;
	size_t changing;	/* of each thread's, taken in the phase */
};

/* One lock+unlock, at the call site of every row of the scenario. */
static void __attribute__((noinline)) lock_pair(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
	pthread_mutex_unlock(m);
}

static uint64_t worker(int index, void *arg, const atomic_bool *stop)
{
	struct rows *r = arg;
	pthread_mutex_t *own = r->mutex + (size_t)index * r->per_thread;
	uint64_t ops = 0;
	size_t next = 0;

	while (!atomic_load_explicit(stop, memory_order_relaxed)) {
		for (int i = 0; i < BATCH; i++) {
			lock_pair(&own[next]);
			if (++next == r->changing)
				next = 0;
		}
		ops += BATCH;
	}
	return ops;
}

int main(int argc, char **argv)
{
	struct rows r;
	double seconds, warmup, elapsed;
	size_t total;
	int threads;
	uint64_t ops;

	bench_init(argc, argv);
	threads = (int)bench_param("threads", 4);
	r.per_thread = (size_t)bench_param("mutexes", 25000);
	seconds = bench_param("seconds", 5);
	warmup = bench_param("warmup", 1);
	r.changing = (size_t)bench_param("changing", (double)r.per_thread);
	if (threads < 1 || r.per_thread < 1)
		bench_fail("threads and mutexes must be at least 1");
	if (r.changing < 1 || r.changing > r.per_thread)
		bench_fail("changing must be 1 to mutexes");
	total = (size_t)threads * r.per_thread;
	r.mutex = bench_alloc(sizeof(*r.mutex) * total);
	for (size_t i = 0; i < total; i++)
		pthread_mutex_init(&r.mutex[i], NULL);
	for (size_t i = 0; i < total; i++)
		lock_pair(&r.mutex[i]);
	nanosleep(&(struct timespec){ (time_t)warmup,
				      (long)((warmup - (long)warmup) * 1e9) },
		  NULL);
	ops = bench_run(threads, worker, &r, seconds, &elapsed);
	bench_result("ops_per_s", (double)ops / elapsed);
	return bench_finish();
}
