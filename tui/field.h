/*
 * The numbers of a table row, one table of them: each field's key on the
 * command line (-o), its name in the JSON snapshot, its value, how a
 * coalesced line gets it from its rows, and its column. Sorting, the JSON
 * writer and the column table (column.h) all read this one; the model
 * sorts by it without the formatter.
 */
#ifndef QSPTOP_FIELD_H
#define QSPTOP_FIELD_H

#include <stdbool.h>
#include <stddef.h>

#include "model.h"

/* How a coalesced line's value comes from its rows' values. */
enum field_merge {
	MERGE_SUM,		/* the sum of its rows' */
	MERGE_MAX,		/* the largest of its rows' */
	MERGE_DERIVED,		/* computed again from the line's sums */
	MERGE_NONE,		/* not a number (the call site) */
};

/* What a field's number is, which says how its column reads it. */
enum field_unit {
	UNIT_COUNT,		/* a count: 9999, 12.3K */
	UNIT_NS,		/* a duration in ns: 1.23ms */
	UNIT_SITE,		/* the call site, a name (left, takes the room) */
	UNIT_WAIT_SHARE,	/* shown as the share of calls that waited */
	UNIT_PID,		/* a process id; 0: several or unknown */
	UNIT_HELD_SHARE,	/* a share of time held, 0 to 1, as a percentage;
				   "-" while no hold was timed */
};

/*
 * The field's column on the screen and in the batch table (column.c
 * draws it); no title: no column.
 */
struct field_column {
	const char *title;
	int width;		/* for the call site: the least it may get */
	int priority;		/* narrow screens drop low priorities first */
	int order;		/* place among the columns, left to right */
	enum field_unit unit;
	const char *help;	/* its line in the help screen */
	bool several;		/* shown only while several processes are */
	bool holder;		/* the holders' numbers: kept in the culprit view */
};

struct field {
	const char *key;	/* -o KEY and JSON "sort"; NULL: not a sort key */
	bool low_first;		/* sorted low to high at first (site: A to Z) */
	const char *json;	/* the JSON row field; NULL: none */
	/* The number it shows and sorts by; NULL: sorts by the site label. */
	double (*value)(const struct view_row *r);
	enum field_merge merge;
	struct field_column column;
};

/* How many fields there are: the table's, then any added. */
size_t field_count(void);

/* Field i, in the JSON schema's order (those added last). */
const struct field *field_at(size_t i);

/*
 * Add n fields after the table's, for the life of the program (a test's
 * field, to follow it through sorting, JSON and columns); f stays the
 * caller's. A second call replaces the first one's. Call it before the
 * first use of the column table.
 */
void field_extend(const struct field *f, size_t n);

/* The field sorted by KEY ("wait", "site", ...), or NULL. */
const struct field *field_by_key(const char *key);

/* The field of JSON row field name, or NULL. */
const struct field *field_by_json(const char *name);

/* Wait per wait, timed out or not; 0 without waits: AVG's value. */
double row_avg_wait(const struct view_row *r);

/* The process of a line (procs.h): its PID, 0 if several or unknown. */
double row_pid(const struct view_row *r);

/* The average hold of the timed holds; 0 while none was timed. */
double row_avg_hold(const struct view_row *r);

/* The longest wait, never below the average: the MAX column's value. */
double row_max_wait(const struct view_row *r);

#endif
