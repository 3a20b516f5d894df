/*
 * Unit tests of the model's views: coalescing, sort keys and their tie
 * break, filters, types and names, and windows of a view.
 */
#include "../../tui/field.h"
#include "../../tui/procs.h"
#include "model_fixture.h"

static enum sort_key key_of(const struct field *c)
{
	int k = 0;

	while (k < SORT_KEY_COUNT && strcmp(c->key, sort_names[k]) != 0)
		k++;
	return (enum sort_key)k;
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
		CHECK_U64(a->c.calls.acquisitions, 30);
		CHECK_U64(a->c.calls.wait_ns, 400);
		CHECK_U64(a->c.hist[3], 3);
		CHECK_U64(a->max_wait_ns, 80);
		CHECK_U64(a->row_id, 1);
		CHECK_DBL(a->wait_per_s, 400);
		CHECK_DBL(a->acq_per_s, 30);
		CHECK_U64(a->trend[TREND_LEN - 1], 400);
		CHECK_U64(b->n_objects, 1);
		CHECK_U64(b->c.calls.wait_ns, 50);
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
		CHECK_U64(x->c.calls.wait_ns, 70);
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
		{ SORT_SITE, true, "alpha beta gamma" },	/* A to Z */
		{ SORT_SITE, false, "gamma beta alpha" },
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

/* Rows 0, 1, 2 at worker_lock, Queue_Push and main, one wait each. */
static void three_rows(struct model *m)
{
	def(m, 0, LOCK_MUTEX, 0x400, 0xa0);	/* worker_lock */
	def(m, 1, LOCK_MUTEX, 0x500, 0xb0);	/* Queue_Push */
	def(m, 2, LOCK_MUTEX, 0x600, 0xc0);	/* main */
	add(m, 0, 1, 1, 20, 1);
	add(m, 1, 1, 1, 30, 1);
	add(m, 2, 1, 1, 10, 1);
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

	three_rows(m);
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

/* Row 1 (Queue_Push) is called by producer_loop and locks "job_queue". */
static const char *names_of(void *ctx, uint64_t site, uint64_t object,
			    uint32_t id)
{
	(void)ctx;
	(void)site;
	(void)object;
	return id == 1 ? "producer_loop job_queue" : NULL;
}

/*
 * The filter also finds a line by the names its row has beside its
 * site's label: its named caller, its lock's name; either half matches.
 */
static void test_filter_names(void)
{
	static const struct {
		const char *filter;
		const char *want;
	} cases[] = {
		{ "producer", "Queue_Push" },
		{ "JOB_QUEUE", "Queue_Push" },
		{ "main", "main" },
		{ "pid:1", "" },
		{ "nothing", "" },
	};
	struct model *m = model_new();
	struct view_row *v;
	char got[128];

	three_rows(m);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct model_query q = { .sort = by(SORT_TOTAL),
					 .filter = cases[i].filter,
					 .site_label = label_of,
					 .row_names = names_of };
		size_t n = model_view(m, &q, &v);

		view_labels(v, n, got, sizeof got);
		CHECK(strcmp(got, cases[i].want) == 0,
		      "filter \"%s\" with row names: expected \"%s\", got \"%s\"",
		      cases[i].filter, cases[i].want, got);
		free(v);
	}
	model_free(m);
}

/* Process 1's code at 0x400 is process 0's (codes.h, in small). */
static uint64_t same_code(void *ctx, uint64_t site)
{
	(void)ctx;
	return site == procs_tag(1, 0x400) ? 0x400 : site;
}

/*
 * Joined (model_query.code), the rows of one code and one lock in two
 * processes are one line of both, uncoalesced, in the cached view too;
 * the other lock stays its own.
 */
static void check_joined(struct model *m, uint64_t shared)
{
	struct model_query q = query(COALESCE_NONE, false);
	struct view_window w = { .limit = 0 };
	struct view_cache *c = view_cache_new();
	struct view_row *v, *vc;
	size_t n, nc;

	q.code = same_code;
	n = model_view(m, &q, &v);
	CHECK(n == 2 && v[0].object == shared && v[0].site == 0x400 &&
	      v[0].c.calls.acquisitions == 2 && v[0].procs_mixed &&
	      row_pid(&v[1]) == 200,
	      "joined: the shared lock at one code is one line of both "
	      "processes, the other its own: %zu lines", n);
	nc = model_view_cached(m, &q, 0, c, &w, &vc);
	CHECK(nc == n && nc > 0 && vc[0].c.calls.acquisitions ==
	      v[0].c.calls.acquisitions,
	      "joined: the cached view builds the same %zu lines, got %zu", n, nc);
	free(v);
	free(vc);
	view_cache_free(c);
}

/*
 * Rows of two processes (procs.h): "pid:N" keeps one process's lines; a
 * lock both share is one line of -m object, of neither PID alone.
 */
static void test_processes(void)
{
	uint64_t p1 = procs_tag(1, 0x400), shared = procs_tag(0, 0xa0);
	struct model *m = model_new();
	struct view_row *v;
	size_t n;

	procs_set_pid(0, 100);
	procs_set_pid(1, 200);
	def(m, 0, LOCK_MUTEX, 0x400, shared);	/* process 0 */
	def(m, 1, LOCK_MUTEX, p1, shared);	/* process 1, the same lock */
	def(m, 2, LOCK_MUTEX, p1, procs_tag(1, 0xb0));
	add(m, 0, 1, 1, 20, 1);
	add(m, 1, 1, 1, 30, 1);
	add(m, 2, 1, 1, 10, 1);
	n = view(m, COALESCE_NONE, SORT_TOTAL, false, "pid:200", &v);
	CHECK(n == 2 && row_pid(&v[0]) == 200 && row_pid(&v[1]) == 200,
	      "pid:200 keeps process 200's 2 lines: got %zu, pids %.0f %.0f", n,
	      n > 0 ? row_pid(&v[0]) : -1, n > 1 ? row_pid(&v[1]) : -1);
	free(v);
	n = view(m, COALESCE_NONE, SORT_TOTAL, false, "pid:100", &v);
	CHECK(n == 1 && row_pid(&v[0]) == 100,
	      "pid:100 keeps process 100's line: got %zu", n);
	free(v);
	sadd(m, 0, PROTO_NO_STACK, 11, 1, 20);	/* a thread of process 0 */
	sadd(m, 1, PROTO_NO_STACK, 22, 1, 30);	/* one of process 1 */
	n = view(m, COALESCE_OBJECT, SORT_TOTAL, false, NULL, &v);
	CHECK(n == 2 && v[0].object == shared && v[0].c.calls.acquisitions == 2 &&
	      v[0].procs_mixed && row_pid(&v[0]) == 0 && row_pid(&v[1]) == 200,
	      "-m object: the shared lock is one line of both processes "
	      "(no PID), the other lock process 200's: %zu lines", n);
	if (n == 2) {
		struct model_query q = query(COALESCE_OBJECT, false);
		struct thread_view *tv;
		size_t k = model_row_threads(m, &q, &v[0], &tv);

		CHECK(k == 2 && tv[0].tid == 22 && tv[0].proc == 1 &&
		      tv[1].tid == 11 && tv[1].proc == 0,
		      "the shared lock's threads carry their processes: %zu "
		      "threads", k);
		free(tv);
	}
	free(v);
	check_joined(m, shared);
	procs_set_pid(0, 0);
	procs_set_pid(1, 0);
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
		{ SORT_SITE, true, false, 0, "main worker_lock Queue_Push" },
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

	for (size_t i = 0; i < field_count(); i++)
		CHECK(field_at(i)->key == NULL ||
		      field_by_key(field_at(i)->key) == field_at(i),
		      "sort key \"%s\": expected its field %zu",
		      field_at(i)->key, i);
	for (int k = 0; k < SORT_KEY_COUNT; k++)
		CHECK(by((enum sort_key)k) != NULL &&
		      column_of(by((enum sort_key)k)) != NULL,
		      "sort key \"%s\": no field or no column",
		      sort_names[k]);
	for (int c = 0; c < COALESCE_COUNT; c++)
		CHECK(coalesce_parse(coalesce_name((enum coalesce)c)) == c,
		      "coalesce %d: expected round trip, got %d via \"%s\"", c,
		      coalesce_parse(coalesce_name((enum coalesce)c)),
		      coalesce_name((enum coalesce)c));
	CHECK_STR(column_of(by(SORT_AVG))->title, "AVG");
	CHECK_STR(column_of(by(SORT_CONTENDED))->title, "CONT%");
	CHECK_STR(coalesce_name(COALESCE_OBJECT), "object");
	CHECK_U64(coalesce_parse("site"), COALESCE_SITE);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		CHECK(field_by_key(bad[i]) == NULL,
		      "sort key \"%s\": expected none, got %s", bad[i],
		      field_by_key(bad[i]) ? field_by_key(bad[i])->key : "");
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
	CHECK_U64(s.total.calls.acquisitions, 0);
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
		return (a->c.calls.wait_ns > b->c.calls.wait_ns) - (a->c.calls.wait_ns < b->c.calls.wait_ns);
	case SORT_AVG:
		return (aa > ab) - (aa < ab);
	case SORT_COUNT:
		return (a->c.calls.acquisitions > b->c.calls.acquisitions) -
		       (a->c.calls.acquisitions < b->c.calls.acquisitions);
	case SORT_CONTENDED:
		return (a->c.calls.contended > b->c.calls.contended) -
		       (a->c.calls.contended < b->c.calls.contended);
	case SORT_MAX:		/* as the column shows it: never below AVG */
		return (row_max_wait(a) > row_max_wait(b)) -
		       (row_max_wait(a) < row_max_wait(b));
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
		r = -strcmp(la, lb);
	} else {
		r = -ref_key(a, b, key_of(q->sort));
	}
	if (q->ascending)
		r = -r;
	if (r != 0)
		return r;
	if (a->c.calls.wait_ns != b->c.calls.wait_ns)
		return a->c.calls.wait_ns > b->c.calls.wait_ns ? -1 : 1;
	if (a->site != b->site)
		return a->site < b->site ? -1 : 1;
	if (a->object != b->object)
		return a->object < b->object ? -1 : 1;
	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	return (a->row_id > b->row_id) - (a->row_id < b->row_id);
}

/* Every pair of neighbours in the order the old comparison gives. */
static void check_sorted(struct check_tally *t, const struct model_query *q,
			 const struct view_row *v, size_t n)
{
	size_t bad = 0, first = 0;

	for (size_t i = 1; i < n; i++) {
		if (ref_cmp(q, &v[i - 1], &v[i]) >= 0 && bad++ == 0)
			first = i;
	}
	TALLY(t, bad == 0, "%s: %zu lines out of order, first at %zu",
	      combo_name(q), bad, first);
}

/* Lines [offset, offset + limit) built alone equal the whole view's. */
static void check_window(struct check_tally *t, const struct model *m,
			 const struct model_query *q,
			 const struct view_row *full, size_t n, size_t offset,
			 size_t limit)
{
	struct view_window w = { .offset = offset, .limit = limit };
	struct view_row *v;
	size_t got = model_view_window(m, q, &w, &v);
	size_t from = offset < n ? offset : n;
	size_t want = limit && limit < n - from ? limit : n - from;

	TALLY(t, got == want && w.total == n && w.offset == from,
	      "%s window %zu+%zu: expected %zu lines at %zu of %zu, got %zu "
	      "at %zu of %zu", combo_name(q), offset, limit, want, from, n,
	      got, w.offset, w.total);
	TALLY(t, got != want || got == 0 ||
	      memcmp(v, full + from, got * sizeof *v) == 0,
	      "%s window %zu+%zu: lines differ from the whole view's",
	      combo_name(q), offset, limit);
	TALLY(t, got != 0 || v == NULL, "empty window: expected NULL rows");
	free(v);
}

/*
 * Following line i's key finds the first line with that key in the whole
 * view, and the window moves to hold it.
 */
static void check_follow(struct check_tally *t, const struct model *m, const struct model_query *q,
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
	TALLY(t, w.found == want && want >= w.offset && want < w.offset + got &&
	      memcmp(&v[want - w.offset], &full[want], sizeof *v) == 0,
	      "%s follow line %zu: expected found %zu in the window, got %zu "
	      "in %zu+%zu", combo_name(q), i, want, w.found, w.offset, got);
	free(v);
	w = (struct view_window){ .follow = true, .type = LOCK_CONDVAR,
				  .site = 1, .limit = 3 };
	got = model_view_window(m, q, &w, &v);
	TALLY(t, w.found == SIZE_MAX && w.offset == 0 && got == (n < 3 ? n : 3),
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
	struct check_tally sorted = { 0 }, windows = { 0 }, follows = { 0 };

	for (unsigned i = 0; i < COMBOS; i++) {
		struct model_query q = combo(i);
		struct view_row *full;
		size_t n = model_view(m, &q, &full);
		static const size_t offsets[] = { 0, 1, 2, 17, 100 };
		static const size_t limits[] = { 1, 7, 50, 0 };

		TALLY(&sorted, n > 20, "%s: expected a view of many lines, got %zu",
		      combo_name(&q), n);
		check_sorted(&sorted, &q, full, n);
		for (size_t a = 0; a < sizeof offsets / sizeof *offsets; a++)
			for (size_t b = 0; b < sizeof limits / sizeof *limits; b++)
				check_window(&windows, m, &q, full, n, offsets[a], limits[b]);
		check_window(&windows, m, &q, full, n, n - 3, 7);
		check_window(&windows, m, &q, full, n, n - 1, 1);
		check_window(&windows, m, &q, full, n, n, 4);
		check_window(&windows, m, &q, full, n, n + 5, 0);
		for (size_t k = 0; n > 0 && k < 4; k++)
			check_follow(&follows, m, &q, full, n, (k * 7919) % n);
		free(full);
	}
	CHECK_TALLY(&sorted, "every combination: many lines, in order");
	CHECK_TALLY(&windows, "every combination: each window equals the "
		    "whole view's lines");
	CHECK_TALLY(&follows, "every combination: following a key finds it");
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
	struct check_tally sorted = { 0 }, windows = { 0 };

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
		check_sorted(&sorted, &q, full, n);
		check_window(&windows, m, &q, full, n, 0, 20);
		check_window(&windows, m, &q, full, n, n / 2, 50);
		check_window(&windows, m, &q, full, n, n - 20, 20);
		free(full);
	}
	CHECK_TALLY(&sorted, "100,000 rows: in order");
	CHECK_TALLY(&windows, "100,000 rows: top, middle and bottom windows "
		    "equal the whole view's lines");
	model_free(m);
}

/* Whether two built lines are equal, every field compared. */
static bool same_rows(const struct view_row *a, const struct view_row *b,
		      size_t n)
{
	return n == 0 || memcmp(a, b, n * sizeof *a) == 0;
}

/* One refresh: the cached view against the whole one, for window w. */
static bool cached_as_full(struct model *m, const struct model_query *q,
			   struct view_cache *c, struct view_window w,
			   char *why, size_t len)
{
	struct view_window wf = w;
	struct view_row *vc, *vf;
	size_t nc = model_view_cached(m, q, 1, c, &w, &vc);
	size_t nf = model_view_window(m, q, &wf, &vf);
	bool ok = nc == nf && w.total == wf.total && w.found == wf.found &&
		  w.offset == wf.offset && same_rows(vc, vf, nf);

	if (!ok)
		snprintf(why, len, "sort %s, offset %zu, limit %zu: expected "
			 "%zu lines of %zu, found %zu, got %zu of %zu, found %zu%s",
			 q->sort->key, wf.offset, wf.limit, nf, wf.total,
			 wf.found, nc, w.total, w.found,
			 nc == nf ? " (lines differ)" : "");
	free(vc);
	free(vf);
	return ok;
}

/*
 * The cached view of the live screen equals the whole view after every
 * change: rows changing a few at a time, quiet ones, rows defined late,
 * sorts, windows and a followed line, then queries it does not follow.
 */
static void test_cached_view(void)
{
	struct model *m = model_new();
	struct view_cache *c = view_cache_new(), *c2 = view_cache_new();
	struct check_tally t = { 0 };
	uint64_t x = 99;
	char why[256];

	tick(m, 0);
	for (uint32_t id = 0; id < 3000; id++)
		def(m, id, id % 7 ? LOCK_MUTEX : LOCK_CONDVAR,
		    0x2000 + id % 40 * 0x10, 0xa000 + id * 8);
	for (uint32_t id = 0; id < 3000; id++)
		add(m, id, 1 + id % 5, id % 3, id % 11 * 10, id % 11 * 5);
	for (int k = 1; k <= 120; k++) {
		struct model_query q = query(COALESCE_NONE, false);
		uint64_t r = next_rand(&x);
		struct view_window w = { .offset = r % 3000, .limit = 1 + r % 90,
					 .follow = r % 2, .type = LOCK_MUTEX,
					 .site = 0x2000 + r % 40 * 0x10,
					 .object = 0xa000 + (r >> 8) % 3100 * 8 };

		q.sort = by((enum sort_key)(k / 20 % SORT_SITE));
		q.ascending = k % 3 == 0;
		for (int i = 0; i < 30; i++) {
			uint32_t id = (uint32_t)(next_rand(&x) % (k % 10 ? 200 : 3000));

			add(m, id, next_rand(&x) % 5, id % 2, next_rand(&x) % 900, 90);
		}
		if (k % 17 == 0)
			def(m, 3000 + (uint32_t)k, LOCK_MUTEX, 0x2000, 0xf0000 + k);
		if (k % 2)
			tick(m, (uint64_t)k * 100000000);
		if (k == 60)
			model_reset(m);
		TALLY(&t, cached_as_full(m, &q, c, w, why, sizeof(why)), "%s", why);
		q.types = 1u << LOCK_CONDVAR;	/* another cache: both rebuild */
		if (k % 10 == 0)
			TALLY(&t, cached_as_full(m, &q, c2, w, why, sizeof(why)),
			      "%s", why);
		q.types = 0;
		q.coalesce = COALESCE_SITE;
		TALLY(&t, cached_as_full(m, &q, c, w, why, sizeof(why)), "%s", why);
	}
	CHECK_TALLY(&t, "cached view: the whole view's lines after each change");
	view_cache_free(c);
	view_cache_free(c2);
	model_free(m);
}

int main(void)
{
	test_cached_view();
	test_coalesce_site();
	test_coalesce_object();
	test_sort_keys();
	test_tie_break();
	test_filter();
	test_filter_names();
	test_processes();
	test_types();
	test_filter_coalesced();
	test_names();
	test_empty();
	test_many_rows();
	test_window_equals_full_view();
	test_window_at_scale();
	return fixture_summary();
}
