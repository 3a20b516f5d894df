/*
 * The holders on the live screen (issue 24), on `wl_blame live` under
 * tmux: holders are not tracked until c is first pressed (no "holders
 * on", no holders' columns); c turns them on and flips the table to the culprit view, which the header names,
 * sorted by CAUSED/s with the holders' columns shown and the holder's
 * row first; its details list the waiter sites it made wait (blocking);
 * c again brings the victims back, whose details list the holder sites
 * their waits were spent behind (blocked by).
 */
#include <stdio.h>
#include <string.h>

#include "../unit/check.h"
#include "tmux.h"

/* The first row of the table (the line after CALL SITE's) holds text. */
static bool first_row_has(const void *text)
{
	char line[4096];
	int titles = line_with("CALL SITE", 0);

	if (titles < 0)
		return false;
	screen_line(titles + 1, line, sizeof(line));
	return strstr(line, text) != NULL;
}

#define FIRST_ROW(context, text)                                           \
	CHECK_SCREEN(wait_until(first_row_has, text, TIMEOUT_MS),          \
		     "%s: expected the first row to be %s's", context, text)

static void test_culprits(void)
{
	char wl[PATH_MAX], program[PATH_MAX + 16];

	join(wl, build, "/tests/wl_blame");
	quoted(program, sizeof(program), wl);
	strcat(program, " live");
	if (!start_sized("culprits", WIDTH, HEIGHT, "", "-d 0.3", program))
		return;
	SEE("the victims", "split_wait");
	FIRST_ROW("victims", "split_wait");
	CHECK_SCREEN(line_with("holders on", 0) < 0 &&
		     line_with("CAUSED/s", 0) < 0,
		     "before c: expected no \"holders on\" and no CAUSED/s");
	keys("c", NULL);
	SEE("c: holders tracked from now", "holders on");
	SEE("c: the header", "culprits view, sort caused");
	SEE("c: the holders' columns", "CAUSED/s");
	SEE("c: the holders' columns", "HOLD");
	FIRST_ROW("culprits", "hold_long");
	keys("Enter", NULL);
	SEE("hold_long's details", "blocking");
	SEE("hold_long's details: the waiter", "WAITER SITE");
	CHECK_SCREEN(line_with("split_wait", line_with("WAITER SITE", 0)) > 0,
		     "hold_long's details: split_wait under WAITER SITE");
	keys("Escape", NULL);
	SEE("back to the table", "CALL SITE");
	keys("c", NULL);
	STATUS("c again", "victims");
	FIRST_ROW("victims again", "split_wait");
	keys("Enter", NULL);
	SEE("split_wait's details", "blocked by");
	SEE("split_wait's details: the holders", "HOLDER SITE");
	SEE("split_wait's details: the short holds", "hold_short");
	CHECK_SCREEN(line_with("hold_long", line_with("HOLDER SITE", 0)) > 0 &&
		     line_with("hold_short", line_with("HOLDER SITE", 0)) > 0,
		     "split_wait's details: hold_long and hold_short under "
		     "HOLDER SITE");
	keys("Escape", NULL);
	quit_session("culprits");
}

int main(void)
{
	if (!tmux_begin("blame"))
		return check_summary();
	test_culprits();
	return tmux_end("test_blame_tui");
}
