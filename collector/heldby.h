/*
 * While held: what the holder of a lock does while others wait for it
 * (issue 24). While waits with a known holder are in progress, the
 * collector thread looks at each holder every HELDBY_PERIOD_NS: /proc
 * says whether it runs, waits for a CPU, sits in a system call (which)
 * or is gone, and its own table whether it waits for another lock. Each
 * look's time since the last counts, once per waiter, on the holder's
 * row. Only while holders are tracked (their rows are known then).
 */
#ifndef QSPTOP_HELDBY_H
#define QSPTOP_HELDBY_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/proto.h"
#include "rows.h"

#define HELDBY_PERIOD_NS (5ull * 1000000)

/*
 * Look at the holders of the waits in progress now; false when there
 * are none (no need to look again before the next scan).
 */
bool heldby_sample(struct rows *rs, uint64_t now);

/* Queue the rows' totals changed since scan sent_seq. */
void heldby_send(const struct rows *rs, struct wbuf *out, uint64_t sent_seq);

#endif
