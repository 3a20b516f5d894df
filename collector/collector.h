/* Life cycle of the collector inside the target process. */
#ifndef QSPTOP_COLLECTOR_H
#define QSPTOP_COLLECTOR_H

#include <stdbool.h>

/* Whether threads may start recording. */
bool collector_recording(void);

/* Start the collector thread unless it runs (forked children start lazily). */
void collector_thread_started(void);

#endif
