/*
 * The collector under stress, inside this very process: the collector's
 * sources are linked in, so its hooks take this program's lock calls and
 * its thread serves this program's socket, as when preloaded. Waves of
 * threads start and exit using every primitive, a signal handler takes a
 * lock in whichever thread it interrupts, and clients connect, read and
 * go away, again and again. At the end one more client must see exactly
 * the acquisitions and failures the threads counted themselves (what a
 * signal handler could not record while interrupting a hook is dropped,
 * and counted as such). Built twice: plainly, and under ThreadSanitizer,
 * which must stay silent.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../../common/proto.h"
#include "../../common/sockpath.h"
#include "../unit/check.h"

#ifdef __SANITIZE_THREAD__
#define ITERS 400
#else
#define ITERS 4000
#endif
#define WAVES 6
#define THREADS 6
#define DEADLINE_MS 120000

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t in_handler = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_spinlock_t spin;
static long shared;

/* What the threads counted themselves, per lock type. */
static long want_acq[LOCK_TYPE_COUNT], want_failed[LOCK_TYPE_COUNT];
static long handler_calls;
static volatile int stop_signals, stop_clients;
static pthread_barrier_t done, leave;

static long monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void add(long *v, long n)
{
	__atomic_add_fetch(v, n, __ATOMIC_RELAXED);
}

static void on_signal(int sig)
{
	(void)sig;
	pthread_mutex_lock(&in_handler);
	pthread_mutex_unlock(&in_handler);
	add(&handler_calls, 1);
}

/* One round of every primitive; the thread keeps its own counts. */
static void round_of_everything(long i, long *acq, long *failed)
{
	struct timespec later, past = { 0, 0 };

	pthread_mutex_lock(&mutex);
	shared++;
	pthread_mutex_unlock(&mutex);
	acq[LOCK_MUTEX]++;
	if (pthread_mutex_trylock(&busy) == 0) {
		acq[LOCK_MUTEX]++;
		pthread_mutex_unlock(&busy);
	} else {
		failed[LOCK_MUTEX]++;
	}
	clock_gettime(CLOCK_REALTIME, &later);
	later.tv_sec += 5;
	if (pthread_mutex_timedlock(&mutex, &later) == 0) {
		acq[LOCK_MUTEX]++;
		pthread_mutex_unlock(&mutex);
	}
	pthread_rwlock_rdlock(&rwlock);
	pthread_rwlock_unlock(&rwlock);
	acq[LOCK_RWLOCK_READ]++;
	pthread_rwlock_wrlock(&rwlock);
	pthread_rwlock_unlock(&rwlock);
	acq[LOCK_RWLOCK_WRITE]++;
	pthread_spin_lock(&spin);
	pthread_spin_unlock(&spin);
	acq[LOCK_SPIN]++;
	if (i % 50 == 0) {
		pthread_mutex_lock(&mutex);
		acq[LOCK_MUTEX]++;
		if (pthread_cond_timedwait(&cond, &mutex, &past) == ETIMEDOUT)
			failed[LOCK_CONDVAR]++;
		else
			acq[LOCK_CONDVAR]++;
		pthread_mutex_unlock(&mutex);
	}
}

static void *worker(void *arg)
{
	long acq[LOCK_TYPE_COUNT] = { 0 }, failed[LOCK_TYPE_COUNT] = { 0 };

	for (long i = 0; i < ITERS; i++)
		round_of_everything(i, acq, failed);
	for (int t = 0; t < LOCK_TYPE_COUNT; t++) {
		add(&want_acq[t], acq[t]);
		add(&want_failed[t], failed[t]);
	}
	/* Stay signalable until the signaller is gone. */
	pthread_barrier_wait(&done);
	pthread_barrier_wait(&leave);
	return arg;
}

/* Hold `busy` now and then, so that trylocks fail sometimes. */
static void *holder(void *arg)
{
	while (!__atomic_load_n(&stop_signals, __ATOMIC_RELAXED)) {
		pthread_mutex_lock(&busy);
		usleep(200);
		pthread_mutex_unlock(&busy);
		add(&want_acq[LOCK_MUTEX], 1);
		usleep(300);
	}
	return arg;
}

/* Interrupt the workers with a signal whose handler takes a lock. */
static void *signaller(void *arg)
{
	pthread_t *workers = arg;

	for (unsigned n = 0; !__atomic_load_n(&stop_signals, __ATOMIC_RELAXED); n++) {
		pthread_kill(workers[n % THREADS], SIGUSR1);
		usleep(500);
	}
	return NULL;
}

/* A connection to our own collector, greeted. */
static int connect_self(void)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct proto_client_hello h = { .magic = PROTO_MAGIC, .version = PROTO_VERSION };
	struct wbuf b = { 0 };
	int fd = -1;

	sockpath_self(addr.sun_path, sizeof(addr.sun_path));
	for (long end = monotonic_ms() + 5000; monotonic_ms() < end; usleep(10000)) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0)
			break;
		close(fd);
		fd = -1;
	}
	if (fd < 0)
		return -1;
	proto_put_client_hello(&b, &h);
	proto_put_set_interval(&b, 10);
	if (send(fd, b.data, b.len, MSG_NOSIGNAL) != (ssize_t)b.len) {
		close(fd);
		fd = -1;
	}
	wbuf_free(&b);
	return fd;
}

/* What a client learned: each row's type and latest counts. */
struct seen {
	uint8_t type[4096];
	struct proto_counts counts[4096];
	uint32_t rows;
	uint64_t dropped;
	int ticks;
	bool bad;
};

static void on_row(void *ctx, const struct proto_row *m)
{
	struct seen *s = ctx;

	if (m->id < 4096) {
		s->type[m->id] = m->type;
		if (m->id >= s->rows)
			s->rows = m->id + 1;
	} else {
		s->bad = true;
	}
}

static void on_counts(void *ctx, const struct proto_counts *m)
{
	struct seen *s = ctx;

	if (m->row < s->rows)
		s->counts[m->row] = *m;
	else
		s->bad = true;
}

static void on_tick(void *ctx, const struct proto_tick *m)
{
	struct seen *s = ctx;

	s->dropped = m->dropped;
	s->ticks++;
}

static const struct proto_visitor visitor = {
	.row = on_row, .counts = on_counts, .tick = on_tick,
};

/* Read frames from fd until `ticks` ticks arrived or the deadline. */
static bool read_ticks(int fd, struct seen *s, int ticks, long deadline)
{
	static uint8_t buf[PROTO_HEADER_SIZE + PROTO_MAX_PAYLOAD];
	size_t len = 0;
	char err[128];

	while (s->ticks < ticks && monotonic_ms() < deadline && !s->bad) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		size_t off = 0;
		ssize_t n;

		if (poll(&p, 1, 100) <= 0)
			continue;
		n = recv(fd, buf + len, sizeof(buf) - len, 0);
		if (n <= 0)
			return false;
		len += (size_t)n;
		for (;;) {
			struct proto_frame f;
			long k = proto_split(buf + off, len - off, &f, err, sizeof(err));

			if (k < 0 || (k > 0 && proto_decode(&f, &visitor, s, err,
							     sizeof(err)) < 0))
				return false;
			if (k == 0)
				break;
			off += (size_t)k;
		}
		memmove(buf, buf + off, len - off);
		len -= off;
	}
	return s->ticks >= ticks && !s->bad;
}

/* Clients that come, read a few updates or none, and go, all along. */
static void *clients(void *arg)
{
	static struct seen s;
	int sessions = 0;

	while (!__atomic_load_n(&stop_clients, __ATOMIC_RELAXED)) {
		int fd = connect_self();

		if (fd < 0)
			break;
		memset(&s, 0, sizeof(s));
		if (sessions % 3 != 2)
			read_ticks(fd, &s, 1 + sessions % 4, monotonic_ms() + 2000);
		close(fd);
		__atomic_store_n((int *)arg, ++sessions, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* The final totals, read by one more client, against the threads' own. */
static void check_totals(void)
{
	static struct seen s;
	long got_acq[LOCK_TYPE_COUNT] = { 0 }, got_failed[LOCK_TYPE_COUNT] = { 0 };
	long deadline = monotonic_ms() + 20000;
	int fd = connect_self();

	CHECK(fd >= 0, "a last client connects");
	/* The third tick is from a scan after every thread was gone. */
	CHECK(fd >= 0 && read_ticks(fd, &s, 3, deadline),
	      "the last client reads three updates");
	close(fd);
	for (uint32_t r = 0; r < s.rows; r++) {
		got_acq[s.type[r]] += (long)s.counts[r].c.calls.acquisitions;
		got_failed[s.type[r]] += (long)s.counts[r].c.calls.failed;
	}
	/* Handlers that interrupted a hook passed through: dropped, counted. */
	CHECK(got_acq[LOCK_MUTEX] + (long)s.dropped ==
	      want_acq[LOCK_MUTEX] + handler_calls,
	      "mutex: %ld recorded + %llu dropped = %ld made + %ld in handlers",
	      got_acq[LOCK_MUTEX], (unsigned long long)s.dropped,
	      want_acq[LOCK_MUTEX], handler_calls);
	CHECK((long)s.dropped <= handler_calls, "only handler calls were dropped (%llu)",
	      (unsigned long long)s.dropped);
	for (int t = LOCK_RWLOCK_READ; t < LOCK_TYPE_COUNT; t++)
		CHECK(got_acq[t] == want_acq[t], "%s acquisitions: expected %ld, got %ld",
		      lock_type_name(t), want_acq[t], got_acq[t]);
	for (int t = 0; t < LOCK_TYPE_COUNT; t++)
		CHECK(got_failed[t] == want_failed[t], "%s failed: expected %ld, got %ld",
		      lock_type_name(t), want_failed[t], got_failed[t]);
}

static void *watchdog(void *arg)
{
	(void)arg;
	sleep(DEADLINE_MS / 1000);
	fprintf(stderr, "FAIL: the stress test did not finish in %d s\n",
		DEADLINE_MS / 1000);
	printf("0 passed, 1 failed\n");
	_exit(1);
}

int main(void)
{
	pthread_t workers[THREADS], sig, hold, cl, dog;
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };
	int sessions = 0, waves = 0;
	long deadline = monotonic_ms() + 60000;

	pthread_create(&dog, NULL, watchdog, NULL);
	pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
	pthread_barrier_init(&done, NULL, THREADS + 1);
	pthread_barrier_init(&leave, NULL, THREADS + 1);
	sigaction(SIGUSR1, &sa, NULL);
	pthread_create(&hold, NULL, holder, NULL);
	pthread_create(&cl, NULL, clients, &sessions);
	/*
	 * At least WAVES waves, and more until 3 clients came and went while
	 * they ran: a loaded machine may take that long to connect them (a
	 * minute at most, a deadline for a hang).
	 */
	for (; waves < WAVES || (__atomic_load_n(&sessions, __ATOMIC_RELAXED) < 3 &&
				 monotonic_ms() < deadline); waves++) {
		for (int i = 0; i < THREADS; i++)
			pthread_create(&workers[i], NULL, worker, NULL);
		__atomic_store_n(&stop_signals, 0, __ATOMIC_RELAXED);
		pthread_create(&sig, NULL, signaller, workers);
		pthread_barrier_wait(&done);
		__atomic_store_n(&stop_signals, 1, __ATOMIC_RELAXED);
		pthread_join(sig, NULL);
		pthread_barrier_wait(&leave);
		for (int i = 0; i < THREADS; i++)
			pthread_join(workers[i], NULL);
	}
	pthread_join(hold, NULL);
	__atomic_store_n(&stop_clients, 1, __ATOMIC_RELAXED);
	pthread_join(cl, NULL);
	CHECK(sessions >= 3, "clients came and went while it ran (%d sessions)",
	      sessions);
	CHECK(shared == (long)waves * THREADS * ITERS, "the program's own counts are right");
	check_totals();
	return check_summary();
}
