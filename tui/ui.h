/*
 * The interactive screen's state and what keys do to it. No curses: keys
 * arrive as the codes below (term.c translates), and view.c draws the
 * state into a screen buffer, so all of it is testable without a terminal.
 */
#ifndef QSPTOP_UI_H
#define QSPTOP_UI_H

#include <stdbool.h>
#include <stddef.h>

#include "app.h"
#include "column.h"
#include "model.h"
#include "tasks.h"
#include "theme.h"

/* Keys that are not characters. */
enum ui_key {
	KEY_NONE = -1,
	K_UP = 0x1000, K_DOWN, K_PGUP, K_PGDN, K_HOME, K_END, K_LEFT, K_RIGHT,
	K_ENTER, K_ESC, K_BACKSPACE, K_F1, K_F6, K_F10, K_RESIZE, K_UNKNOWN,
};

enum ui_mode { UI_TABLE, UI_DETAIL, UI_HELP, UI_THREADS };
enum ui_prompt { PROMPT_NONE, PROMPT_FILTER, PROMPT_DELAY };

/* Identifies a table row across refreshes, to keep it selected. */
struct row_key {
	enum lock_type type;
	uint64_t site;
	uint64_t object;
};

struct ui {
	struct app *app;
	enum ui_mode mode;
	enum ui_prompt prompt;
	char input[128];		/* what is typed at the prompt */
	char filter[128];		/* the applied filter */
	/*
	 * The table as shown: nrows lines, of which lines [first, first +
	 * nheld) are built, in rows. A big table is built only around what
	 * is on screen; a paused one is built whole.
	 */
	struct view_row *rows;
	struct view_cache *cache;	/* what rebuilding the table keeps */
	size_t first;
	size_t nheld;
	size_t nrows;
	struct model_stats stats;	/* the header as shown */
	size_t selected;
	size_t top;			/* first row on screen */
	int page;			/* table rows that fit on screen */
	struct row_key sel_key;
	bool has_sel_key;
	bool paused;
	/* The victims' sort, back when the culprit view (c) ends. */
	const struct field *victims_sort;
	bool victims_ascending;
	enum site_style site_style;
	int scroll;			/* detail and help screens */
	char message[256];		/* status line message, until next key */
	bool message_error;
	struct theme theme;
	char theme_names[32][64];
	size_t ntheme_names;
	bool monochrome;		/* NO_COLOR or a colourless terminal */
	bool quit;
	bool theme_changed;		/* term.c must reload colours */
	struct tasks *tasks;		/* the app's thread names (app.h) */
	long threads_ms;		/* when the threads view last looked */
	/* The file e (ext "json") and f ("folded") write; for tests. */
	char *(*export_name)(struct ui *ui, const char *ext); /* NULL = default */
};

/* Set up the state for app with its options; loads the theme. */
void ui_init(struct ui *ui, struct app *a, const char *theme_name);
void ui_free(struct ui *ui);

/* Rebuild the table from the model unless paused; keeps the selection. */
void ui_refresh(struct ui *ui);

/* Make lines [from, from + n) of the table held, building them if needed. */
void ui_hold(struct ui *ui, size_t from, size_t n);

/* Line i of the table, or NULL when it is not held. */
const struct view_row *ui_line(const struct ui *ui, size_t i);

/*
 * While the threads view is shown, look at the target's threads again
 * (now, or once an interval); whether it looked.
 */
bool ui_sample_threads(struct ui *ui, bool now);

/* Act on a key. */
void ui_key(struct ui *ui, int key);

/* Say something on the status line until the next key. */
void ui_message(struct ui *ui, bool error, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* One binding of the key table, which also writes the help screen. */
struct key_binding {
	int keys[3];
	const char *label;	/* how the help screen names the keys */
	const char *hint;	/* on the status line ("q quit"), or NULL */
	int hint_rank;		/* narrow lines keep the highest-ranked hints */
	const char *help;
	void (*act)(struct ui *ui);
};

extern const struct key_binding key_bindings[];
extern const size_t key_binding_count;

#endif
