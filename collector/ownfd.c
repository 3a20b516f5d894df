/* Checking that a descriptor still names the file the collector opened. */
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
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
	own_fd_adopt(o, fd < 0 ? fd : move_high(fd));
}

void own_fd_adopt(struct own_fd *o, int fd)
{
	struct stat st;

	o->fd = -1;
	if (fd < 0)
		return;
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

/*
 * Linux has no "close this number only if it still holds that file": a
 * check and a close are two steps, and in a table shared with the host a
 * host thread could close our number and open a file of its own there in
 * between, which we would then close. No flag tells (FD_CLOEXEC is the
 * only per-descriptor flag, and the host's files may carry it), and
 * dup3, close_range and F_DUPFD all act on whatever the number holds. So
 * the collector thread does not share: own_fd_private_table gives it a
 * table of its own, which no other thread can change, and there the
 * check and the close cannot be separated by anyone. The remaining
 * closes in the host's table happen where no host thread runs: in a
 * forked child before it returns from fork(), and in the constructor of
 * a launched or preloaded program, before main() (the launching qsptop's
 * socket, and the move of the wake pipe high). Loaded into a running
 * process, the wake pipe stays where pipe2() put it (own_fd_adopt).
 */
void own_fd_close(struct own_fd *o)
{
	if (own_fd_valid(o))
		close(o->fd);
	o->fd = -1;
}

/* Close every number from lo to hi (in our own table only). */
static void close_numbers(unsigned lo, unsigned hi)
{
	if (lo > hi || close_range(lo, hi, 0) == 0)
		return;
	/* Before Linux 5.9: one at a time, up to the limit. */
	for (unsigned fd = lo; fd <= hi && fd < HIGH_FD_MAX * 64u; fd++)
		close((int)fd);
}

/* The valid descriptors of keep, ascending, in out; their count. */
static int kept_numbers(struct own_fd *const keep[], int n, int *out)
{
	int count = 0;

	for (int i = 0; i < n; i++) {
		int at = count++;

		if (!own_fd_valid(keep[i])) {
			count--;
			continue;
		}
		while (at > 0 && out[at - 1] > keep[i]->fd) {
			out[at] = out[at - 1];
			at--;
		}
		out[at] = keep[i]->fd;
	}
	return count;
}

/*
 * The new table starts as a copy of the host's, references to the host's
 * files included: they are closed at once, so that no file of the host's
 * stays open because of us (a pipe's reader would wait for an end of file
 * we held back). close_range with CLOSE_RANGE_UNSHARE does the unsharing
 * and leaves the numbers below our lowest uncopied (Linux 6.11 on), so
 * that most of the host's files are never touched at all; plain unshare
 * is the fallback.
 */
bool own_fd_private_table(struct own_fd *const keep[], int n)
{
	int fds[8], count;
	unsigned lo = 0;

	if (n > (int)(sizeof(fds) / sizeof(fds[0])))
		return false;
	count = kept_numbers(keep, n, fds);
	if ((count == 0 || fds[0] == 0 ||
	     close_range(0, (unsigned)fds[0] - 1, CLOSE_RANGE_UNSHARE) < 0) &&
	    unshare(CLONE_FILES) < 0)
		return false;
	/* Ours now: what the host put at one of our numbers goes too. */
	count = kept_numbers(keep, n, fds);
	for (int i = 0; i < count; i++) {
		if ((unsigned)fds[i] > lo)
			close_numbers(lo, (unsigned)fds[i] - 1);
		lo = (unsigned)fds[i] + 1;
	}
	close_numbers(lo, ~0u);
	return true;
}
