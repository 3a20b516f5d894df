/*
 * Locks to be named, each contended once a round: a static mutex
 * (log_mutex), one inside a global struct (stats, at offset 16), one in a
 * heap object first locked by table_insert() (then by table_lookup()),
 * and a hot one taken in a static function, hot_static(), that only the
 * exported exported_fn() calls, and a heap one taken in a static function,
 * cold_static(), called from the waiting thread's own static routine
 * only: stripped, no frame of its stacks has a name but the thread's
 * start. Built with -rdynamic, as servers with
 * plugins are (varnishd), so that its stripped twin still names
 * exported_fn. The threads name themselves: nm-holder holds each lock
 * until nm-waiter sleeps in the kernel on it, so that every round waits.
 *
 * Usage: wl_names [ROUNDS [QUIET_MS]]   (ROUNDS 0 or none: until killed)
 *   QUIET_MS: first take the hot lock once uncontended, then wait that
 *   long before the rounds (its row is seen before it ever waits)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct stats {
	long calls;
	long bytes;
	pthread_mutex_t lock;	/* at offset 16 */
};

struct table {
	long entries;
	pthread_mutex_t lock;
};

static pthread_mutex_t log_mutex = PTHREAD_MUTEX_INITIALIZER;
struct stats stats = { 0, 0, PTHREAD_MUTEX_INITIALIZER };
static pthread_mutex_t hot_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct table *table, *cold;
static volatile long sink;

/* The waiter's TID, the job it is to do next, and how many it did. */
static atomic_int waiter_tid;
static atomic_int armed = -1;
static atomic_int done;

void log_write(void)
{
	pthread_mutex_lock(&log_mutex);
	sink++;
	pthread_mutex_unlock(&log_mutex);
}

void stats_add(void)
{
	pthread_mutex_lock(&stats.lock);
	stats.calls++;
	pthread_mutex_unlock(&stats.lock);
}

void table_insert(void)
{
	pthread_mutex_lock(&table->lock);
	table->entries++;
	pthread_mutex_unlock(&table->lock);
}

void table_lookup(void)
{
	pthread_mutex_lock(&table->lock);
	sink += table->entries;
	pthread_mutex_unlock(&table->lock);
}

static __attribute__((noinline)) void hot_static(void)
{
	pthread_mutex_lock(&hot_mutex);
	sink++;
	pthread_mutex_unlock(&hot_mutex);
}

/* Not a tail call: exported_fn stays on the stack under hot_static. */
void exported_fn(void)
{
	hot_static();
	sink--;
}

static __attribute__((noinline)) void cold_static(void)
{
	pthread_mutex_lock(&cold->lock);
	cold->entries++;
	pthread_mutex_unlock(&cold->lock);
}

static pthread_mutex_t *lock_log(void) { return &log_mutex; }
static pthread_mutex_t *lock_stats(void) { return &stats.lock; }
static pthread_mutex_t *lock_table(void) { return &table->lock; }
static pthread_mutex_t *lock_hot(void) { return &hot_mutex; }
static pthread_mutex_t *lock_cold(void) { return &cold->lock; }

/* Each job: the lock it contends and the function that waits for it. */
static const struct {
	pthread_mutex_t *(*lock)(void);
	void (*wait)(void);
} jobs[] = {
	{ lock_table, table_insert }, { lock_log, log_write },
	{ lock_stats, stats_add }, { lock_table, table_lookup },
	{ lock_hot, exported_fn }, { lock_cold, cold_static },
};

#define NJOBS ((int)(sizeof(jobs) / sizeof(jobs[0])))

/* Whether thread tid sleeps in futex(2) now. */
static int in_futex(int tid)
{
	char path[64], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	if (fgets(buf, sizeof(buf), f) == NULL)
		buf[0] = '\0';
	fclose(f);
	return atoi(buf) == SYS_futex;
}

static void *waiter(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "nm-waiter");
	atomic_store(&waiter_tid, (int)syscall(SYS_gettid));
	for (int n = 0;; n++) {
		while (atomic_load(&armed) != n)
			sched_yield();
		jobs[n % NJOBS].wait();
		atomic_store(&done, n + 1);
	}
	return NULL;
}

/* Job n: hold its lock until the waiter sleeps on it (10 s at most). */
static void hold(int n)
{
	pthread_mutex_t *m = jobs[n % NJOBS].lock();

	pthread_mutex_lock(m);
	atomic_store(&armed, n);
	for (int i = 0; i < 100000 && !in_futex(atomic_load(&waiter_tid)); i++)
		usleep(100);
	pthread_mutex_unlock(m);
	while (atomic_load(&done) != n + 1)
		sched_yield();
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 0;
	long quiet_ms = argc > 2 ? atol(argv[2]) : 0;
	pthread_t t;

	if (quiet_ms > 0) {
		exported_fn();
		usleep((useconds_t)quiet_ms * 1000);
	}
	table = calloc(1, sizeof(*table));
	cold = calloc(1, sizeof(*cold));
	pthread_mutex_init(&table->lock, NULL);
	pthread_mutex_init(&cold->lock, NULL);
	pthread_setname_np(pthread_self(), "nm-holder");
	pthread_create(&t, NULL, waiter, NULL);
	while (atomic_load(&waiter_tid) == 0)
		sched_yield();
	for (long r = 0; rounds == 0 || r < rounds; r++)
		for (int j = 0; j < NJOBS; j++)
			hold((int)(r * NJOBS + j));
	printf("done %ld rounds\n", rounds);
	return 0;
}
