/*
 * End-to-end tests of --pprof: a real consumer, go tool pprof (-raw and
 * -top), reads every profile qsptop writes, and its sums are the JSON
 * snapshot's of the same stop, exactly: delay the stacks' wait,
 * contentions their count (the rows' contended), acquisitions the rows'.
 * A path that cannot be written is said in one line before anything runs.
 * With --holders the caused wait (caused/nanoseconds, and the folded
 * lines of --folded-holders) sums to the snapshot's, by holder stack.
 */
#include <stdbool.h>
#include <sys/stat.h>

#include "../unit/check.h"
#include "harness.h"
#include "pprof_raw.h"

#define RUN_TIMEOUT_MS 120000


/* Whether go tool pprof can run here. */
static bool have_go(void)
{
	char *argv[] = { "go", "version", NULL };

	return run_quietly(argv) == 0;
}

/* go tool pprof with a flag or two, its output in *out; its exit status. */
static int pprof_tool(const char *flag, const char *flag2,
		      const char *profile, char **out)
{
	static char home[PATH_MAX + 8];
	char *argv[] = { "go", "tool", "pprof", (char *)flag,
			 (char *)(flag2 ? flag2 : profile),
			 (char *)(flag2 ? profile : NULL), NULL };
	char *o = tmp_path("pprof.out"), *e = tmp_path("pprof.err");
	struct start_opts so = { .out = o, .err = e, .env = home };
	int status;

	/* pprof keeps its state under $HOME: the test's scratch directory. */
	snprintf(home, sizeof(home), "HOME=%s", tmp);
	status = wait_status(start_with(argv, &so), RUN_TIMEOUT_MS);
	*out = slurp_file(o, "");
	if (status != 0) {
		char *err = slurp_file(e, "");

		fprintf(stderr, "go tool pprof %s: %.400s\n", flag, err);
		free(err);
	}
	return status;
}

/*
 * A workload mode under qsptop to its end, --pprof and -j written at the
 * same stop: go tool pprof's sums equal the snapshot's.
 */
static void test_sums_match_snapshot(const char *mode, const char *coalesce,
				     const char *top_site)
{
	char profile[PATH_MAX], json[PATH_MAX], expect[PATH_MAX];
	char *argv[] = { qsptop, "-b", "-d", "0.2", "-m", (char *)coalesce,
			 "--pprof", profile, "-j", json, "--", workload,
			 (char *)mode, expect, NULL };
	struct run r;
	char *raw = NULL, *top = NULL;
	double contended;
	cJSON *snap;

	/* tmp_path()'s buffers are reused: these outlive them. */
	strcpy(profile, tmp_path("profile.pb.gz"));
	strcpy(json, tmp_path("snap.json"));
	strcpy(expect, tmp_path("expect"));
	r = run_capture(argv, RUN_TIMEOUT_MS, 0);
	snap = load_json(json);

	CHECK(r.status == 0, "%s: qsptop exited %d: %.300s", mode, r.status, r.err);
	CHECK(snap != NULL, "%s: no JSON snapshot", mode);
	if (r.status != 0 || !snap)
		goto out;
	CHECK(pprof_tool("-raw", NULL, profile, &raw) == 0,
	      "%s: expected go tool pprof -raw to read the profile", mode);
	CHECK(pprof_tool("-top", "-sample_index=acquisitions", profile, &top) == 0,
	      "%s: expected go tool pprof -top to read the profile", mode);
	struct pprof_sums got = pprof_raw_sums(raw), want = snapshot_sums(snap, &contended);

	CHECK(got.samples > 0, "%s: expected samples in -raw, got none: %.300s",
	      mode, raw);
	CHECK(got.delay == want.delay,
	      "%s -m %s: expected delay %.0f ns (the stacks' wait), got %.0f",
	      mode, coalesce, want.delay, got.delay);
	CHECK(got.contentions == want.contentions && want.contentions == contended,
	      "%s -m %s: expected %.0f contentions (contended %.0f), got %.0f",
	      mode, coalesce, want.contentions, contended, got.contentions);
	CHECK(got.acquisitions == want.acquisitions,
	      "%s -m %s: expected %.0f acquisitions, got %.0f", mode, coalesce,
	      want.acquisitions, got.acquisitions);
	CHECK(strstr(top, top_site) != NULL,
	      "%s: expected %s in go tool pprof -top, got: %.400s", mode,
	      top_site, top);
out:
	cJSON_Delete(snap);
	free(raw);
	free(top);
	run_free(&r);
}

/* The sum of the rows' caused_wait_ns in a snapshot. */
static double snapshot_caused(const cJSON *snap)
{
	const cJSON *row;
	double sum = 0;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows"))
		sum += num_field(row, "caused_wait_ns");
	return sum;
}

/* The sum of the counts ending the lines of folded text; lines in *n. */
static double folded_sum(const char *text, int *n)
{
	double sum = 0;

	*n = 0;
	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l) {
		const char *eol = strchr(l, '\n'), *sp = NULL;

		for (const char *c = l; c < (eol ? eol : l + strlen(l)); c++)
			sp = *c == ' ' ? c : sp;
		if (sp) {
			sum += strtod(sp + 1, NULL);
			(*n)++;
		}
	}
	return sum;
}

/*
 * --folded-holders of the same stop: the caused wait by holder stack,
 * root first, summing to the snapshot's caused_wait_ns exactly.
 */
static void check_folded_holders(const char *path, double caused)
{
	char *text = slurp_file(path, "");
	int lines;
	double sum = folded_sum(text, &lines);

	CHECK(lines > 0 && sum == caused,
	      "--folded-holders: expected lines summing to caused_wait_ns %.0f, "
	      "got %d lines, %.0f:\n%.400s", caused, lines, sum, text);
	CHECK(strstr(text, ";split_holder;hold_long;mutex@") != NULL,
	      "--folded-holders: expected a line ...;split_holder;hold_long;"
	      "mutex@..., got:\n%.400s", text);
	free(text);
}

/*
 * --holders, wl_blame's split scene (a waiter behind 40 ms holds at
 * hold_long, then 4 ms ones at hold_short): the profile's caused
 * nanoseconds sum to the snapshot's caused_wait_ns exactly, and go tool
 * pprof -top by caused puts hold_long first, with the rest of the
 * holder's stack (its caller split_holder), which only the holder
 * stacks carry.
 */
static void test_caused(void)
{
	char profile[PATH_MAX], json[PATH_MAX], blame[PATH_MAX + 32], *raw = NULL;
	char folded[PATH_MAX];
	char *top = NULL, *first;
	struct pprof_sums got;
	struct run r;
	cJSON *snap;

	strcpy(profile, tmp_path("caused.pb.gz"));
	strcpy(json, tmp_path("caused.json"));
	snprintf(blame, sizeof(blame), "%s/tests/wl_blame", build);
	strcpy(folded, tmp_path("caused.folded"));
	r = run_capture((char *[]){ qsptop, "-b", "-d", "0.5", "--holders",
				    "--pprof", profile, "-j", json,
				    "--folded-holders", folded, "--", blame,
				    "split", tmp_path("results"), NULL },
			RUN_TIMEOUT_MS, 0);
	snap = load_json(json);
	CHECK(r.status == 0 && snap, "caused: qsptop exited %d: %.300s",
	      r.status, r.err);
	if (r.status != 0 || !snap)
		goto out;
	CHECK(pprof_tool("-raw", NULL, profile, &raw) == 0,
	      "caused: expected go tool pprof -raw to read the profile");
	CHECK(pprof_tool("-top", "-sample_index=caused", profile, &top) == 0,
	      "caused: expected go tool pprof -top to read the profile");
	got = pprof_raw_sums(raw);
	CHECK(snapshot_caused(snap) > 0 && got.caused == snapshot_caused(snap),
	      "caused: expected caused/nanoseconds to sum to the snapshot's "
	      "caused_wait_ns %.0f, got %.0f", snapshot_caused(snap), got.caused);
	check_folded_holders(folded, snapshot_caused(snap));
	first = strstr(top, "flat%");
	first = first ? strchr(first, '\n') : NULL;
	CHECK(first && strncmp(strstr(first, "hold_") ? strstr(first, "hold_") : "",
			       "hold_long", 9) == 0,
	      "caused: expected hold_long first in -top by caused, got: %.600s",
	      top);
	CHECK(strstr(top, "split_holder") != NULL,
	      "caused: expected the holder's stack (hold_long's caller "
	      "split_holder) in -top by caused, got: %.600s", top);
out:
	cJSON_Delete(snap);
	free(raw);
	free(top);
	run_free(&r);
}

/* --pprof into a directory that does not exist: one line, nothing run. */
static void test_unwritable_path(void)
{
	char *argv[] = { qsptop, "-b", "--pprof", "/nonexistent/dir/p.pb.gz",
			 "--", workload, "mutex", tmp_path("expect2"), NULL };
	struct run r = run_capture(argv, RUN_TIMEOUT_MS, 0);
	char *nl = strchr(r.err, '\n');

	CHECK(r.status != 0, "expected a failure for an unwritable --pprof, got %d",
	      r.status);
	CHECK(strstr(r.err, "cannot write the pprof profile") && nl &&
	      nl[1] == '\0',
	      "expected one line naming the pprof profile, got: %s", r.err);
	CHECK(access(tmp_path("expect2"), F_OK) != 0,
	      "expected the workload not started, yet it wrote its counts");
	run_free(&r);
}

int main(void)
{
	find_paths("/tmp/qsptop-pprof-XXXXXX", "wl_locks");
	signal(SIGPIPE, SIG_IGN);
	test_unwritable_path();
	if (!have_go()) {
		SKIP("go tool pprof not found (install golang-go; make check "
		     "as root does)");
	} else {
		test_sums_match_snapshot("mutex", "none", "site_mutex_a");
		test_sums_match_snapshot("rwlock", "none", "site_read");
		test_sums_match_snapshot("cond", "none", "consumer");
		test_sums_match_snapshot("variants", "site", "variant_rwlock_timed");
		test_caused();
	}
	remove_tmp();
	return check_summary();
}
