/*
 * Semaphore waits through the real program (qsptop -b -j -- wl_sem):
 * five sem_wait calls that each wait for a post are five acquisitions
 * of type semaphore whose wait is the workload's own measure within 5%;
 * four sem_timedwait calls that run out their time are four timeouts
 * (and failed), their time within 5% of the measure too.
 */
#include <cJSON.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../unit/check.h"
#include "harness.h"

enum { RUN_TIMEOUT_MS = 60000 };

/* The semaphore row with (or without) timeouts, or NULL. */
static const cJSON *sem_row(const cJSON *snap, bool timed)
{
	const cJSON *row;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		if (strcmp(str_field(row, "type"), "semaphore") == 0 &&
		    (num_field(row, "timeouts") > 0) == timed)
			return row;
	}
	return NULL;
}

/* Whether got is within 5% of want. */
static bool within_5pc(double got, double want)
{
	return want > 0 && fabs(got - want) <= 0.05 * want;
}

static void test_posted_waits(const cJSON *snap, const char *result)
{
	const cJSON *row = sem_row(snap, false);
	double want = (double)result_number(result, "posted_ns");
	double got;

	CHECK(row != NULL, "a semaphore row for the posted sem_wait calls");
	if (row == NULL)
		return;
	got = num_field(row, "wait_ns");
	CHECK(num_field(row, "acquisitions") == 5,
	      "five acquisitions of the posted semaphore, got %.0f",
	      num_field(row, "acquisitions"));
	CHECK(result_number(result, "posted_count") == 5,
	      "the workload took the semaphore five times, it says %ld",
	      result_number(result, "posted_count"));
	CHECK(within_5pc(got, want),
	      "sem_wait's wait within 5%% of the workload's %.0f ns, got %.0f",
	      want, got);
}

static void test_timed_out_waits(const cJSON *snap, const char *result)
{
	const cJSON *row = sem_row(snap, true);
	double want = (double)result_number(result, "timed_ns");
	double got;

	CHECK(row != NULL, "a semaphore row for the timed-out sem_timedwait");
	if (row == NULL)
		return;
	got = num_field(row, "wait_ns");
	CHECK(result_number(result, "timeouts") == 4,
	      "the workload saw four ETIMEDOUT, it says %ld",
	      result_number(result, "timeouts"));
	CHECK(num_field(row, "timeouts") == 4 && num_field(row, "failed") == 4 &&
	      num_field(row, "acquisitions") == 0,
	      "four timeouts, four failed, no acquisition; got %.0f, %.0f, %.0f",
	      num_field(row, "timeouts"), num_field(row, "failed"),
	      num_field(row, "acquisitions"));
	CHECK(within_5pc(got, want),
	      "sem_timedwait's wait within 5%% of the workload's %.0f ns, "
	      "got %.0f", want, got);
}

int main(void)
{
	char *json, *result;
	struct args a = { 0 };
	struct run r;
	cJSON *snap;

	find_paths("/tmp/qsptop-sem-XXXXXX", "wl_sem");
	signal(SIGPIPE, SIG_IGN);
	json = tmp_path("sem.json");
	result = tmp_path("sem.result");
	args_add(&a, qsptop, "-b", "-d", "0.2", "-j", json, "--", workload,
		 result, NULL);
	r = run_capture(a.v, RUN_TIMEOUT_MS, 0);
	CHECK(r.status == 0, "qsptop exits 0, got %d: %s", r.status, r.err);
	run_free(&r);
	snap = load_json(json);
	CHECK(snap != NULL, "a snapshot was written");
	if (snap) {
		test_posted_waits(snap, result);
		test_timed_out_waits(snap, result);
		cJSON_Delete(snap);
	}
	remove_tmp();
	return check_summary();
}
