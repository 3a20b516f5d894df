/* The threads view as text. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../common/clock.h"
#include "format.h"
#include "site.h"
#include "stuck_text.h"

/* Append to buf (of size) what fmt makes. */
static void append(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t size, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	if (len + 1 >= size)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, size - len, fmt, ap);
	va_end(ap);
}

void stuck_text_summary(char *buf, size_t size, const struct stuck *s)
{
	const struct stuck_thread *t;
	const struct stuck_deadlock *d;
	size_t n = stuck_threads(s, &t), nd = stuck_deadlocks(s, &d);
	size_t count[4] = { 0 };

	for (size_t i = 0; i < n; i++)
		count[t[i].state]++;
	buf[0] = '\0';
	for (size_t k = 0; k < nd; k++) {
		append(buf, size, "DEADLOCK");
		for (size_t m = 0; m < d[k].n; m++)
			append(buf, size, " %d %s", (int)t[d[k].member[m]].tid,
			       format_utf8() ? "→" : "->");
		append(buf, size, " %d %s ", (int)t[d[k].member[0]].tid,
		       format_utf8() ? "│" : "|");
	}
	append(buf, size, "%zu threads: %zu running, %zu blocked on locks, "
	       "%zu in other calls", n, count[STUCK_RUNNING] + count[STUCK_OTHER],
	       count[STUCK_LOCK], count[STUCK_SYSCALL]);
}

void stuck_text_object(char *buf, size_t size, struct symbols *symbols,
		       uint64_t object)
{
	const char *name;
	uint64_t offset;

	if (symbols_data(symbols, object, &name, &offset) && offset == 0)
		snprintf(buf, size, "%s", name);
	else if (symbols_data(symbols, object, &name, &offset))
		snprintf(buf, size, "%s+%llu", name, (unsigned long long)offset);
	else
		snprintf(buf, size, "0x%llx", (unsigned long long)object);
}

/* "held by 1236 (blocked)", "held by 1236 in read() on pipe:[9]", ... */
static void holder_text(char *buf, size_t size, const struct stuck *s,
			const struct stuck_thread *t)
{
	const struct stuck_thread *h = stuck_find(s, t->holder);

	if (t->holder_exited)
		append(buf, size, ", held by exited thread %d", (int)t->holder_ns);
	else if (h == NULL && t->readers_hold)
		append(buf, size, ", held by readers");
	else if (h == NULL)
		append(buf, size, ", holder unknown");
	else if (h->state == STUCK_SYSCALL)
		append(buf, size, ", held by %d in %s", (int)h->tid, h->call);
	else
		append(buf, size, ", held by %d (%s)", (int)h->tid,
		       h->state == STUCK_LOCK ? "blocked" : "running");
}

/* The state part of a blocked thread's line. */
static void lock_text(char *buf, size_t size, const struct stuck *s,
		      struct symbols *symbols, const struct stuck_thread *t)
{
	char when[32], object[128], site[256] = "??";

	format_duration(when, sizeof(when),
			(double)(clock_now_ms() - t->since_ms) * 1e6);
	stuck_text_object(object, sizeof(object), symbols, t->object);
	if (t->depth)
		site_both(site, sizeof(site), symbols, t->stack[0]);
	append(buf, size, "blocked %s on %s %s at %s", when, t->type, object,
	       site);
	holder_text(buf, size, s, t);
	if (t->deadlock >= 0)
		append(buf, size, " DEADLOCK");
}

void stuck_text_line(char *buf, size_t size, const struct stuck *s,
		     struct symbols *symbols, const struct stuck_thread *t)
{
	char tid[32];

	if (t->ns_tid != t->tid)
		snprintf(tid, sizeof(tid), "%d/%d", (int)t->tid, (int)t->ns_tid);
	else
		snprintf(tid, sizeof(tid), "%d", (int)t->tid);
	snprintf(buf, size, "%-8s %-16s ", tid, t->name);
	switch (t->state) {
	case STUCK_LOCK:
		lock_text(buf, size, s, symbols, t);
		break;
	case STUCK_SYSCALL:
		append(buf, size, "in %s", t->call);
		break;
	case STUCK_RUNNING:
		append(buf, size, "running");
		break;
	case STUCK_OTHER:
		append(buf, size, "state %c", t->proc_state ? t->proc_state : '?');
		break;
	}
}

/* Each member of each deadlock: its stack, a frame a line. */
static void print_stacks(FILE *out, const struct stuck *s,
			 struct symbols *symbols)
{
	const struct stuck_thread *t;
	const struct stuck_deadlock *d;
	size_t nd = stuck_deadlocks(s, &d);
	char frame[512];

	stuck_threads(s, &t);
	for (size_t k = 0; k < nd; k++)
		for (size_t m = 0; m < d[k].n; m++) {
			const struct stuck_thread *x = &t[d[k].member[m]];

			fprintf(out, "deadlock %zu, thread %d:\n", k + 1, (int)x->tid);
			for (unsigned f = 0; f < x->depth; f++) {
				site_both(frame, sizeof(frame), symbols, x->stack[f]);
				fprintf(out, "    %s\n", frame);
			}
		}
}

void stuck_text_print(FILE *out, const struct stuck *s,
		      struct symbols *symbols, const char *why)
{
	const struct stuck_thread *t;
	size_t n = stuck_threads(s, &t);
	char line[1024];

	if (why)
		fprintf(out, "%s\n", why);
	stuck_text_summary(line, sizeof(line), s);
	fprintf(out, "pid %d %s %s\n%s\n", (int)stuck_pid(s),
		format_utf8() ? "│" : "|", line, STUCK_TEXT_HEAD);
	for (size_t i = 0; i < n; i++) {
		stuck_text_line(line, sizeof(line), s, symbols, &t[i]);
		fprintf(out, "%s\n", line);
	}
	print_stacks(out, s, symbols);
	fprintf(out, "\n");
	fflush(out);
}
