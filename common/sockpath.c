/* The rendezvous path between qsptop and a target's collector. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "sockpath.h"

int sockpath_dir(char *out, size_t size, uid_t uid)
{
	int n = snprintf(out, size, "/tmp/qsptop-%u", (unsigned)uid);

	return n < 0 || (size_t)n >= size ? -1 : 0;
}

static int socket_path(char *out, size_t size, uid_t uid, long ns_pid,
		       unsigned long ns)
{
	int n = snprintf(out, size, "/tmp/qsptop-%u/%ld-%lu.sock",
			 (unsigned)uid, ns_pid, ns);

	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* The inode of a PID namespace link; 0 when /proc cannot say. */
static unsigned long pidns_inode(const char *link)
{
	struct stat st;

	return stat(link, &st) == 0 ? (unsigned long)st.st_ino : 0;
}

int sockpath_self(char *out, size_t size)
{
	return socket_path(out, size, geteuid(), (long)getpid(),
			   pidns_inode("/proc/self/ns/pid"));
}

/* The last PID on the NSpid line of /proc/PID/status: its innermost PID. */
static long innermost_pid(pid_t pid)
{
	char path[64], buf[4096], *line, *end;
	long inner = -1;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	line = strstr(buf, "\nNSpid:");
	if (line == NULL)
		return pid;	/* kernels before 4.1 have one namespace level */
	for (line += 7; *line && *line != '\n'; line = end) {
		long v = strtol(line, &end, 10);

		if (end == line)
			break;
		inner = v;
	}
	return inner;
}

int sockpath_target(char *out, size_t size, uid_t uid, pid_t pid)
{
	char link[64];
	long inner = innermost_pid(pid);

	if (inner <= 0)
		return -1;
	snprintf(link, sizeof(link), "/proc/%d/ns/pid", (int)pid);
	return socket_path(out, size, uid, inner, pidns_inode(link));
}

int sockpath_make_private(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -1;
	if (lstat(dir, &st) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077) != 0) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

int sockpath_state(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd, state;

	if (strlen(path) >= sizeof(addr.sun_path))
		return SOCKPATH_LIVE;
	strcpy(addr.sun_path, path);
	if (access(path, F_OK) < 0 && errno == ENOENT)
		return SOCKPATH_ABSENT;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return SOCKPATH_LIVE;
	state = connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 &&
		errno == ECONNREFUSED ? SOCKPATH_STALE : SOCKPATH_LIVE;
	close(fd);
	return state;
}
