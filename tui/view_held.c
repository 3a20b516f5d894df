/* Drawing "while held": what holders did while others waited. */
#include <stdio.h>

#include "format.h"
#include "inject_thread.h"
#include "site.h"
#include "stuck_text.h"
#include "view_held.h"

/* One line: a label, its share of whole, its time, and a note. */
static int held_line(struct screen *s, int y, const char *label,
		     uint64_t ns, uint64_t whole, const char *note)
{
	char time[32];

	if (ns == 0)
		return y;
	format_duration(time, sizeof(time), (double)ns);
	screen_printf(s, 3, y, SLOT_NORMAL, "%-28s %5.1f%% %9s  %s", label,
		      whole ? 100.0 * (double)ns / (double)whole : 0, time, note);
	return y + 1;
}

/* "mutex lock_b at site": the lock the holders waited for meanwhile. */
static void held_lock(char *buf, size_t size, struct ui *ui, uint32_t id)
{
	enum lock_type type;
	uint64_t site, object;
	char name[128] = "", where[256];

	buf[0] = '\0';
	if (id == 0 || !model_row_key(ui->app->model, id - 1, &type, &site,
				      &object))
		return;
	if (object)
		stuck_text_object(name, sizeof(name), ui->app->symbols, object);
	site_fit(where, sizeof(where), ui->app->symbols, site, true, 48);
	snprintf(buf, size, "%s %s at %s", lock_type_name(type), name, where);
}

int view_held_detail(struct screen *s, struct ui *ui,
		     const struct view_row *r, int y)
{
	struct held_view h;
	uint64_t whole;
	char label[64], lock[512];

	if (!model_while_held(ui->app->model, r, &h))
		return y;
	whole = r->c.calls.caused_wait_ns;
	if (whole == 0) {
		whole = h.running_ns + h.runnable_ns + h.lock_wait_ns + h.exited_ns;
		for (size_t i = 0; i < h.nsys; i++)
			whole += h.sys[i].ns;
	}
	screen_puts(s, 1, y++, SLOT_COLUMN,
		    "while held (what the holders did, share of the wait caused)", -1);
	y = held_line(s, y, "running on a CPU", h.running_ns, whole, "");
	y = held_line(s, y, "runnable, waiting for a CPU", h.runnable_ns, whole, "");
	for (size_t i = 0; i < h.nsys; i++) {
		if (h.sys[i].nr == PROTO_HELD_OTHER_CALL)
			snprintf(label, sizeof(label), "in other system calls");
		else
			snprintf(label, sizeof(label), "in %s()",
				 inject_syscall_name(h.sys[i].nr));
		y = held_line(s, y, label, h.sys[i].ns, whole, "");
	}
	held_lock(lock, sizeof(lock), ui, h.lock_row);
	y = held_line(s, y, "waiting for another lock", h.lock_wait_ns, whole, lock);
	y = held_line(s, y, "exited", h.exited_ns, whole, "");
	return y + 1;
}
