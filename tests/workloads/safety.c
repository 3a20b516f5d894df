/*
 * Hosts that try to get hurt, for the safety tests: each mode reproduces a
 * way a collector inside someone else's process could hang it, corrupt it
 * or change what it sees, and writes what it observed to RESULT.
 *
 *   wl_safety einval RESULT      every lock call glibc refuses with EINVAL:
 *                                one "call rc lock-state" line each
 *   wl_safety forks N RESULT     N children fork, walk the modules, dlopen
 *                                and exit, while the collector walks them
 *                                too: "hung K of N"
 *   wl_safety children N RESULT  N children lock, then half _exit, half exec:
 *                                "child PID I" for each, then "done N"
 *   wl_safety cancel N RESULT    N threads cancelled in pthread_cond_wait
 *   wl_safety keys RESULT        40 pthread keys and a malloc of its own,
 *                                guarded by a pthread mutex; on SIGUSR1,
 *                                threads that lock, unwind, allocate: "ok"
 *   wl_safety fdsteal RESULT     on SIGUSR1, replaces every descriptor it
 *                                did not open with its own socket and
 *                                checks that nobody else reads or writes
 *                                it: "foreign N eaten N"
 *
 * Modes that wait for SIGUSR1 write "ready" to RESULT first.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *result_path;
static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

static void say(const char *fmt, long a, long b)
{
	FILE *f = fopen(result_path, "a");

	if (f) {
		fprintf(f, fmt, a, b);
		fclose(f);
	}
}

static void wait_for_go(void)
{
	say("ready\n", 0, 0);
	while (!go)
		usleep(10000);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* --- einval: glibc's answer to bad arguments, and the lock left as is --- */

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

/* "held" when another thread cannot take m (or rw for writing), else "free". */
static void *probe(void *arg)
{
	int rc = arg ? pthread_rwlock_trywrlock(&rw) : pthread_mutex_trylock(&m);

	if (rc == 0) {
		if (arg)
			pthread_rwlock_unlock(&rw);
		else
			pthread_mutex_unlock(&m);
	}
	return (void *)(long)(rc == 0 ? 0 : 1);
}

static const char *state(int rwlock)
{
	pthread_t t;
	void *held;

	pthread_create(&t, NULL, probe, rwlock ? (void *)1 : NULL);
	pthread_join(t, &held);
	return held ? "held" : "free";
}

static void report(const char *call, int rc, int rwlock)
{
	FILE *f = fopen(result_path, "a");
	const char *st = state(rwlock);

	if (f) {
		fprintf(f, "%s %d %s\n", call, rc, st);
		fclose(f);
	}
	if (strcmp(st, "held") == 0) {
		if (rwlock)
			pthread_rwlock_unlock(&rw);
		else
			pthread_mutex_unlock(&m);
	}
}

static void mode_einval(void)
{
	struct timespec bad = { 1, 1000000000L }, neg = { 1, -1 };
	struct timespec ok;

	clock_gettime(CLOCK_REALTIME, &ok);
	ok.tv_sec += 1;
	report("mutex_clocklock_cpuclock", pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &ok), 0);
	report("mutex_clocklock_badnsec", pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &bad), 0);
	report("mutex_timedlock_badnsec", pthread_mutex_timedlock(&m, &bad), 0);
	report("mutex_timedlock_negnsec", pthread_mutex_timedlock(&m, &neg), 0);
	report("rwlock_timedrdlock_badnsec", pthread_rwlock_timedrdlock(&rw, &bad), 1);
	report("rwlock_timedwrlock_badnsec", pthread_rwlock_timedwrlock(&rw, &bad), 1);
	report("rwlock_clockrdlock_cpuclock", pthread_rwlock_clockrdlock(&rw, CLOCK_PROCESS_CPUTIME_ID, &ok), 1);
	report("rwlock_clockwrlock_cpuclock", pthread_rwlock_clockwrlock(&rw, CLOCK_THREAD_CPUTIME_ID, &ok), 1);
	report("rwlock_clockrdlock_badnsec", pthread_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC, &bad), 1);
	report("rwlock_clockwrlock_negnsec", pthread_rwlock_clockwrlock(&rw, CLOCK_REALTIME, &neg), 1);
	pthread_mutex_lock(&m);
	{
		pthread_cond_t c = PTHREAD_COND_INITIALIZER;

		report("cond_clockwait_cpuclock", pthread_cond_clockwait(&c, &m, CLOCK_PROCESS_CPUTIME_ID, &ok), 0);
		pthread_mutex_lock(&m);
		report("cond_timedwait_badnsec", pthread_cond_timedwait(&c, &m, &bad), 0);
	}
	{
		pthread_mutexattr_t a;
		pthread_mutex_t ec;

		pthread_mutexattr_init(&a);
		pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
		pthread_mutex_init(&ec, &a);
		pthread_mutex_lock(&ec);
		say("errorcheck_relock %ld x%ld\n", pthread_mutex_lock(&ec), 0);
		say("errorcheck_timedrelock %ld x%ld\n", pthread_mutex_timedlock(&ec, &ok), 0);
		pthread_mutex_unlock(&ec);
	}
	say("done %ld %ld\n", 0, 0);
}

/* --- forks: fork while the collector walks the loader's list --- */

static int count_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	(*(int *)arg)++;
	return 0;
}

/* A child's work: walk the modules, dlopen, lock, exit. */
static void child_of_fork(void)
{
	int n = 0;
	void *h;

	dl_iterate_phdr(count_module, &n);
	h = dlopen("libm.so.6", RTLD_NOW);
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	_exit(h && n > 0 ? 0 : 3);
}

/* Wait for pid at most ms; kill it if it hangs. Returns 1 if it hung. */
static int reap_or_kill(pid_t pid, long ms)
{
	long end = now_ms() + ms;
	int status;

	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return 1;
		}
		usleep(1000);
	}
	return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void mode_forks(long n)
{
	long hung = 0;

	for (long i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid == 0)
			child_of_fork();
		hung += reap_or_kill(pid, 2000);
		usleep(1000);
	}
	say("hung %ld of %ld\n", hung, n);
}

/* --- children: they lock, then _exit or exec --- */

static void mode_children(long n)
{
	for (long i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			pthread_mutex_lock(&m);
			pthread_mutex_unlock(&m);
			usleep(50000);
			if (i % 2)
				execl("/bin/true", "true", (char *)NULL);
			_exit(0);
		}
		reap_or_kill(pid, 5000);
		say("child %ld %ld\n", pid, i);
	}
	say("done %ld %ld\n", n, 0);
}

/* --- cancel: threads cancelled while waiting on a condvar --- */

static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static long waiting;

static void unlock_on_cancel(void *arg)
{
	pthread_mutex_unlock(arg);
}

static void *wait_forever(void *arg)
{
	pthread_mutex_lock(&m);
	pthread_cleanup_push(unlock_on_cancel, &m);
	waiting++;
	for (;;)
		pthread_cond_wait(&never, &m); /* site:cancelled */
	pthread_cleanup_pop(1);
	return arg;
}

static void mode_cancel(long n)
{
	pthread_t *t = calloc((size_t)n, sizeof(*t));

	for (long i = 0; i < n; i++)
		pthread_create(&t[i], NULL, wait_forever, NULL);
	for (;;) {
		pthread_mutex_lock(&m);
		if (waiting == n) {
			pthread_mutex_unlock(&m);
			break;
		}
		pthread_mutex_unlock(&m);
		usleep(1000);
	}
	usleep(50000);
	for (long i = 0; i < n; i++)
		pthread_cancel(t[i]);
	for (long i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	free(t);
	say("cancelled %ld %ld\n", n, 0);
}

/*
 * --- keys: a host with many pthread keys and an allocator of its own
 * whose every call takes a pthread mutex (as jemalloc's do), its slow path
 * a second one that another thread holds for long stretches ---
 */

#define HEAP_SIZE (256u << 20)
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
static int own_heap;		/* the keys mode's allocator is in use */
static pthread_mutex_t heap_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t refill_lock = PTHREAD_MUTEX_INITIALIZER;
static char *heap;
static size_t heap_used, heap_refills;

static void *heap_take(size_t size)
{
	void *p;

	if (heap == NULL) {
		heap = mmap(NULL, HEAP_SIZE, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (heap == MAP_FAILED)
			abort();
	}
	pthread_mutex_lock(&heap_lock);
	if (heap_used / (1u << 20) != heap_refills) {
		/* The slow path: a lock another thread may hold a while. */
		pthread_mutex_lock(&refill_lock);
		heap_refills = heap_used / (1u << 20);
		pthread_mutex_unlock(&refill_lock);
	}
	size = (size + 15) & ~(size_t)15;
	if (heap_used + size + 16 > HEAP_SIZE)
		abort();
	p = heap + heap_used + 16;
	((size_t *)p)[-1] = size;
	heap_used += size + 16;
	pthread_mutex_unlock(&heap_lock);
	return p;
}

static int in_heap(const void *p)
{
	return heap && (const char *)p >= heap && (const char *)p < heap + HEAP_SIZE;
}

void *malloc(size_t size)
{
	return own_heap ? heap_take(size) : __libc_malloc(size);
}

void free(void *p)
{
	if (p && !in_heap(p))
		__libc_free(p);
}

void *calloc(size_t n, size_t size)
{
	/* Fresh mmap'ed memory is zero. */
	return own_heap ? heap_take(n * size) : __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	void *q;

	if (!own_heap && !in_heap(p))
		return __libc_realloc(p, size);
	q = heap_take(size);
	if (p && in_heap(p))
		memcpy(q, p, ((size_t *)p)[-1] < size ? ((size_t *)p)[-1] : size);
	else if (p)
		memcpy(q, p, malloc_usable_size(p) < size ? malloc_usable_size(p) : size);
	return q;
}

static pthread_mutex_t contended = PTHREAD_MUTEX_INITIALIZER;

/* Holds the allocator's slow-path lock for long stretches. */
static void *refill_holder(void *arg)
{
	for (int i = 0; i < 40; i++) {
		pthread_mutex_lock(&refill_lock);
		usleep(20000);
		pthread_mutex_unlock(&refill_lock);
		usleep(5000);
	}
	return arg;
}

/* A new thread: contended locks (stacks captured) and allocations. */
static void *key_worker(void *arg)
{
	for (int i = 0; i < 200; i++) {
		pthread_mutex_lock(&contended);
		free(malloc(4096));
		usleep(100);
		pthread_mutex_unlock(&contended);
	}
	return arg;
}

static void mode_keys(void)
{
	pthread_key_t keys[40];
	pthread_t holder, t[8];

	own_heap = 1;
	for (int i = 0; i < 40; i++)
		pthread_key_create(&keys[i], NULL);
	wait_for_go();
	pthread_create(&holder, NULL, refill_holder, NULL);
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < 8; i++)
			pthread_create(&t[i], NULL, key_worker, NULL);
		for (int i = 0; i < 8; i++)
			pthread_join(t[i], NULL);
	}
	pthread_join(holder, NULL);
	say("ok %ld %ld\n", 0, 0);
}

/*
 * --- fdsteal: a host that closes and reuses every descriptor it did not
 * open, as daemons do, while the collector is talking ---
 */

/* Whether fd is one of ours: stdio, the pair, or the directory listing. */
static int ours(int fd, const int *pair, int dirfd)
{
	return fd <= 2 || fd == pair[0] || fd == pair[1] || fd == dirfd;
}

/* Put our socket at every other descriptor; returns how many. */
static int take_over(const int *pair, int *taken, int max)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)) != NULL && n < max) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] == '.' || ours(fd, pair, dirfd(d)))
			continue;
		if (dup2(pair[1], fd) == fd)
			taken[n++] = fd;
	}
	if (d)
		closedir(d);
	return n;
}

static void mode_fdsteal(void)
{
	int pair[2], taken[64];
	long foreign = 0, eaten = 0, rounds = 0;
	char buf[4096];

	socketpair(AF_UNIX, SOCK_STREAM, 0, pair);
	wait_for_go();
	for (long end = now_ms() + 2000; now_ms() < end; rounds++) {
		int n = take_over(pair, taken, 64);
		ssize_t got;

		/* Whatever arrives on pair[0] was written by someone else. */
		while ((got = recv(pair[0], buf, sizeof(buf), MSG_DONTWAIT)) > 0)
			foreign += got;
		/* What we send to pair[1]'s peer must all come back. */
		if (send(pair[0], "marker", 6, 0) == 6) {
			usleep(20000);
			got = recv(pair[1], buf, sizeof(buf), MSG_DONTWAIT);
			eaten += 6 - (got > 0 ? got : 0);
		}
		for (int i = 0; i < n; i++)
			close(taken[i]);
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	}
	say("foreign %ld eaten %ld\n", foreign, eaten);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_usr1 };

	if (argc < 3) {
		fprintf(stderr, "usage: wl_safety MODE [N] RESULT\n");
		return 2;
	}
	result_path = argv[argc - 1];
	sigaction(SIGUSR1, &sa, NULL);
	if (strcmp(argv[1], "einval") == 0)
		mode_einval();
	else if (strcmp(argv[1], "forks") == 0)
		mode_forks(atol(argv[2]));
	else if (strcmp(argv[1], "children") == 0)
		mode_children(atol(argv[2]));
	else if (strcmp(argv[1], "cancel") == 0)
		mode_cancel(atol(argv[2]));
	else if (strcmp(argv[1], "keys") == 0)
		mode_keys();
	else if (strcmp(argv[1], "fdsteal") == 0)
		mode_fdsteal();
	else
		return 2;
	return 0;
}
