/*
 * What the launch tests share: running qsptop on a workload and reading
 * the rows of its JSON snapshot.
 */
#ifndef QSPTOP_TEST_LAUNCH_H
#define QSPTOP_TEST_LAUNCH_H

#include "harness.h"

#define RUN_TIMEOUT_MS 60000

/* Run argv with the usual deadline and no limits. */
static inline struct run run_argv(char *const argv[])
{
	return run_capture(argv, RUN_TIMEOUT_MS, 0);
}

/* A symbol names function fn: "fn", or a demangled "fn(args)". */
static inline int symbol_is(const char *sym, const char *fn)
{
	size_t n = strlen(fn);

	return sym && strncmp(sym, fn, n) == 0 && (sym[n] == '\0' || sym[n] == '(');
}

/* Totals over the rows of a function and lock type. */
struct sums {
	int rows;
	double acq, failed, wait;
	const cJSON *first;
};

static inline struct sums sum_rows(const cJSON *snap, const char *symbol,
					   const char *type)
{
	const cJSON *row;
	struct sums s = { 0 };

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const cJSON *site = cJSON_GetObjectItem(row, "site");
		const char *sym = str_field(site, "symbol");

		if (!symbol_is(sym, symbol) || strcmp(str_field(row, "type"), type))
			continue;
		if (s.rows++ == 0)
			s.first = row;
		s.acq += num_field(row, "acquisitions");
		s.failed += num_field(row, "failed");
		s.wait += num_field(row, "wait_ns");
	}
	return s;
}

/* Compare every line of the workload's expectations with the snapshot. */
static inline void check_expectations(const char *mode, const cJSON *snap,
					      const char *expect)
{
	char sym[128], type[32];
	long acq, failed, min_wait;
	int lines = 0;
	FILE *f = fopen(expect, "r");

	while (f && fscanf(f, "%127s %31s %ld %ld %ld", sym, type, &acq, &failed,
			   &min_wait) == 5) {
		struct sums s = sum_rows(snap, sym, type);

		lines++;
		CHECK(s.rows > 0, "%s: no %s row for %s", mode, type, sym);
		CHECK(s.acq == acq, "%s: %s %s acquisitions: expected %ld, got %.0f",
		      mode, sym, type, acq, s.acq);
		CHECK(s.failed == failed, "%s: %s %s failed: expected %ld, got %.0f",
		      mode, sym, type, failed, s.failed);
		CHECK(s.wait >= min_wait, "%s: %s wait: expected >= %ld ns, got %.0f",
		      mode, sym, min_wait, s.wait);
	}
	if (f)
		fclose(f);
	CHECK(lines > 0, "%s: the workload wrote its expectations", mode);
}

/* A site resolves to its function, the workload's file and the call's line. */
static inline void check_site_line(const cJSON *snap, const char *symbol,
					   const char *type, const char *source,
					   const char *marker)
{
	size_t slen = strlen(source);
	int want = marker_line(source, marker);
	struct sums s = sum_rows(snap, symbol, type);
	const cJSON *site = s.first ? cJSON_GetObjectItem(s.first, "site") : NULL;
	const char *file = site ? str_field(site, "file") : NULL;
	const char *module = site ? str_field(site, "module") : NULL;

	CHECK(site != NULL, "%s: has a site", symbol);
	if (site == NULL)
		return;
	CHECK(file && strlen(file) >= slen && !strcmp(file + strlen(file) - slen, source),
	      "%s: file expected .../%s, got %s", symbol, source, file ? file : "null");
	CHECK(want > 0 && num_field(site, "line") == want,
	      "%s: line expected %d, got %.0f", symbol, want, num_field(site, "line"));
	CHECK(module && strstr(module, "/wl_"), "%s: module is the workload, got %s",
	      symbol, module ? module : "null");
	CHECK(str_field(s.first, "object") != NULL, "%s: object is an address", symbol);
}

#endif
