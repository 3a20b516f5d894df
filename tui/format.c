/* Formatting values, call sites and table cells. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "format.h"

void format_duration(char *buf, size_t size, double ns)
{
	if (ns < 1000)
		snprintf(buf, size, "%.0fns", ns);
	else if (ns < 1e6)
		snprintf(buf, size, "%.*fus", ns < 1e4 ? 2 : ns < 1e5 ? 1 : 0, ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, size, "%.*fms", ns < 1e7 ? 2 : ns < 1e8 ? 1 : 0, ns / 1e6);
	else
		snprintf(buf, size, "%.2fs", ns / 1e9);
}

void format_count(char *buf, size_t size, double n)
{
	static const char units[] = " KMGTP";
	int u = 0;

	if (n < 10000) {
		snprintf(buf, size, "%.0f", n);
		return;
	}
	while (n >= 1000 && u < 5) {
		n /= 1000;
		u++;
	}
	snprintf(buf, size, "%.*f%c", n < 10 ? 2 : n < 100 ? 1 : 0, n, units[u]);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

void format_site(char *buf, size_t size, struct symbols *s, uint64_t site)
{
	struct frame_info fi;

	symbols_resolve(s, site, 1, &fi);
	if (fi.symbol)
		snprintf(buf, size, "%s+0x%" PRIx64, fi.symbol, fi.offset);
	else if (fi.module)
		snprintf(buf, size, "%s+0x%" PRIx64, base_name(fi.module),
			 fi.module_offset);
	else
		snprintf(buf, size, "0x%" PRIx64, site);
}

void format_site_line(char *buf, size_t size, struct symbols *s, uint64_t site)
{
	struct frame_info fi;

	symbols_resolve(s, site, 1, &fi);
	if (fi.file && fi.line > 0)
		snprintf(buf, size, "%s:%d", base_name(fi.file), fi.line);
	else
		format_site(buf, size, s, site);
}

const char *format_site_label(void *symbols, uint64_t site)
{
	static char label[1024];
	struct frame_info fi;
	char fn[512];

	if (site == 0)
		return "";
	symbols_resolve(symbols, site, 1, &fi);
	format_site(fn, sizeof(fn), symbols, site);
	snprintf(label, sizeof(label), "%s %s:%d %s", fn,
		 fi.file ? fi.file : "??", fi.line, fi.module ? fi.module : "??");
	return label;
}

void format_fit_left(char *buf, size_t size, const char *s, int width)
{
	size_t len = strlen(s);

	if (width <= 0 || len <= (size_t)width) {
		snprintf(buf, size, "%s", s);
		return;
	}
	/* "…" is three bytes and one column. */
	snprintf(buf, size, "\u2026%s", s + len - (size_t)(width - 1));
}

static void cell_type(const struct view_row *r, const struct format_ctx *f,
		      char *buf, size_t size)
{
	(void)f;
	snprintf(buf, size, "%s", lock_type_name(r->type));
}

static void cell_object(const struct view_row *r, const struct format_ctx *f,
			char *buf, size_t size)
{
	(void)f;
	if (r->n_objects > 1)
		snprintf(buf, size, "[%u objs]", r->n_objects);
	else if (r->object == 0)
		snprintf(buf, size, "[many]");
	else
		snprintf(buf, size, "0x%" PRIx64, r->object);
}

static void cell_site(const struct view_row *r, const struct format_ctx *f,
		      char *buf, size_t size)
{
	char fn[256], line[256];

	if (r->n_sites > 1) {
		snprintf(buf, size, "[%u sites]", r->n_sites);
	} else if (f->site_style == SITE_LINE) {
		format_site_line(buf, size, f->symbols, r->site);
	} else if (f->site_style == SITE_FUNCTION) {
		format_site(buf, size, f->symbols, r->site);
	} else {
		format_site(fn, sizeof(fn), f->symbols, r->site);
		format_site_line(line, sizeof(line), f->symbols, r->site);
		if (strcmp(fn, line) == 0)
			snprintf(buf, size, "%s", fn);
		else
			snprintf(buf, size, "%s (%s)", fn, line);
	}
}

static void cell_wait_rate(const struct view_row *r, const struct format_ctx *f,
			   char *buf, size_t size)
{
	(void)f;
	format_duration(buf, size, r->wait_per_s);
}

static void cell_wait(const struct view_row *r, const struct format_ctx *f,
		      char *buf, size_t size)
{
	(void)f;
	format_duration(buf, size, (double)r->c.wait_ns);
}

static void cell_acq(const struct view_row *r, const struct format_ctx *f,
		     char *buf, size_t size)
{
	(void)f;
	format_count(buf, size, (double)r->c.acquisitions);
}

static void cell_contended(const struct view_row *r, const struct format_ctx *f,
			   char *buf, size_t size)
{
	(void)f;
	if (r->c.acquisitions == 0)
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%.1f", 100.0 * (double)r->c.contended /
			 (double)r->c.acquisitions);
}

static void cell_avg(const struct view_row *r, const struct format_ctx *f,
		     char *buf, size_t size)
{
	(void)f;
	format_duration(buf, size, r->c.acquisitions == 0 ? 0 :
			(double)r->c.wait_ns / (double)r->c.acquisitions);
}

static void cell_max(const struct view_row *r, const struct format_ctx *f,
		     char *buf, size_t size)
{
	(void)f;
	format_duration(buf, size, (double)r->max_wait_ns);
}

const struct column columns[] = {
	{ "TYPE", 12, true, -1, cell_type },
	{ "OBJECT", 14, true, -1, cell_object },
	{ "WAIT/s", 8, false, SORT_WAIT, cell_wait_rate },
	{ "WAIT", 8, false, SORT_TOTAL, cell_wait },
	{ "ACQ", 7, false, SORT_COUNT, cell_acq },
	{ "CONT%", 6, false, SORT_CONTENDED, cell_contended },
	{ "AVG", 8, false, SORT_AVG, cell_avg },
	{ "MAX", 8, false, SORT_MAX, cell_max },
	{ "CALL SITE", 0, true, SORT_SITE, cell_site },
};
const size_t column_count = sizeof(columns) / sizeof(columns[0]);
