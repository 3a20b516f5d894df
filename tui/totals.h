/* The header's totals line: waits, acquisitions, what is shown, losses. */
#ifndef QSPTOP_TOTALS_H
#define QSPTOP_TOTALS_H

#include <stddef.h>

#include "line.h"
#include "model.h"

/* The texts of the header's totals line, kept while its items are shown. */
struct totals_text {
	char lock[48], cond[48], acq[48], filter[160], types[160];
	char threads[64], sort[48], coalesce[48], losses[96], wrappers[48];
	char unseen[UNSEEN_KINDS * 64];
};

#define TOTALS_ITEMS 11

/*
 * The totals line's items, in the order shown, into items[TOTALS_ITEMS]:
 * lock and idle waits per second (role.h), acquisitions, the filter (none when
 * filter is NULL or ""), the types shown, threads, sort (an arrow marks
 * its direction; "culprits view, " before it in the culprit view), coalescing and losses, which come first when there are
 * some, and the waits no hook times ("unseen waits: 8 threads in
 * pthread_barrier_wait, 2 in raw futex"), when some were seen, and
 * the lock wrappers found ("wrappers: 2 found"), when some were. Returns
 * the count.
 */
size_t totals_items(struct totals_text *t, struct line_item *items,
		    const struct model_stats *st, const struct model_query *q,
		    const char *filter);

/*
 * The unseen waits of st, the idle ones or the others, as "8 threads in
 * pthread_barrier_wait, 2 in raw futex" into buf; whether there are any.
 */
bool totals_unseen_list(char *buf, size_t size, const struct model_stats *st,
			bool idle);

#endif
