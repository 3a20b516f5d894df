/*
 * Time and steps for the workloads whose scenes are timed (blame.c,
 * prims.c): a monotonic clock, sleeping and spinning for microseconds,
 * and flags one thread steps and another waits for.
 */
#ifndef QSPTOP_SCENE_H
#define QSPTOP_SCENE_H

#include <stdint.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static inline void sleep_us(long us)
{
	struct timespec t = { us / 1000000, (us % 1000000) * 1000 };

	while (nanosleep(&t, &t) != 0)
		;
}

/* Keep the CPU busy for us microseconds. */
static inline void spin_us(long us)
{
	uint64_t until = now_ns() + (uint64_t)us * 1000u;

	while (now_ns() < until)
		;
}

/* Wait until *flag reaches value. */
static inline void wait_for(int *flag, int value)
{
	while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) < value)
		sleep_us(100);
}

static inline void step(int *flag)
{
	__atomic_add_fetch(flag, 1, __ATOMIC_RELEASE);
}

#endif
