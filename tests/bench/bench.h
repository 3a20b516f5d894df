/*
 * What every bench program shares: NAME=VALUE parameters, workers run
 * together for a timed phase, and the "KEY VALUE" lines that the driver
 * (tests/bench/run) parses from the file named by -o: the measurement,
 * the peak RSS, and the CPU of the collector thread and of a qsptop parent.
 */
#ifndef BENCH_H
#define BENCH_H

#include <stdatomic.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* A worker of bench_run: loop until *stop; return the operations done. */
typedef uint64_t bench_worker(int index, void *arg, const atomic_bool *stop);

/* Parse -o FILE and NAME=VALUE arguments; write the "pid" line. */
void bench_init(int argc, char **argv);

/* The value of the NAME=VALUE argument, or def. */
double bench_param(const char *name, double def);

/* Start the timed phase; an argument no bench_param asked for is fatal. */
void bench_phase_begin(void);

/* End the timed phase; its length in seconds. */
double bench_phase_end(void);

/* Run n workers from one start for seconds; the sum of their operations. */
uint64_t bench_run(int n, bench_worker *fn, void *arg, double seconds,
		   double *elapsed_s);

/* Write one result line. */
void bench_result(const char *key, double value);

/* Write the phase, peak RSS and CPU lines, then "end"; returns 0 for main. */
int bench_finish(void);

/* Report on stderr and exit 1. */
void bench_fail(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));

/* size bytes, zeroed, or bench_fail. */
void *bench_alloc(size_t size);

/* Start a thread or bench_fail. */
void bench_thread(pthread_t *thread, void *(*fn)(void *), void *arg);

/* n steps of dependent arithmetic the compiler cannot drop. */
void bench_spin(unsigned n);

/* Monotonic time in nanoseconds. */
uint64_t bench_now_ns(void);

#endif
