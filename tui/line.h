/*
 * One line of items that give way whole: the header lines and the status
 * line are built of items with priorities; when the line is too narrow
 * the least important go, and an item is either shown entirely or not at
 * all. No curses: the line is laid out as text.
 */
#ifndef QSPTOP_LINE_H
#define QSPTOP_LINE_H

#include <stdbool.h>
#include <stddef.h>

/* An item may shrink to no fewer columns than this (with its ellipsis). */
#define LINE_SHRINK_MIN 8

struct line_item {
	const char *text;	/* UTF-8; "" or NULL: no item */
	int priority;		/* when room runs short, the lowest go first */
	bool right;		/* at the right end of the line, not in the flow */
	bool shrink;		/* may lose its end ("…") rather than go whole */
	int x;			/* out: its first column; -1 when left out */
	int width;		/* out: the columns it takes */
};

/*
 * Lay n items out on a line of width columns and write the line to buf:
 * the left items in their order with sep between them, the right ones at
 * the right end, sep apart from the rest. While they do not fit, the item
 * of lowest priority goes (of equal ones, the last); a shrinking item is
 * cut instead while it keeps LINE_SHRINK_MIN columns. Returns the columns
 * of the line written.
 */
int line_layout(struct line_item *items, size_t n, int width, const char *sep,
		char *buf, size_t size);

#endif
