/*
 * File descriptors the collector opened inside someone else's process. The
 * collector thread keeps its own in a descriptor table of its own
 * (own_fd_private_table): the host's threads can neither see, close nor
 * reuse them, and a close of ours can only close ours. What has to stay
 * in the host's table (the wake pipe a host thread writes at exit) the
 * host may close (daemons close every fd at start-up) and reuse for its
 * own files: an fd is used only while it still names the file we opened,
 * checked right before every use, and one that changed is forgotten,
 * never closed. Our descriptors sit high, where a host that closes
 * everything and opens again does not land.
 */
#ifndef QSPTOP_OWNFD_H
#define QSPTOP_OWNFD_H

#include <stdbool.h>
#include <sys/types.h>

struct own_fd {
	int fd;			/* -1: none */
	dev_t dev;
	ino_t ino;
};

#define OWN_FD_NONE { -1, 0, 0 }

/*
 * Take fd (which we just opened) as ours: moved high, close-on-exec.
 * Moving closes the first number: only where no host thread runs (in our
 * own table, or before main()).
 */
void own_fd_take(struct own_fd *o, int fd);

/* Take fd as ours where it is (close-on-exec): nothing is closed. */
void own_fd_adopt(struct own_fd *o, int fd);

/* Whether o still names our file; forgets it when it does not. */
bool own_fd_valid(struct own_fd *o);

/*
 * Close o if it is still ours, and forget it either way. Exact in the
 * collector thread's own table; in the host's, only where no host thread
 * runs (see ownfd.c).
 */
void own_fd_close(struct own_fd *o);

/*
 * Give the calling thread a descriptor table of its own that holds only
 * the descriptors in keep (each checked there, and forgotten when it is
 * no longer ours): what it opens from then on is out of the host's reach.
 * False, the table still shared, when the kernel refuses (a seccomp
 * filter may).
 */
bool own_fd_private_table(struct own_fd *const keep[], int n);

#endif
