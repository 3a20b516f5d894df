/*
 * The model's insides, shared by model.c (storage, intervals, reset),
 * model_attrib.c (wrapper attribution), model_items.c (the candidate
 * lines), model_view.c (grouping, building),
 * model_order.c (sorting), model_drill.c (the stacks and threads behind
 * a line) and model_names.c (the stacks that name a line's caller and a
 * lock). Not for use outside them.
 */
#ifndef QSPTOP_MODEL_IMPL_H
#define QSPTOP_MODEL_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "../common/hash.h"
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

/* What an interval counts: acquisitions and wait time. */
struct interval_counts {
	uint64_t acq;
	uint64_t wait_ns;
	uint64_t caused_ns;	/* others' waits behind the row's holds */
};

/*
 * Counts per interval: the one open since the last tick, the last closed
 * one (what the rates show) and the one before it (what a fold joins).
 */
struct interval {
	struct interval_counts pending;
	struct interval_counts last;
	struct interval_counts prev;
};

/* Count acq acquisitions and wait_ns of waiting in the open interval. */
static inline void interval_add(struct interval *iv, uint64_t acq,
				uint64_t wait_ns)
{
	iv->pending.acq += acq;
	iv->pending.wait_ns += wait_ns;
}

/* Close the open interval: it becomes the last, the last the one before. */
static inline void interval_tick(struct interval *iv)
{
	iv->prev = iv->last;
	iv->last = iv->pending;
	iv->pending = (struct interval_counts){ 0, 0, 0 };
}

/* Join the last interval to the one before it. */
static inline void interval_fold(struct interval *iv)
{
	iv->last.acq += iv->prev.acq;
	iv->last.wait_ns += iv->prev.wait_ns;
	iv->last.caused_ns += iv->prev.caused_ns;
}

/* Whether the three intervals counted nothing. */
static inline bool interval_quiet(const struct interval *iv)
{
	return (iv->pending.acq | iv->pending.wait_ns | iv->pending.caused_ns |
		iv->last.acq | iv->last.wait_ns | iv->last.caused_ns |
		iv->prev.acq | iv->prev.wait_ns | iv->prev.caused_ns) == 0;
}

/* Waits of one row through one stack in one thread. */
struct stack_entry {
	uint32_t stack;		/* or PROTO_NO_STACK */
	uint32_t tid;
	struct wait_counts w;	/* since reset */
	struct interval iv;	/* acq: the waits that got the lock */
};

/*
 * What a row keeps of its waits, made on its first wait: most rows of a
 * big process never wait, and each interval touches every row.
 */
struct row_waits {
	uint64_t trend[TREND_LEN];	/* ring, the slot of tick t is t % TREND_LEN */
	uint64_t upto;		/* the slots of ticks from here on are 0,
				   whatever they hold: only ticks that close
				   an interval of the row write its ring */
};

/*
 * A set of row ids, taken whole: a row is in it while its mark is the
 * list's epoch + 1 (rows start at 0, out), so taking it (a new epoch)
 * costs nothing per row.
 */
struct id_list {
	uint32_t *ids;
	size_t n;
	size_t cap;
	uint64_t epoch;		/* 64 bits: never wraps */
};

struct row {
	uint64_t site;
	uint64_t object;
	uint64_t via;		/* through lock wrappers: the call site in the
				   innermost one, where it shows while they are
				   shown; else 0 */
	struct interval iv;
	uint64_t max_wait_ns;	/* since reset */
	uint64_t max_hold_ns;	/* since reset */
	struct stack_entry *se;	/* in order of arrival */
	uint32_t n_se;
	uint32_t cap_se;
	uint32_t waits;		/* index in model.waits + 1; 0 = never waited */
	bool defined;
	bool active;		/* in model.active */
	uint64_t touched_in;	/* its mark for model.touched */
	uint64_t role_dirty_in;	/* its mark for model.role_dirty */
	uint8_t type;
	uint8_t role;		/* enum role */
	uint8_t role_from;	/* enum role_from */
	uint32_t role_gen;	/* the rules' generation it was judged by */
	struct row_inprog *inprog;	/* waits in progress; NULL: none lately */
	struct held_view *held;	/* while held, since reset; NULL: none */
	/*
	 * Since reset. Last, so that a scan of the rows reads its calls
	 * but, for the rows that never waited, never its histogram.
	 */
	struct lock_counts since;
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

struct first_stacks;
struct tid_set;
struct blame_store;
struct holder_store;

struct model {
	struct row *rows;
	size_t cap;		/* rows allocated (defined or not) */
	size_t n_defined;
	struct stack_def *stacks;
	size_t stacks_cap;	/* stacks allocated (defined or not) */
	/*
	 * The rows whose last two intervals or the current one are not all
	 * zero: the only ones a tick has to close, so that a tick costs what
	 * changed, not every row known.
	 */
	uint32_t *active;
	size_t n_active;
	size_t active_cap;
	/*
	 * The rows whose numbers changed since a view cache last took them
	 * (model_cache.c), and a count of the changes a list cannot say:
	 * rows defined, a reset, a folded interval.
	 */
	struct id_list touched;
	const void *touched_by;	/* who took them last */
	/* The rows defined or that waited since roles were last decided. */
	struct id_list role_dirty;
	uint64_t structure;
	struct row_waits *waits; /* of the rows that waited */
	size_t n_waits;
	size_t waits_cap;
	struct lock_counts since; /* all rows, since reset */
	uint64_t since_cond_wait; /* idle rows' part of since.calls.wait_ns */
	struct entry_slot *etab; /* open addressing, by (row, stack, tid) */
	size_t etab_cap;	/* a power of two, at least twice n_entries */
	size_t n_entries;
	uint64_t ticks;
	bool have_tick;
	uint64_t last_tick_ns;
	double interval_s;	/* 0 until two ticks have been seen */
	double prev_interval_s;	/* the interval before the last */
	struct interval all;	/* all rows; only last and prev are kept */
	struct interval cond;	/* the idle rows' part of all */
	uint32_t threads_seen;
	uint32_t threads_live;
	uint64_t dropped;
	uint64_t folded;
	uint64_t memory_used;
	uint64_t memory_cap;
	uint64_t unknown_rows;
	struct first_stacks *firsts; /* per object, the stack that names it */
	struct tid_set *tids;	/* threads seen waiting */
	struct blame_store *blame; /* who blocks whom (model_blame.c) */
	struct lockorder lock_orders;	/* pairs taken in both orders */
	struct holder_store *holders; /* holder stacks (model_holders.c) */
	uint64_t span_from_ns;	/* collector clock of the origin or reset */
	struct unseen_wait unseen[UNSEEN_KINDS];
	size_t n_unseen;
	struct model_wait *waits_now;	/* in progress at the last update */
	size_t n_waits_now;
	size_t waits_now_cap;
	uint32_t *held_rows;	/* rows with a held_view */
	size_t n_held_rows;
	size_t held_rows_cap;
	uint32_t *inprog_rows;	/* rows with a row_inprog */
	size_t n_inprog_rows;
	size_t inprog_rows_cap;
};

/*
 * The waits in progress on a row (model_waits.c): their time so far at
 * this update and the last, so that a line's wait counts them and its
 * rate counts what they grew by.
 */
struct row_inprog {
	uint64_t ns;		/* at the last update */
	uint64_t prev_ns;	/* at the one before */
	uint64_t prev2_ns;	/* and the one before that (a fold joins it) */
	uint64_t max_ns;	/* the longest one now */
	uint32_t n;		/* how many now */
};

/* Note that row id changed, for the views that follow changes (model.c). */
void model_row_touch(struct model *m, uint32_t id);

/* Forget what holders did (a reset). */
void model_held_reset(struct model *m);

/* The last interval joins the one before: so do the waits' times. */
void model_inprog_fold(struct model *m);

/* Add the waits in progress to the header's totals and rates. */
void model_inprog_stats(const struct model *m, struct model_stats *s);

/* Add the waits in progress on row r to an item's numbers. */
struct item;
void model_inprog_item(const struct model *m, const struct row *r,
		       struct item *it);

/* A line of a view before it is built: its members and its numbers. */
struct line {
	uint64_t site;		/* 0 when the line spans several sites */
	uint64_t object;	/* 0 when it spans several objects */
	struct lock_calls c;	/* since reset */
	uint64_t max_wait;
	uint64_t max_hold;
	double wait_per_s;	/* last interval */
	double acq_per_s;
	double caused_per_s;
	double elapsed_s;	/* since the origin or reset */
	uint32_t first;		/* its members: ids[first .. first + n) */
	uint32_t n;
	uint32_t row_id;
	uint32_t n_objects;
	uint32_t n_sites;
	bool objects_folded;	/* see view_row */
	bool procs_mixed;	/* see view_row */
	uint16_t proc;		/* see view_row */
	uint8_t type;
	uint8_t role;		/* of row_id */
	uint8_t role_from;
};

/* The words of an order key, in the order they are compared. */
enum order_word {
	WORD_IDLE,		/* 1 for an idle wait sorted after the locks */
	WORD_PRIMARY,		/* the sort column's value, or site rank */
	WORD_WAIT,		/* most total wait first */
	WORD_SITE,
	WORD_OBJECT,
	WORD_TYPE_ROW,		/* type << 32 | row id */
	ORDER_WORDS
};

/* What a line sorts by, word after word, smallest first. */
struct order {
	uint64_t key[ORDER_WORDS];
	uint32_t line;
};

/* Distinct sites, numbered in order of first sight. */
struct site_set {
	uint64_t *site;
	size_t n;
	size_t cap;
	uint32_t *slots;	/* number or EMPTY_SLOT; at least 2 * cap */
	size_t mask;
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

/* -1, 0 or 1 as a is below, equal to or above b. */
static inline int cmp_u64(uint64_t a, uint64_t b)
{
	return (a > b) - (a < b);
}

/* The row of an id when it is defined, else NULL. */
struct row *model_row(const struct model *m, uint32_t id);

/* Wait ns of tick t (an interval closed) in a row's trend ring. */
static inline uint64_t row_trend(const struct row_waits *w, uint64_t t)
{
	return t < w->upto ? w->trend[t % TREND_LEN] : 0;
}

/* The waits of a row, or NULL while it has never waited. */
static inline const struct row_waits *row_waits(const struct model *m,
						const struct row *r)
{
	return r->waits ? &m->waits[r->waits - 1] : NULL;
}

/* The definition of a stack id, or NULL while it has none. */
const struct stack_def *model_stack(const struct model *m, uint32_t id);

/* Amount per second over the last interval; 0 while its length is unknown. */
static inline double model_rate(const struct model *m, uint64_t amount)
{
	return m->interval_s > 0 ? (double)amount / m->interval_s : 0;
}

/*
 * The rows changed since the last call, each once; the list is emptied.
 * Only for one taker: what another took is not seen again.
 */
size_t model_take_touched(struct model *m, const void *taker, uint32_t **ids);

/* The table row of the line of row id alone; full: its histogram, trend. */
void view_row_single(const struct model *m, const struct model_query *q,
		     uint32_t id, bool full, struct view_row *v);

/* Lines [*from, *to) of n: the window, moved to hold the found line. */
void view_bounds(const struct view_window *w, size_t n, size_t *from,
		 size_t *to);

/* The order key of line i, whose numbers are v, under q. */
void order_key(const struct model_query *q, const struct view_row *v,
	       uint32_t i, struct order *out);

/* Sorting by site, rank the sites of n keys by label, asked once a site. */
void order_sites(const struct model_query *q, struct order *o, size_t n);

/* Put in o[lo..hi) what a full sort of o[0..n) puts there, in order. */
void order_range(struct order *o, size_t n, size_t lo, size_t hi);

/* How many of o[0..n) sort before k. */
size_t order_rank(const struct order *o, size_t n, const struct order *k);

/* -1, 0 or 1 as a sorts before, with or after b. */
static inline int order_cmp(const struct order *a, const struct order *b)
{
	for (int i = 0; i < ORDER_WORDS; i++) {
		if (a->key[i] != b->key[i])
			return a->key[i] < b->key[i] ? -1 : 1;
	}
	return 0;
}

/*
 * Note that a stack of a row on object waited in the update now arriving:
 * the first such stack names the object (model_names.c).
 */
void first_stack_note(struct model *m, uint64_t object, uint32_t stack);
void first_stacks_free(struct first_stacks *f);

/* Index a defined row by (site, type, object), where blame finds holders. */
void blame_row_defined(struct model *m, uint32_t id);

/*
 * Add waits w of row behind holders at (site, type), site 0 for unknown;
 * the holder's row on the same object, or NO_ROW when it has none.
 */
uint32_t blame_add(struct model *m, uint32_t row, uint64_t site,
		   uint32_t type, const struct wait_counts *w);

/* Zero every blame count (a reset). */
void blame_reset(struct model *m);
void blame_free(struct blame_store *b);

/* Zero every holder stack's releases (a reset). */
void holders_reset(struct model *m);
void holders_free(struct holder_store *h);

/* Note that thread tid waited (model_take_new_tids() gives it once). */
void tid_note(struct model *m, uint32_t tid);
void tid_set_free(struct tid_set *t);

/* What tells the lines of a table apart for a drill: a view row's key. */
struct line_key {
	uint64_t site;
	uint64_t object;
	uint8_t type;
};

/* model_drill() of the lines with these keys, in order. */
void drill_keys(const struct model *m, const struct model_query *q,
		const struct line_key *keys, size_t n, struct drill *out);

/* The number of a site in s, a new one when it is new. */
uint32_t site_set_add(struct site_set *s, uint64_t site);
void site_set_free(struct site_set *s);

/* Whether the query attributes wrapper rows to their callers. */
bool attrib_skipping(const struct model_query *q);

/* Prepare the attribution of stacks for a query (attrib_done releases it). */
void attrib_init(struct attrib *a, const struct model *m,
		 const struct model_query *q);
void attrib_done(struct attrib *a);

/* Where row r shows under q: in its wrapper while wrappers are shown. */
uint64_t row_site(const struct model_query *q, const struct row *r);

/* A site as q joins processes (model_query.code), or itself. */
uint64_t code_site(const struct model_query *q, uint64_t site);

/* Whether a row is a wrapper's, to be split by its stacks. */
bool attrib_row(const struct attrib *a, const struct row *r);

/* The site a stack entry of row r is attributed to. */
uint64_t attrib_site(struct attrib *a, const struct row *r, bool wrapper,
		     const struct stack_entry *e);

#endif
