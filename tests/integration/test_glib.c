/*
 * The built-in glib wrappers on the real libglib-2.0.so.0, through
 * `qsptop -b --json -- wl_glib`, no --wrapper: the lock calls made inside
 * g_rw_lock_writer_lock and g_rw_lock_reader_lock count on their caller's
 * row, exactly; g_mutex_lock's futex waits, made in a slow path without a
 * name in Debian's stripped library, reach its callers' rows once that
 * slow path is found to be a wrapper (autowrap.h): the workload's threads
 * contend until the header says so, and then some more. Skipped, saying
 * so, where libglib-2.0.so.0 is not installed.
 */
#include "../unit/check.h"
#include "launch.h"

enum { NO_GLIB = 77, FIND_TIMEOUT_MS = 60000 };

/*
 * Run wl_glib under qsptop, tell it to go on once the header has said
 * "wrappers: 1 found" three times (or the workload has ended: built
 * without glib); its exit status.
 */
static int run_glib(const char *json, const char *result)
{
	char *out = tmp_path("glib.out"), *go = tmp_path("glib.go");
	pid_t pid = start((char *[]){ qsptop, "-b", "-d", "0.2", "-w", "300",
				      "-j", (char *)json, "--", workload, go,
				      (char *)result, NULL },
			  out, tmp_path("glib.err"));
	long end = monotonic_ms() + FIND_TIMEOUT_MS;
	int status;

	while (file_occurrences(out, "wrappers: 1 found") < 3 && monotonic_ms() < end) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		usleep(20000);
	}
	CHECK(file_occurrences(out, "wrappers: 1 found") >= 3, "qsptop's header says "
	      "'wrappers: 1 found' (g_mutex_lock's slow path) within %d ms",
	      FIND_TIMEOUT_MS);
	close(open(go, O_WRONLY | O_CREAT, 0644));
	return wait_status(pid, RUN_TIMEOUT_MS);
}

/* The futex waits of snap's rows in functions gm_a, gm_b and gm_c. */
static double gm_waits(const cJSON *snap)
{
	return sum_rows(snap, "gm_a", "futex").acq +
	       sum_rows(snap, "gm_b", "futex").acq +
	       sum_rows(snap, "gm_c", "futex").acq;
}

int main(void)
{
	char *result, *json;
	const char *callers[] = { "rw_writer", "rw_reader" };
	const char *types[] = { "rwlock-write", "rwlock-read" };
	int status;
	cJSON *snap;

	find_paths("/tmp/qsptop-glib-XXXXXX", "wl_glib");
	result = tmp_path("result");
	json = tmp_path("glib.json");
	status = run_glib(json, result);
	if (status == NO_GLIB) {
		SKIP("libglib-2.0.so.0 was not installed when wl_glib was built "
		     "(apt-get install libglib2.0-0, then make)");
		remove_tmp();
		return check_summary();
	}
	CHECK(status == 0, "qsptop -- wl_glib exits 0, got %d", status);
	snap = load_json(json);
	CHECK(snap != NULL, "a JSON snapshot was written");
	for (int i = 0; i < 2; i++) {
		long want = result_number(result, callers[i]);
		struct sums s = sum_rows(snap, callers[i], types[i]);

		CHECK(want > 0 && s.acq == want, "the %s calls made inside glib "
		      "count on the row of %s: expected %ld, got %.0f", types[i],
		      callers[i], want, s.acq);
	}
	CHECK(gm_waits(snap) > 0, "g_mutex_lock's futex waits reach the rows "
	      "of its callers gm_a, gm_b, gm_c: got %.0f", gm_waits(snap));
	cJSON_Delete(snap);
	remove_tmp();
	return check_summary();
}
