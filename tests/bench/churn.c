/*
 * Scenario: short-lived threads. Waves of at_once threads are created and
 * joined until threads have run; each takes one shared lock once.
 * Reports the total time.
 *   threads=50000 at_once=16
 */
#include "bench.h"

static pthread_mutex_t shared = PTHREAD_MUTEX_INITIALIZER;
static long taken;

static void *once(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&shared);
	taken++;
	pthread_mutex_unlock(&shared);
	return NULL;
}

int main(int argc, char **argv)
{
	long threads, at_once, started = 0;
	pthread_t *wave;

	bench_init(argc, argv);
	threads = (long)bench_param("threads", 50000);
	at_once = (long)bench_param("at_once", 16);
	if (at_once < 1)
		bench_fail("at_once must be at least 1");
	wave = bench_alloc(sizeof(*wave) * (size_t)at_once);
	bench_phase_begin();
	while (started < threads) {
		long n = threads - started < at_once ? threads - started : at_once;

		for (long i = 0; i < n; i++)
			bench_thread(&wave[i], once, NULL);
		for (long i = 0; i < n; i++)
			pthread_join(wave[i], NULL);
		started += n;
	}
	bench_result("elapsed_s", bench_phase_end());
	if (taken != threads)
		bench_fail("%ld threads took the lock, expected %ld", taken, threads);
	return bench_finish();
}
