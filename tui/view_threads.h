/* The threads view on the interactive screen (stuck.h's data, no curses). */
#ifndef QSPTOP_VIEW_THREADS_H
#define QSPTOP_VIEW_THREADS_H

#include "screen.h"
#include "ui.h"

/* Header line y: how many threads do what, DEADLOCK in the alarm colour. */
void view_threads_summary(struct screen *s, const struct ui *ui, int y);

/*
 * The page of threads, a line each (wrapped, indented), deadlocked ones
 * in the alarm colour, then each deadlock member's stack; its height.
 */
int view_threads_page(struct screen *s, struct ui *ui);

#endif
