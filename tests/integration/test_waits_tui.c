/*
 * Waits in progress and while held on the live screen, on wl_waits
 * under tmux: with the collector loaded, the threads view (H) shows the
 * blocked waiter at its call site, held by the holder in pause(); the
 * details of a holder blocked in read() with the lock held say so under
 * "while held".
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../unit/check.h"
#include "tmux.h"

/* Start qsptop ARGS on `wl_waits MODE` in session name. */
static bool start_waits(const char *name, const char *args, const char *mode)
{
	char wl[PATH_MAX], program[PATH_MAX + 32];

	join(wl, build, "/tests/wl_waits");
	quoted(program, sizeof(program), wl);
	strcat(program, " ");
	strcat(program, mode);
	return start_sized(name, WIDTH, HEIGHT, "", args, program);
}

/* The seconds line i says a thread is blocked for, or -1. */
static double blocked_s(int i)
{
	char line[4096], unit[4] = "";
	const char *p;
	double v;

	screen_line(i, line, sizeof(line));
	p = strstr(line, "blocked ");
	if (p == NULL || sscanf(p + 8, "%lf%3[a-zµ]", &v, unit) != 2)
		return -1;
	return strcmp(unit, "s") == 0 ? v : 0;
}

/*
 * The threads view over the collector: the waiter, its site and holder,
 * blocked since its wait began (from outside, it would be since the
 * view first looked).
 */
static void test_threads_view(void)
{
	int waiter;

	if (!start_waits("threads", "-d 0.3", "sleep"))
		return;
	SEE("the table", "waiter_blocks");
	usleep(1500 * 1000);	/* the waiter has waited 1.5 s at least */
	keys("H", NULL);
	SEE("H: the threads view", "blocked on locks");
	SEE("H: the waiter's site", "at waiter_blocks");
	waiter = line_with("at waiter_blocks", 0);
	CHECK_SCREEN(waiter >= 0 && blocked_s(waiter) >= 1.5,
		     "H: expected the waiter blocked >= 1.5 s, got %.2f s",
		     waiter >= 0 ? blocked_s(waiter) : -1);
	CHECK_SCREEN(waiter >= 0 && line_with("pause()", waiter) >= waiter,
		     "H: expected the waiter held by a thread in pause()");
	quit_session("threads");
}

/* The holder's details: its caused wait spent in read(). */
static void test_while_held(void)
{
	if (!start_waits("held", "-d 0.3 --holders", "read"))
		return;
	SEE("read: the program's end", "exited");
	keys("c", NULL);
	SEE("c: the culprits", "culprits view");
	keys("Home", "Enter", NULL);
	SEE("holder_holds' details", "holder_holds");
	SEE("holder_holds' details", "while held");
	SEE("holder_holds' details: read()", "in read()");
	quit_session("held");
}

int main(void)
{
	if (!tmux_begin("waits"))
		return check_summary();
	test_threads_view();
	test_while_held();
	return tmux_end("test_waits_tui");
}
