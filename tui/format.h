/*
 * How values and rows read: durations, counts, call sites, and the one
 * column table that drives headers, cells and sort keys for every output.
 */
#ifndef QSPTOP_FORMAT_H
#define QSPTOP_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "symbols.h"

/* How the CALL SITE column reads. */
enum site_style { SITE_FUNCTION, SITE_LINE, SITE_BOTH };

/* What a cell needs besides its row. */
struct format_ctx {
	struct symbols *symbols;
	enum site_style site_style;
};

struct column {
	const char *title;
	int width;		/* 0: takes the remaining width */
	bool left;		/* left-aligned */
	int sort;		/* enum sort_key, or -1 */
	void (*cell)(const struct view_row *r, const struct format_ctx *f,
		     char *buf, size_t size);
};

extern const struct column columns[];
extern const size_t column_count;

/* "950ns", "12.3us", "4.56ms", "1.23s". */
void format_duration(char *buf, size_t size, double ns);

/* "999", "12.3K", "1.23M", "4.56G". */
void format_count(char *buf, size_t size, double n);

/* A call site as "function+0xoff", "module+0xoff" or "0xaddr". */
void format_site(char *buf, size_t size, struct symbols *s, uint64_t site);

/* A call site as "file:line", falling back to format_site(). */
void format_site_line(char *buf, size_t size, struct symbols *s, uint64_t site);

/* Everything a filter may match: function, file:line and module. */
const char *format_site_label(void *symbols, uint64_t site);

/* Fit s into width columns, cutting from the left ("…tail") when longer. */
void format_fit_left(char *buf, size_t size, const char *s, int width);

#endif
