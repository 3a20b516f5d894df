/*
 * What an empty table means, in words for the live screen: which calls
 * qsptop looked at, how it got into the process, and which waits it found
 * that no hook times. Text only; the view wraps and draws it.
 */
#ifndef QSPTOP_EXPLAIN_H
#define QSPTOP_EXPLAIN_H

#include <stddef.h>

#include "model.h"

/*
 * "Looked at: ..." the hooked calls, and how the collector came in: mode
 * is the attach's ("launched", "injected", "connected").
 */
void explain_looked(char *buf, size_t size, const char *mode);

/* "Not seen: ..." the unseen waits of st, or that none were found. */
void explain_unseen(char *buf, size_t size, const struct model_stats *st);

/* "Idle, not counted: ..." the idle unseen waits; false (and "") if none. */
bool explain_idle(char *buf, size_t size, const struct model_stats *st);

#endif
