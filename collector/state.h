/*
 * What every part of the collector may read: whether the hooks record,
 * and how the library came to be in the process. Set by the entry points
 * (collector.c) and the collector thread (server.c); depends on nothing.
 */
#ifndef QSPTOP_STATE_H
#define QSPTOP_STATE_H

#include <stdbool.h>

/* Nonzero while hooks record; read through state_recording(). */
extern int state_recording_flag;

/* Whether threads may record (read on every hooked call). */
static inline bool state_recording(void)
{
	return __atomic_load_n(&state_recording_flag, __ATOMIC_RELAXED);
}

/* Let hooks record, or make them pass every call straight through. */
void state_set_recording(bool on);

/*
 * Whether we were dlopen'ed into a running process (qsptop -p injected
 * us) rather than preloaded: then only patched GOT slots reach the hooks.
 */
bool state_injected(void);

/* Say how we were loaded; once, from the constructor. */
void state_set_injected(bool injected);

#endif
