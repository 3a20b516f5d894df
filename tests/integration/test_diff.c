/*
 * qsptop --diff on two real runs: each line's change is its new counts
 * less its old ones, lines sorted by the change in wait, the sums those
 * of the two snapshots, and go tool pprof -diff_base on the two runs'
 * profiles agrees with it exactly. Bad input is one line and status.
 */
#include "../unit/check.h"
#include "harness.h"
#include "pprof_raw.h"

#define RUN_TIMEOUT_MS 120000

struct sums {
	double acquisitions, contended, wait_ns;
};

/* One run of wl_locks mutex under qsptop: tmp/NAME.json and NAME.pb.gz. */
static bool one_run(const char *name)
{
	char json[PATH_MAX], profile[PATH_MAX], expect[PATH_MAX], base[64];
	struct run r;

	snprintf(base, sizeof(base), "%s.json", name);
	strcpy(json, tmp_path(base));
	snprintf(base, sizeof(base), "%s.pb.gz", name);
	strcpy(profile, tmp_path(base));
	strcpy(expect, tmp_path("expect"));
	r = run_capture((char *[]){ qsptop, "-b", "-d", "0.2", "-j", json,
				    "--pprof", profile, "--", workload, "mutex",
				    expect, NULL }, RUN_TIMEOUT_MS, 0);
	CHECK(r.status == 0, "%s: qsptop exited %d: %.300s", name, r.status, r.err);
	run_free(&r);
	return r.status == 0;
}

/* The sums of a snapshot's rows. */
static struct sums rows_sums(const char *name)
{
	cJSON *j = load_json(tmp_path(name)), *row;
	struct sums s = { 0 };

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(j, "rows")) {
		s.acquisitions += num_field(row, "acquisitions");
		s.contended += num_field(row, "contended");
		s.wait_ns += num_field(row, "wait_ns");
	}
	cJSON_Delete(j);
	return s;
}

static struct sums counts_of(const cJSON *line, const char *which)
{
	const cJSON *c = cJSON_GetObjectItem(line, which);

	return (struct sums){ num_field(c, "acquisitions"),
			      num_field(c, "contended"), num_field(c, "wait_ns") };
}

/* The diff's JSON: changes are new - old, sorted, summing to the runs'. */
static void check_diff_json(struct sums old, struct sums new)
{
	char out[PATH_MAX];
	struct run r;
	cJSON *d, *line;
	struct sums change = { 0 };
	double last = 1e300;
	bool exact = true, sorted = true, same_acq = true;

	strcpy(out, tmp_path("diff.json"));
	r = run_capture((char *[]){ qsptop, "-j", out, "--diff",
				    tmp_path("old.json"), tmp_path("new.json"),
				    NULL }, RUN_TIMEOUT_MS, 0);
	CHECK(r.status == 0, "--diff -j: exited %d: %s", r.status, r.err);
	run_free(&r);
	d = load_json(out);
	cJSON_ArrayForEach(line, cJSON_GetObjectItem(d, "rows")) {
		struct sums o = counts_of(line, "old"), n = counts_of(line, "new");
		struct sums c = counts_of(line, "change");

		exact &= c.acquisitions == n.acquisitions - o.acquisitions &&
			 c.contended == n.contended - o.contended &&
			 c.wait_ns == n.wait_ns - o.wait_ns;
		sorted &= c.wait_ns <= last;
		last = c.wait_ns;
		/* wl_locks mutex takes its locks a fixed number of times. */
		same_acq &= c.acquisitions == 0;
		change.acquisitions += c.acquisitions;
		change.contended += c.contended;
		change.wait_ns += c.wait_ns;
	}
	CHECK(d && cJSON_GetArraySize(cJSON_GetObjectItem(d, "rows")) >= 2,
	      "--diff -j: expected a line per site (2 or more)");
	CHECK(exact, "--diff: expected every change to be new - old");
	CHECK(sorted, "--diff: expected lines sorted by the change in wait");
	CHECK(same_acq, "--diff: expected no change in acquisitions between "
	      "two runs of a fixed workload");
	CHECK(change.wait_ns == new.wait_ns - old.wait_ns &&
	      change.contended == new.contended - old.contended,
	      "--diff: expected the changes to sum to the snapshots' (%.0f ns, "
	      "%.0f contended), got %.0f, %.0f", new.wait_ns - old.wait_ns,
	      new.contended - old.contended, change.wait_ns, change.contended);
	cJSON_Delete(d);
}

/* go tool pprof -raw -diff_base OLD NEW: its sums, or false. */
static bool pprof_diff(struct sums *s)
{
	char base[PATH_MAX], new[PATH_MAX];
	struct pprof_sums p;

	strcpy(base, tmp_path("old.pb.gz"));
	strcpy(new, tmp_path("new.pb.gz"));
	if (!pprof_raw(&p, RUN_TIMEOUT_MS, "-diff_base", base, new, NULL))
		return false;
	*s = (struct sums){ p.acquisitions, p.contentions, p.delay };
	return true;
}

/* The table: its header, then a line per site. */
static void check_table(void)
{
	struct run r = run_capture((char *[]){ qsptop, "-w", "120", "--diff",
					       tmp_path("old.json"),
					       tmp_path("new.json"), NULL },
				   RUN_TIMEOUT_MS, 0);

	CHECK(r.status == 0 && strstr(r.out, "WAIT+-") &&
	      strstr(r.out, "site_mutex_a") && strstr(r.out, "site_mutex_b"),
	      "--diff: expected a table with both sites, got %d: %s%s", r.status,
	      r.out, r.err);
	run_free(&r);
}

/* A missing file, a file that is no snapshot, one argument. */
static void test_bad_input(void)
{
	char *junk = tmp_path("junk.json");
	FILE *f = fopen(junk, "w");
	struct run r;

	if (f) {
		fputs("{\"not\": 1}\n", f);
		fclose(f);
	}
	r = run_capture((char *[]){ qsptop, "--diff", "/nonexistent.json",
				    junk, NULL }, RUN_TIMEOUT_MS, 0);
	CHECK(r.status == 1 && strstr(r.err, "/nonexistent.json: No such file") &&
	      strchr(r.err, '\n') == r.err + strlen(r.err) - 1,
	      "--diff of a missing file: expected one line and exit 1, got %d: %s",
	      r.status, r.err);
	run_free(&r);
	r = run_capture((char *[]){ qsptop, "--diff", junk, junk, NULL },
			RUN_TIMEOUT_MS, 0);
	CHECK(r.status == 1 && strstr(r.err, "not a qsptop JSON snapshot"),
	      "--diff of a file that is not a snapshot: expected one line and "
	      "exit 1, got %d: %s", r.status, r.err);
	run_free(&r);
	r = run_capture((char *[]){ qsptop, "--diff", junk, NULL },
			RUN_TIMEOUT_MS, 0);
	CHECK(r.status == 2 && strstr(r.err, "--diff: expected OLD.json NEW.json"),
	      "--diff with one file: expected a usage error, got %d: %s",
	      r.status, r.err);
	run_free(&r);
}

int main(void)
{
	struct sums old, new, p;
	bool go = run_quietly((char *[]){ "go", "version", NULL }) == 0;

	find_paths("/tmp/qsptop-diff-XXXXXX", "wl_locks");
	test_bad_input();
	if (one_run("old") && one_run("new")) {
		old = rows_sums("old.json");
		new = rows_sums("new.json");
		check_diff_json(old, new);
		check_table();
		if (!go)
			SKIP("go tool pprof not found (install golang-go; make "
			     "check as root does)");
		else
			CHECK(pprof_diff(&p) && p.wait_ns == new.wait_ns - old.wait_ns &&
			      p.contended == new.contended - old.contended &&
			      p.acquisitions == new.acquisitions - old.acquisitions,
			      "go tool pprof -diff_base: expected %.0f ns, %.0f "
			      "contentions, %.0f acquisitions as --diff, got %.0f, "
			      "%.0f, %.0f", new.wait_ns - old.wait_ns,
			      new.contended - old.contended,
			      new.acquisitions - old.acquisitions, p.wait_ns,
			      p.contended, p.acquisitions);
	}
	remove_tmp();
	return check_summary();
}
