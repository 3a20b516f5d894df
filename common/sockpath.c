/* The rendezvous path between qsptop and a target's collector. */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sockpath.h"

int sockpath_dir(char *out, size_t size, uid_t uid)
{
	int n = snprintf(out, size, "/tmp/qsptop-%u", (unsigned)uid);

	return n < 0 || (size_t)n >= size ? -1 : 0;
}

int sockpath_socket(char *out, size_t size, uid_t uid, pid_t pid)
{
	int n = snprintf(out, size, "/tmp/qsptop-%u/%d.sock", (unsigned)uid,
			 (int)pid);

	return n < 0 || (size_t)n >= size ? -1 : 0;
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
