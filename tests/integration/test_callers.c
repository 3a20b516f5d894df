/*
 * Lock wrappers through the real programs: `qsptop -b --json --wrapper ...
 * -- wl_wrap`. Every acquisition made inside a wrapper, free or contended,
 * must be counted on the row of the first caller outside the wrappers,
 * exactly, with its MAX and histogram; the wrappers' own rows hold nothing.
 * The workload writes down how often each caller locked.
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

enum { RUN_TIMEOUT_MS = 120000, MAX_FLAGS = 16 };

static const char *const wrappers[] = { "wc_lock", "outer_lock", "inner_lock",
					"alloca_lock", "lib_lock" };

/* Run program under qsptop -b -m site with flags; the snapshot, or NULL. */
static cJSON *run_wrapped(const char *program, const char *const *flags,
			  int nflags, const char *result)
{
	char *json = tmp_path("callers.json"), path[PATH_MAX + 64];
	struct args a = { 0 };
	struct run r;

	snprintf(path, sizeof(path), "%s/tests/%s", build, program);
	args_add(&a, qsptop, "-b", "-d", "0.2", "-m", "site", "-j", json, NULL);
	for (int i = 0; i < nflags && i < MAX_FLAGS; i++)
		args_add(&a, flags[i], NULL);
	args_add(&a, "--", path, result, NULL);
	unlink(json);
	unlink(result);
	r = run_capture(a.v, RUN_TIMEOUT_MS, 0);
	CHECK(r.status == 0, "%s: qsptop exits 0, got %d: %s", program, r.status,
	      r.err);
	run_free(&r);
	return load_json(json);
}

/* The rows whose call site's symbol is fn (with or without arguments). */
static const cJSON *row_of(const cJSON *snap, const char *fn)
{
	const cJSON *row;
	size_t len = strlen(fn);

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const char *sym = str_field(cJSON_GetObjectItem(row, "site"), "symbol");

		if (sym && strncmp(sym, fn, len) == 0 &&
		    (sym[len] == '\0' || sym[len] == '('))
			return row;
	}
	return NULL;
}

/* Each caller's row holds exactly its acquisitions; no wrapper has a row. */
static void check_callers(const cJSON *snap, const char *label,
			  const char *result, const char *const *callers,
			  int ncallers)
{
	CHECK(snap != NULL, "%s: a JSON snapshot", label);
	if (snap == NULL)
		return;
	for (int i = 0; i < ncallers; i++) {
		const cJSON *row = row_of(snap, callers[i]);
		double acq = row ? num_field(row, "acquisitions") : -1;

		CHECK(acq == result_number(result, callers[i]),
		      "%s: %s has %.0f acquisitions, the workload made %ld", label,
		      callers[i], acq, result_number(result, callers[i]));
		if (row)
			CHECK(histogram_sum(row) == num_field(row, "contended"),
			      "%s: %s's histogram holds its %.0f contended waits, "
			      "not %.0f", label, callers[i],
			      num_field(row, "contended"), histogram_sum(row));
	}
	for (size_t i = 0; i < sizeof(wrappers) / sizeof(wrappers[0]); i++) {
		const cJSON *row = row_of(snap, wrappers[i]);

		CHECK(row == NULL || num_field(row, "acquisitions") == 0,
		      "%s: the wrapper %s has no row (it has %.0f acquisitions)",
		      label, wrappers[i], row ? num_field(row, "acquisitions") : 0);
	}
}

/* The three callers of wc_lock, the nested, alloca and library wrappers. */
static void test_named_wrappers(void)
{
	static const char *const flags[] = {
		"--wrapper", "wc_lock", "--wrapper", "outer_lock",
		"--wrapper", "inner_lock", "--wrapper", "alloca_lock",
		"--wrapper", "lib_lock" };
	static const char *const callers[] = { "caller_a", "caller_b", "caller_c",
					       "nested_a", "nested_b", "alloca_a",
					       "library_a" };
	char *result = tmp_path("named.res");
	cJSON *snap = run_wrapped("wl_wrap", flags, 10, result);
	const cJSON *a = snap ? row_of(snap, "caller_a") : NULL;

	check_callers(snap, "named", result, callers, 7);
	CHECK(a && num_field(a, "contended") > 0 && num_field(a, "max_wait_ns") > 0,
	      "named: caller_a waited, and its row has the MAX (%.0f ns)",
	      a ? num_field(a, "max_wait_ns") : -1);
	cJSON_Delete(snap);
}

/*
 * Without --wrapper and without looking for wrappers, the same run counts
 * everything in the wrappers.
 */
static void test_without_wrappers(void)
{
	char *result = tmp_path("plain.res");
	static const char *const flags[] = { "--no-auto-wrappers" };
	cJSON *snap = run_wrapped("wl_wrap", flags, 1, result);
	const cJSON *wc = snap ? row_of(snap, "wc_lock") : NULL;
	long three = result_number(result, "caller_a") + result_number(result, "caller_b") +
		     result_number(result, "caller_c");

	CHECK(wc && num_field(wc, "acquisitions") == three,
	      "plain: wc_lock's own row holds its callers' %ld acquisitions, "
	      "got %.0f", three, wc ? num_field(wc, "acquisitions") : -1);
	CHECK(snap && row_of(snap, "caller_a") == NULL,
	      "plain: caller_a has no row of its own");
	cJSON_Delete(snap);
}

/* The text symbols of a program, from nm. */
struct symtab {
	int n;
	unsigned long long addr[512];
	char name[512][48];
};

static void read_symbols(const char *program, struct symtab *t)
{
	char cmd[PATH_MAX + 64], line[256], name[48], kind;
	unsigned long long addr;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm %s/tests/%s", build, program);
	p = popen(cmd, "r");
	t->n = 0;
	while (p && fgets(line, sizeof(line), p) && t->n < 512)
		if (sscanf(line, "%llx %c %47s", &addr, &kind, name) == 3 &&
		    (kind == 't' || kind == 'T')) {
			t->addr[t->n] = addr;
			snprintf(t->name[t->n++], sizeof(t->name[0]), "%s", name);
		}
	if (p)
		pclose(p);
}

/* The function of t holding address a: the nearest symbol below it. */
static const char *function_at(const struct symtab *t, unsigned long long a)
{
	int best = -1;

	for (int i = 0; i < t->n; i++)
		if (t->addr[i] < a && (best < 0 || t->addr[i] > t->addr[best]))
			best = i;
	return best < 0 ? "?" : t->name[best];
}

static unsigned long long address_of(const struct symtab *t, const char *name)
{
	for (int i = 0; i < t->n; i++)
		if (strcmp(t->name[i], name) == 0)
			return t->addr[i];
	return 0;
}

/*
 * Stripped binaries: the wrappers named by MODULE+0xOFFSET (a PIE) or by
 * 0xADDR (a fixed-address executable), as nm prints them for the unstripped
 * twin, whose symbols also name the rows the stripped run gives.
 */
static void test_address_forms(const char *program, const char *twin,
			       bool module_form)
{
	static const char *const local[] = { "wc_lock", "outer_lock", "inner_lock",
					     "alloca_lock" };
	static const char *const callers[] = { "caller_a", "caller_b", "caller_c",
					       "nested_a", "nested_b", "alloca_a" };
	static struct symtab syms;
	char forms[4][96], *result = tmp_path("stripped.res");
	const char *flags[8];
	double acq[6] = { 0 };
	int n = 0, in_wrapper = 0;
	const cJSON *row;
	cJSON *snap;

	read_symbols(twin, &syms);
	for (int i = 0; i < 4; i++) {
		unsigned long long a = address_of(&syms, local[i]);

		CHECK(a != 0, "%s: nm finds %s in %s", program, local[i], twin);
		if (module_form)
			snprintf(forms[i], sizeof(forms[i]), "%s+0x%llx", program, a);
		else
			snprintf(forms[i], sizeof(forms[i]), "0x%llx", a);
		flags[n++] = "--wrapper";
		flags[n++] = forms[i];
	}
	snap = run_wrapped(program, flags, n, result);
	CHECK(snap != NULL, "%s: a JSON snapshot", program);
	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const cJSON *site = cJSON_GetObjectItem(row, "site");
		const char *module = str_field(site, "module");
		const char *fn;

		if (module == NULL || strstr(module, program) == NULL)
			continue;
		CHECK(str_field(site, "symbol") == NULL,
		      "%s: stripped, so no row has a symbol", program);
		fn = function_at(&syms, (unsigned long long)num_field(site, "offset"));
		for (int i = 0; i < 4; i++)
			in_wrapper += strcmp(fn, local[i]) == 0 &&
				      num_field(row, "acquisitions") > 0;
		for (int i = 0; i < 6; i++)
			if (strcmp(fn, callers[i]) == 0)
				acq[i] += num_field(row, "acquisitions");
	}
	for (int i = 0; i < 6; i++)
		CHECK(acq[i] == result_number(result, callers[i]),
		      "%s: %s has %.0f acquisitions, the workload made %ld", program,
		      callers[i], acq[i], result_number(result, callers[i]));
	CHECK(in_wrapper == 0, "%s: %d rows left in the wrappers", program,
	      in_wrapper);
	cJSON_Delete(snap);
}

/* qsptop -p pid -m site for two updates, with --wrapper w unless NULL. */
static cJSON *attach_once(pid_t pid, const char *w)
{
	char *json = tmp_path("attach.json"), pidstr[16];
	char *argv[] = { qsptop, "-b", "-n", "2", "-d", "0.2", "-m", "site",
			 "--no-auto-wrappers", "-j", json, "-p", pidstr,
			 "--wrapper", (char *)w, NULL };
	struct run r;

	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	if (w == NULL)
		argv[13] = NULL;
	unlink(json);
	r = run_capture(argv, RUN_TIMEOUT_MS, 0);
	CHECK(r.status == 0, "-p %s: qsptop exits 0, got %d: %s", w ? w : "",
	      r.status, r.err);
	run_free(&r);
	return load_json(json);
}

/* The three callers' acquisitions in snap. */
static double callers_sum(const cJSON *snap)
{
	return acquisitions_in(snap, "caller_a") +
	       acquisitions_in(snap, "caller_b") +
	       acquisitions_in(snap, "caller_c");
}

/*
 * Wrappers named on a later -p: a running process watched first without
 * --wrapper (its calls count on wc_lock), then with it (on the callers
 * only), then without again (on wc_lock again). Each -p sees only what
 * happens while it watches; a wait already under way when the setting
 * changes counts by the old one (a few, against millions).
 */
static void test_wrappers_named_on_reattach(void)
{
	char wl[PATH_MAX + 32];
	pid_t pid;
	cJSON *snap;

	snprintf(wl, sizeof(wl), "%s/tests/wl_wrap", build);
	pid = start((char *[]){ wl, tmp_path("loop.res"), "loop", NULL }, NULL,
		    NULL);
	/* Its holder thread runs once main() does: not attached mid-start-up. */
	CHECK(wait_threads(pid, 2, RUN_TIMEOUT_MS), "-p: wl_wrap loop started "
	      "no holder thread within %d ms", RUN_TIMEOUT_MS);
	snap = attach_once(pid, NULL);
	CHECK(acquisitions_in(snap, "wc_lock") > 1000 * callers_sum(snap),
	      "-p: wc_lock counts %.0f, its callers %.0f",
	      acquisitions_in(snap, "wc_lock"), callers_sum(snap));
	cJSON_Delete(snap);
	snap = attach_once(pid, "wc_lock");
	CHECK(acquisitions_in(snap, "caller_a") > 0 &&
	      acquisitions_in(snap, "caller_b") > 0 &&
	      acquisitions_in(snap, "caller_c") > 0 &&
	      callers_sum(snap) > 1000 * acquisitions_in(snap, "wc_lock"),
	      "-p --wrapper wc_lock: callers count %.0f, %.0f, %.0f; wc_lock %.0f",
	      acquisitions_in(snap, "caller_a"), acquisitions_in(snap, "caller_b"),
	      acquisitions_in(snap, "caller_c"), acquisitions_in(snap, "wc_lock"));
	cJSON_Delete(snap);
	snap = attach_once(pid, NULL);
	CHECK(acquisitions_in(snap, "wc_lock") > 1000 * callers_sum(snap),
	      "-p again: wc_lock counts %.0f, its callers %.0f",
	      acquisitions_in(snap, "wc_lock"), callers_sum(snap));
	/* The earlier session's wrappers are not this one's: no row of theirs. */
	CHECK(snap && row_of(snap, "caller_a") == NULL &&
	      row_of(snap, "caller_b") == NULL && row_of(snap, "caller_c") == NULL,
	      "-p again: no row left for wc_lock's callers, got caller_a %s, "
	      "caller_b %s, caller_c %s",
	      row_of(snap, "caller_a") ? "a row" : "none",
	      row_of(snap, "caller_b") ? "a row" : "none",
	      row_of(snap, "caller_c") ? "a row" : "none");
	cJSON_Delete(snap);
	kill(pid, SIGTERM);
	CHECK(wait_status(pid, 10000) == 0, "the looping workload ends well");
}

int main(void)
{
	find_paths("/tmp/qsptop-callers-XXXXXX", "wl_wrap");
	signal(SIGPIPE, SIG_IGN);
	test_named_wrappers();
	test_without_wrappers();
	test_address_forms("wl_wrap_stripped", "wl_wrap", true);
	test_address_forms("wl_wrap_nopie_stripped", "wl_wrap_nopie", false);
	test_wrappers_named_on_reattach();
	remove_tmp();
	return check_summary();
}
