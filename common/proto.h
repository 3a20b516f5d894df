/*
 * The wire protocol between the collector (in the target) and qsptop.
 *
 * A stream of frames over a Unix stream socket. Every frame is an 8-byte
 * header, u32 payload length then u16 type then u16 flags (zero), followed
 * by the payload. All integers are little-endian and fixed width; strings
 * and byte blobs are a u16 length followed by the bytes (no terminator).
 *
 * The collector speaks first with HELLO, which carries the magic and the
 * protocol version; the client answers with CLIENT_HELLO. Receivers skip
 * frames of unknown type (so the protocol can grow) but reject a known frame
 * whose payload is malformed, and any frame longer than PROTO_MAX_PAYLOAD.
 *
 * Collector to client, per update: MODULE, ROW, STACK and STACK_ROW
 * definitions for what is new, COUNTS and STACK_COUNTS frames (each a run
 * of varint-coded entries) for what changed, LOCK_ORDER warnings new or
 * grown, then one TICK that closes the
 * interval. Counts are cumulative since the collector started: a client
 * that falls behind loses nothing, its next update carries the latest
 * totals. The first update of a session is its baseline (the TICK says
 * so): what happened before the client came is subtracted, never shown.
 * GOODBYE says the collector is going away.
 */
#ifndef QSPTOP_PROTO_H
#define QSPTOP_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "counts.h"
#include "types.h"

#define PROTO_MAGIC 0x54505351u /* "QSPT" */
/*
 * 3: the futex lock types; 4: timeouts; 5: timeouts in STACK_COUNTS;
 * 6: hold times in COUNTS, blame stacks (PROTO_BLAME_MARK), HOLDERS;
 * LOCK_ORDER joined later, add-only (older clients skip it)
 * 7: holder stacks (PROTO_HOLDER_MARK)
 * WAIT and WHILE_HELD frames (add-only: older peers skip them)
 */
#define PROTO_VERSION 7
#define PROTO_HEADER_SIZE 8
#define PROTO_MAX_PAYLOAD (1u << 20)
#define PROTO_STR_MAX 4096
#define PROTO_BUILD_ID_MAX 64
#define PROTO_STACK_DEPTH 32
/* The stack id of contended waits whose stack was not captured (sampled). */
#define PROTO_NO_STACK 0xffffffffu

/*
 * A STACK whose first frame is this is no stack: it names the holder a
 * row's waits were spent behind, frame 1 being the holder's row key (its
 * call site with the lock type in the top byte; 0: holder unknown). Its
 * STACK_ROWs and STACK_COUNTS say how long and how often.
 */
#define PROTO_BLAME_MARK 1u
/*
 * A STACK whose first frame is this is a holder's stack: frames 1.. are
 * where a thread released its row's lock while others waited for it
 * (the unlock call's return address first). Its STACK_COUNTS count those
 * releases (count); they carry no wait.
 */
#define PROTO_HOLDER_MARK 2u
#define PROTO_BLAME_KEY(site, type) ((site) | (uint64_t)(type) << 56)
#define PROTO_BLAME_SITE(key) ((key) & ((1ull << 56) - 1))
#define PROTO_BLAME_TYPE(key) ((unsigned)((key) >> 56))

enum proto_type {
	MSG_HELLO = 1,
	MSG_MODULE = 2,
	MSG_ROW = 3,
	MSG_COUNTS = 4,
	MSG_TICK = 5,
	MSG_GOODBYE = 6,
	MSG_STACK = 7,
	MSG_STACK_COUNTS = 8,
	MSG_STACK_ROW = 9,
	MSG_LOCK_ORDER = 10,
	MSG_WAIT = 11,
	MSG_WHILE_HELD = 12,
	MSG_CLIENT_HELLO = 64,
	MSG_SET_INTERVAL = 65,
	MSG_DETACH = 66,
	MSG_WRAPPERS = 67,
	MSG_HOLDERS = 68,	/* u8: track holders (1) or not (0) */
};

/* Code ranges a WRAPPERS message can carry. */
#define PROTO_WRAPPERS_MAX ((PROTO_MAX_PAYLOAD - 4) / 16)

/* How the collector came to be in the target. */
enum proto_mode { MODE_PRELOAD, MODE_LAUNCH, MODE_INJECTED };

/* Why the collector says goodbye. */
enum proto_goodbye_reason { GOODBYE_EXIT, GOODBYE_DETACH };

/* A HELLO flag: this session's first update will be its baseline. */
#define PROTO_HELLO_BASELINE 1u

struct proto_hello {
	uint32_t magic;
	uint16_t version;
	uint8_t mode;
	uint8_t flags;		/* PROTO_HELLO_BASELINE */
	uint32_t pid;
	uint32_t interval_ms;
	uint64_t start_realtime_ns;
	uint64_t start_monotonic_ns;
	char command[PROTO_STR_MAX + 1];
	char collector_version[64];
};

struct proto_client_hello {
	uint32_t magic;
	uint16_t version;
	char client_version[64];
	uint32_t memory_cap_mb;	/* the collector's memory cap; 0: its default */
};

struct proto_module {
	uint64_t base;		/* load bias (dlpi_addr) */
	char path[PROTO_STR_MAX + 1];
	uint16_t build_id_len;
	uint8_t build_id[PROTO_BUILD_ID_MAX];
};

/* A row: one (call site, object, type) triplet under a stable id. */
struct proto_row {
	uint32_t id;
	uint8_t type;
	uint64_t site;		/* return address into the caller */
	uint64_t object;	/* lock address; 0 = several objects */
	uint64_t via;		/* when the call went through lock wrappers:
				   the return address into the innermost one;
				   0 otherwise */
};

/*
 * A row's counts since the collector started (cumulative). max_wait_ns is
 * the longest single wait since the row was last sent to this client.
 */
struct proto_counts {
	uint32_t row;
	struct lock_counts c;
	uint64_t max_wait_ns;
	uint64_t max_hold_ns;	/* the longest timed hold, as max_wait_ns */
};

/*
 * Growth of one row since the previous update, as the client computes it
 * from two proto_counts. max_wait_ns is not a delta: it is the longest
 * single wait seen in the same span.
 */
struct proto_delta {
	uint32_t row;
	struct lock_counts c;
	uint64_t max_wait_ns;
	uint64_t max_hold_ns;	/* not a delta either */
	bool hist_empty;	/* c.hist is empty, and not filled in: skip it */
};

/* A TICK flag: this update is the session's baseline. */
#define PROTO_TICK_BASELINE 1u

struct proto_tick {
	uint64_t seq;
	uint64_t monotonic_ns;
	uint32_t threads_seen;	/* threads that ever used a lock */
	uint32_t threads_live;
	uint64_t dropped;	/* events not recorded, since start */
	uint64_t folded;	/* events on per-site rows for want of memory */
	uint64_t memory_used;	/* the collector's bytes in the target */
	uint64_t memory_cap;
	uint8_t flags;		/* PROTO_TICK_BASELINE */
};

/* A call stack, innermost frame first (frame 0 is the call site). */
struct proto_stack {
	uint32_t id;
	uint8_t depth;
	uint64_t frames[PROTO_STACK_DEPTH];	/* return addresses */
};

/*
 * An id for the waits of one row through one stack in one thread. stack is PROTO_NO_STACK for waits recorded without a stack (the
 * per-thread unwinding budget was spent, or no room was left).
 */
struct proto_stack_row {
	uint32_t id;
	uint32_t row;
	uint32_t stack;
	uint32_t tid;
};

/*
 * Cumulative waits of a stack row since the collector started: those that
 * ended with the lock (count), those that timed out, and the time of both.
 */
struct proto_stack_counts {
	uint32_t id;
	struct wait_counts w;
};

/* Growth of a (row, stack, thread) total, as the client computes it. */
struct proto_stack_delta {
	uint32_t row;
	uint32_t stack;
	uint32_t tid;
	struct wait_counts w;
};

/*
 * A lock-order warning: object first_object taken at first_site, then,
 * while it was held, then_object at then_site; and elsewhere the reverse,
 * then_object held (taken at rev_held_site) while first_object was taken
 * at rev_site, through stack (PROTO_NO_STACK: not captured); then_stack
 * is the stack of the first order's then_site. count is how
 * often the reversed nesting was seen, cumulative (the nestings are
 * sampled). Sent again, whole, when its count grows.
 */
struct proto_lock_order {
	uint32_t id;
	uint32_t stack;
	uint32_t then_stack;
	uint64_t first_object, first_site;
	uint64_t then_object, then_site;
	uint64_t rev_held_site, rev_site;
	uint64_t count;
};

/*
 * A wait in progress at the update's scan: each update carries all of
 * them (at most PROTO_WAITS_MAX) before its TICK, which ends the set.
 */
#define PROTO_WAITS_MAX 256
struct proto_wait {
	uint32_t tid;
	uint32_t row;		/* the row it will count on */
	uint64_t blocked_ns;	/* since it began, at the scan */
	uint32_t holder;	/* the lock's owner TID; 0: unknown */
};

/*
 * What the holders of a row's locks did while others waited, summed over
 * the waits (a sample's time counts once per waiter), since the
 * collector started: cumulative, as COUNTS are.
 */
#define PROTO_HELD_SYSCALLS 8	/* system calls named, at most */
#define PROTO_HELD_OTHER_CALL 0xffffffffu	/* nr of the calls past them */
struct proto_while_held {
	uint32_t row;		/* the holder's row */
	uint64_t running_ns;	/* on a CPU */
	uint64_t runnable_ns;	/* runnable, waiting for a CPU */
	uint64_t lock_wait_ns;	/* in a lock wait of its own */
	uint64_t exited_ns;	/* gone */
	uint32_t lock_row;	/* the row of that lock wait, + 1; 0: none */
	uint8_t nsys;
	struct {
		uint32_t nr;	/* system call number, or PROTO_HELD_OTHER_CALL */
		uint64_t ns;
	} sys[PROTO_HELD_SYSCALLS];
};

struct proto_goodbye {
	uint8_t reason;
};

/* A growable output buffer; on allocation failure it sets failed. */
struct wbuf {
	uint8_t *data;
	size_t len;
	size_t cap;
	bool failed;
};

/* A header and payload cut from an input stream. */
struct proto_frame {
	uint16_t type;
	const uint8_t *payload;
	uint32_t len;
};

/* Callbacks for decoded messages; any may be NULL. */
struct proto_visitor {
	void (*hello)(void *ctx, const struct proto_hello *m);
	void (*client_hello)(void *ctx, const struct proto_client_hello *m);
	void (*module)(void *ctx, const struct proto_module *m);
	void (*row)(void *ctx, const struct proto_row *m);
	void (*counts)(void *ctx, const struct proto_counts *m);
	void (*tick)(void *ctx, const struct proto_tick *m);
	void (*goodbye)(void *ctx, const struct proto_goodbye *m);
	void (*set_interval)(void *ctx, uint32_t interval_ms);
	void (*detach)(void *ctx);
	void (*stack)(void *ctx, const struct proto_stack *m);
	void (*stack_row)(void *ctx, const struct proto_stack_row *m);
	void (*stack_counts)(void *ctx, const struct proto_stack_counts *m);
	/*
	 * The code ranges of the lock wrappers the client skips: count of
	 * them, read with proto_wrapper_range() from ranges, checked.
	 */
	void (*wrappers)(void *ctx, uint32_t count, const uint8_t *ranges);
	/* The client wants holders tracked (on) or no longer. */
	void (*holders)(void *ctx, bool on);
	void (*lock_order)(void *ctx, const struct proto_lock_order *m);
	void (*wait)(void *ctx, const struct proto_wait *m);
	void (*while_held)(void *ctx, const struct proto_while_held *m);
};

/* Range i of a WRAPPERS message (i < its count). */
void proto_wrapper_range(const uint8_t *ranges, uint32_t i, uint64_t *lo,
			 uint64_t *hi);

/*
 * The memory behind every wbuf, by default realloc and free. The collector
 * installs its own arena: nothing of its comes from the host's malloc.
 */
void proto_set_allocator(void *(*grow)(void *p, size_t old, size_t size),
			 void (*release)(void *p, size_t size));

/* Release the memory of a buffer and empty it. */
void wbuf_free(struct wbuf *b);

/* Drop the first n bytes of a buffer. */
void wbuf_consume(struct wbuf *b, size_t n);

void proto_put_hello(struct wbuf *b, const struct proto_hello *m);
void proto_put_client_hello(struct wbuf *b, const struct proto_client_hello *m);
void proto_put_module(struct wbuf *b, const struct proto_module *m);
void proto_put_row(struct wbuf *b, const struct proto_row *m);
void proto_put_tick(struct wbuf *b, const struct proto_tick *m);
void proto_put_goodbye(struct wbuf *b, const struct proto_goodbye *m);
void proto_put_set_interval(struct wbuf *b, uint32_t interval_ms);
void proto_put_detach(struct wbuf *b);
void proto_put_holders(struct wbuf *b, bool on);
void proto_put_stack(struct wbuf *b, const struct proto_stack *m);
void proto_put_stack_row(struct wbuf *b, const struct proto_stack_row *m);
void proto_put_lock_order(struct wbuf *b, const struct proto_lock_order *m);
void proto_put_wait(struct wbuf *b, const struct proto_wait *m);
void proto_put_while_held(struct wbuf *b, const struct proto_while_held *m);

/* The code ranges [lo, hi) of lock wrappers: count pairs lo, hi (any order). */
void proto_put_wrappers(struct wbuf *b, const uint64_t *ranges, uint32_t count);

/*
 * Append one entry to the COUNTS frame open at the end of b, opening a new
 * one when none is open or the open one is full. *frame_off tracks the open
 * frame: set it to SIZE_MAX before the first call, and call
 * proto_close_run() after the last.
 */
void proto_put_counts(struct wbuf *b, size_t *frame_off,
		      const struct proto_counts *m);
void proto_close_run(struct wbuf *b, size_t *frame_off);

/* Like proto_put_counts(), for a STACK_COUNTS frame. */
void proto_put_stack_counts(struct wbuf *b, size_t *frame_off,
			    const struct proto_stack_counts *m);

/*
 * Cut the next frame from buf. Returns the bytes it spans (header included),
 * 0 when more input is needed, or -1 with a message in err when the header
 * is invalid (oversized length, nonzero flags).
 */
long proto_split(const uint8_t *buf, size_t len, struct proto_frame *f,
		 char *err, size_t errlen);

/*
 * Decode one frame and call the matching visitor callback(s). The whole
 * frame is validated before any callback runs. Unknown frame types are
 * ignored. Returns 0, or -1 with a message in err.
 */
int proto_decode(const struct proto_frame *f, const struct proto_visitor *v,
		 void *ctx, char *err, size_t errlen);

#endif
