/*
 * qsptop -p on a process in a container, run from the host as root: the
 * target runs under unshare in mount, PID, network and IPC namespaces of
 * its own (and then in a user namespace too: nobody's, or one we map),
 * with a tmpfs over the build directory, so that it cannot see the
 * collector library, and one over /tmp, so that its sockets are not
 * ours.
 */
#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
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

#define MAPPED_UID 100000	/* root of a mapped box, for us */

/* The user namespace of a box. */
enum userns {
	USERNS_OURS,		/* none of its own: root is root */
	USERNS_NOBODYS,		/* nobody's own, root in it (rootless podman) */
	USERNS_MAPPED,		/* ours, mapping 0-65535 to MAPPED_UID on
				 * (rootful podman --uidmap) */
};

/* A containerised workload: unshare's PID, and its program's, ours. */
struct box {
	pid_t unshare, pid;
	const char *name;	/* the program's name in the box's /tmp */
	enum userns userns;
	const char *what;	/* for messages */
};

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

/* Write text to /proc/pid/file; -1 on failure. */
static int write_proc(pid_t pid, const char *file, const char *text)
{
	char path[64];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	f = fopen(path, "w");
	if (f == NULL)
		return -1;
	rc = fputs(text, f) < 0 ? -1 : 0;
	return fclose(f) < 0 ? -1 : rc;
}

/*
 * In the child: a user namespace of its own, its users mapped by the
 * parent (us, root) once told on ready; then root there, and argv.
 */
static void exec_mapped(char *const argv[], int ready, int go)
{
	int out = open(tmp_path("box.out"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	char c;

	dup2(out, 1);
	dup2(out, 2);
	if (unshare(CLONE_NEWUSER) < 0 || write(ready, "u", 1) != 1 ||
	    read(go, &c, 1) != 1 || setresgid(0, 0, 0) < 0 ||
	    setresuid(0, 0, 0) < 0)
		_exit(126);
	execvp(argv[0], argv);
	_exit(127);
}

/*
 * Start argv in a user namespace of ours (so its own user, MAPPED_UID,
 * has no capability in it, as in a container of rootful podman
 * --uidmap), as its root.
 */
static pid_t start_mapped(char *const argv[])
{
	char map[64], c;
	int ready[2], go[2];
	pid_t pid;

	if (pipe(ready) < 0 || pipe(go) < 0)
		return -1;
	pid = fork();
	if (pid == 0)
		exec_mapped(argv, ready[1], go[0]);
	close(ready[1]);
	close(go[0]);
	snprintf(map, sizeof(map), "0 %d 65536\n", MAPPED_UID);
	if (pid > 0 && read(ready[0], &c, 1) == 1 &&
	    write_proc(pid, "uid_map", map) == 0 &&
	    write_proc(pid, "gid_map", map) == 0 && write(go[1], "g", 1) != 1)
		kill(pid, SIGKILL);
	close(ready[0]);
	close(go[1]);
	return pid;
}

/*
 * Start unshare (mount, PID, network and IPC namespaces) with sh -c
 * script as the box's PID 1: in our user namespace, as nobody in one of
 * its own, or in one mapped by us.
 */
static pid_t start_box(const struct box *b, char *script)
{
	struct args a = { 0 };

	if (b->userns == USERNS_NOBODYS)
		args_add(&a, "setpriv", "--reuid=65534", "--regid=65534",
			 "--clear-groups", NULL);
	args_add(&a, "unshare", NULL);
	if (b->userns == USERNS_NOBODYS)
		args_add(&a, "--user", "--map-root-user", NULL);
	args_add(&a, "--mount", "--pid", "--net", "--ipc", "--fork",
		 "--mount-proc", "--propagation", "private", "sh", "-c", script,
		 NULL);
	if (b->userns == USERNS_MAPPED)
		return start_mapped(a.v);
	return start(a.v, tmp_path("box.out"), tmp_path("box.out"));
}

/*
 * Start tests/wl_NAME ARGS in the box, as its PID 1, and wait until it
 * runs with threads threads; false (all of it killed) when it does not.
 * The program is bound onto /tmp/NAME of the box, a file of our root: in
 * a mapped box, as in a container whose image belongs to the host's root.
 */
static bool box_start(struct box *b, const char *args, int threads)
{
	char script[6 * PATH_MAX];

	/*
	 * The program is opened before /tmp is hidden (the build directory
	 * may be under it) and bound from that descriptor; the build
	 * directory, where still visible, is hidden too.
	 */
	snprintf(script, sizeof(script), "exec 3< %s/tests/wl_%s && "
		 "mount -t tmpfs none /tmp && touch /tmp/%s && "
		 "mount --no-canonicalize --bind /proc/self/fd/3 /tmp/%s && "
		 "exec 3<&- && { [ ! -d %s ] || mount -t tmpfs none %s; } && "
		 "exec /tmp/%s %s", build, b->name, b->name, b->name, build,
		 build, b->name, args);
	b->unshare = start_box(b, script);
	b->pid = b->unshare > 0 ? first_child(b->unshare, READY_MS) : -1;
	for (long end = monotonic_ms() + READY_MS;
	     b->pid > 0 && monotonic_ms() < end &&
	     !(runs(b->pid, b->name) && threads_of(b->pid) >= threads);
	     usleep(20000))
		;
	if (b->pid > 0 && runs(b->pid, b->name) && threads_of(b->pid) >= threads)
		return true;
	if (b->pid > 0)
		kill(b->pid, SIGKILL);
	if (b->unshare > 0) {
		kill(b->unshare, SIGKILL);
		wait_status(b->unshare, 5000);
	}
	return false;
}

/* The namespace's first process ends all of it. */
static void box_stop(struct box *b)
{
	kill(b->pid, SIGKILL);
	CHECK(wait_status(b->unshare, 5000) >= 0, "%s: unshare did not end",
	      b->what);
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
	CHECK(acquisitions_in(snap, symbol) > 0, "%s: no acquisitions at %s "
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
 * the user it runs as (root inside, in every box; our root, nobody or
 * MAPPED_UID for us) holding the socket of the collector, which stays
 * loaded; no copy of the library. And no socket of the box's in ours.
 */
static void check_leftovers(const struct box *b)
{
	static const uid_t owner[] = { 0, 65534, MAPPED_UID };
	char dir[PATH_MAX], got[1024], want[256], ours[64], sock[PATH_MAX];
	struct stat st = { .st_uid = (uid_t)-1 };

	snprintf(dir, sizeof(dir), "/proc/%d/root/tmp", (int)b->pid);
	names_in(dir, got, sizeof(got));
	snprintf(want, sizeof(want), "%s qsptop-0", b->name);
	CHECK(strcmp(got, want) == 0, "%s: the box's /tmp holds \"%s\", "
	      "expected \"%s\"", b->what, got, want);
	snprintf(dir, sizeof(dir), "/proc/%d/root/tmp/qsptop-0", (int)b->pid);
	names_in(dir, got, sizeof(got));
	snprintf(want, sizeof(want), "1-%lu.sock", pidns_of(b->pid));
	CHECK(strcmp(got, want) == 0, "%s: the box's socket directory holds "
	      "\"%s\", expected \"%s\"", b->what, got, want);
	CHECK(stat(dir, &st) == 0 && st.st_uid == owner[b->userns],
	      "%s: the socket directory belongs to uid %u", b->what,
	      (unsigned)st.st_uid);
	sockpath_dir(ours, sizeof(ours), geteuid());
	snprintf(sock, sizeof(sock), "%s/%s", ours, want);
	CHECK(access(sock, F_OK) < 0 && errno == ENOENT,
	      "%s: %s is in our /tmp", b->what, sock);
}

/*
 * A busy program in a box: qsptop loads a copy of the collector into it,
 * and sees its locks; a second qsptop connects to that collector.
 */
static void test_busy_box(enum userns userns)
{
	static const char *const whats[] = {
		"mount+PID+net+IPC namespaces", "nobody's user namespace",
		"a user namespace mapped by root",
	};
	const char *what = whats[userns];
	struct box b = { .name = "locks", .userns = userns, .what = what };

	if (userns == USERNS_NOBODYS && access("/usr/bin/setpriv", X_OK) != 0) {
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

/*
 * A pre-fork server in a box: its child, forked after qsptop loaded the
 * collector's copy (removed since), is woken through the mapping.
 */
static void test_prefork_box(void)
{
	struct box b = { .name = "prefork", .what = "pre-fork" };
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
	     note_pid(file, "child", 0, NULL) < 0 && monotonic_ms() < end;
	     usleep(20000))
		;
	child = first_child(b.pid, READY_MS);
	CHECK(child > 0 && note_pid(file, "child", 0, NULL) > 0,
	      "pre-fork: no child was forked");
	if (child > 0) {
		int status;
		cJSON *snap;

		watch(child, "pre-fork child", "(injected)", "child_work");
		snap = watch_exact(child, file, &status);
		CHECK(status == 0 && snap &&
		      acquisitions_in(snap, "exact_work") == 10000,
		      "pre-fork child: the 10000 calls made while watched, "
		      "exactly: %.0f (qsptop exit %d)",
		      snap ? acquisitions_in(snap, "exact_work") : -1, status);
		cJSON_Delete(snap);
	}
	box_stop(&b);
}

int main(void)
{
	find_paths("/tmp/qsptop-container-XXXXXX", "wl_locks");
	if (geteuid() != 0) {
		SKIP("containers: watching a process in other namespaces "
		     "from the host needs root");
	} else {
		test_busy_box(USERNS_OURS);
		test_busy_box(USERNS_NOBODYS);
		test_busy_box(USERNS_MAPPED);
		test_prefork_box();
	}
	remove_tmp();
	return check_summary();
}
