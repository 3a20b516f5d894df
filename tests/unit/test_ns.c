/*
 * Opening a target's files beneath its root (a temporary directory
 * stands for it): regular files only, without blocking, and no path
 * leads out of it, through "..", an absolute link or one through /proc.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../../tui/ns.h"
#include "check.h"

static char root_path[] = "/tmp/qsptop-ns-XXXXXX";

/* root_path/name, in a static buffer. */
static const char *at(const char *name)
{
	static char path[256];

	snprintf(path, sizeof(path), "%s/%s", root_path, name);
	return path;
}

/* ns_open_file(root, path): the descriptor's flags, or -1 and why. */
static int open_in(int root, const char *path, char *why, size_t size)
{
	int fd = ns_open_file(root, path, why, size), flags = -1;

	if (fd >= 0) {
		flags = fcntl(fd, F_GETFL);
		close(fd);
	}
	return flags;
}

/* A regular file opens, read-only and non-blocking; others are refused. */
static void test_kinds(int root)
{
	char why[256] = "";
	int flags;

	flags = open_in(root, "/lib.so", why, sizeof(why));
	CHECK(flags >= 0 && (flags & O_ACCMODE) == O_RDONLY &&
	      (flags & O_NONBLOCK), "a regular file opens read-only, "
	      "non-blocking: flags %#x (%s)", (unsigned)flags, why);
	flags = open_in(root, "/fifo", why, sizeof(why));
	CHECK(flags < 0 && strcmp(why, "/fifo is not a regular file") == 0,
	      "a FIFO is refused without blocking: \"%s\"", why);
	flags = open_in(root, "/dir", why, sizeof(why));
	CHECK(flags < 0 && strstr(why, "is not a regular file"),
	      "a directory is refused: \"%s\"", why);
	if (access(at("null"), F_OK) != 0) {
		SKIP("a device: mknod needs root");
		return;
	}
	flags = open_in(root, "/null", why, sizeof(why));
	CHECK(flags < 0 && strstr(why, "is not a regular file"),
	      "a device is refused: \"%s\"", why);
}

/* Links and ".." resolve inside the root, as the target would see them. */
static void test_links(int root)
{
	char why[256] = "";
	int flags;

	flags = open_in(root, "/relative", why, sizeof(why));
	CHECK(flags >= 0, "a relative link inside the root is followed (%s)",
	      why);
	flags = open_in(root, "/absolute", why, sizeof(why));
	CHECK(flags >= 0, "an absolute link resolves against the root, to "
	      "its lib.so (%s)", why);
	flags = open_in(root, "/outside", why, sizeof(why));
	CHECK(flags < 0 && errno == ENOENT, "a link to the host's "
	      "/etc/passwd names nothing inside the root: \"%s\"", why);
	flags = open_in(root, "/../../../etc/passwd", why, sizeof(why));
	CHECK(flags < 0 && errno == ENOENT, "\"..\" stops at the root: "
	      "\"%s\"", why);
	flags = open_in(root, "/magic", why, sizeof(why));
	CHECK(flags < 0 && errno == ENOENT, "a link through /proc/self/root "
	      "names the root's /proc, not ours: \"%s\"", why);
}

int main(void)
{
	int root, fd;

	if (mkdtemp(root_path) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	fd = open(at("lib.so"), O_WRONLY | O_CREAT, 0644);
	CHECK(fd >= 0 && write(fd, "x", 1) == 1, "lib.so written");
	if (fd >= 0)
		close(fd);
	CHECK(mkfifo(at("fifo"), 0644) == 0 && mkdir(at("dir"), 0755) == 0 &&
	      symlink("lib.so", at("relative")) == 0 &&
	      symlink("/lib.so", at("absolute")) == 0 &&
	      symlink("/etc/passwd", at("outside")) == 0 &&
	      symlink("/proc/self/root/etc/passwd", at("magic")) == 0,
	      "the files of the root made");
	mknod(at("null"), S_IFCHR | 0666, makedev(1, 3));
	root = open(root_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	test_kinds(root);
	test_links(root);
	close(root);
	for (const char *const *n = (const char *const[]){ "lib.so", "fifo",
		"relative", "absolute", "outside", "null", "magic", NULL };
	     *n; n++)
		unlink(at(*n));
	rmdir(at("dir"));
	rmdir(root_path);
	return check_summary();
}
