/* The wire codec: every message round-trips; bad frames are refused. */
#include <stdlib.h>
#include <string.h>

#include "../../common/proto.h"
#include "check.h"

/* What the decoder handed back, per message type. */
struct seen {
	int hellos, client_hellos, modules, rows, counts, ticks, goodbyes;
	int detaches;
	int holders_on, holders_off;	/* HOLDERS frames, by their flag */
	uint32_t interval_ms;
	struct proto_hello hello;
	struct proto_client_hello client_hello;
	struct proto_module module;
	struct proto_row row;
	struct proto_counts count;	/* the last one */
	uint64_t acq_sum;
	const struct proto_counts *expect; /* when set, what each should be */
	int count_mismatches;
	struct proto_tick tick;
	struct proto_goodbye goodbye;
	int stacks, stack_rows, stack_counts;
	struct proto_stack stack;
	struct proto_stack_row stack_row;
	struct proto_stack_counts stack_count;
	uint64_t stack_wait_sum;
	int lock_orders;
	struct proto_lock_order lock_order;
	int waits;
	struct proto_wait wait;
	int helds;
	struct proto_while_held held;
};

static void on_hello(void *c, const struct proto_hello *m) { ((struct seen *)c)->hellos++; ((struct seen *)c)->hello = *m; }
static void on_client_hello(void *c, const struct proto_client_hello *m) { ((struct seen *)c)->client_hellos++; ((struct seen *)c)->client_hello = *m; }
static void on_module(void *c, const struct proto_module *m) { ((struct seen *)c)->modules++; ((struct seen *)c)->module = *m; }
static void on_row(void *c, const struct proto_row *m) { ((struct seen *)c)->rows++; ((struct seen *)c)->row = *m; }
static void on_tick(void *c, const struct proto_tick *m) { ((struct seen *)c)->ticks++; ((struct seen *)c)->tick = *m; }
static void on_goodbye(void *c, const struct proto_goodbye *m) { ((struct seen *)c)->goodbyes++; ((struct seen *)c)->goodbye = *m; }
static void on_interval(void *c, uint32_t ms) { ((struct seen *)c)->interval_ms = ms; }
static void on_detach(void *c) { ((struct seen *)c)->detaches++; }
static void on_wait(void *c, const struct proto_wait *m) { ((struct seen *)c)->waits++; ((struct seen *)c)->wait = *m; }
static void on_while_held(void *c, const struct proto_while_held *m) { ((struct seen *)c)->helds++; ((struct seen *)c)->held = *m; }
static void on_holders(void *c, bool on) { on ? ((struct seen *)c)->holders_on++ : ((struct seen *)c)->holders_off++; }

static bool counts_equal(const struct proto_counts *a,
			 const struct proto_counts *b)
{
	bool same = a->row == b->row && a->max_wait_ns == b->max_wait_ns &&
		    a->max_hold_ns == b->max_hold_ns &&
		    memcmp(&a->c.calls, &b->c.calls, sizeof(a->c.calls)) == 0;

	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		same &= a->c.hist[i] == b->c.hist[i];
	return same;
}

static void on_counts(void *c, const struct proto_counts *m)
{
	struct seen *s = c;

	if (s->expect && !counts_equal(m, &s->expect[s->counts]))
		s->count_mismatches++;
	s->counts++;
	s->count = *m;
	s->acq_sum += m->c.calls.acquisitions;
}

static void on_stack(void *c, const struct proto_stack *m)
{
	((struct seen *)c)->stacks++;
	((struct seen *)c)->stack = *m;
}

static void on_stack_row(void *c, const struct proto_stack_row *m)
{
	((struct seen *)c)->stack_rows++;
	((struct seen *)c)->stack_row = *m;
}

static void on_stack_counts(void *c, const struct proto_stack_counts *m)
{
	struct seen *s = c;

	s->stack_counts++;
	s->stack_count = *m;
	s->stack_wait_sum += m->w.wait_ns;
}

static void on_lock_order(void *c, const struct proto_lock_order *m)
{
	((struct seen *)c)->lock_orders++;
	((struct seen *)c)->lock_order = *m;
}

static const struct proto_visitor visitor = {
	.hello = on_hello, .client_hello = on_client_hello, .module = on_module,
	.row = on_row, .counts = on_counts, .tick = on_tick, .goodbye = on_goodbye,
	.set_interval = on_interval, .detach = on_detach, .stack = on_stack,
	.stack_row = on_stack_row, .stack_counts = on_stack_counts,
	.holders = on_holders, .lock_order = on_lock_order,
	.wait = on_wait, .while_held = on_while_held,
};

/* Split and decode every frame of a buffer; returns frames or -1. */
static int decode_all(const uint8_t *p, size_t len, struct seen *s, char *err)
{
	size_t off = 0;
	int frames = 0;

	while (off < len) {
		struct proto_frame f;
		long n = proto_split(p + off, len - off, &f, err, 128);

		if (n <= 0)
			return n < 0 ? -1 : frames;
		if (proto_decode(&f, &visitor, s, err, 128) < 0)
			return -1;
		off += (size_t)n;
		frames++;
	}
	return frames;
}

static void test_hello_round_trip(void)
{
	struct proto_hello h = { .magic = PROTO_MAGIC, .version = PROTO_VERSION,
		.mode = MODE_LAUNCH, .flags = PROTO_HELLO_BASELINE, .pid = 4242,
		.interval_ms = 500,
		.start_realtime_ns = 1700000000123456789ull,
		.start_monotonic_ns = 987654321 };
	struct wbuf b = { 0 };
	struct seen s = { 0 };
	char err[128];

	strcpy(h.command, "demo --threads 4");
	strcpy(h.collector_version, "0.1.0");
	proto_put_hello(&b, &h);
	CHECK(decode_all(b.data, b.len, &s, err) == 1, "hello decodes: %s", err);
	CHECK_U64(s.hellos, 1);
	CHECK_U64(s.hello.magic, PROTO_MAGIC);
	CHECK_U64(s.hello.pid, 4242);
	CHECK_U64(s.hello.mode, MODE_LAUNCH);
	CHECK_U64(s.hello.flags, PROTO_HELLO_BASELINE);
	CHECK_U64(s.hello.interval_ms, 500);
	CHECK_U64(s.hello.start_realtime_ns, 1700000000123456789ull);
	CHECK_U64(s.hello.start_monotonic_ns, 987654321);
	CHECK_STR(s.hello.command, "demo --threads 4");
	CHECK_STR(s.hello.collector_version, "0.1.0");
	wbuf_free(&b);
}

static void test_small_messages_round_trip(void)
{
	struct proto_client_hello ch = { .magic = PROTO_MAGIC, .version = 1,
					 .memory_cap_mb = 96 };
	struct proto_module mod = { .base = 0x7f0000001000ull, .build_id_len = 20 };
	struct proto_row row = { .id = 77, .type = LOCK_RWLOCK_WRITE,
				 .site = 0x401234, .via = 0x405678,
				 .object = 0x55d0c0a8e040ull };
	struct proto_tick tick = { .seq = 9, .monotonic_ns = 123, .threads_seen = 5,
				   .threads_live = 3, .dropped = 11, .folded = 12,
				   .memory_used = 1u << 20, .memory_cap = 64u << 20,
				   .flags = PROTO_TICK_BASELINE };
	struct proto_goodbye bye = { .reason = GOODBYE_DETACH };
	struct wbuf b = { 0 };
	struct seen s = { 0 };
	char err[128];

	strcpy(ch.client_version, "0.1.0");
	strcpy(mod.path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	for (int i = 0; i < 20; i++)
		mod.build_id[i] = (uint8_t)(0xa0 + i);
	proto_put_client_hello(&b, &ch);
	proto_put_module(&b, &mod);
	proto_put_row(&b, &row);
	proto_put_tick(&b, &tick);
	proto_put_goodbye(&b, &bye);
	proto_put_set_interval(&b, 250);
	proto_put_detach(&b);
	proto_put_holders(&b, true);
	proto_put_holders(&b, false);
	CHECK(decode_all(b.data, b.len, &s, err) == 9, "9 frames decode: %s", err);
	CHECK_STR(s.client_hello.client_version, "0.1.0");
	CHECK_U64(s.client_hello.memory_cap_mb, 96);
	CHECK_U64(s.module.base, 0x7f0000001000ull);
	CHECK_STR(s.module.path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	CHECK_U64(s.module.build_id_len, 20);
	CHECK(memcmp(s.module.build_id, mod.build_id, 20) == 0, "build id bytes");
	CHECK_U64(s.row.id, 77);
	CHECK_U64(s.row.type, LOCK_RWLOCK_WRITE);
	CHECK_U64(s.row.site, 0x401234);
	CHECK_U64(s.row.via, 0x405678);
	CHECK_U64(s.row.object, 0x55d0c0a8e040ull);
	CHECK_U64(s.tick.seq, 9);
	CHECK_U64(s.tick.threads_live, 3);
	CHECK_U64(s.tick.dropped, 11);
	CHECK_U64(s.tick.folded, 12);
	CHECK_U64(s.tick.memory_used, 1u << 20);
	CHECK_U64(s.tick.memory_cap, 64u << 20);
	CHECK_U64(s.tick.flags, PROTO_TICK_BASELINE);
	CHECK_U64(s.goodbye.reason, GOODBYE_DETACH);
	CHECK_U64(s.interval_ms, 250);
	CHECK_U64(s.detaches, 1);
	CHECK_U64(s.holders_on, 1);
	CHECK_U64(s.holders_off, 1);
	wbuf_free(&b);
}

/* Many counts split over several frames, sparse histograms intact. */
static void test_counts_span_frames(void)
{
	struct wbuf b = { 0 };
	struct seen s = { 0 };
	size_t frame = SIZE_MAX;
	uint64_t want = 0;
	char err[128];
	int frames;

	for (uint32_t i = 0; i < 20000; i++) {
		struct proto_counts c = { .row = i, .c.calls = { .acquisitions = i * 3 + 1,
					  .contended = i, .timeouts = i / 2,
					  .wait_ns = i * 1000ull },
					  .max_wait_ns = i };
		c.c.hist[i % (HIST_BUCKETS - 1)] = i + 1;
		c.c.hist[HIST_BUCKETS - 1] = UINT64_MAX;
		want += c.c.calls.acquisitions;
		proto_put_counts(&b, &frame, &c);
	}
	proto_close_run(&b, &frame);
	frames = decode_all(b.data, b.len, &s, err);
	CHECK(frames > 1, "20000 counts use several frames, got %d (%s)", frames, err);
	CHECK_U64(s.counts, 20000);
	CHECK_U64(s.acq_sum, want);
	CHECK_U64(s.count.row, 19999);
	CHECK_U64(s.count.c.hist[19999 % (HIST_BUCKETS - 1)], 20000);
	CHECK_U64(s.count.c.hist[HIST_BUCKETS - 1], UINT64_MAX);
	CHECK_U64(s.count.c.hist[0], 0);
	CHECK_U64(s.count.c.calls.wait_ns, 19999000);
	CHECK_U64(s.count.c.calls.timeouts, 9999);
	CHECK_U64(s.count.max_wait_ns, 19999);
	wbuf_free(&b);
}

/* A value of 1 to 64 bits, so that varints of every length are written. */
static uint64_t of_bits(unsigned bits, uint32_t salt)
{
	uint64_t top = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;

	return (top >> 1) + 1 + salt % (top >> 1 | 1);
}

/*
 * Every field of every entry round-trips, whatever its varint's length
 * (1 to 10 bytes), and the histogram of one entry never leaks into the
 * next one's, in the middle of a frame as at its end.
 */
static void test_counts_round_trip_exactly(void)
{
	enum { N = 3000 };
	static struct proto_counts sent[N];
	struct wbuf b = { 0 };
	struct seen s = { .expect = sent };
	size_t frame = SIZE_MAX;
	char err[128];

	for (uint32_t i = 0; i < N; i++) {
		struct proto_counts *c = &sent[i];
		unsigned bits = 1 + i % 64;

		c->row = (uint32_t)of_bits(1 + i % 32, i);
		c->c.calls.acquisitions = of_bits(bits, i);
		c->c.calls.contended = i % 3 ? of_bits(65 - bits, i) : 0;
		c->c.calls.wait_ns = i % 5 ? of_bits(1 + (i * 7) % 64, i) : 0;
		c->c.calls.failed = i % 7 == 0 ? of_bits(bits, i + 1) : 0;
		c->c.calls.timeouts = i % 4 == 1 ? of_bits(bits, i + 2) : 0;
		c->c.calls.hold_ns = i % 6 == 2 ? of_bits(bits, i + 3) : 0;
		c->c.calls.holds_timed = i % 6 == 2 ? of_bits(1 + i % 20, i) : 0;
		c->max_hold_ns = i % 6 == 2 ? of_bits(1 + (i * 5) % 64, i) : 0;
		c->max_wait_ns = i % 2 ? of_bits(1 + (i * 3) % 64, i) : 0;
		for (unsigned k = 0; k < HIST_BUCKETS; k++)
			if ((i + k) % 9 == 0 || k == i % HIST_BUCKETS)
				c->c.hist[k] = of_bits(1 + (i + k) % 64, k);
		proto_put_counts(&b, &frame, c);
	}
	proto_close_run(&b, &frame);
	CHECK(decode_all(b.data, b.len, &s, err) > 0, "counts decode: %s", err);
	CHECK_U64(s.counts, N);
	CHECK_U64(s.count_mismatches, 0);
	wbuf_free(&b);
}

/* A row that never waited travels in a few bytes, and zeros round-trip. */
static void test_counts_are_compact(void)
{
	struct proto_counts c = { .row = 300, .c.calls.acquisitions = 100000 };
	struct proto_counts zero = { .row = 7 };
	struct wbuf b = { 0 };
	struct seen s = { 0 };
	size_t frame = SIZE_MAX;
	char err[128];

	proto_put_counts(&b, &frame, &c);
	proto_close_run(&b, &frame);
	CHECK(b.len <= PROTO_HEADER_SIZE + 7, "an uncontended row takes %zu bytes",
	      b.len - PROTO_HEADER_SIZE);
	proto_put_counts(&b, &frame, &zero);
	proto_close_run(&b, &frame);
	CHECK(decode_all(b.data, b.len, &s, err) == 2, "counts decode: %s", err);
	CHECK_U64(s.count.row, 7);
	CHECK_U64(s.count.c.calls.acquisitions, 0);
	CHECK_U64(s.acq_sum, 100000);
	wbuf_free(&b);
}

/* Stacks, stack rows and many stack counts round-trip; counts span frames. */
static void test_stacks_round_trip(void)
{
	struct proto_stack st = { .id = 7, .depth = PROTO_STACK_DEPTH };
	struct proto_stack_row sr = { .id = 3, .row = 9, .stack = PROTO_NO_STACK,
				      .tid = 4321 };
	struct wbuf b = { 0 };
	struct seen s = { 0 };
	size_t frame = SIZE_MAX;
	uint64_t want = 0;
	char err[128];

	for (int i = 0; i < PROTO_STACK_DEPTH; i++)
		st.frames[i] = 0x400000u + (uint64_t)i * 16;
	proto_put_stack(&b, &st);
	proto_put_stack_row(&b, &sr);
	for (uint32_t i = 0; i < 40000; i++) {
		struct proto_stack_counts c = { .id = i, .w = { .count = i + 1,
						.timeouts = i % 7,
						.wait_ns = i * 10ull } };
		want += c.w.wait_ns;
		proto_put_stack_counts(&b, &frame, &c);
	}
	proto_close_run(&b, &frame);
	CHECK(decode_all(b.data, b.len, &s, err) > 3, "stack frames decode: %s", err);
	CHECK_U64(s.stacks, 1);
	CHECK_U64(s.stack.id, 7);
	CHECK_U64(s.stack.depth, PROTO_STACK_DEPTH);
	CHECK_U64(s.stack.frames[PROTO_STACK_DEPTH - 1], 0x400000u + (PROTO_STACK_DEPTH - 1) * 16);
	CHECK_U64(s.stack_rows, 1);
	CHECK_U64(s.stack_row.row, 9);
	CHECK_U64(s.stack_row.stack, PROTO_NO_STACK);
	CHECK_U64(s.stack_row.tid, 4321);
	CHECK_U64(s.stack_counts, 40000);
	CHECK_U64(s.stack_wait_sum, want);
	CHECK_U64(s.stack_count.id, 39999);
	CHECK_U64(s.stack_count.w.count, 40000);
	CHECK_U64(s.stack_count.w.timeouts, 39999 % 7);
	wbuf_free(&b);
}

/* A frame with a hand-written header and payload. */
static size_t raw_frame(uint8_t *out, uint32_t len, uint16_t type,
			uint16_t flags, const void *payload, size_t n)
{
	uint8_t h[8] = { (uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
			 (uint8_t)(len >> 24), (uint8_t)type, (uint8_t)(type >> 8),
			 (uint8_t)flags, (uint8_t)(flags >> 8) };

	memcpy(out, h, 8);
	memcpy(out + 8, payload, n);
	return 8 + n;
}

struct bad_case {
	const char *what;
	uint16_t type;
	uint8_t payload[48];
	size_t len;
};

/* Payloads that must be refused, each with the type it claims. */
static const struct bad_case bad_cases[] = {
	{ "empty row", MSG_ROW, { 0 }, 0 },
	{ "row cut short", MSG_ROW, { 1, 0, 0, 0, 0, 1, 2, 3 }, 8 },
	{ "row with unknown lock type", MSG_ROW,
	  { 1, 0, 0, 0, 99, 1, 0, 0, 0, 0, 0, 0, 0, [21] = 1 }, 29 },
	{ "row with trailing bytes", MSG_ROW,
	  { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, [21] = 1, [29] = 9 }, 30 },
	{ "wrappers counting more ranges than they hold", MSG_WRAPPERS,
	  { 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0 }, 20 },
	{ "wrappers with a partial range", MSG_WRAPPERS,
	  { 0, 0, 0, 0, 1 }, 5 },
	{ "string longer than the frame", MSG_CLIENT_HELLO,
	  { 0x51, 0x53, 0x50, 0x54, 1, 0, 200, 0, 'a', 'b' }, 10 },
	{ "string with a NUL inside", MSG_CLIENT_HELLO,
	  { 0x51, 0x53, 0x50, 0x54, 1, 0, 3, 0, 'a', 0, 'b' }, 11 },
	{ "string longer than its field", MSG_CLIENT_HELLO,
	  { 0x51, 0x53, 0x50, 0x54, 1, 0, 0xff, 0xff }, 8 },
	{ "empty counts frame", MSG_COUNTS, { 0 }, 0 },
	{ "counts cut inside a varint", MSG_COUNTS, { 1, 1, 0x80 }, 3 },
	{ "counts with an unknown field", MSG_COUNTS, { 1, 0x80, 0x08, 1 }, 4 },
	{ "counts cut inside the histogram", MSG_COUNTS, { 1, 32, 3, 1 }, 4 },
	{ "histogram mask wider than 32 buckets", MSG_COUNTS,
	  { 1, 32, 0x80, 0x80, 0x80, 0x80, 0x10, 1 }, 8 },
	{ "row id wider than 32 bits", MSG_COUNTS,
	  { 0x80, 0x80, 0x80, 0x80, 0x10, 1, 1 }, 7 },
	{ "varint longer than 64 bits", MSG_COUNTS,
	  { 1, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02 }, 12 },
	{ "varint of eleven bytes", MSG_COUNTS,
	  { 1, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0 }, 13 },
	{ "tick cut short", MSG_TICK, { 1, 2, 3 }, 3 },
	{ "goodbye with extra bytes", MSG_GOODBYE, { 0, 0 }, 2 },
	{ "set-interval cut short", MSG_SET_INTERVAL, { 1, 0 }, 2 },
	{ "stack of depth 0", MSG_STACK, { 1, 0, 0, 0, 0 }, 5 },
	{ "stack deeper than allowed", MSG_STACK, { 1, 0, 0, 0, 33 }, 5 },
	{ "stack with fewer frames than its depth", MSG_STACK,
	  { 1, 0, 0, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8 }, 13 },
	{ "empty stack-counts frame", MSG_STACK_COUNTS, { 0 }, 0 },
	{ "stack counts cut short", MSG_STACK_COUNTS, { 1, 2 }, 2 },
	{ "stack row cut short", MSG_STACK_ROW, { 1, 0, 0, 0, 2, 0, 0, 0, 3 }, 9 },
	{ "lock order cut short", MSG_LOCK_ORDER, { 1, 0, 0, 0, 2, 0, 0, 0, 3 }, 9 },
	{ "wait cut short", MSG_WAIT, { 1, 0, 0, 0, 2, 0, 0, 0, 3 }, 9 },
	{ "while-held naming 9 calls", MSG_WHILE_HELD, { 1, [40] = 9 }, 41 },
};

/* A lock-order warning comes back field for field. */
static void test_lock_order_round_trip(void)
{
	struct proto_lock_order m = { .id = 7, .stack = PROTO_NO_STACK,
		.then_stack = 12,
		.first_object = 0x1000, .first_site = 0x2000,
		.then_object = 0x3000, .then_site = 0x4000,
		.rev_held_site = 0x5000, .rev_site = 0x6000,
		.count = 1ull << 40 };
	struct wbuf b = { 0 };
	struct seen s = { 0 };
	char err[128] = "";

	proto_put_lock_order(&b, &m);
	CHECK(decode_all(b.data, b.len, &s, err) == 1, "lock order: one frame (%s)",
	      err);
	CHECK_U64(s.lock_orders, 1);
	CHECK(s.lock_order.id == m.id && s.lock_order.stack == m.stack &&
	      s.lock_order.then_stack == m.then_stack &&
	      s.lock_order.first_object == m.first_object &&
	      s.lock_order.first_site == m.first_site &&
	      s.lock_order.then_object == m.then_object &&
	      s.lock_order.then_site == m.then_site &&
	      s.lock_order.rev_held_site == m.rev_held_site &&
	      s.lock_order.rev_site == m.rev_site && s.lock_order.count == m.count,
	      "lock order: every field as sent");
	wbuf_free(&b);
}

static void test_malformed_payloads(void)
{
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		uint8_t buf[64];
		size_t n = raw_frame(buf, (uint32_t)c->len, c->type, 0, c->payload, c->len);
		struct seen s = { 0 };
		char err[128] = "";
		int got = decode_all(buf, n, &s, err);

		CHECK(got == -1, "%s: expected an error, decoded %d frame(s)", c->what, got);
		CHECK(err[0] != '\0', "%s: error has a message", c->what);
		CHECK(s.rows + s.counts + s.client_hellos + s.ticks + s.goodbyes +
		      s.stacks + s.stack_rows + s.stack_counts + s.lock_orders +
		      s.waits + s.helds == 0,
		      "%s: no callback ran", c->what);
	}
}

/* A counts frame whose third entry is bad applies none of them. */
static void test_bad_counts_apply_nothing(void)
{
	struct wbuf b = { 0 };
	struct seen s = { 0 };
	size_t frame = SIZE_MAX;
	char err[128];

	for (uint32_t i = 0; i < 3; i++) {
		struct proto_counts c = { .row = i, .c.calls.acquisitions = 1000 };

		proto_put_counts(&b, &frame, &c);
	}
	proto_close_run(&b, &frame);
	b.data[0] = (uint8_t)(b.data[0] - 1);	/* shorten the payload by one */
	CHECK(decode_all(b.data, b.len - 1, &s, err) == -1, "cut counts refused");
	CHECK_U64(s.counts, 0);
	wbuf_free(&b);
}

/* Wrapper ranges round-trip; none is a message too. */
static void test_wrappers_round_trip(void)
{
	uint64_t ranges[6] = { 0x1000, 0x1040, 0x7f0000002000ull, 0x7f0000002100ull,
			       0x400, 0x500 };
	struct wbuf b = { 0 };
	char err[128];
	size_t off = 0;
	int frames = 0;

	proto_put_wrappers(&b, ranges, 3);
	proto_put_wrappers(&b, NULL, 0);
	while (off < b.len) {
		struct proto_frame f;
		long n = proto_split(b.data + off, b.len - off, &f, err, sizeof(err));

		CHECK(n > 0 && f.type == MSG_WRAPPERS, "a wrappers frame splits");
		if (n <= 0)
			break;
		if (frames == 0) {
			uint64_t lo, hi;

			CHECK_U64(f.len, 4 + 3 * 16);
			proto_wrapper_range(f.payload + 4, 1, &lo, &hi);
			CHECK_U64(lo, 0x7f0000002000ull);
			CHECK_U64(hi, 0x7f0000002100ull);
		} else {
			CHECK_U64(f.len, 4);
		}
		CHECK(proto_decode(&f, &visitor, &(struct seen){ 0 }, err, sizeof(err)) == 0,
		      "wrappers decode: %s", err);
		off += (size_t)n;
		frames++;
	}
	CHECK_U64(frames, 2);
	wbuf_free(&b);
}

/* Another protocol version's hello is reported as such, not as garbage. */
static void test_other_version_hello(void)
{
	struct proto_hello h = { .magic = PROTO_MAGIC, .version = 1, .pid = 7 };
	struct wbuf b = { 0 };
	struct seen s = { 0 };
	char err[128];

	strcpy(h.command, "old");
	proto_put_hello(&b, &h);
	b.data[PROTO_HEADER_SIZE + 4] = 1;	/* version 1 on the wire */
	CHECK(decode_all(b.data, b.len, &s, err) == 1, "old hello decodes: %s", err);
	CHECK_U64(s.hello.version, 1);
	wbuf_free(&b);
}

static void test_split_headers(void)
{
	uint8_t buf[16] = { 0 };
	struct proto_frame f;
	char err[128] = "";

	CHECK(proto_split(buf, 7, &f, err, sizeof(err)) == 0, "short header needs more");
	raw_frame(buf, 4, MSG_SET_INTERVAL, 0, "\x10\0\0\0", 4);
	CHECK(proto_split(buf, 11, &f, err, sizeof(err)) == 0, "short payload needs more");
	CHECK(proto_split(buf, 12, &f, err, sizeof(err)) == 12, "whole frame splits");
	raw_frame(buf, PROTO_MAX_PAYLOAD + 1, MSG_ROW, 0, "", 0);
	CHECK(proto_split(buf, 8, &f, err, sizeof(err)) == -1, "oversized frame refused");
	CHECK(strstr(err, "exceeds") != NULL, "oversize message: %s", err);
	raw_frame(buf, 0, MSG_DETACH, 1, "", 0);
	CHECK(proto_split(buf, 8, &f, err, sizeof(err)) == -1, "unknown flags refused");
}

/* A wait in progress crosses whole: who, where, how long, behind whom. */
static void test_wait_round_trip(void)
{
	struct proto_wait w = { .tid = 4243, .row = 7,
				.blocked_ns = 3000000001ull, .holder = 4244 };
	struct wbuf b = { 0 };
	struct seen s = { 0 };
	char err[128] = "";

	proto_put_wait(&b, &w);
	CHECK(decode_all(b.data, b.len, &s, err) == 1, "a wait decodes: %s", err);
	CHECK(s.waits == 1 && s.wait.tid == 4243 && s.wait.row == 7 &&
	      s.wait.blocked_ns == 3000000001ull && s.wait.holder == 4244,
	      "wait round-trips: expected tid 4243 row 7 3000000001 ns holder "
	      "4244, got %d frame(s), tid %u row %u %llu ns holder %u", s.waits,
	      s.wait.tid, s.wait.row, (unsigned long long)s.wait.blocked_ns,
	      s.wait.holder);
	wbuf_free(&b);
}

/* What holders did crosses whole, its system calls too. */
static void test_while_held_round_trip(void)
{
	struct proto_while_held h = { .row = 3, .running_ns = 11,
		.runnable_ns = 12, .lock_wait_ns = 13, .exited_ns = 14,
		.lock_row = 5, .nsys = 2,
		.sys = { { 0, 990 }, { PROTO_HELD_OTHER_CALL, 7 } } };
	struct wbuf b = { 0 };
	struct seen s = { 0 };
	char err[128] = "";

	proto_put_while_held(&b, &h);
	CHECK(decode_all(b.data, b.len, &s, err) == 1, "while-held decodes: %s",
	      err);
	CHECK(s.helds == 1 && s.held.row == 3 && s.held.running_ns == 11 &&
	      s.held.runnable_ns == 12 && s.held.lock_wait_ns == 13 &&
	      s.held.exited_ns == 14 && s.held.lock_row == 5 &&
	      s.held.nsys == 2 && s.held.sys[0].nr == 0 &&
	      s.held.sys[0].ns == 990 &&
	      s.held.sys[1].nr == PROTO_HELD_OTHER_CALL && s.held.sys[1].ns == 7,
	      "while-held round-trips: got %d frame(s), row %u, %u calls",
	      s.helds, s.held.row, s.held.nsys);
	wbuf_free(&b);
}

static void test_unknown_type_is_skipped(void)
{
	uint8_t buf[32];
	size_t n = raw_frame(buf, 5, 999, 0, "hello", 5);
	struct seen s = { 0 };
	char err[128];

	CHECK(decode_all(buf, n, &s, err) == 1, "unknown frame type skipped: %s", err);
}

/* Random bytes: any result is fine but a crash or an over-read (ASan). */
static void test_random_bytes(void)
{
	uint8_t *buf = malloc(4096);
	unsigned seed = 12345;
	int refused = 0;

	for (int round = 0; round < 20000; round++) {
		size_t len = (size_t)(rand_r(&seed) % 200);
		struct proto_frame f;
		struct seen s = { 0 };
		char err[128];
		uint8_t *p;

		for (size_t i = 0; i < len + 8; i++)
			buf[i] = (uint8_t)rand_r(&seed);
		buf[0] = (uint8_t)len;
		buf[1] = buf[2] = buf[3] = 0;
		buf[4] = (uint8_t)(1 + rand_r(&seed) % 66);	/* every known type */
		buf[5] = buf[6] = buf[7] = 0;
		p = malloc(len + 8);	/* exact size: ASan sees any over-read */
		memcpy(p, buf, len + 8);
		if (proto_split(p, len + 8, &f, err, sizeof(err)) > 0 &&
		    proto_decode(&f, &visitor, &s, err, sizeof(err)) < 0)
			refused++;
		free(p);
	}
	CHECK(refused > 1000, "most random frames refused (%d of 20000)", refused);
	free(buf);
}

int main(void)
{
	test_hello_round_trip();
	test_small_messages_round_trip();
	test_counts_span_frames();
	test_counts_round_trip_exactly();
	test_counts_are_compact();
	test_stacks_round_trip();
	test_lock_order_round_trip();
	test_malformed_payloads();
	test_bad_counts_apply_nothing();
	test_other_version_hello();
	test_wrappers_round_trip();
	test_split_headers();
	test_unknown_type_is_skipped();
	test_wait_round_trip();
	test_while_held_round_trip();
	test_random_bytes();
	return check_summary();
}
