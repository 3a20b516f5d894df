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

/*
 * a then b at ab_outer/ab_inner, then b then a at ba_outer/ba_inner: one
 * warning, first and then the order seen first, reversed_at the other,
 * its acquisition with a stack that starts at its own site.
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
	CHECK(outer1 == ab_out && inner1 == ab_in,
	      "reversed: first then then is the order seen first, order.c:%d "
	      "then :%d, got :%d then :%d", ab_out, ab_in, outer1, inner1);
	CHECK(outer2 == ba_out && inner2 == ba_in,
	      "reversed: reversed_at holds order.c:%d and takes :%d, got :%d "
	      "and :%d", ba_out, ba_in, outer2, inner2);
	CHECK(str_field(first, "object") && str_field(then, "object") &&
	      strcmp(str_field(first, "object"), str_field(then, "object")) != 0,
	      "reversed: first and then are two locks");
	CHECK(line_of(cJSON_GetArrayItem(stack, 0)) == inner2,
	      "reversed: the reversed acquisition's stack starts at its site "
	      "(:%d), got :%d", inner2, line_of(cJSON_GetArrayItem(stack, 0)));
	CHECK(line_of(cJSON_GetArrayItem(cJSON_GetObjectItem(then, "stack"), 0))
	      == inner1, "reversed: then's stack starts at its site (:%d), got :%d",
	      inner1, line_of(cJSON_GetArrayItem(cJSON_GetObjectItem(then,
							"stack"), 0)));
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
