/*
 * Lock-order warnings, through the real program on wl_order (issue 25):
 * a program that nests two locks a then b in one thread and b then a in
 * another, at different times, never deadlocks, finishes normally, and
 * gets exactly one warning naming both nestings' sites, though four lock
 * pairs share them; a program that always nests a then b gets none.
 */
#include <cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../unit/check.h"
#include "harness.h"

enum { RUN_TIMEOUT_MS = 120000 };

/* qsptop -b --holders --json over wl_order MODE; its snapshot. */
static cJSON *run_order(const char *mode, const char *out)
{
	char *json = tmp_path("order.json");
	struct args a = { 0 };
	struct run r;
	cJSON *snap;

	args_add(&a, qsptop, "-b", "-d", "0.5", "-w", "200", "-j", json,
		 "--holders", "--", workload, (char *)mode, NULL);
	unlink(json);
	r = run_capture(a.v, RUN_TIMEOUT_MS, 0);
	CHECK(r.status == 0, "%s: qsptop and the program exit 0, got %d: %s",
	      mode, r.status, r.err);
	if (out)
		CHECK(r.out && strstr(r.out, out),
		      "%s: batch output says \"%s\"", mode, out);
	run_free(&r);
	snap = load_json(json);
	CHECK(snap != NULL, "%s: a JSON snapshot", mode);
	return snap;
}

/* The source line of a frame object, or -1. */
static int line_of(const cJSON *frame)
{
	return frame ? (int)num_field(frame, "line") : -1;
}

/* Whether the two lines are want_a and want_b, in either order. */
static bool lines_are(int a, int b, int want_a, int want_b)
{
	return (a == want_a && b == want_b) || (a == want_b && b == want_a);
}

/*
 * a then b at ab_outer/ab_inner, b then a at ba_outer/ba_inner: one
 * warning, its two orders one each, outer sites first, its reversed
 * acquisition with a stack that starts at its own site.
 */
static void test_reversed(void)
{
	cJSON *snap = run_order("reversed", "LOCK ORDER: 1");
	const cJSON *list = cJSON_GetObjectItem(snap, "lock_order");
	const cJSON *w = cJSON_GetArrayItem(list, 0);
	const cJSON *first = cJSON_GetObjectItem(w, "first");
	const cJSON *then = cJSON_GetObjectItem(w, "then");
	const cJSON *rev = cJSON_GetObjectItem(w, "reversed_at");
	const cJSON *stack = cJSON_GetObjectItem(rev, "stack");
	int ab_out = marker_line("order.c", "ab_outer");
	int ab_in = marker_line("order.c", "ab_inner");
	int ba_out = marker_line("order.c", "ba_outer");
	int ba_in = marker_line("order.c", "ba_inner");
	int inner1 = line_of(cJSON_GetObjectItem(then, "site"));
	int inner2 = line_of(cJSON_GetObjectItem(rev, "site"));
	int outer1 = line_of(cJSON_GetObjectItem(first, "site"));
	int outer2 = line_of(cJSON_GetObjectItem(rev, "holding_site"));

	CHECK(cJSON_GetArraySize(list) == 1,
	      "reversed: exactly one lock_order warning, got %d",
	      cJSON_GetArraySize(list));
	CHECK(lines_are(inner1, inner2, ab_in, ba_in),
	      "reversed: the inner sites are order.c:%d and :%d, got :%d and :%d",
	      ab_in, ba_in, inner1, inner2);
	CHECK(lines_are(outer1, outer2, ab_out, ba_out),
	      "reversed: the outer sites are order.c:%d and :%d, got :%d and :%d",
	      ab_out, ba_out, outer1, outer2);
	CHECK((inner1 == ab_in) == (outer1 == ab_out),
	      "reversed: first and then are one order (:%d then :%d)", outer1,
	      inner1);
	CHECK(str_field(first, "object") && str_field(then, "object") &&
	      strcmp(str_field(first, "object"), str_field(then, "object")) != 0,
	      "reversed: first and then are two locks");
	CHECK(line_of(cJSON_GetArrayItem(stack, 0)) == inner2,
	      "reversed: the reversed acquisition's stack starts at its site "
	      "(:%d), got :%d", inner2, line_of(cJSON_GetArrayItem(stack, 0)));
	CHECK(num_field(w, "count") >= 1, "reversed: a count, got %.0f",
	      num_field(w, "count"));
	cJSON_Delete(snap);
}

/* a then b in both threads: no warning, and no flag in the header. */
static void test_consistent(void)
{
	cJSON *snap = run_order("consistent", NULL);
	const cJSON *list = cJSON_GetObjectItem(snap, "lock_order");

	CHECK(cJSON_IsArray(list) && cJSON_GetArraySize(list) == 0,
	      "consistent: an empty lock_order, got %d entries",
	      cJSON_GetArraySize(list));
	cJSON_Delete(snap);
}

int main(void)
{
	find_paths("/tmp/qsptop-order-XXXXXX", "wl_order");
	signal(SIGPIPE, SIG_IGN);
	test_reversed();
	test_consistent();
	remove_tmp();
	return check_summary();
}
