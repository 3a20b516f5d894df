/*
 * Waits in progress in the model: a line counts them (wait, contended,
 * max) and its rate what they grew by; when a wait ends, its real count
 * replaces the estimate without counting any time twice, an exit's fold
 * included. While held: holder rows' totals sum over a line, a reset
 * zeroes them.
 */
#include "model_fixture.h"

#define LOCK 0xa0
#define SITE 0x100
#define HOLDER 0x200
#define S 1000000000ull

/* The waits in progress: one on row 0 of blocked_ns, or none. */
static void waits(struct model *m, uint64_t blocked_ns)
{
	struct model_wait w = { .tid = 42, .row = 0, .blocked_ns = blocked_ns,
				.holder = 43 };

	model_set_waits(m, &w, blocked_ns ? 1 : 0);
}

/* The line of row 0, uncoalesced. */
static struct view_row line(const struct model *m)
{
	struct view_row *v = NULL, r = { 0 };
	size_t n = view(m, COALESCE_NONE, SORT_WAIT, false, NULL, &v);

	for (size_t i = 0; i < n; i++)
		if (v[i].site == SITE)
			r = v[i];
	free(v);
	return r;
}

/* A wait seen in progress at 1 s and 2 s, then ended at 2.5 s. */
static void test_estimate_then_real(void)
{
	struct model *m = model_new();
	struct view_row r;

	def(m, 0, LOCK_MUTEX, SITE, LOCK);
	tick(m, 0);
	tick(m, S);
	waits(m, S);
	tick(m, 2 * S);
	r = line(m);
	CHECK(r.c.calls.wait_ns == S && r.c.calls.contended == 1 &&
	      r.max_wait_ns == S,
	      "in progress 1 s: expected wait 1 s, 1 contended, max 1 s; got "
	      "%" PRIu64 " ns, %" PRIu64 ", max %" PRIu64, r.c.calls.wait_ns,
	      r.c.calls.contended, r.max_wait_ns);
	CHECK(near(r.wait_per_s, 1e9), "in progress: 1 s/s, got %.0f",
	      r.wait_per_s);
	waits(m, 2 * S);
	tick(m, 3 * S);
	r = line(m);
	CHECK(r.c.calls.wait_ns == 2 * S && near(r.wait_per_s, 1e9),
	      "in progress 2 s: expected 2 s and 1 s/s, got %" PRIu64 " ns, %.0f",
	      r.c.calls.wait_ns, r.wait_per_s);
	add(m, 0, 1, 1, 5 * S / 2, 5 * S / 2);
	waits(m, 0);
	tick(m, 4 * S);
	r = line(m);
	CHECK(r.c.calls.wait_ns == 5 * S / 2 && r.c.calls.contended == 1,
	      "ended at 2.5 s: expected 2.5 s once, 1 contended; got %" PRIu64
	      " ns, %" PRIu64, r.c.calls.wait_ns, r.c.calls.contended);
	CHECK(near(r.wait_per_s, 0.5e9),
	      "ended: the last interval gains only the 0.5 s not shown, got %.0f",
	      r.wait_per_s);
	model_free(m);
}

/* The exit's fold joins two intervals: the estimate's part goes with it. */
static void test_fold(void)
{
	struct model *m = model_new();
	struct view_row r;

	def(m, 0, LOCK_MUTEX, SITE, LOCK);
	tick(m, 0);
	waits(m, S);
	tick(m, S);
	add(m, 0, 1, 1, 3 * S / 2, 3 * S / 2);
	waits(m, 0);
	tick(m, 3 * S / 2);
	model_fold_last_interval(m);
	r = line(m);
	CHECK(r.c.calls.wait_ns == 3 * S / 2 && near(r.wait_per_s, 1e9),
	      "folded: expected 1.5 s over 1.5 s, got %" PRIu64 " ns, %.0f/s",
	      r.c.calls.wait_ns, r.wait_per_s);
	model_free(m);
}

/* A wait older than counting adds one interval per interval, not its age. */
static void test_old_wait_rate(void)
{
	struct model *m = model_new();
	struct view_row r;

	def(m, 0, LOCK_MUTEX, SITE, LOCK);
	tick(m, 0);
	tick(m, S);
	waits(m, 5 * S);
	tick(m, 2 * S);
	r = line(m);
	CHECK(r.c.calls.wait_ns == 5 * S && near(r.wait_per_s, 1e9),
	      "a wait of 5 s seen first: expected 5 s at 1 s/s, got %" PRIu64
	      " ns at %.0f/s", r.c.calls.wait_ns, r.wait_per_s);
	model_free(m);
}

/* While held sums over a line's rows; a reset zeroes it. */
static void test_while_held(void)
{
	struct model *m = model_new();
	struct proto_while_held d = { .running_ns = 10, .lock_wait_ns = 5,
		.nsys = 1, .sys = { { 0, 100 } } };
	struct view_row line_all = { .type = LOCK_MUTEX, .site = HOLDER };
	struct held_view h;

	def(m, 0, LOCK_MUTEX, HOLDER, LOCK);
	def(m, 1, LOCK_MUTEX, HOLDER, LOCK + 8);
	def(m, 2, LOCK_MUTEX, SITE, LOCK);
	model_apply_while_held(m, 0, &d, 3);
	model_apply_while_held(m, 1, &d, 0);
	CHECK(model_while_held(m, &line_all, &h) && h.running_ns == 20 &&
	      h.lock_wait_ns == 10 && h.nsys == 1 && h.sys[0].ns == 200 &&
	      h.lock_row == 3,
	      "both objects' rows sum: expected 20, 10, read 200, lock row 3; "
	      "got %" PRIu64 ", %" PRIu64 ", %zu calls, row %u", h.running_ns,
	      h.lock_wait_ns, h.nsys, h.lock_row);
	line_all.site = SITE;
	CHECK(!model_while_held(m, &line_all, &h), "a waiter's line has none");
	line_all.site = HOLDER;
	model_reset(m);
	CHECK(model_while_held(m, &line_all, &h) && h.running_ns == 0 &&
	      h.nsys == 0, "a reset zeroes it: got %" PRIu64 ", %zu calls",
	      h.running_ns, h.nsys);
	model_free(m);
}

int main(void)
{
	test_estimate_then_real();
	test_fold();
	test_old_wait_rate();
	test_while_held();
	return fixture_summary();
}
