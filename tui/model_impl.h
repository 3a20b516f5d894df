/*
 * The model's insides, shared by model.c (storage, intervals, reset),
 * model_view.c (wrapper attribution, grouping, sorting) and model_drill.c
 * (the stacks and threads behind a line). Not for use outside them.
 */
#ifndef QSPTOP_MODEL_IMPL_H
#define QSPTOP_MODEL_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"

#define MODEL_MAX_ROWS (1u << 20)
#define MODEL_MAX_STACKS (1u << 20)
/* Past this many (row, stack, thread) entries, new ones are dropped. */
#define MODEL_MAX_ENTRIES (1u << 22)
/*
 * The collector numbers rows and stacks densely; an id far past those known
 * is garbage, refused before it can make us allocate for it.
 */
#define MODEL_MAX_ID_GAP 4096
#define NO_ROW UINT32_MAX
#define EMPTY_SLOT UINT32_MAX

/* Contended waits of one row through one stack in one thread. */
struct stack_entry {
	uint32_t stack;		/* or PROTO_NO_STACK */
	uint32_t tid;
	uint64_t count;		/* since monitoring began */
	uint64_t wait;
	uint64_t base_count;	/* at the last reset */
	uint64_t base_wait;
	uint64_t pending_count;	/* since the last tick */
	uint64_t pending_wait;
	uint64_t last_count;	/* the last closed interval */
	uint64_t last_wait;
	uint64_t prev_count;	/* the interval before it */
	uint64_t prev_wait;
};

struct row {
	bool defined;
	uint8_t type;
	uint64_t site;
	uint64_t object;
	struct counts total;	/* since monitoring began */
	struct counts base;	/* totals at the last reset */
	uint64_t max_wait_ns;	/* since reset */
	uint64_t pending_acq;	/* since the last tick */
	uint64_t pending_wait;
	uint64_t last_acq;	/* the last closed interval */
	uint64_t last_wait;
	uint64_t prev_acq;	/* the interval before it */
	uint64_t prev_wait;
	uint64_t trend[TREND_LEN]; /* ring, next slot is ticks % TREND_LEN */
	struct stack_entry *se;	/* in order of arrival */
	uint32_t n_se;
	uint32_t cap_se;
};

struct stack_def {
	uint8_t depth;		/* 0 while undefined */
	uint64_t frames[PROTO_STACK_DEPTH];
};

/* Where an entry lives: its row and index there; idx EMPTY_SLOT = free. */
struct entry_slot {
	uint32_t row;
	uint32_t idx;
};

struct model {
	struct row *rows;
	size_t cap;		/* rows allocated (defined or not) */
	struct stack_def *stacks;
	size_t stacks_cap;	/* stacks allocated (defined or not) */
	struct entry_slot *etab; /* open addressing, by (row, stack, tid) */
	size_t etab_cap;	/* a power of two, at least twice n_entries */
	size_t n_entries;
	uint64_t ticks;
	bool have_tick;
	uint64_t last_tick_ns;
	double interval_s;	/* 0 until two ticks have been seen */
	double prev_interval_s;	/* the interval before the last */
	uint64_t last_acq;	/* all rows, last interval */
	uint64_t last_wait;
	uint64_t prev_acq;
	uint64_t prev_wait;
	uint32_t threads_seen;
	uint32_t threads_live;
	uint64_t dropped;
	uint64_t folded;
	uint64_t memory_used;
	uint64_t memory_cap;
	uint64_t unknown_rows;
};

/*
 * A candidate line before grouping: a row as it is or, with wrappers
 * skipped, what is left of a wrapper row, or a caller its stacks went to.
 */
struct item {
	uint64_t site;
	uint64_t object;
	uint8_t type;
	bool keep;		/* a wrapper's remainder only when not empty */
	uint32_t row;		/* the row lending failures, histogram, max
				   and trend; NO_ROW for a caller only */
	uint32_t row_id;	/* the row named for the line */
	uint64_t acq;		/* since reset */
	uint64_t contended;
	uint64_t wait;
	uint64_t last_acq;	/* the last interval */
	uint64_t last_wait;
	uint32_t from;		/* the wrapper row adding to it now */
	uint64_t from_wait;	/* what that row has added */
	uint64_t best_wait;	/* the most one wrapper row added */
};

#define ATTR_UNKNOWN 0xff
#define ATTR_ALL_WRAPPERS 0xfe

/* Where the stacks of wrapper rows go, computed once per stack id. */
struct attrib {
	const struct model *m;
	const struct model_query *q;
	uint8_t *frame;		/* per stack: the first frame outside the
				   wrappers, or ATTR_*; NULL unless skipping */
};

/* A 64-bit mix (the splitmix64 finalizer). */
static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* -1, 0 or 1 as a is below, equal to or above b. */
static inline int cmp_u64(uint64_t a, uint64_t b)
{
	return (a > b) - (a < b);
}

/* The row of an id when it is defined, else NULL. */
struct row *model_row(const struct model *m, uint32_t id);

/* The definition of a stack id, or NULL while it has none. */
const struct stack_def *model_stack(const struct model *m, uint32_t id);

/* Amount per second over the last interval; 0 while its length is unknown. */
double model_rate(const struct model *m, uint64_t amount);

/* Whether the query attributes wrapper rows to their callers. */
bool attrib_skipping(const struct model_query *q);

/* Prepare the attribution of stacks for a query (attrib_done releases it). */
void attrib_init(struct attrib *a, const struct model *m,
		 const struct model_query *q);
void attrib_done(struct attrib *a);

/* Whether a row is a wrapper's, to be split by its stacks. */
bool attrib_row(const struct attrib *a, const struct row *r);

/* The site a stack entry of row r is attributed to. */
uint64_t attrib_site(struct attrib *a, const struct row *r, bool wrapper,
		     const struct stack_entry *e);

#endif
