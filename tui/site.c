/* Call sites named for the table: function+offset, file:line, chains. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cxxname.h"
#include "procs.h"
#include "site.h"

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
		snprintf(buf, size, "0x%" PRIx64, procs_addr(fi->address));
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

void site_function(char *buf, size_t size, struct symbols *s, uint64_t site)
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

void site_line(char *buf, size_t size, struct symbols *s, uint64_t site)
{
	const struct inline_call *o;
	struct frame_info fi;
	char line[256], outer[256];

	symbols_resolve(s, site, 1, &fi);
	if (!fi.file || fi.line <= 0) {
		site_function(buf, size, s, site);
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

void site_both(char *buf, size_t size, struct symbols *s, uint64_t site)
{
	struct frame_info fi;
	char fn[256], line[256];

	symbols_resolve(s, site, 1, &fi);
	if (!fi.file || fi.line <= 0) {
		site_function(buf, size, s, site);
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

void site_fit(char *buf, size_t size, struct symbols *s, uint64_t site,
	      bool line, int width)
{
	struct frame_info fi;
	char tails[3][640];
	const char *name;

	symbols_resolve(s, site, 1, &fi);
	name = fi.n_inlined ? fi.function : fi.symbol;
	if (name == NULL || fi.symbol == NULL) {
		(line ? site_both : site_function)(buf, size, s, site);
		return;
	}
	site_tails(tails, &fi, line);
	for (int i = 0; i < 3; i++) {
		if (cxxname_fit(buf, size, name, tails[i], width))
			return;
	}
}

void site_chain(char *buf, size_t size, struct symbols *s, uint64_t site)
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

const char *site_label(void *symbols, uint64_t site)
{
	static char label[2048];
	struct frame_info fi;
	char fn[512], places[1024];

	if (site == 0)
		return "";
	symbols_resolve(symbols, site, 1, &fi);
	site_function(fn, sizeof(fn), symbols, site);
	label_places(places, sizeof(places), &fi);
	snprintf(label, sizeof(label), "%s %s %s", fn, places,
		 fi.module ? fi.module : "??");
	return label;
}
