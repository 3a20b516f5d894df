/*
 * How values and rows read: durations, counts, call sites, and the one
 * column table that drives headers, cells and sort keys for every output.
 */
#ifndef QSPTOP_FORMAT_H
#define QSPTOP_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "field.h"
#include "line.h"
#include "model.h"
#include "symbols.h"

/* How the CALL SITE column reads. */
enum site_style { SITE_FUNCTION, SITE_LINE, SITE_BOTH };

/* What a cell needs besides its row. */
struct format_ctx {
	struct symbols *symbols;
	enum site_style site_style;
	int width;		/* the cell's columns; 0: no limit */
};

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
		     const struct format_ctx *f, char *buf, size_t size);
	const char *help;	/* what the column means, for the help screen */
};

/* At most this many columns, the table's and those added. */
#define COLUMNS_MAX 16

/* How many columns there are: the table's, then any added. */
size_t column_count(void);

/* Column i, in display order (those added last). */
const struct column *column_at(size_t i);

/*
 * Add n columns after the table's, for the life of the program (a test's
 * field shown as a column); c stays the caller's. A second call replaces
 * the first one's.
 */
void column_extend(const struct column *c, size_t n);

/* The first column showing field f, or NULL. */
const struct column *column_of(const struct field *f);

/* The sort keys in column order, joined by sep: "site | wait | ...". */
void column_keys(char *buf, size_t size, const char *sep);

/* A cell of a field's value: as a duration ("1.23ms"), as a count. */
void column_cell_duration(const struct column *c, const struct view_row *r,
			  const struct format_ctx *f, char *buf, size_t size);
void column_cell_count(const struct column *c, const struct view_row *r,
		       const struct format_ctx *f, char *buf, size_t size);

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
size_t format_layout(int width, bool tui, struct column_place *out);

/* Use UTF-8 glyphs (ellipsis, sparkline blocks) or ASCII stand-ins. */
void format_set_utf8(bool on);
bool format_utf8(void);

/* A sparkline of values scaled to their own maximum, n glyphs. */
void format_sparkline(char *buf, size_t size, const uint64_t *values, int n);

/* "950ns", "12.3us", "4.56ms", "1.23s". */
void format_duration(char *buf, size_t size, double ns);

/* "999", "12.3K", "1.23M", "4.56G". */
void format_count(char *buf, size_t size, double n);

/*
 * The table's forms of a call site. One whose lock call was inlined reads
 * "INNER inlined in OUTER": INNER is the inlined function that makes the
 * call, OUTER the function holding the address, which keeps its +0xoff;
 * the functions in between, and OUTER's line in the both form, are left
 * to format_site_chain() to keep the column short.
 */

/*
 * "function+0xoff", "module+0xoff" or "0xaddr";
 * "hold inlined in caller+0x24" when inlined.
 */
void format_site(char *buf, size_t size, struct symbols *s, uint64_t site);

/*
 * "file:line", falling back to format_site();
 * "blame.c:38 inlined in blame.c:56" when inlined.
 */
void format_site_line(char *buf, size_t size, struct symbols *s, uint64_t site);

/*
 * "function+0xoff (file:line)", falling back to format_site();
 * "hold (blame.c:38) inlined in caller+0x24" when inlined.
 */
void format_site_both(char *buf, size_t size, struct symbols *s, uint64_t site);

/*
 * format_site_both() (line) or format_site() in width columns: what
 * follows the function's name (the inlined function's, when the call was
 * inlined) gives way first, "+0xoff" then "(file:line)", then the name
 * shortens from the inside (cxxname.h), and is cut only when even its
 * bare form is too wide. A width of 0 or less means no limit.
 */
void format_site_fit(char *buf, size_t size, struct symbols *s, uint64_t site,
		     bool line, int width);

/*
 * The whole chain, "??" for what is unknown: "hold (blame.c:38) inlined
 * in caller+0x24 (blame.c:56)", or "caller+0x24 (blame.c:56)".
 */
void format_site_chain(char *buf, size_t size, struct symbols *s,
		       uint64_t site);

/*
 * Everything a filter may match: function, file:line, each function the
 * call was inlined in with its file:line, and the module.
 */
const char *format_site_label(void *symbols, uint64_t site);

/* The texts of the header's totals line, kept while its items are shown. */
struct totals_text {
	char lock[48], cond[48], acq[48], filter[160], types[160];
	char threads[64], sort[48], coalesce[48], losses[96];
};

#define TOTALS_ITEMS 9

/*
 * The totals line's items, in the order shown, into items[TOTALS_ITEMS]:
 * lock and cond waits per second, acquisitions, the filter (none when
 * filter is NULL or ""), the types shown, threads, sort (an arrow marks
 * its direction), coalescing and losses, which come first when there are
 * some. Returns the count.
 */
size_t format_totals(struct totals_text *t, struct line_item *items,
		     const struct model_stats *st, const struct model_query *q,
		     const char *filter);

/* Fit s into width columns, cutting from the left ("…tail") when longer. */
void format_fit_left(char *buf, size_t size, const char *s, int width);

/* Fit s into width columns, cutting at the right ("head…") when longer. */
void format_fit_right(char *buf, size_t size, const char *s, int width);

#endif
