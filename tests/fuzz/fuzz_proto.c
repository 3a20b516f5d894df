/*
 * libFuzzer target: arbitrary bytes through proto_split() and
 * proto_decode(), in the loop tui/client.c and collector/session.c run.
 *
 * Each frame is decoded from a copy of exactly its length, so a read past
 * the frame is an ASan error, and the callbacks read every field they get.
 * The bytes then arrive again in small pieces, as recv() may cut them: what
 * is decoded must not depend on where the stream was cut.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What a pass decoded, hashed field by field (never padding). */
struct trace {
	uint64_t hash;
	size_t frames;
	int failed;		/* 0, or 1 a bad header, 2 a bad frame */
};

/* A reader's input buffer, like client.c's. */
struct reader {
	uint8_t *in;
	size_t len;
	struct trace t;
};

static void mix(struct trace *t, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		t->hash = (t->hash ^ b[i]) * 0x100000001b3ull;
}

static void mix_u64(struct trace *t, uint64_t v)
{
	mix(t, &v, sizeof(v));
}

/* A string field must end inside its array; a read past it is a bug. */
static void mix_str(struct trace *t, const char *s, size_t size)
{
	const char *end = memchr(s, '\0', size);

	if (end == NULL)
		abort();
	mix(t, s, (size_t)(end - s));
}

static void on_hello(void *ctx, const struct proto_hello *m)
{
	struct trace *t = ctx;

	mix_u64(t, MSG_HELLO);
	mix_u64(t, m->magic);
	mix_u64(t, m->version);
	mix_u64(t, m->mode);
	mix_u64(t, m->flags);
	mix_u64(t, m->pid);
	mix_u64(t, m->interval_ms);
	mix_u64(t, m->start_realtime_ns);
	mix_u64(t, m->start_monotonic_ns);
	mix_str(t, m->command, sizeof(m->command));
	mix_str(t, m->collector_version, sizeof(m->collector_version));
}

static void on_client_hello(void *ctx, const struct proto_client_hello *m)
{
	struct trace *t = ctx;

	mix_u64(t, MSG_CLIENT_HELLO);
	mix_u64(t, m->magic);
	mix_u64(t, m->version);
	mix_str(t, m->client_version, sizeof(m->client_version));
	mix_u64(t, m->memory_cap_mb);
}

static void on_module(void *ctx, const struct proto_module *m)
{
	struct trace *t = ctx;

	if (m->build_id_len > sizeof(m->build_id))
		abort();
	mix_u64(t, MSG_MODULE);
	mix_u64(t, m->base);
	mix_str(t, m->path, sizeof(m->path));
	mix_u64(t, m->build_id_len);
	mix(t, m->build_id, m->build_id_len);
}

/* The front end indexes tables by type: the decoder must bound it. */
static void on_row(void *ctx, const struct proto_row *m)
{
	struct trace *t = ctx;

	if (m->type >= LOCK_TYPE_COUNT)
		abort();
	mix_u64(t, MSG_ROW);
	mix_u64(t, m->id);
	mix_u64(t, m->type);
	mix_u64(t, m->site);
	mix_u64(t, m->object);
}

static void on_counts(void *ctx, const struct proto_counts *m)
{
	struct trace *t = ctx;

	mix_u64(t, MSG_COUNTS);
	mix_u64(t, m->row);
	mix_u64(t, m->c.calls.acquisitions);
	mix_u64(t, m->c.calls.contended);
	mix_u64(t, m->c.calls.wait_ns);
	mix_u64(t, m->c.calls.failed);
	mix_u64(t, m->max_wait_ns);
	for (size_t i = 0; i < HIST_BUCKETS; i++)
		mix_u64(t, m->c.hist[i]);
}

static void on_tick(void *ctx, const struct proto_tick *m)
{
	struct trace *t = ctx;

	mix_u64(t, MSG_TICK);
	mix_u64(t, m->seq);
	mix_u64(t, m->monotonic_ns);
	mix_u64(t, m->threads_seen);
	mix_u64(t, m->threads_live);
	mix_u64(t, m->dropped);
	mix_u64(t, m->folded);
	mix_u64(t, m->memory_used);
	mix_u64(t, m->memory_cap);
	mix_u64(t, m->flags);
}

static void on_goodbye(void *ctx, const struct proto_goodbye *m)
{
	struct trace *t = ctx;

	mix_u64(t, MSG_GOODBYE);
	mix_u64(t, m->reason);
}

static void on_set_interval(void *ctx, uint32_t interval_ms)
{
	struct trace *t = ctx;

	mix_u64(t, MSG_SET_INTERVAL);
	mix_u64(t, interval_ms);
}

static void on_detach(void *ctx)
{
	mix_u64(ctx, MSG_DETACH);
}

/* The front end walks frames[0..depth): the decoder must bound depth. */
static void on_stack(void *ctx, const struct proto_stack *m)
{
	struct trace *t = ctx;

	if (m->depth > sizeof(m->frames) / sizeof(m->frames[0]))
		abort();
	mix_u64(t, MSG_STACK);
	mix_u64(t, m->id);
	mix_u64(t, m->depth);
	for (unsigned i = 0; i < m->depth; i++)
		mix_u64(t, m->frames[i]);
}

static void on_stack_row(void *ctx, const struct proto_stack_row *m)
{
	struct trace *t = ctx;

	mix_u64(t, MSG_STACK_ROW);
	mix_u64(t, m->id);
	mix_u64(t, m->row);
	mix_u64(t, m->stack);
	mix_u64(t, m->tid);
}

static void on_stack_counts(void *ctx, const struct proto_stack_counts *m)
{
	struct trace *t = ctx;

	mix_u64(t, MSG_STACK_COUNTS);
	mix_u64(t, m->id);
	mix_u64(t, m->w.count);
	mix_u64(t, m->w.wait_ns);
}

static void on_lock_order(void *ctx, const struct proto_lock_order *m)
{
	struct trace *t = ctx;

	mix_u64(t, MSG_LOCK_ORDER);
	mix_u64(t, m->id);
	mix_u64(t, m->stack);
	mix_u64(t, m->then_stack);
	mix_u64(t, m->first_object ^ m->then_object);
	mix_u64(t, m->first_site ^ m->then_site);
	mix_u64(t, m->rev_held_site ^ m->rev_site);
	mix_u64(t, m->count);
}

static const struct proto_visitor visitor = {
	.hello = on_hello,
	.client_hello = on_client_hello,
	.module = on_module,
	.row = on_row,
	.counts = on_counts,
	.tick = on_tick,
	.goodbye = on_goodbye,
	.set_interval = on_set_interval,
	.detach = on_detach,
	.stack = on_stack,
	.stack_row = on_stack_row,
	.stack_counts = on_stack_counts,
	.lock_order = on_lock_order,
};

/* An error message must be a terminated string within its buffer. */
static void check_err(struct trace *t, const char *err, size_t size)
{
	if (memchr(err, '\0', size) == NULL)
		abort();
	mix_u64(t, strlen(err));
}

/* Decode one frame from a copy of exactly its payload; false on error. */
static bool decode_copy(struct trace *t, const struct proto_frame *f)
{
	struct proto_frame copy = *f;
	uint8_t *payload = malloc(f->len ? f->len : 1);
	char err[160];
	int rc;

	if (payload == NULL)
		abort();
	memcpy(payload, f->payload, f->len);
	copy.payload = payload;
	memset(err, 0x55, sizeof(err));
	rc = proto_decode(&copy, &visitor, t, err, sizeof(err));
	free(payload);
	if (rc < 0)
		check_err(t, err, sizeof(err));
	return rc == 0;
}

/* Apply every whole frame buffered, as client.c's apply_frames() does. */
static void apply_frames(struct reader *r)
{
	size_t off = 0;
	char err[160];

	while (r->t.failed == 0) {
		struct proto_frame f;
		long n;

		memset(err, 0x55, sizeof(err));
		n = proto_split(r->in + off, r->len - off, &f, err, sizeof(err));
		if (n == 0)
			break;
		if (n < 0) {
			check_err(&r->t, err, sizeof(err));
			r->t.failed = 1;
			break;
		}
		/* The frame lies within the bytes split was given. */
		if ((size_t)n > r->len - off || f.payload < r->in + off ||
		    f.payload + f.len > r->in + off + (size_t)n)
			abort();
		mix_u64(&r->t, f.type);
		mix_u64(&r->t, (uint64_t)n);
		r->t.frames++;
		if (!decode_copy(&r->t, &f))
			r->t.failed = 2;
		off += (size_t)n;
	}
	memmove(r->in, r->in + off, r->len - off);
	r->len -= off;
}

/* Receive n more bytes into a buffer of exactly the bytes held. */
static void receive(struct reader *r, const uint8_t *p, size_t n)
{
	uint8_t *in = realloc(r->in, r->len + n ? r->len + n : 1);

	if (in == NULL)
		abort();
	r->in = in;
	memcpy(r->in + r->len, p, n);
	r->len += n;
	apply_frames(r);
}

/* Run the stream through a reader in pieces of the sizes in cuts (cycled). */
static struct trace read_stream(const uint8_t *data, size_t size,
				const size_t *cuts, size_t ncuts)
{
	struct reader r = { 0 };
	size_t off = 0;

	for (size_t i = 0; off < size && r.t.failed == 0; i++) {
		size_t n = cuts[i % ncuts];

		if (n > size - off)
			n = size - off;
		receive(&r, data + off, n);
		off += n;
	}
	free(r.in);
	return r.t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t whole[] = { SIZE_MAX };
	static const size_t pieces[] = { 1, 7, 2, 9, 3, 64, 5, 4096 };
	struct trace a = read_stream(data, size, whole, 1);
	struct trace b = read_stream(data, size, pieces,
				     sizeof(pieces) / sizeof(pieces[0]));

	if (a.hash != b.hash || a.frames != b.frames || a.failed != b.failed)
		abort();
	return 0;
}
