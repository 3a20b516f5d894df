/*
 * Naming unseen waits: which bytes before a return address are a call
 * (tui/waitkind.c), which kinds are idle (tui/unseen.c), and the words
 * the header and the empty table use (tui/totals.c, tui/explain.c).
 */
#include <string.h>

#include "../../tui/explain.h"
#include "../../tui/totals.h"
#include "../../tui/unseen.h"
#include "../../tui/waitkind.h"
#include "check.h"

struct call_case {
	const char *what;
	uint8_t before[8];	/* the 8 bytes that end at the return address */
	bool call;
};

static void test_follows_call(void)
{
	static const struct call_case cases[] = {
		{ "call rel32", { 0x90, 0x90, 0x90, 0xe8, 1, 2, 3, 4 }, true },
		{ "call *%rax", { 0, 0, 0, 0, 0, 0, 0xff, 0xd0 }, true },
		{ "call *%r11 (REX)", { 0, 0, 0, 0, 0, 0x41, 0xff, 0xd3 }, true },
		{ "call *(%rax)", { 0, 0, 0, 0, 0, 0, 0xff, 0x10 }, true },
		{ "call *(SIB)", { 0, 0, 0, 0, 0, 0xff, 0x14, 0x24 }, true },
		{ "call *0x8(%rbx)", { 0, 0, 0, 0, 0, 0xff, 0x53, 0x08 }, true },
		{ "call *0x8(SIB)", { 0, 0, 0, 0, 0xff, 0x54, 0x24, 0x08 }, true },
		{ "call *d32(%rip)", { 0, 0, 0xff, 0x15, 1, 2, 3, 4 }, true },
		{ "call *d32(%rbx)", { 0, 0, 0xff, 0x93, 1, 2, 3, 4 }, true },
		{ "call *d32(SIB)", { 0, 0xff, 0x94, 0x24, 1, 2, 3, 4 }, true },
		{ "jmp *%rax is no call", { 0, 0, 0, 0, 0, 0, 0xff, 0xe0 }, false },
		{ "push (ff /6) is no call", { 0, 0, 0, 0, 0, 0, 0xff, 0x30 }, false },
		{ "data", { 1, 2, 3, 4, 5, 6, 7, 8 }, false },
		{ "zeros", { 0 }, false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK(waitkind_follows_call(cases[i].before) == cases[i].call,
		      "%s: expected %s", cases[i].what,
		      cases[i].call ? "a call" : "no call");
}

static void test_idle_kinds(void)
{
	CHECK(unseen_idle_kind("pthread_join"), "a join waits for a thread's end: idle");
	CHECK(unseen_idle_kind("pthread_cond_wait"), "a condvar wait is idle");
	CHECK(!unseen_idle_kind("pthread_barrier_wait"), "a barrier is not idle");
	CHECK(!unseen_idle_kind(WAITKIND_RAW), "a raw futex wait is not idle");
	CHECK(unseen_brief_kind("pthread_cond_signal") &&
	      unseen_brief_kind("pthread_cond_broadcast"),
	      "a condvar's signal waits only in passing: not counted");
	CHECK(!unseen_brief_kind("pthread_barrier_wait") &&
	      !unseen_brief_kind(WAITKIND_RAW),
	      "a barrier and a raw futex wait are counted");
}

/* Stats with the unseen waits given, in order. */
static void stats_with(struct model_stats *st, const struct unseen_wait *w,
		       size_t n)
{
	memset(st, 0, sizeof *st);
	for (size_t i = 0; i < n; i++)
		st->unseen[i] = w[i];
	st->n_unseen = n;
}

static void test_texts(void)
{
	static const struct unseen_wait waits[] = {
		{ "pthread_barrier_wait", 8, false },
		{ "raw futex", 2, false },
		{ "pthread_join", 1, true },
	};
	struct model_stats st;
	char buf[1024];

	stats_with(&st, waits, 3);
	CHECK(totals_unseen_list(buf, sizeof(buf), &st, false), "locks listed");
	CHECK_STR(buf, "8 threads in pthread_barrier_wait, 2 in raw futex");
	CHECK(totals_unseen_list(buf, sizeof(buf), &st, true), "idle listed");
	CHECK_STR(buf, "1 thread in pthread_join");
	explain_unseen(buf, sizeof(buf), &st);
	CHECK_STR(buf, "Not seen: 8 threads in pthread_barrier_wait, 2 in raw "
		  "futex: waits no hook times (the threads are looked at once a "
		  "second).");
	CHECK(explain_idle(buf, sizeof(buf), &st), "the idle ones explained");
	stats_with(&st, waits + 2, 1);
	CHECK(!totals_unseen_list(buf, sizeof(buf), &st, false) && buf[0] == '\0',
	      "idle waits alone: nothing for the header");
	stats_with(&st, NULL, 0);
	explain_unseen(buf, sizeof(buf), &st);
	CHECK(strncmp(buf, "Not seen: no thread", 19) == 0,
	      "none found: the empty table says so, got \"%s\"", buf);
	CHECK(!explain_idle(buf, sizeof(buf), &st), "no idle line");
	explain_looked(buf, sizeof(buf), "injected");
	CHECK(strstr(buf, "pthread mutexes") && strstr(buf, "injected"),
	      "what was looked at names the hooked calls and how: \"%s\"", buf);
}

int main(void)
{
	test_follows_call();
	test_idle_kinds();
	test_texts();
	return check_summary();
}
