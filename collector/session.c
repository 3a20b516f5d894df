/* A connected qsptop: its protocol state and the deltas it is owed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "arena.h"
#include "frames.h"
#include "heldby.h"
#include "session.h"

#define IN_MAX (64 * 1024)
#define INTERVAL_MIN_MS 10
#define INTERVAL_MAX_MS 60000
#define HELLO_TIMEOUT_NS (5ull * 1000000000)

struct session *session_new(const struct own_fd *fd, unsigned slot,
			    const struct proto_hello *hello, bool baseline,
			    uint64_t now_ns)
{
	struct session *s = arena_alloc(sizeof(*s));
	struct proto_hello h = *hello;

	if (s == NULL)
		return NULL;
	s->in = arena_alloc(IN_MAX);
	if (s->in == NULL) {
		arena_free(s, sizeof(*s));
		return NULL;
	}
	s->fd = *fd;
	s->slot = slot;
	s->interval_ms = hello->interval_ms;
	s->hello_deadline_ns = now_ns + HELLO_TIMEOUT_NS;
	s->baseline_sent = !baseline;
	if (baseline)
		h.flags |= PROTO_HELLO_BASELINE;
	proto_put_hello(&s->out, &h);
	return s;
}

void session_free(struct session *s)
{
	if (s == NULL)
		return;
	own_fd_close(&s->fd);
	wbuf_free(&s->out);
	arena_free(s->in, IN_MAX);
	arena_free(s, sizeof(*s));
}

/* What a message from the peer does to the session. */
struct input {
	struct session *s;
	uint64_t now_ns;
	bool ok;
};

static void on_client_hello(void *ctx, const struct proto_client_hello *m)
{
	struct input *in = ctx;

	if (m->magic != PROTO_MAGIC || m->version != PROTO_VERSION) {
		in->ok = false;
		return;
	}
	in->s->greeted = true;
	in->s->greeted_ns = in->now_ns;
	in->s->memory_cap_mb = m->memory_cap_mb;
	in->s->due_ns = in->now_ns;
}

static void on_set_interval(void *ctx, uint32_t ms)
{
	struct input *in = ctx;

	if (ms < INTERVAL_MIN_MS)
		ms = INTERVAL_MIN_MS;
	if (ms > INTERVAL_MAX_MS)
		ms = INTERVAL_MAX_MS;
	in->s->interval_ms = ms;
	in->s->due_ns = in->now_ns + ms * 1000000ull;
}

/*
 * The lock wrappers a client skips: from now on their callers count what
 * the hooks see called from inside them (the last set any client sent).
 */
static void on_wrappers(void *ctx, uint32_t count, const uint8_t *ranges)
{
	struct input *in = ctx;
	size_t size = (size_t)count * 2 * sizeof(uint64_t);
	uint64_t *v = count ? arena_alloc(size) : NULL;

	in->s->wrappers_known = true;
	if (count && v == NULL)
		return;
	for (uint32_t i = 0; i < count; i++)
		proto_wrapper_range(ranges, i, &v[2 * i], &v[2 * i + 1]);
	frames_set_wrappers(v, count);
	arena_free(v, size);
}

static void on_detach(void *ctx)
{
	struct input *in = ctx;

	session_goodbye(in->s, GOODBYE_DETACH);
}

static void on_holders(void *ctx, bool on)
{
	struct input *in = ctx;

	in->s->holders = on;
}

static const struct proto_visitor input_visitor = {
	.holders = on_holders,
	.client_hello = on_client_hello,
	.set_interval = on_set_interval,
	.detach = on_detach,
	.wrappers = on_wrappers,
};

/* Act on every whole frame in the input buffer. */
static bool handle_frames(struct session *s, uint64_t now_ns)
{
	struct input in = { .s = s, .now_ns = now_ns, .ok = true };
	size_t off = 0;
	char err[128];

	while (in.ok) {
		struct proto_frame f;
		long n = proto_split(s->in + off, s->in_len - off, &f, err,
				     sizeof(err));

		if (n < 0 || (n > 0 && !s->greeted && f.type != MSG_CLIENT_HELLO))
			return false;
		if (n == 0)
			break;
		if (proto_decode(&f, &input_visitor, &in, err, sizeof(err)) < 0)
			return false;
		off += (size_t)n;
	}
	memmove(s->in, s->in + off, s->in_len - off);
	s->in_len -= off;
	return in.ok && s->in_len < IN_MAX;
}

bool session_read(struct session *s, uint64_t now_ns)
{
	for (;;) {
		ssize_t n;

		if (!own_fd_valid(&s->fd))
			return false;
		n = recv(s->fd.fd, s->in + s->in_len, IN_MAX - s->in_len,
			 MSG_DONTWAIT);

		if (n == 0)
			return false;
		if (n < 0)
			break;
		s->in_len += (size_t)n;
		if (!handle_frames(s, now_ns))
			return false;
	}
	if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		return false;
	return s->greeted || now_ns < s->hello_deadline_ns;
}

bool session_write(struct session *s)
{
	while (s->out.len > 0 && !s->dead) {
		ssize_t n = -1;

		errno = EBADF;
		if (own_fd_valid(&s->fd))
			n = send(s->fd.fd, s->out.data, s->out.len,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n < 0 && errno != EINTR) {
			s->dead = true;
			s->out.len = 0;
		} else if (n > 0) {
			wbuf_consume(&s->out, (size_t)n);
		}
	}
	if (s->out.failed)
		s->dead = true;
	return !s->dead && !(s->closing && s->out.len == 0);
}

bool session_awaits_wrappers(const struct session *s, uint64_t now_ns)
{
	return s->greeted && !s->wrappers_known && !s->closing &&
	       now_ns < s->greeted_ns + SESSION_WRAPPERS_WAIT_NS;
}

bool session_wants_baseline(const struct session *s, uint64_t now_ns)
{
	return s->greeted && !s->baseline_sent && !s->closing &&
	       !session_awaits_wrappers(s, now_ns);
}

void session_send_modules(struct session *s, const struct modules *ms)
{
	for (; s->modules_sent < ms->n; s->modules_sent++)
		proto_put_module(&s->out, &ms->v[s->modules_sent]);
}

/* Send definitions of rows new to this session. */
static void define_rows(struct session *s, const struct rows *rs)
{
	for (; s->rows_defined < rs->n; s->rows_defined++) {
		const struct row *row = &rs->v[s->rows_defined];
		struct proto_row m = { .id = s->rows_defined,
				       .type = (uint8_t)row->type,
				       .site = row->site, .via = row->via,
				       .object = row->object };

		proto_put_row(&s->out, &m);
	}
}

/*
 * The counts of row r, with the longest wait this session has not seen,
 * in c, whose wait fields are zero unless *waited (then they are cleared
 * first: most rows never wait, and clearing is most of their cost).
 */
static void put_row_counts(struct session *s, struct rows *rs, uint32_t r,
			   struct proto_counts *c, bool *waited, size_t *frame)
{
	struct row *row = &rs->v[r];
	struct row_waits *w = row->waits;

	if (*waited && w == NULL)
		*c = (struct proto_counts){ 0 };
	*waited = w != NULL;
	if (w) {
		c->c = w->now;
		c->max_wait_ns = w->pending_max_ns[s->slot];
		w->pending_max_ns[s->slot] = 0;
	}
	c->row = r;
	c->c.calls.acquisitions = row->acq_now;
	c->c.calls.hold_ns = row->holds ? row->holds->now_ns : 0;
	c->c.calls.holds_timed = row->holds ? row->holds->now : 0;
	c->max_hold_ns = 0;
	if (row->holds) {
		c->max_hold_ns = row->holds->pending_max_ns[s->slot];
		row->holds->pending_max_ns[s->slot] = 0;
	}
	proto_put_counts(&s->out, frame, c);
}

/* Queue the counts of every row changed since the last update. */
static void put_counts(struct session *s, struct rows *rs)
{
	struct proto_counts c = { 0 };
	size_t frame = SIZE_MAX;
	bool waited = false;

	for (uint32_t r = 0; r < rs->n; r++) {
		if (rs->v[r].changed_seq > s->sent_seq)
			put_row_counts(s, rs, r, &c, &waited, &frame);
	}
	proto_close_run(&s->out, &frame);
}

/* Send the stacks and stack rows new to this session. */
static void define_stacks(struct session *s, const struct stacks *ss)
{
	for (; s->stacks_defined < ss->ndefs; s->stacks_defined++)
		proto_put_stack(&s->out, &ss->defs[s->stacks_defined]);
	for (; s->stack_rows_defined < ss->n; s->stack_rows_defined++) {
		const struct stack_row *sr = &ss->v[s->stack_rows_defined];
		struct proto_stack_row m = { .id = s->stack_rows_defined,
					     .row = sr->row, .stack = sr->stack,
					     .tid = sr->tid };

		proto_put_stack_row(&s->out, &m);
	}
}

/* Queue the totals of every stack row changed since the last update. */
static void put_stack_counts(struct session *s, const struct stacks *ss)
{
	size_t frame = SIZE_MAX;

	for (uint32_t k = 0; k < ss->n; k++) {
		const struct stack_row *sr = &ss->v[k];
		struct proto_stack_counts m = { .id = k, .w = sr->now };

		if (sr->changed_seq > s->sent_seq)
			proto_put_stack_counts(&s->out, &frame, &m);
	}
	proto_close_run(&s->out, &frame);
}

/* Send the lock-order warnings new to this session or grown since. */
static void put_lock_orders(struct session *s, const struct order_set *os)
{
	for (uint32_t k = 0; k < os->nw; k++) {
		if (k < s->orders_sent && os->w[k].changed_seq <= s->sent_seq)
			continue;
		proto_put_lock_order(&s->out, &os->w[k].m);
	}
	s->orders_sent = os->nw;
}

/*
 * A session whose previous update is still unwritten is skipped: the next
 * one carries the latest totals, so a slow reader delays counts, never
 * loses them, and never makes the collector buffer more than one update.
 */
void session_update(struct session *s, struct rows *rs,
		    const struct modules *ms, const struct proto_tick *tick,
		    bool force)
{
	struct proto_tick t = *tick;
	bool baseline = !s->baseline_sent;

	if (!s->greeted || s->closing || (baseline && !force))
		return;
	if (!force && (tick->monotonic_ns < s->due_ns || s->out.len > 0))
		return;
	session_send_modules(s, ms);
	define_rows(s, rs);
	put_counts(s, rs);
	define_stacks(s, &rs->stacks);
	put_stack_counts(s, &rs->stacks);
	put_lock_orders(s, &rs->order);
	for (uint32_t i = 0; i < rs->n_waits; i++)
		proto_put_wait(&s->out, &rs->waits[i]);
	heldby_send(rs, &s->out, s->sent_seq);
	if (baseline)
		t.flags |= PROTO_TICK_BASELINE;
	proto_put_tick(&s->out, &t);
	s->baseline_sent = true;
	s->sent_seq = rs->seq;
	s->due_ns += s->interval_ms * 1000000ull;
	/* The first interval starts at the baseline, whenever that was sent. */
	if (baseline || s->due_ns < tick->monotonic_ns)
		s->due_ns = tick->monotonic_ns + s->interval_ms * 1000000ull;
}

void session_goodbye(struct session *s, enum proto_goodbye_reason reason)
{
	struct proto_goodbye m = { .reason = (uint8_t)reason };

	if (s->closing)
		return;
	proto_put_goodbye(&s->out, &m);
	s->closing = true;
}
