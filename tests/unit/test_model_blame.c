/*
 * Who blocks whom in the model: a waiter row's waits behind holder sites
 * (blocked_by) count as the caused wait of the holder's row on the same
 * lock, per interval too; lines coalesced by object sum them; a reset
 * zeroes them; a holder not known, or without a row, is kept on the
 * waiter's side only. Hold times travel in the counts and estimate the
 * time held; the longest hold is kept since reset. Holder stacks split
 * a holder row's caused wait by their releases, exactly.
 */
#include "model_fixture.h"

#define LOCK 0xa0
#define OTHER_LOCK 0xb0
#define WAITER 0x100
#define HOLDER 0x200
#define HOLDER2 0x300

/* Waits of row behind (site, mutex): count waits of wait_ns in all. */
static void blame(struct model *m, uint32_t row, uint64_t site,
		  uint64_t count, uint64_t wait_ns)
{
	struct wait_counts w = { .count = count, .wait_ns = wait_ns };

	model_apply_blame(m, row, site, LOCK_MUTEX, &w);
}

/* The view row of site on object, or NULL. */
static const struct view_row *line_of(const struct view_row *v, size_t n,
				      uint64_t site, uint64_t object)
{
	for (size_t i = 0; i < n; i++) {
		if (v[i].site == site && v[i].object == object)
			return &v[i];
	}
	return NULL;
}

/* A model of a waiter, two holders of its lock, and a holder of another. */
static struct model *fixture(void)
{
	struct model *m = model_new();

	def(m, 0, LOCK_MUTEX, WAITER, LOCK);
	def(m, 1, LOCK_MUTEX, HOLDER, LOCK);
	def(m, 2, LOCK_MUTEX, HOLDER2, LOCK);
	def(m, 3, LOCK_MUTEX, HOLDER, OTHER_LOCK);
	tick(m, 0);
	add(m, 0, 20, 20, 440, 40);
	add(m, 1, 10, 0, 0, 0);
	add(m, 2, 10, 0, 0, 0);
	blame(m, 0, HOLDER, 10, 400);
	blame(m, 0, HOLDER2, 10, 40);
	tick(m, 1000000000);
	return m;
}

static void test_caused_on_holder_rows(void)
{
	struct model *m = fixture();
	struct view_row *v;
	size_t n = view(m, COALESCE_NONE, SORT_WAIT, false, NULL, &v);
	const struct view_row *h = line_of(v, n, HOLDER, LOCK);
	const struct view_row *h2 = line_of(v, n, HOLDER2, LOCK);
	const struct view_row *other = line_of(v, n, HOLDER, OTHER_LOCK);
	const struct view_row *w = line_of(v, n, WAITER, LOCK);

	CHECK(h && h2 && other && w, "four lines");
	if (h && h2 && other && w) {
		CHECK_U64(h->c.calls.caused_wait_ns, 400);
		CHECK_U64(h2->c.calls.caused_wait_ns, 40);
		CHECK_U64(other->c.calls.caused_wait_ns, 0);	/* another lock */
		CHECK_U64(w->c.calls.caused_wait_ns, 0);
		CHECK_DBL(h->caused_per_s, 400);
		CHECK_DBL(field_by_key("caused")->value(h), 400);
	}
	free(v);
	model_free(m);
}

static void test_blocked_by_and_blocking(void)
{
	struct model *m = fixture();
	struct blame_view b[4];
	struct view_row *v;
	size_t n = view(m, COALESCE_NONE, SORT_WAIT, false, NULL, &v);
	const struct view_row *w = line_of(v, n, WAITER, LOCK);
	const struct view_row *h = line_of(v, n, HOLDER, LOCK);
	size_t k;

	k = w ? model_blame(m, w, false, b, 4) : 0;
	CHECK(k == 2 && b[0].site == HOLDER && b[0].w.wait_ns == 400 &&
	      b[0].w.count == 10 && b[1].site == HOLDER2 && b[1].w.wait_ns == 40,
	      "blocked_by: expected HOLDER 400 ns in 10, then HOLDER2 40 ns; "
	      "got %zu entries", k);
	k = h ? model_blame(m, h, true, b, 4) : 0;
	CHECK(k == 1 && b[0].site == WAITER && b[0].w.wait_ns == 400,
	      "blocking: expected WAITER 400 ns, got %zu entries", k);
	free(v);
	model_free(m);
}

/* Coalesced by object, the lock's line has all its holders' caused wait. */
static void test_coalesced(void)
{
	struct model *m = fixture();
	struct view_row *v;
	size_t n = view(m, COALESCE_OBJECT, SORT_WAIT, false, NULL, &v);
	const struct view_row *lock = NULL;

	for (size_t i = 0; i < n; i++)
		if (v[i].object == LOCK && v[i].type == LOCK_MUTEX)
			lock = &v[i];
	CHECK(lock != NULL, "a line of the lock");
	if (lock)
		CHECK_U64(lock->c.calls.caused_wait_ns, 440);
	free(v);
	model_free(m);
}

/* A reset zeroes blame; an unknown holder stays on the waiter's side. */
static void test_reset_and_unknown(void)
{
	struct model *m = fixture();
	struct blame_view b[4];
	struct view_row *v;
	size_t n;

	model_reset(m);
	blame(m, 0, 0, 1, 7);
	n = view(m, COALESCE_NONE, SORT_WAIT, false, NULL, &v);
	CHECK_U64(line_of(v, n, HOLDER, LOCK)->c.calls.caused_wait_ns, 0);
	n = model_blame(m, line_of(v, n, WAITER, LOCK), false, b, 4);
	CHECK(n == 1 && b[0].site == 0 && b[0].w.wait_ns == 7,
	      "after a reset: expected only the unknown holder's 7 ns, got %zu "
	      "entries", n);
	free(v);
	model_free(m);
}

/* 5 holds timed of 20 acquisitions, 500 ns: 100 a hold, 2,000 in all. */
static void test_hold_estimate(void)
{
	struct model *m = model_new();
	struct proto_delta d = { .row = 0, .c.calls = { .acquisitions = 20,
				 .hold_ns = 500, .holds_timed = 5 },
				 .max_hold_ns = 300 };
	struct view_row *v;

	def(m, 0, LOCK_MUTEX, HOLDER, LOCK);
	tick(m, 0);
	model_apply_delta(m, &d);
	tick(m, 4000);
	view(m, COALESCE_NONE, SORT_WAIT, false, NULL, &v);
	CHECK_DBL(field_by_json("avg_hold_ns")->value(&v[0]), 100);
	CHECK_DBL(field_by_json("hold_ns")->value(&v[0]), 2000);
	CHECK_DBL(field_by_json("held_share")->value(&v[0]), 0.5);
	CHECK_DBL(field_by_json("max_hold_ns")->value(&v[0]), 300);
	free(v);
	model_reset(m);
	view(m, COALESCE_NONE, SORT_WAIT, false, NULL, &v);
	CHECK_U64(v[0].max_hold_ns, 0);	/* a reset clears it */
	free(v);
	model_free(m);
}

/*
 * Holder stacks: releases through two stacks of HOLDER's row (1 and 2)
 * split its caused wait (400 ns) 133 : 267, the rest of the rounding
 * to the heaviest; another row's stack stays its own; a stack defined
 * again is the same; a reset zeroes the releases.
 */
static void test_holder_stacks(void)
{
	static const uint64_t a[] = { 0x1001, 0x2001 }, b[] = { 0x1002 };
	struct model *m = fixture();
	uint32_t sa = model_holder_define(m, a, 2);
	uint32_t sb = model_holder_define(m, b, 1);
	struct holder_view hv[4];
	struct view_row *v;
	size_t n, nh;
	const struct view_row *h;

	CHECK_U64(model_holder_define(m, a, 2), sa);	/* defined again: one */
	model_apply_holder(m, 1, sa, 1);
	model_apply_holder(m, 1, sb, 2);
	model_apply_holder(m, 2, sa, 5);
	n = view(m, COALESCE_NONE, SORT_WAIT, false, NULL, &v);
	h = line_of(v, n, HOLDER, LOCK);
	nh = h ? model_holder_stacks(m, h, hv, 4) : 0;
	CHECK_U64(nh, 2);
	if (nh == 2) {
		CHECK(hv[0].depth == 1 && hv[0].frames[0] == 0x1002,
		      "the stack of most releases first");
		CHECK_U64(hv[0].releases, 2);
		CHECK_U64(hv[0].caused_ns, 267);
		CHECK_U64(hv[1].caused_ns, 133);
	}
	free(v);
	model_reset(m);
	n = view(m, COALESCE_NONE, SORT_WAIT, false, NULL, &v);
	h = line_of(v, n, HOLDER, LOCK);
	CHECK_U64(h ? model_holder_stacks(m, h, hv, 4) : 9, 0);
	free(v);
	model_free(m);
}

int main(void)
{
	test_caused_on_holder_rows();
	test_blocked_by_and_blocking();
	test_coalesced();
	test_reset_and_unknown();
	test_hold_estimate();
	test_holder_stacks();
	return fixture_summary();
}
