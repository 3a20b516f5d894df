/*
 * The column table: each column's field (field.h), title, width,
 * priority and cell, and how the columns share a line.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/hash.h"
#include "column.h"
#include "format.h"
#include "names.h"
#include "procs.h"
#include "site.h"
#include "xalloc.h"

static void cell_type(const struct column *c, const struct view_row *r,
		      const struct column_ctx *f, char *buf, size_t size)
{
	(void)c;
	(void)f;
	format_copy(buf, size, lock_type_name(r->type));
}

/*
 * The lock's name when it has one (names.h): "log_mutex", or "@cache_put"
 * for the first function seen locking it; else its address. A name too
 * long is cut at its end.
 */
static void cell_object(const struct column *c, const struct view_row *r,
			const struct column_ctx *f, char *buf, size_t size)
{
	char name[256], text[260];

	(void)c;
	if (r->n_objects > 1)
		snprintf(buf, size, "[%u objs]", r->n_objects);
	else if (r->object == 0)
		snprintf(buf, size, "[many]");
	else if (f->symbols == NULL)
		format_hex(buf, size, procs_addr(r->object));
	else
		switch (names_object(f->symbols, f->wrappers, f->model,
				     r->object, name, sizeof(name))) {
		case NAME_SYMBOL:
			format_fit_right(buf, size, name, f->width);
			break;
		case NAME_LOCKER:
			snprintf(text, sizeof(text), "@%s", name);
			format_fit_right(buf, size, text, f->width);
			break;
		default:
			format_hex(buf, size, procs_addr(r->object));
		}
}

static void cell_pid(const struct column *c, const struct view_row *r,
		     const struct column_ctx *f, char *buf, size_t size)
{
	double pid = c->field->value(r);

	(void)f;
	if (pid > 0)
		snprintf(buf, size, "%.0f", pid);
	else
		snprintf(buf, size, "-");
}

#define SITE_MEMO_SLOTS 64	/* direct-mapped */

struct site_memo {
	struct {
		uint64_t site;	/* 0: empty */
		int width;
		char text[512];
	} slot[SITE_MEMO_SLOTS];
};

struct site_memo *site_memo_new(void)
{
	return xcalloc(1, sizeof(struct site_memo));
}

void site_memo_free(struct site_memo *m)
{
	free(m);
}

/* The text of a site as f's style and width make it. */
static void site_make(const struct column_ctx *f, uint64_t site, char *buf,
		      size_t size)
{
	if (f->site_style == SITE_LINE)
		site_line(buf, size, f->symbols, site);
	else
		site_fit(buf, size, f->symbols, site,
			 f->site_style == SITE_BOTH, f->width);
}

/* The same, from f's memo when it has one. */
static const char *site_text(const struct column_ctx *f, uint64_t site,
			     char *buf, size_t size)
{
	struct site_memo *m = f->sites;
	unsigned i = (unsigned)(hash_mix(site) % SITE_MEMO_SLOTS);

	if (m == NULL || site == 0) {
		site_make(f, site, buf, size);
		return buf;
	}
	if (m->slot[i].site != site || m->slot[i].width != f->width) {
		site_make(f, site, m->slot[i].text, sizeof(m->slot[i].text));
		m->slot[i].site = site;
		m->slot[i].width = f->width;
	}
	return m->slot[i].text;
}

/*
 * The call site; one without a symbol is followed by its nearest named
 * caller (names_caller()): "varnishd+0x65688 ← VSLv".
 */
static void cell_site(const struct column *c, const struct view_row *r,
		      const struct column_ctx *f, char *buf, size_t size)
{
	struct frame_info caller;
	unsigned depth;
	char own[512];
	const char *site;

	(void)c;
	if (r->n_sites > 1) {
		snprintf(buf, size, "[%u sites]", r->n_sites);
		return;
	}
	site = site_text(f, r->site, own, sizeof(own));
	if (names_caller(f->symbols, f->model, r, &caller, &depth))
		snprintf(buf, size, "%s %s %s", site,
			 format_utf8() ? "\u2190" : "<-", caller.symbol);
	else
		format_copy(buf, size, site);
}

static void cell_duration(const struct column *c, const struct view_row *r,
			  const struct column_ctx *f, char *buf, size_t size)
{
	(void)f;
	format_duration(buf, size, c->field->value(r));
}

static void cell_count(const struct column *c, const struct view_row *r,
		       const struct column_ctx *f, char *buf, size_t size)
{
	(void)f;
	format_count(buf, size, c->field->value(r));
}

static void cell_contended(const struct column *c, const struct view_row *r,
			   const struct column_ctx *f, char *buf, size_t size)
{
	(void)c;
	(void)f;
	if (r->c.calls.acquisitions + r->c.calls.timeouts == 0)
		snprintf(buf, size, "-");
	else
		format_fixed(buf, size, 100.0 * lock_counts_wait_share(&r->c), 1, "");
}

static void cell_held_share(const struct column *c, const struct view_row *r,
			    const struct column_ctx *f, char *buf, size_t size)
{
	(void)f;
	if (r->c.calls.holds_timed == 0)
		snprintf(buf, size, "-");
	else
		format_fixed(buf, size, 100.0 * c->field->value(r), 1, "");
}

static void cell_trend(const struct column *c, const struct view_row *r,
		       const struct column_ctx *f, char *buf, size_t size)
{
	(void)c;
	(void)f;
	format_sparkline(buf, size, r->trend, TREND_LEN);
}

/* The cell text of each unit of field.h. */
static void (*const cell_of_unit[])(const struct column *c,
				      const struct view_row *r,
				      const struct column_ctx *f, char *buf,
				      size_t size) = {
	[UNIT_COUNT] = cell_count,
	[UNIT_NS] = cell_duration,
	[UNIT_SITE] = cell_site,
	[UNIT_WAIT_SHARE] = cell_contended,
	[UNIT_PID] = cell_pid,
	[UNIT_HELD_SHARE] = cell_held_share,
};

/* The columns that show no field, each with its place among the others. */
static const struct {
	struct column col;
	int order;
} own[] = {
	{ { .title = "TYPE", .width = 12, .left = true, .priority = 8,
	    .cell = cell_type,
	    .help = "mutex, rwlock-read, rwlock-write, spinlock, condvar, futex, futex-wake or semaphore" },
	  10 },
	{ { .title = "OBJECT", .width = 14, .left = true, .priority = 1,
	    .cell = cell_object,
	    .help = "the lock's variable, @ its first locker, or address; [N objs] coalesced" },
	  20 },
	{ { .title = "TREND", .width = TREND_LEN, .left = true, .sparkline = true,
	    .priority = 2, .cell = cell_trend,
	    .help = "wait of the last intervals, oldest first" },
	  100 },
};

#define OWN_COUNT (sizeof(own) / sizeof(own[0]))

/* The table, made once from own[] and the fields that have a column. */
static struct column table[COLUMNS_MAX];
static int table_order[COLUMNS_MAX];
static size_t table_count;
static bool table_made;
static bool several_processes;
static bool culprit_view;
static bool holders_shown;

/* The holders' columns in the culprit view keep as long as WAIT/s. */
#define CULPRIT_PRIORITY 9

void column_set_culprits(bool culprits)
{
	culprit_view = culprits;
}

void column_set_holders(bool on)
{
	holders_shown = on;
}

void column_set_several(bool several)
{
	several_processes = several;
}

bool column_several(void)
{
	return several_processes;
}

/* Put c at its order's place among the n columns so far, if there is room. */
static void place_column(const struct column *c, int order)
{
	size_t i = table_count;

	if (table_count == COLUMNS_MAX)
		return;
	for (; i > 0 && table_order[i - 1] > order; i--) {
		table[i] = table[i - 1];
		table_order[i] = table_order[i - 1];
	}
	table[i] = *c;
	table_order[i] = order;
	table_count++;
}

/* A field's column as field.h describes it. */
static struct column column_of_field(const struct field *f)
{
	const struct field_column *fc = &f->column;

	return (struct column){ .field = f, .title = fc->title,
				.width = fc->width,
				.left = fc->unit == UNIT_SITE,
				.flex = fc->unit == UNIT_SITE,
				.priority = fc->priority,
				.cell = cell_of_unit[fc->unit], .help = fc->help,
				.several = fc->several, .holder = fc->holder };
}

static void make_table(void)
{
	if (table_made)
		return;
	for (size_t i = 0; i < OWN_COUNT; i++)
		place_column(&own[i].col, own[i].order);
	for (size_t i = 0; i < field_count(); i++) {
		const struct field *f = field_at(i);
		struct column c = column_of_field(f);

		if (f->column.title)
			place_column(&c, f->column.order);
	}
	table_made = true;
}

size_t column_count(void)
{
	make_table();
	return table_count;
}

const struct column *column_at(size_t i)
{
	make_table();
	return &table[i];
}

const struct column *column_of(const struct field *f)
{
	for (size_t i = 0; i < column_count(); i++) {
		if (column_at(i)->field == f)
			return column_at(i);
	}
	return NULL;
}

void column_keys(char *buf, size_t size, const char *sep)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < column_count() && len < size; i++) {
		const struct field *f = column_at(i)->field;
		int n;

		if (f == NULL || f->key == NULL)
			continue;
		n = snprintf(buf + len, size - len, "%s%s", len ? sep : "",
			     f->key);
		len += n > 0 ? (size_t)n : 0;
	}
}

/* A column's priority, raised for the holders' columns in the culprit view. */
static int priority_of(const struct column *c)
{
	return c->holder && culprit_view ? CULPRIT_PRIORITY : c->priority;
}

/* Columns kept at a priority cut, and the width they need with spaces. */
static int layout_width(bool tui, int min_priority, bool *keep)
{
	int need = -1;

	for (size_t i = 0; i < column_count(); i++) {
		const struct column *c = column_at(i);

		keep[i] = (tui || !c->sparkline) && priority_of(c) >= min_priority &&
			  (!c->several || several_processes) &&
			  (!c->holder || holders_shown);
		if (keep[i])
			need += c->width + 1;
	}
	return need;
}

size_t column_layout(int width, bool tui, struct column_place *out)
{
	bool keep[COLUMNS_MAX];
	int cut = 0, x = 0, extra;
	size_t n = 0;

	while (layout_width(tui, cut, keep) > width && cut < 10)
		cut++;
	extra = width - layout_width(tui, cut, keep);
	for (size_t i = 0; i < column_count(); i++) {
		const struct column *c = column_at(i);

		if (!keep[i])
			continue;
		out[n].col = c;
		out[n].x = x;
		out[n].width = c->width + (c->flex && extra > 0 ? extra : 0);
		x += out[n].width + 1;
		n++;
	}
	return n;
}
