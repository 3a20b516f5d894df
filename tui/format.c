/* Formatting values, call sites and table cells. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cxxname.h"
#include "format.h"
#include "lockset.h"

static bool utf8 = true;

void format_set_utf8(bool on)
{
	utf8 = on;
}

bool format_utf8(void)
{
	return utf8;
}

/*
 * v with 0, 1 or 2 decimals and a suffix, as printf's "%.*f%s" prints it
 * but without its parsing: batch output formats every cell of every row.
 */
static void fixed_text(char *buf, size_t size, double v, int decimals,
		       const char *suffix)
{
	static const unsigned scale[] = { 1, 10, 100 };
	char text[64], *end = text + 24, *p = end;
	double exact = v * scale[decimals], scaled = rint(exact);
	uint64_t n;
	size_t len;

	/* printf rounds v's exact value: near a tie the product cannot tell. */
	if (!(scaled >= 0 && scaled < 1e15) ||
	    fabs(fabs(exact - scaled) - 0.5) < 1e-6) {
		snprintf(buf, size, "%.*f%s", decimals, v, suffix);
		return;
	}
	n = (uint64_t)scaled;
	for (int i = 0; i < decimals; i++, n /= 10)
		*--p = (char)('0' + n % 10);
	if (decimals)
		*--p = '.';
	do
		*--p = (char)('0' + n % 10);
	while ((n /= 10) != 0);
	len = strnlen(suffix, sizeof(text) - 25);
	memcpy(end, suffix, len);
	end[len] = '\0';
	if (size) {
		len = strnlen(p, size - 1);
		memcpy(buf, p, len);
		buf[len] = '\0';
	}
}

void format_duration(char *buf, size_t size, double ns)
{
	if (ns < 1000)
		fixed_text(buf, size, ns, 0, "ns");
	else if (ns < 1e6)
		fixed_text(buf, size, ns / 1e3, ns < 1e4 ? 2 : ns < 1e5 ? 1 : 0, "us");
	else if (ns < 1e9)
		fixed_text(buf, size, ns / 1e6, ns < 1e7 ? 2 : ns < 1e8 ? 1 : 0, "ms");
	else
		fixed_text(buf, size, ns / 1e9, 2, "s");
}

void format_count(char *buf, size_t size, double n)
{
	static const char *const units[] = { "", "K", "M", "G", "T", "P" };
	int u = 0;

	if (n < 10000) {
		fixed_text(buf, size, n, 0, "");
		return;
	}
	while (n >= 1000 && u < 5) {
		n /= 1000;
		u++;
	}
	fixed_text(buf, size, n, n < 10 ? 2 : n < 100 ? 1 : 0, units[u]);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* "function+0xoff", "module+0xoff" or "0xaddr": where the address is. */
static void address_text(char *buf, size_t size, const struct frame_info *fi)
{
	if (fi->symbol)
		snprintf(buf, size, "%s+0x%" PRIx64, fi->symbol, fi->offset);
	else if (fi->module)
		snprintf(buf, size, "%s+0x%" PRIx64, base_name(fi->module),
			 fi->module_offset);
	else
		snprintf(buf, size, "0x%" PRIx64, fi->address);
}

/* "file:line" of a place, "??" for an unknown one. */
static void place_text(char *buf, size_t size, const char *file, int line)
{
	if (file && line > 0)
		snprintf(buf, size, "%s:%d", base_name(file), line);
	else
		snprintf(buf, size, "??");
}

/*
 * The outer end of a site: its function+offset and, as the line, that
 * of the call inlined there, if any, else its own. "??" where unknown.
 */
static void outer_text(char *buf, size_t size, const struct frame_info *fi)
{
	const struct inline_call *o = fi->n_inlined ?
		&fi->inlined_in[fi->n_inlined - 1] : NULL;
	char fn[256], line[256];

	address_text(fn, sizeof(fn), fi);
	place_text(line, sizeof(line), o ? o->file : fi->file,
		   o ? o->line : fi->line);
	snprintf(buf, size, "%s (%s)", fn, line);
}

void format_site(char *buf, size_t size, struct symbols *s, uint64_t site)
{
	struct frame_info fi;
	char fn[256];

	symbols_resolve(s, site, 1, &fi);
	address_text(fn, sizeof(fn), &fi);
	if (fi.n_inlined)
		snprintf(buf, size, "%s inlined in %s",
			 fi.function ? fi.function : "??", fn);
	else
		snprintf(buf, size, "%s", fn);
}

void format_site_line(char *buf, size_t size, struct symbols *s, uint64_t site)
{
	const struct inline_call *o;
	struct frame_info fi;
	char line[256], outer[256];

	symbols_resolve(s, site, 1, &fi);
	if (!fi.file || fi.line <= 0) {
		format_site(buf, size, s, site);
		return;
	}
	place_text(line, sizeof(line), fi.file, fi.line);
	if (fi.n_inlined == 0) {
		snprintf(buf, size, "%s", line);
		return;
	}
	o = &fi.inlined_in[fi.n_inlined - 1];
	place_text(outer, sizeof(outer), o->file, o->line);
	snprintf(buf, size, "%s inlined in %s", line, outer);
}

void format_site_both(char *buf, size_t size, struct symbols *s, uint64_t site)
{
	struct frame_info fi;
	char fn[256], line[256];

	symbols_resolve(s, site, 1, &fi);
	if (!fi.file || fi.line <= 0) {
		format_site(buf, size, s, site);
		return;
	}
	address_text(fn, sizeof(fn), &fi);
	place_text(line, sizeof(line), fi.file, fi.line);
	if (fi.n_inlined)
		snprintf(buf, size, "%s (%s) inlined in %s",
			 fi.function ? fi.function : "??", line, fn);
	else
		snprintf(buf, size, "%s (%s)", fn, line);
}

/* What follows a site's function name, fullest first; the last is "". */
static void site_tails(char tails[3][640], const struct frame_info *fi,
		       bool line)
{
	char fn[256], where[256], place[264] = "";

	address_text(fn, sizeof(fn), fi);
	if (line && fi->file && fi->line > 0) {
		place_text(where, sizeof(where), fi->file, fi->line);
		snprintf(place, sizeof(place), " (%s)", where);
	}
	if (fi->n_inlined)
		snprintf(tails[0], sizeof(tails[0]), "%s inlined in %s", place, fn);
	else
		snprintf(tails[0], sizeof(tails[0]), "+0x%" PRIx64 "%s", fi->offset,
			 place);
	snprintf(tails[1], sizeof(tails[1]), "%s", place);
	tails[2][0] = '\0';
}

void format_site_fit(char *buf, size_t size, struct symbols *s, uint64_t site,
		     bool line, int width)
{
	struct frame_info fi;
	char tails[3][640];
	const char *name;

	symbols_resolve(s, site, 1, &fi);
	name = fi.n_inlined ? fi.function : fi.symbol;
	if (name == NULL || fi.symbol == NULL) {
		(line ? format_site_both : format_site)(buf, size, s, site);
		return;
	}
	site_tails(tails, &fi, line);
	for (int i = 0; i < 3; i++) {
		if (cxxname_fit(buf, size, name, tails[i], width))
			return;
	}
}

void format_site_chain(char *buf, size_t size, struct symbols *s,
		       uint64_t site)
{
	struct frame_info fi;
	char outer[600];
	size_t len = 0;

	symbols_resolve(s, site, 1, &fi);
	buf[0] = '\0';
	for (unsigned i = 0; i < fi.n_inlined && len < size; i++) {
		const char *fn = i ? fi.inlined_in[i - 1].function : fi.function;
		const char *file = i ? fi.inlined_in[i - 1].file : fi.file;
		int line = i ? fi.inlined_in[i - 1].line : fi.line;
		char place[256];
		int n;

		place_text(place, sizeof(place), file, line);
		n = snprintf(buf + len, size - len, "%s (%s) inlined in ",
			     fn ? fn : "??", place);
		len += n > 0 ? (size_t)n : 0;
	}
	outer_text(outer, sizeof(outer), &fi);
	if (len < size)
		snprintf(buf + len, size - len, "%s", outer);
}

/* Each place's function, whole path and line, for filters to match. */
static void label_places(char *buf, size_t size, const struct frame_info *fi)
{
	size_t len = (size_t)snprintf(buf, size, "%s:%d", fi->file ? fi->file :
				      "??", fi->line);

	for (unsigned i = 0; i < fi->n_inlined && len < size; i++) {
		const struct inline_call *c = &fi->inlined_in[i];
		int n = snprintf(buf + len, size - len, " %s %s:%d",
				 c->function ? c->function : "??",
				 c->file ? c->file : "??", c->line);

		len += n > 0 ? (size_t)n : 0;
	}
}

const char *format_site_label(void *symbols, uint64_t site)
{
	static char label[2048];
	struct frame_info fi;
	char fn[512], places[1024];

	if (site == 0)
		return "";
	symbols_resolve(symbols, site, 1, &fi);
	format_site(fn, sizeof(fn), symbols, site);
	label_places(places, sizeof(places), &fi);
	snprintf(label, sizeof(label), "%s %s %s", fn, places,
		 fi.module ? fi.module : "??");
	return label;
}

/* Characters in a UTF-8 string (each shown one column wide). */
static size_t utf8_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* The tail of s holding its last n characters. */
static const char *utf8_tail(const char *s, size_t n)
{
	size_t skip = utf8_chars(s) - n;

	for (; *s; s++) {
		if (((unsigned char)*s & 0xc0) != 0x80 && skip-- == 0)
			break;
	}
	return s;
}

void format_fit_left(char *buf, size_t size, const char *s, int width)
{
	if (width <= 0 || utf8_chars(s) <= (size_t)width) {
		snprintf(buf, size, "%s", s);
		return;
	}
	snprintf(buf, size, "%s%s", utf8 ? "\u2026" : "~",
		 utf8_tail(s, (size_t)(width - 1)));
}

void format_fit_right(char *buf, size_t size, const char *s, int width)
{
	size_t keep = 0;

	if (width <= 0 || utf8_chars(s) <= (size_t)width) {
		snprintf(buf, size, "%s", s);
		return;
	}
	for (int n = 0; s[keep] && n < width - 1; keep++)
		n += ((unsigned char)s[keep + 1] & 0xc0) != 0x80;
	snprintf(buf, size, "%.*s%s", (int)keep, s, utf8 ? "\u2026" : "~");
}

static void cell_type(const struct column *c, const struct view_row *r,
		      const struct format_ctx *f, char *buf, size_t size)
{
	(void)c;
	(void)f;
	snprintf(buf, size, "%s", lock_type_name(r->type));
}

static void cell_object(const struct column *c, const struct view_row *r,
			const struct format_ctx *f, char *buf, size_t size)
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
		      const struct format_ctx *f, char *buf, size_t size)
{
	(void)c;
	if (r->n_sites > 1)
		snprintf(buf, size, "[%u sites]", r->n_sites);
	else if (f->site_style == SITE_LINE)
		format_site_line(buf, size, f->symbols, r->site);
	else
		format_site_fit(buf, size, f->symbols, r->site,
				f->site_style == SITE_BOTH, f->width);
}

void column_cell_duration(const struct column *c, const struct view_row *r,
			  const struct format_ctx *f, char *buf, size_t size)
{
	(void)f;
	format_duration(buf, size, c->field->value(r));
}

void column_cell_count(const struct column *c, const struct view_row *r,
		       const struct format_ctx *f, char *buf, size_t size)
{
	(void)f;
	format_count(buf, size, c->field->value(r));
}

static void cell_contended(const struct column *c, const struct view_row *r,
			   const struct format_ctx *f, char *buf, size_t size)
{
	(void)c;
	(void)f;
	if (r->c.calls.acquisitions + r->c.calls.timeouts == 0)
		snprintf(buf, size, "-");
	else
		fixed_text(buf, size, 100.0 * lock_counts_wait_share(&r->c), 1, "");
}

static void cell_trend(const struct column *c, const struct view_row *r,
		       const struct format_ctx *f, char *buf, size_t size)
{
	(void)c;
	(void)f;
	format_sparkline(buf, size, r->trend, TREND_LEN);
}

void format_sparkline(char *buf, size_t size, const uint64_t *values, int n)
{
	static const char *const blocks[] = { " ", "\u2581", "\u2582", "\u2583",
		"\u2584", "\u2585", "\u2586", "\u2587", "\u2588" };
	static const char ascii[] = " .:-=+*#@";
	uint64_t max = 0;
	size_t len = 0;

	for (int i = 0; i < n; i++)
		max = values[i] > max ? values[i] : max;
	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		/* Any wait at all shows at least the lowest bar. */
		int level = max == 0 || values[i] == 0 ? 0 :
			    1 + (int)((values[i] * 7 + max / 2) / max);
		const char *g = utf8 ? blocks[level > 8 ? 8 : level] :
			(char[]){ ascii[level > 8 ? 8 : level], '\0' };
		size_t glen = strlen(g);

		if (len + glen >= size)
			break;
		memcpy(buf + len, g, glen + 1);
		len += glen;
	}
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

size_t format_layout(int width, bool tui, struct column_place *out)
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

/*
 * The header's word on lock types: "types locks", "idle last" while idle
 * waits sort after the locks; "" when there is none.
 */
static void types_text(char *buf, size_t size, const struct model_query *q)
{
	unsigned set = q->types ? q->types : LOCKSET_ALL;
	bool idle_last = !q->mix_idle && (set & LOCKSET_IDLE) &&
			 (set & LOCKSET_LOCKS);
	char names[128];

	lockset_name(set, names, sizeof(names));
	if (set == LOCKSET_ALL)
		buf[0] = '\0';
	else
		snprintf(buf, size, "types %s%s", names, idle_last ? ", " : "");
	if (idle_last)
		snprintf(buf + strlen(buf), size - strlen(buf), "idle last");
}

/*
 * What the collector lost: "dropped N", and ", folded M (memory cap)" when
 * it kept counts per call site instead of per lock.
 */
static void losses_text(char *buf, size_t size, const struct model_stats *st)
{
	int n = snprintf(buf, size, "dropped %llu", (unsigned long long)st->dropped);

	if (st->folded && n > 0 && (size_t)n < size)
		n += snprintf(buf + n, size - (size_t)n, ", folded %llu (memory cap)",
			      (unsigned long long)st->folded);
	if (st->raw_futex_threads && n > 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, ", unseen futex waits: %u thread%s",
			 st->raw_futex_threads, st->raw_futex_threads > 1 ? "s" : "");
}

size_t format_totals(struct totals_text *t, struct line_item *items,
		     const struct model_stats *st, const struct model_query *q,
		     const char *filter)
{
	const char *arrow = format_utf8() ? (q->ascending ? "\u25b2" : "\u25bc")
					  : (q->ascending ? "^" : "v");
	bool lost = st->dropped || st->folded || st->raw_futex_threads;
	const struct line_item shown[TOTALS_ITEMS] = {
		{ .text = t->lock, .priority = 10 },
		{ .text = t->cond, .priority = 8 },
		{ .text = t->acq, .priority = 6 },
		{ .text = t->filter, .priority = 9 },
		{ .text = t->types, .priority = 9 },
		{ .text = t->threads, .priority = 5 },
		{ .text = t->sort, .priority = 4 },
		{ .text = t->coalesce, .priority = 3 },
		{ .text = t->losses, .priority = lost ? 10 : 2 },
	};
	char v[32];

	format_duration(v, sizeof(v), st->lock_wait_per_s);
	snprintf(t->lock, sizeof(t->lock), "lock wait %s/s", v);
	format_duration(v, sizeof(v), st->cond_wait_per_s);
	snprintf(t->cond, sizeof(t->cond), "cond wait %s/s", v);
	format_count(v, sizeof(v), st->acq_per_s);
	snprintf(t->acq, sizeof(t->acq), "acq %s/s", v);
	t->filter[0] = '\0';
	if (filter && filter[0])
		snprintf(t->filter, sizeof(t->filter), "filter: %s", filter);
	types_text(t->types, sizeof(t->types), q);
	snprintf(t->threads, sizeof(t->threads), "threads %u seen, %u live",
		 st->threads_seen, st->threads_live);
	snprintf(t->sort, sizeof(t->sort), "sort %s %s", q->sort->key, arrow);
	snprintf(t->coalesce, sizeof(t->coalesce), "coalesce %s",
		 coalesce_name(q->coalesce));
	losses_text(t->losses, sizeof(t->losses), st);
	memcpy(items, shown, sizeof(shown));
	return TOTALS_ITEMS;
}
