/* The header's totals line: waits, acquisitions, what is shown, losses. */
#include <stdio.h>
#include <string.h>

#include "field.h"
#include "format.h"
#include "lockset.h"
#include "totals.h"

/*
 * The header's word on lock types: "types locks", "idle last" while idle
 * rows sort after the lock rows; "" when there is none.
 */
static void types_text(char *buf, size_t size, const struct model_query *q)
{
	unsigned set = q->types ? q->types : LOCKSET_ALL;
	bool idle_last = !q->mix_idle && lockset_both_roles(set);
	char names[128];

	lockset_name(set, names, sizeof(names));
	if (set == LOCKSET_ALL)
		buf[0] = '\0';
	else
		snprintf(buf, size, "types %s%s", names, idle_last ? ", " : "");
	if (idle_last)
		snprintf(buf + strlen(buf), size - strlen(buf), "idle last");
}

/*
 * What the collector lost: "dropped N", and ", folded M (memory cap)" when
 * it kept counts per call site instead of per lock.
 */
static void losses_text(char *buf, size_t size, const struct model_stats *st)
{
	int n = snprintf(buf, size, "dropped %llu", (unsigned long long)st->dropped);

	if (st->folded && n > 0 && (size_t)n < size)
		n += snprintf(buf + n, size - (size_t)n, ", folded %llu (memory cap)",
			      (unsigned long long)st->folded);
}

bool totals_unseen_list(char *buf, size_t size, const struct model_stats *st,
			bool idle)
{
	size_t len = 0;
	bool any = false;

	buf[0] = '\0';
	for (size_t i = 0; i < st->n_unseen && len < size; i++) {
		const struct unseen_wait *w = &st->unseen[i];

		if (w->idle != idle)
			continue;
		len += (size_t)snprintf(buf + len, size - len, "%s%u%s in %s",
					any ? ", " : "", w->threads,
					any ? "" : w->threads == 1 ? " thread" : " threads",
					w->kind);
		any = true;
	}
	return any;
}

/* "unseen waits: 8 threads in pthread_barrier_wait, 2 in raw futex", or "". */
static void unseen_text(char *buf, size_t size, const struct model_stats *st)
{
	char list[sizeof(((struct totals_text *)0)->unseen) - 16];

	buf[0] = '\0';
	if (totals_unseen_list(list, sizeof(list), st, false))
		snprintf(buf, size, "unseen waits: %s", list);
}

size_t totals_items(struct totals_text *t, struct line_item *items,
		    const struct model_stats *st, const struct model_query *q,
		    const char *filter)
{
	const char *arrow = format_utf8() ? (q->ascending ? "\u25b2" : "\u25bc")
					  : (q->ascending ? "^" : "v");
	bool lost = st->dropped || st->folded;
	const struct line_item shown[TOTALS_ITEMS] = {
		{ .text = t->lock, .priority = 10 },
		{ .text = t->cond, .priority = 8 },
		{ .text = t->acq, .priority = 6 },
		{ .text = t->filter, .priority = 9 },
		{ .text = t->types, .priority = 9 },
		{ .text = t->threads, .priority = 5 },
		{ .text = t->sort, .priority = q->culprits ? 9 : 4 },
		{ .text = t->coalesce, .priority = 3 },
		{ .text = t->losses, .priority = lost ? 10 : 2 },
		{ .text = t->wrappers, .priority = 5 },
		{ .text = t->unseen, .priority = 10, .shrink = true },
	};
	char v[32];

	format_duration(v, sizeof(v), st->lock_wait_per_s);
	snprintf(t->lock, sizeof(t->lock), "lock wait %s/s", v);
	format_duration(v, sizeof(v), st->cond_wait_per_s);
	snprintf(t->cond, sizeof(t->cond), "idle wait %s/s", v);
	format_count(v, sizeof(v), st->acq_per_s);
	snprintf(t->acq, sizeof(t->acq), "acq %s/s", v);
	t->filter[0] = '\0';
	if (filter && filter[0])
		snprintf(t->filter, sizeof(t->filter), "filter: %s", filter);
	types_text(t->types, sizeof(t->types), q);
	snprintf(t->threads, sizeof(t->threads), "threads %u seen, %u live",
		 st->threads_seen, st->threads_live);
	snprintf(t->sort, sizeof(t->sort), "%ssort %s %s",
		 q->culprits ? "culprits view, " : "", q->sort->key, arrow);
	snprintf(t->coalesce, sizeof(t->coalesce), "coalesce %s",
		 coalesce_name(q->coalesce));
	losses_text(t->losses, sizeof(t->losses), st);
	unseen_text(t->unseen, sizeof(t->unseen), st);
	t->wrappers[0] = '\0';
	if (st->wrappers_found)
		snprintf(t->wrappers, sizeof(t->wrappers), "wrappers: %zu found",
			 st->wrappers_found);
	memcpy(items, shown, sizeof(shown));
	return TOTALS_ITEMS;
}
