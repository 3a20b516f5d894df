/*
 * make install into a temporary DESTDIR gives a qsptop that works from
 * there (it finds its library and themes relative to itself), a man page
 * that renders, and make uninstall takes every file away again.
 */
#include <cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../unit/check.h"
#include "harness.h"

#define MAKE_TIMEOUT_MS 120000
#define RUN_TIMEOUT_MS 60000

static char dest[PATH_MAX + 16], prefix[PATH_MAX + 32];

/* make -s -C root TARGET with our build directory and DESTDIR. */
static struct run make_target(const char *target)
{
	char build_arg[PATH_MAX + 16], dest_arg[PATH_MAX + 32];

	snprintf(build_arg, sizeof(build_arg), "BUILD=%s", build);
	snprintf(dest_arg, sizeof(dest_arg), "DESTDIR=%s", dest);
	return run_capture((char *[]){ "make", "-s", "-C", root, build_arg,
				       dest_arg, "PREFIX=/usr", (char *)target,
				       NULL },
			   MAKE_TIMEOUT_MS, 0);
}

/* The installed qsptop runs a workload, with an installed theme. */
static void test_installed_runs(void)
{
	char exe[PATH_MAX + 64], *json = tmp_path("installed.json");
	struct run r;
	cJSON *snap;

	snprintf(exe, sizeof(exe), "%s/bin/qsptop", prefix);
	r = run_capture((char *[]){ exe, "-b", "-t", "light", "-j", json, "--",
				    workload, "mutex", tmp_path("mutex.expect"),
				    NULL },
			RUN_TIMEOUT_MS, 0);
	CHECK(r.status == 0, "installed qsptop: exit 0, got %d: %s", r.status,
	      r.err);
	run_free(&r);
	snap = load_json(json);
	CHECK(snap != NULL, "installed qsptop: a snapshot");
	CHECK(snap && acquisitions_in(snap, "site_mutex_a") == 200000 &&
	      acquisitions_in(snap, "site_mutex_b") == 100000,
	      "installed qsptop: exact counts (%.0f and %.0f)",
	      snap ? acquisitions_in(snap, "site_mutex_a") : -1,
	      snap ? acquisitions_in(snap, "site_mutex_b") : -1);
	cJSON_Delete(snap);
}

/* The installed man page renders, with its sections. */
static void test_man_page(void)
{
	char page[PATH_MAX + 64];
	struct run r;

	snprintf(page, sizeof(page), "%s/share/man/man1/qsptop.1", prefix);
	CHECK(access(page, R_OK) == 0, "the man page is installed at %s", page);
	r = run_capture((char *[]){ "man", "-l", page, NULL }, RUN_TIMEOUT_MS, 0);
	if (r.status == 126 || r.status == 127) {
		SKIP("man is not installed: the page was not rendered");
	} else {
		CHECK(r.status == 0 && strstr(r.out, "SYNOPSIS") &&
		      strstr(r.out, "EXIT STATUS") && strstr(r.out, "--wrapper"),
		      "man -l qsptop.1 renders its sections: exit %d: %.200s",
		      r.status, r.err);
	}
	run_free(&r);
}

/* Every regular file under dir, counted. */
static int files_under(const char *dir)
{
	char cmd[PATH_MAX + 64];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "find '%s' -type f | wc -l", dir);
	p = popen(cmd, "r");
	if (p && fscanf(p, "%d", &n) != 1)
		n = -1;
	if (p)
		pclose(p);
	return n;
}

int main(void)
{
	struct run r;

	find_paths("/tmp/qsptop-install-XXXXXX", "wl_locks");
	/* Under make -j, make's job pipe is not ours to share. */
	unsetenv("MAKEFLAGS");
	unsetenv("MFLAGS");
	unsetenv("MAKELEVEL");
	snprintf(dest, sizeof(dest), "%s/dest", tmp);
	snprintf(prefix, sizeof(prefix), "%s/usr", dest);
	r = make_target("install");
	CHECK(r.status == 0, "make install DESTDIR=%s: exit %d: %s", dest,
	      r.status, r.err);
	run_free(&r);
	test_installed_runs();
	test_man_page();
	r = make_target("uninstall");
	CHECK(r.status == 0, "make uninstall: exit %d: %s", r.status, r.err);
	run_free(&r);
	CHECK(files_under(dest) == 0, "make uninstall leaves no file (%d left)",
	      files_under(dest));
	remove_tmp();
	return check_summary();
}
