/*
 * Unit tests of wrapper attribution in the model: rows counted in a
 * wrapper shown on its callers, merged, coalesced, reset, and rows the
 * collector counted on the callers themselves.
 */
#include "model_fixture.h"

/*
 * Wrapper row 0 at 0x1000 on object 0xa0: 100 acquisitions, 30 contended,
 * 3000 ns. Stack 1 = [0x1000, 0x2000 path_a, 0x9000]: 20 waits, 2500 ns in
 * threads 1 and 2; stack 2 = [0x1000, 0x1100 (a wrapper too), 0x3000
 * path_b]: 10 waits, 500 ns. All in one interval of 1 s.
 */
static struct model *wrapper_fixture(void)
{
	struct model *m = model_new();

	def(m, 0, LOCK_MUTEX, 0x1000, 0xa0);
	sdef(m, 1, 3, (uint64_t[]){ 0x1000, 0x2000, 0x9000 });
	sdef(m, 2, 3, (uint64_t[]){ 0x1000, 0x1100, 0x3000 });
	tick(m, 0);
	add(m, 0, 100, 30, 3000, 400);
	sadd(m, 0, 1, 1, 15, 2000);
	sadd(m, 0, 1, 2, 5, 500);
	sadd(m, 0, 2, 1, 10, 500);
	tick(m, 1000000000);
	return m;
}

/* What one line of a view should hold. */
struct want_line {
	uint64_t site, object;
	uint64_t acq, contended, wait, failed, hist3, max;
	double wait_per_s, acq_per_s;
	uint32_t row_id;
	const char *stacks;
};

/* Check that a view holds exactly the lines of want, in that order. */
static void check_view(const struct model *m, const struct model_query *q,
		       const char *name, const struct want_line *want,
		       size_t n_want)
{
	struct view_row *v;
	size_t n = model_view(m, q, &v);
	char got[256];

	CHECK(n == n_want, "%s: expected %zu lines, got %zu", name, n_want,
	      n);
	for (size_t i = 0; i < n && i < n_want; i++) {
		const struct want_line *w = &want[i];
		const struct view_row *r = &v[i];

		CHECK(r->site == w->site && r->object == w->object,
		      "%s line %zu: expected %#" PRIx64 "/%#" PRIx64
		      ", got %#" PRIx64 "/%#" PRIx64, name, i, w->site,
		      w->object, r->site, r->object);
		CHECK(r->c.calls.acquisitions == w->acq &&
		      r->c.calls.contended == w->contended &&
		      r->c.calls.wait_ns == w->wait && r->c.calls.failed == w->failed &&
		      r->c.hist[3] == w->hist3 && r->max_wait_ns == w->max,
		      "%s line %zu: expected acq %" PRIu64 " cont %" PRIu64
		      " wait %" PRIu64 " failed %" PRIu64 " hist3 %" PRIu64
		      " max %" PRIu64 ", got %" PRIu64 " %" PRIu64 " %" PRIu64
		      " %" PRIu64 " %" PRIu64 " %" PRIu64, name, i, w->acq,
		      w->contended, w->wait, w->failed, w->hist3, w->max,
		      r->c.calls.acquisitions, r->c.calls.contended, r->c.calls.wait_ns,
		      r->c.calls.failed, r->c.hist[3], r->max_wait_ns);
		CHECK(near(r->wait_per_s, w->wait_per_s) &&
		      near(r->acq_per_s, w->acq_per_s),
		      "%s line %zu: expected %g ns/s %g acq/s, got %g %g", name,
		      i, w->wait_per_s, w->acq_per_s, r->wait_per_s,
		      r->acq_per_s);
		CHECK(r->row_id == w->row_id,
		      "%s line %zu: expected row %u, got %u", name, i,
		      w->row_id, r->row_id);
		stacks_of(m, q, r, got, sizeof got);
		CHECK(strcmp(got, w->stacks) == 0,
		      "%s line %zu stacks: expected \"%s\", got \"%s\"", name,
		      i, w->stacks, got);
	}
	free(v);
}

static void test_wrapper_attribution(void)
{
	static const struct want_line whole[] = {
		{ 0x1000, 0xa0, 100, 30, 3000, 1, 30, 400, 3000, 100, 0,
		  "1:20:2500 2:10:500" },
	};
	static const struct want_line split[] = {
		{ 0x2000, 0xa0, 20, 20, 2500, 0, 0, 400, 2500, 20, 0,
		  "1:20:2500" },
		{ 0x3000, 0xa0, 10, 10, 500, 0, 0, 400, 500, 10, 0,
		  "2:10:500" },
		{ 0x1000, 0xa0, 70, 0, 0, 1, 30, 400, 0, 70, 0, "" },
	};
	struct model *m = wrapper_fixture();
	struct model_query q = query(COALESCE_NONE, false);
	struct model_stats before, after;
	struct view_row *v;
	size_t n;

	model_stats(m, &before);
	check_view(m, &q, "wrappers kept", whole, 1);
	q.skip_wrappers = true;
	check_view(m, &q, "wrappers skipped", split, 3);
	check_line(m, &q, 0x2000, 0xa0, LOCK_MUTEX, NULL, "1:15:2000 2:5:500");
	check_line(m, &q, 0x3000, 0xa0, LOCK_MUTEX, NULL, "1:10:500");
	model_stats(m, &after);
	CHECK_U64(after.total.calls.acquisitions, before.total.calls.acquisitions);
	CHECK_U64(after.total.calls.wait_ns, 3000);

	n = model_view(m, &q, &v);
	CHECK(n == 3 && v[2].trend[TREND_LEN - 1] == 3000 &&
	      v[0].trend[TREND_LEN - 1] == 0,
	      "trend: expected 3000 on the wrapper, 0 on path_a, got %" PRIu64
	      " and %" PRIu64, n == 3 ? v[2].trend[TREND_LEN - 1] : 0,
	      n == 3 ? v[0].trend[TREND_LEN - 1] : 0);
	free(v);

	/* The filter applies to the attributed sites. */
	q.filter = "PATH_A";
	n = model_view(m, &q, &v);
	CHECK(n == 1 && v[0].site == 0x2000,
	      "filter path_a: expected one line at 0x2000, got %zu", n);
	free(v);
	q.filter = "wrapper";
	n = model_view(m, &q, &v);
	CHECK(n == 1 && v[0].site == 0x1000,
	      "filter wrapper: expected one line at 0x1000, got %zu", n);
	free(v);

	/* Without a wrapper test there is nothing to skip. */
	q.filter = NULL;
	q.is_wrapper = NULL;
	check_view(m, &q, "no is_wrapper", whole, 1);
	model_free(m);
}

/*
 * A real row at path_a takes stack 1's share; wrapper row 2 at 0x1100 adds
 * more to path_b than row 0 did, so path_b's line is named after row 2.
 */
static void test_wrapper_merge(void)
{
	static const struct want_line want[] = {
		{ 0x2000, 0xa0, 25, 22, 2600, 1, 2, 400, 2500, 20, 1,
		  "1:20:2500 3:2:100" },
		{ 0x3000, 0xa0, 15, 15, 1400, 0, 0, 400, 500, 10, 2,
		  "4:5:900 2:10:500" },
		{ 0x1000, 0xa0, 70, 0, 0, 1, 30, 400, 0, 70, 0, "" },
		{ 0x1100, 0xa0, 0, 0, 0, 1, 5, 300, 0, 0, 2, "" },
	};
	struct model *m = wrapper_fixture();
	struct model_query q = query(COALESCE_NONE, true);

	def(m, 1, LOCK_MUTEX, 0x2000, 0xa0);
	sdef(m, 3, 2, (uint64_t[]){ 0x2000, 0x9000 });
	add(m, 1, 5, 2, 100, 60);
	sadd(m, 1, 3, 1, 2, 100);
	def(m, 2, LOCK_MUTEX, 0x1100, 0xa0);
	sdef(m, 4, 2, (uint64_t[]){ 0x1100, 0x3000 });
	add(m, 2, 5, 5, 900, 300);
	sadd(m, 2, 4, 3, 5, 900);
	check_view(m, &q, "merged", want, 4);
	check_line(m, &q, 0x3000, 0xa0, LOCK_MUTEX, NULL, "3:5:900 1:10:500");
	model_free(m);
}

/* A stack made only of wrapper frames stays on the wrapper's row. */
static void test_wrapper_all_frames(void)
{
	static const struct want_line want[] = {
		{ 0x1000, 0xb0, 10, 4, 400, 1, 4, 200, 0, 0, 0,
		  "5:3:300 -:1:100" },
	};
	struct model *m = model_new();
	struct model_query q = query(COALESCE_NONE, true);

	def(m, 0, LOCK_MUTEX, 0x1000, 0xb0);
	sdef(m, 5, 2, (uint64_t[]){ 0x1000, 0x1100 });
	add(m, 0, 10, 4, 400, 200);
	sadd(m, 0, 5, 1, 3, 300);
	sadd(m, 0, PROTO_NO_STACK, 1, 1, 100);
	check_view(m, &q, "all frames wrappers", want, 1);
	model_free(m);
}

/*
 * Wrapper rows on objects 0xa0 and 0xb0 both lead to path_a, where a real
 * row on 0xc0 is: coalesced by site, path_a holds all three objects.
 */
static void test_wrapper_coalesce(void)
{
	static const struct want_line by_site[] = {
		{ 0x2000, 0, 12, 8, 750, 1, 1, 40, 0, 0, 1,
		  "1:7:700 2:1:50" },
		{ 0x1000, 0, 23, 0, 0, 2, 7, 40, 0, 0, 0, "" },
	};
	static const struct want_line by_object[] = {
		{ 0, 0xb0, 20, 4, 400, 1, 4, 40, 0, 0, 1, "1:4:400" },
		{ 0, 0xa0, 10, 3, 300, 1, 3, 30, 0, 0, 0, "1:3:300" },
		{ 0x2000, 0xc0, 5, 1, 50, 1, 1, 10, 0, 0, 2, "2:1:50" },
	};
	struct model *m = model_new();
	struct model_query q = query(COALESCE_SITE, true);
	struct view_row *v;
	size_t n;

	def(m, 0, LOCK_MUTEX, 0x1000, 0xa0);
	def(m, 1, LOCK_MUTEX, 0x1000, 0xb0);
	def(m, 2, LOCK_MUTEX, 0x2000, 0xc0);
	sdef(m, 1, 2, (uint64_t[]){ 0x1000, 0x2000 });
	sdef(m, 2, 2, (uint64_t[]){ 0x2000, 0x9000 });
	add(m, 0, 10, 3, 300, 30);
	sadd(m, 0, 1, 1, 3, 300);
	add(m, 1, 20, 4, 400, 40);
	sadd(m, 1, 1, 2, 4, 400);
	add(m, 2, 5, 1, 50, 10);
	sadd(m, 2, 2, 3, 1, 50);
	check_view(m, &q, "site", by_site, 2);
	check_line(m, &q, 0x2000, 0, LOCK_MUTEX, NULL,
		   "2:4:400 1:3:300 3:1:50");
	n = model_view(m, &q, &v);
	CHECK(n == 2 && v[0].n_objects == 3 && v[1].n_objects == 2,
	      "objects per site: expected 3 and 2, got %u and %u",
	      n == 2 ? v[0].n_objects : 0, n == 2 ? v[1].n_objects : 0);
	free(v);
	q.coalesce = COALESCE_OBJECT;
	check_view(m, &q, "object", by_object, 3);
	model_free(m);
}

/* After a reset the callers show zeros and the empty remainder goes. */
static void test_wrapper_reset(void)
{
	static const struct want_line zero[] = {
		{ 0x2000, 0xa0, 0, 0, 0, 0, 0, 0, 2500, 20, 0, "" },
		{ 0x3000, 0xa0, 0, 0, 0, 0, 0, 0, 500, 10, 0, "" },
	};
	static const struct want_line again[] = {
		{ 0x1000, 0xa0, 8, 0, 0, 1, 2, 200, 0, 70, 0, "" },
		{ 0x2000, 0xa0, 2, 2, 200, 0, 0, 200, 2500, 20, 0, "1:2:200" },
		{ 0x3000, 0xa0, 0, 0, 0, 0, 0, 0, 500, 10, 0, "" },
	};
	struct model *m = wrapper_fixture();
	struct model_query q = query(COALESCE_NONE, true);

	model_reset(m);
	check_view(m, &q, "reset", zero, 2);
	add(m, 0, 10, 2, 200, 200);
	sadd(m, 0, 1, 2, 2, 200);
	q.sort = by(SORT_COUNT);
	check_view(m, &q, "after reset", again, 3);
	model_free(m);
}

/* Define a row the collector counted on a wrapper's caller. */
static void def_via(struct model *m, uint32_t id, uint64_t site,
		    uint64_t object, uint64_t via)
{
	struct proto_row r = { .id = id, .type = LOCK_MUTEX, .site = site,
			       .object = object, .via = via };

	CHECK(model_define_row(m, &r) == 0, "define row %u: expected 0, got -1",
	      id);
}

/*
 * Rows counted on the callers of the wrapper at 0x1000 (their via): they
 * are lines of their own while wrappers are skipped, and fold back into
 * the wrapper's row, with what it counted itself, while they are shown.
 * Totals are the same both ways; the stacks follow the lines.
 */
static void test_wrapper_via(void)
{
	static const struct want_line shown[] = {
		{ 0x1000, 0xa0, 160, 8, 1250, 3, 8, 400, 1250, 160, 1,
		  "1:5:1000" },
		{ 0x1000, 0xb0, 7, 1, 10, 1, 1, 10, 10, 7, 3, "" },
	};
	static const struct want_line skipped[] = {
		{ 0x2000, 0xa0, 100, 5, 1000, 1, 5, 400, 1000, 100, 1,
		  "1:5:1000" },
		{ 0x1000, 0xa0, 10, 2, 200, 1, 2, 150, 200, 10, 0, "" },
		{ 0x3000, 0xa0, 50, 1, 50, 1, 1, 50, 50, 50, 2, "" },
		{ 0x2000, 0xb0, 7, 1, 10, 1, 1, 10, 10, 7, 3, "" },
	};
	static const struct want_line by_site[] = {
		{ 0x1000, 0, 167, 9, 1260, 4, 9, 400, 1260, 167, 1,
		  "1:5:1000" },
	};
	struct model *m = model_new();
	struct model_query q = query(COALESCE_NONE, false);
	uint64_t a[3], b[3];

	def(m, 0, LOCK_MUTEX, 0x1000, 0xa0);
	def_via(m, 1, 0x2000, 0xa0, 0x1000);
	def_via(m, 2, 0x3000, 0xa0, 0x1000);
	def_via(m, 3, 0x2000, 0xb0, 0x1000);
	sdef(m, 1, 2, (uint64_t[]){ 0x2000, 0x9000 });
	tick(m, 0);
	add(m, 0, 10, 2, 200, 150);
	add(m, 1, 100, 5, 1000, 400);
	sadd(m, 1, 1, 1, 5, 1000);
	add(m, 2, 50, 1, 50, 50);
	add(m, 3, 7, 1, 10, 10);
	tick(m, 1000000000);
	check_view(m, &q, "via, wrappers shown", shown, 2);
	check_line(m, &q, 0x1000, 0xa0, LOCK_MUTEX, NULL, "1:5:1000");
	view_sums(m, &q, a);
	q.skip_wrappers = true;
	check_view(m, &q, "via, wrappers skipped", skipped, 4);
	view_sums(m, &q, b);
	CHECK(memcmp(a, b, sizeof a) == 0,
	      "via: totals shown %" PRIu64 "/%" PRIu64 "/%" PRIu64
	      ", skipped %" PRIu64 "/%" PRIu64 "/%" PRIu64, a[0], a[1], a[2],
	      b[0], b[1], b[2]);
	q.skip_wrappers = false;
	q.coalesce = COALESCE_SITE;
	check_view(m, &q, "via, shown by site", by_site, 1);
	model_free(m);
}

/*
 * Waits moved from a wrapper's row to its caller keep a longest wait that
 * covers them (the wrapper row's): before, the caller's line had waits
 * and no max, an average above its max.
 */
static void test_wrapper_caller_has_max(void)
{
	struct model *m = wrapper_fixture();
	struct model_query q = query(COALESCE_NONE, true);
	struct view_row *v;
	size_t n = model_view(m, &q, &v);

	CHECK(n == 3, "wrappers skipped: expected 3 lines, got %zu", n);
	check_avg_within_max("wrapper callers", v, n);
	free(v);
	model_free(m);
}

/*
 * A wrapper row's waits that timed out, moved to its callers through its
 * stacks: the caller's line has them as timeouts (waits with their time,
 * 0 < avg <= max), its stack too, and the wrapper's remainder (its
 * failures) keeps none. Before, a stack carried its time but not its
 * timed-out waits.
 */
static void test_wrapper_caller_timeouts(void)
{
	struct model *m = model_new();
	struct model_query q = query(COALESCE_NONE, true);
	struct proto_stack_delta d = { .row = 0, .stack = 1, .tid = 1,
				       .w = { .count = 1, .timeouts = 5,
					      .wait_ns = 5 * 300000000ull +
							 1000000 } };
	struct stack_view *sv = NULL;
	struct view_row *v;
	size_t n, k = 0, caller = 0;

	def(m, 0, LOCK_CONDVAR, 0x1000, 0xa0);
	sdef(m, 1, 3, (uint64_t[]){ 0x1000, 0x2000, 0x9000 });
	tick(m, 0);
	add_timeouts(m, 0);
	model_apply_stack_delta(m, &d);
	tick(m, 1000000000);
	n = model_view(m, &q, &v);
	CHECK(n == 2, "wrapper timeouts: expected 2 lines, got %zu", n);
	if (n == 2) {
		caller = v[0].site == 0x2000 ? 0 : 1;
		CHECK_U64(v[caller].site, 0x2000);
		CHECK_U64(v[caller].c.calls.contended, 1);
		CHECK_U64(v[caller].c.calls.timeouts, 5);
		CHECK_U64(v[1 - caller].site, 0x1000);
		CHECK_U64(v[1 - caller].c.calls.timeouts, 0);
		CHECK_U64(v[1 - caller].c.calls.wait_ns, 0);
		check_avg_within_max("wrapper timeouts", v, n);
		k = model_row_stacks(m, &q, &v[caller], &sv);
	}
	CHECK(k == 1 && sv[0].w.timeouts == 5 && sv[0].w.count == 1,
	      "wrapper timeouts: one stack with 1 contended, 5 timeouts");
	free(sv);
	free(v);
	model_free(m);
}

int main(void)
{
	test_wrapper_caller_timeouts();
	test_wrapper_caller_has_max();
	test_wrapper_attribution();
	test_wrapper_merge();
	test_wrapper_all_frames();
	test_wrapper_coalesce();
	test_wrapper_reset();
	test_wrapper_via();
	return fixture_summary();
}
