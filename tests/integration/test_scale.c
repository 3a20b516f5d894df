/*
 * The collector at the size of real servers, through the real programs:
 * thousands of call sites and locks counted exactly, a memory cap that
 * folds rows per lock into rows per site and then drops (always saying
 * how much), and thread churn that leaves the target's memory bounded.
 */
#include <cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"
#include "harness.h"

#define RUN_TIMEOUT_MS 120000
#define SITES 1500
#define OBJECTS 16
#define PER_ROW 16		/* 8 threads x 2 rounds */

/* Run wl_scale under qsptop -b --json with extra options; the snapshot. */
static cJSON *run_scale(const char *opt, const char *opt_arg, char *const *args,
			const char *res, int *status)
{
	char *json = tmp_path("scale.json");
	struct args a = { 0 };
	struct run r;
	cJSON *snap;

	args_add(&a, qsptop, "-b", "-d", "1", "-j", json, NULL);
	if (opt)
		args_add(&a, opt, opt_arg, NULL);
	args_add(&a, "--", workload, NULL);
	args_add_all(&a, args);
	args_add(&a, res, NULL);
	unlink(json);
	r = run_capture(a.v, RUN_TIMEOUT_MS, 0);
	*status = r.status;
	if (r.status != 0)
		fprintf(stderr, "qsptop: %s\n", r.err);
	run_free(&r);
	snap = load_json(json);
	return snap;
}

/* Whether a row's site lies in the workload (not in a library). */
static bool in_workload(const cJSON *row)
{
	const char *module = str_field(cJSON_GetObjectItem(row, "site"), "module");

	return module && strstr(module, "wl_scale") != NULL;
}

/* Every (site, lock) pair on its own row, each exactly, nothing dropped. */
static void test_many_sites(void)
{
	char *res = tmp_path("sites.res");
	int status, rows = 0, exact = 0, objectless = 0;
	double total = 0;
	const cJSON *row;
	cJSON *snap = run_scale(NULL, NULL, (char *[]){ "sites", NULL }, res, &status);

	CHECK(status == 0, "sites: qsptop exited %d", status);
	CHECK(snap != NULL, "sites: a snapshot was written");
	if (snap == NULL)
		return;
	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		double acq = num_field(row, "acquisitions");

		if (!in_workload(row))
			continue;
		rows++;
		total += acq;
		exact += acq == PER_ROW;
		objectless += cJSON_IsNull(cJSON_GetObjectItem(row, "object"));
	}
	printf("sites: %d rows, %.0f acquisitions counted of %ld made, "
	       "%.0f dropped, %d without their lock\n", rows, total,
	       result_number(res, "acquisitions"), num_field(snap, "dropped"), objectless);
	CHECK(rows == SITES * OBJECTS, "sites: one row per (site, lock): %d of %d",
	      rows, SITES * OBJECTS);
	CHECK(exact == rows, "sites: every row counts %d acquisitions (%d do)",
	      PER_ROW, exact);
	CHECK(objectless == 0, "sites: no row lost its lock (%d did)", objectless);
	CHECK(total == result_number(res, "acquisitions"),
	      "sites: %.0f acquisitions counted of %ld made", total,
	      result_number(res, "acquisitions"));
	CHECK(num_field(snap, "dropped") == 0, "sites: nothing dropped (%.0f)",
	      num_field(snap, "dropped"));
	CHECK(num_field(snap, "folded") == 0, "sites: nothing folded (%.0f)",
	      num_field(snap, "folded"));
	cJSON_Delete(snap);
}

/*
 * Outside the cap, the collector adds to the target's peak RSS its own
 * code and data pages, its thread's stack and the loader's bookkeeping:
 * about 0.2 MiB measured; this margin leaves room for more.
 */
#define CAP_MARGIN_KB 1024

/* The peak RSS (kB) of wl_scale sites run alone, without qsptop; -1 if unknown. */
static long bare_peak_rss_kb(void)
{
	char *res = tmp_path("bare.res");
	struct run r;

	unlink(res);
	r = run_capture((char *[]){ workload, "sites", res, NULL },
			RUN_TIMEOUT_MS, 0);
	run_free(&r);
	return r.status == 0 ? result_number(res, "vmhwm_kb") : -1;
}

/*
 * A tiny cap: rows of one lock fold into rows per site, the rest is
 * dropped, and what is counted plus what is dropped is what was made.
 * The target's own peak RSS, beside a bare run's, shows the cap holds
 * without taking the collector's word for it.
 */
static void test_memory_cap(void)
{
	char *res = tmp_path("cap.res");
	int status, objectless = 0;
	long bare, capped;
	double total = 0;
	const cJSON *row, *mem;
	cJSON *snap = run_scale("--max-memory", "4", (char *[]){ "sites", NULL },
				res, &status);

	CHECK(status == 0, "cap: qsptop exited %d", status);
	if (snap == NULL) {
		CHECK(false, "cap: a snapshot was written");
		return;
	}
	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		if (!in_workload(row))
			continue;
		total += num_field(row, "acquisitions");
		objectless += cJSON_IsNull(cJSON_GetObjectItem(row, "object"));
	}
	mem = cJSON_GetObjectItem(snap, "collector_memory");
	CHECK(num_field(mem, "cap") == 4 << 20, "cap: the snapshot shows the cap: %.0f",
	      num_field(mem, "cap"));
	CHECK(num_field(mem, "used") <= 4 << 20, "cap: memory stays under it: %.0f",
	      num_field(mem, "used"));
	CHECK(objectless > 0 && num_field(snap, "folded") > 0,
	      "cap: rows fold per site (%d rows, %.0f events folded)", objectless,
	      num_field(snap, "folded"));
	printf("cap 4 MiB: %.0f counted (%.0f folded) + %.0f dropped, %ld made\n",
	       total, num_field(snap, "folded"), num_field(snap, "dropped"),
	       result_number(res, "acquisitions"));
	CHECK(total + num_field(snap, "dropped") == result_number(res, "acquisitions"),
	      "cap: %.0f counted + %.0f dropped = %ld made", total,
	      num_field(snap, "dropped"), result_number(res, "acquisitions"));
	bare = bare_peak_rss_kb();
	capped = result_number(res, "vmhwm_kb");
	printf("cap 4 MiB: target peak RSS %ld kB, %ld kB bare\n", capped, bare);
	CHECK(bare > 0 && capped > 0 &&
	      capped <= bare + (4 << 10) + CAP_MARGIN_KB,
	      "cap: the target's peak RSS stays within the bare run's + 4 MiB "
	      "+ %d kB: %ld kB, bare %ld kB", CAP_MARGIN_KB, capped, bare);
	cJSON_Delete(snap);
}

/*
 * 20000 short threads: every lock counted, memory bounded throughout. A
 * dead thread's table is recycled at the next scan, so the collector's
 * memory grows with the threads that end between two scans: scans every
 * 0.1 s keep that to a few thousand here (7 MiB measured under load),
 * where every 1 s a fast machine ended nearly all 20000 (30 MiB) first.
 */
static void test_thread_churn(void)
{
	char *res = tmp_path("churn.res");
	int status;
	double total = 0;
	const cJSON *row;
	cJSON *snap = run_scale("-d", "0.1", (char *[]){ "churn", "20000", NULL },
				res, &status);

	CHECK(status == 0, "churn: qsptop exited %d", status);
	if (snap == NULL) {
		CHECK(false, "churn: a snapshot was written");
		return;
	}
	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		if (in_workload(row))
			total += num_field(row, "acquisitions");
	}
	printf("churn: %.0f of %ld counted, collector %.0f bytes, target peak "
	       "RSS %ld kB\n", total, result_number(res, "acquisitions"),
	       num_field(cJSON_GetObjectItem(snap, "collector_memory"), "used"),
	       result_number(res, "vmhwm_kb"));
	CHECK(total == 20000 && result_number(res, "acquisitions") == 20000,
	      "churn: %.0f of 20000 acquisitions counted", total);
	CHECK(num_field(snap, "threads") >= 20000,
	      "churn: every thread seen (%.0f)", num_field(snap, "threads"));
	CHECK(num_field(cJSON_GetObjectItem(snap, "collector_memory"), "used") <= 16 << 20,
	      "churn: the collector keeps under 16 MiB: %.0f bytes",
	      num_field(cJSON_GetObjectItem(snap, "collector_memory"), "used"));
	CHECK(result_number(res, "vmhwm_kb") > 0 && result_number(res, "vmhwm_kb") <= 64 * 1024,
	      "churn: the target's peak RSS stays under 64 MiB: %ld kB",
	      result_number(res, "vmhwm_kb"));
	cJSON_Delete(snap);
}

int main(void)
{
	find_paths("/tmp/qsptop-scale-XXXXXX", "wl_scale");
	test_many_sites();
	test_memory_cap();
	test_thread_churn();
	remove_tmp();
	return check_summary();
}
