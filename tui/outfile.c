/* Exported files: created new or replaced by rename, never through a link. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"

/* Write all of text to fd, flush it to the disk and close fd; -1 with errno. */
static int finish(int fd, const char *text, size_t len)
{
	int error = 0;

	while (len > 0 && error == 0) {
		ssize_t n = write(fd, text, len);

		if (n > 0) {
			text += n;
			len -= (size_t)n;
		} else if (n == 0 || errno != EINTR) {
			error = n == 0 ? EIO : errno;
		}
	}
	if (error == 0 && fsync(fd) < 0)
		error = errno;
	if (close(fd) < 0 && error == 0)
		error = errno;
	errno = error;
	return error ? -1 : 0;
}

/* Errors of creating a file that are its directory's. */
static bool directory_fault(int error)
{
	return error == ENOENT || error == ENOTDIR || error == EACCES ||
	       error == EPERM || error == EROFS;
}

void outfile_error(const char *path, int error, char *err, size_t errlen)
{
	char copy[PATH_MAX], dir[PATH_MAX];
	const char *given;

	if (!directory_fault(error)) {
		snprintf(err, errlen, "%s: %s", path, strerror(error));
		return;
	}
	snprintf(copy, sizeof(copy), "%s", path);
	given = dirname(copy);
	if (realpath(given, dir) == NULL)
		snprintf(dir, sizeof(dir), "%s", given);
	snprintf(err, errlen, "%s: directory %s: %s", path, dir, strerror(error));
}

/* Why path could not be created, saying what is in the way. */
static void create_error(const char *path, int error, char *err, size_t errlen)
{
	struct stat st;

	if ((error == EEXIST || error == ELOOP) && lstat(path, &st) == 0 &&
	    S_ISLNK(st.st_mode))
		snprintf(err, errlen, "%s is a symbolic link: not followed, "
			 "nothing written", path);
	else if (error == EEXIST)
		snprintf(err, errlen, "%s already exists: not overwritten", path);
	else
		outfile_error(path, error, err, errlen);
}

int outfile_create(const char *path, const char *text, size_t len, char *err,
		   size_t errlen)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		      0666);
	struct stat ours, there;
	bool known;

	if (fd < 0) {
		create_error(path, errno, err, errlen);
		return -1;
	}
	known = fstat(fd, &ours) == 0;
	if (finish(fd, text, len) == 0)
		return 0;
	snprintf(err, errlen, "%s: %s", path, strerror(errno));
	/* Remove what we made, not what may have been put there since. */
	if (known && lstat(path, &there) == 0 && there.st_dev == ours.st_dev &&
	    there.st_ino == ours.st_ino)
		unlink(path);
	return -1;
}

/* The mode for path's replacement: that of the file there, else the umask's. */
static mode_t replacement_mode(const char *path)
{
	struct stat st;
	mode_t mask;

	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
		return st.st_mode & 0777;
	mask = umask(0);
	umask(mask);
	return 0666 & ~mask;
}

int outfile_replace(const char *path, const char *text, size_t len,
		    char *err, size_t errlen)
{
	char tmp[PATH_MAX];
	int fd;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= sizeof(tmp)) {
		snprintf(err, errlen, "%s: %s", path, strerror(ENAMETOOLONG));
		return -1;
	}
	/* A random name, opened O_CREAT|O_EXCL: a name taken is tried again. */
	fd = mkostemp(tmp, O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		outfile_error(path, errno, err, errlen);
		return -1;
	}
	if (fchmod(fd, replacement_mode(path)) < 0) {
		int error = errno;

		close(fd);
		errno = error;
	} else if (finish(fd, text, len) == 0 && rename(tmp, path) == 0) {
		return 0;
	}
	snprintf(err, errlen, "%s: %s", path, strerror(errno));
	unlink(tmp);
	return -1;
}
