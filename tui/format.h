/*
 * Text with no dependencies: durations, counts, a sparkline, and UTF-8
 * text fitted to a width.
 */
#ifndef QSPTOP_FORMAT_H
#define QSPTOP_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Use UTF-8 glyphs (ellipsis, sparkline blocks) or ASCII stand-ins. */
void format_set_utf8(bool on);
bool format_utf8(void);

/* A sparkline of values scaled to their own maximum, n glyphs. */
void format_sparkline(char *buf, size_t size, const uint64_t *values, int n);

/* "950ns", "12.3us", "4.56ms", "1.23s". */
void format_duration(char *buf, size_t size, double ns);

/* "999", "12.3K", "1.23M", "4.56G". */
void format_count(char *buf, size_t size, double n);

/* v with 0, 1 or 2 decimals and a suffix, as "%.*f%s" prints it. */
void format_fixed(char *buf, size_t size, double v, int decimals,
		  const char *suffix);

/* s cut to size - 1 bytes, as snprintf's "%s" would, without its parsing. */
void format_copy(char *buf, size_t size, const char *s);

/* "0x" and v in lower-case hex, as printf's "0x%" PRIx64. */
void format_hex(char *buf, size_t size, uint64_t v);

/* Fit s into width columns, cutting from the left ("…tail") when longer. */
void format_fit_left(char *buf, size_t size, const char *s, int width);

/* Fit s into width columns, cutting at the right ("head…") when longer. */
void format_fit_right(char *buf, size_t size, const char *s, int width);

#endif
