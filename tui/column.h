/*
 * The column table: the columns of the fields that have one (field.h),
 * drawn as their unit says, and those of no field (TYPE, OBJECT, TREND);
 * the same table drives the live screen's and the batch table's headers
 * and cells.
 */
#ifndef QSPTOP_COLUMN_H
#define QSPTOP_COLUMN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "field.h"
#include "model.h"
#include "symbols.h"
#include "wrappers.h"

/* How the CALL SITE column reads. */
enum site_style { SITE_FUNCTION, SITE_LINE, SITE_BOTH };

/* What a cell needs besides its row. */
struct column_ctx {
	struct symbols *symbols;
	const struct model *model;	/* names what has none (names.h); */
	struct wrappers *wrappers;	/* either may be NULL */
	enum site_style site_style;
	int width;		/* the cell's columns; 0: no limit */
	struct site_memo *sites;	/* NULL, or see site_memo_new() */
};

/*
 * The call sites' texts made for one table, kept for its other rows (many
 * rows share a site: one per lock taken there). Only while the symbols,
 * the style and the widths stay: one table at a time.
 */
struct site_memo *site_memo_new(void);
void site_memo_free(struct site_memo *m);

/*
 * One column of the table: the field it shows (field.h: its value, sort
 * key and JSON name), and what the table adds, its title and place, its
 * cell, and its line in the help screen.
 */
struct column {
	const struct field *field;	/* NULL: shows no field (TYPE) */
	const char *title;
	int width;		/* for CALL SITE: the least it may get */
	bool left;		/* left-aligned */
	bool flex;		/* takes the width left over */
	bool sparkline;		/* own colour; the TUI shows it, batch does not */
	int priority;		/* narrow screens drop low priorities first */
	void (*cell)(const struct column *c, const struct view_row *r,
		     const struct column_ctx *f, char *buf, size_t size);
	const char *help;	/* what the column means, for the help screen */
	bool several;		/* shown only while several processes are */
	bool holder;		/* kept in the culprit view (field.h) */
};

/*
 * The culprit view: the holders' columns (HOLD, HELD%, CAUSED/s), which
 * narrow screens otherwise drop first, are kept as long as WAIT/s.
 */
void column_set_culprits(bool culprits);

/* Whether holders are tracked: the holders' columns show only then. */
void column_set_holders(bool on);

/* Whether the table holds several processes (their PROC column shows). */
void column_set_several(bool several);
bool column_several(void);

/* At most this many columns. */
#define COLUMNS_MAX 16

/*
 * The columns: TYPE, OBJECT and TREND, and one for each field with a
 * column (field.h), each at its order's place; made at the first call.
 */
size_t column_count(void);

/* Column i, in display order. */
const struct column *column_at(size_t i);

/* The first column showing field f, or NULL. */
const struct column *column_of(const struct field *f);

/* The sort keys in column order, joined by sep: "site | wait | ...". */
void column_keys(char *buf, size_t size, const char *sep);

/* Where one column goes on a line of a given width. */
struct column_place {
	const struct column *col;
	int x;
	int width;
};

/*
 * Lay the columns out on a line of width cells: the flexible column takes
 * what is left; columns are dropped, lowest priority first, until the rest
 * fit. Returns how many were placed (in display order).
 */
size_t column_layout(int width, bool tui, struct column_place *out);

#endif
