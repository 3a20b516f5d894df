/* Encoding and hostile-input decoding of the wire protocol. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

/* Largest run frame the encoder builds before starting another. */
#define RUN_FRAME_TARGET (64u * 1024)

/* COUNTS entry fields present, as the bits of its field mask. */
enum {
	HAS_ACQ = 1, HAS_CONTENDED = 2, HAS_WAIT = 4, HAS_FAILED = 8,
	HAS_MAX = 16, HAS_HIST = 32, HAS_TIMEOUTS = 64, HAS_HOLD = 128,
	HAS_HOLDS = 256, HAS_MAX_HOLD = 512, HAS_ALL = 1023
};

/* A bounded reader: every get past the end sets err and yields zeros. */
struct rbuf {
	const uint8_t *p;
	size_t len;
	size_t off;
	bool err;
};

/*
 * The collector's copy of this file has no default: it installs its arena
 * before any wbuf grows, and must not so much as name the host's malloc.
 */
#ifdef QSPTOP_COLLECTOR
static void *(*wb_grow)(void *, size_t, size_t);
static void (*wb_release)(void *, size_t);
#else
static void *default_grow(void *p, size_t old, size_t size)
{
	(void)old;
	return realloc(p, size);
}

static void default_release(void *p, size_t size)
{
	(void)size;
	free(p);
}

static void *(*wb_grow)(void *, size_t, size_t) = default_grow;
static void (*wb_release)(void *, size_t) = default_release;
#endif

void proto_set_allocator(void *(*grow)(void *p, size_t old, size_t size),
			 void (*release)(void *p, size_t size))
{
	wb_grow = grow;
	wb_release = release;
}

void wbuf_free(struct wbuf *b)
{
	if (b->data && wb_release)
		wb_release(b->data, b->cap);
	*b = (struct wbuf){ 0 };
}

void wbuf_consume(struct wbuf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
}

static bool wbuf_reserve(struct wbuf *b, size_t n)
{
	size_t cap;
	uint8_t *p;

	if (b->failed)
		return false;
	if (b->len + n <= b->cap)
		return true;
	if (wb_grow == NULL) {
		b->failed = true;
		return false;
	}
	cap = b->cap ? b->cap : 4096;
	while (cap < b->len + n)
		cap *= 2;
	p = wb_grow(b->data, b->cap, cap);
	if (p == NULL) {
		b->failed = true;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

static void put_bytes(struct wbuf *b, const void *p, size_t n)
{
	if (!wbuf_reserve(b, n))
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void put_le(struct wbuf *b, uint64_t v, unsigned size)
{
	uint8_t tmp[8];

	for (unsigned i = 0; i < size; i++)
		tmp[i] = (uint8_t)(v >> (8 * i));
	put_bytes(b, tmp, size);
}

static void put_u8(struct wbuf *b, uint8_t v) { put_le(b, v, 1); }
static void put_u16(struct wbuf *b, uint16_t v) { put_le(b, v, 2); }
static void put_u32(struct wbuf *b, uint32_t v) { put_le(b, v, 4); }
static void put_u64(struct wbuf *b, uint64_t v) { put_le(b, v, 8); }

/* An unsigned LEB128 varint at p, 7 bits a byte, low first; the end. */
static uint8_t *varint_at(uint8_t *p, uint64_t v)
{
	for (; v >= 0x80; v >>= 7)
		*p++ = (uint8_t)(v | 0x80);
	*p++ = (uint8_t)v;
	return p;
}

#define VARINT_MAX 10

static void put_varint(struct wbuf *b, uint64_t v)
{
	if (wbuf_reserve(b, VARINT_MAX))
		b->len = (size_t)(varint_at(b->data + b->len, v) - b->data);
}

static void put_blob(struct wbuf *b, const void *p, size_t n)
{
	if (n > PROTO_STR_MAX)
		n = PROTO_STR_MAX;
	put_u16(b, (uint16_t)n);
	put_bytes(b, p, n);
}

static void put_str(struct wbuf *b, const char *s)
{
	put_blob(b, s, strlen(s));
}

/* Start a frame; returns the offset of its header for end_frame(). */
static size_t begin_frame(struct wbuf *b, uint16_t type)
{
	size_t off = b->len;

	put_u32(b, 0);
	put_u16(b, type);
	put_u16(b, 0);
	return off;
}

static void end_frame(struct wbuf *b, size_t off)
{
	uint32_t len;

	if (b->failed)
		return;
	len = (uint32_t)(b->len - off - PROTO_HEADER_SIZE);
	for (unsigned i = 0; i < 4; i++)
		b->data[off + i] = (uint8_t)(len >> (8 * i));
}

void proto_put_hello(struct wbuf *b, const struct proto_hello *m)
{
	size_t off = begin_frame(b, MSG_HELLO);

	put_u32(b, m->magic);
	put_u16(b, m->version);
	put_u8(b, m->mode);
	put_u8(b, m->flags);
	put_u32(b, m->pid);
	put_u32(b, m->interval_ms);
	put_u64(b, m->start_realtime_ns);
	put_u64(b, m->start_monotonic_ns);
	put_str(b, m->command);
	put_str(b, m->collector_version);
	end_frame(b, off);
}

void proto_put_client_hello(struct wbuf *b, const struct proto_client_hello *m)
{
	size_t off = begin_frame(b, MSG_CLIENT_HELLO);

	put_u32(b, m->magic);
	put_u16(b, m->version);
	put_str(b, m->client_version);
	put_u32(b, m->memory_cap_mb);
	end_frame(b, off);
}

void proto_put_module(struct wbuf *b, const struct proto_module *m)
{
	size_t off = begin_frame(b, MSG_MODULE);

	put_u64(b, m->base);
	put_str(b, m->path);
	put_blob(b, m->build_id, m->build_id_len);
	end_frame(b, off);
}

void proto_put_row(struct wbuf *b, const struct proto_row *m)
{
	size_t off = begin_frame(b, MSG_ROW);

	put_u32(b, m->id);
	put_u8(b, m->type);
	put_u64(b, m->site);
	put_u64(b, m->via);
	put_u64(b, m->object);
	end_frame(b, off);
}

void proto_put_tick(struct wbuf *b, const struct proto_tick *m)
{
	size_t off = begin_frame(b, MSG_TICK);

	put_u64(b, m->seq);
	put_u64(b, m->monotonic_ns);
	put_u32(b, m->threads_seen);
	put_u32(b, m->threads_live);
	put_u64(b, m->dropped);
	put_u64(b, m->folded);
	put_u64(b, m->memory_used);
	put_u64(b, m->memory_cap);
	put_u8(b, m->flags);
	end_frame(b, off);
}

void proto_put_goodbye(struct wbuf *b, const struct proto_goodbye *m)
{
	size_t off = begin_frame(b, MSG_GOODBYE);

	put_u8(b, m->reason);
	end_frame(b, off);
}

void proto_put_set_interval(struct wbuf *b, uint32_t interval_ms)
{
	size_t off = begin_frame(b, MSG_SET_INTERVAL);

	put_u32(b, interval_ms);
	end_frame(b, off);
}

void proto_put_detach(struct wbuf *b)
{
	end_frame(b, begin_frame(b, MSG_DETACH));
}

void proto_put_holders(struct wbuf *b, bool on)
{
	size_t off = begin_frame(b, MSG_HOLDERS);

	put_u8(b, on ? 1 : 0);
	end_frame(b, off);
}

/* Make room for an entry in a run frame of type, opening one if needed. */
static void open_run(struct wbuf *b, size_t *frame_off, uint16_t type)
{
	if (*frame_off != SIZE_MAX && b->len - *frame_off > RUN_FRAME_TARGET)
		proto_close_run(b, frame_off);
	if (*frame_off == SIZE_MAX)
		*frame_off = begin_frame(b, type);
}

/* The fields of m that are not zero; most rows never waited. */
static unsigned counts_fields(const struct proto_counts *m, uint32_t *hist_mask)
{
	unsigned mask = 0;
	uint64_t any = 0;

	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		any |= m->c.hist[i];
	*hist_mask = 0;
	for (unsigned i = 0; any && i < HIST_BUCKETS; i++) {
		if (m->c.hist[i] != 0)
			*hist_mask |= 1u << i;
	}
	mask |= m->c.calls.acquisitions ? HAS_ACQ : 0;
	mask |= m->c.calls.contended ? HAS_CONTENDED : 0;
	mask |= m->c.calls.wait_ns ? HAS_WAIT : 0;
	mask |= m->c.calls.failed ? HAS_FAILED : 0;
	mask |= m->max_wait_ns ? HAS_MAX : 0;
	mask |= *hist_mask ? HAS_HIST : 0;
	mask |= m->c.calls.timeouts ? HAS_TIMEOUTS : 0;
	mask |= m->c.calls.hold_ns ? HAS_HOLD : 0;
	mask |= m->c.calls.holds_timed ? HAS_HOLDS : 0;
	mask |= m->max_hold_ns ? HAS_MAX_HOLD : 0;
	return mask;
}

/*
 * A COUNTS entry: varint row id, varint field mask, then each field the
 * mask names as a varint; the histogram as a varint mask of its non-empty
 * buckets and one varint per bucket; then the timeouts (protocol 4), the
 * time held, the holds timed and the longest hold (protocol 6). A
 * row that never waited costs a few bytes.
 */
void proto_put_counts(struct wbuf *b, size_t *frame_off,
		      const struct proto_counts *m)
{
	uint32_t hist_mask;
	unsigned mask = counts_fields(m, &hist_mask);
	uint8_t *p;

	open_run(b, frame_off, MSG_COUNTS);
	if (!wbuf_reserve(b, (12 + HIST_BUCKETS) * VARINT_MAX))
		return;
	p = varint_at(b->data + b->len, m->row);
	p = varint_at(p, mask);
	if (mask & HAS_ACQ)
		p = varint_at(p, m->c.calls.acquisitions);
	if (mask & HAS_CONTENDED)
		p = varint_at(p, m->c.calls.contended);
	if (mask & HAS_WAIT)
		p = varint_at(p, m->c.calls.wait_ns);
	if (mask & HAS_FAILED)
		p = varint_at(p, m->c.calls.failed);
	if (mask & HAS_MAX)
		p = varint_at(p, m->max_wait_ns);
	if (mask & HAS_HIST) {
		p = varint_at(p, hist_mask);
		for (unsigned i = 0; i < HIST_BUCKETS; i++) {
			if (hist_mask & (1u << i))
				p = varint_at(p, m->c.hist[i]);
		}
	}
	if (mask & HAS_TIMEOUTS)
		p = varint_at(p, m->c.calls.timeouts);
	if (mask & HAS_HOLD)
		p = varint_at(p, m->c.calls.hold_ns);
	if (mask & HAS_HOLDS)
		p = varint_at(p, m->c.calls.holds_timed);
	if (mask & HAS_MAX_HOLD)
		p = varint_at(p, m->max_hold_ns);
	b->len = (size_t)(p - b->data);
}

/* A STACK_COUNTS entry: varint id, count, wait, timeouts (protocol 5). */
void proto_put_stack_counts(struct wbuf *b, size_t *frame_off,
			    const struct proto_stack_counts *m)
{
	open_run(b, frame_off, MSG_STACK_COUNTS);
	put_varint(b, m->id);
	put_varint(b, m->w.count);
	put_varint(b, m->w.wait_ns);
	put_varint(b, m->w.timeouts);
}

void proto_close_run(struct wbuf *b, size_t *frame_off)
{
	if (*frame_off == SIZE_MAX)
		return;
	end_frame(b, *frame_off);
	*frame_off = SIZE_MAX;
}

void proto_put_wrappers(struct wbuf *b, const uint64_t *ranges, uint32_t count)
{
	size_t off = begin_frame(b, MSG_WRAPPERS);

	if (count > PROTO_WRAPPERS_MAX)
		count = PROTO_WRAPPERS_MAX;
	put_u32(b, count);
	for (uint32_t i = 0; i < 2 * count; i++)
		put_u64(b, ranges[i]);
	end_frame(b, off);
}

void proto_put_stack_row(struct wbuf *b, const struct proto_stack_row *m)
{
	size_t off = begin_frame(b, MSG_STACK_ROW);

	put_u32(b, m->id);
	put_u32(b, m->row);
	put_u32(b, m->stack);
	put_u32(b, m->tid);
	end_frame(b, off);
}

void proto_put_lock_order(struct wbuf *b, const struct proto_lock_order *m)
{
	size_t off = begin_frame(b, MSG_LOCK_ORDER);

	put_u32(b, m->id);
	put_u32(b, m->stack);
	put_u32(b, m->then_stack);
	put_u64(b, m->first_object);
	put_u64(b, m->first_site);
	put_u64(b, m->then_object);
	put_u64(b, m->then_site);
	put_u64(b, m->rev_held_site);
	put_u64(b, m->rev_site);
	put_u64(b, m->count);
	end_frame(b, off);
}

void proto_put_wait(struct wbuf *b, const struct proto_wait *m)
{
	size_t off = begin_frame(b, MSG_WAIT);

	put_u32(b, m->tid);
	put_u32(b, m->row);
	put_u64(b, m->blocked_ns);
	put_u32(b, m->holder);
	end_frame(b, off);
}

void proto_put_while_held(struct wbuf *b, const struct proto_while_held *m)
{
	size_t off = begin_frame(b, MSG_WHILE_HELD);
	uint8_t nsys = m->nsys > PROTO_HELD_SYSCALLS ? PROTO_HELD_SYSCALLS : m->nsys;

	put_u32(b, m->row);
	put_u64(b, m->running_ns);
	put_u64(b, m->runnable_ns);
	put_u64(b, m->lock_wait_ns);
	put_u64(b, m->exited_ns);
	put_u32(b, m->lock_row);
	put_u8(b, nsys);
	for (unsigned i = 0; i < nsys; i++) {
		put_u32(b, m->sys[i].nr);
		put_u64(b, m->sys[i].ns);
	}
	end_frame(b, off);
}

void proto_put_stack(struct wbuf *b, const struct proto_stack *m)
{
	size_t off = begin_frame(b, MSG_STACK);
	uint8_t depth = m->depth > PROTO_STACK_DEPTH ? PROTO_STACK_DEPTH : m->depth;

	put_u32(b, m->id);
	put_u8(b, depth);
	for (unsigned i = 0; i < depth; i++)
		put_u64(b, m->frames[i]);
	end_frame(b, off);
}

long proto_split(const uint8_t *buf, size_t len, struct proto_frame *f,
		 char *err, size_t errlen)
{
	uint32_t plen;
	uint16_t flags;

	if (len < PROTO_HEADER_SIZE)
		return 0;
	plen = (uint32_t)buf[0] | (uint32_t)buf[1] << 8 |
	       (uint32_t)buf[2] << 16 | (uint32_t)buf[3] << 24;
	flags = (uint16_t)(buf[6] | buf[7] << 8);
	if (plen > PROTO_MAX_PAYLOAD) {
		snprintf(err, errlen, "frame of %u bytes exceeds the %u-byte limit",
			 plen, PROTO_MAX_PAYLOAD);
		return -1;
	}
	if (flags != 0) {
		snprintf(err, errlen, "frame header has unknown flags 0x%x", flags);
		return -1;
	}
	if (len - PROTO_HEADER_SIZE < plen)
		return 0;
	f->type = (uint16_t)(buf[4] | buf[5] << 8);
	f->payload = buf + PROTO_HEADER_SIZE;
	f->len = plen;
	return (long)(PROTO_HEADER_SIZE + plen);
}

static uint64_t get_le(struct rbuf *r, unsigned size)
{
	uint64_t v = 0;

	if (r->err || r->len - r->off < size) {
		r->err = true;
		return 0;
	}
	for (unsigned i = 0; i < size; i++)
		v |= (uint64_t)r->p[r->off + i] << (8 * i);
	r->off += size;
	return v;
}

static uint8_t get_u8(struct rbuf *r) { return (uint8_t)get_le(r, 1); }
static uint16_t get_u16(struct rbuf *r) { return (uint16_t)get_le(r, 2); }
static uint32_t get_u32(struct rbuf *r) { return (uint32_t)get_le(r, 4); }
static uint64_t get_u64(struct rbuf *r) { return get_le(r, 8); }

void proto_wrapper_range(const uint8_t *ranges, uint32_t i, uint64_t *lo,
			 uint64_t *hi)
{
	struct rbuf r = { .p = ranges + 16 * (size_t)i, .len = 16 };

	*lo = get_u64(&r);
	*hi = get_u64(&r);
}

/* A varint of at most 64 bits; longer or truncated ones are malformed. */
static uint64_t get_varint_any(struct rbuf *r)
{
	const uint8_t *p = r->p + r->off;
	size_t left = r->err ? 0 : r->len - r->off;
	uint64_t v = 0;

	for (unsigned i = 0; i < 10 && i < left; i++) {
		uint8_t byte = p[i];

		if (i == 9 && byte > 1)
			break;
		v |= (uint64_t)(byte & 0x7f) << (7 * i);
		if (!(byte & 0x80)) {
			r->off += i + 1;
			return v;
		}
	}
	r->err = true;
	return 0;
}

/*
 * get_varint_any() without its checks on each byte, when the frame has
 * room for the longest varint; the rare ten-byte one takes the long way.
 */
static inline uint64_t get_varint(struct rbuf *r)
{
	const uint8_t *p = r->p + r->off;
	uint64_t v = 0;

	if (r->len - r->off < 10)
		return get_varint_any(r);
	for (unsigned i = 0; i < 9; i++) {
		v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (p[i] < 0x80) {
			r->off += i + 1;
			return v;
		}
	}
	return get_varint_any(r);
}

/* A varint that must fit 32 bits. */
static uint32_t get_varint32(struct rbuf *r)
{
	uint64_t v = get_varint(r);

	if (v > UINT32_MAX)
		r->err = true;
	return (uint32_t)v;
}

/* Read a blob of at most max bytes into out; returns its length. */
static size_t get_blob(struct rbuf *r, void *out, size_t max)
{
	size_t n = get_u16(r);

	if (r->err || n > max || r->len - r->off < n) {
		r->err = true;
		return 0;
	}
	memcpy(out, r->p + r->off, n);
	r->off += n;
	return n;
}

/* Read a string; embedded NULs are malformed. */
static void get_str(struct rbuf *r, char *out, size_t size)
{
	size_t n = get_blob(r, out, size - 1);

	out[n] = '\0';
	if (strlen(out) != n)
		r->err = true;
}

static void decode_hello(struct rbuf *r, struct proto_hello *m)
{
	memset(m, 0, sizeof(*m));
	m->magic = get_u32(r);
	m->version = get_u16(r);
	if (m->magic != PROTO_MAGIC || m->version != PROTO_VERSION) {
		/* Another version: what follows may differ; say so, not "malformed". */
		r->off = r->len;
		return;
	}
	m->mode = get_u8(r);
	m->flags = get_u8(r);
	m->pid = get_u32(r);
	m->interval_ms = get_u32(r);
	m->start_realtime_ns = get_u64(r);
	m->start_monotonic_ns = get_u64(r);
	get_str(r, m->command, sizeof(m->command));
	get_str(r, m->collector_version, sizeof(m->collector_version));
}

static void decode_client_hello(struct rbuf *r, struct proto_client_hello *m)
{
	m->magic = get_u32(r);
	m->version = get_u16(r);
	get_str(r, m->client_version, sizeof(m->client_version));
	m->memory_cap_mb = get_u32(r);
}

static void decode_module(struct rbuf *r, struct proto_module *m)
{
	m->base = get_u64(r);
	get_str(r, m->path, sizeof(m->path));
	m->build_id_len = (uint16_t)get_blob(r, m->build_id, sizeof(m->build_id));
}

static void decode_row(struct rbuf *r, struct proto_row *m)
{
	m->id = get_u32(r);
	m->type = get_u8(r);
	m->site = get_u64(r);
	m->via = get_u64(r);
	m->object = get_u64(r);
	if (m->type >= LOCK_TYPE_COUNT)
		r->err = true;
}

static void decode_tick(struct rbuf *r, struct proto_tick *m)
{
	m->seq = get_u64(r);
	m->monotonic_ns = get_u64(r);
	m->threads_seen = get_u32(r);
	m->threads_live = get_u32(r);
	m->dropped = get_u64(r);
	m->folded = get_u64(r);
	m->memory_used = get_u64(r);
	m->memory_cap = get_u64(r);
	m->flags = get_u8(r);
}

/*
 * One entry of a COUNTS run into m, which holds the run's entry before
 * (all zero for the first): of its histogram, only the buckets that
 * entry filled (*hist_mask) are cleared, not all of them.
 */
static void decode_counts(struct rbuf *r, struct proto_counts *m,
			  uint32_t *hist_mask)
{
	uint32_t mask;

	for (uint32_t b = *hist_mask; b != 0; b &= b - 1)
		m->c.hist[__builtin_ctz(b)] = 0;
	*hist_mask = 0;
	m->row = get_varint32(r);
	mask = get_varint32(r);
	if (mask & ~(uint32_t)HAS_ALL)
		r->err = true;
	m->c.calls.acquisitions = (mask & HAS_ACQ) ? get_varint(r) : 0;
	m->c.calls.contended = (mask & HAS_CONTENDED) ? get_varint(r) : 0;
	m->c.calls.wait_ns = (mask & HAS_WAIT) ? get_varint(r) : 0;
	m->c.calls.failed = (mask & HAS_FAILED) ? get_varint(r) : 0;
	m->max_wait_ns = (mask & HAS_MAX) ? get_varint(r) : 0;
	if (mask & HAS_HIST)
		*hist_mask = get_varint32(r);
	for (uint32_t b = *hist_mask; b != 0 && !r->err; b &= b - 1)
		m->c.hist[__builtin_ctz(b)] = get_varint(r);
	m->c.calls.timeouts = (mask & HAS_TIMEOUTS) ? get_varint(r) : 0;
	m->c.calls.hold_ns = (mask & HAS_HOLD) ? get_varint(r) : 0;
	m->c.calls.holds_timed = (mask & HAS_HOLDS) ? get_varint(r) : 0;
	m->max_hold_ns = (mask & HAS_MAX_HOLD) ? get_varint(r) : 0;
}

static void decode_stack(struct rbuf *r, struct proto_stack *m)
{
	m->id = get_u32(r);
	m->depth = get_u8(r);
	if (m->depth == 0 || m->depth > PROTO_STACK_DEPTH)
		r->err = true;
	for (unsigned i = 0; i < m->depth && !r->err; i++)
		m->frames[i] = get_u64(r);
}

static void decode_stack_row(struct rbuf *r, struct proto_stack_row *m)
{
	m->id = get_u32(r);
	m->row = get_u32(r);
	m->stack = get_u32(r);
	m->tid = get_u32(r);
}

static void decode_lock_order(struct rbuf *r, struct proto_lock_order *m)
{
	m->id = get_u32(r);
	m->stack = get_u32(r);
	m->then_stack = get_u32(r);
	m->first_object = get_u64(r);
	m->first_site = get_u64(r);
	m->then_object = get_u64(r);
	m->then_site = get_u64(r);
	m->rev_held_site = get_u64(r);
	m->rev_site = get_u64(r);
	m->count = get_u64(r);
}

static void decode_wait(struct rbuf *r, struct proto_wait *m)
{
	m->tid = get_u32(r);
	m->row = get_u32(r);
	m->blocked_ns = get_u64(r);
	m->holder = get_u32(r);
}

static void decode_while_held(struct rbuf *r, struct proto_while_held *m)
{
	m->row = get_u32(r);
	m->running_ns = get_u64(r);
	m->runnable_ns = get_u64(r);
	m->lock_wait_ns = get_u64(r);
	m->exited_ns = get_u64(r);
	m->lock_row = get_u32(r);
	m->nsys = get_u8(r);
	if (m->nsys > PROTO_HELD_SYSCALLS) {
		r->err = true;
		return;
	}
	for (unsigned i = 0; i < m->nsys; i++) {
		m->sys[i].nr = get_u32(r);
		m->sys[i].ns = get_u64(r);
	}
}

static void decode_stack_counts(struct rbuf *r, struct proto_stack_counts *m)
{
	m->id = get_varint32(r);
	m->w.count = get_varint(r);
	m->w.wait_ns = get_varint(r);
	m->w.timeouts = get_varint(r);
}

/*
 * Walk a COUNTS or STACK_COUNTS frame, calling back for each entry when v
 * is not NULL. An empty run is malformed.
 */
static void decode_run(struct rbuf *r, uint16_t type,
		       const struct proto_visitor *v, void *ctx)
{
	struct proto_stack_counts sc;
	struct proto_counts c = { 0 };
	uint32_t hist_mask = 0;

	if (r->len == 0)
		r->err = true;
	while (!r->err && r->off < r->len) {
		if (type == MSG_COUNTS) {
			decode_counts(r, &c, &hist_mask);
			if (!r->err && v && v->counts)
				v->counts(ctx, &c);
		} else {
			decode_stack_counts(r, &sc);
			if (!r->err && v && v->stack_counts)
				v->stack_counts(ctx, &sc);
		}
	}
}

/* The message of one frame, decoded before any callback runs. */
union proto_any {
	struct proto_hello hello;
	struct proto_client_hello client_hello;
	struct proto_module module;
	struct proto_row row;
	struct proto_tick tick;
	struct proto_goodbye goodbye;
	struct proto_stack stack;
	struct proto_stack_row stack_row;
	struct proto_lock_order lock_order;
	struct proto_wait wait;
	struct proto_while_held while_held;
	struct {
		uint32_t count;
		const uint8_t *ranges;
	} wrappers;
	uint32_t interval_ms;
	bool holders;
};

static void decode_one(struct rbuf *r, uint16_t type, union proto_any *m)
{
	switch (type) {
	case MSG_HELLO: decode_hello(r, &m->hello); break;
	case MSG_CLIENT_HELLO: decode_client_hello(r, &m->client_hello); break;
	case MSG_MODULE: decode_module(r, &m->module); break;
	case MSG_ROW: decode_row(r, &m->row); break;
	case MSG_TICK: decode_tick(r, &m->tick); break;
	case MSG_GOODBYE: m->goodbye.reason = get_u8(r); break;
	case MSG_STACK: decode_stack(r, &m->stack); break;
	case MSG_STACK_ROW: decode_stack_row(r, &m->stack_row); break;
	case MSG_LOCK_ORDER: decode_lock_order(r, &m->lock_order); break;
	case MSG_WAIT: decode_wait(r, &m->wait); break;
	case MSG_WHILE_HELD: decode_while_held(r, &m->while_held); break;
	case MSG_WRAPPERS:
		m->wrappers.count = get_u32(r);
		m->wrappers.ranges = r->p + r->off;
		if (!r->err && (m->wrappers.count > PROTO_WRAPPERS_MAX ||
				(r->len - r->off) / 16 != m->wrappers.count ||
				(r->len - r->off) % 16 != 0))
			r->err = true;
		r->off = r->err ? r->off : r->len;
		break;
	case MSG_SET_INTERVAL: m->interval_ms = get_u32(r); break;
	case MSG_DETACH: break;
	case MSG_HOLDERS: m->holders = get_u8(r) != 0; break;
	}
}

static void dispatch(uint16_t type, const union proto_any *m,
		     const struct proto_visitor *v, void *ctx)
{
	switch (type) {
	case MSG_HELLO: if (v->hello) v->hello(ctx, &m->hello); break;
	case MSG_CLIENT_HELLO:
		if (v->client_hello)
			v->client_hello(ctx, &m->client_hello);
		break;
	case MSG_MODULE: if (v->module) v->module(ctx, &m->module); break;
	case MSG_ROW: if (v->row) v->row(ctx, &m->row); break;
	case MSG_TICK: if (v->tick) v->tick(ctx, &m->tick); break;
	case MSG_GOODBYE: if (v->goodbye) v->goodbye(ctx, &m->goodbye); break;
	case MSG_STACK: if (v->stack) v->stack(ctx, &m->stack); break;
	case MSG_STACK_ROW:
		if (v->stack_row)
			v->stack_row(ctx, &m->stack_row);
		break;
	case MSG_LOCK_ORDER:
		if (v->lock_order)
			v->lock_order(ctx, &m->lock_order);
		break;
	case MSG_WAIT: if (v->wait) v->wait(ctx, &m->wait); break;
	case MSG_WHILE_HELD:
		if (v->while_held)
			v->while_held(ctx, &m->while_held);
		break;
	case MSG_SET_INTERVAL:
		if (v->set_interval)
			v->set_interval(ctx, m->interval_ms);
		break;
	case MSG_DETACH: if (v->detach) v->detach(ctx); break;
	case MSG_HOLDERS: if (v->holders) v->holders(ctx, m->holders); break;
	case MSG_WRAPPERS:
		if (v->wrappers)
			v->wrappers(ctx, m->wrappers.count, m->wrappers.ranges);
		break;
	}
}

static bool known_type(uint16_t type)
{
	return (type >= MSG_HELLO && type <= MSG_WHILE_HELD) ||
	       (type >= MSG_CLIENT_HELLO && type <= MSG_HOLDERS);
}

int proto_decode(const struct proto_frame *f, const struct proto_visitor *v,
		 void *ctx, char *err, size_t errlen)
{
	struct rbuf r = { .p = f->payload, .len = f->len };
	bool run = f->type == MSG_COUNTS || f->type == MSG_STACK_COUNTS;
	union proto_any m;

	if (!known_type(f->type))
		return 0;
	if (run) {
		decode_run(&r, f->type, NULL, NULL);
	} else {
		decode_one(&r, f->type, &m);
		if (r.off != r.len)
			r.err = true;
	}
	if (r.err) {
		snprintf(err, errlen, "malformed frame of type %u (%u bytes)",
			 f->type, f->len);
		return -1;
	}
	if (run) {
		r.off = 0;
		decode_run(&r, f->type, v, ctx);
	} else {
		dispatch(f->type, &m, v, ctx);
	}
	return 0;
}
