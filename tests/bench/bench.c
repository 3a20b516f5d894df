/*
 * The bench programs' common part. Every timed loop runs on threads that
 * the program creates, so a bare process is multi-threaded like a watched
 * one (glibc's single-threaded lock path is about 3x faster, and that
 * difference is not the collector's). The CPU of the collector thread
 * (named "qsptop") and of a qsptop parent is read from /proc at both ends
 * of the timed phase.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define MAX_PARAMS 32

static FILE *out;
static struct {
	const char *name;	/* NAME=VALUE as given; name ends at '=' */
	int used;
} params[MAX_PARAMS];
static int nparams;

static uint64_t phase_start, phase_end;
static int64_t collector_start = -1, collector_end = -1;
static int64_t parent_start = -1, parent_end = -1;

void bench_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void *bench_alloc(size_t size)
{
	void *p = calloc(1, size);

	if (p == NULL)
		bench_fail("out of memory (%zu bytes)", size);
	return p;
}

void bench_thread(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	int rc = pthread_create(thread, NULL, fn, arg);

	if (rc != 0)
		bench_fail("pthread_create: %s", strerror(rc));
}

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bench_spin(unsigned n)
{
	uint64_t x = n;

	for (unsigned i = 0; i < n; i++)
		x = x * 6364136223846793005u + 1442695040888963407u;
	__asm__ volatile("" : : "r"(x));
}

void bench_result(const char *key, double value)
{
	fprintf(out, "%s %.6g\n", key, value);
	fflush(out);
}

void bench_init(int argc, char **argv)
{
	out = stdout;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
			out = fopen(argv[++i], "w");
			if (out == NULL)
				bench_fail("%s: %s", argv[i], strerror(errno));
		} else if (strchr(argv[i], '=') && nparams < MAX_PARAMS) {
			params[nparams++].name = argv[i];
		} else {
			bench_fail("usage: %s [-o FILE] [NAME=VALUE...]", argv[0]);
		}
	}
	fprintf(out, "pid %d\n", (int)getpid());
	fflush(out);
}

double bench_param(const char *name, double def)
{
	size_t len = strlen(name);

	for (int i = 0; i < nparams; i++) {
		if (strncmp(params[i].name, name, len) == 0 &&
		    params[i].name[len] == '=') {
			char *end;
			double v = strtod(params[i].name + len + 1, &end);

			if (*end != '\0')
				bench_fail("%s: not a number", params[i].name);
			params[i].used = 1;
			return v;
		}
	}
	return def;
}

/* The first line of a small file, without its newline; "" if unreadable. */
static void read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (f == NULL)
		return;
	if (fgets(buf, (int)size, f) == NULL)
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/*
 * CPU time of the task in dir (/proc/P/task/T), in ns: schedstat's run
 * time when the kernel has it, else utime+stime in clock ticks.
 */
static int64_t task_cpu_ns(const char *dir)
{
	char path[600], line[1024], *p;
	unsigned long long run, utime, stime;

	snprintf(path, sizeof(path), "%s/schedstat", dir);
	read_line(path, line, sizeof(line));
	if (sscanf(line, "%llu", &run) == 1)
		return (int64_t)run;
	snprintf(path, sizeof(path), "%s/stat", dir);
	read_line(path, line, sizeof(line));
	p = strrchr(line, ')');
	if (p == NULL || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u "
				"%*u %*u %llu %llu", &utime, &stime) != 2)
		return -1;
	return (int64_t)((utime + stime) * (1000000000u / sysconf(_SC_CLK_TCK)));
}

/* CPU of the tasks of process pid named comm (all of them if NULL); -1 if none. */
static int64_t process_cpu_ns(int pid, const char *comm)
{
	char dir[64], task[512], name[64];
	int64_t sum = -1, t;
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
	d = opendir(dir);
	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(task, sizeof(task), "%s/%s", dir, e->d_name);
		if (comm) {
			char path[600];

			snprintf(path, sizeof(path), "%s/comm", task);
			read_line(path, name, sizeof(name));
			if (strcmp(name, comm) != 0)
				continue;
		}
		t = task_cpu_ns(task);
		if (t >= 0)
			sum = (sum < 0 ? 0 : sum) + t;
	}
	closedir(d);
	return sum;
}

/* CPU of the process that launched us if it is qsptop; -1 otherwise. */
static int64_t parent_cpu_ns(void)
{
	char path[64], name[64];
	int ppid = (int)getppid();

	snprintf(path, sizeof(path), "/proc/%d/comm", ppid);
	read_line(path, name, sizeof(name));
	return strcmp(name, "qsptop") == 0 ? process_cpu_ns(ppid, NULL) : -1;
}

void bench_phase_begin(void)
{
	for (int i = 0; i < nparams; i++) {
		if (!params[i].used)
			bench_fail("unknown parameter %s", params[i].name);
	}
	phase_start = bench_now_ns();
	collector_start = process_cpu_ns((int)getpid(), "qsptop");
	parent_start = parent_cpu_ns();
}

double bench_phase_end(void)
{
	phase_end = bench_now_ns();
	collector_end = process_cpu_ns((int)getpid(), "qsptop");
	parent_end = parent_cpu_ns();
	return (double)(phase_end - phase_start) / 1e9;
}

struct run {
	bench_worker *fn;
	void *arg;
	pthread_barrier_t start;
	atomic_bool stop;
};

/* One worker: its run and its index; ops is what it reports. */
struct slot {
	struct run *run;
	int index;
	uint64_t ops;
};

static void *run_worker(void *p)
{
	struct slot *s = p;
	struct run *r = s->run;

	pthread_barrier_wait(&r->start);
	s->ops = r->fn(s->index, r->arg, &r->stop);
	return NULL;
}

uint64_t bench_run(int n, bench_worker *fn, void *arg, double seconds,
		   double *elapsed_s)
{
	struct run r = { .fn = fn, .arg = arg };
	pthread_t *t = bench_alloc(sizeof(*t) * (size_t)n);
	struct slot *s = bench_alloc(sizeof(*s) * (size_t)n);
	struct timespec ts = { (time_t)seconds,
			       (long)((seconds - (time_t)seconds) * 1e9) };
	uint64_t sum = 0;

	pthread_barrier_init(&r.start, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++) {
		s[i] = (struct slot){ .run = &r, .index = i };
		bench_thread(&t[i], run_worker, &s[i]);
	}
	pthread_barrier_wait(&r.start);
	bench_phase_begin();
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	atomic_store(&r.stop, 1);
	for (int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		sum += s[i].ops;
	}
	*elapsed_s = bench_phase_end();
	pthread_barrier_destroy(&r.start);
	free(s);
	free(t);
	return sum;
}

/* Peak resident set size in KiB, from /proc/self/status; -1 if absent. */
static long vm_hwm_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
			break;
	}
	fclose(f);
	return kib;
}

int bench_finish(void)
{
	double phase_s = (double)(phase_end - phase_start) / 1e9;
	int64_t total = process_cpu_ns((int)getpid(), "qsptop");

	bench_result("phase_s", phase_s);
	bench_result("vmhwm_kib", (double)vm_hwm_kib());
	if (collector_end >= 0 && phase_s > 0) {
		int64_t used = collector_end - (collector_start < 0 ? 0 : collector_start);

		bench_result("collector_cpu_pct", (double)used / 1e7 / phase_s);
	}
	if (total >= 0)
		bench_result("collector_cpu_ms", (double)total / 1e6);
	if (parent_start >= 0 && parent_end >= 0)
		bench_result("qsptop_cpu_ms", (double)(parent_end - parent_start) / 1e6);
	fprintf(out, "end\n");
	if (fclose(out) != 0)
		bench_fail("cannot write the results: %s", strerror(errno));
	return 0;
}
