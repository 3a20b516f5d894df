/*
 * qsptop -p on a process in a container, run from the host as root: the
 * target runs under unshare in mount, PID, network and IPC namespaces of
 * its own (and then a user namespace too), with a tmpfs over the build
 * directory, so that it cannot see the collector library, and one over
 * /tmp, so that its sockets are not ours.
 */
#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/sockpath.h"
#include "../unit/check.h"
#include "harness.h"

#define READY_MS 5000
#define RUN_MS 30000

/* A containerised workload: unshare's PID, and its program's, ours. */
struct box {
	pid_t unshare, pid;
	const char *name;	/* the program's name in the box's /tmp */
	bool user;		/* in a user namespace, as nobody */
};

/* The first child of pid, within ms; -1 when none came. */
static pid_t first_child(pid_t pid, long ms)
{
	char path[64];
	long child = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid,
		 (int)pid);
	for (long end = monotonic_ms() + ms; child <= 0 && monotonic_ms() < end;
	     usleep(20000)) {
		f = fopen(path, "r");
		if (f && fscanf(f, "%ld", &child) != 1)
			child = -1;
		if (f)
			fclose(f);
	}
	return (pid_t)child;
}

/* The number of threads of pid; 0 when it is gone. */
static int threads_of(pid_t pid)
{
	char path[64];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && (e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* pid runs the program /tmp/name of its own root. */
static bool runs(pid_t pid, const char *name)
{
	char path[64], exe[PATH_MAX], want[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	snprintf(want, sizeof(want), "/tmp/%s", name);
	return strcmp(exe, want) == 0;
}

/*
 * Start tests/wl_NAME ARGS in the box, copied to its /tmp, as its PID 1,
 * and wait until it runs with threads threads; false (all of it killed)
 * when it does not.
 */
static bool box_start(struct box *b, const char *args, int threads)
{
	char script[3 * PATH_MAX];
	char *argv[24];
	int n = 0;

	snprintf(script, sizeof(script), "mount -t tmpfs none /tmp && "
		 "cp %s/tests/wl_%s /tmp/%s && mount -t tmpfs none %s && "
		 "exec /tmp/%s %s", build, b->name, b->name, build, b->name,
		 args);
	if (b->user) {
		argv[n++] = "setpriv";
		argv[n++] = "--reuid=65534";
		argv[n++] = "--regid=65534";
		argv[n++] = "--clear-groups";
	}
	argv[n++] = "unshare";
	if (b->user) {
		argv[n++] = "--user";
		argv[n++] = "--map-root-user";
	}
	argv[n++] = "--mount";
	argv[n++] = "--pid";
	argv[n++] = "--net";
	argv[n++] = "--ipc";
	argv[n++] = "--fork";
	argv[n++] = "--mount-proc";
	argv[n++] = "--propagation";
	argv[n++] = "private";
	argv[n++] = "sh";
	argv[n++] = "-c";
	argv[n++] = script;
	argv[n] = NULL;
	b->unshare = start(argv, tmp_path("box.out"), tmp_path("box.out"));
	b->pid = first_child(b->unshare, READY_MS);
	for (long end = monotonic_ms() + READY_MS;
	     b->pid > 0 && monotonic_ms() < end &&
	     !(runs(b->pid, b->name) && threads_of(b->pid) >= threads);
	     usleep(20000))
		;
	if (b->pid > 0 && runs(b->pid, b->name) && threads_of(b->pid) >= threads)
		return true;
	if (b->pid > 0)
		kill(b->pid, SIGKILL);
	kill(b->unshare, SIGKILL);
	wait_status(b->unshare, 5000);
	return false;
}

/* The namespace's first process ends all of it. */
static void box_stop(struct box *b)
{
	kill(b->pid, SIGKILL);
	CHECK(wait_status(b->unshare, 5000) >= 0, "%s: unshare did not end",
	      b->name);
}

/* Acquisitions of the rows whose call site is in function symbol. */
static double acquisitions_at(const cJSON *snap, const char *symbol)
{
	const cJSON *rows = cJSON_GetObjectItemCaseSensitive(snap, "rows");
	const cJSON *row;
	double sum = 0;

	cJSON_ArrayForEach(row, rows) {
		const cJSON *site = cJSON_GetObjectItemCaseSensitive(row, "site");
		const char *s = str_field(site, "symbol");

		if (s && strcmp(s, symbol) == 0)
			sum += num_field(row, "acquisitions");
	}
	return sum;
}

/*
 * qsptop -b -n 2 -j on pid: exits 0, in mode ("injected", "connected"),
 * with the host's PID, and sees symbol's lock calls.
 */
static void watch(pid_t pid, const char *what, const char *mode,
		  const char *symbol)
{
	char pidstr[16], *json = tmp_path("box.json"), want[64];
	struct run r;
	cJSON *snap;

	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	snprintf(want, sizeof(want), "pid %d ", (int)pid);
	unlink(json);
	r = run_capture((char *[]){ qsptop, "-b", "-d", "0.2", "-n", "2", "-j",
				    json, "-p", pidstr, NULL }, RUN_MS, 0);
	snap = load_json(json);
	CHECK(r.status == 0, "%s: qsptop -p exited %d: %s", what, r.status,
	      r.err);
	CHECK(strstr(r.out, want) && strstr(r.out, mode),
	      "%s: expected \"%s\" and \"%s\" in the header:\n%s", what, want,
	      mode, r.out);
	CHECK(num_field(snap, "pid") == pid, "%s: JSON pid %g, not %d", what,
	      num_field(snap, "pid"), (int)pid);
	CHECK(acquisitions_at(snap, symbol) > 0, "%s: no acquisitions at %s "
	      "(symbols read through the target's root):\n%s", what, symbol,
	      r.out);
	cJSON_Delete(snap);
	run_free(&r);
}

/* The names in dir, sorted, joined by spaces; "" when unreadable. */
static void names_in(const char *dir, char *out, size_t size)
{
	struct dirent **v;
	int n = scandir(dir, &v, NULL, alphasort);
	size_t used = 0;

	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (v[i]->d_name[0] != '.' && used < size)
			used += (size_t)snprintf(out + used, size - used, "%s%s",
						 used ? " " : "", v[i]->d_name);
		free(v[i]);
	}
	if (n >= 0)
		free(v);
}

/* The inode of pid's PID namespace, as sockets are named after it. */
static unsigned long pidns_of(pid_t pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	return stat(path, &st) == 0 ? (unsigned long)st.st_ino : 0;
}

/*
 * What qsptop leaves in the box: the program, the socket directory of
 * the user it runs as (uid 0 inside in both boxes) holding the socket
 * of the collector, which stays loaded; no copy of the library. And no
 * socket of the box's in ours.
 */
static void check_leftovers(const struct box *b)
{
	char dir[PATH_MAX], got[1024], want[256], ours[64], sock[PATH_MAX];
	struct stat st;

	snprintf(dir, sizeof(dir), "/proc/%d/root/tmp", (int)b->pid);
	names_in(dir, got, sizeof(got));
	snprintf(want, sizeof(want), "%s qsptop-0", b->name);
	CHECK(strcmp(got, want) == 0, "%s: the box's /tmp holds \"%s\", "
	      "expected \"%s\"", b->name, got, want);
	snprintf(dir, sizeof(dir), "/proc/%d/root/tmp/qsptop-0", (int)b->pid);
	names_in(dir, got, sizeof(got));
	snprintf(want, sizeof(want), "1-%lu.sock", pidns_of(b->pid));
	CHECK(strcmp(got, want) == 0, "%s: the box's socket directory holds "
	      "\"%s\", expected \"%s\"", b->name, got, want);
	CHECK(stat(dir, &st) == 0 && st.st_uid == (uid_t)(b->user ? 65534 : 0),
	      "%s: the socket directory belongs to uid %u", b->name,
	      (unsigned)st.st_uid);
	sockpath_dir(ours, sizeof(ours), geteuid());
	snprintf(sock, sizeof(sock), "%s/%s", ours, want);
	CHECK(access(sock, F_OK) < 0 && errno == ENOENT,
	      "%s: %s is in our /tmp", b->name, sock);
}

/*
 * A busy program in a box: qsptop loads a copy of the collector into it,
 * and sees its locks; a second qsptop connects to that collector.
 */
static void test_busy_box(bool user)
{
	struct box b = { .name = "locks", .user = user };
	const char *what = user ? "user namespace" : "mount+PID+net+IPC namespaces";

	if (user && access("/usr/bin/setpriv", X_OK) != 0) {
		SKIP("%s: needs setpriv, to be nobody on the host", what);
		return;
	}
	if (!box_start(&b, "busy /dev/null", 5)) {
		SKIP("%s: unshare could not start a box here", what);
		return;
	}
	watch(b.pid, what, "(injected)", "site_busy");
	watch(b.pid, what, "(connected)", "site_busy");
	CHECK(threads_of(b.pid) == 6, "%s: expected its 5 threads and the "
	      "collector's, got %d", what, threads_of(b.pid));
	check_leftovers(&b);
	box_stop(&b);
}

/* The first "child PID" line of a wl_prefork FILE (PIDs of its box). */
static long first_child_line(const char *path)
{
	char line[64];
	long pid = -1;
	FILE *f = fopen(path, "r");

	while (f && pid < 0 && fgets(line, sizeof(line), f))
		if (sscanf(line, "child %ld", &pid) != 1)
			pid = -1;
	if (f)
		fclose(f);
	return pid;
}

/*
 * A pre-fork server in a box: its child, forked after qsptop loaded the
 * collector's copy (removed since), is woken through the mapping.
 */
static void test_prefork_box(void)
{
	struct box b = { .name = "prefork" };
	char file[64];
	pid_t child;

	if (!box_start(&b, "/tmp/children", 3)) {
		SKIP("pre-fork: unshare could not start a box here");
		return;
	}
	watch(b.pid, "pre-fork parent", "(injected)", "parent_work");
	kill(b.pid, SIGUSR1);
	snprintf(file, sizeof(file), "/proc/%d/root/tmp/children", (int)b.pid);
	for (long end = monotonic_ms() + READY_MS;
	     first_child_line(file) < 0 && monotonic_ms() < end; usleep(20000))
		;
	child = first_child(b.pid, READY_MS);
	CHECK(child > 0 && first_child_line(file) > 0,
	      "pre-fork: no child was forked");
	if (child > 0)
		watch(child, "pre-fork child", "(injected)", "child_work");
	box_stop(&b);
}

int main(void)
{
	char cmd[PATH_MAX + 16];

	find_paths("/tmp/qsptop-container-XXXXXX", "wl_locks");
	if (geteuid() != 0) {
		SKIP("containers: watching a process in other namespaces "
		     "from the host needs root");
	} else {
		test_busy_box(false);
		test_busy_box(true);
		test_prefork_box();
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
	return check_summary();
}
