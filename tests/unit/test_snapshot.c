/*
 * The JSON snapshot and the folded stacks of a model built in the test:
 * every row's stacks and threads are those the detail screen finds row by
 * row, and a model of 100,000 rows, each with its stacks, is written whole.
 */
#include <cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../tui/export.h"
#include "../../tui/field.h"
#include "../../tui/site.h"
#include "app_fixture.h"
#include "check.h"

#define SEC 1000000000ull

static struct app app;
static char path[256];

/* Wrapper functions occupy [0x1000, 0x1200). */
static bool in_wrapper(void *ctx, uint64_t address)
{
	(void)ctx;
	return address >= 0x1000 && address < 0x1200;
}

/* A fresh app around an empty model, as main() makes one. */
static void setup(void)
{
	app_fixture(&app, "./server");
	app.query = (struct model_query){ .sort = field_by_key("wait"),
		.site_label = site_label, .ctx = app.symbols,
		.skip_wrappers = true, .is_wrapper = in_wrapper };
}

static void teardown(void)
{
	model_free(app.model);
	symbols_free(app.symbols);
}

/* Every row and stack defined: one check, at the end of main(). */
static struct check_tally defined;

static void def_row(uint32_t id, uint64_t site, uint64_t object)
{
	struct proto_row r = { .id = id, .type = LOCK_MUTEX, .site = site,
			       .object = object };

	TALLY(&defined, model_define_row(app.model, &r) == 0,
	      "row %u: expected defined, got -1", id);
}

static void def_stack(uint32_t id, uint64_t f0, uint64_t f1)
{
	struct proto_stack st = { .id = id, .depth = 3,
				  .frames = { f0, f1, 0x9000 } };

	TALLY(&defined, model_define_stack(app.model, &st) == 0,
	      "stack %u: expected defined, got -1", id);
}

/* Waits of a row: its counts, then count waits through a stack in tid. */
static void waits(uint32_t row, uint32_t stack, uint32_t tid, uint64_t count,
		  uint64_t wait)
{
	struct proto_delta d = { .row = row, .c.calls = { .acquisitions = 3 * count,
				 .contended = count, .wait_ns = wait },
				 .max_wait_ns = wait };
	struct proto_stack_delta sd = { .row = row, .stack = stack,
					.tid = tid, .w = { .count = count,
							   .wait_ns = wait } };

	d.c.hist[hist_bucket(wait)] = count;
	model_apply_delta(app.model, &d);
	model_apply_stack_delta(app.model, &sd);
}

static void tick(uint64_t s)
{
	struct proto_tick t = { .seq = s, .monotonic_ns = s * SEC };

	model_tick(app.model, &t);
	app.client.ticks++;
	app.client.last_tick_ns = t.monotonic_ns;
}

/* Whether a JSON stack is the stack view sv. */
static bool stack_is(const cJSON *js, const struct stack_view *sv)
{
	const cJSON *frames = cJSON_GetObjectItem(js, "frames");
	int depth = sv->frames ? sv->depth : 0;

	if (cJSON_GetObjectItem(js, "wait_ns")->valuedouble != (double)sv->w.wait_ns ||
	    cJSON_GetObjectItem(js, "count")->valuedouble != (double)sv->w.count ||
	    cJSON_IsTrue(cJSON_GetObjectItem(js, "sampled")) !=
	    (sv->stack == PROTO_NO_STACK) || cJSON_GetArraySize(frames) != depth)
		return false;
	for (int i = 0; i < depth; i++) {
		const char *a = cJSON_GetObjectItem(cJSON_GetArrayItem(frames, i),
						    "address")->valuestring;

		if (strtoull(a, NULL, 16) != sv->frames[i])
			return false;
	}
	return true;
}

/* Whether the JSON row's stacks and threads are those found row by row. */
static bool row_is(const cJSON *jr, const struct view_row *r)
{
	const cJSON *js = cJSON_GetObjectItem(jr, "stacks");
	const cJSON *jt = cJSON_GetObjectItem(jr, "threads");
	struct stack_view *sv;
	struct thread_view *tv;
	size_t ns = model_row_stacks(app.model, &app.query, r, &sv);
	size_t nt = model_row_threads(app.model, &app.query, r, &tv);
	bool ok = cJSON_GetArraySize(js) == (int)ns &&
		  cJSON_GetArraySize(jt) == (int)nt;

	for (size_t i = 0; ok && i < ns; i++)
		ok = stack_is(cJSON_GetArrayItem(js, (int)i), &sv[i]);
	for (size_t i = 0; ok && i < nt; i++) {
		const cJSON *t = cJSON_GetArrayItem(jt, (int)i);

		ok = cJSON_GetObjectItem(t, "tid")->valuedouble == tv[i].tid &&
		     cJSON_GetObjectItem(t, "count")->valuedouble == (double)tv[i].w.count &&
		     cJSON_GetObjectItem(t, "wait_ns")->valuedouble == (double)tv[i].w.wait_ns;
	}
	free(sv);
	free(tv);
	return ok;
}

/*
 * Check the snapshot written to path: it is what cJSON_Print() prints for
 * it, and its rows at every step-th line are the view's, with the stacks
 * and threads found row by row. want_rows 0: as many as the view has.
 */
static void check_snapshot(size_t step, size_t want_rows)
{
	char *text = check_file_text(path);
	cJSON *doc = text ? cJSON_Parse(text) : NULL;
	const cJSON *rows = cJSON_GetObjectItem(doc, "rows");
	struct view_row *v;
	size_t n = model_view(app.model, &app.query, &v), bad = 0;

	char *again = doc ? cJSON_Print(doc) : NULL;
	size_t len = again ? strlen(again) : 0;

	CHECK(doc != NULL, "the snapshot is JSON");
	CHECK(again && strncmp(again, text, len) == 0 &&
	      strcmp(text + len, "\n") == 0,
	      "the snapshot is as cJSON_Print() prints it, and a newline");
	free(again);
	if (want_rows == 0)
		want_rows = n;
	CHECK(n == want_rows && n > 0 && cJSON_GetArraySize(rows) == (int)n,
	      "snapshot rows: expected %zu, got %d (view %zu)", want_rows,
	      cJSON_GetArraySize(rows), n);
	for (size_t i = 0; doc && i < n; i += step) {
		const cJSON *jr = cJSON_GetArrayItem(rows, (int)i);
		const char *obj = cJSON_GetStringValue(cJSON_GetObjectItem(jr, "object"));

		bad += !row_is(jr, &v[i]) ||
		       (obj && strtoull(obj, NULL, 16) != v[i].object);
	}
	CHECK(bad == 0, "snapshot: %zu rows differ from the row-by-row stacks "
	      "and threads", bad);
	free(v);
	cJSON_Delete(doc);
	free(text);
}

/*
 * The snapshot of the model (its table built a part at a time) equals
 * the snapshot of the same rows built whole, as the e key writes them.
 */
static void check_snapshot_of_rows(void)
{
	struct model_stats st;
	struct view_row *v;
	size_t n = model_view(app.model, &app.query, &v);
	char err[256], *table, *rows;

	model_stats(app.model, &st);
	CHECK(export_json(&app, &app.query, path, err, sizeof err) == 0,
	      "snapshot written: %s", err);
	table = check_file_text(path);
	rows = export_rows_json(&app, &app.query, v, n, &st);
	CHECK(table && rows && strcmp(table, rows) == 0,
	      "the snapshot of the table equals that of its rows built whole");
	free(table);
	free(rows);
	free(v);
}

/*
 * Folded stacks of all rows at once equal those written one row at a
 * time, concatenated.
 */
static void check_folded(void)
{
	struct view_row *v;
	size_t n = model_view(app.model, &app.query, &v), len = 0;
	char err[256], *all, *one, *joined = calloc(1, 1);

	CHECK(export_folded(&app, &app.query, path, err, sizeof err) == 0,
	      "folded written: %s", err);
	all = check_file_text(path);
	for (size_t i = 0; i < n; i++) {
		one = export_rows_folded(&app, &app.query, &v[i], 1);
		joined = realloc(joined, len + strlen(one) + 1);
		strcpy(joined + len, one);
		len += strlen(one);
		free(one);
	}
	CHECK(all && strcmp(all, joined) == 0 && len > 0,
	      "folded: all rows at once equal row by row (%zu bytes)", len);
	free(all);
	free(joined);
	free(v);
}

/*
 * Rows 0..39 over wrapper and plain sites, on 8 objects; stacks through
 * wrappers to two callers, waits without a stack, three threads.
 */
static void test_snapshot_matches_rows(void)
{
	char err[256];

	setup();
	def_stack(1, 0x1000, 0x2000);
	def_stack(2, 0x1040, 0x3000);
	def_stack(3, 0x2000, 0x4000);
	tick(0);
	for (uint32_t id = 0; id < 40; id++) {
		def_row(id, id % 4 == 0 ? 0x1000 + id % 3 * 0x40 : 0x2000 + id % 5 * 0x80,
			0xa000 + id % 8 * 8);
		waits(id, id % 3 + 1, id % 3 + 1, id % 4 + 1, (id % 6 + 1) * 1000);
		waits(id, PROTO_NO_STACK, 9, 1, 500);
	}
	tick(1);
	for (int c = 0; c < COALESCE_COUNT; c++) {
		app.query.coalesce = (enum coalesce)c;
		CHECK(export_json(&app, &app.query, path, err, sizeof err) == 0,
		      "snapshot written: %s", err);
		check_snapshot(1, 0);
		check_snapshot_of_rows();
		check_folded();
	}
	teardown();
}

/* The type filter and the idle order are recorded: types, idle_last. */
static void test_snapshot_records_types(void)
{
	static const struct {
		unsigned types;
		bool mix;
		const char *want;
	} cases[] = {
		{ 0, false, "mutex rwlock-read rwlock-write spinlock condvar futex futex-wake "
		  "semaphore" },
		{ 1u << LOCK_MUTEX | 1u << LOCK_CONDVAR, true, "mutex condvar" },
	};

	setup();
	def_row(0, 0x2000, 0xa000);
	tick(0);
	waits(0, PROTO_NO_STACK, 9, 1, 500);
	tick(1);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *text, got[256] = "";
		cJSON *doc, *t;

		app.query.types = cases[i].types;
		app.query.mix_idle = cases[i].mix;
		text = export_table_json(&app, &app.query);
		doc = cJSON_Parse(text);
		cJSON_ArrayForEach(t, cJSON_GetObjectItem(doc, "types")) {
			strcat(got, got[0] ? " " : "");
			strcat(got, t->valuestring);
		}
		CHECK(strcmp(got, cases[i].want) == 0,
		      "types: expected \"%s\", got \"%s\"", cases[i].want, got);
		CHECK(cJSON_IsTrue(cJSON_GetObjectItem(doc, "idle_last")) ==
		      !cases[i].mix, "idle_last: expected %s",
		      cases[i].mix ? "false" : "true");
		cJSON_Delete(doc);
		free(text);
	}
	teardown();
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* How many times needle occurs in text (one pass: the text is big). */
static size_t occurrences(const char *text, const char *needle)
{
	size_t n = 0, len = strlen(needle);

	for (const char *p = text; *p; p++)
		n += *p == *needle && strncmp(p, needle, len) == 0;
	return n;
}

/*
 * 100,000 rows, each waiting through its own caller's stack in two
 * threads: the snapshot and the folded stacks hold them all. The time is
 * reported, not judged.
 */
static void test_snapshot_of_many_rows(void)
{
	char err[256], *text;
	double t0, t1, t2;

	setup();
	app.query.skip_wrappers = false;
	for (uint32_t s = 0; s < 1000; s++)
		def_stack(s, 0x500000 + s * 16, 0x600000 + s * 16);
	tick(0);
	for (uint32_t id = 0; id < 100000; id++) {
		def_row(id, 0x500000 + id % 1000 * 16, 0x7f0000000000ull + id * 64);
		waits(id, id % 1000, 1 + id % 2, 2, 1000 + id % 100);
		waits(id, id % 1000, 3, 1, 700);
	}
	tick(1);
	t0 = now_s();
	CHECK(export_json(&app, &app.query, path, err, sizeof err) == 0,
	      "snapshot of 100,000 rows written: %s", err);
	t1 = now_s();
	text = check_file_text(path);
	CHECK(text && occurrences(text, "\n\t\t\t\"type\":\t\"mutex\"") == 100000 &&
	      occurrences(text, "\"tid\":\t3,") == 100000,
	      "snapshot: 100,000 rows, each with its threads");
	free(text);
	t2 = now_s();
	CHECK(export_folded(&app, &app.query, path, err, sizeof err) == 0,
	      "folded stacks of 100,000 rows written: %s", err);
	t2 = now_s() - t2;
	text = check_file_text(path);
	CHECK(text && occurrences(text, ";mutex@0x7f") == 100000,
	      "folded: a line for each of 100,000 rows");
	free(text);
	fprintf(stderr, "note: 100,000 rows: JSON written in %.2f s, folded "
		"stacks in %.2f s\n", t1 - t0, t2);
	teardown();
}

int main(void)
{
	snprintf(path, sizeof path, "/tmp/qsptop-export-%d", (int)getpid());
	test_snapshot_matches_rows();
	test_snapshot_records_types();
	test_snapshot_of_many_rows();
	unlink(path);
	CHECK_TALLY(&defined, "every row and stack defined");
	return check_summary();
}
