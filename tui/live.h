/* The interactive screen (qsptop without -b, on a terminal). */
#ifndef QSPTOP_LIVE_H
#define QSPTOP_LIVE_H

#include <signal.h>

#include "app.h"

/* Run the screen until the user quits, -n is reached or *stop is set. */
int live_run(struct app *a, const char *theme, volatile sig_atomic_t *stop);

#endif
