/*
 * The batch table and the JSON snapshot of the real qsptop on the demo,
 * whose condvar rows (workers waiting for work) wait far longer than its
 * mutex rows: lock rows come first; --type keeps only the types named;
 * -w and COLUMNS set the width of every line; bad values are refused;
 * `--json -` and `--folded -` leave stdout to the one format.
 */
#include <ctype.h>
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

/* Run qsptop -b -n 1 with args then -- and cmd; stdout and stderr apart. */
static struct run run_cmd(char **args, size_t n, char **cmd)
{
	struct args a = { .n = 0 };

	args_add(&a, qsptop, "-b", "-n", "1", NULL);
	for (size_t i = 0; i < n; i++)
		args_add(&a, args[i], NULL);
	args_add(&a, "--", NULL);
	args_add_all(&a, cmd);
	return run_capture(a.v, RUN_TIMEOUT_MS, 0);
}

/* Whether text is one JSON document and nothing else. */
static bool only_json(const char *text)
{
	const char *end = NULL;
	cJSON *j = cJSON_ParseWithOpts(text, &end, 0);
	bool ok = j != NULL && cJSON_IsObject(j);

	while (ok && end && isspace((unsigned char)*end))
		end++;
	ok = ok && end && *end == '\0';
	cJSON_Delete(j);
	return ok;
}

/* --json -: stdout is the snapshot alone, the table goes to stderr. */
static void test_json_stdout(void)
{
	struct run r = run_demo(NULL, (char *[]){ "--json", "-" }, 2);

	CHECK(r.status == 0 && only_json(r.out),
	      "--json -: expected exit 0 and stdout one JSON document, got %d: %.300s",
	      r.status, r.out);
	CHECK(strstr(r.err, "CALL SITE") != NULL,
	      "--json -: expected the batch table on stderr, got: %.300s", r.err);
	run_free(&r);
	/* What the launched command prints does not go to stdout either. */
	r = run_cmd((char *[]){ "--json", "-" }, 2,
		    (char *[]){ "echo", "noise-from-the-command", NULL });
	CHECK(r.status == 0 && only_json(r.out) &&
	      strstr(r.err, "noise-from-the-command") != NULL,
	      "--json - -- echo: expected the snapshot alone on stdout and the "
	      "command's output on stderr, got %d: stdout %.300s stderr %.300s",
	      r.status, r.out, r.err);
	run_free(&r);
}

/* A folded line: frames joined by ';' (two at least), a space, a count. */
static bool folded_line(const char *line, size_t len)
{
	size_t space = len, frames = 1;

	while (space > 0 && line[space - 1] != ' ')
		space--;
	if (space < 2 || space == len)
		return false;
	for (size_t i = space; i < len; i++)
		if (!isdigit((unsigned char)line[i]))
			return false;
	for (size_t i = 0; i + 1 < space; i++) {
		if (line[i] == ' ' ||
		    (line[i] == ';' && (i == 0 || line[i + 1] == ';' || line[i + 1] == ' ')))
			return false;
		frames += line[i] == ';';
	}
	return frames >= 2;
}

/* --folded -: every line of stdout is a folded stack, and there are some. */
static void test_folded_stdout(void)
{
	struct run r = run_demo(NULL, (char *[]){ "--folded", "-" }, 2);
	int lines = 0, bad = 0;
	const char *first_bad = "";

	for (const char *p = r.out; *p;) {
		size_t len = strcspn(p, "\n");

		if (!folded_line(p, len) && bad++ == 0)
			first_bad = p;
		lines++;
		p += len + (p[len] == '\n');
	}
	CHECK(r.status == 0 && lines > 0 && bad == 0,
	      "--folded -: expected exit 0 and only folded lines on stdout, got %d, "
	      "%d of %d lines bad, the first: %.200s", r.status, bad, lines, first_bad);
	CHECK(strstr(r.err, "CALL SITE") != NULL,
	      "--folded -: expected the batch table on stderr, got: %.300s", r.err);
	run_free(&r);
}

/* The last of text's lines that start with prefix, or NULL. */
static const char *last_line_with(const char *text, const char *prefix)
{
	const char *last = NULL;

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, prefix, strlen(prefix)) == 0)
			last = p;
	return last;
}

/* The table printed as the target exits says so: exited, no thread live. */
static void test_last_table_exited(void)
{
	char *argv[] = { qsptop, "-b", "-d", "0.2", "--", workload, "1", NULL };
	struct run r = run_capture(argv, RUN_TIMEOUT_MS, 0);
	const char *title = last_line_with(r.out, "qsptop ");
	const char *totals = last_line_with(r.out, "lock wait ");
	int title_len = title ? (int)strcspn(title, "\n") : 0;
	int totals_len = totals ? (int)strcspn(totals, "\n") : 0;

	CHECK(r.status == 0 && title && strstr(title, " - exited (launched) - ") &&
	      strstr(title, " - exited (launched) - ") < title + title_len,
	      "the last table's title: expected \"exited (launched)\", got %d: %.*s",
	      r.status, title_len, title ? title : "(none)");
	CHECK(totals && strstr(totals, " seen, 0 live") &&
	      strstr(totals, " seen, 0 live") < totals + totals_len,
	      "the last table's totals: expected \"threads N seen, 0 live\", got %.*s",
	      totals_len, totals ? totals : "(none)");
	run_free(&r);
}

/*
 * -o site sorts A to Z, under an up arrow as -o -site; -o +site Z to A
 * under a down arrow: the arrow tells the order shown.
 */
static void test_site_order_arrow(void)
{
	static const struct {
		const char *key, *arrow, *ascii;	/* ascii: without UTF-8 */
		bool a_to_z;
	} cases[] = {
		{ "site", "sort site \u25b2", "sort site ^", true },
		{ "-site", "sort site \u25b2", "sort site ^", true },
		{ "+site", "sort site \u25bc", "sort site v", false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *json = tmp_path("site.json");
		/* Wide: at 132 columns a header item may give way (unseen waits). */
		struct run r = run_demo(NULL, (char *[]){ "-o", (char *)cases[i].key,
							  "--mix-idle", "-w", "300",
							  "-j", json }, 7);
		cJSON *snap = load_json(json), *row;
		const char *prev = NULL;
		bool ordered = true;
		int n = 0;

		cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
			const char *sym = str_field(cJSON_GetObjectItem(row, "site"), "symbol");

			if (sym && prev && strcmp(prev, sym) != 0)
				ordered &= (strcmp(prev, sym) < 0) == cases[i].a_to_z;
			prev = sym ? sym : prev;
			n++;
		}
		CHECK(r.status == 0 && n > 1 && ordered,
		      "-o %s: expected %d rows in %s order, got exit %d", cases[i].key,
		      n, cases[i].a_to_z ? "A to Z" : "Z to A", r.status);
		CHECK(strstr(r.out, cases[i].arrow) || strstr(r.out, cases[i].ascii),
		      "-o %s: expected \"%s\" (or \"%s\") in the header: %.300s",
		      cases[i].key, cases[i].arrow, cases[i].ascii, r.out);
		cJSON_Delete(snap);
		run_free(&r);
	}
}

/* Two formats cannot share stdout: a usage error before anything starts. */
static void test_both_stdout_refused(void)
{
	struct run r = run_cmd((char *[]){ "--json", "-", "--folded", "-" }, 4,
			       (char *[]){ "true", NULL });
	const char *want = "only one of --json, --folded and --pprof";

	CHECK(r.status == 2 && strstr(r.err, want) && r.out[0] == '\0',
	      "--json - --folded -: expected exit 2 and \"%s\", got %d: %s",
	      want, r.status, r.err);
	run_free(&r);
	r = run_cmd((char *[]){ "--pprof", "-", "--folded", "-" }, 4,
		    (char *[]){ "true", NULL });
	CHECK(r.status == 2 && strstr(r.err, want) && r.out[0] == '\0',
	      "--pprof - --folded -: expected exit 2 and \"%s\", got %d: %s",
	      want, r.status, r.err);
	run_free(&r);
}

int main(void)
{
	find_paths("/tmp/qsptop-batch-XXXXXX", "wl_demo");
	test_locks_first();
	test_type_filter();
	test_width();
	test_bad_values();
	test_json_stdout();
	test_folded_stdout();
	test_both_stdout_refused();
	test_last_table_exited();
	test_site_order_arrow();
	remove_tmp();
	return check_summary();
}
