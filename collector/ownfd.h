/*
 * File descriptors the collector opened inside someone else's process. The
 * host may close them (daemons close every fd at start-up) and reuse the
 * numbers for its own files; an fd is used only while it still names the
 * file we opened, checked right before every use, and one that changed is
 * forgotten, never closed. Our descriptors sit high, where a host that
 * closes everything and opens again does not land.
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

/* Take fd (which we just opened) as ours: moved high, close-on-exec. */
void own_fd_take(struct own_fd *o, int fd);

/* Whether o still names our file; forgets it when it does not. */
bool own_fd_valid(struct own_fd *o);

/* Close o if it is still ours, and forget it either way. */
void own_fd_close(struct own_fd *o);

#endif
