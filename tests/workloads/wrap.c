/*
 * Locks taken through wrapper functions, for the wrapper tests. Every
 * caller knows how often it locks; RESULT gets one "SYMBOL ACQUISITIONS"
 * line per caller. The shapes:
 *   wc_lock()      one level: three callers, 120000, 60000 and 30000 times,
 *                  with waits behind a holder now and then
 *   outer_lock()   two levels (outer_lock -> inner_lock -> pthread)
 *   alloca_lock()  a wrapper whose frame size is known only at run time
 *   lib_lock()     a wrapper in a shared library (built with -DWRAP_LIB)
 *
 *   wl_wrap RESULT          once through, the callers taking turns, then
 *                           RESULT is written
 *   wl_wrap RESULT loop     a hundredth of each, over and over, until
 *                           SIGTERM (for qsptop -p)
 */
#include <alloca.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#ifdef WRAP_LIB

/* The wrapper of the shared library. */
void __attribute__((noinline)) lib_lock(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
}

#else

void lib_lock(pthread_mutex_t *m);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int sink;

static void __attribute__((noinline)) wc_lock(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
}

static void __attribute__((noinline)) inner_lock(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
}

static void __attribute__((noinline)) outer_lock(pthread_mutex_t *m)
{
	inner_lock(m);
	sink++;
}

/* A frame whose size depends on n: its unwind rule uses rbp. */
static void __attribute__((noinline)) alloca_lock(pthread_mutex_t *m, int n)
{
	char *scratch = alloca((size_t)n);

	memset(scratch, 0, (size_t)n);
	sink += scratch[0];
	pthread_mutex_lock(m);
}

#define CALLER(name, call)                                                 \
	static void __attribute__((noinline)) name(long n)                \
	{                                                                  \
		for (long i = 0; i < n; i++) {                             \
			call;                                              \
			pthread_mutex_unlock(&lock);                       \
		}                                                          \
	}

CALLER(caller_a, wc_lock(&lock))
CALLER(caller_b, wc_lock(&lock))
CALLER(caller_c, wc_lock(&lock))
CALLER(nested_a, outer_lock(&lock))
CALLER(nested_b, outer_lock(&lock))
CALLER(alloca_a, alloca_lock(&lock, 64 + (int)(i & 63)))
CALLER(library_a, lib_lock(&lock))

static volatile int holding = 1, held;

/*
 * Holds the lock a millisecond every few, so that callers wait too; the
 * first hold is long, and main starts the callers inside it, so that the
 * first caller waits at least once however the threads are scheduled.
 */
static void *holder(void *arg)
{
	struct timespec first = { 0, 50000000 }, ms = { 0, 1000000 },
			gap = { 0, 3000000 };

	pthread_mutex_lock(&lock);
	__atomic_store_n(&held, 1, __ATOMIC_RELEASE);
	nanosleep(&first, NULL);
	pthread_mutex_unlock(&lock);
	while (holding) {
		nanosleep(&gap, NULL);
		pthread_mutex_lock(&lock);
		nanosleep(&ms, NULL);
		pthread_mutex_unlock(&lock);
	}
	return arg;
}

static const struct {
	const char *name;
	void (*run)(long);
	long n;
} callers[] = {
	{ "caller_a", caller_a, 120000 }, { "caller_b", caller_b, 60000 },
	{ "caller_c", caller_c, 30000 }, { "nested_a", nested_a, 20000 },
	{ "nested_b", nested_b, 10000 }, { "alloca_a", alloca_a, 20000 },
	{ "library_a", library_a, 20000 },
};

static volatile sig_atomic_t ended;

static void on_term(int sig)
{
	(void)sig;
	ended = 1;
}

/* Every caller in turn, a hundredth of its share, until SIGTERM. */
static void loop(void)
{
	struct sigaction sa = { .sa_handler = on_term };

	sigaction(SIGTERM, &sa, NULL);
	while (!ended)
		for (size_t i = 0; i < sizeof(callers) / sizeof(callers[0]); i++)
			callers[i].run(callers[i].n / 100);
}

/*
 * Every caller's share, the callers taking turns in runs of 1 to 4 calls:
 * one wrapper is entered from each caller in a row and from another next.
 */
static void interleave(void)
{
	long left[sizeof(callers) / sizeof(callers[0])], step = 0;
	bool more = true;

	for (size_t i = 0; i < sizeof(callers) / sizeof(callers[0]); i++)
		left[i] = callers[i].n;
	while (more) {
		more = false;
		for (size_t i = 0; i < sizeof(callers) / sizeof(callers[0]); i++) {
			long run = 1 + step++ % 4;

			run = run < left[i] ? run : left[i];
			callers[i].run(run);
			left[i] -= run;
			more |= left[i] > 0;
		}
	}
}

int main(int argc, char **argv)
{
	pthread_t t;
	FILE *out;

	if (argc < 2)
		return 2;
	pthread_create(&t, NULL, holder, NULL);
	while (!__atomic_load_n(&held, __ATOMIC_ACQUIRE))
		sched_yield();
	if (argc > 2 && strcmp(argv[2], "loop") == 0)
		loop();
	else
		interleave();
	holding = 0;
	pthread_join(t, NULL);
	out = fopen(argv[1], "w");
	if (out == NULL)
		return 1;
	for (size_t i = 0; i < sizeof(callers) / sizeof(callers[0]); i++)
		fprintf(out, "%s %ld\n", callers[i].name, callers[i].n);
	fclose(out);
	return 0;
}

#endif
