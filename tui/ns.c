/* A target's namespaces seen from qsptop's. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ns.h"

bool ns_shared(pid_t pid, const char *ns)
{
	char ours[64], theirs[64];
	struct stat a, b;

	snprintf(ours, sizeof(ours), "/proc/self/ns/%s", ns);
	snprintf(theirs, sizeof(theirs), "/proc/%d/ns/%s", (int)pid, ns);
	if (stat(ours, &a) < 0 || stat(theirs, &b) < 0)
		return true;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int ns_open_root(pid_t pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EPERM) &&
	    ns_shared(pid, "mnt"))
		fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd;
}

int ns_open_path(int root, const char *path)
{
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};

	while (*path == '/')
		path++;
	return (int)syscall(SYS_openat2, root, path, &how, sizeof(how));
}

/*
 * Reopen pathfd (O_PATH) for reading if it is a regular file: through
 * /proc/self/fd, the very inode we checked, whatever is renamed since.
 */
static int reopen_regular(int pathfd, const char *shown, char *why,
			  size_t size)
{
	char self[64];
	struct stat st;
	int fd = -1, err;

	if (pathfd < 0) {
		snprintf(why, size, "%s", strerror(errno));
		return -1;
	}
	if (fstat(pathfd, &st) < 0) {
		err = errno;
		snprintf(why, size, "%s", strerror(err));
	} else if (!S_ISREG(st.st_mode)) {
		err = EINVAL;
		snprintf(why, size, "%s is not a regular file", shown);
	} else {
		snprintf(self, sizeof(self), "/proc/self/fd/%d", pathfd);
		fd = open(self, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		err = errno;
		if (fd < 0)
			snprintf(why, size, "%s", strerror(err));
	}
	close(pathfd);
	errno = err;
	return fd;
}

int ns_open_file(int root, const char *path, char *why, size_t size)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	const char *rel = path;

	while (*rel == '/')
		rel++;
	return reopen_regular((int)syscall(SYS_openat2, root, rel, &how,
					   sizeof(how)), path, why, size);
}

int ns_open_file_of(pid_t pid, const char *path, char *why, size_t size)
{
	int root = pid ? ns_open_root(pid)
		       : open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd, err;

	if (root < 0) {
		snprintf(why, size, "%s", strerror(errno));
		return -1;
	}
	fd = ns_open_file(root, path, why, size);
	err = errno;
	close(root);
	errno = err;
	return fd;
}

int ns_open_mapped(const char *path, char *why, size_t size)
{
	return reopen_regular(open(path, O_PATH | O_CLOEXEC), path, why, size);
}

long ns_uid_inside(pid_t pid, uid_t uid)
{
	char path[64], line[128];
	unsigned long inside, outside, count;
	long found = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	while (found < 0 && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lu %lu %lu", &inside, &outside, &count) == 3 &&
		    uid >= outside && uid - outside < count)
			found = (long)(inside + (uid - outside));
	}
	fclose(f);
	return found;
}
