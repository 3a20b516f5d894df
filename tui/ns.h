/*
 * A target's namespaces seen from qsptop's: whether it has its own, the
 * directory it calls "/", and its user and thread IDs as it knows them.
 */
#ifndef QSPTOP_NS_H
#define QSPTOP_NS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The process shares our namespace of kind ns ("mnt", "user", "pid"); true
 * when /proc cannot tell (another user's process): its files then look
 * the same from here, as they always did.
 */
bool ns_shared(pid_t pid, const char *ns);

/*
 * An O_PATH descriptor of the process's root directory (/proc/PID/root);
 * ours when we may not look there and it shares our mount namespace (a
 * process of another user): its files look the same from here. -1 with
 * errno.
 */
int ns_open_root(pid_t pid);

/*
 * A path below root (a descriptor from ns_open_root), resolved as the
 * process would: "..", symbolic links and absolute ones stay inside its
 * root. An O_PATH descriptor of the file itself, even a symbolic link
 * (not followed), or -1 with errno.
 */
int ns_open_path(int root, const char *path);

/*
 * Open a file of the process's for reading, beneath root (a descriptor
 * from ns_open_root) as ns_open_path resolves it, but following a last
 * symbolic link (inside the root): only a regular file, opened with
 * O_NONBLOCK, O_CLOEXEC and O_NOCTTY after fstat said so (a FIFO, a
 * device or a socket is never opened). -1 with errno and why filled in
 * ("PATH is not a regular file", or errno's text).
 */
int ns_open_file(int root, const char *path, char *why, size_t size);

/* The same, beneath the root of process pid (0: our own root). */
int ns_open_file_of(pid_t pid, const char *path, char *why, size_t size);

/*
 * The same checks and open for a file we reach by a path of our own (the
 * target's /proc/PID/map_files/START-END: the file it mapped itself).
 */
int ns_open_mapped(const char *path, char *why, size_t size);

/* uid (one of ours) as the process's user namespace knows it; -1: none. */
long ns_uid_inside(pid_t pid, uid_t uid);

#endif
