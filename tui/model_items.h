/*
 * The items of a view, made by model_items.c for model_view.c to group:
 * not for use elsewhere.
 */
#ifndef QSPTOP_MODEL_ITEMS_H
#define QSPTOP_MODEL_ITEMS_H

#include "model_impl.h"

/*
 * A candidate line before grouping: a row as it is or, with wrappers
 * skipped, what is left of a wrapper row, or a caller its stacks went to.
 */
struct item {
	uint64_t site;
	uint64_t object;
	struct lock_calls c;	/* since reset */
	struct interval_counts last;	/* the last interval */
	uint64_t max_wait;	/* of every wait it has, since reset */
	uint64_t max_hold;	/* the longest timed hold, since reset */
	uint32_t row;		/* the row lending histogram, max and trend;
				   NO_ROW for a caller only */
	uint32_t row_id;	/* the row named for the line */
	uint16_t proc;		/* of row_id (see item_name_row()) */
	uint8_t role;
	uint8_t role_from;
	uint8_t type;
	bool keep;		/* a wrapper's remainder only when not empty */
};

/*
 * Name row id for item it, with what a line takes from it: its process
 * (by the row's own site) and its role. Kept in the item, a line need not
 * look at the row again.
 */
void item_name_row(const struct model *m, struct item *it, uint32_t id);

/* An item for the whole of row id. */
void item_of_row(const struct model *m, const struct model_query *q,
		 uint32_t id, struct item *it);

/*
 * The items of a view: one per row or, with wrappers skipped, wrapper rows
 * split by their defined stacks, merged by (site, object, type). Caller
 * frees *out.
 */
size_t model_items(const struct model *m, const struct model_query *q,
		   struct item **out);

#endif
