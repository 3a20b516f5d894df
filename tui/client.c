/* Reading the collector's frames and applying them. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client.h"
#include "procs.h"
#include "shmobj.h"
#include "xalloc.h"

#define IN_CAP (PROTO_HEADER_SIZE + PROTO_MAX_PAYLOAD)
/* Ids beyond these are refused: a hostile peer cannot make us allocate more. */
#define ROW_IDS_MAX (1u << 24)
#define STACK_ROW_IDS_MAX (1u << 24)
#define NO_MODEL_ID UINT32_MAX

void client_init(struct client *c, int fd, struct model *m, struct symbols *s,
		 unsigned proc, struct client_ids *ids)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->model = m;
	c->symbols = s;
	c->proc = proc;
	c->ids = ids;
	c->clock = true;
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
	c->in_baseline = (m->flags & PROTO_HELLO_BASELINE) != 0;
	c->origin_ns = m->start_monotonic_ns;
	if (!c->in_baseline && c->clock)
		model_set_origin(c->model, m->start_monotonic_ns);
}

static void on_module(void *ctx, const struct proto_module *m)
{
	struct client *c = ctx;

	symbols_add_module(c->symbols, m->path, procs_tag(c->proc, m->base),
			   m->build_id, m->build_id_len);
}

/* Make *v (elements of size bytes) hold index id, zeroing what is new. */
static bool hold_index(void **v, size_t *cap, uint32_t id, size_t max,
		       size_t size)
{
	size_t n = *cap ? *cap : 256;

	if (id < *cap)
		return true;
	if (id >= max)
		return false;
	while (n <= id)
		n *= 2;
	*v = xrealloc(*v, n * size);
	memset((char *)*v + *cap * size, 0, (n - *cap) * size);
	*cap = n;
	return true;
}

/*
 * The model's id for a collector's id in *map (ids + 1), NO_MODEL_ID when
 * it has none; with make, a fresh one from *next then.
 */
static uint32_t map_id(uint32_t **map, size_t *cap, uint32_t id, uint32_t *next,
		       bool make)
{
	if (id >= *cap && !(make && hold_index((void **)map, cap, id, ROW_IDS_MAX,
					       sizeof(**map))))
		return NO_MODEL_ID;
	if ((*map)[id] == 0 && make)
		(*map)[id] = ++*next;
	return (*map)[id] - 1;
}

static void on_row(void *ctx, const struct proto_row *m)
{
	struct client *c = ctx;
	struct proto_row r = *m;

	r.id = map_id(&c->row_map, &c->row_map_cap, m->id, &c->ids->rows, true);
	r.site = procs_tag(c->proc, m->site);
	r.via = procs_tag(c->proc, m->via);
	r.object = c->shm ? shmobj_object(c->shm, c->proc, m->object) :
			    procs_tag(c->proc, m->object);
	if (r.id == NO_MODEL_ID || model_define_row(c->model, &r) < 0)
		end(c, TARGET_LOST, "collector sent a row id out of range");
}

/* The model's id of a collector's stack id, made on first sight. */
static uint32_t stack_id(struct client *c, uint32_t id)
{
	if (id == PROTO_NO_STACK)
		return id;
	return map_id(&c->stack_map, &c->stack_map_cap, id, &c->ids->stacks,
		      true);
}

/* The growth of a row since its last counts; remember the new ones. */
static void on_counts(void *ctx, const struct proto_counts *m)
{
	struct client *c = ctx;
	struct proto_delta d;	/* its histogram only filled in when not empty */

	if (!hold_index((void **)&c->last, &c->last_cap, m->row, ROW_IDS_MAX,
			sizeof(*c->last))) {
		end(c, TARGET_LOST, "collector sent a row id out of range");
		return;
	}
	d.row = m->row;
	d.max_wait_ns = m->max_wait_ns;
	d.max_hold_ns = m->max_hold_ns;
	d.hist_empty = !lock_counts_advance(&d.c, &c->last[m->row], &m->c);
	d.row = map_id(&c->row_map, &c->row_map_cap, m->row, &c->ids->rows, false);
	if (!c->in_baseline)
		model_apply_delta(c->model, &d);
}

/*
 * Whether m is a blame pseudo-stack, which names a holder instead of
 * frames: noted apart, never a stack of the model.
 */
static bool blame_stack(struct client *c, const struct proto_stack *m)
{
	uint64_t site, frames[PROTO_STACK_DEPTH];

	if (m->depth < 2 || (m->frames[0] != PROTO_HOLDER_MARK &&
			     (m->depth != 2 || m->frames[0] != PROTO_BLAME_MARK)))
		return false;
	if (!hold_index((void **)&c->blame, &c->blame_cap, m->id,
			STACK_ROW_IDS_MAX, sizeof(*c->blame))) {
		end(c, TARGET_LOST, "collector sent a stack id out of range");
		return true;
	}
	if (m->frames[0] == PROTO_HOLDER_MARK) {
		for (unsigned i = 1; i < m->depth && i < PROTO_STACK_DEPTH; i++)
			frames[i - 1] = procs_tag(c->proc, m->frames[i]);
		c->blame[m->id] = (struct blame_def){ .holder = 1 +
			model_holder_define(c->model, frames, m->depth - 1) };
		return true;
	}
	site = PROTO_BLAME_SITE(m->frames[1]);
	c->blame[m->id] = (struct blame_def){
		.is = true, .type = (uint8_t)PROTO_BLAME_TYPE(m->frames[1]),
		.site = site ? procs_tag(c->proc, site) : 0 };
	return true;
}

static void on_stack(void *ctx, const struct proto_stack *m)
{
	struct client *c = ctx;
	struct proto_stack st = *m;

	if (blame_stack(c, m))
		return;
	st.id = stack_id(c, m->id);
	for (unsigned i = 0; i < m->depth && i < PROTO_STACK_DEPTH; i++)
		st.frames[i] = procs_tag(c->proc, m->frames[i]);
	if (st.id == NO_MODEL_ID || model_define_stack(c->model, &st) < 0)
		end(c, TARGET_LOST, "collector sent a stack id out of range");
}

static void on_stack_row(void *ctx, const struct proto_stack_row *m)
{
	struct client *c = ctx;
	struct stack_last *l;

	if (!hold_index((void **)&c->stack_last, &c->stack_last_cap, m->id,
			STACK_ROW_IDS_MAX, sizeof(*c->stack_last))) {
		end(c, TARGET_LOST, "collector sent a stack row id out of range");
		return;
	}
	l = &c->stack_last[m->id];
	*l = (struct stack_last){ .defined = true, .row = m->row,
				  .stack = m->stack, .tid = m->tid };
}

/*
 * The growth of stack row l since its last counts, now m's, into *w; the
 * model's row it counts on, or NO_MODEL_ID when it is not to be applied
 * (unmapped, or counted in the baseline).
 */
static uint32_t stack_row_growth(struct client *c, struct stack_last *l,
				 const struct proto_stack_counts *m,
				 struct wait_counts *w)
{
	uint32_t row = map_id(&c->row_map, &c->row_map_cap, l->row,
			      &c->ids->rows, false);

	*w = m->w;
	wait_counts_sub(w, &l->w);
	l->w = m->w;
	return c->in_baseline ? NO_MODEL_ID : row;
}

/* The growth of a stack row of a blame pseudo-stack: waits behind a holder. */
static void on_blame_counts(struct client *c, struct stack_last *l,
			    const struct proto_stack_counts *m)
{
	const struct blame_def *b = &c->blame[l->stack];
	struct wait_counts w;
	uint32_t row = stack_row_growth(c, l, m, &w);

	if (row != NO_MODEL_ID)
		model_apply_blame(c->model, row, b->site, b->type, &w);
}

/* The growth of a stack row of a holder stack: releases with waiters. */
static void on_holder_counts(struct client *c, struct stack_last *l,
			     const struct proto_stack_counts *m)
{
	struct wait_counts w;
	uint32_t row = stack_row_growth(c, l, m, &w);

	if (row != NO_MODEL_ID)
		model_apply_holder(c->model, row, c->blame[l->stack].holder - 1,
				   w.count);
}

static void on_stack_counts(void *ctx, const struct proto_stack_counts *m)
{
	struct client *c = ctx;
	struct stack_last *l;
	struct proto_stack_delta d;

	if (m->id >= c->stack_last_cap || !c->stack_last[m->id].defined) {
		end(c, TARGET_LOST, "collector sent counts of an undefined stack row");
		return;
	}
	l = &c->stack_last[m->id];
	if (l->stack < c->blame_cap && c->blame[l->stack].holder) {
		on_holder_counts(c, l, m);
		return;
	}
	if (l->stack < c->blame_cap && c->blame[l->stack].is) {
		on_blame_counts(c, l, m);
		return;
	}
	d = (struct proto_stack_delta){ .row = map_id(&c->row_map,
		&c->row_map_cap, l->row, &c->ids->rows, false),
		.stack = stack_id(c, l->stack), .tid = l->tid, .w = m->w };
	wait_counts_sub(&d.w, &l->w);
	l->w = m->w;
	if (!c->in_baseline)
		model_apply_stack_delta(c->model, &d);
}

/* A lock-order warning, new or grown: sites tagged, its stack mapped. */
static void on_lock_order(void *ctx, const struct proto_lock_order *m)
{
	struct client *c = ctx;
	struct lock_order w = {
		.proc = c->proc, .id = m->id, .stack = stack_id(c, m->stack),
		.then_stack = stack_id(c, m->then_stack),
		.first_object = procs_tag(c->proc, m->first_object),
		.first_site = procs_tag(c->proc, m->first_site),
		.then_object = procs_tag(c->proc, m->then_object),
		.then_site = procs_tag(c->proc, m->then_site),
		.rev_held_site = procs_tag(c->proc, m->rev_held_site),
		.rev_site = procs_tag(c->proc, m->rev_site),
		.count = m->count };

	if (w.stack == NO_MODEL_ID)
		w.stack = PROTO_NO_STACK;
	if (w.then_stack == NO_MODEL_ID)
		w.then_stack = PROTO_NO_STACK;
	model_put_lock_order(c->model, &w);
}

/* A wait in progress: kept for this update's set, which its tick ends. */
static void on_wait(void *ctx, const struct proto_wait *m)
{
	struct client *c = ctx;
	uint32_t row = map_id(&c->row_map, &c->row_map_cap, m->row,
			      &c->ids->rows, false);

	if (row == NO_MODEL_ID || c->n_waits_in >= PROTO_WAITS_MAX)
		return;
	c->waits_in = xgrow(c->waits_in, &c->waits_in_cap, c->n_waits_in + 1,
			    16, sizeof(*c->waits_in));
	c->waits_in[c->n_waits_in++] = (struct model_wait){ .tid = m->tid,
		.row = row, .blocked_ns = m->blocked_ns, .holder = m->holder };
}

/* The calls' time in t but not in last (both cumulative). */
static void held_calls_sub(struct proto_while_held *d,
			   const struct proto_while_held *t,
			   const struct proto_while_held *last)
{
	d->nsys = t->nsys;
	for (unsigned i = 0; i < t->nsys; i++) {
		uint64_t before = 0;

		for (unsigned k = 0; k < last->nsys; k++)
			if (last->sys[k].nr == t->sys[i].nr)
				before = last->sys[k].ns;
		d->sys[i].nr = t->sys[i].nr;
		d->sys[i].ns = lock_counts_sub_sat(t->sys[i].ns, before);
	}
}

/* What the holders at a row did: the growth since its last totals. */
static void on_while_held(void *ctx, const struct proto_while_held *m)
{
	struct client *c = ctx;
	struct proto_while_held d = { 0 }, *last;
	uint32_t row, lock_row = 0;

	if (!hold_index((void **)&c->held_last, &c->held_last_cap, m->row,
			ROW_IDS_MAX, sizeof(*c->held_last))) {
		end(c, TARGET_LOST, "collector sent a row id out of range");
		return;
	}
	last = &c->held_last[m->row];
	d.running_ns = lock_counts_sub_sat(m->running_ns, last->running_ns);
	d.runnable_ns = lock_counts_sub_sat(m->runnable_ns, last->runnable_ns);
	d.lock_wait_ns = lock_counts_sub_sat(m->lock_wait_ns, last->lock_wait_ns);
	d.exited_ns = lock_counts_sub_sat(m->exited_ns, last->exited_ns);
	held_calls_sub(&d, m, last);
	*last = *m;
	row = map_id(&c->row_map, &c->row_map_cap, m->row, &c->ids->rows, false);
	if (m->lock_row)
		lock_row = map_id(&c->row_map, &c->row_map_cap, m->lock_row - 1,
				  &c->ids->rows, false) + 1;
	/* An unmapped lock row maps to NO_MODEL_ID, + 1 is 0: none. */
	if (!c->in_baseline && row != NO_MODEL_ID)
		model_apply_while_held(c->model, row, &d, lock_row);
}

/* The update's waits in progress are whole: they replace the last. */
static void waits_done(struct client *c)
{
	struct model_wait *w = c->waits;
	size_t cap = c->waits_cap;

	c->waits = c->waits_in;
	c->waits_cap = c->waits_in_cap;
	c->n_waits = c->n_waits_in;
	c->waits_in = w;
	c->waits_in_cap = cap;
	c->n_waits_in = 0;
	if (c->clock && c->sum_tick == NULL)
		model_set_waits(c->model, c->waits, c->n_waits);
}

/*
 * The baseline's tick starts the session: what was counted before is
 * subtracted from everything after, and the first interval starts here.
 */
static void on_tick(void *ctx, const struct proto_tick *m)
{
	struct client *c = ctx;
	struct proto_tick t = *m;

	waits_done(c);
	if (c->in_baseline || (m->flags & PROTO_TICK_BASELINE)) {
		c->in_baseline = false;
		c->base_dropped = m->dropped;
		c->base_folded = m->folded;
		c->origin_ns = m->monotonic_ns;
		if (c->clock)
			model_set_origin(c->model, m->monotonic_ns);
		c->last_tick_ns = m->monotonic_ns;
		return;
	}
	t.dropped = lock_counts_sub_sat(m->dropped, c->base_dropped);
	t.folded = lock_counts_sub_sat(m->folded, c->base_folded);
	c->tick = t;
	if (c->clock && c->sum_tick)
		c->sum_tick(c->sum_ctx, &t);
	if (c->clock)
		model_tick(c->model, &t);
	c->ticks++;
	c->last_tick_ns = m->monotonic_ns;
}

static void on_goodbye(void *ctx, const struct proto_goodbye *m)
{
	struct client *c = ctx;

	if (m->reason == GOODBYE_EXIT && c->clock)
		model_fold_last_interval(c->model);
	c->tick.threads_live = 0;
	c->tick.memory_used = 0;
	end(c, m->reason == GOODBYE_EXIT ? TARGET_EXITED : TARGET_LOST, NULL);
}

static const struct proto_visitor visitor = {
	.hello = on_hello,
	.module = on_module,
	.row = on_row,
	.counts = on_counts,
	.tick = on_tick,
	.goodbye = on_goodbye,
	.stack = on_stack,
	.stack_row = on_stack_row,
	.stack_counts = on_stack_counts,
	.lock_order = on_lock_order,
	.wait = on_wait,
	.while_held = on_while_held,
};

/*
 * Apply the whole frames in the buffer, up to the end of an interval:
 * each interval is shown before the next one is read. The goodbye that
 * follows the last one goes with it, so that it shows the target gone.
 */
static void apply_frames(struct client *c)
{
	uint64_t ticks = c->ticks;
	size_t off = 0;
	char err[160], why[200];

	while (c->fd >= 0) {
		struct proto_frame f;
		long n = proto_split(c->in + off, c->in_len - off, &f, err,
				     sizeof(err));

		if (n == 0 || (n > 0 && c->ticks != ticks && f.type != MSG_GOODBYE))
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

bool client_buffered(const struct client *c)
{
	struct proto_frame f;
	char err[160];

	return c->fd >= 0 &&
	       proto_split(c->in, c->in_len, &f, err, sizeof(err)) != 0;
}

int client_poll(struct client *c, int timeout_ms)
{
	uint64_t ticks = c->ticks;
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };

	if (c->fd < 0)
		return -1;
	apply_frames(c);
	if (c->ticks != ticks)
		return 1;
	if (c->fd >= 0 && poll(&pfd, 1, timeout_ms) > 0) {
		while (read_some(c) && c->ticks == ticks && c->in_len < IN_CAP) {
			pfd.revents = 0;
			if (poll(&pfd, 1, 0) <= 0)
				break;
		}
	}
	if (c->ticks != ticks)
		return 1;
	return c->fd < 0 ? -1 : 0;
}

/*
 * Send a whole frame, however long: waiting for room a moment at most.
 * A gone collector needs no telling.
 */
static void send_whole(struct client *c, const struct wbuf *b)
{
	size_t off = 0;

	while (c->fd >= 0 && !b->failed && off < b->len) {
		struct pollfd p = { .fd = c->fd, .events = POLLOUT };
		ssize_t n = send(c->fd, b->data + off, b->len - off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0)
			off += (size_t)n;
		else if (n < 0 && errno != EAGAIN && errno != EINTR)
			return;
		else if (poll(&p, 1, 1000) <= 0)
			return;
	}
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

void client_send_holders(struct client *c, bool on)
{
	struct wbuf b = { 0 };

	proto_put_holders(&b, on);
	send_frame(c, &b);
	wbuf_free(&b);
}

void client_send_wrappers(struct client *c, const uint64_t *ranges, size_t n)
{
	struct wbuf b = { 0 };

	proto_put_wrappers(&b, ranges, n > PROTO_WRAPPERS_MAX ?
			   PROTO_WRAPPERS_MAX : (uint32_t)n);
	send_whole(c, &b);
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
	free(c->last);
	free(c->stack_last);
	free(c->blame);
	free(c->waits_in);
	free(c->held_last);
	free(c->waits);
	c->blame = NULL;
	c->blame_cap = 0;
	shmobj_free(c->shm);
	c->shm = NULL;
	free(c->row_map);
	free(c->stack_map);
	c->row_map = c->stack_map = NULL;
	c->row_map_cap = c->stack_map_cap = 0;
	c->last = NULL;
	c->stack_last = NULL;
	c->last_cap = c->stack_last_cap = 0;
}
