/*
 * Unit tests of the front end's model: deltas, ticks, reset, views, stacks
 * and threads behind a line, attribution of wrapper rows to their callers.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tui/format.h"
#include "../../tui/model.h"
#include "check.h"

/* The sort keys the tests name, and the columns (format.h) sorting by them. */
enum sort_key {
	SORT_WAIT, SORT_TOTAL, SORT_AVG, SORT_COUNT, SORT_CONTENDED, SORT_MAX,
	SORT_SITE, SORT_KEY_COUNT
};

static const char *const sort_names[SORT_KEY_COUNT] = {
	"wait", "total", "avg", "count", "contended", "max", "site",
};

static const struct column *by(enum sort_key k)
{
	return column_by_key(sort_names[k]);
}

static enum sort_key key_of(const struct column *c)
{
	int k = 0;

	while (k < SORT_KEY_COUNT && strcmp(c->key, sort_names[k]) != 0)
		k++;
	return (enum sort_key)k;
}

#define CHECK_DBL(got, want)                                               \
	CHECK(near((got), (want)), "%s: expected %.9g, got %.9g", #got,   \
	      (double)(want), (double)(got))

/* Whether two doubles agree to a part in 1e9. */
static int near(double a, double b)
{
	double d = a > b ? a - b : b - a;
	double s = a > 0 ? a : -a;

	return d <= 1e-9 * (s > 1 ? s : 1);
}

/* Site labels the tests know; others print as "site_<hex>". */
static const struct {
	uint64_t site;
	const char *label;
} labels[] = {
	{ 0x100, "beta" },
	{ 0x200, "gamma" },
	{ 0x300, "alpha" },
	{ 0x400, "worker_lock" },
	{ 0x500, "Queue_Push" },
	{ 0x600, "main" },
	{ 0x1000, "wrapper" },
	{ 0x1100, "wrapper_inner" },
	{ 0x2000, "path_a" },
	{ 0x3000, "path_b" },
};

/* Label a site; unknown sites share a reused buffer, as a cache might. */
static const char *label_of(void *ctx, uint64_t site)
{
	static char buf[32];

	(void)ctx;
	for (size_t i = 0; i < sizeof labels / sizeof labels[0]; i++) {
		if (labels[i].site == site)
			return labels[i].label;
	}
	snprintf(buf, sizeof buf, "site_%" PRIx64, site);
	return buf;
}

static void def(struct model *m, uint32_t id, enum lock_type type,
		uint64_t site, uint64_t object)
{
	struct proto_row r = { .id = id, .type = (uint8_t)type, .site = site,
			       .object = object };

	CHECK(model_define_row(m, &r) == 0, "define row %u: expected 0, got -1",
	      id);
}

/* Apply a delta; each acquisition with contention lands in bucket 3. */
static void add(struct model *m, uint32_t id, uint64_t acq, uint64_t cont,
		uint64_t wait, uint64_t max)
{
	struct proto_delta d = { .row = id, .c = { .acquisitions = acq,
				 .contended = cont, .wait_ns = wait,
				 .failed = 1 }, .max_wait_ns = max };

	d.c.hist[3] = cont;
	model_apply_delta(m, &d);
}

static void tick(struct model *m, uint64_t ns)
{
	struct proto_tick t = { .monotonic_ns = ns, .threads_seen = 7,
				.threads_live = 3, .dropped = 11 };

	model_tick(m, &t);
}

/* Build a view with the common query fields. */
static size_t view(const struct model *m, enum coalesce c, enum sort_key k,
		   bool asc, const char *filter, struct view_row **rows)
{
	struct model_query q = { .coalesce = c, .sort = by(k), .ascending = asc,
				 .filter = filter, .site_label = label_of };

	return model_view(m, &q, rows);
}

/* The view row of a site and object, or NULL. */
static const struct view_row *find(const struct view_row *v, size_t n,
				   uint64_t site, uint64_t object)
{
	for (size_t i = 0; i < n; i++) {
		if (v[i].site == site && v[i].object == object)
			return &v[i];
	}
	return NULL;
}

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
	CHECK_U64(v[0].c.acquisitions, 35);
	CHECK_U64(v[0].c.contended, 6);
	CHECK_U64(v[0].c.wait_ns, 350);
	CHECK_U64(v[0].c.failed, 3);
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
	CHECK_U64(s.total.acquisitions, 4);
	CHECK_U64(s.total.wait_ns, 40);
	n = view(m, COALESCE_NONE, SORT_WAIT, false, NULL, &v);
	CHECK_U64(n, 1);
	CHECK_U64(v[0].c.acquisitions, 4);
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
	CHECK_U64(v[0].c.acquisitions, 3);
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
	CHECK_U64(v[0].c.wait_ns, 600);
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

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	for (uint64_t i = 1; i <= 3; i++) {
		add(m, 0, 1, 1, i, i);
		tick(m, i * 1000);
	}
	view(m, COALESCE_NONE, SORT_WAIT, false, NULL, &v);
	for (size_t i = 0; i < TREND_LEN; i++) {
		uint64_t want = i < TREND_LEN - 3 ? 0 : i - (TREND_LEN - 3) + 1;

		CHECK(v[0].trend[i] == want,
		      "short trend[%zu]: expected %" PRIu64 ", got %" PRIu64,
		      i, want, v[0].trend[i]);
	}
	free(v);
	for (uint64_t i = 4; i <= TREND_LEN + 7; i++) {
		add(m, 0, 1, 1, i, i);
		tick(m, i * 1000);
	}
	view(m, COALESCE_NONE, SORT_WAIT, false, NULL, &v);
	for (size_t i = 0; i < TREND_LEN; i++) {
		uint64_t want = 8 + i;	/* the last TREND_LEN of 1..LEN+7 */

		CHECK(v[0].trend[i] == want,
		      "wrapped trend[%zu]: expected %" PRIu64 ", got %" PRIu64,
		      i, want, v[0].trend[i]);
	}
	free(v);
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
	CHECK_U64(v[0].c.acquisitions, 0);
	CHECK_U64(v[0].c.wait_ns, 0);
	CHECK_U64(v[0].c.hist[3], 0);
	CHECK_U64(v[0].max_wait_ns, 0);
	CHECK_DBL(v[0].wait_per_s, 1000);	/* rates survive reset */
	CHECK_U64(v[0].trend[TREND_LEN - 1], 1000);	/* so does the trend */
	free(v);

	add(m, 0, 3, 1, 90, 50);
	def(m, 1, LOCK_MUTEX, 0x200, 0xb0);	/* defined after the reset */
	add(m, 1, 2, 2, 20, 15);
	view(m, COALESCE_NONE, SORT_TOTAL, false, NULL, &v);
	CHECK_U64(v[0].c.acquisitions, 3);
	CHECK_U64(v[0].c.wait_ns, 90);
	CHECK_U64(v[0].c.hist[3], 1);
	CHECK_U64(v[0].max_wait_ns, 50);
	CHECK_U64(v[1].c.acquisitions, 2);
	CHECK_U64(v[1].max_wait_ns, 15);
	free(v);
	model_stats(m, &s);
	CHECK_U64(s.total.acquisitions, 5);
	CHECK_U64(s.total.wait_ns, 110);

	model_reset(m);
	model_reset(m);			/* twice in a row is still zero */
	add(m, 0, 1, 1, 7, 7);
	view(m, COALESCE_NONE, SORT_TOTAL, false, NULL, &v);
	CHECK_U64(v[0].c.acquisitions, 1);
	CHECK_U64(v[0].c.wait_ns, 7);
	CHECK_U64(v[0].max_wait_ns, 7);
	CHECK_U64(v[1].c.acquisitions, 0);
	free(v);
	model_stats(m, &s);
	CHECK_U64(s.total.acquisitions, 1);
	model_free(m);
}

static void test_coalesce_site(void)
{
	struct model *m = model_new();
	const struct view_row *a, *b;
	struct view_row *v;
	size_t n;

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	def(m, 1, LOCK_MUTEX, 0x100, 0xb0);
	def(m, 2, LOCK_MUTEX, 0x200, 0xc0);
	tick(m, 0);
	add(m, 0, 10, 1, 100, 80);
	add(m, 1, 20, 2, 300, 40);
	add(m, 2, 5, 5, 50, 50);
	tick(m, 1000000000);
	n = view(m, COALESCE_SITE, SORT_TOTAL, false, NULL, &v);
	CHECK_U64(n, 2);
	a = find(v, n, 0x100, 0);
	b = find(v, n, 0x200, 0xc0);
	CHECK(a != NULL && b != NULL,
	      "expected rows for sites 0x100 and 0x200, got none");
	if (a != NULL && b != NULL) {
		CHECK(a == &v[0], "first row: expected site 0x100, got %#"
		      PRIx64, v[0].site);
		CHECK_U64(a->n_objects, 2);
		CHECK_U64(a->n_sites, 1);
		CHECK_U64(a->c.acquisitions, 30);
		CHECK_U64(a->c.wait_ns, 400);
		CHECK_U64(a->c.hist[3], 3);
		CHECK_U64(a->max_wait_ns, 80);
		CHECK_U64(a->row_id, 1);
		CHECK_DBL(a->wait_per_s, 400);
		CHECK_DBL(a->acq_per_s, 30);
		CHECK_U64(a->trend[TREND_LEN - 1], 400);
		CHECK_U64(b->n_objects, 1);
		CHECK_U64(b->c.wait_ns, 50);
		CHECK_U64(b->row_id, 2);
	}
	free(v);

	/* Another type at the same site is a row of its own. */
	def(m, 3, LOCK_RWLOCK_READ, 0x100, 0xa0);
	n = view(m, COALESCE_SITE, SORT_TOTAL, false, NULL, &v);
	CHECK_U64(n, 3);
	free(v);
	model_free(m);
}

static void test_coalesce_object(void)
{
	struct model *m = model_new();
	const struct view_row *x, *y;
	struct view_row *v;
	size_t n;

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	def(m, 1, LOCK_MUTEX, 0x200, 0xa0);
	def(m, 2, LOCK_MUTEX, 0x300, 0xb0);
	def(m, 3, LOCK_MUTEX, 0x300, 0xa0);
	add(m, 0, 1, 1, 10, 10);
	add(m, 1, 1, 1, 30, 30);
	add(m, 2, 1, 1, 5, 5);
	add(m, 3, 1, 1, 30, 30);	/* ties row 1: lowest id wins */
	n = view(m, COALESCE_OBJECT, SORT_TOTAL, false, NULL, &v);
	CHECK_U64(n, 2);
	x = find(v, n, 0, 0xa0);
	y = find(v, n, 0x300, 0xb0);
	CHECK(x != NULL && y != NULL,
	      "expected rows for objects 0xa0 and 0xb0, got none");
	if (x != NULL && y != NULL) {
		CHECK_U64(x->n_sites, 3);
		CHECK_U64(x->n_objects, 1);
		CHECK_U64(x->c.wait_ns, 70);
		CHECK_U64(x->max_wait_ns, 30);
		CHECK_U64(x->row_id, 1);
		CHECK_U64(y->n_sites, 1);
		CHECK_U64(y->row_id, 2);
	}
	free(v);
	model_free(m);
}

/*
 * Three rows whose order differs by key. Totals: beta 100 acq, 10 cont,
 * 3000 ns (avg 300), max 50; gamma 10, 30, 2000 (avg 66.7), max 500; alpha
 * 50, 20, 1000 (avg 50), max 1500. Last interval waits: beta 500,
 * gamma 100, alpha 900.
 */
static struct model *sort_fixture(void)
{
	struct model *m = model_new();

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);	/* beta */
	def(m, 1, LOCK_MUTEX, 0x200, 0xb0);	/* gamma */
	def(m, 2, LOCK_MUTEX, 0x300, 0xc0);	/* alpha */
	tick(m, 0);
	add(m, 0, 0, 0, 500, 0);
	add(m, 1, 0, 0, 100, 0);
	add(m, 2, 0, 0, 900, 0);
	tick(m, 1000000000);
	add(m, 0, 100, 10, 2500, 50);
	add(m, 1, 10, 30, 1900, 500);
	add(m, 2, 50, 20, 100, 1500);
	return m;
}

static void test_sort_keys(void)
{
	static const struct {
		enum sort_key key;
		bool asc;
		const char *want;	/* labels, in order */
	} cases[] = {
		{ SORT_WAIT, false, "alpha beta gamma" },
		{ SORT_WAIT, true, "gamma beta alpha" },
		{ SORT_TOTAL, false, "beta gamma alpha" },
		{ SORT_TOTAL, true, "alpha gamma beta" },
		{ SORT_AVG, false, "beta gamma alpha" },
		{ SORT_AVG, true, "alpha gamma beta" },
		{ SORT_COUNT, false, "beta alpha gamma" },
		{ SORT_COUNT, true, "gamma alpha beta" },
		{ SORT_CONTENDED, false, "gamma alpha beta" },
		{ SORT_CONTENDED, true, "beta alpha gamma" },
		{ SORT_MAX, false, "alpha gamma beta" },
		{ SORT_MAX, true, "beta gamma alpha" },
		{ SORT_SITE, false, "alpha beta gamma" },	/* A to Z */
		{ SORT_SITE, true, "gamma beta alpha" },
	};
	struct model *m = sort_fixture();

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct view_row *v;
		size_t n = view(m, COALESCE_NONE, cases[i].key, cases[i].asc,
				NULL, &v);
		char got[64] = "";

		for (size_t j = 0; j < n; j++) {
			strcat(got, j ? " " : "");
			strcat(got, label_of(NULL, v[j].site));
		}
		CHECK(strcmp(got, cases[i].want) == 0,
		      "sort %s %s: expected \"%s\", got \"%s\"",
		      sort_names[cases[i].key],
		      cases[i].asc ? "ascending" : "default", cases[i].want,
		      got);
		free(v);
	}
	model_free(m);
}

/* Rows equal on the sort key fall back to wait, site, object, type, id. */
static void test_tie_break(void)
{
	static const struct {
		uint32_t id;
		enum lock_type type;
		uint64_t site, object, wait;
	} rows[] = {
		{ 0, LOCK_SPIN, 0x200, 0xa0, 10 },
		{ 1, LOCK_MUTEX, 0x200, 0xa0, 10 },
		{ 2, LOCK_MUTEX, 0x200, 0x90, 10 },
		{ 3, LOCK_MUTEX, 0x100, 0xb0, 10 },
		{ 4, LOCK_MUTEX, 0x300, 0xa0, 50 },
	};
	static const uint32_t want[] = { 4, 3, 2, 1, 0 };
	struct model *m = model_new();

	for (size_t i = 0; i < 5; i++) {
		def(m, rows[i].id, rows[i].type, rows[i].site, rows[i].object);
		add(m, rows[i].id, 1, 1, rows[i].wait, 1);
	}
	for (int asc = 0; asc <= 1; asc++) {
		for (int run = 0; run < 2; run++) {
			struct view_row *v;
			size_t n = view(m, COALESCE_NONE, SORT_COUNT, asc, NULL,
					&v);

			CHECK_U64(n, 5);
			for (size_t i = 0; i < n && i < 5; i++)
				CHECK(v[i].row_id == want[i],
				      "tie %s run %d pos %zu: "
				      "expected row %u, got %u",
				      asc ? "asc" : "desc", run, i, want[i],
				      v[i].row_id);
			free(v);
		}
	}
	model_free(m);
}

/* Labels of a view, space separated, in order. */
static void view_labels(const struct view_row *v, size_t n, char *out,
			size_t len)
{
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		const char *l = v[i].site ? label_of(NULL, v[i].site) : "*";

		snprintf(out + strlen(out), len - strlen(out), "%s%s",
			 i ? " " : "", l);
	}
}

static void test_filter(void)
{
	static const struct {
		const char *filter;
		const char *want;
	} cases[] = {
		{ NULL, "Queue_Push worker_lock main" },
		{ "", "Queue_Push worker_lock main" },
		{ "QUEUE", "Queue_Push" },
		{ "_", "Queue_Push worker_lock" },
		{ "LOCK", "worker_lock" },
		{ "nothing", "" },
	};
	struct model *m = model_new();
	struct model_query q = { .sort = by(SORT_WAIT), .filter = "main" };
	struct view_row *v;
	char got[128];

	def(m, 0, LOCK_MUTEX, 0x400, 0xa0);	/* worker_lock */
	def(m, 1, LOCK_MUTEX, 0x500, 0xb0);	/* Queue_Push */
	def(m, 2, LOCK_MUTEX, 0x600, 0xc0);	/* main */
	add(m, 0, 1, 1, 20, 1);
	add(m, 1, 1, 1, 30, 1);
	add(m, 2, 1, 1, 10, 1);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t n = view(m, COALESCE_NONE, SORT_TOTAL, false,
				cases[i].filter, &v);

		view_labels(v, n, got, sizeof got);
		CHECK(strcmp(got, cases[i].want) == 0,
		      "filter \"%s\": expected \"%s\", got \"%s\"",
		      cases[i].filter ? cases[i].filter : "(null)",
		      cases[i].want, got);
		CHECK(n != 0 || v == NULL,
		      "empty view: expected NULL rows, got %p", (void *)v);
		free(v);
	}
	/* Without a label function the filter cannot apply: keep all. */
	CHECK_U64(model_view(m, &q, &v), 3);
	free(v);
	model_free(m);
}

/* A multi-site row is kept when any member's site matches. */
/*
 * Idle waits (condvar, futex-wake) after the locks in every order unless
 * mixed in; a type set shows only its types.
 */
static void test_types(void)
{
	static const struct {
		enum sort_key key;
		bool asc, mix;
		unsigned types;
		const char *want;
	} cases[] = {
		{ SORT_TOTAL, false, false, 0, "worker_lock main Queue_Push" },
		{ SORT_TOTAL, true, false, 0, "main worker_lock Queue_Push" },
		{ SORT_SITE, false, false, 0, "main worker_lock Queue_Push" },
		{ SORT_TOTAL, false, true, 0, "Queue_Push worker_lock main" },
		{ SORT_TOTAL, true, true, 0, "main worker_lock Queue_Push" },
		{ SORT_TOTAL, false, false, 1u << LOCK_MUTEX, "worker_lock" },
		{ SORT_TOTAL, false, false, 1u << LOCK_CONDVAR, "Queue_Push" },
		{ SORT_TOTAL, false, false, 1u << LOCK_FUTEX, "" },
	};
	struct model *m = model_new();
	struct view_row *v;
	char got[128];

	def(m, 0, LOCK_MUTEX, 0x400, 0xa0);	/* worker_lock */
	def(m, 1, LOCK_CONDVAR, 0x500, 0xb0);	/* Queue_Push */
	def(m, 2, LOCK_SPIN, 0x600, 0xc0);	/* main */
	add(m, 0, 1, 1, 20, 1);
	add(m, 1, 1, 1, 3000, 1);
	add(m, 2, 1, 1, 10, 1);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct model_query q = { .sort = by(cases[i].key),
			.ascending = cases[i].asc, .mix_idle = cases[i].mix,
			.types = cases[i].types, .site_label = label_of };
		size_t n = model_view(m, &q, &v);

		view_labels(v, n, got, sizeof got);
		CHECK(strcmp(got, cases[i].want) == 0,
		      "sort %s%s%s, types 0x%x: expected \"%s\", got \"%s\"",
		      sort_names[cases[i].key], cases[i].asc ? " ascending" : "",
		      cases[i].mix ? " mixed" : "", cases[i].types,
		      cases[i].want, got);
		free(v);
	}
	model_free(m);
}

static void test_filter_coalesced(void)
{
	struct model *m = model_new();
	struct view_row *v;
	size_t n;

	def(m, 0, LOCK_MUTEX, 0x400, 0xa0);	/* worker_lock */
	def(m, 1, LOCK_MUTEX, 0x500, 0xa0);	/* Queue_Push */
	def(m, 2, LOCK_MUTEX, 0x400, 0xb0);	/* worker_lock */
	add(m, 0, 1, 1, 20, 1);
	add(m, 1, 1, 1, 30, 1);
	add(m, 2, 1, 1, 10, 1);
	n = view(m, COALESCE_OBJECT, SORT_TOTAL, false, "queue", &v);
	CHECK_U64(n, 1);
	if (n == 1) {
		CHECK_U64(v[0].object, 0xa0);
		CHECK_U64(v[0].site, 0);
		CHECK_U64(v[0].n_sites, 2);
	}
	free(v);
	n = view(m, COALESCE_OBJECT, SORT_TOTAL, false, "WORKER", &v);
	CHECK_U64(n, 2);
	free(v);
	model_free(m);
}

static void test_names(void)
{
	static const char *const bad[] = { "", "WAIT", "bogus", "sites" };

	for (size_t i = 0; i < column_count; i++)
		CHECK(columns[i].key == NULL ||
		      column_by_key(columns[i].key) == &columns[i],
		      "sort key \"%s\": expected its column %s",
		      columns[i].key, columns[i].title);
	for (int k = 0; k < SORT_KEY_COUNT; k++)
		CHECK(by((enum sort_key)k) != NULL, "sort key \"%s\": no column",
		      sort_names[k]);
	for (int c = 0; c < COALESCE_COUNT; c++)
		CHECK(coalesce_parse(coalesce_name((enum coalesce)c)) == c,
		      "coalesce %d: expected round trip, got %d via \"%s\"", c,
		      coalesce_parse(coalesce_name((enum coalesce)c)),
		      coalesce_name((enum coalesce)c));
	CHECK_STR(by(SORT_AVG)->title, "AVG");
	CHECK_STR(by(SORT_CONTENDED)->title, "CONT%");
	CHECK_STR(coalesce_name(COALESCE_OBJECT), "object");
	CHECK_U64(coalesce_parse("site"), COALESCE_SITE);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		CHECK(column_by_key(bad[i]) == NULL,
		      "sort key \"%s\": expected none, got %s", bad[i],
		      column_by_key(bad[i]) ? column_by_key(bad[i])->title : "");
		CHECK(coalesce_parse(bad[i]) == -1,
		      "coalesce \"%s\": expected -1, got %d", bad[i],
		      coalesce_parse(bad[i]));
	}
}

static void test_empty(void)
{
	struct model *m = model_new();
	struct model_stats s;
	struct view_row *v = (struct view_row *)&s;

	CHECK_U64(view(m, COALESCE_SITE, SORT_SITE, false, NULL, &v), 0);
	CHECK(v == NULL, "empty model: expected NULL rows, got %p", (void *)v);
	model_reset(m);
	tick(m, 5);
	model_stats(m, &s);
	CHECK_U64(s.ticks, 1);
	CHECK_U64(s.total.acquisitions, 0);
	model_free(m);
}

/* 100k rows: 1000 sites x 100 objects; coalescing must stay fast. */
static void test_many_rows(void)
{
	struct model *m = model_new();
	struct view_row *v;
	size_t n, bad = 0;

	for (uint32_t id = 0; id < 100000; id++) {
		struct proto_row r = { .id = id, .type = LOCK_MUTEX,
				       .site = 0x10000 + (id / 100) * 16,
				       .object = 0x900000 + (id % 100) * 64 };

		bad += model_define_row(m, &r) != 0;
		add(m, id, 1, 1, id % 977, id % 977);
	}
	CHECK_U64(bad, 0);
	tick(m, 0);
	n = view(m, COALESCE_SITE, SORT_WAIT, false, NULL, &v);
	CHECK_U64(n, 1000);
	CHECK_U64(v[0].n_objects, 100);
	free(v);
	n = view(m, COALESCE_OBJECT, SORT_SITE, true, NULL, &v);
	CHECK_U64(n, 100);
	CHECK_U64(v[0].n_sites, 1000);
	CHECK_U64(v[0].site, 0);
	free(v);
	n = view(m, COALESCE_NONE, SORT_AVG, false, "SITE_12", &v);
	CHECK(n > 0 && n < 100000, "filtered 100k: expected some, got %zu", n);
	free(v);
	model_free(m);
}

/* ---- Stacks, threads and wrapper attribution ---- */

/* Wrapper functions occupy [0x1000, 0x1200). */
static bool in_wrapper(void *ctx, uint64_t address)
{
	(void)ctx;
	return address >= 0x1000 && address < 0x1200;
}

static void sdef(struct model *m, uint32_t id, uint8_t depth,
		 const uint64_t *frames)
{
	struct proto_stack st = { .id = id, .depth = depth };

	memcpy(st.frames, frames, depth * sizeof *frames);
	CHECK(model_define_stack(m, &st) == 0,
	      "define stack %u: expected 0, got -1", id);
}

static void sadd(struct model *m, uint32_t row, uint32_t stack, uint32_t tid,
		 uint64_t count, uint64_t wait)
{
	struct proto_stack_delta d = { .row = row, .stack = stack, .tid = tid,
				       .count = count, .wait_ns = wait };

	model_apply_stack_delta(m, &d);
}

static struct model_query query(enum coalesce c, bool skip)
{
	return (struct model_query){ .coalesce = c, .sort = by(SORT_TOTAL),
				     .site_label = label_of,
				     .skip_wrappers = skip,
				     .is_wrapper = in_wrapper };
}

/* The line of a site, object and type, or NULL. */
static const struct view_row *find_t(const struct view_row *v, size_t n,
				     uint64_t site, uint64_t object,
				     enum lock_type type)
{
	for (size_t i = 0; i < n; i++) {
		if (v[i].site == site && v[i].object == object &&
		    v[i].type == type)
			return &v[i];
	}
	return NULL;
}

/* The stacks of a line as "id:count:wait ...", PROTO_NO_STACK as "-". */
static void stacks_of(const struct model *m, const struct model_query *q,
		      const struct view_row *r, char *out, size_t len)
{
	struct stack_view *sv;
	size_t n = model_row_stacks(m, q, r, &sv);

	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		char id[16] = "-";

		if (sv[i].stack != PROTO_NO_STACK)
			snprintf(id, sizeof id, "%u", sv[i].stack);
		snprintf(out + strlen(out), len - strlen(out),
			 "%s%s:%" PRIu64 ":%" PRIu64, i ? " " : "", id,
			 sv[i].count, sv[i].wait_ns);
	}
	CHECK(n != 0 || sv == NULL, "no stacks: expected NULL, got %p",
	      (void *)sv);
	free(sv);
}

/* The threads of a line as "tid:count:wait ...". */
static void threads_of(const struct model *m, const struct model_query *q,
		       const struct view_row *r, char *out, size_t len)
{
	struct thread_view *tv;
	size_t n = model_row_threads(m, q, r, &tv);

	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		snprintf(out + strlen(out), len - strlen(out),
			 "%s%u:%" PRIu64 ":%" PRIu64, i ? " " : "", tv[i].tid,
			 tv[i].count, tv[i].wait_ns);
	CHECK(n != 0 || tv == NULL, "no threads: expected NULL, got %p",
	      (void *)tv);
	free(tv);
}

/* Check the stacks and threads behind the line of (site, object, type). */
static void check_line(const struct model *m, const struct model_query *q,
		       uint64_t site, uint64_t object, enum lock_type type,
		       const char *want_stacks, const char *want_threads)
{
	struct view_row *v;
	size_t n = model_view(m, q, &v);
	const struct view_row *r = find_t(v, n, site, object, type);
	char got[256];

	CHECK(r != NULL, "%s line %#" PRIx64 "/%#" PRIx64 "/%d: expected "
	      "one, got none", coalesce_name(q->coalesce), site, object,
	      (int)type);
	if (r != NULL && want_stacks != NULL) {
		stacks_of(m, q, r, got, sizeof got);
		CHECK(strcmp(got, want_stacks) == 0,
		      "%s stacks of %#" PRIx64 "/%#" PRIx64 ": expected "
		      "\"%s\", got \"%s\"", coalesce_name(q->coalesce), site,
		      object, want_stacks, got);
	}
	if (r != NULL && want_threads != NULL) {
		threads_of(m, q, r, got, sizeof got);
		CHECK(strcmp(got, want_threads) == 0,
		      "%s threads of %#" PRIx64 "/%#" PRIx64 ": expected "
		      "\"%s\", got \"%s\"", coalesce_name(q->coalesce), site,
		      object, want_threads, got);
	}
	free(v);
}

static void test_stack_accumulate(void)
{
	struct model *m = model_new();
	struct model_query q = query(COALESCE_NONE, false);
	struct stack_view *sv;
	struct view_row *v;

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	sdef(m, 0, 2, (uint64_t[]){ 0x100, 0x600 });
	sdef(m, 1, 2, (uint64_t[]){ 0x100, 0x400 });
	sadd(m, 0, 0, 1, 2, 200);
	sadd(m, 0, 0, 1, 3, 300);
	sadd(m, 0, 0, 2, 1, 50);
	sadd(m, 0, 1, 1, 4, 1000);
	check_line(m, &q, 0x100, 0xa0, LOCK_MUTEX, "1:4:1000 0:6:550",
		   "1:9:1500 2:1:50");
	CHECK_U64(model_view(m, &q, &v), 1);
	CHECK_U64(model_row_stacks(m, &q, &v[0], &sv), 2);
	CHECK_U64(sv[0].depth, 2);
	CHECK(sv[0].frames != NULL && sv[0].frames[1] == 0x400,
	      "stack 1 frame 1: expected 0x400, got %#" PRIx64,
	      sv[0].frames ? sv[0].frames[1] : 0);
	free(sv);
	free(v);
	model_free(m);
}

static void test_stack_defined_late(void)
{
	struct model *m = model_new();
	struct model_query q = query(COALESCE_NONE, false);
	struct stack_view *sv;
	struct view_row *v;

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	sadd(m, 0, 5, 1, 2, 20);
	model_view(m, &q, &v);
	CHECK_U64(model_row_stacks(m, &q, &v[0], &sv), 1);
	CHECK_U64(sv[0].stack, 5);
	CHECK_U64(sv[0].depth, 0);
	CHECK(sv[0].frames == NULL, "undefined stack: expected no frames, "
	      "got %p", (const void *)sv[0].frames);
	CHECK_U64(sv[0].count, 2);
	free(sv);
	sdef(m, 5, 3, (uint64_t[]){ 0x100, 0x200, 0x300 });
	CHECK_U64(model_row_stacks(m, &q, &v[0], &sv), 1);
	CHECK_U64(sv[0].depth, 3);
	CHECK(sv[0].frames != NULL && sv[0].frames[2] == 0x300,
	      "defined late, frame 2: expected 0x300, got %#" PRIx64,
	      sv[0].frames ? sv[0].frames[2] : 0);
	CHECK_U64(sv[0].wait_ns, 20);
	free(sv);
	free(v);
	model_free(m);
}

/* Waits without a stack form their own entry, last among equals. */
static void test_no_stack(void)
{
	struct model *m = model_new();
	struct model_query q = query(COALESCE_NONE, false);
	struct stack_view *sv;
	struct view_row *v;

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	sdef(m, 0, 1, (uint64_t[]){ 0x100 });
	sadd(m, 0, PROTO_NO_STACK, 1, 7, 700);
	sadd(m, 0, 0, 1, 1, 700);
	check_line(m, &q, 0x100, 0xa0, LOCK_MUTEX, "-:7:700 0:1:700", NULL);
	sadd(m, 0, 2, 3, 7, 700);
	check_line(m, &q, 0x100, 0xa0, LOCK_MUTEX, "2:7:700 -:7:700 0:1:700",
		   "1:8:1400 3:7:700");
	model_view(m, &q, &v);
	CHECK_U64(model_row_stacks(m, &q, &v[0], &sv), 3);
	CHECK_U64(sv[1].stack, PROTO_NO_STACK);
	CHECK_U64(sv[1].depth, 0);
	CHECK(sv[1].frames == NULL, "no stack: expected no frames, got %p",
	      (const void *)sv[1].frames);
	free(sv);
	free(v);
	model_free(m);
}

static void test_stack_reset(void)
{
	struct model *m = model_new();
	struct model_query q = query(COALESCE_NONE, false);

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	sdef(m, 0, 1, (uint64_t[]){ 0x100 });
	tick(m, 0);
	sadd(m, 0, 0, 1, 5, 500);
	sadd(m, 0, PROTO_NO_STACK, 2, 1, 10);
	tick(m, 1000000000);
	model_reset(m);
	check_line(m, &q, 0x100, 0xa0, LOCK_MUTEX, "", "");
	sadd(m, 0, 0, 1, 2, 20);
	sadd(m, 0, 0, 3, 1, 5);		/* a thread new since the reset */
	check_line(m, &q, 0x100, 0xa0, LOCK_MUTEX, "0:3:25", "1:2:20 3:1:5");
	model_reset(m);
	model_reset(m);
	sadd(m, 0, PROTO_NO_STACK, 2, 1, 1);
	check_line(m, &q, 0x100, 0xa0, LOCK_MUTEX, "-:1:1", "2:1:1");
	model_free(m);
}

static void test_stack_bad_ids(void)
{
	static const struct {
		uint32_t id;
		uint8_t depth;
		int want;
	} cases[] = {
		{ 1u << 20, 1, -1 },
		{ PROTO_NO_STACK, 1, -1 },
		{ 4097, 1, -1 },	/* too far past the none known */
		{ 4096, 1, 0 },
		{ 7, 0, -1 },
		{ 7, PROTO_STACK_DEPTH + 1, -1 },
		{ 7, PROTO_STACK_DEPTH, 0 },
	};
	struct model *m = model_new();
	struct model_query q = query(COALESCE_NONE, false);
	struct model_stats s;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct proto_stack st = { .id = cases[i].id,
					  .depth = cases[i].depth };
		int got = model_define_stack(m, &st);

		CHECK(got == cases[i].want,
		      "define stack %u depth %u: expected %d, got %d",
		      cases[i].id, cases[i].depth, cases[i].want, got);
	}
	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	sadd(m, 0, 1u << 20, 1, 1, 1);	/* absurd stack id */
	sadd(m, 3, 0, 1, 1, 1);		/* undefined row */
	sadd(m, 1000, 0, 1, 1, 1);
	check_line(m, &q, 0x100, 0xa0, LOCK_MUTEX, "", "");
	model_stats(m, &s);
	CHECK_U64(s.unknown_rows, 0);
	model_free(m);
}

/*
 * Rows 0..3 spread over two sites, two objects and two types; each case is
 * a line of a coalesced view and what stands behind it.
 */
static void test_stack_groups(void)
{
	static const struct {
		enum coalesce c;
		uint64_t site, object;
		enum lock_type type;
		const char *stacks, *threads;
	} cases[] = {
		{ COALESCE_NONE, 0x100, 0xa0, LOCK_MUTEX, "1:2:20 0:1:10",
		  "2:2:20 1:1:10" },
		{ COALESCE_NONE, 0x200, 0xa0, LOCK_MUTEX, "1:4:400",
		  "1:4:400" },
		{ COALESCE_SITE, 0x100, 0, LOCK_MUTEX, "0:4:40 1:2:20 -:1:5",
		  "2:5:50 1:2:15" },
		{ COALESCE_SITE, 0x100, 0xa0, LOCK_SPIN, "0:5:500",
		  "3:5:500" },
		{ COALESCE_OBJECT, 0, 0xa0, LOCK_MUTEX, "1:6:420 0:1:10",
		  "1:5:410 2:2:20" },
		{ COALESCE_OBJECT, 0x100, 0xb0, LOCK_MUTEX, "0:3:30 -:1:5",
		  "2:3:30 1:1:5" },
	};
	struct model *m = model_new();

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	def(m, 1, LOCK_MUTEX, 0x100, 0xb0);
	def(m, 2, LOCK_MUTEX, 0x200, 0xa0);
	def(m, 3, LOCK_SPIN, 0x100, 0xa0);
	sdef(m, 0, 2, (uint64_t[]){ 0x100, 0x600 });
	sdef(m, 1, 2, (uint64_t[]){ 0x100, 0x400 });
	sadd(m, 0, 0, 1, 1, 10);
	sadd(m, 0, 1, 2, 2, 20);
	sadd(m, 1, 0, 2, 3, 30);
	sadd(m, 1, PROTO_NO_STACK, 1, 1, 5);
	sadd(m, 2, 1, 1, 4, 400);
	sadd(m, 3, 0, 3, 5, 500);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct model_query q = query(cases[i].c, false);

		check_line(m, &q, cases[i].site, cases[i].object,
			   cases[i].type, cases[i].stacks, cases[i].threads);
	}
	model_free(m);
}

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
		CHECK(r->c.acquisitions == w->acq &&
		      r->c.contended == w->contended &&
		      r->c.wait_ns == w->wait && r->c.failed == w->failed &&
		      r->c.hist[3] == w->hist3 && r->max_wait_ns == w->max,
		      "%s line %zu: expected acq %" PRIu64 " cont %" PRIu64
		      " wait %" PRIu64 " failed %" PRIu64 " hist3 %" PRIu64
		      " max %" PRIu64 ", got %" PRIu64 " %" PRIu64 " %" PRIu64
		      " %" PRIu64 " %" PRIu64 " %" PRIu64, name, i, w->acq,
		      w->contended, w->wait, w->failed, w->hist3, w->max,
		      r->c.acquisitions, r->c.contended, r->c.wait_ns,
		      r->c.failed, r->c.hist[3], r->max_wait_ns);
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
	CHECK_U64(after.total.acquisitions, before.total.acquisitions);
	CHECK_U64(after.total.wait_ns, 3000);

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

/* Sums of the lines of a view: acquisitions, contended, wait. */
static void view_sums(const struct model *m, const struct model_query *q,
		      uint64_t sum[3])
{
	struct view_row *v;
	size_t n = model_view(m, q, &v);

	sum[0] = sum[1] = sum[2] = 0;
	for (size_t i = 0; i < n; i++) {
		sum[0] += v[i].c.acquisitions;
		sum[1] += v[i].c.contended;
		sum[2] += v[i].c.wait_ns;
	}
	free(v);
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
 * 10k rows over 1000 sites, one in ten in a wrapper, each with three stacks
 * in two threads, sent twice: attribution keeps the totals, and the stacks
 * behind a line add up to its contended waits. Timing is not asserted.
 */
static void test_stack_many(void)
{
	struct model *m = model_new();
	struct model_query q = query(COALESCE_NONE, true);
	struct model_stats s;
	struct view_row *v;
	uint64_t sum[3];
	size_t n, bad = 0;

	for (uint32_t id = 0; id < 100; id++) {
		uint64_t f[3] = { 0x1000 + (id % 32) * 16,
				  0x10000 + id * 160, 0x9000 };

		sdef(m, id, 3, f);
	}
	tick(m, 0);
	for (int round = 0; round < 2; round++) {
		for (uint32_t id = 0; id < 10000; id++) {
			uint64_t site = id % 10 ? 0x10000 + (id / 10) * 16
						: 0x1000 + (id % 32) * 16;

			if (round == 0)
				def(m, id, LOCK_MUTEX, site,
				    0x900000 + id % 10);
			add(m, id, 10, 6, 60 + id % 5 * 6, 9);
			for (uint32_t k = 0; k < 6; k++)
				sadd(m, id, (id + k / 2) % 100, k % 2 + 1, 1,
				     10 + id % 5);
		}
		tick(m, (uint64_t)(round + 1) * 1000000000);
	}
	model_stats(m, &s);
	CHECK_U64(s.total.acquisitions, 200000);
	view_sums(m, &q, sum);
	CHECK_U64(sum[0], s.total.acquisitions);
	CHECK_U64(sum[1], s.total.contended);
	CHECK_U64(sum[2], s.total.wait_ns);
	n = model_view(m, &q, &v);
	for (size_t i = 0; i < n && i < 20; i++) {
		struct stack_view *sv;
		size_t k = model_row_stacks(m, &q, &v[i], &sv);
		uint64_t cont = 0;

		for (size_t j = 0; j < k; j++)
			cont += sv[j].count;
		bad += cont != v[i].c.contended;
		free(sv);
	}
	CHECK_U64(bad, 0);
	free(v);
	q.coalesce = COALESCE_SITE;
	view_sums(m, &q, sum);
	CHECK_U64(sum[2], s.total.wait_ns);
	model_reset(m);
	view_sums(m, &q, sum);
	CHECK_U64(sum[0], 0);
	model_free(m);
}

/* A row's waits that timed out: five 300 ms condvar waits, one that woke. */
static void add_timeouts(struct model *m, uint32_t id)
{
	struct proto_delta d = { .row = id, .c = { .acquisitions = 1,
				 .contended = 1, .timeouts = 5, .failed = 5,
				 .wait_ns = 5 * 300000000ull + 1000000 },
				 .max_wait_ns = 300000000 };

	d.c.hist[hist_bucket(300000000)] = 5;
	d.c.hist[hist_bucket(1000000)] = 1;
	model_apply_delta(m, &d);
}

/*
 * The derived numbers: waits count both outcomes, the average is over
 * them (0 only without waits), and the share of calls that waited is
 * defined without acquisitions.
 */
static void test_derived_numbers(void)
{
	struct lock_counts only_timeouts = { .timeouts = 5, .failed = 5,
					     .wait_ns = 1500000000 };
	struct lock_counts none = { .acquisitions = 7 };
	struct lock_counts mixed = { .acquisitions = 30, .contended = 10,
				     .timeouts = 10, .wait_ns = 2000 };

	CHECK_U64(lock_counts_waits(&only_timeouts), 5);
	CHECK_DBL(lock_counts_avg_wait_ns(&only_timeouts), 300000000);
	CHECK_DBL(lock_counts_wait_share(&only_timeouts), 1);
	CHECK_DBL(lock_counts_avg_wait_ns(&none), 0);
	CHECK_DBL(lock_counts_wait_share(&none), 0);
	CHECK_DBL(lock_counts_avg_wait_ns(&mixed), 100);
	CHECK_DBL(lock_counts_wait_share(&mixed), 0.5);
}

/* Whether every line with wait time has 0 < avg <= max; says which not. */
static void check_avg_within_max(const char *what, const struct view_row *v,
				 size_t n)
{
	for (size_t i = 0; i < n; i++) {
		double avg = lock_counts_avg_wait_ns(&v[i].c);

		if (v[i].c.wait_ns == 0)
			continue;
		CHECK(avg > 0 && avg <= (double)v[i].max_wait_ns,
		      "%s line %zu: expected 0 < avg <= max, got avg %.0f, "
		      "max %" PRIu64, what, i, avg, v[i].max_wait_ns);
	}
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
	CHECK_U64(v[0].c.timeouts, 5);
	CHECK_U64(v[0].c.failed, 5);
	CHECK_DBL(lock_counts_avg_wait_ns(&v[0].c), 1501000000.0 / 6);
	check_avg_within_max("none", v, n);
	free(v);
	n = view(m, COALESCE_SITE, SORT_TOTAL, false, NULL, &v);
	CHECK_U64(v[0].c.timeouts, 5);
	check_avg_within_max("site", v, n);
	free(v);
	model_reset(m);
	add_timeouts(m, 0);
	n = view(m, COALESCE_NONE, SORT_TOTAL, false, NULL, &v);
	CHECK_U64(v[0].c.timeouts, 5);
	check_avg_within_max("after reset", v, n);
	free(v);
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
				       .count = 1, .timeouts = 5,
				       .wait_ns = 5 * 300000000ull + 1000000 };
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
		CHECK_U64(v[caller].c.contended, 1);
		CHECK_U64(v[caller].c.timeouts, 5);
		CHECK_U64(v[1 - caller].site, 0x1000);
		CHECK_U64(v[1 - caller].c.timeouts, 0);
		CHECK_U64(v[1 - caller].c.wait_ns, 0);
		check_avg_within_max("wrapper timeouts", v, n);
		k = model_row_stacks(m, &q, &v[caller], &sv);
	}
	CHECK(k == 1 && sv[0].timeouts == 5 && sv[0].count == 1,
	      "wrapper timeouts: one stack with 1 contended, 5 timeouts");
	free(sv);
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
					.count = 1, .wait_ns = 300000000 };
	struct model_query q = { .sort = by(SORT_WAIT) };
	struct proto_delta d = { .row = 0, .c = { .acquisitions = 10,
						  .wait_ns = 100000000 } };
	struct proto_tick t = { .monotonic_ns = 1000000000 };
	struct model_stats st;
	struct view_row *v;

	model_define_row(m, &r);
	model_set_origin(m, 0);
	model_apply_delta(m, &d);
	model_tick(m, &t);			/* 1 s: 100 ms waited */
	d.c.acquisitions = 1;
	d.c.wait_ns = 300000000;			/* a 300 ms wait ends in the flush */
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

/* ---- Parts of a view ---- */

/* A step of xorshift64: the fixtures' only source of variety. */
static uint64_t next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Labels shared by the sites of one 0x100 block, to make equal labels. */
static const char *coarse_label(void *ctx, uint64_t site)
{
	static char buf[32];

	(void)ctx;
	snprintf(buf, sizeof buf, "fn_%" PRIx64, site >> 8);
	return buf;
}

/*
 * 800 rows over 40 sites (one in five in a wrapper), 60 objects and three
 * types, some keys twice; small numbers, so many lines tie on a key;
 * stacks on a third of the rows, two intervals, and waits after the last.
 */
static struct model *mixed_fixture(void)
{
	struct model *m = model_new();
	uint64_t x = 0x9e3779b97f4a7c15ull;
	static const enum lock_type types[] = { LOCK_MUTEX, LOCK_SPIN,
						LOCK_RWLOCK_READ };

	for (uint32_t s = 0; s < 24; s++) {
		uint64_t f[3] = { 0x1000 + s % 8 * 0x40, 0x2000 + s * 0x90,
				  0x9000 };

		if (s % 5 == 0)
			sdef(m, s, 2, f + 1);	/* no wrapper frame */
		else
			sdef(m, s, s % 3 ? 3 : 2, f);
	}
	tick(m, 0);
	for (uint32_t id = 0; id < 800; id++) {
		uint64_t r = next_rand(&x);
		uint64_t site = r % 5 == 0 ? 0x1000 + r % 8 * 0x40
					   : 0x2000 + r % 35 * 0x90;

		def(m, id, types[r % 3], site, 0xa000 + (r >> 8) % 60 * 8);
	}
	for (int round = 0; round < 3; round++) {
		for (uint32_t id = 0; id < 800; id++) {
			uint64_t r = next_rand(&x);

			add(m, id, r % 7, r % 3, (r >> 4) % 4 * 100,
			    (r >> 8) % 5 * 50);
			if (r % 3 == 0)
				sadd(m, id, (uint32_t)(r >> 12) % 25,
				     (uint32_t)(r >> 20) % 4 + 1, r % 4,
				     (r >> 24) % 3 * 70);
		}
		if (round < 2)
			tick(m, (uint64_t)(round + 1) * 1000000000);
	}
	return m;
}

/* The sort of the old table: numbers, as view rows compare on each key. */
static int ref_key(const struct view_row *a, const struct view_row *b,
		   enum sort_key k)
{
	double aa = lock_counts_avg_wait_ns(&a->c);
	double ab = lock_counts_avg_wait_ns(&b->c);

	switch (k) {
	case SORT_WAIT:
		return (a->wait_per_s > b->wait_per_s) -
		       (a->wait_per_s < b->wait_per_s);
	case SORT_TOTAL:
		return (a->c.wait_ns > b->c.wait_ns) - (a->c.wait_ns < b->c.wait_ns);
	case SORT_AVG:
		return (aa > ab) - (aa < ab);
	case SORT_COUNT:
		return (a->c.acquisitions > b->c.acquisitions) -
		       (a->c.acquisitions < b->c.acquisitions);
	case SORT_CONTENDED:
		return (a->c.contended > b->c.contended) -
		       (a->c.contended < b->c.contended);
	case SORT_MAX:
		return (a->max_wait_ns > b->max_wait_ns) -
		       (a->max_wait_ns < b->max_wait_ns);
	default:
		return 0;
	}
}

/* A site's label as the view sorts by it, copied. */
static void ref_label(const struct model_query *q, uint64_t site, char *out,
		      size_t len)
{
	const char *l = q->site_label ? q->site_label(q->ctx, site) : NULL;

	if (q->site_label == NULL)
		snprintf(out, len, "%016" PRIx64, site);
	else
		snprintf(out, len, "%s", l ? l : "");
}

/*
 * The comparison that defined the table's order before views sorted
 * compact keys: the query's key, then total wait, site, object, type and
 * row id. A strict total order on the lines of one view.
 */
static int ref_cmp(const struct model_query *q, const struct view_row *a,
		   const struct view_row *b)
{
	char la[64], lb[64];
	int r;

	if (key_of(q->sort) == SORT_SITE) {
		ref_label(q, a->site, la, sizeof la);
		ref_label(q, b->site, lb, sizeof lb);
		r = strcmp(la, lb);
	} else {
		r = -ref_key(a, b, key_of(q->sort));
	}
	if (q->ascending)
		r = -r;
	if (r != 0)
		return r;
	if (a->c.wait_ns != b->c.wait_ns)
		return a->c.wait_ns > b->c.wait_ns ? -1 : 1;
	if (a->site != b->site)
		return a->site < b->site ? -1 : 1;
	if (a->object != b->object)
		return a->object < b->object ? -1 : 1;
	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	return (a->row_id > b->row_id) - (a->row_id < b->row_id);
}

/* A query of the combination number i: key, direction, coalescing, ... */
static struct model_query combo(unsigned i)
{
	struct model_query q = query((enum coalesce)(i % COALESCE_COUNT),
				     i / 3 % 2);

	q.sort = by((enum sort_key)(i / 6 % SORT_KEY_COUNT));
	q.ascending = i / 42 % 2;
	q.filter = i / 84 % 2 ? "2" : NULL;
	q.site_label = (const site_label_fn[]){ label_of, coarse_label,
						NULL }[i / 168 % 3];
	return q;
}

#define COMBOS (3 * 2 * SORT_KEY_COUNT * 2 * 2 * 3)

/* "sort avg ascending, coalesce site, ..." for failure messages. */
static const char *combo_name(const struct model_query *q)
{
	static char buf[128];

	snprintf(buf, sizeof buf, "sort %s%s, coalesce %s, wrappers %s, "
		 "filter %s, labels %s", q->sort->key,
		 q->ascending ? " ascending" : "", coalesce_name(q->coalesce),
		 q->skip_wrappers ? "skipped" : "shown",
		 q->filter ? q->filter : "none",
		 q->site_label == label_of ? "fine" :
		 q->site_label ? "coarse" : "none");
	return buf;
}

/* Every pair of neighbours in the order the old comparison gives. */
static void check_sorted(const struct model_query *q,
			 const struct view_row *v, size_t n)
{
	size_t bad = 0, first = 0;

	for (size_t i = 1; i < n; i++) {
		if (ref_cmp(q, &v[i - 1], &v[i]) >= 0 && bad++ == 0)
			first = i;
	}
	CHECK(bad == 0, "%s: %zu lines out of order, first at %zu",
	      combo_name(q), bad, first);
}

/* Lines [offset, offset + limit) built alone equal the whole view's. */
static void check_window(const struct model *m, const struct model_query *q,
			 const struct view_row *full, size_t n, size_t offset,
			 size_t limit)
{
	struct view_window w = { .offset = offset, .limit = limit };
	struct view_row *v;
	size_t got = model_view_window(m, q, &w, &v);
	size_t from = offset < n ? offset : n;
	size_t want = limit && limit < n - from ? limit : n - from;

	CHECK(got == want && w.total == n && w.offset == from,
	      "%s window %zu+%zu: expected %zu lines at %zu of %zu, got %zu "
	      "at %zu of %zu", combo_name(q), offset, limit, want, from, n,
	      got, w.offset, w.total);
	CHECK(got != want || got == 0 ||
	      memcmp(v, full + from, got * sizeof *v) == 0,
	      "%s window %zu+%zu: lines differ from the whole view's",
	      combo_name(q), offset, limit);
	CHECK(got != 0 || v == NULL, "empty window: expected NULL rows");
	free(v);
}

/*
 * Following line i's key finds the first line with that key in the whole
 * view, and the window moves to hold it.
 */
static void check_follow(const struct model *m, const struct model_query *q,
			 const struct view_row *full, size_t n, size_t i)
{
	struct view_window w = { .offset = 0, .limit = 5, .follow = true,
				 .type = full[i].type, .site = full[i].site,
				 .object = full[i].object };
	struct view_row *v;
	size_t want = 0, got;

	while (full[want].type != full[i].type ||
	       full[want].site != full[i].site ||
	       full[want].object != full[i].object)
		want++;
	got = model_view_window(m, q, &w, &v);
	CHECK(w.found == want && want >= w.offset && want < w.offset + got &&
	      memcmp(&v[want - w.offset], &full[want], sizeof *v) == 0,
	      "%s follow line %zu: expected found %zu in the window, got %zu "
	      "in %zu+%zu", combo_name(q), i, want, w.found, w.offset, got);
	free(v);
	w = (struct view_window){ .follow = true, .type = LOCK_CONDVAR,
				  .site = 1, .limit = 3 };
	got = model_view_window(m, q, &w, &v);
	CHECK(w.found == SIZE_MAX && w.offset == 0 && got == (n < 3 ? n : 3),
	      "%s follow a missing key: expected nothing found, got %zu",
	      combo_name(q), w.found);
	free(v);
}

/*
 * For every sort key, direction, coalescing, wrapper setting, filter and
 * labelling: the view is in the old comparison's order, and any part of
 * it built alone holds the same lines.
 */
static void test_window_equals_full_view(void)
{
	struct model *m = mixed_fixture();

	for (unsigned i = 0; i < COMBOS; i++) {
		struct model_query q = combo(i);
		struct view_row *full;
		size_t n = model_view(m, &q, &full);
		static const size_t offsets[] = { 0, 1, 2, 17, 100 };
		static const size_t limits[] = { 1, 7, 50, 0 };

		CHECK(n > 20, "%s: expected a view of many lines, got %zu",
		      combo_name(&q), n);
		check_sorted(&q, full, n);
		for (size_t a = 0; a < sizeof offsets / sizeof *offsets; a++)
			for (size_t b = 0; b < sizeof limits / sizeof *limits; b++)
				check_window(m, &q, full, n, offsets[a], limits[b]);
		check_window(m, &q, full, n, n - 3, 7);
		check_window(m, &q, full, n, n - 1, 1);
		check_window(m, &q, full, n, n, 4);
		check_window(m, &q, full, n, n + 5, 0);
		for (size_t k = 0; n > 0 && k < 4; k++)
			check_follow(m, &q, full, n, (k * 7919) % n);
		free(full);
	}
	model_free(m);
}

/* Whether stacks a and b hold the same n entries. */
static bool same_stacks(const struct stack_view *a, const struct stack_view *b,
			size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (a[i].stack != b[i].stack || a[i].depth != b[i].depth ||
		    a[i].frames != b[i].frames || a[i].count != b[i].count ||
		    a[i].wait_ns != b[i].wait_ns)
			return false;
	}
	return true;
}

/* Whether threads a and b hold the same n entries. */
static bool same_threads(const struct thread_view *a,
			 const struct thread_view *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (a[i].tid != b[i].tid || a[i].count != b[i].count ||
		    a[i].wait_ns != b[i].wait_ns)
			return false;
	}
	return true;
}

/*
 * The stacks and threads of every line found in one pass equal those
 * model_row_stacks() and model_row_threads() find line by line, for every
 * coalescing and wrapper setting (duplicate keys included).
 */
static void test_drill_equals_per_line(void)
{
	struct model *m = mixed_fixture();

	for (unsigned i = 0; i < 6; i++) {
		struct model_query q = combo(i);
		struct view_row *v;
		size_t n = model_view(m, &q, &v), bad = 0, stacked = 0;
		struct drill d;

		model_drill(m, &q, v, n, &d);
		for (size_t j = 0; j < n; j++) {
			struct stack_view *sv;
			struct thread_view *tv;
			size_t ns = model_row_stacks(m, &q, &v[j], &sv);
			size_t nt = model_row_threads(m, &q, &v[j], &tv);
			const struct line_drill *l = &d.line[j];

			bad += ns != l->n_stacks || nt != l->n_threads ||
			       !same_stacks(sv, l->stacks, ns) ||
			       !same_threads(tv, l->threads, nt) ||
			       (ns == 0) != (l->stacks == NULL) ||
			       (nt == 0) != (l->threads == NULL);
			stacked += ns > 0;
			free(sv);
			free(tv);
		}
		CHECK(bad == 0 && stacked > 20, "%s: %zu of %zu lines differ "
		      "(%zu with stacks)", combo_name(&q), bad, n, stacked);
		model_drill_free(&d);
		free(v);
	}
	model_free(m);
}

/*
 * A table built a part at a time holds the whole view's lines, and its
 * drill is the drill of those lines.
 */
static void test_table_parts(void)
{
	struct model *m = mixed_fixture();

	for (unsigned i = 0; i < COMBOS; i += 37) {
		struct model_query q = combo(i);
		struct view_row *full, part[7];
		size_t n = model_view(m, &q, &full), bad = 0, k;
		struct model_table *t = model_table_new(m, &q);
		struct drill a, b;

		CHECK(model_table_lines(t) == n, "%s: table of %zu lines, "
		      "expected %zu", combo_name(&q), model_table_lines(t), n);
		for (size_t from = 0; from < n; from += k) {
			k = model_table_rows(t, from, 7, part);
			bad += k == 0 || memcmp(part, full + from, k * sizeof *part);
		}
		CHECK(bad == 0 && model_table_rows(t, n, 7, part) == 0,
		      "%s: %zu parts differ from the whole view", combo_name(&q),
		      bad);
		model_drill(m, &q, full, n, &a);
		model_table_drill(t, &b);
		for (size_t j = 0; j < n; j++)
			bad += a.line[j].n_stacks != b.line[j].n_stacks ||
			       a.line[j].n_threads != b.line[j].n_threads ||
			       !same_stacks(a.line[j].stacks, b.line[j].stacks,
					    a.line[j].n_stacks) ||
			       !same_threads(a.line[j].threads, b.line[j].threads,
					     a.line[j].n_threads);
		CHECK(bad == 0, "%s: the table's drill differs in %zu lines",
		      combo_name(&q), bad);
		model_drill_free(&a);
		model_drill_free(&b);
		model_table_free(t);
		free(full);
	}
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
			sum.acquisitions += v[i].c.acquisitions;
			sum.contended += v[i].c.contended;
			sum.wait_ns += v[i].c.wait_ns;
			sum.failed += v[i].c.failed;
			for (int b = 0; b < HIST_BUCKETS; b++)
				sum.hist[b] += v[i].c.hist[b];
		}
		free(v);
		model_stats(m, &s);
		bad += memcmp(&sum, &s.total, sizeof sum) != 0;
		CHECK(s.total.acquisitions > 0 || round == 1,
		      "stats: expected acquisitions before the reset");
		model_reset(m);
		add(m, 7, 3, 2, 90, 40);
	}
	CHECK_U64(bad, 0);
	model_free(m);
}

/* At 100,000 rows the top and bottom lines alone are the whole view's. */
static void test_window_at_scale(void)
{
	static const struct {
		enum coalesce c;
		enum sort_key k;
		bool asc;
	} cases[] = {
		{ COALESCE_NONE, SORT_WAIT, false },
		{ COALESCE_NONE, SORT_COUNT, true },
		{ COALESCE_NONE, SORT_SITE, false },
		{ COALESCE_SITE, SORT_AVG, false },
		{ COALESCE_OBJECT, SORT_MAX, true },
	};
	struct model *m = model_new();

	for (uint32_t id = 0; id < 100000; id++) {
		def(m, id, LOCK_MUTEX, 0x10000 + (id / 100) * 16,
		    0x900000 + (id % 1000) * 64);
		add(m, id, id % 13, id % 3, id % 977, id % 89);
	}
	tick(m, 0);
	for (uint32_t id = 0; id < 100000; id += 3)
		add(m, id, 1, 1, id % 31, 1);
	tick(m, 1000000000);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct model_query q = query(cases[i].c, false);
		struct view_row *full;
		size_t n;

		q.sort = by(cases[i].k);
		q.ascending = cases[i].asc;
		n = model_view(m, &q, &full);
		check_sorted(&q, full, n);
		check_window(m, &q, full, n, 0, 20);
		check_window(m, &q, full, n, n / 2, 50);
		check_window(m, &q, full, n, n - 20, 20);
		free(full);
	}
	model_free(m);
}

int main(void)
{
	test_derived_numbers();
	test_timeouts_avg_within_max();
	test_wrapper_caller_timeouts();
	test_wrapper_caller_has_max();
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
	test_reset();
	test_coalesce_site();
	test_coalesce_object();
	test_sort_keys();
	test_tie_break();
	test_filter();
	test_types();
	test_filter_coalesced();
	test_names();
	test_empty();
	test_many_rows();
	test_stack_accumulate();
	test_stack_defined_late();
	test_no_stack();
	test_stack_reset();
	test_stack_bad_ids();
	test_stack_groups();
	test_wrapper_attribution();
	test_wrapper_merge();
	test_wrapper_all_frames();
	test_wrapper_coalesce();
	test_wrapper_reset();
	test_wrapper_via();
	test_stack_many();
	test_window_equals_full_view();
	test_stats_sum_rows();
	test_drill_equals_per_line();
	test_table_parts();
	test_window_at_scale();
	return check_summary();
}
