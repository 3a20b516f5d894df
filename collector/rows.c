/* Summing the thread tables into rows. */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "rows.h"
#include "table.h"

static uint32_t key_hash(uint64_t site, uint64_t object, uint32_t type)
{
	uint64_t h = site * 0x9e3779b97f4a7c15ull;

	h ^= object * 0xc2b2ae3d27d4eb4full + type;
	h ^= h >> 31;
	return (uint32_t)(h * 0xff51afd7ed558ccdull >> 32);
}

/* Rebuild the index at twice the size; false when memory is short. */
static int grow_index(struct rows *rs)
{
	uint32_t cap = rs->index_cap ? rs->index_cap * 2 : 1024;
	uint32_t *index = calloc(cap, sizeof(*index));

	if (index == NULL)
		return 0;
	for (uint32_t r = 0; r < rs->n; r++) {
		const struct row *row = &rs->v[r];
		uint32_t i = key_hash(row->site, row->object, row->type) & (cap - 1);

		while (index[i] != 0)
			i = (i + 1) & (cap - 1);
		index[i] = r + 1;
	}
	free(rs->index);
	rs->index = index;
	rs->index_cap = cap;
	return 1;
}

/* Index slot of a key: its row, or the empty slot where it would go. */
static uint32_t *index_slot(struct rows *rs, uint64_t site, uint64_t object,
			    uint32_t type)
{
	uint32_t mask = rs->index_cap - 1;
	uint32_t i = key_hash(site, object, type) & mask;

	for (;; i = (i + 1) & mask) {
		uint32_t r = rs->index[i];
		const struct row *row = &rs->v[r - 1];

		if (r == 0 || (row->site == site && row->object == object &&
			       row->type == type))
			return &rs->index[i];
	}
}

static struct row *add_row(struct rows *rs, uint32_t *slot, uint64_t site,
			   uint64_t object, uint32_t type)
{
	struct row *row;

	if (!grow_array((void **)&rs->v, &rs->cap, rs->n, sizeof(*rs->v), 256))
		return NULL;
	row = &rs->v[rs->n++];
	memset(row, 0, sizeof(*row));
	row->site = site;
	row->object = object;
	row->type = type;
	*slot = rs->n;
	return row;
}

/*
 * The row of a key, created when new. Past ROWS_MAX rows a new key joins its
 * site's "several objects" row; NULL when even that cannot be had.
 */
static struct row *row_get(struct rows *rs, uint64_t site, uint64_t object,
			   uint32_t type)
{
	uint32_t *slot;

	if ((rs->n + 1) * 2 > rs->index_cap && !grow_index(rs))
		return NULL;
	slot = index_slot(rs, site, object, type);
	if (*slot != 0)
		return &rs->v[*slot - 1];
	if (rs->n >= ROWS_MAX && object != 0)
		return row_get(rs, site, 0, type);
	if (rs->n >= ROWS_HARD_MAX)
		return NULL;
	return add_row(rs, slot, site, object, type);
}

static void add_counts(struct row_counts *to, const struct row_counts *from)
{
	to->acquisitions += from->acquisitions;
	to->contended += from->contended;
	to->wait_ns += from->wait_ns;
	to->failed += from->failed;
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		to->hist[i] += from->hist[i];
}

static void load_entry(const struct entry *e, struct row_counts *c)
{
	c->acquisitions = table_load(&e->acquisitions);
	c->contended = table_load(&e->contended);
	c->wait_ns = table_load(&e->wait_ns);
	c->failed = table_load(&e->failed);
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		c->hist[i] = table_load(&e->hist[i]);
}

/*
 * Add one entry to its row. Interval maxima: an entry's epoch_max_ns counts
 * when it was recorded in the epoch this scan closes, or in the next one (a
 * thread that already saw the new epoch).
 */
static uint32_t scan_entry(struct rows *rs, const struct entry *e, int dead,
			   uint32_t epoch)
{
	struct row_counts c;
	struct row *row;
	uint32_t max_epoch;
	uint64_t max;

	row = row_get(rs, e->site, e->object, e->type);
	load_entry(e, &c);
	if (row == NULL) {
		rs->dropped += c.acquisitions + c.failed;
		if (dead)
			rs->dropped_retired += c.acquisitions + c.failed;
		return UINT32_MAX;
	}
	add_counts(&row->now, &c);
	if (dead)
		add_counts(&row->retired, &c);
	max = table_load(&e->max_wait_ns);
	if (max > row->max_wait_ns)
		row->max_wait_ns = max;
	max_epoch = __atomic_load_n(&e->max_epoch, __ATOMIC_RELAXED);
	max = table_load(&e->epoch_max_ns);
	if ((max_epoch == epoch || max_epoch == epoch + 1) &&
	    max > row->interval_max_ns)
		row->interval_max_ns = max;
	return (uint32_t)(row - rs->v);
}

/* Add a whole table; a dead one is retired and recycled. */
static void scan_table(struct rows *rs, struct thread_table *t, uint32_t epoch)
{
	uint32_t state = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
	uint32_t slot_row[TABLE_SLOTS];
	uint32_t used;
	uint64_t dropped;

	if (state == TABLE_FREE)
		return;
	memset(slot_row, 0xff, sizeof(slot_row));
	used = __atomic_load_n(&t->used, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < used; i++)
		slot_row[t->order[i]] = scan_entry(rs, &t->slots[t->order[i]],
						   state == TABLE_DEAD, epoch);
	stacks_scan_table(&rs->stacks, t, slot_row, state == TABLE_DEAD);
	dropped = table_load(&t->dropped);
	rs->dropped += dropped;
	if (state == TABLE_DEAD) {
		rs->dropped_retired += dropped;
		table_recycle(t);
	} else {
		rs->threads_live++;
	}
}

void rows_scan(struct rows *rs)
{
	uint32_t epoch = __atomic_load_n(&table_epoch, __ATOMIC_RELAXED);

	__atomic_store_n(&table_epoch, epoch + 1, __ATOMIC_RELAXED);
	for (uint32_t r = 0; r < rs->n; r++) {
		rs->v[r].now = rs->v[r].retired;
		rs->v[r].interval_max_ns = 0;
	}
	rs->threads_live = 0;
	rs->dropped = rs->dropped_retired + table_claim_failures();
	stacks_begin_scan(&rs->stacks);
	for (struct thread_table *t = table_first(); t; t = t->next)
		scan_table(rs, t, epoch);
}

void rows_free(struct rows *rs)
{
	stacks_free(&rs->stacks);
	free(rs->v);
	free(rs->index);
	memset(rs, 0, sizeof(*rs));
}
