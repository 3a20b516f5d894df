/* Life cycle of the collector inside the target process. */
#ifndef QSPTOP_COLLECTOR_H
#define QSPTOP_COLLECTOR_H

#include <stdbool.h>

/* Nonzero while hooks record; read through collector_recording(). */
extern int collector_recording_flag;

/* Whether threads may record (read on every hooked call). */
static inline bool collector_recording(void)
{
	return __atomic_load_n(&collector_recording_flag, __ATOMIC_RELAXED);
}

/* Let hooks record, or make them pass every call straight through. */
void collector_set_recording(bool on);

/*
 * Whether we were dlopen'ed into a running process (qsptop -p injected
 * us) rather than preloaded: then only patched GOT slots reach the hooks.
 */
bool collector_injected(void);

/* Start the collector thread unless it runs. */
void collector_start(void);

/* Exported: qsptop -p calls it in a forked child whose thread never ran. */
void qsptop_wake(void);

#endif
