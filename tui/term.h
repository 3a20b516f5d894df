/* The terminal, through curses: the only module that touches it. */
#ifndef QSPTOP_TERM_H
#define QSPTOP_TERM_H

#include <stdbool.h>

#include "screen.h"
#include "theme.h"
#include "ui.h"

/* Take over the terminal; fatal() gives it back. */
void term_begin(void);

/* Give the terminal back (safe to call twice). */
void term_end(void);

/* Whether the terminal shows colours. */
bool term_has_colors(void);

/* Use a theme's styles for the screen's slots. */
void term_apply_theme(const struct theme *t);

/* The terminal's size in cells. */
void term_size(int *w, int *h);

/* Show a screen buffer. */
void term_show(const struct screen *s);

/* The next key as a ui key (enum ui_key or a character), KEY_NONE if none. */
int term_key(void);

#endif
