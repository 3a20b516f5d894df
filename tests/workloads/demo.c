/*
 * The bundled contention demo (make demo): a tiny "server" with a few
 * named hot spots of different kinds.
 *
 *   wl_demo [SECONDS]    run for SECONDS (default: until killed)
 *
 * - stats_add:     every request bumps global stats under one hot mutex
 * - cache_lookup / cache_update: a reader/writer lock over a cache
 * - queue_push / queue_pop: a condvar work queue feeding the workers
 * - log_append:    a spinlock around a shared log buffer
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define WORKERS 4
#define QUEUE_CAP 64

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t cache_lock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_nonempty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t queue_nonfull = PTHREAD_COND_INITIALIZER;
static pthread_spinlock_t log_lock;

static long stats[16];
static long cache[256];
static int queue[QUEUE_CAP], queue_len;
static char log_buf[4096];
static size_t log_pos;
static volatile int stopping;

/* Burn a little CPU so critical sections have a length. */
static void work(int units)
{
	volatile long x = 0;

	for (int i = 0; i < units * 50; i++)
		x += i;
}

static void stats_add(int key)
{
	pthread_mutex_lock(&stats_lock);
	stats[key & 15]++;
	work(4);
	pthread_mutex_unlock(&stats_lock);
}

static long cache_lookup(int key)
{
	long v;

	pthread_rwlock_rdlock(&cache_lock);
	v = cache[key & 255];
	work(2);
	pthread_rwlock_unlock(&cache_lock);
	return v;
}

static void cache_update(int key)
{
	pthread_rwlock_wrlock(&cache_lock);
	cache[key & 255]++;
	work(20);
	pthread_rwlock_unlock(&cache_lock);
}

static void log_append(char c)
{
	pthread_spin_lock(&log_lock);
	log_buf[log_pos++ % sizeof(log_buf)] = c;
	pthread_spin_unlock(&log_lock);
}

static void queue_push(int item)
{
	pthread_mutex_lock(&queue_lock);
	while (queue_len == QUEUE_CAP && !stopping)
		pthread_cond_wait(&queue_nonfull, &queue_lock);
	queue[queue_len++ % QUEUE_CAP] = item;
	pthread_cond_signal(&queue_nonempty);
	pthread_mutex_unlock(&queue_lock);
}

static int queue_pop(void)
{
	int item = -1;

	pthread_mutex_lock(&queue_lock);
	while (queue_len == 0 && !stopping)
		pthread_cond_wait(&queue_nonempty, &queue_lock);
	if (queue_len > 0) {
		item = queue[--queue_len % QUEUE_CAP];
		pthread_cond_signal(&queue_nonfull);
	}
	pthread_mutex_unlock(&queue_lock);
	return item;
}

static void *worker(void *arg)
{
	while (!stopping) {
		int req = queue_pop();

		if (req < 0)
			break;
		if (cache_lookup(req) % 7 == 0 || req % 50 == 0)
			cache_update(req);
		stats_add(req);
		log_append((char)('a' + req % 26));
		work(10);
	}
	return arg;
}

static void *producer(void *arg)
{
	int req = 0;

	while (!stopping) {
		queue_push(req++);
		if (req % 256 == 0)
			usleep(200);
	}
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t workers[WORKERS], prod;
	int seconds = argc > 1 ? atoi(argv[1]) : 0;
	time_t end = time(NULL) + seconds;

	pthread_spin_init(&log_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_create(&prod, NULL, producer, NULL);
	for (int i = 0; i < WORKERS; i++)
		pthread_create(&workers[i], NULL, worker, NULL);
	while (seconds == 0 || time(NULL) < end)
		sleep(1);
	pthread_mutex_lock(&queue_lock);
	stopping = 1;
	pthread_cond_broadcast(&queue_nonempty);
	pthread_cond_broadcast(&queue_nonfull);
	pthread_mutex_unlock(&queue_lock);
	pthread_join(prod, NULL);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(workers[i], NULL);
	return 0;
}
