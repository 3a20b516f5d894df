/*
 * Unit tests of the front end's model: the counts and intervals it keeps —
 * deltas, ticks and rates, timeouts, redefinition, the trend ring, reset,
 * folded objects and the header's stats.
 */
#include "model_fixture.h"
#include "../../tui/model_impl.h"

static void test_accumulate(void)
{
	struct model *m = model_new();
	struct view_row *v;
	size_t n;

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	add(m, 0, 10, 2, 100, 60);
	add(m, 0, 20, 3, 200, 90);
	add(m, 0, 5, 1, 50, 50);
	n = view(m, COALESCE_NONE, SORT_WAIT, false, NULL, &v);
	CHECK_U64(n, 1);
	CHECK_U64(v[0].c.calls.acquisitions, 35);
	CHECK_U64(v[0].c.calls.contended, 6);
	CHECK_U64(v[0].c.calls.wait_ns, 350);
	CHECK_U64(v[0].c.calls.failed, 3);
	CHECK_U64(v[0].c.hist[3], 6);
	CHECK_U64(v[0].n_objects, 1);
	CHECK_U64(v[0].n_sites, 1);
	CHECK_U64(v[0].site, 0x100);
	CHECK_U64(v[0].object, 0xa0);
	free(v);
	model_free(m);
}

static void test_unknown_row(void)
{
	struct model *m = model_new();
	struct model_stats s;
	struct view_row *v;
	size_t n;

	add(m, 5, 1, 1, 1, 1);		/* nothing defined at all */
	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	add(m, 1, 1, 1, 1, 1);		/* in the array, never defined */
	add(m, 0, 4, 0, 40, 10);
	model_stats(m, &s);
	CHECK_U64(s.unknown_rows, 2);
	CHECK_U64(s.total.calls.acquisitions, 4);
	CHECK_U64(s.total.calls.wait_ns, 40);
	n = view(m, COALESCE_NONE, SORT_WAIT, false, NULL, &v);
	CHECK_U64(n, 1);
	CHECK_U64(v[0].c.calls.acquisitions, 4);
	free(v);
	model_free(m);
}

static void test_bad_id(void)
{
	struct model *m = model_new();
	struct proto_row r = { .id = 1u << 22 };

	CHECK(model_define_row(m, &r) == -1,
	      "define id 1<<22: expected -1, got 0");
	r.id = UINT32_MAX;
	CHECK(model_define_row(m, &r) == -1,
	      "define id UINT32_MAX: expected -1, got 0");
	def(m, 1000, LOCK_MUTEX, 0x100, 0xa0);
	model_free(m);
}

static void test_redefine_keeps_counts(void)
{
	struct model *m = model_new();
	struct view_row *v;

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	add(m, 0, 3, 1, 30, 20);
	def(m, 0, LOCK_SPIN, 0x200, 0xb0);
	CHECK_U64(view(m, COALESCE_NONE, SORT_WAIT, false, NULL, &v), 1);
	CHECK_U64(v[0].site, 0x200);
	CHECK_U64(v[0].object, 0xb0);
	CHECK_U64(v[0].type, LOCK_SPIN);
	CHECK_U64(v[0].c.calls.acquisitions, 3);
	CHECK_U64(v[0].max_wait_ns, 20);
	free(v);
	model_free(m);
}

static void test_max_not_additive(void)
{
	struct model *m = model_new();
	struct view_row *v;

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	add(m, 0, 1, 1, 100, 100);
	add(m, 0, 1, 1, 300, 300);
	add(m, 0, 1, 1, 200, 200);
	view(m, COALESCE_NONE, SORT_WAIT, false, NULL, &v);
	CHECK_U64(v[0].max_wait_ns, 300);
	CHECK_U64(v[0].c.calls.wait_ns, 600);
	free(v);
	model_free(m);
}

static void test_tick_rates(void)
{
	struct model *m = model_new();
	struct model_stats s;
	struct view_row *v;

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	def(m, 1, LOCK_MUTEX, 0x200, 0xb0);
	add(m, 0, 4, 1, 999, 999);
	tick(m, 1000000000);
	model_stats(m, &s);
	CHECK_DBL(s.interval_s, 0);	/* first tick: length unknown */
	CHECK_DBL(s.wait_per_s, 0);
	CHECK_U64(s.ticks, 1);
	CHECK_U64(s.threads_seen, 7);
	CHECK_U64(s.threads_live, 3);
	CHECK_U64(s.dropped, 11);

	add(m, 0, 10, 1, 1000000000, 5);
	add(m, 1, 2, 1, 250000000, 5);
	tick(m, 1500000000);
	model_stats(m, &s);
	CHECK_DBL(s.interval_s, 0.5);
	CHECK_DBL(s.wait_per_s, 2.5e9);
	CHECK_DBL(s.acq_per_s, 24);
	CHECK_U64(s.ticks, 2);
	view(m, COALESCE_NONE, SORT_WAIT, false, NULL, &v);
	CHECK_DBL(v[0].wait_per_s, 2e9);
	CHECK_DBL(v[0].acq_per_s, 20);
	CHECK_DBL(v[1].wait_per_s, 5e8);
	free(v);

	tick(m, 2500000000);		/* an empty interval */
	model_stats(m, &s);
	CHECK_DBL(s.interval_s, 1.0);
	CHECK_DBL(s.wait_per_s, 0);
	view(m, COALESCE_NONE, SORT_WAIT, false, NULL, &v);
	CHECK_DBL(v[0].wait_per_s, 0);
	free(v);
	model_free(m);
}

/* Lock waits and condition variable waits are counted apart, and add up. */
static void test_lock_and_cond_wait(void)
{
	struct model *m = model_new();
	struct model_stats s;

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	def(m, 1, LOCK_CONDVAR, 0x200, 0xb0);
	def(m, 2, LOCK_FUTEX, 0x300, 0xc0);
	tick(m, 1000000000);
	add(m, 0, 10, 1, 100000000, 5);
	add(m, 1, 10, 10, 900000000, 5);
	add(m, 2, 10, 1, 20000000, 5);
	tick(m, 1500000000);
	model_stats(m, &s);
	CHECK_DBL(s.lock_wait_per_s, 2.4e8);
	CHECK_DBL(s.cond_wait_per_s, 1.8e9);
	CHECK_DBL(s.lock_wait_per_s + s.cond_wait_per_s, s.wait_per_s);
	CHECK_U64(s.lock_wait_ns, 120000000);
	CHECK_U64(s.cond_wait_ns, 900000000);

	add(m, 1, 1, 1, 100000000, 5);	/* a short last interval, folded */
	tick(m, 1600000000);
	model_fold_last_interval(m);
	model_stats(m, &s);
	CHECK_DBL(s.cond_wait_per_s, 1e9 / 0.6);
	CHECK_DBL(s.lock_wait_per_s, 1.2e8 / 0.6);

	model_reset(m);
	model_stats(m, &s);
	CHECK_U64(s.lock_wait_ns, 0);
	CHECK_U64(s.cond_wait_ns, 0);
	model_free(m);
}

static void test_trend_ring(void)
{
	struct model *m = model_new();
	struct view_row *v;
	struct check_tally short_trend = { 0 }, wrapped = { 0 };

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	for (uint64_t i = 1; i <= 3; i++) {
		add(m, 0, 1, 1, i, i);
		tick(m, i * 1000);
	}
	view(m, COALESCE_NONE, SORT_WAIT, false, NULL, &v);
	for (size_t i = 0; i < TREND_LEN; i++) {
		uint64_t want = i < TREND_LEN - 3 ? 0 : i - (TREND_LEN - 3) + 1;

		TALLY(&short_trend, v[0].trend[i] == want,
		      "trend[%zu]: expected %" PRIu64 ", got %" PRIu64,
		      i, want, v[0].trend[i]);
	}
	CHECK_TALLY(&short_trend, "a 3-interval trend: zeros, then 1, 2, 3");
	free(v);
	for (uint64_t i = 4; i <= TREND_LEN + 7; i++) {
		add(m, 0, 1, 1, i, i);
		tick(m, i * 1000);
	}
	view(m, COALESCE_NONE, SORT_WAIT, false, NULL, &v);
	for (size_t i = 0; i < TREND_LEN; i++) {
		uint64_t want = 8 + i;	/* the last TREND_LEN of 1..LEN+7 */

		TALLY(&wrapped, v[0].trend[i] == want,
		      "trend[%zu]: expected %" PRIu64 ", got %" PRIu64,
		      i, want, v[0].trend[i]);
	}
	CHECK_TALLY(&wrapped, "a wrapped trend: the last TREND_LEN intervals");
	free(v);
	model_free(m);
}

/* Whether row id's line in v has the rate and trend of its history h. */
static bool rows_as_history(const struct view_row *v, size_t n, uint32_t id,
			    const uint64_t *h, size_t ticks, char *why,
			    size_t len)
{
	const struct view_row *r = find_t(v, n, 0x100 * (id + 1), 0xa0,
					  LOCK_MUTEX);

	if (r == NULL || !near(r->wait_per_s, (double)h[ticks - 1] / 1e-3)) {
		snprintf(why, len, "row %u after tick %zu: wait/s expected %g, got %g",
			 id, ticks, (double)h[ticks - 1] / 1e-3,
			 r ? r->wait_per_s : -1.0);
		return false;
	}
	for (size_t i = 0; i < TREND_LEN; i++) {
		uint64_t want = ticks + i >= TREND_LEN ?
				h[ticks + i - TREND_LEN] : 0;

		if (r->trend[i] != want) {
			snprintf(why, len, "row %u after tick %zu: trend[%zu] "
				 "expected %" PRIu64 ", got %" PRIu64,
				 id, ticks, i, want, r->trend[i]);
			return false;
		}
	}
	return true;
}

/*
 * Rows that wait now and then, quiet for a few intervals or for longer
 * than the trend, and waiting again: after every tick each row's rate is
 * its last interval's and its trend the last TREND_LEN intervals, zeros
 * for the quiet ones, as if every tick had closed every row.
 */
static void test_quiet_rows(void)
{
	enum { ROWS = 6, TICKS = 90 };
	static uint64_t h[ROWS][TICKS];
	struct model *m = model_new();
	struct check_tally t = { 0 };
	uint64_t x = 7;
	char why[160];

	for (uint32_t id = 0; id < ROWS; id++)
		def(m, id, LOCK_MUTEX, 0x100 * (id + 1), 0xa0);
	tick(m, 0);
	for (size_t k = 0; k < TICKS; k++) {
		struct view_row *v;
		size_t n;

		for (uint32_t id = 0; id < ROWS; id++) {
			/* row id is busy in bursts; row 0 never after tick 3 */
			bool busy = id == 0 ? k < 3 :
				    (k / (5 * id + 3)) % 2 == 0 && next_rand(&x) % 4;

			h[id][k] = busy ? 1 + next_rand(&x) % 1000 : 0;
			if (busy)
				add(m, id, 2, 1, h[id][k], h[id][k]);
		}
		tick(m, (k + 1) * 1000000);
		n = view(m, COALESCE_NONE, SORT_WAIT, false, NULL, &v);
		for (uint32_t id = 0; id < ROWS; id++)
			TALLY(&t, rows_as_history(v, n, id, h[id], k + 1, why,
						  sizeof(why)), "%s", why);
		free(v);
	}
	CHECK_TALLY(&t, "quiet rows: rates and trends as if every row ticked");
	model_free(m);
}

static void test_reset(void)
{
	struct model *m = model_new();
	struct model_stats s;
	struct view_row *v;

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	tick(m, 0);
	add(m, 0, 10, 4, 1000, 700);
	tick(m, 1000000000);
	model_reset(m);
	view(m, COALESCE_NONE, SORT_WAIT, false, NULL, &v);
	CHECK_U64(v[0].c.calls.acquisitions, 0);
	CHECK_U64(v[0].c.calls.wait_ns, 0);
	CHECK_U64(v[0].c.hist[3], 0);
	CHECK_U64(v[0].max_wait_ns, 0);
	CHECK_DBL(v[0].wait_per_s, 1000);	/* rates survive reset */
	CHECK_U64(v[0].trend[TREND_LEN - 1], 1000);	/* so does the trend */
	free(v);

	add(m, 0, 3, 1, 90, 50);
	def(m, 1, LOCK_MUTEX, 0x200, 0xb0);	/* defined after the reset */
	add(m, 1, 2, 2, 20, 15);
	view(m, COALESCE_NONE, SORT_TOTAL, false, NULL, &v);
	CHECK_U64(v[0].c.calls.acquisitions, 3);
	CHECK_U64(v[0].c.calls.wait_ns, 90);
	CHECK_U64(v[0].c.hist[3], 1);
	CHECK_U64(v[0].max_wait_ns, 50);
	CHECK_U64(v[1].c.calls.acquisitions, 2);
	CHECK_U64(v[1].max_wait_ns, 15);
	free(v);
	model_stats(m, &s);
	CHECK_U64(s.total.calls.acquisitions, 5);
	CHECK_U64(s.total.calls.wait_ns, 110);

	model_reset(m);
	model_reset(m);			/* twice in a row is still zero */
	add(m, 0, 1, 1, 7, 7);
	view(m, COALESCE_NONE, SORT_TOTAL, false, NULL, &v);
	CHECK_U64(v[0].c.calls.acquisitions, 1);
	CHECK_U64(v[0].c.calls.wait_ns, 7);
	CHECK_U64(v[0].max_wait_ns, 7);
	CHECK_U64(v[1].c.calls.acquisitions, 0);
	free(v);
	model_stats(m, &s);
	CHECK_U64(s.total.calls.acquisitions, 1);
	model_free(m);
}

/*
 * The derived numbers: waits count both outcomes, the average is over
 * them (0 only without waits), and the share of calls that waited is
 * defined without acquisitions.
 */
static void test_derived_numbers(void)
{
	struct lock_counts only_timeouts = { .calls = { .timeouts = 5,
					     .failed = 5, .wait_ns = 1500000000 } };
	struct lock_counts none = { .calls = { .acquisitions = 7 } };
	struct lock_counts mixed = { .calls = { .acquisitions = 30,
				     .contended = 10, .timeouts = 10,
				     .wait_ns = 2000 } };

	CHECK_U64(lock_counts_waits(&only_timeouts), 5);
	CHECK_DBL(lock_counts_avg_wait_ns(&only_timeouts), 300000000);
	CHECK_DBL(lock_counts_wait_share(&only_timeouts), 1);
	CHECK_DBL(lock_counts_avg_wait_ns(&none), 0);
	CHECK_DBL(lock_counts_wait_share(&none), 0);
	CHECK_DBL(lock_counts_avg_wait_ns(&mixed), 100);
	CHECK_DBL(lock_counts_wait_share(&mixed), 0.5);
}

/*
 * Timed-out waits are waits: the average covers them and never exceeds
 * the longest wait, before and after a reset and on coalesced lines.
 */
static void test_timeouts_avg_within_max(void)
{
	struct model *m = model_new();
	struct view_row *v;
	size_t n;

	def(m, 0, LOCK_CONDVAR, 0x100, 0xa0);
	def(m, 1, LOCK_CONDVAR, 0x100, 0xb0);
	add_timeouts(m, 0);
	add(m, 1, 100, 10, 50000, 9000);
	n = view(m, COALESCE_NONE, SORT_TOTAL, false, NULL, &v);
	CHECK_U64(v[0].c.calls.timeouts, 5);
	CHECK_U64(v[0].c.calls.failed, 5);
	CHECK_DBL(lock_counts_avg_wait_ns(&v[0].c), 1501000000.0 / 6);
	check_avg_within_max("none", v, n);
	free(v);
	n = view(m, COALESCE_SITE, SORT_TOTAL, false, NULL, &v);
	CHECK_U64(v[0].c.calls.timeouts, 5);
	check_avg_within_max("site", v, n);
	free(v);
	model_reset(m);
	add_timeouts(m, 0);
	n = view(m, COALESCE_NONE, SORT_TOTAL, false, NULL, &v);
	CHECK_U64(v[0].c.calls.timeouts, 5);
	check_avg_within_max("after reset", v, n);
	free(v);
	model_free(m);
}

/*
 * The capture that showed AVG 147us over MAX 62.2us: the collector read a
 * row's counts while a thread was ending a wait of 232us, and sent the wait
 * with its count before the wait's maximum (read earlier, not yet there).
 * Whatever order counts and maxima come in, the MAX the table, the sort
 * and the JSON take from the column is never below AVG, as a longest wait
 * never is; the maximum that comes later replaces that bound.
 */
static void test_avg_never_above_max(void)
{
	const struct column *avg = column_of(field_by_key("avg"));
	const struct column *max = column_of(field_by_key("max"));
	struct model *m = model_new();
	struct column_ctx f = { 0 };
	char avg_cell[32], max_cell[32];
	struct view_row *v;
	size_t n;

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	add(m, 0, 10, 1, 62200, 62200);
	add(m, 0, 10, 1, 232000, 0);		/* its maximum comes later */
	n = view(m, COALESCE_NONE, SORT_MAX, false, NULL, &v);
	CHECK(n == 1 && avg->field->value(&v[0]) <= max->field->value(&v[0]),
	      "a wait before its maximum: expected AVG <= MAX, got %.0f and %.0f ns",
	      n ? avg->field->value(&v[0]) : 0, n ? max->field->value(&v[0]) : 0);
	avg->cell(avg, &v[0], &f, avg_cell, sizeof(avg_cell));
	max->cell(max, &v[0], &f, max_cell, sizeof(max_cell));
	CHECK(strcmp(avg_cell, "147us") == 0 && strcmp(max_cell, "147us") == 0,
	      "AVG and MAX cells: expected 147us and 147us, got %s and %s",
	      avg_cell, max_cell);
	free(v);
	add(m, 0, 0, 0, 0, 232000);		/* the maximum arrives */
	n = view(m, COALESCE_SITE, SORT_MAX, false, NULL, &v);
	CHECK(n == 1 && max->field->value(&v[0]) == 232000,
	      "the maximum that came: expected 232000 ns, got %.0f",
	      n ? max->field->value(&v[0]) : 0);
	free(v);
	model_free(m);
}

/*
 * A row the collector folded (object 0) counts its locks as one: a line
 * holding it says so, n_objects being a lower bound.
 */
static void test_objects_folded(void)
{
	struct model *m = model_new();
	struct view_row *v;
	size_t n;

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	def(m, 1, LOCK_MUTEX, 0x100, 0);	/* the site's folded row */
	def(m, 2, LOCK_MUTEX, 0x200, 0xb0);
	add(m, 0, 10, 1, 100, 100);
	add(m, 1, 20, 2, 200, 100);
	add(m, 2, 30, 3, 300, 100);
	n = view(m, COALESCE_SITE, SORT_TOTAL, false, NULL, &v);
	CHECK(n == 2, "site: expected 2 lines, got %zu", n);
	for (size_t i = 0; i < n; i++) {
		bool want = v[i].site == 0x100;

		CHECK(v[i].objects_folded == want,
		      "site %#" PRIx64 ": expected objects_folded %d, got %d",
		      v[i].site, want, v[i].objects_folded);
	}
	free(v);
	n = view(m, COALESCE_NONE, SORT_TOTAL, false, NULL, &v);
	for (size_t i = 0; i < n; i++)
		CHECK(v[i].objects_folded == (v[i].object == 0),
		      "none, object %#" PRIx64 ": objects_folded %d",
		      v[i].object, v[i].objects_folded);
	free(v);
	model_free(m);
}

/* The exit flush's few milliseconds join the interval before them. */
static void test_fold_last_interval(void)
{
	struct model *m = model_new();
	struct proto_row r = { .id = 0, .type = LOCK_MUTEX, .site = 0x10, .object = 0x20 };
	struct proto_stack_delta sd = { .row = 0, .stack = PROTO_NO_STACK, .tid = 1,
					.w = { .count = 1,
					       .wait_ns = 300000000 } };
	struct model_query q = { .sort = by(SORT_WAIT) };
	struct proto_delta d = { .row = 0, .c.calls = { .acquisitions = 10,
						  .wait_ns = 100000000 } };
	struct proto_tick t = { .monotonic_ns = 1000000000 };
	struct model_stats st;
	struct view_row *v;

	model_define_row(m, &r);
	model_set_origin(m, 0);
	model_apply_delta(m, &d);
	model_tick(m, &t);			/* 1 s: 100 ms waited */
	d.c.calls.acquisitions = 1;
	d.c.calls.wait_ns = 300000000;			/* a 300 ms wait ends in the flush */
	model_apply_delta(m, &d);
	model_apply_stack_delta(m, &sd);
	t.monotonic_ns = 1005000000;
	model_tick(m, &t);			/* 5 ms later: the exit flush */
	model_stats(m, &st);
	CHECK(st.wait_per_s > 50e9, "before folding the rate is absurd: %g", st.wait_per_s);
	model_fold_last_interval(m);
	model_stats(m, &st);
	CHECK(st.interval_s > 1.004 && st.interval_s < 1.006,
	      "folded interval: expected 1.005 s, got %g", st.interval_s);
	CHECK(st.wait_per_s > 0.39e9 && st.wait_per_s < 0.40e9,
	      "folded rate: expected 400 ms over 1.005 s, got %g", st.wait_per_s);
	CHECK(model_view(m, &q, &v) == 1 && v[0].trend[TREND_LEN - 1] == 400000000 &&
	      v[0].trend[TREND_LEN - 2] == 0 && v[0].acq_per_s > 10.9 && v[0].acq_per_s < 11,
	      "folded row: trend %" PRIu64 ", acq/s %g", v[0].trend[TREND_LEN - 1], v[0].acq_per_s);
	free(v);
	model_fold_last_interval(m);	/* fewer than two intervals left: no-op */
	model_stats(m, &st);
	CHECK(st.interval_s > 1.004 && st.interval_s < 1.006, "second fold is a no-op");
	model_free(m);
}

/* The header's totals equal the sums over the rows, histogram included. */
static void test_stats_sum_rows(void)
{
	struct model *m = mixed_fixture();
	struct model_query q = query(COALESCE_NONE, false);
	struct model_stats s;
	struct lock_counts sum = { 0 };
	struct view_row *v;
	size_t n, bad = 0;

	for (int round = 0; round < 2; round++) {
		n = model_view(m, &q, &v);
		memset(&sum, 0, sizeof sum);
		for (size_t i = 0; i < n; i++) {
			sum.calls.acquisitions += v[i].c.calls.acquisitions;
			sum.calls.contended += v[i].c.calls.contended;
			sum.calls.wait_ns += v[i].c.calls.wait_ns;
			sum.calls.failed += v[i].c.calls.failed;
			for (int b = 0; b < HIST_BUCKETS; b++)
				sum.hist[b] += v[i].c.hist[b];
		}
		free(v);
		model_stats(m, &s);
		bad += memcmp(&sum, &s.total, sizeof sum) != 0;
		CHECK(s.total.calls.acquisitions > 0 || round == 1,
		      "stats: expected acquisitions before the reset");
		model_reset(m);
		add(m, 7, 3, 2, 90, 40);
	}
	CHECK_U64(bad, 0);
	model_free(m);
}

/*
 * The lists a refresh works from hold the rows that changed, each once,
 * and are empty once taken: the touched rows (view cache) and the rows
 * whose role may change, which acquisitions and ticks alone never are.
 */
static void test_change_lists(void)
{
	struct model *m = model_new();
	uint32_t *ids;
	size_t n;

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	def(m, 1, LOCK_MUTEX, 0x100, 0xa8);
	CHECK_U64(model_take_role_dirty(m, &ids), 2);
	CHECK_U64(model_take_touched(m, NULL, &ids), 2);
	add(m, 0, 10, 0, 0, 0);
	add(m, 0, 10, 0, 0, 0);
	add(m, 1, 5, 2, 300, 200);
	add(m, 1, 5, 2, 300, 200);
	n = model_take_touched(m, NULL, &ids);
	CHECK_U64(n, 2);
	CHECK(n == 2 && ids[0] == 0 && ids[1] == 1,
	      "touched: expected rows 0, 1 in order of change");
	n = model_take_role_dirty(m, &ids);
	CHECK_U64(n, 1);
	CHECK(n == 1 && ids[0] == 1,
	      "role dirty: expected only row 1, which waited; got row %u",
	      n ? ids[0] : 0);
	CHECK_U64(model_take_role_dirty(m, &ids), 0);
	tick(m, 1000000000);
	CHECK_U64(model_take_role_dirty(m, &ids), 0);
	CHECK_U64(model_take_touched(m, NULL, &ids), 2);
	CHECK_U64(model_take_touched(m, NULL, &ids), 0);
	model_free(m);
}

int main(void)
{
	test_change_lists();
	test_derived_numbers();
	test_timeouts_avg_within_max();
	test_avg_never_above_max();
	test_objects_folded();
	test_fold_last_interval();
	test_accumulate();
	test_unknown_row();
	test_bad_id();
	test_redefine_keeps_counts();
	test_max_not_additive();
	test_tick_rates();
	test_lock_and_cond_wait();
	test_trend_ring();
	test_quiet_rows();
	test_reset();
	test_stats_sum_rows();
	return fixture_summary();
}
