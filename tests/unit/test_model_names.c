/*
 * Unit tests of the stacks that name things: a line's heaviest stack
 * through its site (its caller's name, for a site without a symbol), an
 * object's first stack (a heap lock's name), and the threads seen waiting
 * for the first time (named while they live).
 */
#include "model_fixture.h"

/* The line of row 0 alone, as the view builds it. */
static size_t only_line(const struct model *m, const struct model_query *q,
			struct view_row **v)
{
	size_t n = model_view(m, q, v);

	CHECK_U64(n, 1);
	return n;
}

/* The heaviest stack by summed wait wins, and the site's frame is found. */
static void test_line_stack_heaviest(void)
{
	struct model *m = model_new();
	struct model_query q = query(COALESCE_NONE, false);
	struct stack_view sv;
	struct view_row *v;
	unsigned at = 99;

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	sdef(m, 0, 3, (uint64_t[]){ 0x100, 0x600, 0x700 });
	sdef(m, 1, 3, (uint64_t[]){ 0x100, 0x400, 0x700 });
	sadd(m, 0, 0, 1, 1, 300);	/* stack 0: 300 + 300 in two threads */
	sadd(m, 0, 0, 2, 1, 300);
	sadd(m, 0, 1, 1, 1, 500);	/* stack 1: 500, heavier than either */
	only_line(m, &q, &v);
	CHECK(model_line_stack(m, &v[0], &sv, &at),
	      "a line with stacks: expected its heaviest, got none");
	CHECK_U64(sv.stack, 0);
	CHECK_U64(sv.w.wait_ns, 600);
	CHECK_U64(at, 0);
	CHECK(sv.frames && sv.frames[1] == 0x600,
	      "frame 1 of the heaviest: expected 0x600, got %#" PRIx64,
	      sv.frames ? sv.frames[1] : 0);
	free(v);
	model_free(m);
}

/* A line with no stack yet (uncontended only) has none to name it by. */
static void test_line_stack_none(void)
{
	struct model *m = model_new();
	struct model_query q = query(COALESCE_NONE, false);
	struct stack_view sv;
	struct view_row *v;
	unsigned at;

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	add(m, 0, 10, 0, 0, 0);
	sadd(m, 0, PROTO_NO_STACK, 1, 1, 100);
	only_line(m, &q, &v);
	CHECK(!model_line_stack(m, &v[0], &sv, &at),
	      "a line whose waits were not unwound: expected no stack");
	free(v);
	model_free(m);
}

/*
 * A wrapper row's stacks attributed to its caller's line: the stack is
 * the one through the line's site, which sits at frame 1.
 */
static void test_line_stack_through_wrapper(void)
{
	struct model *m = model_new();
	struct model_query q = query(COALESCE_NONE, true);
	struct stack_view sv;
	struct view_row *v;
	unsigned at = 99;
	size_t n;

	def(m, 0, LOCK_MUTEX, 0x1010, 0xa0);
	sdef(m, 0, 3, (uint64_t[]){ 0x1010, 0x500, 0x800 });
	sadd(m, 0, 0, 1, 1, 100);
	n = model_view(m, &q, &v);
	CHECK(n == 1 && v[0].site == 0x500,
	      "the wrapper's wait on its caller's line: expected site 0x500, "
	      "got %zu lines", n);
	CHECK(n == 1 && model_line_stack(m, &v[0], &sv, &at) && at == 1,
	      "the site's frame in the stack: expected 1, got %u", at);
	free(v);
	model_free(m);
}

/*
 * An object's first stack: of the first update with one, the lowest id;
 * later updates and resets do not change it.
 */
static void test_object_first_stack(void)
{
	struct model *m = model_new();
	struct stack_view sv;

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	def(m, 1, LOCK_MUTEX, 0x200, 0xa0);
	sdef(m, 3, 2, (uint64_t[]){ 0x100, 0x600 });
	sdef(m, 5, 2, (uint64_t[]){ 0x200, 0x600 });
	sdef(m, 9, 2, (uint64_t[]){ 0x200, 0x900 });
	CHECK(!model_object_stack(m, 0xa0, &sv),
	      "an object that never waited: expected no first stack");
	sadd(m, 1, 5, 1, 1, 100);
	sadd(m, 0, 3, 2, 1, 100);
	sadd(m, 0, PROTO_NO_STACK, 2, 1, 100);
	tick(m, 1000000000);
	CHECK(model_object_stack(m, 0xa0, &sv) && sv.stack == 3,
	      "first update's stacks 5 then 3: expected 3, got %u", sv.stack);
	model_reset(m);
	sadd(m, 1, 9, 1, 1, 100);
	tick(m, 2000000000);
	CHECK(model_object_stack(m, 0xa0, &sv) && sv.stack == 3,
	      "after a reset and a later stack: expected 3 still, got %u",
	      sv.stack);
	model_free(m);
}

/* Threads are given once, as they are first seen waiting. */
static void test_new_tids(void)
{
	struct model *m = model_new();
	uint32_t tids[4];
	size_t n;

	def(m, 0, LOCK_MUTEX, 0x100, 0xa0);
	sdef(m, 0, 1, (uint64_t[]){ 0x100 });
	CHECK_U64(model_take_new_tids(m, tids, 4), 0);
	sadd(m, 0, 0, 7, 1, 10);
	sadd(m, 0, PROTO_NO_STACK, 8, 1, 10);
	sadd(m, 0, 0, 7, 1, 10);
	n = model_take_new_tids(m, tids, 1);
	CHECK(n == 1 && tids[0] == 7, "first take of 1: expected tid 7");
	n = model_take_new_tids(m, tids, 4);
	CHECK(n == 1 && tids[0] == 8, "second take: expected tid 8 alone");
	sadd(m, 0, 0, 8, 1, 10);
	CHECK_U64(model_take_new_tids(m, tids, 4), 0);
	model_free(m);
}

int main(void)
{
	test_line_stack_heaviest();
	test_line_stack_none();
	test_line_stack_through_wrapper();
	test_object_first_stack();
	test_new_tids();
	return fixture_summary();
}
