/*
 * Text with no dependencies: durations, counts, a sparkline, and UTF-8
 * text fitted to a width.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "format.h"

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
 * printf's "%.*f%s" without its parsing: batch output formats every cell
 * of every row.
 */
void format_fixed(char *buf, size_t size, double v, int decimals,
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
		format_fixed(buf, size, ns, 0, "ns");
	else if (ns < 1e6)
		format_fixed(buf, size, ns / 1e3, ns < 1e4 ? 2 : ns < 1e5 ? 1 : 0, "us");
	else if (ns < 1e9)
		format_fixed(buf, size, ns / 1e6, ns < 1e7 ? 2 : ns < 1e8 ? 1 : 0, "ms");
	else
		format_fixed(buf, size, ns / 1e9, 2, "s");
}

void format_count(char *buf, size_t size, double n)
{
	static const char *const units[] = { "", "K", "M", "G", "T", "P" };
	int u = 0;

	if (n < 10000) {
		format_fixed(buf, size, n, 0, "");
		return;
	}
	while (n >= 1000 && u < 5) {
		n /= 1000;
		u++;
	}
	format_fixed(buf, size, n, n < 10 ? 2 : n < 100 ? 1 : 0, units[u]);
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

void format_copy(char *buf, size_t size, const char *s)
{
	size_t len;

	if (size == 0)
		return;
	len = strnlen(s, size - 1);
	memcpy(buf, s, len);
	buf[len] = '\0';
}

void format_hex(char *buf, size_t size, uint64_t v)
{
	char text[19], *p = text + sizeof(text);

	*--p = '\0';
	do
		*--p = "0123456789abcdef"[v & 15];
	while ((v >>= 4) != 0);
	*--p = 'x';
	*--p = '0';
	format_copy(buf, size, p);
}

/* Whether s fits in width columns: its bytes do, or then its characters. */
static bool fits(const char *s, int width)
{
	return width <= 0 || strlen(s) <= (size_t)width ||
	       utf8_chars(s) <= (size_t)width;
}

void format_fit_left(char *buf, size_t size, const char *s, int width)
{
	if (fits(s, width)) {
		format_copy(buf, size, s);
		return;
	}
	snprintf(buf, size, "%s%s", utf8 ? "\u2026" : "~",
		 utf8_tail(s, (size_t)(width - 1)));
}

void format_fit_right(char *buf, size_t size, const char *s, int width)
{
	size_t keep = 0;

	if (fits(s, width)) {
		format_copy(buf, size, s);
		return;
	}
	for (int n = 0; s[keep] && n < width - 1; keep++)
		n += ((unsigned char)s[keep + 1] & 0xc0) != 0x80;
	snprintf(buf, size, "%.*s%s", (int)keep, s, utf8 ? "\u2026" : "~");
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
