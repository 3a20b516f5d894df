/*
 * A session, without a target: real rows from a real thread table, sent
 * over a socket pair and read back with the protocol's own decoder. The
 * first update defines and sends every row (a baseline when asked for);
 * later ones send only the rows and stack rows that changed, with their
 * cumulative counts, timeouts included, and each longest wait once; a
 * session sent the counts since start gets the longest waits since start.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../collector/arena.h"
#include "../../collector/frames.h"
#include "../../collector/hooks.h"
#include "../../collector/ownfd.h"
#include "../../collector/rows.h"
#include "../../collector/session.h"
#include "../../collector/table.h"
#include "../../collector/unwind.h"
#include "check.h"
#include "table_fixture.h"

/* What table.c needs from hooks.c: libc's trylock. */
struct real_functions real;

#define MAX_ROWS 16

/* What the client side decoded from one update. */
struct seen {
	bool hello, hello_baseline;
	uint32_t rows_defined;
	uint32_t n_counts;
	struct proto_counts counts[MAX_ROWS];	/* by row id */
	bool has_counts[MAX_ROWS];
	uint32_t stacks_defined, stack_rows_defined;
	uint32_t n_stack_counts;
	struct proto_stack_counts stack_counts;	/* the last one */
	uint32_t ticks;
	uint8_t tick_flags;
};

static void on_hello(void *ctx, const struct proto_hello *m)
{
	struct seen *s = ctx;

	s->hello = m->magic == PROTO_MAGIC && m->version == PROTO_VERSION;
	s->hello_baseline = (m->flags & PROTO_HELLO_BASELINE) != 0;
}

static void on_row(void *ctx, const struct proto_row *m)
{
	struct seen *s = ctx;

	(void)m;
	s->rows_defined++;
}

static void on_counts(void *ctx, const struct proto_counts *m)
{
	struct seen *s = ctx;

	s->n_counts++;
	if (m->row < MAX_ROWS) {
		s->counts[m->row] = *m;
		s->has_counts[m->row] = true;
	}
}

static void on_stack(void *ctx, const struct proto_stack *m)
{
	struct seen *s = ctx;

	(void)m;
	s->stacks_defined++;
}

static void on_stack_row(void *ctx, const struct proto_stack_row *m)
{
	struct seen *s = ctx;

	(void)m;
	s->stack_rows_defined++;
}

static void on_stack_counts(void *ctx, const struct proto_stack_counts *m)
{
	struct seen *s = ctx;

	s->n_stack_counts++;
	s->stack_counts = *m;
}

static void on_tick(void *ctx, const struct proto_tick *m)
{
	struct seen *s = ctx;

	s->ticks++;
	s->tick_flags = m->flags;
}

static const struct proto_visitor visitor = {
	.hello = on_hello, .row = on_row, .counts = on_counts,
	.stack = on_stack, .stack_row = on_stack_row,
	.stack_counts = on_stack_counts, .tick = on_tick,
};

/* One end of a socket pair served by a session, the other read here. */
struct pair {
	struct session *s;
	int peer;
};

static struct rows rs;
static struct modules ms;
static uint64_t now_ns = 1000000000;

/* A session on a new socket pair, greeted by the peer. */
static struct pair open_pair(unsigned slot, bool baseline)
{
	struct proto_hello hello = { .magic = PROTO_MAGIC,
				     .version = PROTO_VERSION,
				     .interval_ms = 1000, .pid = 42 };
	struct proto_client_hello ch = { .magic = PROTO_MAGIC,
					 .version = PROTO_VERSION };
	struct own_fd fd = OWN_FD_NONE;
	struct wbuf b = { 0 };
	struct pair p = { NULL, -1 };
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		return p;
	own_fd_take(&fd, sv[0]);
	p.peer = sv[1];
	p.s = session_new(&fd, slot, &hello, baseline, now_ns);
	proto_put_client_hello(&b, &ch);
	if (write(p.peer, b.data, b.len) != (ssize_t)b.len)
		CHECK(0, "the client hello is written");
	wbuf_free(&b);
	CHECK(p.s && session_read(p.s, now_ns) && p.s->greeted,
	      "the session reads the client hello");
	rows_session_start(&rs, slot, baseline);
	return p;
}

static void close_pair(struct pair *p)
{
	rows_session_end(&rs, p->s->slot);
	session_free(p->s);
	close(p->peer);
}

/* Everything the session wrote since the last call, decoded into *s. */
static void read_update(struct pair *p, struct seen *s)
{
	static uint8_t buf[1 << 20];
	size_t len = 0, off = 0;
	char err[128];
	ssize_t n;

	memset(s, 0, sizeof(*s));
	CHECK(session_write(p->s), "the session writes its update");
	while (len < sizeof(buf) &&
	       (n = recv(p->peer, buf + len, sizeof(buf) - len, MSG_DONTWAIT)) > 0)
		len += (size_t)n;
	while (off < len) {
		struct proto_frame f;
		long k = proto_split(buf + off, len - off, &f, err, sizeof(err));

		CHECK(k > 0, "whole frames were written (%s)", k < 0 ? err : "cut");
		if (k <= 0)
			return;
		CHECK(proto_decode(&f, &visitor, s, err, sizeof(err)) == 0,
		      "the decoder takes every frame: %s", err);
		off += (size_t)k;
	}
}

/* Scan, and have the session send an update now; what it sent, decoded. */
static void update(struct pair *p, struct seen *s)
{
	struct proto_tick tick = { .monotonic_ns = now_ns };

	rows_scan(&rs);
	tick.seq = rs.seq;
	session_update(p->s, &rs, &ms, &tick, true);
	now_ns += 1000000000;
	read_update(p, s);
}

static struct thread_table *t;

static struct obj_slot *acquire(uint64_t site, uint64_t object, uint64_t n)
{
	return fixture_acquire(t, site, object, LOCK_MUTEX, n);
}

/* Waits at (site, object): contended, timed out, their time, the longest. */
static struct entry *add_waits(uint64_t site, uint64_t object,
			       uint64_t contended, uint64_t timeouts,
			       uint64_t ns, uint64_t max)
{
	struct entry *e;

	acquire(site, object, contended);
	e = table_entry(t, KEY(site, LOCK_MUTEX), object);
	if (e == NULL)
		return NULL;
	fixture_waits(e, contended, timeouts, ns);
	e->max_epoch = table_epoch;
	table_store(&e->epoch_max_ns, max);
	if (max > e->max_wait_ns)
		table_store(&e->max_wait_ns, max);
	return e;
}

/* The row id of (site, object), or MAX_ROWS. */
static uint32_t row_of(uint64_t site, uint64_t object)
{
	for (uint32_t r = 0; r < rs.n && r < MAX_ROWS; r++) {
		if (rs.v[r].site == site && rs.v[r].object == object)
			return r;
	}
	return MAX_ROWS;
}

/*
 * The first update of a baseline session: HELLO says baseline, every row
 * is defined and sent with its counts, the TICK says baseline.
 */
static void test_baseline(struct pair *p, uint32_t *quiet, uint32_t *busy)
{
	struct seen s;

	acquire(0x401000, 0x1000, 10);
	add_waits(0x402000, 0x2000, 4, 3, 7000, 2500);
	update(p, &s);
	*quiet = row_of(0x401000, 0x1000);
	*busy = row_of(0x402000, 0x2000);
	CHECK(s.hello && s.hello_baseline, "HELLO of this version, baseline");
	CHECK_U64(s.rows_defined, 2);
	CHECK_U64(s.n_counts, 2);
	CHECK(*quiet < MAX_ROWS && *busy < MAX_ROWS &&
	      s.has_counts[*quiet] && s.has_counts[*busy],
	      "both rows' counts are sent");
	if (*quiet >= MAX_ROWS || *busy >= MAX_ROWS)
		return;
	CHECK_U64(s.counts[*quiet].c.calls.acquisitions, 10);
	CHECK_U64(s.counts[*quiet].c.calls.contended, 0);
	CHECK_U64(s.counts[*busy].c.calls.acquisitions, 4);
	CHECK_U64(s.counts[*busy].c.calls.contended, 4);
	CHECK_U64(s.counts[*busy].c.calls.timeouts, 3);
	CHECK_U64(s.counts[*busy].c.calls.failed, 3);
	CHECK_U64(s.counts[*busy].c.calls.wait_ns, 7000);
	CHECK_U64(s.counts[*busy].c.hist[hist_bucket(7000)], 7);
	CHECK_U64(s.counts[*busy].max_wait_ns, 2500);
	CHECK_U64(s.ticks, 1);
	CHECK(s.tick_flags & PROTO_TICK_BASELINE, "the first TICK is the baseline");
}

/* Nothing changed: a TICK alone, no longer a baseline. */
static void test_quiet_tick(struct pair *p)
{
	struct seen s;

	update(p, &s);
	CHECK(!s.hello, "HELLO only once");
	CHECK_U64(s.rows_defined, 0);
	CHECK_U64(s.n_counts, 0);
	CHECK_U64(s.n_stack_counts, 0);
	CHECK_U64(s.ticks, 1);
	CHECK(!(s.tick_flags & PROTO_TICK_BASELINE), "a later TICK is no baseline");
}

/* One row changed: only its counts are sent, cumulative; a new row is defined. */
static void test_changed_only(struct pair *p, uint32_t quiet, uint32_t busy)
{
	uint32_t fresh;
	struct seen s;

	add_waits(0x402000, 0x2000, 1, 2, 3000, 1500);
	acquire(0x403000, 0x3000, 6);
	update(p, &s);
	fresh = row_of(0x403000, 0x3000);
	CHECK_U64(s.rows_defined, 1);
	CHECK_U64(s.n_counts, 2);
	CHECK(!s.has_counts[quiet], "an unchanged row is not sent");
	CHECK(busy < MAX_ROWS && s.has_counts[busy] && fresh < MAX_ROWS &&
	      s.has_counts[fresh], "the changed and the new row are sent");
	if (busy >= MAX_ROWS || fresh >= MAX_ROWS)
		return;
	CHECK_U64(s.counts[busy].c.calls.acquisitions, 5);
	CHECK_U64(s.counts[busy].c.calls.contended, 5);
	CHECK_U64(s.counts[busy].c.calls.timeouts, 5);
	CHECK_U64(s.counts[busy].c.calls.wait_ns, 10000);
	CHECK_U64(s.counts[busy].max_wait_ns, 1500);
	CHECK_U64(s.counts[fresh].c.calls.acquisitions, 6);
}

/* Stacked waits: the stack and its row defined once, totals when they grow. */
static void test_stack_counts(struct pair *p)
{
	struct entry *e = add_waits(0x404000, 0x4000, 2, 0, 2000, 0);
	struct stack_store *st = arena_alloc_table(sizeof(*st));
	struct seen s;

	CHECK(e && st, "an entry and a stack store");
	if (e == NULL || st == NULL)
		return;
	st->stacks[0].frames[0] = 0x404000;
	st->stacks[0].frames[1] = 0x405000;
	st->stacks[0].depth = 2;
	st->nstacks = 1;
	st->uses[0].entry = e;
	st->uses[0].w.count = 2;
	st->uses[0].w.timeouts = 1;
	st->uses[0].w.wait_ns = 2000;
	st->nuses = 1;
	t->stacks = st;
	update(p, &s);
	CHECK_U64(s.stacks_defined, 1);
	CHECK_U64(s.stack_rows_defined, 1);
	CHECK_U64(s.n_stack_counts, 1);
	CHECK_U64(s.stack_counts.w.count, 2);
	CHECK_U64(s.stack_counts.w.timeouts, 1);
	CHECK_U64(s.stack_counts.w.wait_ns, 2000);
	update(p, &s);
	CHECK_U64(s.n_stack_counts, 0);
	table_add(&st->uses[0].w.timeouts, 1);
	table_add(&st->uses[0].w.wait_ns, 500);
	update(p, &s);
	CHECK_U64(s.stacks_defined, 0);
	CHECK_U64(s.stack_rows_defined, 0);
	CHECK_U64(s.n_stack_counts, 1);
	CHECK_U64(s.stack_counts.w.count, 2);
	CHECK_U64(s.stack_counts.w.timeouts, 2);
	CHECK_U64(s.stack_counts.w.wait_ns, 2500);
}

/* A session that comes later, without a baseline, is sent everything at once. */
static void test_late_session(uint32_t busy)
{
	struct pair q = open_pair(1, false);
	struct seen s;

	if (q.s == NULL)
		return;
	update(&q, &s);
	CHECK(s.hello && !s.hello_baseline, "HELLO without baseline");
	CHECK_U64(s.rows_defined, rs.n);
	CHECK_U64(s.n_counts, rs.n);
	CHECK_U64(s.stacks_defined, 1);
	CHECK_U64(s.n_stack_counts, 1);
	CHECK(!(s.tick_flags & PROTO_TICK_BASELINE), "its first TICK is no baseline");
	if (busy < MAX_ROWS) {
		CHECK_U64(s.counts[busy].c.calls.timeouts, 5);
		CHECK(s.counts[busy].max_wait_ns == 2500,
		      "a session sent counts since start gets the longest wait "
		      "since start: expected 2500, got %llu",
		      (unsigned long long)s.counts[busy].max_wait_ns);
	}
	close_pair(&q);
}

/*
 * A qsptop that greets an injected collector and asks for 1 s intervals
 * gets its baseline a little later, once its wrappers are known: the first
 * interval runs from the baseline, 1 s, not from the greeting plus 1 s.
 */
static void test_first_interval_from_baseline(void)
{
	struct pair q = open_pair(2, true);
	uint64_t greeted = now_ns, baseline = now_ns + 50000000;
	struct proto_tick tick = { .monotonic_ns = baseline };
	struct wbuf b = { 0 };
	struct seen s;

	if (q.s == NULL)
		return;
	proto_put_set_interval(&b, 1000);
	if (write(q.peer, b.data, b.len) != (ssize_t)b.len)
		CHECK(0, "the interval is written");
	wbuf_free(&b);
	CHECK(session_read(q.s, greeted), "the session reads the interval");
	rows_scan(&rs);
	session_update(q.s, &rs, &ms, &tick, true);
	read_update(&q, &s);
	CHECK(s.tick_flags & PROTO_TICK_BASELINE, "the update is the baseline");
	CHECK(q.s->due_ns == baseline + 1000000000ull,
	      "the first update is due 1 s after the baseline (%llu ns): got %llu "
	      "ns, %.2f s after it", (unsigned long long)(baseline + 1000000000ull),
	      (unsigned long long)q.s->due_ns, (double)(q.s->due_ns - baseline) / 1e9);
	close_pair(&q);
}

/* Send one WRAPPERS message of n ranges to the session, and read it. */
static void send_wrappers(struct pair *q, const uint64_t *ranges, uint32_t n)
{
	struct wbuf b = { 0 };

	proto_put_wrappers(&b, ranges, n);
	if (write(q->peer, b.data, b.len) != (ssize_t)b.len)
		CHECK(0, "the wrappers are written");
	wbuf_free(&b);
	CHECK(session_read(q->s, now_ns), "the session reads %u wrappers", n);
}

/*
 * A session's later WRAPPERS message replaces the set as a whole: what
 * was in the earlier one only is no wrapper any more (the front end sends
 * a set again whenever it finds a wrapper, or modules are loaded); an
 * empty one leaves none.
 */
static void test_wrappers_replaced(void)
{
	struct pair q = open_pair(3, true);
	struct frames_reader rd = { 0 };
	const uint64_t first[] = { 0x1000, 0x1100 }, second[] = { 0x2000, 0x2100 };
	uint32_t gen = frames_wrappers_gen;

	if (q.s == NULL)
		return;
	send_wrappers(&q, first, 1);
	CHECK(q.s->wrappers_known && frames_wrapper_step(&rd, 0x1010) != 0,
	      "the first set holds 0x1000..0x1100");
	send_wrappers(&q, second, 1);
	CHECK(frames_wrapper_step(&rd, 0x1010) == 0,
	      "the second set replaced the first: 0x1010 is in no wrapper");
	CHECK(frames_wrapper_step(&rd, 0x2010) != 0,
	      "the second set holds 0x2000..0x2100");
	send_wrappers(&q, NULL, 0);
	CHECK(frames_wrapper_step(&rd, 0x2010) == 0,
	      "an empty set leaves no wrapper");
	CHECK(frames_wrappers_gen == gen + 3,
	      "each set is a new generation: expected %u, got %u", gen + 3,
	      frames_wrappers_gen);
	close_pair(&q);
}

/* The collector thread's side of test_private_table. */
struct private_run {
	struct own_fd *own;
	sem_t moved, replaced, done;
	bool private, valid, wrote;
};

static void *private_thread(void *arg)
{
	struct private_run *r = arg;
	struct own_fd *const keep[] = { r->own };

	r->private = own_fd_private_table(keep, 1);
	sem_post(&r->moved);
	sem_wait(&r->replaced);
	r->valid = own_fd_valid(r->own);
	r->wrote = r->valid && write(r->own->fd, "x", 1) == 1;
	own_fd_close(r->own);
	sem_post(&r->done);
	return NULL;
}

/*
 * A thread with a descriptor table of its own keeps its descriptor when
 * the host puts a file of its own at that number, and closing it there
 * leaves the host's file alone; it holds no other file of the host's (a
 * pipe the host closes reads as ended).
 */
static void test_private_table(void)
{
	struct own_fd own = OWN_FD_NONE;
	struct private_run r = { .own = &own };
	int sv[2], host_pipe[2], null = open("/dev/null", O_RDONLY);
	char c;
	pthread_t th;
	int number;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 || pipe(host_pipe) != 0)
		return;
	own_fd_take(&own, sv[0]);
	number = own.fd;
	sem_init(&r.moved, 0, 0);
	sem_init(&r.replaced, 0, 0);
	sem_init(&r.done, 0, 0);
	pthread_create(&th, NULL, private_thread, &r);
	sem_wait(&r.moved);
	CHECK(r.private, "the thread got a descriptor table of its own");
	/* The host: its own file at our number, its pipe's writer closed. */
	dup2(null, number);
	close(host_pipe[1]);
	sem_post(&r.replaced);
	sem_wait(&r.done);
	pthread_join(th, NULL);
	CHECK(r.valid && r.wrote && read(sv[1], &c, 1) == 1 && c == 'x',
	      "the thread's descriptor stayed its own (valid %d, wrote %d)",
	      r.valid, r.wrote);
	CHECK(read(sv[1], &c, 1) == 0, "closed in the thread's table, the "
	      "socket is closed for good");
	CHECK(fcntl(number, F_GETFD) >= 0, "the host's file at that number "
	      "is still open");
	CHECK(read(host_pipe[0], &c, 1) == 0, "the thread holds no copy of "
	      "the host's pipe");
	close(number);
	close(sv[1]);
	close(host_pipe[0]);
	close(null);
}

int main(void)
{
	uint32_t quiet = MAX_ROWS, busy = MAX_ROWS;
	struct pair p;

	real.libc_mutex_trylock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT,
								   "pthread_mutex_trylock");
	t = table_claim(real.libc_mutex_trylock);
	tls_self.table = t;
	p = open_pair(0, true);
	CHECK(t != NULL && p.s != NULL, "a table and a session");
	if (t == NULL || p.s == NULL)
		return check_summary();
	test_baseline(&p, &quiet, &busy);
	test_quiet_tick(&p);
	test_changed_only(&p, quiet, busy);
	test_stack_counts(&p);
	test_late_session(busy);
	test_first_interval_from_baseline();
	test_wrappers_replaced();
	close_pair(&p);
	test_private_table();
	return check_summary();
}
