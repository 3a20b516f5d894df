/*
 * A target's namespaces seen from qsptop's: whether it has its own, the
 * directory it calls "/", and its user and thread IDs as it knows them.
 */
#ifndef QSPTOP_NS_H
#define QSPTOP_NS_H

#include <stdbool.h>
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

/* uid (one of ours) as the process's user namespace knows it; -1: none. */
long ns_uid_inside(pid_t pid, uid_t uid);

#endif
