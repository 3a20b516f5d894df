/* The off-screen cell grid everything is drawn into. */
#include <langinfo.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "screen.h"
#include "xalloc.h"

struct screen *screen_new(int w, int h)
{
	struct screen *s = xcalloc(1, sizeof(*s));

	screen_resize(s, w, h);
	return s;
}

void screen_free(struct screen *s)
{
	if (s == NULL)
		return;
	free(s->cells);
	free(s);
}

void screen_resize(struct screen *s, int w, int h)
{
	s->w = w > 0 ? w : 0;
	s->h = h > 0 ? h : 0;
	free(s->cells);
	s->cells = xcalloc((size_t)s->w * (size_t)s->h + 1, sizeof(struct cell));
	screen_clear(s, SLOT_NORMAL);
}

static struct cell *cell_at(struct screen *s, int x, int y)
{
	return &s->cells[(size_t)y * (size_t)s->w + (size_t)x];
}

void screen_clear(struct screen *s, enum theme_slot slot)
{
	for (int y = 0; y < s->h; y++)
		screen_fill(s, 0, y, s->w, slot, L' ');
}

void screen_fill(struct screen *s, int x, int y, int n, enum theme_slot slot,
		 wchar_t ch)
{
	if (y < 0 || y >= s->h)
		return;
	for (int i = x < 0 ? -x : 0; i < n && x + i < s->w; i++) {
		struct cell *c = cell_at(s, x + i, y);

		c->ch = ch;
		c->slot = (unsigned char)slot;
	}
}

void screen_paint(struct screen *s, int x, int y, int n, enum theme_slot slot)
{
	if (y < 0 || y >= s->h)
		return;
	for (int i = x < 0 ? -x : 0; i < n && x + i < s->w; i++)
		cell_at(s, x + i, y)->slot = (unsigned char)slot;
}

/*
 * Whether a byte below 0x80 is always that ASCII character in the
 * locale's encoding (UTF-8 and the single-byte ones): text then needs no
 * mbrtowc() for it, which cost a sixth of a batch refresh.
 */
static bool ascii_is_itself(void)
{
	return MB_CUR_MAX == 1 || strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
}

/* The character at text, of *n bytes: '?' when it is not one column. */
static wchar_t char_at(const char *text, size_t *n, mbstate_t *st,
		       bool ascii)
{
	wchar_t wc;

	if (ascii && (unsigned char)*text < 0x80) {
		*n = 1;
		return *text < ' ' || *text == 0x7f ? L'?' : (wchar_t)*text;
	}
	*n = mbrtowc(&wc, text, MB_CUR_MAX, st);
	if (*n == (size_t)-1 || *n == (size_t)-2) {
		*n = 1;
		memset(st, 0, sizeof(*st));
		return L'?';
	}
	return wc < L' ' || wcwidth(wc) != 1 ? L'?' : wc;
}

int screen_puts(struct screen *s, int x, int y, enum theme_slot slot,
		const char *text, int max)
{
	bool ascii = ascii_is_itself();
	mbstate_t st;
	int col = 0;

	memset(&st, 0, sizeof(st));
	if (max < 0)
		max = s->w - x;
	while (*text && col < max) {
		size_t n;
		wchar_t wc = char_at(text, &n, &st, ascii);

		if (y >= 0 && y < s->h && x + col >= 0 && x + col < s->w) {
			struct cell *c = cell_at(s, x + col, y);

			c->ch = wc;
			c->slot = (unsigned char)slot;
		}
		col++;
		text += n;
	}
	return col;
}

int screen_width(const char *text)
{
	bool ascii = ascii_is_itself();
	mbstate_t st;
	int col = 0;

	memset(&st, 0, sizeof(st));
	while (*text) {
		size_t n;

		(void)char_at(text, &n, &st, ascii);
		col++;
		text += n;
	}
	return col;
}

int screen_printf(struct screen *s, int x, int y, enum theme_slot slot,
		  const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return screen_puts(s, x, y, slot, buf, -1);
}

void screen_line(const struct screen *s, int y, char *out, size_t size)
{
	size_t len = 0, keep = 0;
	mbstate_t st;

	memset(&st, 0, sizeof(st));
	out[0] = '\0';
	if (y < 0 || y >= s->h || size == 0)
		return;
	for (int x = 0; x < s->w; x++) {
		char mb[MB_LEN_MAX];
		size_t n = wcrtomb(mb, s->cells[(size_t)y * (size_t)s->w + (size_t)x].ch, &st);

		if (n == (size_t)-1) {
			mb[0] = '?';
			n = 1;
		}
		if (len + n >= size)
			break;
		memcpy(out + len, mb, n);
		len += n;
		if (mb[0] != ' ')
			keep = len;
	}
	out[keep] = '\0';
}
