/*
 * The column table: each column's field (field.h), title, width,
 * priority and cell, and how the columns share a line.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "column.h"
#include "format.h"
#include "site.h"

static void cell_type(const struct column *c, const struct view_row *r,
		      const struct column_ctx *f, char *buf, size_t size)
{
	(void)c;
	(void)f;
	snprintf(buf, size, "%s", lock_type_name(r->type));
}

static void cell_object(const struct column *c, const struct view_row *r,
			const struct column_ctx *f, char *buf, size_t size)
{
	(void)c;
	(void)f;
	if (r->n_objects > 1)
		snprintf(buf, size, "[%u objs]", r->n_objects);
	else if (r->object == 0)
		snprintf(buf, size, "[many]");
	else
		snprintf(buf, size, "0x%" PRIx64, r->object);
}

static void cell_site(const struct column *c, const struct view_row *r,
		      const struct column_ctx *f, char *buf, size_t size)
{
	(void)c;
	if (r->n_sites > 1)
		snprintf(buf, size, "[%u sites]", r->n_sites);
	else if (f->site_style == SITE_LINE)
		site_line(buf, size, f->symbols, r->site);
	else
		site_fit(buf, size, f->symbols, r->site,
				f->site_style == SITE_BOTH, f->width);
}

void column_cell_duration(const struct column *c, const struct view_row *r,
			  const struct column_ctx *f, char *buf, size_t size)
{
	(void)f;
	format_duration(buf, size, c->field->value(r));
}

void column_cell_count(const struct column *c, const struct view_row *r,
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

static void cell_trend(const struct column *c, const struct view_row *r,
		       const struct column_ctx *f, char *buf, size_t size)
{
	(void)c;
	(void)f;
	format_sparkline(buf, size, r->trend, TREND_LEN);
}

static const struct column table[] = {
	{ .title = "TYPE", .width = 12, .left = true, .priority = 8,
	  .cell = cell_type,
	  .help = "mutex, rwlock-read, rwlock-write, spinlock, condvar, futex or futex-wake" },
	{ .title = "OBJECT", .width = 14, .left = true, .priority = 1,
	  .cell = cell_object,
	  .help = "the lock's address; [N objs] when rows are coalesced" },
	{ .field = &fields[FIELD_SITE], .title = "CALL SITE", .width = 30,
	  .left = true, .flex = true, .priority = 10, .cell = cell_site,
	  .help = "where the lock is taken (s: function+offset or file:line)" },
	{ .field = &fields[FIELD_WAIT_RATE], .title = "WAIT/s", .width = 8,
	  .priority = 9, .cell = column_cell_duration,
	  .help = "time threads waited here per second, last interval" },
	{ .field = &fields[FIELD_WAIT], .title = "WAIT", .width = 8,
	  .priority = 3, .cell = column_cell_duration,
	  .help = "total wait since start or reset" },
	{ .field = &fields[FIELD_ACQUISITIONS], .title = "ACQ", .width = 7,
	  .priority = 5, .cell = column_cell_count,
	  .help = "acquisitions since start or reset" },
	{ .field = &fields[FIELD_CONTENDED], .title = "CONT%", .width = 6,
	  .priority = 4, .cell = cell_contended,
	  .help = "share of calls that had to wait (sorts by contended count)" },
	{ .field = &fields[FIELD_AVG_WAIT], .title = "AVG", .width = 8,
	  .priority = 7, .cell = column_cell_duration,
	  .help = "wait per wait, timed out or not" },
	{ .field = &fields[FIELD_MAX_WAIT], .title = "MAX", .width = 8,
	  .priority = 6, .cell = column_cell_duration,
	  .help = "longest single wait" },
	{ .title = "TREND", .width = TREND_LEN, .left = true, .sparkline = true,
	  .priority = 2, .cell = cell_trend,
	  .help = "wait of the last intervals, oldest first" },
};

#define TABLE_COUNT (sizeof(table) / sizeof(table[0]))

static const struct column *added;
static size_t n_added;

size_t column_count(void)
{
	return TABLE_COUNT + n_added;
}

const struct column *column_at(size_t i)
{
	return i < TABLE_COUNT ? &table[i] : &added[i - TABLE_COUNT];
}

void column_extend(const struct column *c, size_t n)
{
	added = c;
	n_added = TABLE_COUNT + n <= COLUMNS_MAX ? n : COLUMNS_MAX - TABLE_COUNT;
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

/* Columns kept at a priority cut, and the width they need with spaces. */
static int layout_width(bool tui, int min_priority, bool *keep)
{
	int need = -1;

	for (size_t i = 0; i < column_count(); i++) {
		const struct column *c = column_at(i);

		keep[i] = (tui || !c->sparkline) && c->priority >= min_priority;
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
