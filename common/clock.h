/* The one clock of qsptop: monotonic nanoseconds, collector and front end. */
#ifndef QSPTOP_CLOCK_H
#define QSPTOP_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t clock_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC in milliseconds, for deadlines and sampling periods. */
static inline int64_t clock_now_ms(void)
{
	return (int64_t)(clock_now_ns() / 1000000u);
}

/* CLOCK_REALTIME in nanoseconds. */
static inline uint64_t clock_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
