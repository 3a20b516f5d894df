/*
 * Roles, through the real program on wl_roles: a GIL-like token passed
 * with a 5 ms timed condvar wait is a lock (the heuristic), at the top of
 * the table, in the lock-wait total and kept by --type locks; a thread
 * pool's condvar wait stays idle (its type); workers parked on a mutex a
 * controller holds on purpose are idle (the heuristic). --idle and
 * --lock flip them; the config file keeps choices per program and a
 * malformed one is reported in one line and left as it was; the live
 * screen's R flips a row and the choice outlives the run. Roles never
 * change counts: the two totals add up to the rows' waits.
 */
#include <cJSON.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../unit/check.h"
#include "harness.h"

enum { RUN_TIMEOUT_MS = 120000 };

/* qsptop -b over wl_roles for 3 s, with extra options; its snapshot. */
static cJSON *run_roles(const char *const *extra, struct run *out)
{
	char *json = tmp_path("roles.json");
	struct args a = { 0 };
	struct run r;
	cJSON *snap;

	args_add(&a, qsptop, "-b", "-d", "0.5", "-n", "6", "-w", "200", "-j",
		 json, NULL);
	for (size_t i = 0; extra && extra[i]; i++)
		args_add(&a, (char *)extra[i], NULL);
	args_add(&a, "--", workload, "30", NULL);
	unlink(json);
	r = run_capture(a.v, RUN_TIMEOUT_MS, 0);
	CHECK(r.status == 0, "qsptop exits 0, got %d: %s", r.status, r.err);
	snap = load_json(json);
	CHECK(snap != NULL, "a JSON snapshot");
	if (out)
		*out = r;
	else
		run_free(&r);
	return snap;
}

/* A string field, "" when missing (an older qsptop has no roles). */
static const char *text(const cJSON *o, const char *name)
{
	const char *s = str_field(o, name);

	return s ? s : "";
}

/* The row at fn's call site of a type (its symbol), or NULL. */
static const cJSON *row_of(const cJSON *snap, const char *fn, const char *type)
{
	const cJSON *row;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const char *sym = str_field(cJSON_GetObjectItem(row, "site"),
					    "symbol");

		if (sym && strcmp(sym, fn) == 0 &&
		    strcmp(text(row, "type"), type) == 0)
			return row;
	}
	return NULL;
}

/* Check a row's role and what decided it. */
static void check_role(const cJSON *snap, const char *fn, const char *type,
		       const char *role, const char *from)
{
	const cJSON *row = row_of(snap, fn, type);

	CHECK(row != NULL, "a %s row at %s", type, fn);
	if (row == NULL)
		return;
	CHECK(strcmp(text(row, "role"), role) == 0 &&
	      strcmp(text(row, "role_from"), from) == 0,
	      "%s's %s row: expected role %s from %s, got '%s' from '%s'", fn,
	      type, role, from, text(row, "role"), text(row, "role_from"));
}

/*
 * The header's totals split the rows' waits by role, adding up to them
 * all: roles move waits, never count them.
 */
static void check_totals(const cJSON *snap)
{
	double lock = 0, idle = 0;
	const cJSON *row;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		if (strcmp(text(row, "role"), "idle") == 0)
			idle += num_field(row, "wait_ns");
		else
			lock += num_field(row, "wait_ns");
	}
	CHECK(lock == num_field(snap, "lock_wait_ns") &&
	      idle == num_field(snap, "cond_wait_ns") &&
	      idle == num_field(snap, "idle_wait_ns"),
	      "totals by role: expected lock %.0f idle %.0f, got lock %.0f "
	      "cond %.0f idle %.0f", lock, idle,
	      num_field(snap, "lock_wait_ns"), num_field(snap, "cond_wait_ns"),
	      num_field(snap, "idle_wait_ns"));
}

/* By default: the token is a lock on top, the pool and the parking idle. */
static void test_default_roles(void)
{
	cJSON *snap = run_roles(NULL, NULL);
	const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(snap, "rows"), 0);
	const cJSON *token = row_of(snap, "token_take", "condvar");

	check_role(snap, "token_take", "condvar", "lock", "heuristic");
	check_role(snap, "pool_next_job", "condvar", "idle", "type");
	check_role(snap, "park_wait", "mutex", "idle", "heuristic");
	check_role(snap, "token_drop", "mutex", "lock", "type");
	CHECK(first == token, "the token's wait is the first row, got %s",
	      text(cJSON_GetObjectItem(first, "site"), "symbol"));
	CHECK(token && num_field(snap, "lock_wait_ns") >= num_field(token, "wait_ns"),
	      "the token's wait is in the lock-wait total");
	check_totals(snap);
	cJSON_Delete(snap);
}

/* --type locks keeps the token's condvar row, drops the idle rows. */
static void test_type_locks(void)
{
	const char *extra[] = { "--type", "locks", "-N", "1", NULL };
	struct run r;
	cJSON *snap = run_roles(extra, &r);
	const char *table = strstr(r.out, "CALL SITE");
	const char *line = table ? strchr(table, '\n') : NULL;

	CHECK(row_of(snap, "token_take", "condvar") != NULL,
	      "--type locks keeps the token's condvar row");
	CHECK(row_of(snap, "pool_next_job", "condvar") == NULL &&
	      row_of(snap, "park_wait", "mutex") == NULL,
	      "--type locks drops the pool's and the parking's rows");
	CHECK(line && strncmp(line + 1, "condvar", 7) == 0 &&
	      strstr(line, "token_take"),
	      "-N 1: the one row is the token's condvar wait; got:\n%s", r.out);
	run_free(&r);
	cJSON_Delete(snap);
}

/* --idle and --lock flip the heuristic's verdicts; totals still add up. */
static void test_user_globs(void)
{
	const char *extra[] = { "--idle", "token_*", "--lock", "park_wait", NULL };
	cJSON *snap = run_roles(extra, NULL);

	check_role(snap, "token_take", "condvar", "idle", "user");
	check_role(snap, "token_take", "mutex", "idle", "user");
	check_role(snap, "park_wait", "mutex", "lock", "user");
	check_role(snap, "pool_next_job", "condvar", "idle", "type");
	check_totals(snap);
	cJSON_Delete(snap);
}

/*
 * In a stripped program a glob matches a site without a symbol by its
 * nearest named caller, which its stacks name only once it has waited:
 * here the hot lock is first taken uncontended, a second before it is
 * fought over.
 */
static void test_named_caller_glob(void)
{
	char *json = tmp_path("stripped.json"), path[PATH_MAX + 32];
	struct args a = { 0 };
	const cJSON *row, *hot = NULL;
	struct run r;
	cJSON *snap;

	snprintf(path, sizeof(path), "%s/tests/wl_names_stripped", build);
	args_add(&a, qsptop, "-b", "-d", "0.3", "-n", "7", "--idle",
		 "exported_fn", "-j", json, "--", path, "0", "1000", NULL);
	unlink(json);
	r = run_capture(a.v, RUN_TIMEOUT_MS, 0);
	CHECK(r.status == 0, "wl_names_stripped: qsptop exits 0, got %d: %s",
	      r.status, r.err);
	snap = load_json(json);
	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const cJSON *caller = cJSON_GetObjectItem(
			cJSON_GetObjectItem(row, "site"), "named_caller");

		if (strcmp(text(caller, "symbol"), "exported_fn") == 0)
			hot = row;
	}
	CHECK(hot != NULL, "a row named by its caller exported_fn");
	CHECK(hot && strcmp(text(hot, "role"), "idle") == 0 &&
	      strcmp(text(hot, "role_from"), "user") == 0,
	      "--idle exported_fn: expected the hot row idle from user, got "
	      "'%s' from '%s'", text(hot, "role"), text(hot, "role_from"));
	run_free(&r);
	cJSON_Delete(snap);
}

/* Write text to the config file. */
static void write_config(const char *text)
{
	char dir[PATH_MAX + 16];
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/cfg/qsptop", tmp);
	mkdir(tmp_path("cfg"), 0700);
	mkdir(dir, 0700);
	f = fopen(tmp_path("cfg/qsptop/roles"), "w");
	fputs(text, f);
	fclose(f);
}

/* The config file's choice for this program applies; another's does not. */
static void test_config_file(void)
{
	cJSON *snap;

	write_config("# choices\nother_prog lock pool_next_job\n"
		     "wl_roles lock park_wait\n");
	snap = run_roles(NULL, NULL);
	check_role(snap, "park_wait", "mutex", "lock", "user");
	check_role(snap, "pool_next_job", "condvar", "idle", "type");
	cJSON_Delete(snap);
}

/* A malformed file: one line on stderr, ignored, left as it was. */
static void test_config_malformed(void)
{
	const char *text = "wl_roles lock park_wait\nwl_roles maybe x\n";
	struct run r;
	cJSON *snap;
	char *after, *line;
	int lines = 0;

	write_config(text);
	snap = run_roles(NULL, &r);
	for (line = strstr(r.err, "roles:2:"); line; line = strstr(line + 1, "roles:2:"))
		lines++;
	CHECK(lines == 1, "a malformed config file: one line naming roles:2, "
	      "got:\n%s", r.err);
	check_role(snap, "park_wait", "mutex", "idle", "heuristic");
	after = slurp_file(tmp_path("cfg/qsptop/roles"), "");
	CHECK_STR(after, text);
	free(after);
	run_free(&r);
	cJSON_Delete(snap);
}

/* R on the live screen flips the selected row, and the file keeps it. */
static void test_live_key(void)
{
	char sock[64], cmd[PATH_MAX * 3], *saved;
	cJSON *snap;

	unlink(tmp_path("cfg/qsptop/roles"));
	snprintf(sock, sizeof(sock), "qsptop-roles-%d", (int)getpid());
	snprintf(cmd, sizeof(cmd), "%s -d 0.3 -- %s 30", qsptop, workload);
	if (tmux_quietly(sock, "-V", NULL) != 0) {
		SKIP("no tmux");
		return;
	}
	tmux_quietly(sock, "new-session", "-d", "-s", "t", "-x", "160", "-y",
		 "30", cmd, NULL);
	CHECK(tmux_until(sock, "park_wait", true), "the live screen shows park_wait");
	tmux_quietly(sock, "send-keys", "-t", "t", "/", NULL);
	tmux_quietly(sock, "send-keys", "-t", "t", "-l", "park_wait", NULL);
	tmux_quietly(sock, "send-keys", "-t", "t", "Enter", NULL);
	/* The details say the role; R flips what they say. */
	tmux_quietly(sock, "send-keys", "-t", "t", "Enter", NULL);
	CHECK(tmux_until(sock, "role idle (from heuristic", true),
	      "park_wait's details: expected \"role idle (from heuristic\"");
	tmux_quietly(sock, "send-keys", "-t", "t", "R", NULL);
	CHECK(tmux_until(sock, "park_wait: lock from now on (saved)", true),
	      "R on park_wait's row: expected \"park_wait: lock from now on "
	      "(saved)\" on the status line");
	tmux_quietly(sock, "send-keys", "-t", "t", "q", NULL);
	tmux_quietly(sock, "kill-server", NULL);
	saved = slurp_file(tmp_path("cfg/qsptop/roles"), "");
	CHECK_STR(saved, "wl_roles lock park_wait\n");
	free(saved);
	snap = run_roles(NULL, NULL);
	check_role(snap, "park_wait", "mutex", "lock", "user");
	cJSON_Delete(snap);
}

int main(void)
{
	find_paths("/tmp/qsptop-roles-XXXXXX", "wl_roles");
	signal(SIGPIPE, SIG_IGN);
	setenv("XDG_CONFIG_HOME", tmp_path("cfg"), 1);
	test_default_roles();
	test_type_locks();
	test_user_globs();
	test_named_caller_glob();
	test_config_file();
	test_config_malformed();
	test_live_key();
	remove_tmp();
	return check_summary();
}
