/*
 * One connected qsptop, as seen by the collector thread: what it has been
 * sent, and its half of the protocol. Counts travel cumulative, so a
 * session only remembers how far it got: the scan whose changes it was
 * last sent, and how many definitions.
 */
#ifndef QSPTOP_SESSION_H
#define QSPTOP_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/proto.h"
#include "modules.h"
#include "ownfd.h"
#include "rows.h"

struct session {
	struct own_fd fd;
	unsigned slot;			/* its index among the sessions */
	bool greeted;			/* CLIENT_HELLO received */
	bool wrappers_known;		/* WRAPPERS received */
	bool baseline_sent;		/* its first update is out */
	bool closing;			/* close once out is written */
	bool dead;			/* write failed: nothing more is sent */
	bool holders;			/* wants holders tracked (HOLDERS) */
	uint32_t interval_ms;
	uint32_t memory_cap_mb;		/* asked for in CLIENT_HELLO; 0: none */
	uint64_t due_ns;		/* next update */
	uint64_t hello_deadline_ns;
	uint64_t greeted_ns;
	struct wbuf out;
	uint8_t *in;
	size_t in_len;
	uint64_t sent_seq;		/* changes up to this scan are sent */
	uint32_t rows_defined;
	uint32_t stacks_defined;
	uint32_t orders_sent;		/* lock-order warnings sent once */
	uint32_t stack_rows_defined;
	size_t modules_sent;
};

/*
 * Greet a new connection on fd (ours) in slot; NULL when memory is short.
 * With baseline, its first update is a baseline the client subtracts.
 */
struct session *session_new(const struct own_fd *fd, unsigned slot,
			    const struct proto_hello *hello, bool baseline,
			    uint64_t now_ns);

/* Close and free a session. */
void session_free(struct session *s);

/* Read and act on what the peer sent; false when the session must end. */
bool session_read(struct session *s, uint64_t now_ns);

/*
 * Write what is queued without blocking. False when the session must end:
 * a write failed, or it is closing and everything is written.
 */
bool session_write(struct session *s);

/*
 * How long a session waits, after it greets us, for the lock wrappers it
 * skips before its counts start anyway (an old or silent client).
 */
#define SESSION_WRAPPERS_WAIT_NS (3ull * 1000000000)

/*
 * Whether the session is ready for its baseline now: greeted, nothing
 * sent yet, and its wrappers known (so that from its first count on, a
 * call from inside a wrapper counts on its caller) or waited for long
 * enough.
 */
bool session_wants_baseline(const struct session *s, uint64_t now_ns);

/* Whether it still waits for its wrappers: it has been sent the modules. */
bool session_awaits_wrappers(const struct session *s, uint64_t now_ns);

/* Queue the modules the session was not sent yet. */
void session_send_modules(struct session *s, const struct modules *ms);

/*
 * Queue an update if due and not backed up (always when force): new
 * definitions, the rows and stack rows changed since the last one, a tick.
 */
void session_update(struct session *s, struct rows *rs,
		    const struct modules *ms, const struct proto_tick *tick,
		    bool force);

/* Queue a goodbye; the session closes once it is written. */
void session_goodbye(struct session *s, enum proto_goodbye_reason reason);

#endif
