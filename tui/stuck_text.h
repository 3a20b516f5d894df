/*
 * The threads view as text, one line a thread (stuck.h's data): for the
 * batch output and the live screen alike.
 */
#ifndef QSPTOP_STUCK_TEXT_H
#define QSPTOP_STUCK_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "stuck.h"
#include "symbols.h"

/* The column heads of stuck_text_line(). */
#define STUCK_TEXT_HEAD "TID      NAME             STATE"

/*
 * "7 threads: 2 running, 3 blocked on locks, 2 in other calls", after
 * "DEADLOCK 1235 → 1236 → 1235 │ " for each deadlock.
 */
void stuck_text_summary(char *buf, size_t size, const struct stuck *s);

/* The lock's name: "lock_a", "0x55d0c0a8e040". */
void stuck_text_object(char *buf, size_t size, struct symbols *symbols,
		       uint64_t object);

/*
 * Thread t's line: "1235     ab               blocked 1.0s on mutex lock_a
 * at worker+0x12 (stuck.c:40), held by 1236 (blocked) DEADLOCK".
 */
void stuck_text_line(char *buf, size_t size, const struct stuck *s,
		     struct symbols *symbols, const struct stuck_thread *t);

/*
 * The whole view, for batch: why it is shown (why, when not NULL), the
 * summary, the heads, a line a thread, and each deadlock member's stack.
 */
void stuck_text_print(FILE *out, const struct stuck *s,
		      struct symbols *symbols, const char *why);

#endif
