/*
 * qsptop -p on a hostile container, run from the host as root: the target
 * runs under unshare in mount and PID namespaces of its own (a tmpfs over
 * /tmp), and the container then plants, where qsptop looks, a FIFO over
 * its libc, an absolute symbolic link out of its root, or a symbolic link
 * to a host socket in place of the collector's. qsptop must fail at once
 * with one line, open nothing outside the container's root, and connect
 * to nothing but a socket that is really in the container's directory.
 * And a host that closes every descriptor it did not open cannot reach
 * the collector's; a debuglink that names a FIFO does not block qsptop.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../unit/check.h"
#include "harness.h"

#define READY_MS 5000
/* Only catches a hang: a refusal takes well under a second. */
#define RUN_MS 30000

/* A containerised workload: unshare's PID, and its program's, ours. */
struct box {
	pid_t unshare, pid;
};

/* The path of pid's libc.so.6 in its maps, as it names it. */
static bool libc_of(pid_t pid, char *out, size_t size)
{
	char path[64], line[PATH_MAX + 128];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	while (f && !found && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		line[strcspn(line, "\n")] = '\0';
		found = p && strcmp(basename(p), "libc.so.6") == 0 &&
			snprintf(out, size, "%s", p) < (int)size;
	}
	if (f)
		fclose(f);
	return found;
}

/*
 * pid runs /tmp/locks of its root, with libc mapped: the loader maps libc
 * a moment after the exec changed the program.
 */
static bool box_ready(pid_t pid)
{
	char path[64], exe[PATH_MAX], libc[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	return strcmp(exe, "/tmp/locks") == 0 &&
	       libc_of(pid, libc, sizeof(libc));
}

/*
 * Start wl_locks busy as PID 1 of a box (mount and PID namespaces, /tmp a
 * tmpfs of its own); false when unshare cannot make one here.
 */
static bool box_start(struct box *b)
{
	char script[6 * PATH_MAX];
	struct args a = { 0 };

	snprintf(script, sizeof(script), "exec 3< %s/tests/wl_locks && "
		 "mount -t tmpfs none /tmp && touch /tmp/locks && "
		 "mount --no-canonicalize --bind /proc/self/fd/3 /tmp/locks && "
		 "exec 3<&- && exec /tmp/locks busy /dev/null", build);
	args_add(&a, "unshare", "--mount", "--pid", "--fork", "--mount-proc",
		 "--propagation", "private", "sh", "-c", script, NULL);
	b->unshare = start(a.v, tmp_path("box.out"), tmp_path("box.out"));
	b->pid = b->unshare > 0 ? first_child(b->unshare, READY_MS) : -1;
	for (long end = monotonic_ms() + READY_MS;
	     b->pid > 0 && monotonic_ms() < end && !box_ready(b->pid);
	     usleep(20000))
		;
	if (b->pid > 0 && box_ready(b->pid))
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
static void box_stop(struct box *b, const char *what)
{
	CHECK(kill(b->pid, 0) == 0, "%s: the target is still running after "
	      "qsptop refused it", what);
	kill(b->pid, SIGKILL);
	CHECK(wait_status(b->unshare, 5000) >= 0, "%s: unshare did not end",
	      what);
}

/* Run fn(arg) in a child inside pid's mount namespace; its exit status. */
static int in_box(pid_t pid, int (*fn)(const char *, const char *),
		  const char *a, const char *b)
{
	char path[64];
	pid_t child;

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	child = fork();
	if (child == 0) {
		int ns = open(path, O_RDONLY);

		_exit(ns < 0 || setns(ns, CLONE_NEWNS) < 0 ? 125 : fn(a, b));
	}
	return wait_status(child, 5000);
}

/* In the box: a FIFO bound over file. */
static int fifo_over(const char *file, const char *unused)
{
	(void)unused;
	return mkfifo("/tmp/fifo", 0644) < 0 ||
	       mount("/tmp/fifo", file, NULL, MS_BIND, NULL) < 0;
}

/* In the box: file's directory hidden, file a symbolic link to target. */
static int link_over(const char *file, const char *target)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", file);
	return mount("none", dirname(dir), "tmpfs", 0, NULL) < 0 ||
	       symlink(target, file) < 0;
}

/* qsptop -b -n 1 -p pid, within RUN_MS (-1 when it hung). */
static struct run attach_to(pid_t pid)
{
	char pidstr[16];

	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	return run_capture((char *[]){ qsptop, "-b", "-n", "1", "-p", pidstr,
				       NULL }, RUN_MS, 0);
}

/* An error of one line, naming why. */
static void check_refusal(const struct run *r, const char *what,
			  const char *why)
{
	const char *nl = strchr(r->err, '\n');

	CHECK(r->status != -1, "%s: qsptop -p did not end within %d ms "
	      "(blocked?)", what, RUN_MS);
	CHECK(r->status > 0, "%s: expected qsptop -p to refuse, it exited %d",
	      what, r->status);
	CHECK(strstr(r->err, why) != NULL && nl != NULL && nl[1] == '\0',
	      "%s: expected one line saying \"%s\", got: %s", what, why, r->err);
}

/*
 * A FIFO bound over the libc the target has mapped: qsptop would block in
 * open() for good; it must refuse the file at once.
 */
static void test_fifo_over_libc(void)
{
	const char *what = "FIFO over libc";
	struct box b;
	char libc[PATH_MAX];
	struct run r;

	if (!box_start(&b)) {
		SKIP("%s: unshare could not start a box here", what);
		return;
	}
	CHECK(libc_of(b.pid, libc, sizeof(libc)), "%s: no libc.so.6 in the "
	      "target's maps", what);
	CHECK(in_box(b.pid, fifo_over, libc, NULL) == 0, "%s: could not bind "
	      "a FIFO over %s in the box", what, libc);
	r = attach_to(b.pid);
	check_refusal(&r, what, "is not a regular file");
	run_free(&r);
	box_stop(&b, what);
}

/* Whether anyone opened the file watched by fd since it was added. */
static bool opened(int fd)
{
	char buf[4096] __attribute__((aligned(8)));
	ssize_t n = read(fd, buf, sizeof(buf));

	for (ssize_t at = 0; n > 0 && at < n;) {
		const struct inotify_event *e = (void *)(buf + at);

		if (e->mask & IN_OPEN)
			return true;
		at += (ssize_t)(sizeof(*e) + e->len);
	}
	return false;
}

/* A file of the host's, for a container's link to lead to. */
static void write_host_file(const char *host, const char *what)
{
	int fd = open(host, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	CHECK(fd >= 0 && write(fd, "not an ELF file\n", 16) == 16,
	      "%s: cannot write %s", what, host);
	if (fd >= 0)
		close(fd);
}

/*
 * The target's libc made an absolute symbolic link to a file of the
 * host's: resolved inside the container's root it names nothing there;
 * qsptop must not open the host's file.
 */
static void test_link_out_of_root(void)
{
	const char *what = "absolute link out of the root";
	char libc[PATH_MAX], *host = tmp_path("host-libc");
	struct box b;
	struct run r;
	int watch;

	write_host_file(host, what);
	if (!box_start(&b)) {
		SKIP("%s: unshare could not start a box here", what);
		return;
	}
	CHECK(libc_of(b.pid, libc, sizeof(libc)), "%s: no libc.so.6 in the "
	      "target's maps", what);
	CHECK(in_box(b.pid, link_over, libc, host) == 0, "%s: could not "
	      "link %s to %s in the box", what, libc, host);
	watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	CHECK(watch >= 0 && inotify_add_watch(watch, host, IN_OPEN) >= 0,
	      "%s: cannot watch %s", what, host);
	r = attach_to(b.pid);
	check_refusal(&r, what, "No such file or directory");
	CHECK(!opened(watch), "%s: qsptop opened the host's %s through the "
	      "container's link", what, host);
	close(watch);
	run_free(&r);
	box_stop(&b, what);
}

/*
 * Once the collector runs in the container, its libc is made an absolute
 * link to a host file: the symbolizer, which opens the modules the
 * collector names, must not open the host's file either.
 */
static void test_module_link_out_of_root(void)
{
	const char *what = "module linked out of the root";
	char libc[PATH_MAX], *host = tmp_path("host-module");
	char pidstr[16];
	struct box b;
	struct run r;
	int watch;

	write_host_file(host, what);
	if (!box_start(&b)) {
		SKIP("%s: unshare could not start a box here", what);
		return;
	}
	r = attach_to(b.pid);
	CHECK(r.status == 0, "%s: the first qsptop -p exited %d: %s", what,
	      r.status, r.err);
	run_free(&r);
	CHECK(libc_of(b.pid, libc, sizeof(libc)) &&
	      in_box(b.pid, link_over, libc, host) == 0, "%s: could not link "
	      "the box's libc to %s", what, host);
	watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	CHECK(watch >= 0 && inotify_add_watch(watch, host, IN_OPEN) >= 0,
	      "%s: cannot watch %s", what, host);
	snprintf(pidstr, sizeof(pidstr), "%d", (int)b.pid);
	r = run_capture((char *[]){ qsptop, "-b", "-d", "0.2", "-n", "2", "-p",
				    pidstr, NULL }, RUN_MS, 0);
	CHECK(r.status == 0 && strstr(r.out, "(connected)"), "%s: the second "
	      "qsptop -p exited %d: %s", what, r.status, r.err);
	CHECK(!opened(watch), "%s: the symbolizer opened the host's %s "
	      "through the container's link", what, host);
	close(watch);
	run_free(&r);
	box_stop(&b, what);
}

/* A socket of ours listening at path, non-blocking; -1 on failure. */
static int decoy_socket(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	unlink(path);
	if (fd >= 0 && (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
			listen(fd, 4) < 0)) {
		close(fd);
		return -1;
	}
	return fd;
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
 * The collector's socket name in the container's private directory made
 * a symbolic link to a host socket: qsptop must not connect to it.
 */
static void test_socket_link(void)
{
	const char *what = "socket name linked to a host socket";
	char *decoy_path = tmp_path("decoy.sock"), dir[64], name[128];
	struct box b;
	struct run r;
	int decoy, peer;

	if (!box_start(&b)) {
		SKIP("%s: unshare could not start a box here", what);
		return;
	}
	decoy = decoy_socket(decoy_path);
	snprintf(dir, sizeof(dir), "/proc/%d/root/tmp/qsptop-0", (int)b.pid);
	snprintf(name, sizeof(name), "%s/1-%lu.sock", dir, pidns_of(b.pid));
	CHECK(decoy >= 0 && mkdir(dir, 0700) == 0 &&
	      symlink(decoy_path, name) == 0, "%s: cannot plant %s -> %s",
	      what, name, decoy_path);
	r = attach_to(b.pid);
	check_refusal(&r, what, "symbolic link");
	peer = accept4(decoy, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	CHECK(peer < 0 && errno == EAGAIN, "%s: qsptop connected to the host "
	      "socket %s through the container's link", what, decoy_path);
	if (peer >= 0)
		close(peer);
	if (decoy >= 0)
		close(decoy);
	run_free(&r);
	box_stop(&b, what);
}

/* Wait until path holds text; false after ms. */
static bool wait_text(const char *path, const char *text, long ms)
{
	for (long end = monotonic_ms() + ms; monotonic_ms() < end;
	     usleep(20000)) {
		char *got = slurp_file(path, "");
		bool found = strstr(got, text) != NULL;

		free(got);
		if (found)
			return true;
	}
	return false;
}

/*
 * A host that puts its own socket at every descriptor number it did not
 * open and then closes them all, as daemons do, and exits: the
 * collector's socket and session are out of its reach, so qsptop gets
 * the final counts and the goodbye, and never says it lost the collector.
 */
static void test_host_closes_everything(void)
{
	const char *what = "host closing every descriptor";
	char wl[PATH_MAX], pidstr[16], *res = tmp_path("fdsteal.res");
	char *out = tmp_path("fdsteal.out"), *err = tmp_path("fdsteal.err");
	char *text, *errors;
	pid_t host, watcher;
	int status;

	join(wl, build, "/tests/wl_safety");
	unlink(res);
	host = start((char *[]){ wl, "fdsteal", res, NULL }, NULL, NULL);
	CHECK(wait_text(res, "ready", READY_MS), "%s: the host did not start",
	      what);
	snprintf(pidstr, sizeof(pidstr), "%d", (int)host);
	watcher = start((char *[]){ qsptop, "-b", "-d", "0.2", "-p", pidstr,
				    NULL }, out, err);
	CHECK(wait_text(out, "CALL SITE", RUN_MS), "%s: qsptop -p showed no "
	      "table", what);
	kill(host, SIGUSR1);
	CHECK(wait_text(res, "foreign", RUN_MS), "%s: the host did not finish "
	      "its rounds", what);
	/* The host exits after its rounds; so does qsptop. */
	status = wait_status(watcher, RUN_MS);
	text = slurp_file(out, "");
	errors = slurp_file(err, "");
	CHECK(status == 0 && strstr(text, "exited (injected)") &&
	      strstr(errors, "lost") == NULL,
	      "%s: expected qsptop to see the host exit (status 0, \"exited "
	      "(injected)\"), got status %d and: %s", what, status, errors);
	free(text);
	free(errors);
	kill(host, SIGTERM);
	wait_status(host, 10000);
}

/* Run a shell command line; whether it exited 0. */
static bool shell(const char *cmd)
{
	return run_quietly((char *[]){ "sh", "-c", (char *)cmd, NULL }) == 0;
}

/*
 * A stripped program whose .gnu_debuglink names a FIFO at the first place
 * libdw looks (beside it) and its real debug file at the second (.debug
 * there): the symbolizer must neither block on the FIFO nor miss the
 * real file, and so show the program's file:line.
 */
static void test_debuglink_fifo(void)
{
	const char *what = "debuglink to a FIFO";
	char cmd[8 * PATH_MAX], wl[PATH_MAX], dir[PATH_MAX], pidstr[16];
	char *prog = tmp_path("locks"), *out = tmp_path("debuglink.out");
	pid_t pid;
	struct run r;

	join(wl, build, "/tests/wl_locks");
	join(dir, tmp, "/.debug");
	snprintf(cmd, sizeof(cmd), "mkdir -p %s && objcopy --only-keep-debug "
		 "%s %s/locks.debug && objcopy --strip-debug "
		 "--add-gnu-debuglink=%s/locks.debug %s %s && mkfifo %s.debug",
		 dir, wl, dir, dir, wl, prog, prog);
	if (!shell(cmd)) {
		SKIP("%s: objcopy could not make a stripped program", what);
		return;
	}
	pid = start((char *[]){ prog, "busy", "/dev/null", NULL }, out, out);
	CHECK(wait_threads(pid, 3, READY_MS), "%s: the program did not start",
	      what);
	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	r = run_capture((char *[]){ qsptop, "-b", "-d", "0.2", "-n", "2", "-p",
				    pidstr, NULL }, RUN_MS, 0);
	CHECK(r.status != -1, "%s: qsptop -p did not end within %d ms "
	      "(blocked?)", what, RUN_MS);
	CHECK(r.status == 0 && strstr(r.out, "site_busy") &&
	      strstr(r.out, "locks.c:"), "%s: expected site_busy with its "
	      "file:line from the debug file in .debug, got status %d:\n%s%s",
	      what, r.status, r.out, r.err);
	run_free(&r);
	kill(pid, SIGKILL);
	wait_status(pid, 5000);
}

int main(void)
{
	find_paths("/tmp/qsptop-hostile-XXXXXX", "wl_locks");
	test_host_closes_everything();
	test_debuglink_fifo();
	if (geteuid() != 0) {
		SKIP("hostile containers: making them needs root");
	} else {
		test_fifo_over_libc();
		test_link_out_of_root();
		test_module_link_out_of_root();
		test_socket_link();
	}
	remove_tmp();
	return check_summary();
}
