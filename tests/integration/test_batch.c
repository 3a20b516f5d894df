/*
 * The batch table and the JSON snapshot of the real qsptop on the demo,
 * whose condvar rows (workers waiting for work) wait far longer than its
 * mutex rows: lock rows come first; --type keeps only the types named;
 * -w and COLUMNS set the width of every line; bad values are refused.
 */
#include <stdbool.h>

#include "../../common/types.h"
#include "../unit/check.h"
#include "harness.h"

#define RUN_TIMEOUT_MS 60000

static bool is_idle(const char *type)
{
	return type && (strcmp(type, "condvar") == 0 ||
			strcmp(type, "futex-wake") == 0);
}

/* Run qsptop -b on the demo for 2 s with args before "--"; env may be NULL. */
static struct run run_demo(const char *env, char **args, size_t n)
{
	char *argv[16] = { qsptop, "-b", "-n", "1" };
	struct start_opts o = { tmp_path("out"), tmp_path("err"), env, 0 };
	size_t i = 4;
	struct run r;

	for (size_t j = 0; j < n; j++)
		argv[i++] = args[j];
	argv[i++] = "--";
	argv[i++] = workload;
	argv[i++] = "2";
	argv[i] = NULL;
	r.status = wait_status(start_with(argv, &o), RUN_TIMEOUT_MS);
	r.out = slurp_file(o.out, "");
	r.err = slurp_file(o.err, "");
	return r;
}

/* Default order: every lock row before every idle row, in JSON and batch. */
static void test_locks_first(void)
{
	char *json = tmp_path("order.json");
	struct run r = run_demo(NULL, (char *[]){ "-j", json }, 2);
	cJSON *snap = load_json(json), *row;
	const cJSON *first = NULL;
	bool idle_seen = false, order_ok = true;
	double heaviest_idle = 0;

	CHECK(r.status == 0 && snap, "demo run: expected exit 0 and a snapshot, got %d: %s",
	      r.status, r.err);
	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		bool idle = is_idle(str_field(row, "type"));

		first = first ? first : row;
		if (idle && num_field(row, "wait_ns") > heaviest_idle)
			heaviest_idle = num_field(row, "wait_ns");
		order_ok &= idle || !idle_seen;
		idle_seen |= idle;
	}
	CHECK(first && !is_idle(str_field(first, "type")) &&
	      heaviest_idle > num_field(first, "wait_ns"),
	      "expected a lock row first though a condvar row waited more (%g ns), got %s",
	      heaviest_idle, first ? str_field(first, "type") : "no rows");
	CHECK(order_ok && idle_seen, "expected every lock row before every idle row");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(snap, "idle_last")), "idle_last: expected true");
	CHECK(strstr(r.out, "idle last") != NULL, "batch header says 'idle last': %.300s", r.out);
	cJSON_Delete(snap);
	run_free(&r);
}

/* --type mutex: only mutex rows in the batch table and the snapshot. */
static void test_type_filter(void)
{
	char *json = tmp_path("mutex.json");
	struct run r = run_demo(NULL, (char *[]){ "--type", "mutex", "-j", json }, 4);
	cJSON *snap = load_json(json), *row;
	int rows = 0, others = 0, lines = 0;
	char *line = strstr(r.out, "CALL SITE");

	CHECK(r.status == 0 && snap, "--type mutex: expected exit 0 and a snapshot, got %d: %s",
	      r.status, r.err);
	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		rows++;
		others += strcmp(str_field(row, "type"), "mutex") != 0;
	}
	CHECK(rows > 0 && others == 0, "JSON: expected only mutex rows, got %d of %d others",
	      others, rows);
	row = cJSON_GetObjectItem(snap, "types");
	CHECK(cJSON_GetArraySize(row) == 1 &&
	      strcmp(cJSON_GetArrayItem(row, 0)->valuestring, "mutex") == 0,
	      "JSON types: expected [\"mutex\"]");
	while (line && (line = strchr(line, '\n')) && line[1] != '\n' && line[1]) {
		line++;
		lines++;
		CHECK(strncmp(line, "mutex ", 6) == 0, "batch: expected a mutex row, got %.60s", line);
	}
	CHECK(lines == rows, "batch: expected %d rows, got %d", rows, lines);
	CHECK(strstr(r.out, "types mutex") != NULL, "batch header names the filter");
	cJSON_Delete(snap);
	run_free(&r);
}

/*
 * The widest line of text, in characters (UTF-8), and the titles' width
 * (their line starts with TYPE, or with CALL SITE when TYPE gave way).
 */
static int widest(const char *text, int *titles)
{
	int most = 0, n = 0;

	*titles = -1;
	for (const char *p = text; *p; p++) {
		if (*p == '\n') {
			if ((strncmp(p - n, "TYPE", 4) == 0 ||
			     strncmp(p - n, "CALL SITE", 9) == 0) && *titles < 0)
				*titles = n;
			most = n > most ? n : most;
			n = 0;
		} else {
			n += ((unsigned char)*p & 0xc0) != 0x80;
		}
	}
	return most;
}

/* -w 100 and COLUMNS=90: no line wider, the titles as wide. */
static void test_width(void)
{
	struct run r = run_demo(NULL, (char *[]){ "-w", "100" }, 2);
	int titles, most = widest(r.out, &titles);

	CHECK(r.status == 0 && most <= 100 && titles == 100,
	      "-w 100: expected lines of at most 100 and titles of 100, got %d and %d",
	      most, titles);
	run_free(&r);
	r = run_demo("COLUMNS=90", NULL, 0);
	most = widest(r.out, &titles);
	CHECK(r.status == 0 && most <= 90 && titles == 90,
	      "COLUMNS=90: expected lines of at most 90 and titles of 90, got %d and %d",
	      most, titles);
	run_free(&r);
	/* Too narrow for the command line: it gives way, not the name. */
	r = run_demo(NULL, (char *[]){ "-w", "70" }, 2);
	CHECK(r.status == 0 && strncmp(r.out, "qsptop " QSPTOP_VERSION " - pid ",
				       strlen("qsptop " QSPTOP_VERSION " - pid ")) == 0,
	      "-w 70: the title keeps \"qsptop %s - pid\", got \"%.70s\"",
	      QSPTOP_VERSION, r.out);
	run_free(&r);
}

/* A bad value: exit 2 and a one-line error that says what is allowed. */
static void check_refused(char **args, const char *want)
{
	char *argv[] = { qsptop, args[0], args[1], "--", "true", NULL };
	struct run r = run_capture(argv, RUN_TIMEOUT_MS, 0);
	char *nl = strchr(r.err, '\n');

	CHECK(r.status == 2 && strstr(r.err, want) && nl &&
	      strncmp(nl + 1, "Try ", 4) == 0,
	      "%s %s: expected exit 2 and '%s', got %d: %s", args[0], args[1],
	      want, r.status, r.err);
	run_free(&r);
}

static void test_bad_values(void)
{
	check_refused((char *[]){ "--type", "mutex,bogus" },
		      "--type: unknown lock type 'bogus' (mutex, rwlock-read");
	check_refused((char *[]){ "--type", "" }, "--type: unknown lock type ''");
	check_refused((char *[]){ "-w", "39" }, "-w: expected a width between 40 and 1000");
	check_refused((char *[]){ "-w", "wide" }, "-w: expected a width between 40 and 1000");
}

int main(void)
{
	find_paths("/tmp/qsptop-batch-XXXXXX", "wl_demo");
	test_locks_first();
	test_type_filter();
	test_width();
	test_bad_values();
	remove_tmp();
	return check_summary();
}
