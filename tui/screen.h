/*
 * An off-screen grid of cells: everything the TUI shows is drawn here
 * first, so screens can be tested without a terminal. Only term.c copies
 * it to curses.
 */
#ifndef QSPTOP_SCREEN_H
#define QSPTOP_SCREEN_H

#include <stddef.h>
#include <wchar.h>

#include "theme.h"

struct cell {
	wchar_t ch;
	unsigned char slot;	/* enum theme_slot */
};

struct screen {
	int w;
	int h;
	struct cell *cells;
};

/* A blank screen of w x h cells. */
struct screen *screen_new(int w, int h);
void screen_free(struct screen *s);

/* Change the size, blanking everything. */
void screen_resize(struct screen *s, int w, int h);

/* Blank every cell in slot. */
void screen_clear(struct screen *s, enum theme_slot slot);

/*
 * Write UTF-8 text at (x, y), at most max columns (-1: to the edge),
 * clipped to the screen. Characters wider than one column are shown as
 * '?'. Returns the columns written.
 */
int screen_puts(struct screen *s, int x, int y, enum theme_slot slot,
		const char *text, int max);

/* Columns text takes when written with screen_puts(). */
int screen_width(const char *text);

/* Formatted screen_puts(). */
int screen_printf(struct screen *s, int x, int y, enum theme_slot slot,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Fill n cells from (x, y) with ch in slot. */
void screen_fill(struct screen *s, int x, int y, int n, enum theme_slot slot,
		 wchar_t ch);

/* Line y as UTF-8, trailing blanks removed (for tests). */
void screen_line(const struct screen *s, int y, char *out, size_t size);

#endif
