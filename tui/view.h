/* Drawing the interactive screen into a screen buffer (no curses). */
#ifndef QSPTOP_VIEW_H
#define QSPTOP_VIEW_H

#include "screen.h"
#include "ui.h"

/* Below this size only "terminal too small" is shown. */
#define VIEW_MIN_W 40
#define VIEW_MIN_H 8

/* Draw the whole screen for the state of ui (scrolls it as needed). */
void view_draw(struct screen *s, struct ui *ui);

#endif
