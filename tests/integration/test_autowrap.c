/*
 * Lock wrappers found without being named, through the real program:
 * `qsptop -b --json -- wl_autowrap_stripped GO RESULT`, no --wrapper. The
 * workload's callers contend until qsptop's header says it found the two
 * wrappers (and two more intervals have passed, so that the collector has
 * their ranges); then each caller takes a second lock exactly its count of
 * times. Every caller of a wrapper must have a row of that lock with
 * exactly its count, the same as a run given the wrappers' addresses
 * with --wrapper has, and the functions that are not wrappers (a long one
 * with three callers, a short one with one, a short one with three that
 * also unlocks) keep their own rows. A short function with one caller is
 * a wrapper's part when that caller is a wrapper named by address.
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

enum { RUN_TIMEOUT_MS = 120000, FIND_TIMEOUT_MS = 60000 };

static const char *const wrapped[] = { "caller_a", "caller_b", "caller_c",
				       "caller_d", "caller_e", "caller_f" };
static const char *const unwrapped[] = { "caller_g", "caller_h", "caller_i",
					 "caller_k", "caller_l", "caller_m",
					 "caller_j" };

/* The callers of outer_lock, which locks through helper_lock. */
static const char *const outer[] = { "caller_n", "caller_o" };

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* The callers' counts in the run that found the wrappers; -1 unknown. */
static double found_counts[N(wrapped)] = { -1, -1, -1, -1, -1, -1 };

/* Wait until text is in the file at path count times; whether it was. */
static bool wait_occurrences(const char *path, const char *text, int count)
{
	for (long end = monotonic_ms() + FIND_TIMEOUT_MS;; usleep(20000)) {
		if (file_occurrences(path, text) >= count)
			return true;
		if (monotonic_ms() >= end)
			return false;
	}
}

/*
 * Run the stripped workload under qsptop with extra (NULL-terminated), let
 * it go on to its exact phase once text has been printed 3 times, and
 * return the snapshot (NULL if none); the batch output is left in out.
 */
static cJSON *run(const char *const *extra, const char *text, const char *out,
		  const char *result)
{
	char *json = tmp_path("autowrap.json"), *go = tmp_path("autowrap.go");
	char wl[PATH_MAX + 64];
	struct args a = { 0 };
	pid_t pid;
	int status;

	snprintf(wl, sizeof(wl), "%s/tests/wl_autowrap_stripped", build);
	args_add(&a, qsptop, "-b", "-d", "0.2", "-m", "none", "-w", "300",
		 "-j", json, NULL);
	args_add_all(&a, (char *const *)extra);
	args_add(&a, "--", wl, go, result, NULL);
	unlink(json);
	unlink(go);
	unlink(result);
	pid = start(a.v, out, tmp_path("autowrap.err"));
	CHECK(wait_occurrences(out, text, 3),
	      "qsptop prints '%s' within %d ms, got %d times", text,
	      FIND_TIMEOUT_MS, file_occurrences(out, text));
	close(open(go, O_WRONLY | O_CREAT, 0644));
	status = wait_status(pid, RUN_TIMEOUT_MS);
	CHECK(status == 0, "qsptop exits 0, got %d", status);
	return load_json(json);
}

/* The acquisitions of snap's rows of object whose site is in function fn. */
static double acquisitions_of(const cJSON *snap, const char *object,
			      const char *fn)
{
	const cJSON *row;
	double sum = 0;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const char *o = str_field(row, "object");
		const cJSON *site = cJSON_GetObjectItem(row, "site");

		if (o && strcmp(o, object) == 0 &&
		    (fn == NULL || names_function(str_field(site, "symbol"), fn)))
			sum += num_field(row, "acquisitions");
	}
	return sum;
}

/* The address the workload wrote as "exact 0x...", into buf[64]. */
static void exact_object(const char *result, char *buf)
{
	FILE *f = fopen(result, "r");
	char line[128];

	buf[0] = '\0';
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "exact %63s", buf) != 1)
			buf[0] = '\0';
	if (f)
		fclose(f);
}

/* The workload's counts of callers, in total. */
static long sum_counts(const char *result, const char *const *callers, size_t n)
{
	long sum = 0;

	for (size_t i = 0; i < n; i++)
		sum += result_number(result, callers[i]);
	return sum;
}

static void test_found(void)
{
	static const char *const extra[] = { NULL };
	char *out = tmp_path("found.out"), *result = tmp_path("found.res");
	char exact[64];
	cJSON *snap = run(extra, "wrappers: 2 found", out, result);
	const cJSON *found = cJSON_GetObjectItem(snap, "wrappers_found");
	long total;

	exact_object(result, exact);
	CHECK(snap && exact[0], "a snapshot and the workload's result");
	if (snap == NULL || !exact[0])
		return;
	CHECK(cJSON_GetArraySize(found) == 2 && file_occurrences(out, "3 found") == 0,
	      "found: JSON wrappers_found lists 2, got %d",
	      cJSON_GetArraySize(found));
	for (size_t i = 0; i < N(wrapped); i++) {
		long want = result_number(result, wrapped[i]);
		double got = acquisitions_of(snap, exact, wrapped[i]);

		CHECK(want > 0 && got == want,
		      "found: %s's row holds its %ld acquisitions exactly, got %.0f",
		      wrapped[i], want, got);
		found_counts[i] = got;
	}
	for (size_t i = 0; i < N(unwrapped); i++)
		CHECK(acquisitions_of(snap, exact, unwrapped[i]) == 0,
		      "found: %s calls no wrapper: no row of its own, got %.0f",
		      unwrapped[i], acquisitions_of(snap, exact, unwrapped[i]));
	for (size_t i = 0; i < N(outer); i++)
		CHECK(acquisitions_of(snap, exact, outer[i]) == 0,
		      "found: %s calls no wrapper (outer_lock is not named): no "
		      "row of its own, got %.0f", outer[i],
		      acquisitions_of(snap, exact, outer[i]));
	/* long_work and short_work lock twice a call (unwrapped[0..5]). */
	total = sum_counts(result, wrapped, N(wrapped)) +
		sum_counts(result, unwrapped, N(unwrapped)) +
		sum_counts(result, unwrapped, 6) +
		sum_counts(result, outer, N(outer));
	CHECK(acquisitions_of(snap, exact, NULL) == total,
	      "found: the lock's rows hold %ld acquisitions, got %.0f", total,
	      acquisitions_of(snap, exact, NULL));
	cJSON_Delete(snap);
}

/* --no-auto-wrappers: nothing found, the callers have no rows. */
static void test_not_looked_for(void)
{
	static const char *const extra[] = { "--no-auto-wrappers", NULL };
	char *out = tmp_path("off.out"), *result = tmp_path("off.res");
	char exact[64];
	cJSON *snap = run(extra, "dropped 0", out, result);

	exact_object(result, exact);
	CHECK(snap && exact[0], "off: a snapshot and the workload's result");
	if (snap == NULL || !exact[0])
		return;
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(snap, "wrappers_found")) == 0 &&
	      file_occurrences(out, "wrappers:") == 0,
	      "off: no wrapper found, in JSON or the header");
	for (size_t i = 0; i < N(wrapped); i++)
		CHECK(acquisitions_of(snap, exact, wrapped[i]) == 0,
		      "off: %s has no row, got %.0f acquisitions", wrapped[i],
		      acquisitions_of(snap, exact, wrapped[i]));
	cJSON_Delete(snap);
}

/* The address of function fn in the unstripped twin, from nm; 0 if none. */
static unsigned long long offset_of(const char *fn)
{
	char cmd[PATH_MAX + 64], line[256], name[64], kind;
	unsigned long long addr, found = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm %s/tests/wl_autowrap", build);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p))
		if (sscanf(line, "%llx %c %63s", &addr, &kind, name) == 3 &&
		    strcmp(name, fn) == 0)
			found = addr;
	if (p)
		pclose(p);
	return found;
}

/*
 * The wrappers named by address (--wrapper) count as the found ones do;
 * outer_lock named, its helper is found as a part of it.
 */
static void test_named(void)
{
	char one[64], two[64], out3[64], exact[64];
	const char *extra[] = { "--wrapper", one, "--wrapper", two,
				"--wrapper", out3, NULL };
	char *out = tmp_path("named.out"), *result = tmp_path("named.res");
	cJSON *snap;

	snprintf(one, sizeof(one), "wl_autowrap_stripped+0x%llx",
		 offset_of("one_lock"));
	snprintf(two, sizeof(two), "wl_autowrap_stripped+0x%llx",
		 offset_of("two_lock"));
	snprintf(out3, sizeof(out3), "wl_autowrap_stripped+0x%llx",
		 offset_of("outer_lock"));
	CHECK(offset_of("one_lock") && offset_of("two_lock") &&
	      offset_of("outer_lock"),
	      "nm finds one_lock, two_lock and outer_lock in wl_autowrap");
	snap = run(extra, "wrappers: 1 found", out, result);
	exact_object(result, exact);
	CHECK(snap && exact[0], "named: a snapshot and the workload's result");
	if (snap == NULL || !exact[0])
		return;
	for (size_t i = 0; i < N(wrapped); i++) {
		double got = acquisitions_of(snap, exact, wrapped[i]);

		CHECK(got == result_number(result, wrapped[i]) &&
		      got == found_counts[i],
		      "named: %s's row holds %.0f, as the run that found the "
		      "wrappers (%.0f) and the workload (%ld)", wrapped[i], got,
		      found_counts[i], result_number(result, wrapped[i]));
	}
	for (size_t i = 0; i < N(outer); i++) {
		long want = result_number(result, outer[i]);
		double got = acquisitions_of(snap, exact, outer[i]);

		CHECK(want > 0 && got == want, "named: %s's row holds its %ld "
		      "acquisitions through outer_lock and its helper, got %.0f",
		      outer[i], want, got);
	}
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(snap, "wrappers_found")) == 1,
	      "named: one wrapper found (helper_lock), got %d",
	      cJSON_GetArraySize(cJSON_GetObjectItem(snap, "wrappers_found")));
	cJSON_Delete(snap);
}

int main(void)
{
	find_paths("/tmp/qsptop-autowrap-XXXXXX", "wl_autowrap_stripped");
	signal(SIGPIPE, SIG_IGN);
	test_found();
	test_named();
	test_not_looked_for();
	remove_tmp();
	return check_summary();
}
