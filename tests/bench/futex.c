/*
 * Scenario: an uncontended futex lock, as InnoDB's and Rust's are made: a
 * compare-and-swap to lock, an exchange to unlock, syscall(SYS_futex) only
 * to sleep or to wake a sleeper. Each thread takes and releases its own
 * lock in a loop, so syscall() is never called: the collector's hook of
 * it must cost nothing here. Reports ns per lock+unlock pair, per thread.
 *   threads=2 seconds=1
 */
#include <linux/futex.h>
#include <stdalign.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench.h"

#define BATCH 256

/* 0: free; 1: held; 2: held with sleepers. One per cache line. */
struct own_lock {
	alignas(64) atomic_int word;
};

static __attribute__((noinline)) void fl_lock(atomic_int *w)
{
	int c = 0;

	if (atomic_compare_exchange_strong(w, &c, 1))
		return;
	if (c != 2)
		c = atomic_exchange(w, 2);
	while (c != 0) {
		syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
		c = atomic_exchange(w, 2);
	}
}

static __attribute__((noinline)) void fl_unlock(atomic_int *w)
{
	if (atomic_exchange(w, 0) == 2)
		syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static uint64_t worker(int index, void *arg, const atomic_bool *stop)
{
	atomic_int *w = &((struct own_lock *)arg)[index].word;
	uint64_t ops = 0;

	while (!atomic_load_explicit(stop, memory_order_relaxed)) {
		for (int i = 0; i < BATCH; i++) {
			fl_lock(w);
			fl_unlock(w);
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
	locks = aligned_alloc(64, sizeof(*locks) * (size_t)threads);
	if (locks == NULL)
		bench_fail("out of memory");
	for (int i = 0; i < threads; i++)
		atomic_init(&locks[i].word, 0);
	ops = bench_run(threads, worker, locks, seconds, &elapsed);
	bench_result("ns_per_op", elapsed * 1e9 * threads / (double)ops);
	return bench_finish();
}
