/*
 * Counts since qsptop began, whatever the resets: what /metrics and
 * /debug/pprof/mutex serve, so that an exported counter never goes down.
 * A reset (the TUI's r) zeroes the model's rows; the ledger keeps what
 * they held and adds it back.
 */
#ifndef QSPTOP_LEDGER_H
#define QSPTOP_LEDGER_H

#include <stddef.h>

#include "model.h"

struct app;
struct ledger;

struct ledger *ledger_new(void);
void ledger_free(struct ledger *l);

/* The model's rows, one line each, in a fixed order (no wrapper skipped). */
struct model_query ledger_query(const struct app *a);

/* Before a reset: keep what a's rows and stacks hold. */
void ledger_carry(struct ledger *l, const struct app *a);

/*
 * Every row since the start: ledger_query()'s lines, then rows known
 * only to the ledger, their counts with what resets took added back, and
 * each row's stacks likewise, those the model has and those only the
 * ledger still holds (zeroed by a reset, yet grown since it was last
 * looked at). Free with ledger_view_free().
 */
struct ledger_view {
	struct view_row *rows;
	size_t n;
	struct line_drill *line;	/* per row: its stacks, threads none */
	struct stack_view *stacks;	/* what the lines point into */
};

void ledger_view(struct ledger *l, const struct app *a, struct ledger_view *v);
void ledger_view_free(struct ledger_view *v);

#endif
