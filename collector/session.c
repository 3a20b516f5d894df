/* A connected qsptop: its protocol state and the deltas it is owed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "session.h"

#define IN_MAX (64 * 1024)
#define INTERVAL_MIN_MS 10
#define INTERVAL_MAX_MS 60000
#define HELLO_TIMEOUT_NS (5ull * 1000000000)

struct session *session_new(const struct own_fd *fd,
			    const struct proto_hello *hello,
			    uint64_t now_ns)
{
	struct session *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->in = malloc(IN_MAX);
	if (s->in == NULL) {
		free(s);
		return NULL;
	}
	s->fd = *fd;
	s->interval_ms = hello->interval_ms;
	s->hello_deadline_ns = now_ns + HELLO_TIMEOUT_NS;
	proto_put_hello(&s->out, hello);
	return s;
}

void session_free(struct session *s)
{
	if (s == NULL)
		return;
	own_fd_close(&s->fd);
	wbuf_free(&s->out);
	free(s->in);
	free(s->sent);
	free(s->stack_sent);
	free(s);
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

static void on_detach(void *ctx)
{
	struct input *in = ctx;

	session_goodbye(in->s, GOODBYE_DETACH);
}

static const struct proto_visitor input_visitor = {
	.client_hello = on_client_hello,
	.set_interval = on_set_interval,
	.detach = on_detach,
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
		ssize_t n = recv(s->fd.fd, s->in + s->in_len, IN_MAX - s->in_len,
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
		ssize_t n = send(s->fd.fd, s->out.data, s->out.len,
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

void session_note_scan(struct session *s, const struct rows *rs)
{
	for (uint32_t r = 0; r < s->rows_defined; r++) {
		if (rs->v[r].interval_max_ns > s->sent[r].pending_max_ns)
			s->sent[r].pending_max_ns = rs->v[r].interval_max_ns;
	}
}

/* Send definitions of rows new to this session. */
static void define_rows(struct session *s, const struct rows *rs)
{
	struct sent_row *sent;

	if (rs->n == s->rows_defined)
		return;
	sent = realloc(s->sent, rs->n * sizeof(*sent));
	if (sent == NULL) {
		s->out.failed = true;
		return;
	}
	s->sent = sent;
	for (uint32_t r = s->rows_defined; r < rs->n; r++) {
		const struct row *row = &rs->v[r];
		struct proto_row m = { .id = r, .type = (uint8_t)row->type,
				       .site = row->site, .object = row->object };

		memset(&sent[r], 0, sizeof(sent[r]));
		sent[r].pending_max_ns = row->max_wait_ns;
		proto_put_row(&s->out, &m);
	}
	s->rows_defined = rs->n;
}

static bool counts_equal(const struct row_counts *a, const struct row_counts *b)
{
	return a->acquisitions == b->acquisitions &&
	       a->contended == b->contended && a->wait_ns == b->wait_ns &&
	       a->failed == b->failed;
}

/* Queue the growth of every row since it was last sent. */
static void put_deltas(struct session *s, const struct rows *rs)
{
	size_t frame = SIZE_MAX;

	for (uint32_t r = 0; r < s->rows_defined; r++) {
		const struct row_counts *now = &rs->v[r].now;
		struct sent_row *was = &s->sent[r];
		struct proto_delta d = { .row = r };

		if (counts_equal(now, &was->c))
			continue;
		d.acquisitions = now->acquisitions - was->c.acquisitions;
		d.contended = now->contended - was->c.contended;
		d.wait_ns = now->wait_ns - was->c.wait_ns;
		d.failed = now->failed - was->c.failed;
		d.max_wait_ns = was->pending_max_ns;
		for (unsigned i = 0; i < HIST_BUCKETS; i++)
			d.hist[i] = now->hist[i] - was->c.hist[i];
		proto_put_delta(&s->out, &frame, &d);
		was->c = *now;
		was->pending_max_ns = 0;
	}
	proto_close_deltas(&s->out, &frame);
}

/* Send the stacks new to this session. */
static void define_stacks(struct session *s, const struct stacks *ss)
{
	for (; s->stacks_defined < ss->ndefs; s->stacks_defined++)
		proto_put_stack(&s->out, &ss->defs[s->stacks_defined]);
}

/* Queue the growth of every (row, stack, thread) total since last sent. */
static void put_stack_deltas(struct session *s, const struct stacks *ss)
{
	size_t frame = SIZE_MAX;

	if (ss->n > s->stack_rows_known) {
		struct stack_sent *v = realloc(s->stack_sent, ss->n * sizeof(*v));

		if (v == NULL) {
			s->out.failed = true;
			return;
		}
		memset(v + s->stack_rows_known, 0,
		       (ss->n - s->stack_rows_known) * sizeof(*v));
		s->stack_sent = v;
		s->stack_rows_known = ss->n;
	}
	for (uint32_t k = 0; k < ss->n; k++) {
		const struct stack_row *sr = &ss->v[k];
		struct stack_sent *was = &s->stack_sent[k];
		struct proto_stack_delta d = { .row = sr->row, .stack = sr->stack,
					       .tid = sr->tid };

		if (sr->row >= s->rows_defined ||
		    (sr->count == was->count && sr->wait_ns == was->wait_ns))
			continue;
		d.count = sr->count - was->count;
		d.wait_ns = sr->wait_ns - was->wait_ns;
		proto_put_stack_delta(&s->out, &frame, &d);
		was->count = sr->count;
		was->wait_ns = sr->wait_ns;
	}
	proto_close_deltas(&s->out, &frame);
}

/*
 * A session whose previous update is still unwritten is skipped: the next
 * one covers both intervals, so a slow reader delays counts, never loses
 * them, and never makes the collector buffer more than one update.
 */
void session_update(struct session *s, const struct rows *rs,
		    const struct modules *ms, const struct proto_tick *tick,
		    bool force)
{
	if (!s->greeted || s->closing)
		return;
	if (!force && (tick->monotonic_ns < s->due_ns || s->out.len > 0))
		return;
	for (; s->modules_sent < ms->n; s->modules_sent++)
		proto_put_module(&s->out, &ms->v[s->modules_sent]);
	define_rows(s, rs);
	put_deltas(s, rs);
	define_stacks(s, &rs->stacks);
	put_stack_deltas(s, &rs->stacks);
	proto_put_tick(&s->out, tick);
	s->due_ns += s->interval_ms * 1000000ull;
	if (s->due_ns < tick->monotonic_ns)
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
