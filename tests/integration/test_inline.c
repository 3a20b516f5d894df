/*
 * Lock calls the compiler inlined, through the real program: `qsptop -b
 * --json` on wl_inline (a static inline helper inlined into three callers,
 * once through a second helper) and wl_inline_cxx (std::lock_guard in a
 * helper of the program's own, inlined into two callers, and used
 * directly), both built -O2, and wl_cxx. A site must be the line of the
 * lock call in the program's own sources, never a libstdc++ header's,
 * with the chain of where that code was inlined; each caller has a row of
 * its own (its own return address), counted exactly; a stack's frames
 * read the same; the batch table says so.
 */
#include <cJSON.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../unit/check.h"
#include "harness.h"

enum { RUN_TIMEOUT_MS = 120000 };

/* A finished run of a workload: its snapshot and the batch table. */
struct watched {
	cJSON *snap;
	char *table;
	char result[PATH_MAX];
};

/* Run wl_NAME under qsptop -b -j, RESULT in the scratch directory. */
static struct watched watch(const char *name)
{
	char *json = tmp_path("inline.json"), path[PATH_MAX + 64];
	struct watched w = { 0 };
	char *argv[] = { qsptop, "-b", "-d", "0.2", "-j", json, "--", path,
			 w.result, NULL };
	struct run r;

	snprintf(path, sizeof(path), "%s/tests/wl_%s", build, name);
	snprintf(w.result, sizeof(w.result), "%s", tmp_path("inline.res"));
	unlink(json);
	unlink(w.result);
	r = run_capture(argv, RUN_TIMEOUT_MS, 0);
	CHECK(r.status == 0, "wl_%s: qsptop exits 0, got %d: %s", name,
	      r.status, r.err);
	w.snap = load_json(json);
	CHECK(w.snap != NULL, "wl_%s: a JSON snapshot", name);
	w.table = r.out;
	free(r.err);
	return w;
}

static void watched_free(struct watched *w)
{
	cJSON_Delete(w->snap);
	free(w->table);
}

/* A place is in tests/workloads/SOURCE on the line marked "site:MARKER". */
static bool at(const cJSON *place, const char *source, const char *marker)
{
	const char *file = str_field(place, "file");
	size_t len = file ? strlen(file) : 0, slen = strlen(source);

	return len > slen && strcmp(file + len - slen, source) == 0 &&
	       file[len - slen - 1] == '/' &&
	       num_field(place, "line") == marker_line(source, marker);
}

/* One place of a site's chain: function, and where. */
struct place {
	const char *function;
	const char *marker;
};

/*
 * Check a caller's rows: their site is in function (the symbol's own
 * code when NULL) at marker's line, inlined as chain says (innermost
 * first, the last being the caller); they hold what the caller counted.
 * Returns the address of its first row's site, 0 if none.
 */
static unsigned long long check_caller(const struct watched *w,
				       const char *source, const char *caller,
				       const char *function, const char *marker,
				       const struct place *chain, int depth)
{
	unsigned long long address = 0;
	const cJSON *row;
	double acq = 0;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(w->snap, "rows")) {
		const cJSON *site = cJSON_GetObjectItem(row, "site");
		const cJSON *in = cJSON_GetObjectItem(site, "inlined_in");
		const char *hex = str_field(site, "address");
		int n = cJSON_GetArraySize(in);

		if (!names_function(str_field(site, "symbol"), caller))
			continue;
		acq += num_field(row, "acquisitions");
		if (!address && hex)
			address = strtoull(hex, NULL, 16);
		CHECK(names_function(str_field(site, "function"), function ? function : caller),
		      "%s: the lock call is in %s, got %s", caller,
		      function ? function : caller, str_field(site, "function"));
		CHECK(at(site, source, marker), "%s: the site is %s:%d, got %s:%.0f",
		      caller, source, marker_line(source, marker),
		      str_field(site, "file"), num_field(site, "line"));
		CHECK(cJSON_IsArray(in) && n == depth,
		      "%s: inlined %d times, got %d", caller, depth, n);
		for (int i = 0; i < n && i < depth; i++) {
			const cJSON *p = cJSON_GetArrayItem(in, i);

			CHECK(names_function(str_field(p, "function"), chain[i].function) &&
			      at(p, source, chain[i].marker),
			      "%s: inlined_in[%d] is %s at %s:%d, got %s at %s:%.0f",
			      caller, i, chain[i].function, source,
			      marker_line(source, chain[i].marker),
			      str_field(p, "function"), str_field(p, "file"),
			      num_field(p, "line"));
		}
	}
	CHECK(acq == result_number(w->result, caller),
	      "%s: %.0f acquisitions, the workload made %ld", caller, acq,
	      result_number(w->result, caller));
	return address;
}

/*
 * The first frame of the stack of caller_a's wait (it waits once behind
 * a holder) is its site, in the same form: hold() inlined in caller_a.
 */
static void check_stack(const struct watched *w)
{
	const cJSON *row, *frame = NULL, *in;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(w->snap, "rows")) {
		const cJSON *stack = cJSON_GetArrayItem(
			cJSON_GetObjectItem(row, "stacks"), 0);
		const char *symbol = str_field(cJSON_GetObjectItem(row, "site"),
					       "symbol");

		if (names_function(symbol, "caller_a") && stack)
			frame = cJSON_GetArrayItem(
				cJSON_GetObjectItem(stack, "frames"), 0);
	}
	in = cJSON_GetObjectItem(frame, "inlined_in");
	CHECK(frame && check_streq(str_field(frame, "function"), "hold") &&
	      at(frame, "inline.c", "hold") && cJSON_GetArraySize(in) == 1 &&
	      names_function(str_field(cJSON_GetArrayItem(in, 0), "function"), "caller_a") &&
	      at(cJSON_GetArrayItem(in, 0), "inline.c", "caller_a"),
	      "wl_inline: caller_a's wait has a stack whose frame #0 is hold() "
	      "inlined in caller_a");
}

/*
 * Whether the batch table has a call site starting "FUNCTION (SOURCE:N)
 * inlined in OUTER+0x", N the line marked "site:FUNCTION"; with outer
 * NULL, "FUNCTION+0x", any line.
 */
static bool table_has(const char *table, const char *function,
		      const char *source, const char *outer)
{
	char text[256];
	const char *hit;

	if (outer)
		snprintf(text, sizeof(text), " %s (%s:%d) inlined in %s+0x",
			 function, source, marker_line(source, function), outer);
	else
		snprintf(text, sizeof(text), " %s+0x", function);
	hit = table ? strstr(table, text) : NULL;
	return hit != NULL;
}

/* Whether nm lists code named name in wl_NAME, or a clone of it. */
static bool has_function(const char *wl, const char *name)
{
	char cmd[PATH_MAX + 64], line[512], sym[256], kind;
	size_t n = strlen(name);
	bool found = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -C %s/tests/wl_%s", build, wl);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p))
		if (sscanf(line, "%*s %c %255[^\n]", &kind, sym) == 2 &&
		    (kind == 't' || kind == 'T') && strncmp(sym, name, n) == 0 &&
		    strchr("(. ", sym[n]))
			found = true;
	if (p)
		pclose(p);
	return found;
}

/* A static inline helper inlined into three callers, one through another. */
static void test_helper(void)
{
	static const struct place in_a[] = { { "caller_a", "caller_a" } };
	static const struct place in_b[] = { { "caller_b", "caller_b" } };
	static const struct place in_c[] = { { "nested", "nested" },
					     { "caller_c", "caller_c" } };
	struct watched w = watch("inline");
	unsigned long long a, b;

	CHECK(!has_function("inline", "hold") && !has_function("inline", "nested"),
	      "wl_inline: -O2 inlined hold() and nested() everywhere");
	if (w.snap) {
		a = check_caller(&w, "inline.c", "caller_a", "hold", "hold", in_a, 1);
		b = check_caller(&w, "inline.c", "caller_b", "hold", "hold", in_b, 1);
		check_caller(&w, "inline.c", "caller_c", "hold", "hold", in_c, 2);
		CHECK(a && b && a != b, "wl_inline: caller_a and caller_b are two "
		      "sites, got 0x%llx and 0x%llx", a, b);
		check_stack(&w);
	}
	CHECK(table_has(w.table, "hold", "inline.c", "caller_a") &&
	      table_has(w.table, "hold", "inline.c", "caller_b") &&
	      table_has(w.table, "hold", "inline.c", "caller_c"),
	      "wl_inline: the table names the helper's line and the callers:\n%s",
	      w.table);
	watched_free(&w);
}

/* std::lock_guard: in a helper of the program's own, and used directly. */
static void test_lock_guard(void)
{
	static const struct place in_first[] = { { "first", "first" } };
	static const struct place in_second[] = { { "second", "second" } };
	struct watched w = watch("inline_cxx");
	const char *src = "inline_cxx.cc";
	unsigned long long a, b;

	CHECK(!has_function("inline_cxx", "bump"),
	      "wl_inline_cxx: -O2 inlined bump() everywhere");
	if (w.snap) {
		a = check_caller(&w, src, "first", "bump", "bump", in_first, 1);
		b = check_caller(&w, src, "second", "bump", "bump", in_second, 1);
		check_caller(&w, src, "direct", NULL, "direct", NULL, 0);
		CHECK(a && b && a != b, "wl_inline_cxx: first and second are two "
		      "sites, got 0x%llx and 0x%llx", a, b);
	}
	CHECK(table_has(w.table, "bump", src, "first(long)") &&
	      table_has(w.table, "bump", src, "second(long)") &&
	      table_has(w.table, "direct(long)", src, NULL),
	      "wl_inline_cxx: the table names bump()'s line and direct()'s:\n%s",
	      w.table);
	watched_free(&w);
}

/*
 * wl_cxx (-O1): every lock of the standard library inlined into the
 * program's functions stays on the program's line, with no chain.
 */
static void test_standard_locks(void)
{
	struct watched w = watch("cxx");
	const cJSON *row;
	int rows = 0;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(w.snap, "rows")) {
		const cJSON *site = cJSON_GetObjectItem(row, "site");
		const char *file = str_field(site, "file");
		const char *symbol = str_field(site, "symbol");

		if (!symbol || strncmp(symbol, "use_", 4) != 0)
			continue;
		rows++;
		CHECK(file && strstr(file, "workloads/cxx.cc") &&
		      cJSON_GetArraySize(cJSON_GetObjectItem(site, "inlined_in")) == 0 &&
		      check_streq(str_field(site, "function"), symbol),
		      "wl_cxx: %s's site is its own line in cxx.cc, got %s in %s:%.0f",
		      symbol, str_field(site, "function"), file ? file : "null",
		      num_field(site, "line"));
	}
	CHECK(rows >= 6, "wl_cxx: the six sites of use_*(), got %d rows", rows);
	watched_free(&w);
}

int main(void)
{
	find_paths("/tmp/qsptop-inline-XXXXXX", "wl_inline");
	signal(SIGPIPE, SIG_IGN);
	test_helper();
	test_lock_guard();
	test_standard_locks();
	remove_tmp();
	return check_summary();
}
