/*
 * What --listen and --pprof export, from a model built in the test: the
 * ledger keeps counts over a reset, /metrics names at most --top series
 * for good and sums the rest exactly in site="other", and the profiles
 * (decoded back with protobuf-c) hold the rows' waits, the endpoint's
 * each only what grew since the one before.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../../tui/export_pprof.h"
#include "../../tui/field.h"
#include "../../tui/ledger.h"
#include "../../tui/metrics.h"
#include "../../tui/scrape.h"
#include "app_fixture.h"
#include "model_fixture.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;

static struct app app;

static void setup(void)
{
	app_fixture(&app, "./server --flag");
	app.query = (struct model_query){ .sort = field_by_key("wait"),
		.site_label = label_of };
	app.ledger = ledger_new();
}

static void teardown(void)
{
	ledger_free(app.ledger);
	model_free(app.model);
	symbols_free(app.symbols);
}

/* /metrics of the app now. */
static char *metrics_now(struct metrics *m)
{
	struct ledger_view v;
	char *text;

	ledger_view(app.ledger, &app, &v);
	text = metrics_text(m, &app, &v);
	ledger_view_free(&v);
	return text;
}

/* The sum of the samples of name whose line holds filter (NULL: all). */
static double sum_of(const char *text, const char *name, const char *filter,
		     int *n)
{
	size_t len = strlen(name);
	double sum = 0;

	*n = 0;
	for (const char *l = text; *l; l = strchr(l, '\n') + 1) {
		const char *eol = strchr(l, '\n'), *sp = l;

		if (strncmp(l, name, len) == 0 && l[len] == '{') {
			for (const char *c = l; c < eol; c++)
				sp = *c == ' ' ? c : sp;
			if (!filter || (strstr(l, filter) && strstr(l, filter) < eol)) {
				sum += strtod(sp + 1, NULL);
				(*n)++;
			}
		}
	}
	return sum;
}

/* Three mutex sites waiting 30, 20 and 10 units, one rwlock site. */
static void four_sites(void)
{
	def(app.model, 1, LOCK_MUTEX, 0x2000, 0xa0);
	def(app.model, 2, LOCK_MUTEX, 0x3000, 0xa0);
	def(app.model, 3, LOCK_MUTEX, 0x4000, 0xa0);
	def(app.model, 4, LOCK_RWLOCK_READ, 0x5000, 0xb0);
	add(app.model, 1, 100, 30, 3000, 500);
	add(app.model, 2, 200, 20, 2000, 500);
	add(app.model, 3, 400, 10, 1000, 500);
	add(app.model, 4, 800, 5, 500, 500);
	tick(app.model, 1000000000);
}

/* --top 2: two named series, one "other" per type, totals exact. */
static void test_top_sums_rest(void)
{
	struct metrics *m = metrics_new(2);
	char *text;
	int n, other;

	setup();
	four_sites();
	text = metrics_now(m);
	CHECK(sum_of(text, "qsptop_lock_acquisitions_total", NULL, &n) == 1500 &&
	      n == 4, "--top 2: expected 1500 acquisitions in 4 series "
	      "(2 named, 2 other), got %d series:\n%s", n, text);
	sum_of(text, "qsptop_lock_acquisitions_total", "site=\"other\"", &other);
	CHECK(other == 2, "expected an \"other\" per type (mutex, rwlock-read), got %d",
	      other);
	CHECK(sum_of(text, "qsptop_lock_acquisitions_total",
		     "site=\"0x4000\",type=\"mutex\"", &n) == 0 && n == 0 &&
	      sum_of(text, "qsptop_lock_acquisitions_total",
		     "site=\"other\",type=\"mutex\"", &n) == 400,
	      "expected the lightest mutex site in other:\n%s", text);
	free(text);
	/* A newcomer, heavier than all, finds no room: it counts in other. */
	def(app.model, 5, LOCK_MUTEX, 0x6000, 0xa0);
	add(app.model, 5, 7, 7, 90000, 500);
	tick(app.model, 2000000000);
	text = metrics_now(m);
	CHECK(sum_of(text, "qsptop_lock_acquisitions_total",
		     "site=\"other\",type=\"mutex\"", &n) == 407 &&
	      sum_of(text, "qsptop_lock_acquisitions_total", NULL, &n) == 1507,
	      "expected a site seen after --top was reached summed in other:\n%s",
	      text);
	free(text);
	metrics_free(m);
	teardown();
}

/* A reset takes nothing from the counters; what comes after adds. */
static void test_reset_keeps_counts(void)
{
	struct metrics *m = metrics_new(100);
	char *before, *after;
	int n;

	setup();
	four_sites();
	before = metrics_now(m);
	app_reset(&app);
	after = metrics_now(m);
	CHECK(strcmp(before, after) == 0,
	      "r: expected /metrics unchanged, got\n%s\nthen\n%s", before, after);
	add(app.model, 1, 5, 1, 100, 100);
	tick(app.model, 2000000000);
	free(after);
	after = metrics_now(m);
	CHECK(sum_of(after, "qsptop_lock_acquisitions_total", "0x2000", &n) == 105 &&
	      sum_of(after, "qsptop_lock_contended_total", "0x2000", &n) == 31 &&
	      sum_of(after, "qsptop_lock_wait_seconds_count", "0x2000", &n) == 31,
	      "after r and 5 more: expected 105 acquisitions, 31 contended, "
	      "31 waits in the histogram:\n%s", after);
	free(before);
	free(after);
	metrics_free(m);
	teardown();
}

/* data gunzip'd and decoded; NULL if it is not a profile. */
static Profile *decode(const uint8_t *data, size_t len)
{
	z_stream z = { 0 };
	size_t cap = 1 << 20;
	uint8_t *out = malloc(cap);
	Profile *p = NULL;

	if (inflateInit2(&z, 15 + 16) != Z_OK)
		return NULL;
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	if (inflate(&z, Z_FINISH) == Z_STREAM_END)
		p = perftools__profiles__profile__unpack(NULL, z.total_out, out);
	inflateEnd(&z);
	free(out);
	return p;
}

/* Sum of value i over the samples. */
static int64_t total(const Profile *p, size_t i)
{
	int64_t sum = 0;

	for (size_t s = 0; s < p->n_sample; s++)
		sum += p->sample[s]->value[i];
	return sum;
}

static const char *str(const Profile *p, int64_t i)
{
	return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : "?";
}

/* Two stacks through site 0x2000, one not unwound: a sample each. */
static void stacked_rows(void)
{
	const uint64_t f1[] = { 0x2000, 0x7000 }, f2[] = { 0x2000, 0x7100 };

	def(app.model, 1, LOCK_MUTEX, 0x2000, 0xa0);
	sdef(app.model, 1, 2, f1);
	sdef(app.model, 2, 2, f2);
	add(app.model, 1, 100, 6, 600, 200);
	sadd(app.model, 1, 1, 11, 3, 400);
	sadd(app.model, 1, 2, 12, 2, 150);
	sadd(app.model, 1, PROTO_NO_STACK, 13, 1, 50);
	tick(app.model, 1000000000);
}

/* The file's profile: the types of Go's mutex profile, the rows' sums. */
static void test_profile_of_rows(void)
{
	size_t len;
	uint8_t *data;
	Profile *p;

	setup();
	stacked_rows();
	data = export_table_pprof(&app, &app.query, &len);
	p = decode(data, len);
	CHECK(p != NULL, "expected a gzip'd profile.proto");
	if (p) {
		CHECK(p->n_sample_type == 4 &&
		      strcmp(str(p, p->sample_type[0]->type), "contentions") == 0 &&
		      strcmp(str(p, p->sample_type[1]->unit), "nanoseconds") == 0 &&
		      strcmp(str(p, p->sample_type[2]->type), "acquisitions") == 0 &&
		      strcmp(str(p, p->sample_type[3]->type), "caused") == 0 &&
		      strcmp(str(p, p->sample_type[3]->unit), "nanoseconds") == 0 &&
		      strcmp(p->string_table[0], "") == 0,
		      "expected contentions/count, delay/nanoseconds, "
		      "acquisitions/count, caused/nanoseconds");
		CHECK(p->n_sample == 3 && total(p, 0) == 6 && total(p, 1) == 600 &&
		      total(p, 2) == 100,
		      "expected 3 samples of 6 contentions, 600 ns, 100 acquisitions; "
		      "got %zu of %lld, %lld, %lld", p->n_sample,
		      (long long)total(p, 0), (long long)total(p, 1),
		      (long long)total(p, 2));
		CHECK(p->n_location == 3 && p->sample[0]->n_label >= 3 &&
		      strcmp(str(p, p->sample[0]->label[0]->key), "type") == 0 &&
		      strcmp(str(p, p->sample[0]->label[0]->str), "mutex") == 0,
		      "expected 3 locations (the site once) and a type label");
		perftools__profiles__profile__free_unpacked(p, NULL);
	}
	free(data);
	teardown();
}

/* The endpoint's profile: what grew since the last, over a reset too. */
static void test_endpoint_profile_since_last(void)
{
	struct scrape_ctx ctx = { scrape_new(100), &app };
	const char *type;
	uint8_t *data;
	size_t len;
	Profile *p;

	setup();
	stacked_rows();
	scrape_answer(&ctx, "/debug/pprof/mutex", &data, &len, &type);
	free(data);
	sadd(app.model, 1, 1, 11, 4, 1000);
	add(app.model, 1, 10, 4, 1000, 300);
	app_reset(&app);
	sadd(app.model, 1, 2, 12, 1, 7);
	add(app.model, 1, 5, 1, 7, 7);
	tick(app.model, 2000000000);
	scrape_answer(&ctx, "/debug/pprof/mutex", &data, &len, &type);
	p = decode(data, len);
	CHECK(p && total(p, 0) == 5 && total(p, 1) == 1007 && total(p, 2) == 15,
	      "second profile: expected what grew since the first, across r: "
	      "5 contentions, 1007 ns, 15 acquisitions; got %lld, %lld, %lld",
	      p ? (long long)total(p, 0) : -1, p ? (long long)total(p, 1) : -1,
	      p ? (long long)total(p, 2) : -1);
	if (p)
		perftools__profiles__profile__free_unpacked(p, NULL);
	free(data);
	scrape_free(ctx.scrape);
	teardown();
}

int main(void)
{
	test_top_sums_rest();
	test_reset_keeps_counts();
	test_profile_of_rows();
	test_endpoint_profile_since_last();
	return fixture_summary();
}
