/*
 * Adding a column takes a field: a field of this test alone, a row's
 * calls (acquisitions and timeouts), added to the field table with its
 * column, goes the whole way a product column goes. -o finds it and sorts by it, the JSON snapshot writes it after
 * the schema's numbers, a coalesced line sums it, and the batch table
 * shows it. Every field's value of a coalesced line is what its merge
 * says of its rows' values.
 */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tui/batch.h"
#include "../../tui/column.h"
#include "../../tui/export.h"
#include "../../tui/field.h"
#include "../../tui/site.h"
#include "app_fixture.h"
#include "check.h"

static double value_calls(const struct view_row *r)
{
	return (double)(r->c.calls.acquisitions + r->c.calls.timeouts);
}

static const struct field calls_field = {
	.key = "calls", .json = "calls", .value = value_calls,
	.merge = MERGE_SUM,
	.column = { "CALLS", 7, 5, 65, UNIT_COUNT, "acquisitions and timeouts" },
};

static struct app app;

/* Four rows whose calls order differs from their wait and count orders. */
static const struct {
	uint64_t site, object, acq, timeouts, wait;
} rows[] = {
	{ 0x1000, 0xa0, 100, 0, 9000 },		/* calls 100 */
	{ 0x2000, 0xb0, 50, 80, 100 },		/* calls 130 */
	{ 0x1000, 0xc0, 10, 5, 50000 },		/* calls 15 */
	{ 0x3000, 0xd0, 120, 0, 1 },		/* calls 120 */
};

#define N_ROWS (sizeof rows / sizeof rows[0])

static void setup(void)
{
	app_fixture(&app, "./server");
	app.opt.width = 140;
	model_set_origin(app.model, 0);
	for (uint32_t i = 0; i < N_ROWS; i++) {
		struct proto_row r = { .id = i, .type = LOCK_MUTEX,
				       .site = rows[i].site,
				       .object = rows[i].object };
		struct proto_delta d = { .row = i, .c.calls = {
			.acquisitions = rows[i].acq,
			.contended = rows[i].acq / 10,
			.timeouts = rows[i].timeouts,
			.wait_ns = rows[i].wait }, .max_wait_ns = rows[i].wait };

		model_define_row(app.model, &r);
		model_apply_delta(app.model, &d);
	}
	model_tick(app.model, &(struct proto_tick){ .monotonic_ns = 1000000000 });
	app.query = (struct model_query){ .sort = field_by_key("calls"),
		.site_label = site_label, .ctx = app.symbols };
}

/* -o calls finds the field, and the keys the usage lists name it. */
static void test_key(void)
{
	char keys[256];

	CHECK(field_by_key("calls") == &calls_field,
	      "-o calls: expected the test's field, got %p",
	      (const void *)field_by_key("calls"));
	CHECK(field_by_json("calls") == &calls_field,
	      "JSON name calls: expected the test's field");
	column_keys(keys, sizeof keys, " | ");
	CHECK(strstr(keys, " | calls") != NULL,
	      "sort keys: expected \"calls\" among them, got \"%s\"", keys);
	CHECK(column_of(&calls_field) &&
	      strcmp(column_of(&calls_field)->title, "CALLS") == 0,
	      "the field's column: expected CALLS");
}

/* Sorted by calls, high to low and low to high. */
static void test_sort(void)
{
	static const uint64_t high_first[] = { 0xb0, 0xd0, 0xa0, 0xc0 };
	struct view_row *v;
	size_t n;

	for (int asc = 0; asc < 2; asc++) {
		app.query.ascending = asc;
		n = model_view(app.model, &app.query, &v);
		CHECK_U64(n, N_ROWS);
		for (size_t i = 0; i < n && i < N_ROWS; i++) {
			uint64_t want = high_first[asc ? N_ROWS - 1 - i : i];

			CHECK(v[i].object == want, "sorted by calls%s, line %zu:"
			      " expected object %#" PRIx64 ", got %#" PRIx64,
			      asc ? " low to high" : "", i, want, v[i].object);
		}
		free(v);
	}
	app.query.ascending = false;
}

/* The name of the key after key in a JSON object, or "". */
static const char *key_after(const cJSON *obj, const char *key)
{
	const cJSON *c = cJSON_GetObjectItem(obj, key);

	return c && c->next && c->next->string ? c->next->string : "";
}

/*
 * The snapshot writes calls in every row, right after the schema's last
 * number; coalesced by site, the line of site 0x1000 sums its rows'.
 */
static void test_json(void)
{
	static const double by_site[] = { 130, 120, 115 };
	char *text = export_table_json(&app, &app.query);
	cJSON *doc = text ? cJSON_Parse(text) : NULL;
	const cJSON *r = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "rows"), 0);

	CHECK(doc != NULL, "the snapshot is JSON");
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(r, "calls")) == 130,
	      "first row's calls: expected 130, got %g",
	      cJSON_GetNumberValue(cJSON_GetObjectItem(r, "calls")));
	CHECK(strcmp(key_after(r, "caused_wait_per_s_ns"), "calls") == 0,
	      "after caused_wait_per_s_ns: expected calls, got \"%s\"",
	      key_after(r, "caused_wait_per_s_ns"));
	CHECK(strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(doc, "sort")),
		     "calls") == 0, "the snapshot's sort: expected calls");
	cJSON_Delete(doc);
	free(text);
	app.query.coalesce = COALESCE_SITE;
	text = export_table_json(&app, &app.query);
	doc = text ? cJSON_Parse(text) : NULL;
	for (int i = 0; i < 3; i++) {
		double got = cJSON_GetNumberValue(cJSON_GetObjectItem(
			cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "rows"), i),
			"calls"));

		CHECK(got == by_site[i], "coalesced by site, line %d's calls: "
		      "expected %g, got %g", i, by_site[i], got);
	}
	cJSON_Delete(doc);
	free(text);
	app.query.coalesce = COALESCE_NONE;
}

/* The batch table has a CALLS column, and the first row's cell is 130. */
static void test_column(void)
{
	char *text = NULL, *titles, *first;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	batch_print(out, &app);
	fclose(out);
	titles = strstr(text, "TYPE");
	first = titles ? strchr(titles, '\n') : NULL;
	CHECK(titles && strstr(titles, " CALLS") &&
	      strstr(titles, " CALLS") < first,
	      "batch titles: expected CALLS, got:\n%s", text);
	CHECK(first && strstr(first, " 130 ") != NULL,
	      "first batch row: expected a CALLS cell of 130, got:\n%s", text);
	free(text);
}

/* Whether line l, coalesced by site, has f's value its merge makes of rows. */
static bool merged(const struct field *f, const struct view_row *l,
		   const struct view_row *v, size_t n)
{
	double sum = 0, max = 0, min = -1;

	for (size_t i = 0; i < n; i++) {
		double x = f->value(&v[i]);

		if (v[i].site != l->site)
			continue;
		sum += x;
		max = x > max ? x : max;
		min = min < 0 || x < min ? x : min;
	}
	if (f->merge == MERGE_SUM)
		return f->value(l) == sum;
	if (f->merge == MERGE_MAX)
		return f->value(l) == max;
	return f->value(l) >= min && f->value(l) <= max;	/* an average */
}

/* Each field's value of every line coalesced by site, by its merge. */
static void test_merge(void)
{
	struct model_query q = app.query;
	struct check_tally t = { 0 };
	struct view_row *v, *lines;
	size_t n = model_view(app.model, &q, &v), n_lines;

	q.coalesce = COALESCE_SITE;
	n_lines = model_view(app.model, &q, &lines);
	for (size_t i = 0; i < field_count(); i++) {
		const struct field *f = field_at(i);

		for (size_t k = 0; f->value && k < n_lines; k++)
			TALLY(&t, merged(f, &lines[k], v, n),
			      "field %s, site %#" PRIx64 ": value %g is not the "
			      "merge %d of its rows'", f->json, lines[k].site,
			      f->value(&lines[k]), (int)f->merge);
	}
	CHECK_TALLY(&t, "every field of a coalesced line merges its rows'");
	free(v);
	free(lines);
}

int main(void)
{
	field_extend(&calls_field, 1);
	setup();
	test_key();
	test_sort();
	test_json();
	test_column();
	test_merge();
	model_free(app.model);
	symbols_free(app.symbols);
	return check_summary();
}
