/* Checking that a descriptor still names the file the collector opened. */
#include <sys/stat.h>
#include <unistd.h>

#include "ownfd.h"

void own_fd_set(struct own_fd *o, int fd)
{
	struct stat st;

	o->fd = -1;
	if (fd >= 0 && fstat(fd, &st) == 0) {
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
