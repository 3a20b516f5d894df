/*
 * Where a target's collector listens: /tmp/qsptop-UID/PID.sock, in a
 * directory private to the target's user (0700), the socket itself 0600.
 */
#ifndef QSPTOP_SOCKPATH_H
#define QSPTOP_SOCKPATH_H

#include <stddef.h>
#include <sys/types.h>

/* The socket directory of a user; -1 if it does not fit. */
int sockpath_dir(char *out, size_t size, uid_t uid);

/* The socket of a process; -1 if it does not fit. */
int sockpath_socket(char *out, size_t size, uid_t uid, pid_t pid);

/*
 * Create dir 0700 if missing and check it is a real directory owned by the
 * caller with no group or other access; -1 (errno set) when it is not.
 */
int sockpath_make_private(const char *dir);

#endif
