/*
 * Stacks through the real programs: the stacks behind a wrapper's row,
 * their folded export, and stacks of stripped programs.
 */
#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../common/proto.h"
#include "../../common/sockpath.h"
#include "../unit/check.h"
#include "launch.h"

/* Launch `wl_locks wrapper` on cmd under qsptop with extra flags. */
static cJSON *launch_wrapper(const char *cmd, const char *flag, const char *arg,
			     const char *folded, struct run *r)
{
	char *json = tmp_path("wrap.json"), *expect = tmp_path("wrap.expect");
	struct args a = { 0 };

	args_add(&a, qsptop, "-b", "-d", "0.2", "-j", json, "--folded", folded,
		 NULL);
	if (flag)
		args_add(&a, flag, arg, NULL);
	args_add(&a, "--", cmd, "wrapper", expect, NULL);
	unlink(json);
	unlink(folded);
	*r = run_argv(a.v);
	return load_json(json);
}

/* The least wait the workload says went through a path, or -1. */
static double expected_path_wait(const char *path)
{
	char word[64], name[64], line[256];
	long count, wait;
	double least = -1;
	FILE *f = fopen(tmp_path("wrap.expect"), "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s %63s %ld %ld", word, name, &count, &wait) == 4 &&
		    strcmp(word, "contended") == 0 && strcmp(name, path) == 0)
			least = (double)wait;
	}
	if (f)
		fclose(f);
	return least;
}

/* A stack's first frame (innermost) whose symbol names fn, or NULL. */
static const cJSON *frame_of(const cJSON *stack, const char *fn)
{
	const cJSON *frame;

	cJSON_ArrayForEach(frame, cJSON_GetObjectItem(stack, "frames"))
		if (symbol_is(str_field(frame, "symbol"), fn))
			return frame;
	return NULL;
}

/* The heaviest stack of a row that goes through function fn, or NULL. */
static const cJSON *stack_through(const cJSON *row, const char *fn)
{
	const cJSON *stack, *best = NULL;

	cJSON_ArrayForEach(stack, cJSON_GetObjectItem(row, "stacks"))
		if (frame_of(stack, fn) && (best == NULL ||
		    num_field(stack, "wait_ns") > num_field(best, "wait_ns")))
			best = stack;
	return best;
}

static double stacked_wait(const cJSON *row)
{
	const cJSON *stack;
	double sum = 0;

	cJSON_ArrayForEach(stack, cJSON_GetObjectItem(row, "stacks"))
		sum += num_field(stack, "wait_ns");
	return sum;
}

/*
 * With --wrapper app_lock the two paths are rows of their own, 3:1, and
 * the wrapper's row is empty: every acquisition counts on its caller.
 */
static void test_wrapper_splits_paths(void)
{
	char *folded = tmp_path("split.folded");
	struct run r;
	cJSON *snap = launch_wrapper(workload, "--wrapper", "app_lock", folded, &r);
	struct sums a = sum_rows(snap, "path_a", "mutex");
	struct sums b = sum_rows(snap, "path_b", "mutex");
	struct sums lock = sum_rows(snap, "app_lock", "mutex");
	double want_a = expected_path_wait("path_a"), want_b = expected_path_wait("path_b");

	CHECK(r.status == 0, "--wrapper app_lock: exit %d: %s", r.status, r.err);
	CHECK(snap != NULL, "--wrapper app_lock: snapshot written");
	CHECK(want_a > 0 && want_b > 0, "the workload wrote its path expectations");
	CHECK(a.rows == 1 && num_field(a.first, "contended") >= 1 && a.wait >= want_a,
	      "path_a row: expected contended >= 1 and wait >= %.0f, got %d rows, "
	      "wait %.0f", want_a, a.rows, a.wait);
	CHECK(b.rows == 1 && b.wait >= want_b, "path_b row: expected wait >= %.0f, "
	      "got %d rows, wait %.0f", want_b, b.rows, b.wait);
	CHECK(a.wait > b.wait && b.wait > 0 && a.wait / b.wait > 2 && a.wait / b.wait < 4.5,
	      "path_a:path_b wait should be about 3:1, got %.0f:%.0f", a.wait, b.wait);
	CHECK(lock.rows == 0, "the app_lock row is gone: its calls counted on "
	      "their callers (%d rows, %.0f acquisitions)", lock.rows, lock.acq);
	CHECK(a.acq == 1001 && b.acq == 501, "every acquisition on its caller: "
	      "path_a 1001, path_b 501, got %.0f and %.0f", a.acq, b.acq);
	if (a.first)
		check_site_line(snap, "path_a", "mutex", "locks.c", "path_a");
	cJSON_Delete(snap);
	run_free(&r);
}

/* A folded line: frames, one space, an integer. Returns the frames' end. */
static char *folded_split(char *line, double *value)
{
	char *space = strrchr(line, ' '), *end;

	if (space == NULL || space == line || strchr(line, ' ') != space ||
	    !isdigit((unsigned char)space[1]))
		return NULL;
	*value = strtod(space + 1, &end);
	if (*end != '\0' || strstr(line, ";;") || line[0] == ';' || space[-1] == ';')
		return NULL;
	*space = '\0';
	return space;
}

/* Whether folded frames belong to the line at fn on lock leaf. */
static int folded_at(const char *frames, const char *fn, const char *leaf)
{
	char tail[256], unwound[256];
	size_t n = strlen(frames);

	snprintf(tail, sizeof(tail), ";%s;%s", fn, leaf);
	snprintf(unwound, sizeof(unwound), "%s;[not_unwound];%s", fn, leaf);
	return (n >= strlen(tail) && strcmp(frames + n - strlen(tail), tail) == 0) ||
	       strcmp(frames, unwound) == 0;
}

/* Every line parses; returns the sum of those at fn on leaf (-1: bad line). */
static double folded_sum(const char *path, const char *fn, const char *leaf,
			 int *lines)
{
	char *text = slurp_file(path, ""), *save = NULL, *line;
	double sum = 0, value;

	*lines = 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		(*lines)++;
		if (folded_split(line, &value) == NULL) {
			fprintf(stderr, "bad folded line: %s\n", line);
			sum = -1;
			break;
		}
		if (folded_at(line, fn, leaf))
			sum += value;
	}
	free(text);
	return sum;
}

/* Without --wrapper: one app_lock row, whose stacks show both paths. */
static void test_wrapper_row_stacks(void)
{
	char *folded = tmp_path("whole.folded");
	char leaf[64];
	struct run r;
	cJSON *snap = launch_wrapper(workload, NULL, NULL, folded, &r);
	struct sums lock = sum_rows(snap, "app_lock", "mutex");
	const cJSON *sa = lock.first ? stack_through(lock.first, "path_a") : NULL;
	const cJSON *sb = lock.first ? stack_through(lock.first, "path_b") : NULL;
	const cJSON *fa = sa ? frame_of(sa, "path_a") : NULL;
	const char *file = fa ? str_field(fa, "file") : NULL;
	int want_line = marker_line("locks.c", "path_a"), lines = 0;
	double sum;

	CHECK(r.status == 0, "wrapper: exit %d: %s", r.status, r.err);
	if (snap)
		check_expectations("wrapper", snap, tmp_path("wrap.expect"));
	CHECK(lock.rows == 1, "wrapper: one app_lock mutex row, got %d", lock.rows);
	CHECK(lock.first && cJSON_GetArraySize(cJSON_GetObjectItem(lock.first, "stacks")) >= 2,
	      "app_lock: at least two stacks");
	CHECK(sa && sb && sa != sb, "app_lock: one stack through path_a, one through path_b");
	CHECK(sa && num_field(sa, "wait_ns") >= expected_path_wait("path_a") &&
	      num_field(sa, "count") >= 1, "path_a's stack: wait >= %.0f, got %.0f",
	      expected_path_wait("path_a"), sa ? num_field(sa, "wait_ns") : -1);
	CHECK(sb && num_field(sb, "wait_ns") >= expected_path_wait("path_b") &&
	      num_field(sb, "wait_ns") < num_field(sa, "wait_ns"),
	      "path_b's stack: wait >= %.0f and below path_a's, got %.0f",
	      expected_path_wait("path_b"), sb ? num_field(sb, "wait_ns") : -1);
	CHECK(fa && num_field(fa, "line") == want_line && file && strstr(file, "locks.c"),
	      "path_a's frame: expected locks.c:%d, got %s:%.0f", want_line,
	      file ? file : "null", fa ? num_field(fa, "line") : -1);
	CHECK(sa && symbol_is(str_field(cJSON_GetArrayItem(cJSON_GetObjectItem(sa, "frames"), 0),
					"symbol"), "app_lock"),
	      "frame #0 of a stack is the call site, in app_lock");
	snprintf(leaf, sizeof(leaf), "mutex@%s",
		 lock.first && str_field(lock.first, "object") ?
		 str_field(lock.first, "object") : "?");
	sum = folded_sum(folded, "app_lock", leaf, &lines);
	CHECK(lines > 0 && sum >= 0, "the folded file parses (%d lines)", lines);
	CHECK(lock.first && sum == stacked_wait(lock.first) && sum > 0,
	      "folded lines of app_lock sum to its stacked wait: expected %.0f, got %.0f",
	      lock.first ? stacked_wait(lock.first) : -1, sum);
	cJSON_Delete(snap);
	run_free(&r);
}

/* Start and end of function fn in binary path (nm), as file addresses. */
static int nm_range(const char *path, const char *fn, double *lo, double *hi)
{
	char cmd[PATH_MAX + 64], line[512], name[256], type[8];
	unsigned long long addr, size;
	FILE *p;
	int found = 0;

	snprintf(cmd, sizeof(cmd), "nm -S '%s'", path);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		if (sscanf(line, "%llx %llx %7s %255s", &addr, &size, type, name) == 4 &&
		    strcmp(name, fn) == 0) {
			*lo = (double)addr;
			*hi = (double)(addr + size);
			found = 1;
		}
	}
	if (p)
		pclose(p);
	return found;
}

/* Whether a stack has a frame at a module offset inside [lo, hi). */
static int frame_in(const cJSON *stack, double lo, double hi)
{
	const cJSON *frame;

	cJSON_ArrayForEach(frame, cJSON_GetObjectItem(stack, "frames")) {
		double off = num_field(frame, "offset");

		if (str_field(frame, "symbol") == NULL && off > lo && off <= hi)
			return 1;
	}
	return 0;
}

/* Frames in the stripped module: module+offset, nothing made up. */
static int stripped_frames_clean(const cJSON *row, const char *module)
{
	const cJSON *stack, *frame;
	int seen = 0;

	cJSON_ArrayForEach(stack, cJSON_GetObjectItem(row, "stacks")) {
		cJSON_ArrayForEach(frame, cJSON_GetObjectItem(stack, "frames")) {
			const char *m = str_field(frame, "module");

			if (m == NULL || strcmp(m, module) != 0)
				continue;
			seen++;
			if (str_field(frame, "symbol") || str_field(frame, "file") ||
			    !cJSON_IsNull(cJSON_GetObjectItem(frame, "line")) ||
			    num_field(frame, "offset") <= 0)
				return 0;
		}
	}
	return seen;
}

/* A stripped workload: stack frames as module+offset at the right code. */
static void test_stripped_stacks(void)
{
	char *stripped = tmp_path("wl_stripped"), cmd[3 * PATH_MAX];
	double a_lo = 0, a_hi = 0, b_lo = 0, b_hi = 0, most = -1;
	const cJSON *row, *rows, *heavy = NULL, *stack, *stacks;
	int a = 0, b = 0;
	struct run r;
	cJSON *snap;

	snprintf(cmd, sizeof(cmd), "objcopy --strip-all '%s' '%s'", workload, stripped);
	CHECK(system(cmd) == 0, "objcopy --strip-all made %s", stripped);
	CHECK(nm_range(workload, "path_a", &a_lo, &a_hi) &&
	      nm_range(workload, "path_b", &b_lo, &b_hi), "nm finds path_a and path_b");
	snap = launch_wrapper(stripped, NULL, NULL, tmp_path("strip.folded"), &r);
	CHECK(r.status == 0 && snap, "stripped: exit %d: %s", r.status, r.err);
	rows = snap ? cJSON_GetObjectItem(snap, "rows") : NULL;
	cJSON_ArrayForEach(row, rows)
		if (num_field(row, "wait_ns") > most) {
			most = num_field(row, "wait_ns");
			heavy = row;
		}
	CHECK(heavy && !str_field(cJSON_GetObjectItem(heavy, "site"), "symbol"),
	      "stripped: the heaviest row's site has no symbol");
	CHECK(heavy && stripped_frames_clean(heavy, stripped) > 0,
	      "stripped: frames in the workload have module and offset, no symbol, "
	      "file or line");
	stacks = heavy ? cJSON_GetObjectItem(heavy, "stacks") : NULL;
	cJSON_ArrayForEach(stack, stacks) {
		a += frame_in(stack, a_lo, a_hi);
		b += frame_in(stack, b_lo, b_hi);
	}
	CHECK(a == 1 && b == 1, "stripped: one stack returns into path_a's code, one "
	      "into path_b's (module offsets), got %d and %d", a, b);
	cJSON_Delete(snap);
	run_free(&r);
}

int main(void)
{
	find_paths("/tmp/qsptop-test-XXXXXX", "wl_locks");
	signal(SIGPIPE, SIG_IGN);
	test_wrapper_splits_paths();
	test_wrapper_row_stacks();
	test_stripped_stacks();
	remove_tmp();
	return check_summary();
}
