/*
 * Holders, through the real program on wl_blame (issue 24): a wait is
 * charged to the holder sites it was spent behind (blocked_by), split at
 * a handover between two holders; a holder's row has the wait it caused
 * (caused_wait_ns, blocking); holds are timed on a sample yet estimate
 * the time held (hold_ns) and the share of time a lock is held
 * (held_share). Each is compared with what the scene measured of itself
 * (~400 and ~40 ms, ~40 and ~10 ms, 1 s, 80% on a quiet machine; a
 * loaded one stretches its sleeps and spins, and no check judges that).
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

enum { RUN_TIMEOUT_MS = 120000 };

static char *results;	/* the scene's own measures: result_us() */

/* A measure of the scene's, in ms. */
static double result_ms(const char *name)
{
	return (double)result_number(results, name) / 1000;
}

/* qsptop -b --json over wl_blame MODE; its snapshot. */
static cJSON *run_blame(const char *mode)
{
	char *json = tmp_path("blame.json");
	struct args a = { 0 };

	results = tmp_path("results");
	args_add(&a, qsptop, "-b", "-d", "0.5", "-w", "200", "-j", json,
		 "--holders", "--", workload, (char *)mode, results, NULL);
	unlink(results);
	return snapshot_of_run(a.v, json, RUN_TIMEOUT_MS, mode);
}

/* The entry of a row's blocked_by or blocking list naming fn, or NULL. */
static const cJSON *blame_of(const cJSON *row, const char *list, const char *fn)
{
	const cJSON *b;

	cJSON_ArrayForEach(b, cJSON_GetObjectItem(row, list)) {
		const char *sym = str_field(cJSON_GetObjectItem(b, "site"),
					    "symbol");

		if (sym && strcmp(sym, fn) == 0)
			return b;
	}
	return NULL;
}

/* Whether got is within share of want. */
static bool near(double got, double want, double share)
{
	return fabs(got - want) <= want * share;
}

/* Check that row's waits behind fn came to about want_ms in count waits. */
static void check_blame(const cJSON *row, const char *list, const char *fn,
			double want_ms, double share, double count)
{
	const cJSON *b = row ? blame_of(row, list, fn) : NULL;
	double ms = num_field(b, "wait_ns") / 1e6;

	CHECK(b != NULL, "%s names %s", list, fn);
	CHECK(near(ms, want_ms, share),
	      "%s %s: expected %.0f ms within %.0f%%, got %.1f ms", list, fn,
	      want_ms, share * 100, ms);
	CHECK(num_field(b, "count") == count, "%s %s: expected %.0f waits, "
	      "got %.0f", list, fn, count, num_field(b, "count"));
}

/* The symbol of frame i of a frames array, or "". */
static const char *frame_symbol(const cJSON *frames, int i)
{
	const char *sym = str_field(cJSON_GetArrayItem(frames, i), "symbol");

	return sym ? sym : "";
}

/*
 * The holder's stack, unwound where hold_long released the lock while
 * the waiter slept: its row's heaviest holder stack is hold_long called
 * from split_holder, with its caused wait (all of it: one stack), and
 * the waiter's blocked_by entry for hold_long shows that stack.
 */
static void check_holder_stack(const cJSON *wait, const cJSON *hold)
{
	const cJSON *h = cJSON_GetArrayItem(cJSON_GetObjectItem(hold,
						"holder_stacks"), 0);
	const cJSON *frames = cJSON_GetObjectItem(h, "frames");
	const cJSON *b = wait ? blame_of(wait, "blocked_by", "hold_long") : NULL;
	const cJSON *stack = cJSON_GetObjectItem(b, "stack");

	CHECK(strcmp(frame_symbol(frames, 0), "hold_long") == 0 &&
	      strcmp(frame_symbol(frames, 1), "split_holder") == 0,
	      "hold_long's holder_stacks[0]: expected hold_long <- split_holder, "
	      "got %s <- %s", frame_symbol(frames, 0), frame_symbol(frames, 1));
	CHECK(num_field(h, "releases") >= 1 && num_field(h, "caused_wait_ns") ==
	      num_field(hold, "caused_wait_ns"),
	      "hold_long's holder stack: expected releases and the row's caused "
	      "wait %.0f, got %.0f releases, %.0f ns",
	      num_field(hold, "caused_wait_ns"), num_field(h, "releases"),
	      num_field(h, "caused_wait_ns"));
	CHECK(strcmp(frame_symbol(stack, 1), "split_holder") == 0,
	      "split_wait's blocked_by hold_long: expected the holder's stack "
	      "(hold_long <- split_holder), got %s <- %s",
	      frame_symbol(stack, 0), frame_symbol(stack, 1));
}

/*
 * 10 waits behind 40 ms holds at hold_long, 10 behind 4 ms holds at
 * hold_short: the waiter's row names both with their waits (~400 and
 * ~40 ms, as the waiter timed them) and counts, and hold_long's row has
 * caused the ~400 ms.
 */
static void test_split(void)
{
	cJSON *snap = run_blame("split");
	const cJSON *wait = row_at_symbol(snap, "split_wait");
	const cJSON *hold = row_at_symbol(snap, "hold_long");
	double long_ms = result_ms("wait_long_us");

	CHECK(wait != NULL && hold != NULL, "split: rows at split_wait and hold_long");
	check_blame(wait, "blocked_by", "hold_long", long_ms, 0.15, 10);
	check_blame(wait, "blocked_by", "hold_short",
		    result_ms("wait_short_us"), 0.15, 10);
	CHECK(near(num_field(hold, "caused_wait_ns") / 1e6, long_ms, 0.15),
	      "hold_long's caused_wait_ns: expected %.1f ms within 15%%, got "
	      "%.1f ms", long_ms, num_field(hold, "caused_wait_ns") / 1e6);
	check_blame(hold, "blocking", "split_wait", long_ms, 0.15, 10);
	check_holder_stack(wait, hold);
	cJSON_Delete(snap);
}

/*
 * 5 waits behind H1's 40 ms hold then H2's 10 ms one: each split between
 * them, H2's part its holds (~10 ms each), H1's the rest (~39 ms: the
 * waiter comes 1 ms late), not charged whole to either.
 */
static void test_handover(void)
{
	cJSON *snap = run_blame("handover");
	const cJSON *wait = row_at_symbol(snap, "handover_wait");
	double second = result_ms("second_hold_us");
	double both = result_ms("wait_both_us");

	CHECK(wait != NULL, "handover: a row at handover_wait");
	check_blame(wait, "blocked_by", "handover_first", both - second, 0.15, 5);
	check_blame(wait, "blocked_by", "handover_second", second, 0.15, 5);
	cJSON_Delete(snap);
}

/*
 * The standard error (ms) of a sampled estimate of the time held: a mean
 * of timed holds scaled to all of them, from the spread the scene
 * measured. On a quiet machine 50 us holds barely spread; on a loaded one
 * a hold preempted for milliseconds, timed or not, moves the estimate
 * further than the targets' 25% (the estimator is right, the scene is
 * not regular): the checks then allow four standard errors.
 */
static double hold_se_ms(double held_ms, double timed)
{
	double n = (double)result_number(results, "holds_made");
	double mean = held_ms * 1000 / n;	/* us */
	double var = (double)result_number(results, "held_sq_us2") / n -
		     mean * mean;

	return timed > 0 && var > 0 ? n * sqrt(var / timed) / 1000 : 0;
}

/* 20,000 holds of 50 us: a sample is timed, and estimates 1 s in all. */
static void test_hold_time(void)
{
	cJSON *snap = run_blame("holds");
	const cJSON *row = row_at_symbol(snap, "hold_many");
	double timed = num_field(row, "holds_timed");
	double ms = num_field(row, "hold_ns") / 1e6;
	double held = result_ms("held_us");
	double within = fmax(0.25 * held, 4 * hold_se_ms(held, timed));

	CHECK(row != NULL, "holds: a row at hold_many");
	CHECK(timed > 0 && timed < 20000,
	      "holds: expected a sample of the 20000 holds timed, got %.0f", timed);
	CHECK(fabs(ms - held) <= within,
	      "holds: hold_ns expected %.1f ms within %.1f ms (25%% or four "
	      "standard errors of its sample), got %.1f ms", held, within, ms);
	CHECK(num_field(row, "max_hold_ns") >= num_field(row, "avg_hold_ns") &&
	      num_field(row, "max_hold_ns") >= 50000 &&
	      num_field(row, "max_hold_ns") <= result_ms("held_us") * 1e6,
	      "holds: max_hold_ns expected at least the average and 50 us, "
	      "at most the time held, got %.0f ns (average %.0f)",
	      num_field(row, "max_hold_ns"), num_field(row, "avg_hold_ns"));
	cJSON_Delete(snap);
}

/*
 * Write holds of an rwlock and holds of a spinlock are timed as a
 * mutex's: 5,000 of ~50 us each, about 250 ms, estimated from a sample.
 */
static void check_other_holds(const char *mode, const char *fn)
{
	cJSON *snap = run_blame(mode);
	const cJSON *row = row_at_symbol(snap, fn);
	double timed = num_field(row, "holds_timed");
	double ms = num_field(row, "hold_ns") / 1e6;
	double held = result_ms("held_us");
	double within = fmax(0.25 * held, 4 * hold_se_ms(held, timed));

	CHECK(row != NULL && timed > 0 && timed < 5000,
	      "%s: a row at %s with a sample of its 5000 holds timed, got %.0f",
	      mode, fn, timed);
	CHECK(fabs(ms - held) <= within,
	      "%s: hold_ns expected %.1f ms within %.1f ms, got %.1f ms", mode,
	      held, within, ms);
	cJSON_Delete(snap);
}

/*
 * pthread_cond_wait releases its mutex while it waits, inside glibc: a
 * hold timed from the lock call ends there, not at the unlock after the
 * wait, or the lock would read held for the whole wait (the bundled
 * demo's queue lock read 290% held).
 */
static void test_hold_ends_in_cond_wait(void)
{
	cJSON *snap = run_blame("condhold");
	const cJSON *row = row_at_symbol(snap, "cond_hold");
	double waited = result_ms("loop_us");
	double ms = num_field(row, "hold_ns") / 1e6;

	CHECK(row != NULL && num_field(row, "holds_timed") > 0,
	      "condhold: a row at cond_hold with holds timed");
	CHECK(ms < waited / 10,
	      "condhold: hold_ns expected well under the %.0f ms spent in "
	      "pthread_cond_timedwait (the lock is free then), got %.1f ms",
	      waited, ms);
	CHECK(num_field(row, "held_share") < 0.1,
	      "condhold: held_share expected under 0.1, got %.3f",
	      num_field(row, "held_share"));
	cJSON_Delete(snap);
}

/*
 * A lock held 80% of the time reads 75-85%: the share the scene measured,
 * the time it held the lock (~80% of its 3 s loop, less on a loaded
 * machine) over the span qsptop counts it in, which runs from the
 * collector's start to the last update: at least the scene's loop, at
 * most qsptop's whole run (the snapshot's elapsed_s). Give or take 5
 * points, or four standard errors of the sampled holds.
 */
static void test_held_share(void)
{
	cJSON *snap = run_blame("share");
	const cJSON *row = row_at_symbol(snap, "hold_share");
	double share = num_field(row, "held_share");
	double held = result_ms("held_us");
	double lo = held / (num_field(snap, "elapsed_s") * 1000);
	double hi = held / result_ms("loop_us");
	double within = fmax(0.05, 4 * hold_se_ms(held,
				num_field(row, "holds_timed")) / result_ms("loop_us"));

	CHECK(row != NULL, "share: a row at hold_share");
	CHECK(share >= lo - within && share <= hi + within,
	      "share: held_share expected %.3f to %.3f (the scene's held time "
	      "over qsptop's run and over its own loop), give or take %.3f "
	      "(0.05, or four standard errors of its sample), got %.3f", lo,
	      hi, within, share);
	cJSON_Delete(snap);
}

/*
 * A writer holding an rwlock 40 ms at a time: the writer and the reader
 * that wait behind it name its site, with the waits they timed; the
 * holder's row has caused both.
 */
static void test_rwlock(void)
{
	cJSON *snap = run_blame("rwlock");
	const cJSON *hold = row_at_symbol(snap, "rw_hold");
	double w = result_ms("rw_write_us"), r = result_ms("rw_read_us");

	CHECK(hold != NULL, "rwlock: a row at rw_hold");
	check_blame(row_at_symbol(snap, "rw_write_wait"), "blocked_by", "rw_hold", w,
		    0.15, 5);
	check_blame(row_at_symbol(snap, "rw_read_wait"), "blocked_by", "rw_hold", r,
		    0.15, 5);
	CHECK(near(num_field(hold, "caused_wait_ns") / 1e6, w + r, 0.15),
	      "rw_hold's caused_wait_ns: expected %.1f ms within 15%%, got %.1f ms",
	      w + r, num_field(hold, "caused_wait_ns") / 1e6);
	cJSON_Delete(snap);
}

/*
 * Loaded into a running process (-p): the holders are named as in a
 * launched one, and hold times are timed; qsptop's detach leaves the
 * process running.
 */
static void test_injected(void)
{
	char *json = tmp_path("injected.json"), pidstr[16];
	pid_t pid = start((char *[]){ workload, "live", NULL },
			  tmp_path("live.out"), tmp_path("live.err"));
	struct args a = { 0 };
	struct run r;
	const cJSON *wait;
	cJSON *snap;

	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	CHECK(wait_threads(pid, 2, RUN_TIMEOUT_MS), "injected: the scene runs");
	args_add(&a, qsptop, "-b", "-d", "0.5", "-n", "4", "-w", "200", "-j",
		 json, "--holders", "-p", pidstr, NULL);
	r = run_capture(a.v, RUN_TIMEOUT_MS, 0);
	CHECK(r.status == 0, "injected: qsptop exits 0, got %d: %s", r.status,
	      r.err);
	run_free(&r);
	snap = load_json(json);
	wait = row_at_symbol(snap, "split_wait");
	CHECK(wait && blame_of(wait, "blocked_by", "hold_long"),
	      "injected: split_wait's blocked_by names hold_long");
	CHECK(num_field(row_at_symbol(snap, "hold_long"), "caused_wait_ns") > 0,
	      "injected: hold_long caused wait");
	CHECK(strcmp(frame_symbol(cJSON_GetObjectItem(cJSON_GetArrayItem(
		cJSON_GetObjectItem(row_at_symbol(snap, "hold_long"), "holder_stacks"),
		0), "frames"), 1), "split_holder") == 0,
	      "injected: hold_long's holder stack hold_long <- split_holder");
	CHECK(kill(pid, 0) == 0, "injected: the process runs on after qsptop");
	kill(pid, SIGTERM);
	wait_status(pid, RUN_TIMEOUT_MS);
	cJSON_Delete(snap);
}

int main(void)
{
	find_paths("/tmp/qsptop-blame-XXXXXX", "wl_blame");
	signal(SIGPIPE, SIG_IGN);
	test_split();
	test_handover();
	test_hold_time();
	test_held_share();
	test_hold_ends_in_cond_wait();
	check_other_holds("rwholds", "rw_hold_many");
	check_other_holds("spinholds", "spin_hold_many");
	test_rwlock();
	test_injected();
	remove_tmp();
	return check_summary();
}
