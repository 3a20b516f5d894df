/* JSON text in cJSON_Print()'s format, written as it is built. */
#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "jsonw.h"
#include "xalloc.h"

void jsonw_init(struct jsonw *w)
{
	memset(w, 0, sizeof *w);
	w->cap = 4096;
	w->text = xmalloc(w->cap);
	w->text[0] = '\0';
	w->point = localeconv()->decimal_point[0];
}

/* Room for n more bytes and the terminator, doubling as it grows. */
static char *room(struct jsonw *w, size_t n)
{
	w->text = xgrow(w->text, &w->cap, w->len + n + 1, 4096, 1);
	return w->text + w->len;
}

/*
 * A text of tens of megabytes is written once, page after page: each 4 KiB
 * page's first touch is a fault, which costs microseconds in a VM. Asking
 * for huge pages over the room not yet written (where the kernel grants
 * them only on request) makes that a fault per 2 MiB.
 */
void jsonw_reserve(struct jsonw *w, size_t n)
{
	const uintptr_t huge = 2u << 20;
	uintptr_t from, to;

	room(w, n);
	from = ((uintptr_t)(w->text + w->len) + huge - 1) & ~(huge - 1);
	to = (uintptr_t)(w->text + w->cap) & ~(huge - 1);
	if (to > from)
		madvise((void *)from, to - from, MADV_HUGEPAGE);
}

static void put(struct jsonw *w, const char *s, size_t n)
{
	memcpy(room(w, n), s, n);
	w->len += n;
	w->text[w->len] = '\0';
}

void jsonw_raw(struct jsonw *w, const char *s)
{
	put(w, s, strlen(s));
}

static void tabs(struct jsonw *w, int n)
{
	char *p = room(w, (size_t)n);

	memset(p, '\t', (size_t)n);
	w->len += (size_t)n;
	w->text[w->len] = '\0';
}

/* Whether cJSON escapes a byte of a string. */
static bool escaped(unsigned char c)
{
	return c < 32 || c == '"' || c == '\\';
}

/*
 * A string as cJSON escapes it: quote, backslash and \b \f \n \r \t by
 * letter, other bytes below 32 as \u00xx, everything else as it is.
 */
static void quoted(struct jsonw *w, const char *s)
{
	static const char letter[32] = { ['\b'] = 'b', ['\f'] = 'f',
		['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't' };
	const unsigned char *u = (const unsigned char *)s;
	size_t len = strlen(s), plain = 0;
	char *p = room(w, 6 * len + 2);

	while (plain < len && !escaped(u[plain]))
		plain++;
	*p++ = '"';
	memcpy(p, s, plain);
	p += plain;
	for (u += plain; *u; u++) {
		if (!escaped(*u)) {
			*p++ = (char)*u;
			continue;
		}
		*p++ = '\\';
		if (*u == '"' || *u == '\\')
			*p++ = (char)*u;
		else if (letter[*u])
			*p++ = letter[*u];
		else
			p += sprintf(p, "u%04x", *u);
	}
	*p++ = '"';
	*p = '\0';
	w->len = (size_t)(p - w->text);
}

static bool in_object(const struct jsonw *w)
{
	return w->depth > 0 && (w->objects >> (w->depth - 1) & 1);
}

/* What goes before a value: a separator, and in an object tabs and key. */
static void value_start(struct jsonw *w, const char *key)
{
	if (in_object(w)) {
		if (!w->empty)
			put(w, ",\n", 2);
		tabs(w, w->depth);
		quoted(w, key ? key : "");
		put(w, ":\t", 2);
	} else if (w->depth > 0 && !w->empty) {
		put(w, ", ", 2);
	}
	w->empty = false;
}

static void open_container(struct jsonw *w, bool object)
{
	if (w->depth >= JSONW_MAX_DEPTH)
		fatal("JSON nested deeper than %d", JSONW_MAX_DEPTH);
	w->objects &= ~(1ull << w->depth);
	w->objects |= (uint64_t)object << w->depth;
	w->depth++;
	w->empty = true;
}

void jsonw_object(struct jsonw *w, const char *key)
{
	value_start(w, key);
	put(w, "{\n", 2);
	open_container(w, true);
}

void jsonw_array(struct jsonw *w, const char *key)
{
	value_start(w, key);
	put(w, "[", 1);
	open_container(w, false);
}

void jsonw_end(struct jsonw *w)
{
	if (w->depth == 0)
		return;
	if (in_object(w)) {
		if (!w->empty)
			put(w, "\n", 1);
		tabs(w, w->depth - 1);
		put(w, "}", 1);
	} else {
		put(w, "]", 1);
	}
	w->depth--;
	w->empty = false;
}

void jsonw_string(struct jsonw *w, const char *key, const char *s)
{
	value_start(w, key);
	if (s == NULL)
		put(w, "null", 4);
	else
		quoted(w, s);
}

void jsonw_bool(struct jsonw *w, const char *key, bool b)
{
	value_start(w, key);
	put(w, b ? "true" : "false", b ? 4 : 5);
}

void jsonw_null(struct jsonw *w, const char *key)
{
	value_start(w, key);
	put(w, "null", 4);
}

/* Decimal digits of a whole number below 1e15 in magnitude, as %g has them. */
static int integer_text(char *buf, double d)
{
	long long v = (long long)d;
	unsigned long long u = v < 0 ? 0ull - (unsigned long long)v :
				       (unsigned long long)v;
	char digits[24];
	int n = 0, len = 0;

	do {
		digits[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (signbit(d))
		buf[len++] = '-';
	while (n)
		buf[len++] = digits[--n];
	buf[len] = '\0';
	return len;
}

/* cJSON's test that a number read back is the number printed. */
static bool same_double(double a, double b)
{
	double most = fabs(a) > fabs(b) ? fabs(a) : fabs(b);

	return fabs(a - b) <= most * DBL_EPSILON;
}

/*
 * A number as cJSON prints it: null when not finite; else the shorter of
 * 15 or 17 significant digits that reads back, with '.' whatever the
 * locale says. Whole numbers below 1e15 are their digits (-0 included):
 * written directly, without the round trip.
 */
static int number_text(char *buf, double d, char point)
{
	double back = 0;
	int n;

	if (isnan(d) || isinf(d))
		return sprintf(buf, "null");
	if (fabs(d) < 1e15 && d == floor(d))
		return integer_text(buf, d);
	n = sprintf(buf, "%1.15g", d);
	if (sscanf(buf, "%lg", &back) != 1 || !same_double(back, d))
		n = sprintf(buf, "%1.17g", d);
	for (int i = 0; i < n; i++) {
		if (buf[i] == point)
			buf[i] = '.';
	}
	return n;
}

void jsonw_number(struct jsonw *w, const char *key, double d)
{
	char buf[64];
	int n = number_text(buf, d, w->point);

	value_start(w, key);
	put(w, buf, (size_t)n);
}
