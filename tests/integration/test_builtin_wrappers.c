/*
 * The built-in wrapper patterns for InnoDB, Rust's std, absl and
 * PostgreSQL, through
 * the real qsptop and no --wrapper: every lock call made inside a function
 * named as theirs are (wl_builtin_wrappers) counts on the row of the
 * function that called it, exactly, and no row stays inside a wrapper.
 */
#include "../unit/check.h"
#include "launch.h"

/* The rows of the workload itself whose call site is not in a via_N caller. */
static void check_no_wrapper_rows(const cJSON *snap)
{
	const cJSON *row;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const cJSON *site = cJSON_GetObjectItem(row, "site");
		const char *module = str_field(site, "module");
		const char *sym = str_field(site, "symbol");

		if (module == NULL || strstr(module, "wl_builtin_wrappers") == NULL)
			continue;
		CHECK(sym && strncmp(sym, "via_", 4) == 0,
		      "a row's call site is inside a wrapper: %s (%.0f acquisitions), "
		      "expected only the callers via_N", check_show(sym),
		      num_field(row, "acquisitions"));
	}
}

int main(void)
{
	char *expect, *json, caller[64], symbol[256];
	long count;
	int lines = 0;
	struct run r;
	cJSON *snap;
	FILE *f;

	find_paths("/tmp/qsptop-builtin-XXXXXX", "wl_builtin_wrappers");
	expect = tmp_path("expect");
	json = tmp_path("wrappers.json");
	r = run_argv((char *[]){ qsptop, "-b", "-d", "0.2", "-j", json, "--",
				 workload, expect, NULL });
	CHECK(r.status == 0, "qsptop -- wl_builtin_wrappers exits 0, got %d: %s",
	      r.status, r.err);
	snap = load_json(json);
	CHECK(snap != NULL, "a JSON snapshot was written");
	f = fopen(expect, "r");
	while (f && fscanf(f, "%63s %ld %255s", caller, &count, symbol) == 3) {
		struct sums s = sum_rows(snap, caller, "mutex");

		lines++;
		CHECK(s.acq == count, "the lock calls made inside %s: expected %ld on "
		      "the row of its caller %s, got %.0f", symbol, count, caller, s.acq);
	}
	if (f)
		fclose(f);
	CHECK(lines > 0, "the workload wrote its expectations");
	check_no_wrapper_rows(snap);
	cJSON_Delete(snap);
	run_free(&r);
	remove_tmp();
	return check_summary();
}
