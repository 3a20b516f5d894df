/*
 * Lock-order warnings on the live screen (issue 25), on `wl_order live`
 * under tmux with --holders: the header says LOCK ORDER: 1 once a pair
 * was taken in both orders; H shows the warning, with both orders'
 * sites, below the threads; H again brings the table back.
 */
#include <stdio.h>
#include <string.h>

#include "../unit/check.h"
#include "tmux.h"

static void test_warning_on_screen(void)
{
	char wl[PATH_MAX], program[PATH_MAX + 16], l0[1024], want[64];
	int ab_in = marker_line("order.c", "ab_inner");
	int ba_in = marker_line("order.c", "ba_inner");

	join(wl, build, "/tests/wl_order");
	quoted(program, sizeof(program), wl);
	strcat(program, " live");
	if (!start_sized("order", WIDTH, HEIGHT, "", "--holders -d 0.2", program))
		return;
	SEE("the header", "LOCK ORDER: 1");
	screen_line(0, l0, sizeof(l0));
	CHECK_SCREEN(strstr(l0, "LOCK ORDER: 1") != NULL,
		     "the first header line says LOCK ORDER: 1: \"%s\"", l0);
	GONE("the table", "pair taken in both orders");
	keys("H", NULL);
	SEE("H", "LOCK ORDER: 1 pair taken in both orders");
	snprintf(want, sizeof(want), "at order.c:%d;", ab_in);
	SEE("H: the first order's inner site", want);
	snprintf(want, sizeof(want), "taken at order.c:%d", ba_in);
	SEE("H: the reversed order's inner site", want);
	keys("H", NULL);
	SEE("H again", "CALL SITE");
	GONE("H again", "pair taken in both orders");
	quit_session("order");
}

int main(void)
{
	if (!tmux_begin("order"))
		return check_summary();
	test_warning_on_screen();
	return tmux_end("test_order_tui");
}
