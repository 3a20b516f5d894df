/*
 * The terminal: the one module that uses curses. It shows screen buffers,
 * maps theme styles to colour pairs and turns curses keys into ui keys.
 */
#include <curses.h>
#include <stdlib.h>
#include <string.h>

#include "term.h"
#include "xalloc.h"

#define ESC_DELAY_MS 25

static bool active;
static bool colors;
static attr_t slot_attr[SLOT_COUNT];

static void term_cleanup(void)
{
	term_end();
}

void term_begin(void)
{
	if (getenv("ESCDELAY") == NULL)
		set_escdelay(ESC_DELAY_MS);
	if (initscr() == NULL)
		fatal("cannot initialise the terminal (TERM=%s)",
		      getenv("TERM") ? getenv("TERM") : "unset");
	active = true;
	fatal_cleanup = term_cleanup;
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	/* Home and End as vt220 and tmux send them, whatever TERM says. */
	define_key("\033[1~", KEY_HOME);
	define_key("\033[4~", KEY_END);
	define_key("\033[H", KEY_HOME);
	define_key("\033[F", KEY_END);
	nodelay(stdscr, TRUE);
	curs_set(0);
	colors = has_colors() && start_color() == OK;
	if (colors)
		use_default_colors();
}

void term_end(void)
{
	if (!active)
		return;
	active = false;
	endwin();
}

bool term_has_colors(void)
{
	return colors;
}

/* A theme colour this terminal can show; the 16 named ones fold to 8. */
static short fit_color(int c)
{
	if (c < 0)
		return -1;
	if (c < COLORS)
		return (short)c;
	return (short)(c < 16 ? c - 8 : c % 8);
}

void term_apply_theme(const struct theme *t)
{
	for (int i = 0; i < SLOT_COUNT; i++) {
		const struct theme_style *st = &t->slot[i];
		attr_t a = 0;

		if (colors) {
			init_pair((short)(i + 1), fit_color(st->fg), fit_color(st->bg));
			a |= COLOR_PAIR(i + 1);
		}
		if (st->attrs & ATTR_BOLD)
			a |= A_BOLD;
		if (st->attrs & ATTR_DIM)
			a |= A_DIM;
		if (st->attrs & ATTR_UNDERLINE)
			a |= A_UNDERLINE;
		if (st->attrs & ATTR_REVERSE)
			a |= A_REVERSE;
		slot_attr[i] = a;
	}
}

void term_size(int *w, int *h)
{
	*w = COLS;
	*h = LINES;
}

/* Copy one line, one run of same-slot cells at a time. */
static void show_line(const struct screen *s, int y)
{
	wchar_t run[1024];

	for (int x = 0; x < s->w;) {
		const struct cell *c = &s->cells[(size_t)y * (size_t)s->w + (size_t)x];
		int slot = c->slot, n = 0;

		while (x + n < s->w && n < 1023 && c[n].slot == slot) {
			run[n] = c[n].ch;
			n++;
		}
		run[n] = L'\0';
		attrset(slot_attr[slot < SLOT_COUNT ? slot : 0]);
		/* The last cell of the screen may not scroll it: stop one short. */
		if (y == s->h - 1 && x + n == s->w)
			n--;
		if (n > 0)
			mvaddnwstr(y, x, run, n);
		x += n > 0 ? n : 1;
	}
}

void term_show(const struct screen *s)
{
	for (int y = 0; y < s->h && y < LINES; y++)
		show_line(s, y);
	attrset(A_NORMAL);
	refresh();
}

/* Curses keys that mean something to the ui. */
static const struct { int from, to; } key_map[] = {
	{ KEY_UP, K_UP }, { KEY_DOWN, K_DOWN }, { KEY_PPAGE, K_PGUP },
	{ KEY_NPAGE, K_PGDN }, { KEY_HOME, K_HOME }, { KEY_END, K_END },
	{ KEY_LEFT, K_LEFT }, { KEY_RIGHT, K_RIGHT }, { KEY_ENTER, K_ENTER },
	{ '\n', K_ENTER }, { '\r', K_ENTER }, { 27, K_ESC },
	{ KEY_BACKSPACE, K_BACKSPACE }, { 127, K_BACKSPACE }, { 8, K_BACKSPACE },
	{ KEY_F(1), K_F1 }, { KEY_F(6), K_F6 }, { KEY_F(10), K_F10 },
	{ KEY_RESIZE, K_RESIZE },
};

int term_key(void)
{
	int ch = getch();

	if (ch == ERR)
		return KEY_NONE;
	for (size_t i = 0; i < sizeof(key_map) / sizeof(key_map[0]); i++) {
		if (key_map[i].from == ch)
			return key_map[i].to;
	}
	return ch >= ' ' && ch < 0x7f ? ch : K_UNKNOWN;
}
