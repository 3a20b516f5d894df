/* Lines of items that give way whole, by priority (tui/line.c). */
#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include "../../tui/format.h"
#include "../../tui/line.h"
#include "check.h"

#define SEP " \u2502 "

struct layout_case {
	const char *what;
	int width;
	const char *want;
};

/* Header-like items: a, then b (least important), c, d (most). */
static size_t header_items(struct line_item *it)
{
	static const struct line_item items[] = {
		{ .text = "alpha 1", .priority = 5 },
		{ .text = "beta 22", .priority = 1 },
		{ .text = "gamma 333", .priority = 5 },
		{ .text = "delta 4444", .priority = 9 },
	};

	memcpy(it, items, sizeof(items));
	return sizeof(items) / sizeof(items[0]);
}

static void test_priorities(void)
{
	static const struct layout_case cases[] = {
		{ "all fit", 80, "alpha 1 \u2502 beta 22 \u2502 gamma 333 \u2502 delta 4444" },
		{ "exactly", 42, "alpha 1 \u2502 beta 22 \u2502 gamma 333 \u2502 delta 4444" },
		{ "one short: the lowest goes", 41, "alpha 1 \u2502 gamma 333 \u2502 delta 4444" },
		{ "equal priorities: the last goes first", 31, "alpha 1 \u2502 delta 4444" },
		{ "only the most important", 19, "delta 4444" },
		{ "nothing fits", 9, "" },
	};
	struct line_item it[8];
	char buf[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = header_items(it);
		int cols = line_layout(it, n, cases[i].width, SEP, buf, sizeof(buf));

		CHECK(strcmp(buf, cases[i].want) == 0, "%s (width %d): expected \"%s\", "
		      "got \"%s\"", cases[i].what, cases[i].width, cases[i].want, buf);
		CHECK(cols <= cases[i].width, "%s: %d columns in %d", cases[i].what,
		      cols, cases[i].width);
	}
}

/* The positions reported are where the texts are, -1 for those left out. */
static void test_positions(void)
{
	struct line_item it[8];
	size_t n = header_items(it);
	char buf[256];

	line_layout(it, n, 41, SEP, buf, sizeof(buf));
	CHECK(it[0].x == 0 && it[1].x == -1 && it[2].x == 10 && it[3].x == 22,
	      "positions: expected 0, -1, 10, 22, got %d, %d, %d, %d",
	      it[0].x, it[1].x, it[2].x, it[3].x);
	CHECK(it[2].width == 9 && it[1].width == 0, "widths: gamma 9 got %d, "
	      "beta (left out) 0 got %d", it[2].width, it[1].width);
}

/* Columns of a UTF-8 string; every character here is one column. */
static int columns_of(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* The byte of s at column col. */
static const char *at_column(const char *s, int col)
{
	for (; *s && col > 0; s++)
		col -= ((unsigned char)s[1] & 0xc0) != 0x80;
	return s;
}

/* At every width, every item is whole at its place or absent, nothing cut. */
static void test_whole_or_absent(void)
{
	int bad = 0;

	for (int width = 0; width <= 60 && bad < 3; width++) {
		struct line_item it[8];
		size_t n = header_items(it);
		char buf[256];

		line_layout(it, n, width, SEP, buf, sizeof(buf));
		if (columns_of(buf) > width) {
			CHECK(0, "width %d: \"%s\" is %d columns", width, buf, columns_of(buf));
			bad++;
		}
		for (size_t i = 0; i < n; i++) {
			const char *p = it[i].x >= 0 ? at_column(buf, it[i].x) : NULL;
			bool whole = p && strncmp(p, it[i].text, strlen(it[i].text)) == 0;
			bool absent = it[i].x < 0 && strstr(buf, it[i].text) == NULL;

			if (!whole && !absent) {
				CHECK(0, "width %d: \"%s\" neither whole nor absent in \"%s\"",
				      width, it[i].text, buf);
				bad++;
			}
		}
	}
	CHECK(bad == 0, "items whole or absent at widths 0-60");
}

/* A right item sits at the right end; its priority counts like any other. */
static void test_right(void)
{
	struct line_item it[] = {
		{ .text = "title", .priority = 5 },
		{ .text = "extra", .priority = 1 },
		{ .text = "PAUSED", .priority = 9, .right = true },
	};
	char buf[256];

	line_layout(it, 3, 30, SEP, buf, sizeof(buf));
	CHECK_STR(buf, "title \u2502 extra           PAUSED");
	CHECK(it[2].x == 24, "PAUSED at column 24, got %d", it[2].x);
	line_layout(it, 3, 16, SEP, buf, sizeof(buf));
	CHECK_STR(buf, "title     PAUSED");
	line_layout(it, 3, 8, SEP, buf, sizeof(buf));
	CHECK_STR(buf, "  PAUSED");
	it[2].text = NULL;
	line_layout(it, 3, 30, SEP, buf, sizeof(buf));
	CHECK_STR(buf, "title \u2502 extra");
}

/* A shrinking item is cut with an ellipsis while it keeps enough columns. */
static void test_shrink(void)
{
	struct line_item it[] = {
		{ .text = "pid 42", .priority = 9 },
		{ .text = "/usr/sbin/mariadbd --basedir=/usr", .priority = 1,
		  .shrink = true },
		{ .text = "every 1s", .priority = 5 },
	};
	char buf[256];

	line_layout(it, 3, 80, SEP, buf, sizeof(buf));
	CHECK_STR(buf, "pid 42 \u2502 /usr/sbin/mariadbd --basedir=/usr \u2502 every 1s");
	line_layout(it, 3, 38, SEP, buf, sizeof(buf));
	CHECK_STR(buf, "pid 42 \u2502 /usr/sbin/mariadb\u2026 \u2502 every 1s");
	CHECK(it[1].width == 18, "the cut item takes 18 columns, got %d", it[1].width);
	line_layout(it, 3, 17 + LINE_SHRINK_MIN + 3, SEP, buf, sizeof(buf));
	CHECK_STR(buf, "pid 42 \u2502 /usr/sb\u2026 \u2502 every 1s");
	line_layout(it, 3, 17 + LINE_SHRINK_MIN + 2, SEP, buf, sizeof(buf));
	CHECK_STR(buf, "pid 42 \u2502 every 1s");
}

/* Empty items are no items: no separator for them. */
static void test_empty(void)
{
	struct line_item it[] = {
		{ .text = "a", .priority = 1 },
		{ .text = "", .priority = 9 },
		{ .text = NULL, .priority = 9 },
		{ .text = "b", .priority = 1 },
	};
	char buf[64];

	CHECK(line_layout(it, 4, 20, "  ", buf, sizeof(buf)) == 4, "4 columns");
	CHECK_STR(buf, "a  b");
	CHECK(it[1].x == -1 && it[2].x == -1, "empty items left out");
}

/* A buffer too small holds the line's start, terminated. */
static void test_small_buffer(void)
{
	struct line_item it[8];
	size_t n = header_items(it);
	char buf[12];

	line_layout(it, n, 80, SEP, buf, sizeof(buf));
	CHECK(strlen(buf) == sizeof(buf) - 1 && strncmp(buf, "alpha 1 ", 8) == 0,
	      "small buffer: got \"%s\"", buf);
}

int main(void)
{
	if (setlocale(LC_ALL, "C.UTF-8") == NULL)
		setlocale(LC_ALL, "en_US.UTF-8");
	test_priorities();
	test_positions();
	test_whole_or_absent();
	test_right();
	test_shrink();
	test_empty();
	test_small_buffer();
	return check_summary();
}
