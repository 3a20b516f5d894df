/* Laying out a line of items that give way whole, by priority. */
#include <string.h>

#include "format.h"
#include "line.h"
#include "screen.h"

static bool present(const struct line_item *it)
{
	return it->text != NULL && it->text[0] != '\0';
}

/* Columns the shown items (only the right ones if asked) take, sep_w apart. */
static int span(const struct line_item *items, size_t n, int sep_w,
		bool right_only)
{
	int w = 0, shown = 0;

	for (size_t i = 0; i < n; i++) {
		if (items[i].x < 0 || (right_only && !items[i].right))
			continue;
		w += items[i].width;
		shown++;
	}
	return shown > 1 ? w + (shown - 1) * sep_w : w;
}

/* The shown item to give way first: lowest priority, the last of equals. */
static struct line_item *weakest(struct line_item *items, size_t n)
{
	struct line_item *w = NULL;

	for (size_t i = 0; i < n; i++) {
		if (items[i].x >= 0 && (w == NULL || items[i].priority <= w->priority))
			w = &items[i];
	}
	return w;
}

/* Mark what shows (x 0, for now) and how wide, dropping or cutting items. */
static void choose(struct line_item *items, size_t n, int width, int sep_w)
{
	int over;

	for (size_t i = 0; i < n; i++) {
		items[i].x = present(&items[i]) ? 0 : -1;
		items[i].width = present(&items[i]) ? screen_width(items[i].text) : 0;
	}
	while ((over = span(items, n, sep_w, false) - width) > 0) {
		struct line_item *w = weakest(items, n);

		if (w->shrink && w->width - over >= LINE_SHRINK_MIN) {
			w->width -= over;
			return;
		}
		w->x = -1;
		w->width = 0;
	}
}

/* Append s to buf, as much of it as there is room for. */
static void append(char *buf, size_t size, size_t *len, const char *s)
{
	size_t n = strlen(s);

	if (n >= size - *len)
		n = size - *len - 1;
	memcpy(buf + *len, s, n);
	*len += n;
	buf[*len] = '\0';
}

/* Append the item's text, cut to its width, at column *col of buf. */
static void put(char *buf, size_t size, size_t *len, int *col,
		struct line_item *it)
{
	char cut[1024];

	format_fit_right(cut, sizeof(cut), it->text, it->width);
	it->x = *col;
	append(buf, size, len, cut);
	*col += it->width;
}

/* Append spaces up to column to. */
static void pad(char *buf, size_t size, size_t *len, int *col, int to)
{
	for (; *col < to && *len + 1 < size; (*col)++)
		buf[(*len)++] = ' ';
	buf[*len] = '\0';
}

/* Append the items of one side (right or not), sep between them. */
static void put_side(struct line_item *items, size_t n, bool right,
		     const char *sep, char *buf, size_t size, size_t *len,
		     int *col)
{
	int sep_w = screen_width(sep);
	bool first = true;

	for (size_t i = 0; i < n; i++) {
		if (items[i].x < 0 || items[i].right != right)
			continue;
		if (!first) {
			append(buf, size, len, sep);
			*col += sep_w;
		}
		put(buf, size, len, col, &items[i]);
		first = false;
	}
}

int line_layout(struct line_item *items, size_t n, int width, const char *sep,
		char *buf, size_t size)
{
	int sep_w = screen_width(sep), right_w, col = 0;
	size_t len = 0;

	buf[0] = '\0';
	choose(items, n, width, sep_w);
	right_w = span(items, n, sep_w, true);
	put_side(items, n, false, sep, buf, size, &len, &col);
	if (right_w > 0) {
		pad(buf, size, &len, &col, width - right_w);
		put_side(items, n, true, sep, buf, size, &len, &col);
	}
	return col;
}
