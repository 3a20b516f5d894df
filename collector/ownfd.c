/* Checking that a descriptor still names the file the collector opened. */
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ownfd.h"

/* Below the limit, but high: the host's close-all-then-open reuses low numbers. */
#define HIGH_FD_MAX 1024
#define HIGH_FD_ROOM 64

/* Move fd to a high free number (close-on-exec); fd itself when none is. */
static int move_high(int fd)
{
	struct rlimit rl;
	rlim_t top = HIGH_FD_MAX;
	int high;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < top)
		top = rl.rlim_cur;
	if (top <= HIGH_FD_ROOM + 3 || fd >= (int)(top - HIGH_FD_ROOM))
		return fd;
	high = fcntl(fd, F_DUPFD_CLOEXEC, (int)(top - HIGH_FD_ROOM));
	if (high < 0)
		return fd;
	close(fd);
	return high;
}

void own_fd_take(struct own_fd *o, int fd)
{
	struct stat st;

	o->fd = -1;
	if (fd < 0)
		return;
	fd = move_high(fd);
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	if (fstat(fd, &st) == 0) {
		o->fd = fd;
		o->dev = st.st_dev;
		o->ino = st.st_ino;
	}
}

bool own_fd_valid(struct own_fd *o)
{
	struct stat st;

	if (o->fd < 0)
		return false;
	if (fstat(o->fd, &st) == 0 && st.st_dev == o->dev && st.st_ino == o->ino)
		return true;
	o->fd = -1;
	return false;
}

void own_fd_close(struct own_fd *o)
{
	if (own_fd_valid(o))
		close(o->fd);
	o->fd = -1;
}
