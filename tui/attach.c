/* Launching a command under the collector, or connecting to one. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/proto.h"
#include "../common/sockpath.h"
#include "attach.h"
#include "inject.h"
#include "ns.h"
#include "xalloc.h"

#define LIBRARY_NAME "libqsptop.so"
/* How long a freshly injected collector may take to listen. */
#define INJECT_LISTEN_MS 3000

/*
 * The collector library: beside the executable (the build tree), in
 * ../lib/qsptop relative to it (an install, wherever it was moved), or
 * under the prefix qsptop was built for.
 */
const char *attach_library_path(void)
{
	static char path[PATH_MAX + 64];
	char exe[PATH_MAX], *dir;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n > 0) {
		exe[n] = '\0';
		dir = dirname(exe);
		snprintf(path, sizeof(path), "%s/%s", dir, LIBRARY_NAME);
		if (access(path, R_OK) == 0)
			return path;
		snprintf(path, sizeof(path), "%s/../lib/qsptop/%s", dir,
			 LIBRARY_NAME);
		if (access(path, R_OK) == 0)
			return path;
	}
	snprintf(path, sizeof(path), "%s/lib/qsptop/%s", QSPTOP_PREFIX,
		 LIBRARY_NAME);
	if (access(path, R_OK) == 0)
		return path;
	fatal("cannot find the collector library %s beside the qsptop "
	      "executable, in ../lib/qsptop from it, or in %s/lib/qsptop",
	      LIBRARY_NAME, QSPTOP_PREFIX);
}

/*
 * While attach_try_connect() runs, a failure is its error, not qsptop's
 * end: fail() leaves through try_exit with the message in try_msg.
 */
static jmp_buf *try_exit;
static char try_msg[512];

static void fail(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

/* End with the message try_msg holds already. */
static __attribute__((noreturn)) void fail_with_msg(void)
{
	if (try_exit)
		longjmp(*try_exit, 1);
	fatal("%s", try_msg);
}

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(try_msg, sizeof(try_msg), fmt, ap);
	va_end(ap);
	fail_with_msg();
}

/*
 * Note why a check refused, for fail_with_msg() once its caller has
 * closed what it opened: -1.
 */
static int refuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int refuse(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(try_msg, sizeof(try_msg), fmt, ap);
	va_end(ap);
	return -1;
}

static unsigned memory_cap_mb;
/* Whether collectors are asked to track holders from their hello on. */
static bool holders;
/* Whether a launched command keeps the collector across exec. */
static bool follow_exec = true;

void attach_set_holders(bool on)
{
	holders = on;
}

void attach_set_memory_cap(unsigned mb)
{
	memory_cap_mb = mb;
}

/*
 * Queue our hello, the interval and whether to track holders: the
 * collector reads them first (a launched program starts after).
 */
static void greet(int fd, unsigned interval_ms)
{
	struct proto_client_hello h = { .magic = PROTO_MAGIC,
					.version = PROTO_VERSION,
					.memory_cap_mb = memory_cap_mb };
	struct wbuf b = { 0 };
	size_t off = 0;

	snprintf(h.client_version, sizeof(h.client_version), "%s",
		 QSPTOP_VERSION);
	proto_put_client_hello(&b, &h);
	proto_put_set_interval(&b, interval_ms);
	if (holders)
		proto_put_holders(&b, true);
	if (b.failed)
		fail("out of memory");
	while (off < b.len) {
		ssize_t n = send(fd, b.data + off, b.len - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail("cannot talk to the collector: %s", strerror(errno));
		off += (size_t)n;
	}
	wbuf_free(&b);
}

/* LD_PRELOAD with the collector first, keeping what the user had. */
static void set_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	char *value;

	if (old == NULL || *old == '\0') {
		setenv("LD_PRELOAD", lib, 1);
		return;
	}
	value = xmalloc(strlen(lib) + strlen(old) + 2);
	sprintf(value, "%s:%s", lib, old);
	setenv("LD_PRELOAD", value, 1);
	free(value);
}

/*
 * Give the command /dev/null for input and output_fd for its output; or,
 * for output_fd 2, our stderr for its stdout.
 */
static void redirect_output(int output_fd)
{
	int null;

	if (output_fd == STDERR_FILENO) {
		dup2(STDERR_FILENO, STDOUT_FILENO);
		return;
	}
	null = open("/dev/null", O_RDONLY);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		close(null);
	}
	dup2(output_fd, STDOUT_FILENO);
	dup2(output_fd, STDERR_FILENO);
	close(output_fd);
}

/* In the child: hand down the socket and exec; report errno on failure. */
static void exec_child(char **argv, int sock, int report, const char *lib,
		       int output_fd)
{
	char num[16];
	int err;

	if (output_fd >= 0)
		redirect_output(output_fd);
	if (sock <= 2) {
		int moved = fcntl(sock, F_DUPFD, 3);

		sock = moved;
	}
	fcntl(sock, F_SETFD, 0);
	snprintf(num, sizeof(num), "%d", sock);
	setenv("QSPTOP_FD", num, 1);
	if (memory_cap_mb) {
		snprintf(num, sizeof(num), "%u", memory_cap_mb);
		setenv("QSPTOP_MEMORY_MB", num, 1);
	}
	if (follow_exec) {
		snprintf(num, sizeof(num), "%d", (int)getpid());
		setenv("QSPTOP_EXEC_PID", num, 1);
	} else {
		unsetenv("QSPTOP_EXEC_PID");
	}
	set_preload(lib);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGXFSZ, SIG_DFL);
	execvp(argv[0], argv);
	err = errno;
	if (write(report, &err, sizeof(err)) < 0)
		_exit(127);
	_exit(127);
}

void attach_launch(struct attach *a, char **argv, unsigned interval_ms,
		   int output_fd)
{
	const char *lib = attach_library_path();
	int sv[2], report[2], err;
	ssize_t n;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
	    pipe2(report, O_CLOEXEC) < 0)
		fail("cannot create a socket: %s", strerror(errno));
	greet(sv[0], interval_ms);
	a->child = fork();
	if (a->child < 0)
		fail("cannot fork: %s", strerror(errno));
	if (a->child == 0)
		exec_child(argv, sv[1], report[1], lib, output_fd);
	close(sv[1]);
	close(report[1]);
	while ((n = read(report[0], &err, sizeof(err))) < 0 && errno == EINTR)
		;
	close(report[0]);
	if (n == sizeof(err)) {
		waitpid(a->child, NULL, 0);
		fprintf(stderr, "qsptop: cannot run '%s': %s\n", argv[0],
			strerror(err));
		exit(127);
	}
	a->fd = sv[0];
	a->pid = a->child;
	a->mode = "launched";
}

/* The effective uid of a process, from /proc; -1 when it is gone. */
static long process_euid(pid_t pid)
{
	char path[64], line[256];
	long ruid, euid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Uid: %ld %ld", &ruid, &euid) == 2)
			break;
	}
	fclose(f);
	return euid;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The names of the sockets bound under dir (listening or about to), sorted,
 * from /proc/net/unix: our network namespace's sockets.
 */
static char **bound_names(const char *dir, size_t *count)
{
	char line[512], **names = NULL;
	size_t n = 0, dir_len = strlen(dir);
	FILE *f = fopen("/proc/net/unix", "re");

	while (f && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		if (p && strncmp(p, dir, dir_len) == 0 && p[dir_len] == '/') {
			p[strcspn(p, "\n")] = '\0';
			names = xreallocarray(names, n + 1, sizeof(*names));
			names[n++] = xstrdup(p + dir_len + 1);
		}
	}
	if (f)
		fclose(f);
	qsort(names, n, sizeof(*names), compare_names);
	*count = n;
	return names;
}

/*
 * Remove the sockets left by killed processes: a name nothing in our
 * network namespace is bound to, and that refuses connections (a live one
 * of another network namespace accepts). A live collector is never
 * connected to here: every connection would start a session in it.
 */
void attach_sweep_sockets(void)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)], path[PATH_MAX];
	char **bound;
	size_t nbound;
	struct dirent *e;
	DIR *d;

	if (sockpath_dir(dir, sizeof(dir), geteuid()) < 0 ||
	    (d = opendir(dir)) == NULL)
		return;
	bound = bound_names(dir, &nbound);
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		char *name = e->d_name;

		if (len > 5 && strcmp(name + len - 5, ".sock") == 0 &&
		    !bsearch(&name, bound, nbound, sizeof(*bound), compare_names) &&
		    snprintf(path, sizeof(path), "%s/%s", dir, name) <
			    (int)sizeof(path) &&
		    sockpath_state(path) == SOCKPATH_STALE)
			unlink(path);
	}
	closedir(d);
	for (size_t i = 0; i < nbound; i++)
		free(bound[i]);
	free(bound);
}

/*
 * Where a process's collector would listen, and whom to expect there: a
 * directory and a socket name as the process sees them (in its own mount,
 * PID and user namespaces), the same path as we can reach it, for
 * messages, and the process's PID and effective uid as we know them.
 */
struct rendezvous {
	char dir[64], name[64], shown[PATH_MAX];
	pid_t pid;
	uid_t euid;
	bool become;		/* connect as euid: its namespace maps not ours */
};

/*
 * Refuse a socket whose directory another user could have made: it must
 * be a real directory (not a symlink) of the process's user or root,
 * closed to everyone else.
 */
static int check_socket_dir(const struct rendezvous *r, int dir)
{
	struct stat st;

	if (fstat(dir, &st) < 0)
		return refuse("refusing %s: cannot check its directory: %s",
			      r->shown, strerror(errno));
	if (S_ISLNK(st.st_mode))
		return refuse("refusing %s: %s is a symbolic link", r->shown,
			      r->dir);
	if (!S_ISDIR(st.st_mode))
		return refuse("refusing %s: %s is not a directory", r->shown,
			      r->dir);
	if (st.st_uid != r->euid && st.st_uid != 0)
		return refuse("refusing %s: %s belongs to uid %u, not to the "
			      "process's user (%u) or root", r->shown, r->dir,
			      (unsigned)st.st_uid, (unsigned)r->euid);
	if (st.st_mode & 077)
		return refuse("refusing %s: %s is open to other users (mode %03o)",
			      r->shown, r->dir, (unsigned)(st.st_mode & 0777));
	return 0;
}

/* Refuse a socket not served by the process itself, as its user. */
static int check_peer(int fd, const struct rendezvous *r)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return refuse("refusing %s: cannot tell who serves it: %s",
			      r->shown, strerror(errno));
	if (cred.pid != r->pid || cred.uid != r->euid)
		return refuse("refusing %s: it is served by PID %d (uid %u), not "
			      "by PID %d (uid %u)", r->shown, (int)cred.pid,
			      (unsigned)cred.uid, (int)r->pid, (unsigned)r->euid);
	return 0;
}

/*
 * The socket directory, resolved inside the process's root; -1 with errno
 * ENOENT when missing: no collector of that user has listened yet.
 */
static int open_socket_dir(const struct rendezvous *r)
{
	int root = ns_open_root(r->pid), dir;

	if (root < 0) {
		if (errno == ENOENT)
			return -1;
		fail("cannot reach the root directory of PID %d: %s",
		      (int)r->pid, strerror(errno));
	}
	dir = ns_open_path(root, r->dir);
	close(root);
	if (dir < 0 && errno != ENOENT)
		fail("refusing %s: cannot check %s: %s", r->shown, r->dir,
		      strerror(errno));
	return dir;
}

/* Refuse what is not a socket of the process's user. */
static int check_socket_file(const struct rendezvous *r, int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return refuse("refusing %s: cannot check it: %s", r->shown,
			      strerror(errno));
	if (S_ISLNK(st.st_mode))
		return refuse("refusing %s: it is a symbolic link", r->shown);
	if (!S_ISSOCK(st.st_mode))
		return refuse("refusing %s: it is not a socket", r->shown);
	if (st.st_uid != r->euid)
		return refuse("refusing %s: it belongs to uid %u, not to the "
			      "process's user (%u)", r->shown,
			      (unsigned)st.st_uid, (unsigned)r->euid);
	return 0;
}

/*
 * The socket in the directory, as an O_PATH descriptor of its very inode;
 * -1 with errno (ENOENT: nothing listens yet), or REFUSED. The name must
 * be a socket of the process's user: a symbolic link there (to a socket
 * of the host's, say) is refused, never followed.
 */
#define REFUSED (-2)

static int open_socket_file(const struct rendezvous *r, int dir)
{
	int fd = openat(dir, r->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (check_socket_file(r, fd) < 0) {
		close(fd);
		return REFUSED;
	}
	return fd;
}

/*
 * Connect through our descriptor of the socket itself: the path stays
 * short whatever the root, and names nothing the process could swap (a
 * socket renamed or replaced by a link after the check is not reached).
 * A collector in another user namespace accepts only its own user: root
 * of ours is nobody there, so we connect as that user, which it sees as
 * itself.
 */
static int connect_in(const struct rendezvous *r, int dir, int fd)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int sock = open_socket_file(r, dir), rc, err;

	if (sock < 0)
		return sock;
	snprintf(addr.sun_path, sizeof(addr.sun_path), "/proc/self/fd/%d",
		 sock);
	if (r->become && seteuid(r->euid) < 0)
		fatal("cannot act as uid %u to reach PID %d: %s",
		      (unsigned)r->euid, (int)r->pid, strerror(errno));
	rc = connect(fd, (const struct sockaddr *)&addr, sizeof(addr));
	err = errno;
	close(sock);
	if (r->become && seteuid(0) < 0)
		fatal("cannot become root again: %s", strerror(errno));
	errno = err;
	return rc;
}

/*
 * Connect to the collector of r's process, trusting nothing about the
 * path: the descriptor, or -1 with errno set when nothing listens. A
 * refusal fails once the descriptors it opened are closed.
 */
static int try_connect(const struct rendezvous *r)
{
	int dir = open_socket_dir(r), fd = -1, rc, err;

	if (dir < 0)
		return -1;
	if (check_socket_dir(r, dir) < 0)
		goto refused;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		refuse("cannot create a socket: %s", strerror(errno));
		goto refused;
	}
	rc = connect_in(r, dir, fd);
	if (rc == REFUSED)
		goto refused;
	err = errno;
	close(dir);
	if (rc == 0 && check_peer(fd, r) == 0)
		return fd;
	close(fd);
	if (rc == 0)
		fail_with_msg();	/* check_peer() refused */
	errno = err;
	return -1;
refused:
	if (fd >= 0)
		close(fd);
	close(dir);
	fail_with_msg();
}

/* Wait for a freshly injected collector to listen; -1 after the deadline. */
static int connect_when_ready(const struct rendezvous *r)
{
	for (int waited = 0; waited < INJECT_LISTEN_MS; waited += 10) {
		int fd = try_connect(r);

		if (fd >= 0)
			return fd;
		usleep(10000);
	}
	return -1;
}

/*
 * A collector that is loaded but does not listen is a forked child's,
 * which starts no thread until asked: ask it, through ptrace.
 */
static int wake_and_connect(const struct rendezvous *r, bool force)
{
	char msg[512];
	int fd;

	if (inject_wake(r->pid, attach_library_path(), force, msg,
			sizeof(msg)) < 0)
		fail("process %d has qsptop's collector loaded, but it does "
		      "not answer on %s, and waking it failed: %s", (int)r->pid,
		      r->shown, msg);
	fd = connect_when_ready(r);
	if (fd < 0)
		fail("process %d has qsptop's collector loaded and was woken, "
		      "but it does not answer on %s", (int)r->pid,
		      r->shown);
	return fd;
}

/* The last attach failed in borrowing a thread or loading the collector. */
static bool injection_failed;

bool attach_injection_failed(void)
{
	return injection_failed;
}

/* Load the collector into r's process with ptrace and connect to it. */
static int inject_and_connect(const struct rendezvous *r, bool force)
{
	char msg[512];
	int rc = inject_collector(r->pid, attach_library_path(), force, msg,
				  sizeof(msg));
	int fd;

	injection_failed = rc == INJECT_FAILED && inject_failed_loading();
	if (rc == INJECT_FAILED)
		fail("%s", msg);
	if (msg[0])
		warning("%s", msg);
	if (rc == INJECT_ALREADY)
		return wake_and_connect(r, force);
	fd = connect_when_ready(r);
	if (fd < 0)
		fail("the collector loaded into process %d did not open %s within "
		      "%d ms", (int)r->pid, r->shown, INJECT_LISTEN_MS);
	return fd;
}

/*
 * Where pid's collector listens, in the process's namespaces: its user's
 * directory there is named after its uid inside, the socket after its PID
 * inside, and we reach both through its root.
 */
static void find_rendezvous(struct rendezvous *r, pid_t pid)
{
	long euid = process_euid(pid), inside;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)], root[32] = "";

	if (euid < 0)
		fail("no process with PID %d", (int)pid);
	r->pid = pid;
	r->euid = (uid_t)euid;
	inside = ns_uid_inside(pid, r->euid);
	if (inside < 0)
		fail("cannot tell which user PID %d runs as inside its user "
		      "namespace (uid %u here)", (int)pid, (unsigned)r->euid);
	if (sockpath_target(path, sizeof(path), (uid_t)inside, pid) < 0 ||
	    sockpath_dir(r->dir, sizeof(r->dir), (uid_t)inside) < 0 ||
	    strlen(path) >= sizeof(r->name) + strlen(r->dir))
		fail("socket path too long");
	snprintf(r->name, sizeof(r->name), "%s", path + strlen(r->dir) + 1);
	if (!ns_shared(pid, "mnt"))
		snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	snprintf(r->shown, sizeof(r->shown), "%s%s", root, path);
	r->become = geteuid() == 0 && r->euid != 0 && !ns_shared(pid, "user");
}

void attach_set_follow_exec(bool follow)
{
	follow_exec = follow;
}

/* Whether the launched command is still running (not reaped, not a zombie). */
static bool child_running(pid_t child)
{
	siginfo_t info = { 0 };

	return waitid(P_PID, (id_t)child, &info,
		      WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == 0;
}

int attach_reconnect(struct attach *a, unsigned interval_ms, int timeout_ms)
{
	struct rendezvous r;
	long deadline = clock_now_ms() + timeout_ms;
	int fd = -1;

	if (!follow_exec || a->child == 0)
		return -1;
	find_rendezvous(&r, a->child);
	while (fd < 0 && child_running(a->child) &&
	       clock_now_ms() < deadline) {
		fd = try_connect(&r);
		if (fd < 0)
			usleep(10000);
	}
	if (fd < 0)
		return -1;
	greet(fd, interval_ms);
	a->fd = fd;
	return fd;
}

void attach_connect(struct attach *a, pid_t pid, unsigned interval_ms,
		    bool force)
{
	struct rendezvous r;
	int fd;

	find_rendezvous(&r, pid);
	a->mode = "connected";
	fd = try_connect(&r);
	if (fd < 0 && (errno == EACCES || errno == EPERM))
		fail("not permitted to connect to PID %d (%s): it runs as another "
		      "user", (int)pid, r.shown);
	if (fd < 0) {
		fd = inject_and_connect(&r, force);
		a->mode = "injected";
	}
	greet(fd, interval_ms);
	a->fd = fd;
	a->pid = pid;
	a->child = 0;
}

int attach_try_connect(struct attach *a, pid_t pid, unsigned interval_ms,
		       bool force, char *err, size_t size)
{
	jmp_buf here;
	int rc = 0;

	injection_failed = false;
	if (setjmp(here) == 0) {
		try_exit = &here;
		attach_connect(a, pid, interval_ms, force);
	} else {
		snprintf(err, size, "%s", try_msg);
		rc = -1;
	}
	try_exit = NULL;
	return rc;
}

int attach_ready(pid_t pid, bool force, char *err, size_t size)
{
	struct rendezvous r;
	jmp_buf here;
	int fd, rc = 0;

	if (setjmp(here) == 0) {
		try_exit = &here;
		find_rendezvous(&r, pid);
		fd = try_connect(&r);
		if (fd < 0 && (errno == EACCES || errno == EPERM))
			fail("not permitted to connect to PID %d (%s): it runs "
			     "as another user", (int)pid, r.shown);
		if (fd < 0)
			fd = inject_and_connect(&r, force);
		close(fd);
	} else {
		snprintf(err, size, "%s", try_msg);
		rc = -1;
	}
	try_exit = NULL;
	return rc;
}
