/*
 * Where a target's collector listens: /tmp/qsptop-UID/PID-NS.sock, in a
 * directory private to the target's user (0700), the socket itself 0600.
 * PID is the target's PID inside its own PID namespace and NS that
 * namespace's inode number, so two processes with one PID in two
 * namespaces that share /tmp never take each other's socket.
 */
#ifndef QSPTOP_SOCKPATH_H
#define QSPTOP_SOCKPATH_H

#include <stddef.h>
#include <sys/types.h>

/* The socket directory of a user; -1 if it does not fit. */
int sockpath_dir(char *out, size_t size, uid_t uid);

/* The calling process's own socket; -1 if it does not fit. */
int sockpath_self(char *out, size_t size);

/*
 * The socket of process pid (a PID in the caller's namespace), whose
 * collector runs as uid; -1 if pid is gone or the path does not fit.
 */
int sockpath_target(char *out, size_t size, uid_t uid, pid_t pid);

/*
 * Create dir 0700 if missing and check it is a real directory owned by the
 * caller with no group or other access; -1 (errno set) when it is not.
 */
int sockpath_make_private(const char *dir);

enum { SOCKPATH_ABSENT, SOCKPATH_STALE, SOCKPATH_LIVE };

/*
 * Whether a socket path is absent, stale (connecting to it is refused:
 * its process died without removing it) or live. A socket bound but not
 * yet listening looks stale too: only its own process may remove it.
 */
int sockpath_state(const char *path);

#endif
