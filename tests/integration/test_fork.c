/*
 * Children of pre-fork servers, through the real programs: a child forked
 * after qsptop detached from its parent, one forked while the parent is
 * watched, and one of a program qsptop launched can each be watched with
 * -p, and show only their own counts, exactly; a child that ends leaves
 * no socket.
 */
#include <cJSON.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/sockpath.h"
#include "../unit/check.h"
#include "harness.h"

#define RUN_TIMEOUT_MS 60000
#define LINE_TIMEOUT_MS 5000

static char pids[PATH_MAX + 32];

/* The PID on the n-th line of the pids file starting with what, or -1. */
static pid_t pid_line(const char *what, int n)
{
	return note_pid_wait(pids, what, n, LINE_TIMEOUT_MS);
}

/* qsptop -p pid for two updates; its snapshot, or NULL. */
static cJSON *watch(const char *label, pid_t pid)
{
	char *json = tmp_path("fork.json"), pidstr[16];
	struct run r;

	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	unlink(json);
	r = run_capture((char *[]){ qsptop, "-b", "-n", "2", "-d", "0.2", "-j",
				    json, "-p", pidstr, NULL },
			RUN_TIMEOUT_MS, 0);
	CHECK(r.status == 0, "%s: qsptop -p %d exits 0, got %d: %s", label,
	      (int)pid, r.status, r.err);
	run_free(&r);
	return load_json(json);
}

/* Watched, exactly the 10,000 calls the process makes when asked. */
static void check_exact(const char *label, pid_t pid)
{
	int status;
	cJSON *snap = watch_exact(pid, pids, &status);

	CHECK(status == 0, "%s: qsptop -p, stopped by SIGINT, exits 0 (%d)",
	      label, status);
	CHECK(snap && acquisitions_in(snap, "exact_work") == 10000,
	      "%s: the 10000 calls made while watched, exactly: %.0f", label,
	      snap ? acquisitions_in(snap, "exact_work") : -1);
	cJSON_Delete(snap);
}

/* A child's snapshot counts its own locking and none of its parent's. */
static void check_child(const char *label, pid_t child)
{
	cJSON *snap = child > 0 ? watch(label, child) : NULL;

	CHECK(child > 0, "%s: the parent forked a child", label);
	CHECK(snap != NULL, "%s: a snapshot of the child", label);
	if (snap == NULL)
		return;
	CHECK(acquisitions_in(snap, "child_work") > 0,
	      "%s: the child's own locks are counted (%.0f)", label,
	      acquisitions_in(snap, "child_work"));
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(snap, "rows")) > 0 &&
	      acquisitions_in(snap, "parent_work") == 0,
	      "%s: none of the parent's counts (%.0f at parent_work)", label,
	      acquisitions_in(snap, "parent_work"));
	cJSON_Delete(snap);
	check_exact(label, child);
}

/* Ask parent for a child; its PID (the n-th child), or -1. */
static pid_t fork_child(pid_t parent, int n)
{
	kill(parent, SIGUSR1);
	return pid_line("child", n);
}

/* End a child by SIGTERM; it exits, and its socket goes with it. */
static void end_child(const char *label, pid_t child)
{
	char sock[PATH_MAX];
	long deadline = monotonic_ms() + LINE_TIMEOUT_MS;

	if (child <= 0 || sockpath_target(sock, sizeof(sock), geteuid(), child) < 0)
		return;
	kill(child, SIGTERM);
	while ((kill(child, 0) == 0 || access(sock, F_OK) == 0) &&
	       monotonic_ms() < deadline)
		usleep(10000);
	CHECK(kill(child, 0) < 0, "%s: the child ended", label);
	CHECK(access(sock, F_OK) < 0, "%s: the child left no socket (%s)",
	      label, sock);
}

/* A parent watched, left, then asked to fork; another child while watched. */
static void test_injected_parent(void)
{
	char wl[PATH_MAX + 32], pidstr[16];
	pid_t parent, watcher, child;
	cJSON *snap;

	snprintf(pids, sizeof(pids), "%s/pids.injected", tmp);
	snprintf(wl, sizeof(wl), "%s/tests/wl_prefork", build);
	parent = start((char *[]){ wl, pids, NULL }, NULL, NULL);
	CHECK(pid_line("parent", 0) == parent, "the parent started");
	snap = watch("parent", parent);
	CHECK(snap && acquisitions_in(snap, "parent_work") > 0,
	      "the parent's locks are counted");
	cJSON_Delete(snap);
	check_exact("the parent", parent);

	child = fork_child(parent, 0);
	check_child("forked after a detach", child);
	end_child("forked after a detach", child);

	snprintf(pidstr, sizeof(pidstr), "%d", (int)parent);
	watcher = start((char *[]){ qsptop, "-b", "-d", "0.2", "-p", pidstr,
				    NULL }, tmp_path("watcher.out"),
			tmp_path("watcher.err"));
	/* Watched once the first table is out; else this is not the case. */
	CHECK(file_has_text(tmp_path("watcher.out"), "CALL SITE", 30000),
	      "qsptop -p watches the parent: a table within 30 s");
	child = fork_child(parent, 1);
	check_child("forked while watched", child);
	end_child("forked while watched", child);
	kill(watcher, SIGTERM);
	CHECK(wait_status(watcher, 10000) == 0, "the parent's watcher ends well");

	kill(parent, SIGTERM);
	CHECK(wait_status(parent, 10000) == 0, "the parent ends well");
}

/* A child of a program that qsptop launched (the collector preloaded). */
static void test_launched_parent(void)
{
	char wl[PATH_MAX + 32];
	pid_t launcher, parent, child;

	snprintf(pids, sizeof(pids), "%s/pids.launched", tmp);
	snprintf(wl, sizeof(wl), "%s/tests/wl_prefork", build);
	launcher = start((char *[]){ qsptop, "-b", "-d", "0.2", "--", wl, pids,
				     NULL }, "/dev/null", tmp_path("launcher.err"));
	parent = pid_line("parent", 0);
	CHECK(parent > 0, "the launched parent started");
	if (parent > 0) {
		child = fork_child(parent, 0);
		check_child("forked by a launched program", child);
		end_child("forked by a launched program", child);
		kill(parent, SIGTERM);
	}
	CHECK(wait_status(launcher, 10000) == 0,
	      "the launching qsptop ends with its program");
}

int main(void)
{
	find_paths("/tmp/qsptop-fork-XXXXXX", "wl_prefork");
	test_injected_parent();
	test_launched_parent();
	remove_tmp();
	return check_summary();
}
