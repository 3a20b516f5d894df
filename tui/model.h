/*
 * The data model of the front end: rows accumulated from the collector's
 * deltas, a reset baseline (QSP semantics: reset never touches the target),
 * coalescing, sorting and filtering. No curses, no I/O.
 */
#ifndef QSPTOP_MODEL_H
#define QSPTOP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/proto.h"
#include "lockorder.h"
#include "role.h"

#define TREND_LEN 20

enum coalesce { COALESCE_NONE, COALESCE_SITE, COALESCE_OBJECT, COALESCE_COUNT };

/* One line of the table: a row, or a coalesced group of rows. */
struct view_row {
	enum lock_type type;
	enum role role;		/* of the heaviest member row */
	enum role_from role_from;
	uint64_t site;		/* 0 when the group spans several sites */
	uint64_t object;	/* 0 when the group spans several objects */
	uint32_t n_objects;	/* at least this many when objects_folded */
	uint32_t n_sites;
	bool objects_folded;	/* has a row of several objects, which the
				   collector folded for want of memory */
	bool procs_mixed;	/* its sites are of several processes
				   (procs.h): a lock they share */
	uint16_t proc;		/* else the index of their process */
	uint32_t row_id;	/* the heaviest member row */
	struct lock_counts c;	/* since reset */
	uint64_t max_wait_ns;	/* since reset */
	uint64_t max_hold_ns;	/* the longest timed hold, since reset */
	double wait_per_s;	/* last interval */
	double acq_per_s;	/* last interval */
	double caused_per_s;	/* others' waits behind its holds, last interval */
	double elapsed_s;	/* the span its counts cover */
	uint64_t trend[TREND_LEN]; /* wait ns of past intervals, oldest first */
};

/* Kinds of unseen waits the header names, at most (tui/unseen.h). */
#define UNSEEN_KINDS 8

/* Threads seen in a kind of wait that no hook times. */
struct unseen_wait {
	char kind[48];		/* "pthread_barrier_wait", "raw futex" */
	uint32_t threads;	/* seen in it so far, still alive */
	bool idle;		/* waiting for work or a thread's end */
};

/* Header totals. */
struct model_stats {
	uint64_t ticks;
	uint32_t threads_seen;
	uint32_t threads_live;
	uint64_t dropped;	/* events the collector could not record */
	uint64_t folded;	/* events it kept per site, not per lock */
	uint64_t memory_used;	/* the collector's bytes in the target */
	uint64_t memory_cap;
	uint64_t unknown_rows;	/* deltas for rows never defined */
	struct unseen_wait unseen[UNSEEN_KINDS]; /* locks first, most threads first */
	size_t n_unseen;
	double interval_s;	/* length of the last interval */
	double wait_per_s;	/* all rows, last interval */
	double acq_per_s;
	/*
	 * wait_per_s and total.calls.wait_ns split by role (role.h): the
	 * waits of lock rows and those of idle rows ("cond" for the JSON
	 * names kept), threads waiting for work, not for a lock.
	 */
	double lock_wait_per_s;
	double cond_wait_per_s;
	uint64_t lock_wait_ns;	/* since reset */
	uint64_t cond_wait_ns;
	struct lock_counts total; /* all rows, since reset */
	size_t wrappers_found;	/* lock wrappers found from evidence (app.c) */
};

/*
 * Returns the label used to sort and filter by call site. A view asks once
 * per distinct site: the label must depend on the site alone.
 */
typedef const char *(*site_label_fn)(void *ctx, uint64_t site);

/* Whether a return address lies in a lock wrapper function. */
typedef bool (*is_wrapper_fn)(void *ctx, uint64_t address);

/*
 * The names of row id, seen at site on object, that the site's label does
 * not hold, for the filter: its nearest named caller, its lock's name;
 * NULL when none.
 */
typedef const char *(*row_names_fn)(void *ctx, uint64_t site, uint64_t object,
				    uint32_t id);

/* A field of the table's rows (field.h): what it sorts by. */
struct field;

struct model_query {
	enum coalesce coalesce;
	const struct field *sort;
	bool ascending;		/* low to high (site: A to Z); else high to low */
	/*
	 * Rows of the idle role sort after the locks, whatever the order,
	 * unless mixed in.
	 */
	bool mix_idle;
	unsigned types;		/* the lock types and roles shown (lockset.h);
				   0 = all */
	const char *filter;	/* substring of the site label; NULL = all */
	site_label_fn site_label; /* needed to sort by site and filter */
	row_names_fn row_names;	/* the filter matches these too; may be NULL */
	void *ctx;
	/*
	 * With skip_wrappers, a row whose site is in a wrapper is split by its
	 * stacks: each stack's contended waits go to the first frame outside
	 * every wrapper; what has no stack (uncontended acquisitions, waits not
	 * unwound, failures, the histogram and max) stays on the wrapper's row.
	 * Without it, a row the collector already counted on the wrapper's
	 * caller (its via) shows on the wrapper's row again.
	 */
	bool skip_wrappers;
	is_wrapper_fn is_wrapper;
	/*
	 * The culprit view: sorted by the wait holds caused (holder rows
	 * first), the holders' columns kept; the header says so.
	 */
	bool culprits;
	/*
	 * With several processes (procs.h): the site naming the same code
	 * (module and offset) in the first process that ran it, so that
	 * their rows of one code and one object join in one line. NULL: each
	 * process's sites are its own.
	 */
	uint64_t (*code)(void *ctx, uint64_t site);
	/*
	 * The lines' numbers only, without the histogram and the trend their
	 * rows lend them (which batch tables show neither of).
	 */
	bool numbers_only;
};

/*
 * A part of a view: its lines [offset, offset + limit) in sorted order,
 * built without building the others. Optionally it finds the line of a
 * key (the first in sorted order when several have it) and moves the
 * part so that it holds that line.
 */
struct view_window {
	size_t offset;
	size_t limit;		/* 0: to the end */
	bool follow;		/* find the line of (type, site, object) */
	enum lock_type type;
	uint64_t site;
	uint64_t object;
	size_t total;		/* out: lines in the whole view */
	size_t found;		/* out: the followed line, or SIZE_MAX */
};

/* One stack of a row's drill-down, since reset. */
struct stack_view {
	uint32_t stack;		/* stack id; PROTO_NO_STACK: waits not unwound */
	uint8_t depth;
	const uint64_t *frames;	/* innermost first; NULL for PROTO_NO_STACK;
				   valid until the model next changes */
	struct wait_counts w;	/* the waits through this stack */
};

/* One thread's share of a row's contended waits, since reset. */
struct thread_view {
	uint32_t tid;
	uint16_t proc;		/* its process's index (procs.h) */
	struct wait_counts w;	/* its waits */
};

struct model;

/* Create an empty model. */
struct model *model_new(void);
void model_free(struct model *m);

/* Define (or redefine) a row from a ROW message. Returns -1 on a bad id. */
int model_define_row(struct model *m, const struct proto_row *r);

/* Add a delta to its row; a delta for an undefined row is counted, not applied. */
void model_apply_delta(struct model *m, const struct proto_delta *d);

/* Close an interval: what arrived since the last tick becomes the rate. */
void model_tick(struct model *m, const struct proto_tick *t);

/* The last interval was cut short (the exit flush): join it to the one before. */
void model_fold_last_interval(struct model *m);

/* When counting began (collector clock): the first interval starts there. */
void model_set_origin(struct model *m, uint64_t monotonic_ns);

/* Define a stack from a STACK message. Returns -1 on a bad id. */
int model_define_stack(struct model *m, const struct proto_stack *st);

/* One past the highest stack id defined so far. */
size_t model_stack_ids(const struct model *m);

/* The frames of stack id, frame 0 the call site; 0 while undefined. */
size_t model_stack_frames(const struct model *m, uint32_t id,
			  const uint64_t **frames);

/* Add contended waits of a row through a stack in a thread. */
void model_apply_stack_delta(struct model *m, const struct proto_stack_delta *d);

/* Add or update a lock-order warning (lockorder.h). */
void model_put_lock_order(struct model *m, const struct lock_order *w);

/* The lock-order warnings, in the order first seen. */
size_t model_lock_orders(const struct model *m, const struct lock_order **out);
/* A wait in progress, as the collector saw it at its last update. */
struct model_wait {
	uint32_t tid;
	uint32_t row;		/* the model's row id */
	uint64_t blocked_ns;	/* so far */
	uint32_t holder;	/* the lock's owner TID; 0: unknown */
};

/*
 * The waits in progress now, replacing the last update's: lines count
 * them (model_waits.c) until their real counts arrive.
 */
void model_set_waits(struct model *m, const struct model_wait *w, size_t n);

/* The waits in progress at the last update. */
size_t model_waits(const struct model *m, const struct model_wait **out);

/* What the holders at a line's sites did while others waited (since reset). */
struct held_view {
	uint64_t running_ns;	/* on a CPU */
	uint64_t runnable_ns;	/* runnable, waiting for a CPU */
	uint64_t lock_wait_ns;	/* waiting for another lock */
	uint64_t exited_ns;	/* gone */
	uint32_t lock_row;	/* the row of that other lock + 1; 0: none */
	size_t nsys;
	struct held_call {
		uint32_t nr;	/* PROTO_HELD_OTHER_CALL: the calls not named */
		uint64_t ns;
	} sys[2 * PROTO_HELD_SYSCALLS];	/* heaviest first */
};

/* Add what the holders at row did (growth since the last report). */
void model_apply_while_held(struct model *m, uint32_t row,
			    const struct proto_while_held *d, uint32_t lock_row);

/* The sum over the rows of line v; false when it has none. */
bool model_while_held(const struct model *m, const struct view_row *v,
		      struct held_view *out);

/* The type, site and object (0: several) of row id; false if undefined. */
bool model_row_key(const struct model *m, uint32_t id, enum lock_type *type,
		   uint64_t *site, uint64_t *object);

/* Take the current totals as the new zero (the TUI's `r`). */
void model_reset(struct model *m);

/*
 * Waits of row (since reset) spent behind holders at (site, type): site 0
 * when the holder was not known. They also count as the caused wait of
 * the holder's row on the same lock, when the model has it.
 */
void model_apply_blame(struct model *m, uint32_t row, uint64_t site,
		       unsigned type, const struct wait_counts *w);

/* One holder (blocked_by) or waiter (blocking) site of a line, since reset. */
struct blame_view {
	uint64_t site;		/* 0: holder unknown */
	uint32_t type;
	struct wait_counts w;
};

/*
 * Up to max sites, heaviest first: those of the holders the waits of line
 * v were spent behind, or with blocking those of the waiters its holds
 * made wait. How many.
 */
size_t model_blame(const struct model *m, const struct view_row *v,
		   bool blocking, struct blame_view *out, size_t max);

/* Define a holder stack (frames after PROTO_HOLDER_MARK); its id. */
uint32_t model_holder_define(struct model *m, const uint64_t *frames,
			     unsigned depth);

/* Add releases with waiters of row's lock through holder stack def. */
void model_apply_holder(struct model *m, uint32_t row, uint32_t def,
			uint64_t releases);

/* One holder stack of a line, since reset. */
struct holder_view {
	const uint64_t *frames;	/* the release's stack, innermost first */
	unsigned depth;
	uint64_t releases;	/* releases with waiters through it */
	uint64_t caused_ns;	/* the line's caused wait, split by releases */
};

/*
 * Up to max holder stacks of line v, most releases first, the line's
 * caused wait split over them in proportion (summing to it exactly when
 * there is any). How many.
 */
size_t model_holder_stacks(const struct model *m, const struct view_row *v,
			   struct holder_view *out, size_t max);

/* Build the sorted, filtered, coalesced table; caller frees *rows. */
size_t model_view(const struct model *m, const struct model_query *q,
		  struct view_row **rows);

/*
 * Build the lines of w (offset updated when it moved to a followed line)
 * of model_view()'s table, the same lines in the same order, and fill in
 * w->total and w->found. Returns how many were built; caller frees *rows
 * (NULL when none). The whole view is sorted by compact keys: only the
 * lines returned get their histogram and trend.
 */
size_t model_view_window(const struct model *m, const struct model_query *q,
			 struct view_window *w, struct view_row **rows);

/*
 * What a view keeps between refreshes for its one user, so that a
 * refresh costs what changed and what is shown, not every row.
 */
struct view_cache;

struct view_cache *view_cache_new(void);
void view_cache_free(struct view_cache *c);

/*
 * model_view_window(), the same lines, from what c kept of the last call:
 * only the rows changed since are keyed again. names must change whenever
 * q's site_label or is_wrapper may answer differently. A query the cache
 * cannot follow (coalesced, filtered, sorted by site, rows in wrappers)
 * builds the whole view as model_view_window() does.
 */
size_t model_view_cached(struct model *m, const struct model_query *q,
			 uint64_t names, struct view_cache *c,
			 struct view_window *w, struct view_row **rows);

/*
 * The lines of model_view()'s table, sorted, built a part at a time: a
 * big table is written out without all its rows in memory at once.
 */
struct model_table;

struct model_table *model_table_new(const struct model *m,
				    const struct model_query *q);

/* How many lines the table has. */
size_t model_table_lines(const struct model_table *t);

/* Build lines [from, from + n) into rows; returns how many there were. */
size_t model_table_rows(struct model_table *t, size_t from, size_t n,
			struct view_row *rows);

void model_table_free(struct model_table *t);

/*
 * The stacks behind a line of the table built with the same query: all
 * member rows' stacks (only those attributed to the line's site when
 * wrappers are skipped), summed over threads, heaviest wait first, the
 * PROTO_NO_STACK part included when not empty. Caller frees *out.
 */
size_t model_row_stacks(const struct model *m, const struct model_query *q,
			const struct view_row *r, struct stack_view **out);

/* The threads that waited behind a line of the table, heaviest first. */
size_t model_row_threads(const struct model *m, const struct model_query *q,
			 const struct view_row *r, struct thread_view **out);

/* What model_row_stacks() and model_row_threads() give for one line. */
struct line_drill {
	struct stack_view *stacks;
	size_t n_stacks;
	struct thread_view *threads;
	size_t n_threads;
};

/* The stacks and threads behind the lines of a table. */
struct drill {
	struct line_drill *line;	/* per line */
	struct stack_view *stacks;	/* what the lines point into */
	struct thread_view *threads;
};

/*
 * The stacks and threads behind each of n lines of a table built with q,
 * equal to model_row_stacks() and model_row_threads() line by line, found
 * in one pass over the model. Free with model_drill_free().
 */
void model_drill(const struct model *m, const struct model_query *q,
		 const struct view_row *rows, size_t n, struct drill *out);

/* model_drill() of every line of a table, in its order. */
void model_table_drill(const struct model_table *t, struct drill *out);

void model_drill_free(struct drill *d);

/*
 * The heaviest stack (most wait since reset) of line r's heaviest row
 * (row_id) among those that pass through the line's site, and in *at the
 * index of the site's frame in it: what names the caller of a site
 * without a symbol. False while that row has no such stack.
 */
bool model_line_stack(const struct model *m, const struct view_row *r,
		      struct stack_view *out, unsigned *at);

/*
 * The first stack seen waiting on object: of the first update that
 * brought a stack for it, the stack the collector recorded first (lowest
 * id). Kept across resets. False while none has come.
 */
bool model_object_stack(const struct model *m, uint64_t object,
			struct stack_view *out);

/*
 * Up to max threads seen waiting for the first time since the last call,
 * in out (to name them while they live); how many.
 */
size_t model_take_new_tids(struct model *m, uint32_t *out, size_t max);

/* Header totals since reset and for the last interval. */
void model_stats(const struct model *m, struct model_stats *s);

/* The waits no hook times seen so far, n of them (tui/unseen.h). */
void model_note_unseen(struct model *m, const struct unseen_wait *w, size_t n);

/* What decides the roles of rows (role.h), one row at a time. */
struct role_input {
	uint64_t site;
	enum role role;
	enum role_from from;
	uint32_t gen;		/* as model_set_role() last gave it */
	struct role_evidence e;	/* e.threads 0: not counted, see below */
};

/* The defined rows are among ids [0, this). */
size_t model_row_ids(const struct model *m);

/*
 * The rows defined or that waited since the last call, in *ids (valid
 * until the model next changes); how many. Their roles may need deciding
 * again: acquisitions alone change no role's evidence.
 */
size_t model_take_role_dirty(struct model *m, uint32_t **ids);

/*
 * What row id has for deciding its role, false when it is not defined.
 * With threads, e.threads counts the threads that waited (a walk of its
 * stacks); else it is 0.
 */
bool model_role_input(const struct model *m, uint32_t id, bool threads,
		      struct role_input *in);

/*
 * Give row id a role, judged at rules' generation gen; its waits move
 * between the header's two totals with it, so their sum never changes.
 */
void model_set_role(struct model *m, uint32_t id, enum role role,
		    enum role_from from, uint32_t gen);

/* Names used on the command line and in JSON ("none", "site", ...). */
const char *coalesce_name(enum coalesce c);
int coalesce_parse(const char *name);

#endif
