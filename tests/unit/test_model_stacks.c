/*
 * Unit tests of the stacks and threads behind a line of the model's view,
 * and of the parts of a view the table draws.
 */
#include "model_fixture.h"

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
	CHECK_U64(sv[0].w.count, 2);
	free(sv);
	sdef(m, 5, 3, (uint64_t[]){ 0x100, 0x200, 0x300 });
	CHECK_U64(model_row_stacks(m, &q, &v[0], &sv), 1);
	CHECK_U64(sv[0].depth, 3);
	CHECK(sv[0].frames != NULL && sv[0].frames[2] == 0x300,
	      "defined late, frame 2: expected 0x300, got %#" PRIx64,
	      sv[0].frames ? sv[0].frames[2] : 0);
	CHECK_U64(sv[0].w.wait_ns, 20);
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
	CHECK_U64(s.total.calls.acquisitions, 200000);
	view_sums(m, &q, sum);
	CHECK_U64(sum[0], s.total.calls.acquisitions);
	CHECK_U64(sum[1], s.total.calls.contended);
	CHECK_U64(sum[2], s.total.calls.wait_ns);
	n = model_view(m, &q, &v);
	for (size_t i = 0; i < n && i < 20; i++) {
		struct stack_view *sv;
		size_t k = model_row_stacks(m, &q, &v[i], &sv);
		uint64_t cont = 0;

		for (size_t j = 0; j < k; j++)
			cont += sv[j].w.count;
		bad += cont != v[i].c.calls.contended;
		free(sv);
	}
	CHECK_U64(bad, 0);
	free(v);
	q.coalesce = COALESCE_SITE;
	view_sums(m, &q, sum);
	CHECK_U64(sum[2], s.total.calls.wait_ns);
	model_reset(m);
	view_sums(m, &q, sum);
	CHECK_U64(sum[0], 0);
	model_free(m);
}

/* Whether stacks a and b hold the same n entries. */
static bool same_stacks(const struct stack_view *a, const struct stack_view *b,
			size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (a[i].stack != b[i].stack || a[i].depth != b[i].depth ||
		    a[i].frames != b[i].frames || a[i].w.count != b[i].w.count ||
		    a[i].w.wait_ns != b[i].w.wait_ns)
			return false;
	}
	return true;
}

/* Whether threads a and b hold the same n entries. */
static bool same_threads(const struct thread_view *a,
			 const struct thread_view *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (a[i].tid != b[i].tid || a[i].w.count != b[i].w.count ||
		    a[i].w.wait_ns != b[i].w.wait_ns)
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

int main(void)
{
	test_stack_accumulate();
	test_stack_defined_late();
	test_no_stack();
	test_stack_reset();
	test_stack_bad_ids();
	test_stack_groups();
	test_stack_many();
	test_drill_equals_per_line();
	test_table_parts();
	return fixture_summary();
}
