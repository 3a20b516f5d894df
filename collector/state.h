/*
 * What every part of the collector may read: whether the hooks record,
 * and how the library came to be in the process. Set by the entry points
 * (collector.c) and the collector thread (server.c); depends on nothing.
 */
#ifndef QSPTOP_STATE_H
#define QSPTOP_STATE_H

#include <stdbool.h>
#include <stdint.h>

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
 * Nonzero while holders are tracked (a client asked: the unlock slots are
 * patched); read through state_holders(). Hidden: one instruction reads
 * it, where a default-visibility global costs an address load first.
 */
extern int state_holders_flag __attribute__((visibility("hidden")));

/* Whether hooks note holders and time holds (one relaxed load). */
static inline bool state_holders(void)
{
	return __atomic_load_n(&state_holders_flag, __ATOMIC_RELAXED);
}

/* Start or stop noting holders; the caller patches the unlock slots. */
void state_set_holders(bool on);

/* When holders were last turned on (clock_now_ns()): older holds are stale. */
uint64_t state_holders_since(void);

/*
 * Whether we were dlopen'ed into a running process (qsptop -p injected
 * us) rather than preloaded: then only patched GOT slots reach the hooks.
 */
bool state_injected(void);

/* Say how we were loaded; once, from the constructor. */
void state_set_injected(bool injected);

#endif
