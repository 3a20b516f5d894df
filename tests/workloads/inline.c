/*
 * Lock calls inside static inline helpers, built -O2 as programs usually
 * are so the helpers are really inlined, for the inlined-site tests:
 *   hold()    locks on one line and is inlined into caller_a and caller_b
 *   nested()  inlines hold() and is itself inlined into caller_c
 * Each caller knows how often it locked; RESULT gets one "CALLER
 * ACQUISITIONS" line per caller. A holder thread has the lock when the
 * callers start, so caller_a's first call waits, and its wait has a stack.
 *
 *   wl_inline RESULT
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>

enum { A_CALLS = 30000, B_CALLS = 20000, C_CALLS = 10000 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile long counter;
static int held;

static inline void hold(void)
{
	pthread_mutex_lock(&lock); /* site:hold */
	counter++;
	pthread_mutex_unlock(&lock);
}

static inline void nested(void)
{
	hold(); /* site:nested */
	counter++;
}

static void __attribute__((noipa)) caller_a(long n)
{
	for (long i = 0; i < n; i++)
		hold(); /* site:caller_a */
}

static void __attribute__((noipa)) caller_b(long n)
{
	for (long i = 0; i < n; i++)
		hold(); /* site:caller_b */
}

static void __attribute__((noipa)) caller_c(long n)
{
	for (long i = 0; i < n; i++)
		nested(); /* site:caller_c */
}

/* Hold the lock for 50 ms, from before the callers start. */
static void *holder(void *arg)
{
	struct timespec hold_for = { 0, 50000000 };

	pthread_mutex_lock(&lock);
	__atomic_store_n(&held, 1, __ATOMIC_RELEASE);
	nanosleep(&hold_for, NULL);
	pthread_mutex_unlock(&lock);
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t t;
	FILE *result;

	if (argc != 2 || !(result = fopen(argv[1], "w")))
		return 2;
	if (pthread_create(&t, NULL, holder, NULL) != 0)
		return 1;
	while (!__atomic_load_n(&held, __ATOMIC_ACQUIRE))
		sched_yield();
	caller_a(A_CALLS);
	caller_b(B_CALLS);
	caller_c(C_CALLS);
	pthread_join(t, NULL);
	fprintf(result, "caller_a %d\ncaller_b %d\ncaller_c %d\n", A_CALLS,
		B_CALLS, C_CALLS);
	return fclose(result) != 0;
}
