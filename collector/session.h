/*
 * One connected qsptop, as seen by the collector thread: what it has been
 * sent, what it still has to be sent, and its half of the protocol.
 */
#ifndef QSPTOP_SESSION_H
#define QSPTOP_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/proto.h"
#include "modules.h"
#include "ownfd.h"
#include "rows.h"

/* What a session was last sent of one row. */
struct sent_row {
	struct row_counts c;
	uint64_t pending_max_ns;	/* longest wait not yet reported */
};

/* What a session was last sent of one (row, stack, thread) total. */
struct stack_sent {
	uint64_t count;
	uint64_t wait_ns;
};

struct session {
	struct own_fd fd;
	bool greeted;			/* CLIENT_HELLO received */
	bool closing;			/* close once out is written */
	bool dead;			/* write failed: nothing more is sent */
	uint32_t interval_ms;
	uint64_t due_ns;		/* next update */
	uint64_t hello_deadline_ns;
	struct wbuf out;
	uint8_t *in;
	size_t in_len;
	struct sent_row *sent;
	uint32_t rows_defined;
	size_t modules_sent;
	uint32_t stacks_defined;
	struct stack_sent *stack_sent;
	uint32_t stack_rows_known;
};

/* Greet a new connection on fd (ours); NULL when memory is short. */
struct session *session_new(const struct own_fd *fd,
			    const struct proto_hello *hello, uint64_t now_ns);

/* Close and free a session. */
void session_free(struct session *s);

/* Read and act on what the peer sent; false when the session must end. */
bool session_read(struct session *s, uint64_t now_ns);

/*
 * Write what is queued without blocking. False when the session must end:
 * a write failed, or it is closing and everything is written.
 */
bool session_write(struct session *s);

/* Carry the last scan's interval maxima into the session's pending maxima. */
void session_note_scan(struct session *s, const struct rows *rs);

/* Queue an update (modules, rows, deltas, tick) if due and not backed up. */
void session_update(struct session *s, const struct rows *rs,
		    const struct modules *ms, const struct proto_tick *tick,
		    bool force);

/* Queue a goodbye; the session closes once it is written. */
void session_goodbye(struct session *s, enum proto_goodbye_reason reason);

#endif
