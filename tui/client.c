/* Reading the collector's frames and applying them. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client.h"
#include "xalloc.h"

#define IN_CAP (PROTO_HEADER_SIZE + PROTO_MAX_PAYLOAD)

void client_init(struct client *c, int fd, struct model *m, struct symbols *s)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->model = m;
	c->symbols = s;
	c->in = xmalloc(IN_CAP);
}

/* The connection is over; the first reason given is kept. */
static void end(struct client *c, enum target_state state, const char *why)
{
	if (c->fd < 0)
		return;
	close(c->fd);
	c->fd = -1;
	c->state = state;
	if (why && c->error[0] == '\0')
		snprintf(c->error, sizeof(c->error), "%s", why);
}

static void on_hello(void *ctx, const struct proto_hello *m)
{
	struct client *c = ctx;
	char why[160];

	if (m->magic != PROTO_MAGIC || m->version != PROTO_VERSION) {
		snprintf(why, sizeof(why), "collector version mismatch: it "
			 "speaks protocol %u (collector %s), this qsptop %u (%s)",
			 m->version, m->collector_version, PROTO_VERSION,
			 QSPTOP_VERSION);
		end(c, TARGET_LOST, why);
		return;
	}
	c->hello = *m;
	c->have_hello = true;
	model_set_origin(c->model, m->start_monotonic_ns);
}

static void on_module(void *ctx, const struct proto_module *m)
{
	struct client *c = ctx;

	symbols_add_module(c->symbols, m->path, m->base, m->build_id,
			   m->build_id_len);
}

static void on_row(void *ctx, const struct proto_row *m)
{
	struct client *c = ctx;

	if (model_define_row(c->model, m) < 0)
		end(c, TARGET_LOST, "collector sent a row id out of range");
}

static void on_delta(void *ctx, const struct proto_delta *m)
{
	struct client *c = ctx;

	model_apply_delta(c->model, m);
}

static void on_stack(void *ctx, const struct proto_stack *m)
{
	struct client *c = ctx;

	if (model_define_stack(c->model, m) < 0)
		end(c, TARGET_LOST, "collector sent a stack id out of range");
}

static void on_stack_delta(void *ctx, const struct proto_stack_delta *m)
{
	struct client *c = ctx;

	model_apply_stack_delta(c->model, m);
}

static void on_tick(void *ctx, const struct proto_tick *m)
{
	struct client *c = ctx;

	model_tick(c->model, m);
	c->ticks++;
	c->last_tick_ns = m->monotonic_ns;
}

static void on_goodbye(void *ctx, const struct proto_goodbye *m)
{
	struct client *c = ctx;

	if (m->reason == GOODBYE_EXIT)
		model_fold_last_interval(c->model);
	end(c, m->reason == GOODBYE_EXIT ? TARGET_EXITED : TARGET_LOST, NULL);
}

static const struct proto_visitor visitor = {
	.hello = on_hello,
	.module = on_module,
	.row = on_row,
	.delta = on_delta,
	.tick = on_tick,
	.goodbye = on_goodbye,
	.stack = on_stack,
	.stack_delta = on_stack_delta,
};

/* Apply every whole frame in the buffer. */
static void apply_frames(struct client *c)
{
	size_t off = 0;
	char err[160], why[200];

	while (c->fd >= 0) {
		struct proto_frame f;
		long n = proto_split(c->in + off, c->in_len - off, &f, err,
				     sizeof(err));

		if (n == 0)
			break;
		if (n > 0 && !c->have_hello && f.type != MSG_HELLO) {
			n = -1;
			snprintf(err, sizeof(err), "no hello before frame type %u",
				 f.type);
		}
		if (n > 0 && proto_decode(&f, &visitor, c, err, sizeof(err)) < 0)
			n = -1;
		if (n < 0) {
			snprintf(why, sizeof(why), "garbage from the collector: %s", err);
			end(c, TARGET_LOST, why);
			return;
		}
		off += (size_t)n;
	}
	memmove(c->in, c->in + off, c->in_len - off);
	c->in_len -= off;
}

/* Read what is there; false once the connection is over. */
static bool read_some(struct client *c)
{
	ssize_t n = recv(c->fd, c->in + c->in_len, IN_CAP - c->in_len,
			 MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n <= 0) {
		end(c, TARGET_LOST, n < 0 ? strerror(errno) :
		    "the collector closed the connection without a goodbye");
		return false;
	}
	c->in_len += (size_t)n;
	apply_frames(c);
	return c->fd >= 0;
}

int client_poll(struct client *c, int timeout_ms)
{
	uint64_t ticks = c->ticks;
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };

	if (c->fd < 0)
		return -1;
	if (poll(&pfd, 1, timeout_ms) > 0) {
		while (read_some(c) && c->in_len < IN_CAP) {
			pfd.revents = 0;
			if (poll(&pfd, 1, 0) <= 0)
				break;
		}
	}
	if (c->ticks != ticks)
		return 1;
	return c->fd < 0 ? -1 : 0;
}

/* Send a short control frame; a gone collector needs no telling. */
static void send_frame(struct client *c, const struct wbuf *b)
{
	if (c->fd >= 0 && !b->failed &&
	    send(c->fd, b->data, b->len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* The connection is ending; client_poll() will say so. */
	}
}

void client_set_interval(struct client *c, unsigned interval_ms)
{
	struct wbuf b = { 0 };

	proto_put_set_interval(&b, interval_ms);
	send_frame(c, &b);
	wbuf_free(&b);
}

void client_detach(struct client *c)
{
	struct wbuf b = { 0 };

	if (c->fd < 0)
		return;
	proto_put_detach(&b);
	send_frame(c, &b);
	wbuf_free(&b);
	end(c, TARGET_RUNNING, NULL);
}

void client_close(struct client *c)
{
	end(c, c->state, NULL);
	free(c->in);
	c->in = NULL;
}
