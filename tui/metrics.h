/*
 * /metrics: the Prometheus text exposition of the counts since qsptop
 * began (ledger.h), a series per (call site, type, process), the sites
 * past the top N summed per type in site="other", and qsptop's health.
 */
#ifndef QSPTOP_METRICS_H
#define QSPTOP_METRICS_H

#include <stddef.h>

#include "ledger.h"

struct app;

/*
 * What the exposition keeps from one scrape to the next: which series
 * are named. A series named once stays named, and one summed in "other"
 * stays there, so that no counter ever moves between series (and none
 * goes down); the heaviest by wait are named first, at most top of them.
 */
struct metrics;

struct metrics *metrics_new(size_t top);
void metrics_free(struct metrics *m);

/* The exposition (malloc'ed) of the rows of v. */
char *metrics_text(struct metrics *m, const struct app *a,
		   const struct ledger_view *v);

#endif
