/*
 * The collector where the target can load it: the same file inside the
 * target's root, or else a copy of it written into the target's /tmp.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inject_copy.h"
#include "inject_proc.h"
#include "ns.h"

/*
 * The library is the same file inside the target's root (found as it
 * would find it); when it is not there, or another file has its name (in
 * a container), the target loads a copy (inject_copy_lib).
 */
int inject_copy_check(struct inject_target *t, const char *lib, char *msg,
		      size_t len)
{
	struct stat here, there;
	int root, fd = -1;

	if (realpath(lib, t->lib) == NULL || stat(t->lib, &here) < 0)
		return inject_fail(msg, len, "cannot find the collector library %s: "
				   "%s", lib, strerror(errno));
	root = ns_open_root(t->pid);
	if (root < 0)
		return errno == ENOENT ? inject_exited(t, msg, len)
				       : inject_not_permitted(t, msg, len);
	fd = ns_open_path(root, t->lib);
	close(root);
	t->copy = fd < 0 || fstat(fd, &there) < 0 ||
		  here.st_dev != there.st_dev || here.st_ino != there.st_ino;
	if (fd >= 0)
		close(fd);
	return 0;
}

/* Copy the open file from into to; -1 with errno. */
static int copy_file(int from, int to)
{
	char buf[65536];
	ssize_t n;

	while ((n = read(from, buf, sizeof(buf))) > 0) {
		for (ssize_t done = 0, w; done < n; done += w) {
			w = write(to, buf + done, (size_t)(n - done));
			if (w < 0)
				return -1;
		}
	}
	return n < 0 ? -1 : 0;
}

/* The target's /tmp, found inside its root, in t->copy_tmp; -1 with errno. */
static int open_target_tmp(struct inject_target *t)
{
	int root = ns_open_root(t->pid);

	if (root < 0)
		return -1;
	t->copy_tmp = ns_open_path(root, "/tmp");
	close(root);
	return t->copy_tmp < 0 ? -1 : 0;
}

/*
 * A fresh directory of ours, readable by all, in the target's /tmp: in
 * t->copy_fd, kept open to remove what is in it, whatever is renamed.
 */
static int make_copy_dir(struct inject_target *t)
{
	unsigned rnd;

	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		return -1;
	snprintf(t->copy_dir, sizeof(t->copy_dir), "qsptop-lib-%08x", rnd);
	if (mkdirat(t->copy_tmp, t->copy_dir, 0700) < 0) {
		t->copy_dir[0] = '\0';
		return -1;
	}
	t->copy_fd = openat(t->copy_tmp, t->copy_dir,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return t->copy_fd < 0 ? -1 : fchmod(t->copy_fd, 0755);
}

/* The copy itself: its directory, then the file; -1 with errno. */
static int write_copy(struct inject_target *t, int from, const char *name)
{
	int to, rc;

	if (make_copy_dir(t) < 0)
		return -1;
	to = openat(t->copy_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0755);
	if (to < 0)
		return -1;
	rc = fchmod(to, 0755) < 0 || copy_file(from, to) < 0 ? -1 : 0;
	if (close(to) < 0)
		rc = -1;
	return rc;
}

/*
 * Act as uid and gid (effective), or as root again with uid 0: the group
 * changes while we are still root.
 */
static int act_as(uid_t uid, gid_t gid)
{
	if (uid != 0)
		return setegid(gid) < 0 || seteuid(uid) < 0 ? -1 : 0;
	return seteuid(0) < 0 || setegid(0) < 0 ? -1 : 0;
}

/*
 * The collector, copied where the target can load it: in a directory of
 * its /tmp, found inside its root (a link there cannot send the copy
 * elsewhere), readable whatever user it runs as. What we create in a
 * filesystem of another user namespace must belong to a user it knows
 * (our root is nobody there): root makes it as the target's user. t->lib
 * becomes the path of the copy as the target sees it; inject_remove_copy
 * removes it.
 */
int inject_copy_lib(struct inject_target *t, char *msg, size_t len)
{
	char name[NAME_MAX + 1];
	bool as_target = geteuid() == 0 && !ns_shared(t->pid, "user");
	int from = open(t->lib, O_RDONLY | O_CLOEXEC), rc = -1, err;

	/* t->lib is rewritten below: the name must not point into it. */
	snprintf(name, sizeof(name), "%s", strrchr(t->lib, '/') + 1);
	if (from < 0)
		return inject_fail(msg, len, "cannot read the collector library %s: %s",
				   t->lib, strerror(errno));
	/* Its /tmp is found as we are; only what we create there is not. */
	if (open_target_tmp(t) == 0 &&
	    (!as_target || act_as(t->euid, t->egid) == 0))
		rc = write_copy(t, from, name);
	err = errno;
	close(from);
	if (as_target && act_as(0, 0) < 0)
		rc = -1;
	if (rc == 0) {
		snprintf(t->lib, sizeof(t->lib), "/tmp/%s/%s", t->copy_dir,
			 name);
		return 0;
	}
	inject_remove_copy(t);
	return inject_fail(msg, len, "cannot copy the collector library into PID %d's "
			   "/tmp (it cannot see %s): %s", (int)t->pid, t->lib,
			   strerror(err));
}

void inject_remove_copy(struct inject_target *t)
{
	bool keep = t->dlopen_pending;

	if (t->copy_fd >= 0 && !keep)
		unlinkat(t->copy_fd, strrchr(t->lib, '/') + 1, 0);
	if (t->copy_fd >= 0)
		close(t->copy_fd);
	if (t->copy_dir[0] && !keep)
		unlinkat(t->copy_tmp, t->copy_dir, AT_REMOVEDIR);
	if (t->copy_tmp >= 0)
		close(t->copy_tmp);
	t->copy_fd = t->copy_tmp = -1;
	t->copy_dir[0] = '\0';
}
