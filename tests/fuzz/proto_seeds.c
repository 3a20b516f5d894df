/*
 * Seeds for fuzz_proto, written by the real encoders so that they always
 * speak the current protocol: a whole collector session, a whole client
 * session, and each message on its own. Usage: proto_seeds DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/proto.h"

static const char *dir;
static int failures;

/* Write b to DIR/name and empty it. */
static void save(struct wbuf *b, const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/seed-%s", dir, name);
	f = fopen(path, "wb");
	if (b->failed || f == NULL || fwrite(b->data, 1, b->len, f) != b->len ||
	    fclose(f) != 0) {
		fprintf(stderr, "proto_seeds: cannot write %s\n", path);
		failures++;
	}
	wbuf_free(b);
}

static void put_hello(struct wbuf *b)
{
	struct proto_hello h = { .magic = PROTO_MAGIC, .version = PROTO_VERSION,
		.mode = MODE_LAUNCH, .pid = 4242, .interval_ms = 1000,
		.start_realtime_ns = 1700000000000000000ull,
		.start_monotonic_ns = 123456789 };

	snprintf(h.command, sizeof(h.command), "./server --port 80");
	snprintf(h.collector_version, sizeof(h.collector_version), "%s",
		 QSPTOP_VERSION);
	proto_put_hello(b, &h);
}

static void put_modules(struct wbuf *b)
{
	struct proto_module m = { .base = 0x555555554000ull, .build_id_len = 20 };

	snprintf(m.path, sizeof(m.path), "/srv/app");
	for (int i = 0; i < m.build_id_len; i++)
		m.build_id[i] = (uint8_t)(0xa0 + i);
	proto_put_module(b, &m);
	m = (struct proto_module){ .base = 0x7ffff7dd0000ull };
	snprintf(m.path, sizeof(m.path), "/lib/x86_64-linux-gnu/libc.so.6");
	proto_put_module(b, &m);
}

static void put_rows(struct wbuf *b)
{
	for (uint32_t i = 0; i < LOCK_TYPE_COUNT; i++) {
		struct proto_row r = { .id = i, .type = (uint8_t)i,
			.site = 0x555555555100ull + 16 * i,
			.object = i == LOCK_CONDVAR ? 0 : 0x555555558040ull + 64 * i };

		proto_put_row(b, &r);
	}
}

static void put_stacks(struct wbuf *b)
{
	struct proto_stack s = { .id = 0, .depth = 1,
				 .frames = { 0x555555555109ull } };

	proto_put_stack(b, &s);
	s.id = 1;
	s.depth = PROTO_STACK_DEPTH;
	for (int i = 0; i < PROTO_STACK_DEPTH; i++)
		s.frames[i] = 0x555555555000ull + 0x40 * (uint64_t)i;
	proto_put_stack(b, &s);
}

static void put_counts(struct wbuf *b)
{
	size_t frame = SIZE_MAX;

	for (uint32_t i = 0; i < LOCK_TYPE_COUNT; i++) {
		struct proto_counts c = { .row = i, .c.calls = {
			.acquisitions = 1000 * (i + 1), .contended = 10 * i,
			.wait_ns = 123456 * i, .failed = i / 2 },
			.max_wait_ns = 99999 * i };

		c.c.hist[i * 6 % HIST_BUCKETS] = i + 1;
		c.c.hist[HIST_BUCKETS - 1] = i;
		proto_put_counts(b, &frame, &c);
	}
	proto_close_run(b, &frame);
}

static void put_stack_counts(struct wbuf *b)
{
	size_t frame = SIZE_MAX;
	struct proto_stack_row r = { .id = 0, .row = 0, .stack = 0, .tid = 4243 };
	struct proto_stack_counts c = { .id = 0,
		.w = { .count = 3, .wait_ns = 300000 } };

	proto_put_stack_row(b, &r);
	r.id = 1;
	r.stack = PROTO_NO_STACK;
	proto_put_stack_row(b, &r);
	proto_put_stack_counts(b, &frame, &c);
	c.id = 1;
	c.w.count = 1;
	proto_put_stack_counts(b, &frame, &c);
	proto_close_run(b, &frame);
}

static void put_lock_order(struct wbuf *b)
{
	struct proto_lock_order o = { .id = 0, .stack = 0, .then_stack = 1,
		.first_object = 0x55d0c0a8e040, .first_site = 0x55d0c0a8a1b3,
		.then_object = 0x55d0c0a8e080, .then_site = 0x55d0c0a8a1f0,
		.rev_held_site = 0x55d0c0a8a240, .rev_site = 0x55d0c0a8a260,
		.count = 3 };

	proto_put_lock_order(b, &o);
	o.id = 1;
	o.stack = PROTO_NO_STACK;
	proto_put_lock_order(b, &o);
}

static void put_waits(struct wbuf *b)
{
	struct proto_wait w = { .tid = 4243, .row = 0,
				.blocked_ns = 3000000000ull, .holder = 4244 };

	proto_put_wait(b, &w);
	w = (struct proto_wait){ .tid = 4245, .row = 1, .blocked_ns = 1 };
	proto_put_wait(b, &w);
}

static void put_while_held(struct wbuf *b)
{
	struct proto_while_held h = { .row = 1, .running_ns = 5000000,
		.runnable_ns = 100000, .lock_wait_ns = 2000000,
		.exited_ns = 0, .lock_row = 3, .nsys = 2,
		.sys = { { 0, 40000000 }, { PROTO_HELD_OTHER_CALL, 10 } } };

	proto_put_while_held(b, &h);
}

static void put_tick(struct wbuf *b)
{
	struct proto_tick t = { .seq = 1, .monotonic_ns = 1123456789,
				.threads_seen = 5, .threads_live = 4,
				.dropped = 7 };

	proto_put_tick(b, &t);
}

static void put_goodbye(struct wbuf *b)
{
	proto_put_goodbye(b, &(struct proto_goodbye){ .reason = GOODBYE_EXIT });
}

static void put_client_hello(struct wbuf *b)
{
	struct proto_client_hello h = { .magic = PROTO_MAGIC,
					.version = PROTO_VERSION };

	snprintf(h.client_version, sizeof(h.client_version), "%s", QSPTOP_VERSION);
	proto_put_client_hello(b, &h);
}

static void put_set_interval(struct wbuf *b)
{
	proto_put_set_interval(b, 250);
}

static void put_detach(struct wbuf *b)
{
	proto_put_detach(b);
}

static const struct {
	const char *name;
	void (*put)(struct wbuf *b);
} messages[] = {
	{ "hello", put_hello }, { "modules", put_modules },
	{ "rows", put_rows }, { "stacks", put_stacks },
	{ "counts", put_counts }, { "stack-counts", put_stack_counts },
	{ "waits", put_waits }, { "while-held", put_while_held },
	{ "tick", put_tick }, { "goodbye", put_goodbye },
	{ "client-hello", put_client_hello },
	{ "set-interval", put_set_interval }, { "detach", put_detach },
	{ "lock-order", put_lock_order },
};

int main(int argc, char **argv)
{
	struct wbuf b = { 0 };

	if (argc != 2) {
		fprintf(stderr, "usage: proto_seeds DIR\n");
		return 2;
	}
	dir = argv[1];
	for (size_t i = 0; i < sizeof(messages) / sizeof(messages[0]); i++) {
		messages[i].put(&b);
		save(&b, messages[i].name);
	}
	/* A collector's session: hello, definitions, two intervals, goodbye. */
	for (size_t i = 0; i < 9; i++)
		messages[i].put(&b);
	put_counts(&b);
	put_lock_order(&b);
	put_tick(&b);
	put_goodbye(&b);
	save(&b, "collector-session");
	put_client_hello(&b);
	put_set_interval(&b);
	put_detach(&b);
	save(&b, "client-session");
	return failures != 0;
}
