/*
 * Colour themes: named semantic slots read from theme files. No curses
 * here; the terminal layer maps styles to curses attributes.
 *
 * A theme file has one "SLOT = STYLE" per line; '#' starts a comment.
 * STYLE is "FG [on BG] [ATTR...]": colours are default, black, red, green,
 * yellow, blue, magenta, cyan, white, bright-<colour> or colorN (0-255);
 * attributes are bold, dim, underline, reverse. Slots a file leaves out
 * keep the default theme's style.
 */
#ifndef QSPTOP_THEME_H
#define QSPTOP_THEME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum theme_slot {
	SLOT_NORMAL,		/* text with no other role */
	SLOT_HEADER,		/* the header lines */
	SLOT_COLUMN,		/* column titles */
	SLOT_SORTED,		/* the title of the sort column */
	SLOT_SELECTION,		/* the selected row */
	SLOT_HOT,		/* rows with a large share of the wait */
	SLOT_WARM,
	SLOT_COOL,
	SLOT_SPARKLINE,
	SLOT_STATUS,		/* the status line */
	SLOT_ERROR,		/* error messages */
	SLOT_ALARM,		/* DEADLOCK and its threads */
	SLOT_COUNT
};

#define COLOR_DEFAULT (-1)

enum theme_attr {
	ATTR_BOLD = 1,
	ATTR_DIM = 2,
	ATTR_UNDERLINE = 4,
	ATTR_REVERSE = 8,
};

struct theme_style {
	int16_t fg;		/* COLOR_DEFAULT or 0-255 */
	int16_t bg;
	uint8_t attrs;		/* enum theme_attr bits */
};

struct theme {
	char name[64];
	struct theme_style slot[SLOT_COUNT];
};

/* Called for each problem in a theme file: "FILE:LINE: message". */
typedef void (*theme_warn_fn)(void *ctx, const char *message);

/* The built-in default theme (for dark terminals). */
void theme_defaults(struct theme *t);

/* Colours off, attributes kept: for NO_COLOR and colourless terminals. */
void theme_monochrome(struct theme *t);

/*
 * Apply the text of a theme file over t. Unknown slots, bad colours and
 * malformed lines are reported through warn with source:line and skipped.
 * Returns the number of problems.
 */
int theme_parse(struct theme *t, const char *text, const char *source,
		theme_warn_fn warn, void *ctx);

/*
 * Load theme name (or a path containing '/'): defaults, then the first
 * NAME.theme found in $XDG_CONFIG_HOME/qsptop/themes (else
 * ~/.config/qsptop/themes), <exe>/../share/qsptop/themes, the installed
 * PREFIX/share/qsptop/themes and the source tree's themes/. Returns -1 with
 * err when no such theme exists ("default" falls back to the built-in one).
 */
int theme_load(struct theme *t, const char *name, theme_warn_fn warn,
	       void *ctx, char *err, size_t errlen);

/* Names of the themes found, sorted and without duplicates; returns count. */
size_t theme_list(char (*names)[64], size_t max);

/* Slot name as written in theme files ("header", ...). */
const char *theme_slot_name(enum theme_slot slot);

#endif
