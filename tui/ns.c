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
