/*
 * Lock wrappers qsptop must find without being told (test_autowrap), run
 * stripped: the wrappers are static, so nothing names them; the callers
 * are exported (-rdynamic), so the rows still say whose they are.
 *   one_lock()     one level: called by caller_a, caller_b, caller_c and
 *                  two_lock
 *   two_lock()     two levels (two_lock -> one_lock -> pthread), called by
 *                  caller_d, caller_e, caller_f
 *   long_work()    not a wrapper: over 512 bytes of work around the lock it
 *                  takes, though caller_g, caller_h, caller_i call it
 *   single_lock()  not a wrapper: short, but only caller_j calls it
 *   short_work()   not a wrapper: short, called by caller_k, caller_l and
 *                  caller_m, but it also unlocks (it locks twice)
 *   outer_lock()   called by caller_n and caller_o, locks through
 *                  helper_lock(): its only caller, so that helper_lock is
 *                  a wrapper's part only once outer_lock is named
 *
 *   wl_autowrap GO RESULT   every caller in a thread of its own takes the
 *                           lock `warm` over and over, so that they wait
 *                           and show their stacks, until the file GO
 *                           exists; then each takes `exact` exactly its
 *                           count of times, and RESULT gets one "CALLER
 *                           COUNT" line per caller, then "exact 0xADDR"
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t warm = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t exact = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long sink;
static volatile int go;

static void __attribute__((noinline)) one_lock(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
	sink++;
}

static void __attribute__((noinline)) two_lock(pthread_mutex_t *m)
{
	one_lock(m);
	sink++;
}

#define WORK4 sink = sink * 31 + 7; sink ^= sink >> 3; sink += 11; sink *= 5;
#define WORK16 WORK4 WORK4 WORK4 WORK4

/* Its lock protects work of its own: a function too long to be a wrapper. */
static void __attribute__((noinline)) long_work(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
	WORK16 WORK16 WORK16
	pthread_mutex_unlock(m);
	WORK16
	pthread_mutex_lock(m);
}

static void __attribute__((noinline)) single_lock(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
	sink++;
}

static void __attribute__((noinline)) short_work(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
	sink++;
	pthread_mutex_unlock(m);
	pthread_mutex_lock(m);
}

static void __attribute__((noinline)) helper_lock(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
	sink++;
}

static void __attribute__((noinline)) outer_lock(pthread_mutex_t *m)
{
	helper_lock(m);
	sink++;
}

#define CALLER(name, call)                                               \
	void __attribute__((noinline)) name(pthread_mutex_t *m, long n); \
	void __attribute__((noinline)) name(pthread_mutex_t *m, long n) \
	{                                                                \
		for (long i = 0; i < n; i++) {                           \
			call(m);                                         \
			for (int k = 0; k < 50; k++)                     \
				sink++;                                  \
			pthread_mutex_unlock(m);                         \
		}                                                        \
	}

CALLER(caller_a, one_lock)
CALLER(caller_b, one_lock)
CALLER(caller_c, one_lock)
CALLER(caller_d, two_lock)
CALLER(caller_e, two_lock)
CALLER(caller_f, two_lock)
CALLER(caller_g, long_work)
CALLER(caller_h, long_work)
CALLER(caller_i, long_work)
CALLER(caller_j, single_lock)
CALLER(caller_k, short_work)
CALLER(caller_l, short_work)
CALLER(caller_m, short_work)
CALLER(caller_n, outer_lock)
CALLER(caller_o, outer_lock)

static const struct {
	const char *name;
	void (*run)(pthread_mutex_t *, long);
	long n;
} callers[] = {
	{ "caller_a", caller_a, 3000 }, { "caller_b", caller_b, 2000 },
	{ "caller_c", caller_c, 1000 }, { "caller_d", caller_d, 1500 },
	{ "caller_e", caller_e, 2500 }, { "caller_f", caller_f, 3500 },
	{ "caller_g", caller_g, 1200 }, { "caller_h", caller_h, 1300 },
	{ "caller_i", caller_i, 1400 }, { "caller_j", caller_j, 1700 },
	{ "caller_k", caller_k, 1100 }, { "caller_l", caller_l, 1200 },
	{ "caller_m", caller_m, 1300 }, { "caller_n", caller_n, 900 },
	{ "caller_o", caller_o, 800 },
};

#define NCALLERS (sizeof(callers) / sizeof(callers[0]))

static const char *go_path;

/* One caller: waits on `warm` until GO exists, then its exact count. */
static void *worker(void *arg)
{
	size_t i = (size_t)(uintptr_t)arg;
	struct timespec pause = { 0, 50000 };

	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE)) {
		callers[i].run(&warm, 16);
		nanosleep(&pause, NULL);
		if (i == 0 && access(go_path, F_OK) == 0)
			__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	}
	callers[i].run(&exact, callers[i].n);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[NCALLERS];
	FILE *out;

	if (argc < 3)
		return 2;
	go_path = argv[1];
	for (size_t i = 0; i < NCALLERS; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
	for (size_t i = 0; i < NCALLERS; i++)
		pthread_join(t[i], NULL);
	out = fopen(argv[2], "w");
	if (out == NULL)
		return 1;
	for (size_t i = 0; i < NCALLERS; i++)
		fprintf(out, "%s %ld\n", callers[i].name, callers[i].n);
	fprintf(out, "exact %p\n", (void *)&exact);
	fclose(out);
	return 0;
}
