/* Drawing the threads view: who waits for whom, and deadlocks. */
#include <string.h>

#include "format.h"
#include "model.h"
#include "site.h"
#include "stuck_text.h"
#include "view_threads.h"

/* Where a wrapped line goes on: under the thread's state. */
#define STATE_COLUMN 26

void view_threads_summary(struct screen *s, const struct ui *ui, int y)
{
	const struct stuck *st = ui->app->stuck;
	const struct stuck_deadlock *d;
	char text[1024];
	const char *alarm;

	screen_fill(s, 0, y, s->w, SLOT_HEADER, L' ');
	if (st == NULL) {
		screen_puts(s, 0, y, SLOT_HEADER, "threads: not looked at yet", -1);
		return;
	}
	stuck_text_summary(text, sizeof(text), st);
	screen_puts(s, 0, y, SLOT_HEADER, text, s->w - 1);
	/* The deadlocks come first, up to the last separator. */
	alarm = stuck_deadlocks(st, &d) ? strrchr(text, '|') : NULL;
	if (format_utf8() && stuck_deadlocks(st, &d))
		alarm = strstr(text, " threads: ");
	if (alarm) {
		char head[1024];

		snprintf(head, sizeof(head), "%.*s", (int)(alarm - text), text);
		screen_paint(s, 0, y, screen_width(head), SLOT_ALARM);
	}
}

/*
 * Text from (x, y) in lines of at most width columns, broken at spaces,
 * the lines after the first from indent; the lines it took.
 */
static int draw_broken(struct screen *s, int y, int indent, enum theme_slot slot,
		       const char *text)
{
	int lines = 0, x = 0, width = s->w - 1;

	while (*text && width - x > 0) {
		int len = (int)strlen(text), cut = len;

		if (len > width - x) {
			for (cut = width - x; cut > 0 && text[cut] != ' '; cut--)
				;
			if (cut == 0)
				cut = width - x;
		}
		screen_puts(s, x, y + lines++, slot, text, cut);
		text += cut;
		while (*text == ' ')
			text++;
		x = indent < width / 2 ? indent : 2;
	}
	return lines ? lines : 1;
}

/* A thread's colour: alarm in a deadlock, warm blocked on a lock. */
static enum theme_slot thread_slot(const struct stuck_thread *t)
{
	if (t->deadlock >= 0)
		return SLOT_ALARM;
	return t->state == STUCK_LOCK ? SLOT_WARM : SLOT_NORMAL;
}

/* Each deadlock member's stack, below the threads; the next line. */
static int draw_stacks(struct screen *s, struct ui *ui, int y)
{
	const struct stuck *st = ui->app->stuck;
	const struct stuck_thread *t;
	const struct stuck_deadlock *d;
	size_t nd = stuck_deadlocks(st, &d);
	char frame[512];

	stuck_threads(st, &t);
	for (size_t k = 0; k < nd; k++)
		for (size_t m = 0; m < d[k].n; m++) {
			const struct stuck_thread *x = &t[d[k].member[m]];

			screen_printf(s, 0, ++y, SLOT_ALARM, "DEADLOCK %zu, thread %d:",
				      k + 1, (int)x->tid);
			for (unsigned f = 0; f < x->depth; f++) {
				site_both(frame, sizeof(frame), ui->app->symbols,
					  x->stack[f]);
				screen_puts(s, 4, ++y, SLOT_NORMAL, frame, -1);
			}
			y++;
		}
	return y;
}

/* The lock-order warnings, each on its own lines; the next line. */
static int draw_lock_orders(struct screen *s, struct ui *ui, int y)
{
	const struct lock_order *o;
	size_t n = model_lock_orders(ui->app->model, &o);
	char line[2048];

	if (n == 0)
		return y;
	screen_printf(s, 0, ++y, SLOT_WARM,
		      "LOCK ORDER: %zu pair%s taken in both orders", n,
		      n == 1 ? "" : "s");
	y++;
	for (size_t i = 0; i < n; i++) {
		lockorder_text(line, sizeof(line), ui->app->symbols, &o[i]);
		y += draw_broken(s, y, 6, SLOT_NORMAL, line);
	}
	return y;
}

int view_threads_page(struct screen *s, struct ui *ui)
{
	const struct stuck *st = ui->app->stuck;
	const struct stuck_thread *t;
	char line[1024];
	size_t n;
	int y = 0;

	if (st == NULL)
		return draw_lock_orders(s, ui, -1);
	if (ui->app->outside[0])
		y += draw_broken(s, y, 2, SLOT_NORMAL, ui->app->outside) + 1;
	n = stuck_threads(st, &t);
	for (size_t i = 0; i < n; i++) {
		stuck_text_line(line, sizeof(line), st, ui->app->symbols, &t[i]);
		y += draw_broken(s, y, STATE_COLUMN, thread_slot(&t[i]), line);
	}
	return draw_lock_orders(s, ui, draw_stacks(s, ui, y));
}
