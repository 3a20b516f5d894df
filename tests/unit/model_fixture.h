/*
 * What the model's unit tests share: site labels, building a model from
 * rows, deltas, stacks and ticks, the queries and fixtures the tests view
 * it with, and checks of the stacks and threads behind a line.
 */
#ifndef QSPTOP_TEST_MODEL_FIXTURE_H
#define QSPTOP_TEST_MODEL_FIXTURE_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tui/column.h"
#include "../../tui/model.h"
#include "check.h"

/* ---- Building a model and viewing it ---- */

/* The sort keys the tests name, and the fields (field.h) sorting by them. */
enum sort_key {
	SORT_WAIT, SORT_TOTAL, SORT_AVG, SORT_COUNT, SORT_CONTENDED, SORT_MAX,
	SORT_SITE, SORT_KEY_COUNT
};

static const char *const sort_names[SORT_KEY_COUNT] = {
	"wait", "total", "avg", "count", "contended", "max", "site",
};

static inline const struct field *by(enum sort_key k)
{
	return field_by_key(sort_names[k]);
}

#define CHECK_DBL(got, want)                                               \
	CHECK(near((got), (want)), "%s: expected %.9g, got %.9g", #got,   \
	      (double)(want), (double)(got))

/* Whether two doubles agree to a part in 1e9. */
static inline int near(double a, double b)
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
static inline const char *label_of(void *ctx, uint64_t site)
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

/* Every fixture row and stack defined: one check, made by fixture_summary(). */
static struct check_tally fixture_defined;

static inline void def(struct model *m, uint32_t id, enum lock_type type,
		       uint64_t site, uint64_t object)
{
	struct proto_row r = { .id = id, .type = (uint8_t)type, .site = site,
			       .object = object };

	TALLY(&fixture_defined, model_define_row(m, &r) == 0,
	      "define row %u: expected 0, got -1", id);
}

/* Apply a delta; each acquisition with contention lands in bucket 3. */
static inline void add(struct model *m, uint32_t id, uint64_t acq,
		       uint64_t cont, uint64_t wait, uint64_t max)
{
	struct proto_delta d = { .row = id, .c.calls = { .acquisitions = acq,
				 .contended = cont, .wait_ns = wait,
				 .failed = 1 }, .max_wait_ns = max };

	d.c.hist[3] = cont;
	model_apply_delta(m, &d);
}

static inline void tick(struct model *m, uint64_t ns)
{
	struct proto_tick t = { .monotonic_ns = ns, .threads_seen = 7,
				.threads_live = 3, .dropped = 11 };

	model_tick(m, &t);
}

/* Build a view with the common query fields. */
static inline size_t view(const struct model *m, enum coalesce c,
			  enum sort_key k, bool asc, const char *filter,
			  struct view_row **rows)
{
	struct model_query q = { .coalesce = c, .sort = by(k), .ascending = asc,
				 .filter = filter, .site_label = label_of };

	return model_view(m, &q, rows);
}

/* ---- Stacks and threads behind a line ---- */

/* Wrapper functions occupy [0x1000, 0x1200). */
static inline bool in_wrapper(void *ctx, uint64_t address)
{
	(void)ctx;
	return address >= 0x1000 && address < 0x1200;
}

static inline void sdef(struct model *m, uint32_t id, uint8_t depth,
			const uint64_t *frames)
{
	struct proto_stack st = { .id = id, .depth = depth };

	memcpy(st.frames, frames, depth * sizeof *frames);
	TALLY(&fixture_defined, model_define_stack(m, &st) == 0,
	      "define stack %u: expected 0, got -1", id);
}

static inline void sadd(struct model *m, uint32_t row, uint32_t stack,
			uint32_t tid, uint64_t count, uint64_t wait)
{
	struct proto_stack_delta d = { .row = row, .stack = stack, .tid = tid,
				       .w = { .count = count, .wait_ns = wait } };

	model_apply_stack_delta(m, &d);
}

static inline struct model_query query(enum coalesce c, bool skip)
{
	return (struct model_query){ .coalesce = c, .sort = by(SORT_TOTAL),
				     .site_label = label_of,
				     .skip_wrappers = skip,
				     .is_wrapper = in_wrapper };
}

/* The line of a site, object and type, or NULL. */
static inline const struct view_row *find_t(const struct view_row *v, size_t n,
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
static inline void stacks_of(const struct model *m, const struct model_query *q,
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
			 sv[i].w.count, sv[i].w.wait_ns);
	}
	CHECK(n != 0 || sv == NULL, "no stacks: expected NULL, got %p",
	      (void *)sv);
	free(sv);
}

/* The threads of a line as "tid:count:wait ...". */
static inline void threads_of(const struct model *m,
			      const struct model_query *q,
			      const struct view_row *r, char *out, size_t len)
{
	struct thread_view *tv;
	size_t n = model_row_threads(m, q, r, &tv);

	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		snprintf(out + strlen(out), len - strlen(out),
			 "%s%u:%" PRIu64 ":%" PRIu64, i ? " " : "", tv[i].tid,
			 tv[i].w.count, tv[i].w.wait_ns);
	CHECK(n != 0 || tv == NULL, "no threads: expected NULL, got %p",
	      (void *)tv);
	free(tv);
}

/* Check the stacks and threads behind the line of (site, object, type). */
static inline void check_line(const struct model *m,
			      const struct model_query *q, uint64_t site,
			      uint64_t object, enum lock_type type,
			      const char *want_stacks,
			      const char *want_threads)
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

/* Sums of the lines of a view: acquisitions, contended, wait. */
static inline void view_sums(const struct model *m, const struct model_query *q,
			     uint64_t sum[3])
{
	struct view_row *v;
	size_t n = model_view(m, q, &v);

	sum[0] = sum[1] = sum[2] = 0;
	for (size_t i = 0; i < n; i++) {
		sum[0] += v[i].c.calls.acquisitions;
		sum[1] += v[i].c.calls.contended;
		sum[2] += v[i].c.calls.wait_ns;
	}
	free(v);
}

/* ---- Timed-out waits ---- */

/* A row's waits that timed out: five 300 ms condvar waits, one that woke. */
static inline void add_timeouts(struct model *m, uint32_t id)
{
	struct proto_delta d = { .row = id, .c.calls = { .acquisitions = 1,
				 .contended = 1, .timeouts = 5, .failed = 5,
				 .wait_ns = 5 * 300000000ull + 1000000 },
				 .max_wait_ns = 300000000 };

	d.c.hist[hist_bucket(300000000)] = 5;
	d.c.hist[hist_bucket(1000000)] = 1;
	model_apply_delta(m, &d);
}

/* Whether every line with wait time has 0 < avg <= max; says which not. */
static inline void check_avg_within_max(const char *what,
					const struct view_row *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		double avg = lock_counts_avg_wait_ns(&v[i].c);

		if (v[i].c.calls.wait_ns == 0)
			continue;
		CHECK(avg > 0 && avg <= (double)v[i].max_wait_ns,
		      "%s line %zu: expected 0 < avg <= max, got avg %.0f, "
		      "max %" PRIu64, what, i, avg, v[i].max_wait_ns);
	}
}

/* ---- A mixed model, viewed with every combination of a query ---- */

/* A step of xorshift64: the fixtures' only source of variety. */
static inline uint64_t next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Labels shared by the sites of one 0x100 block, to make equal labels. */
static inline const char *coarse_label(void *ctx, uint64_t site)
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
static inline struct model *mixed_fixture(void)
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

/* A query of the combination number i: key, direction, coalescing, ... */
static inline struct model_query combo(unsigned i)
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
static inline const char *combo_name(const struct model_query *q)
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

/* The one check of the fixture's set-up, then the summary line. */
static inline int fixture_summary(void)
{
	CHECK_TALLY(&fixture_defined, "every fixture row and stack defined");
	return check_summary();
}

#endif
