/* The detail page's "while held" section (model.h's held_view, no curses). */
#ifndef QSPTOP_VIEW_HELD_H
#define QSPTOP_VIEW_HELD_H

#include "screen.h"
#include "ui.h"

/*
 * What the holders at line r's sites did while others waited, as shares
 * of the wait they caused, from line y; the next free line. Nothing
 * when nothing was sampled.
 */
int view_held_detail(struct screen *s, struct ui *ui,
		     const struct view_row *r, int y);

#endif
