/* Getting a connection to a target's collector: launch or connect. */
#ifndef QSPTOP_ATTACH_H
#define QSPTOP_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct attach {
	int fd;			/* connected to the collector */
	pid_t pid;
	pid_t child;		/* the launched command, or 0 */
	const char *mode;	/* "launched", "connected" or "injected" */
};

/*
 * Start argv with the collector preloaded, connected through an inherited
 * socket so that nothing it does is missed. With output_fd >= 0 the
 * command's stdout and stderr go there and its stdin is /dev/null (the
 * screen is ours); with output_fd 2 only its stdout goes to our stderr
 * (our stdout carries an export). Exits with 127 and a one-line error if the command
 * cannot be run.
 */
void attach_launch(struct attach *a, char **argv, unsigned interval_ms,
		   int output_fd);

/*
 * Connect to the collector of a running process, loading it into the
 * process with ptrace first when it has none (under a seccomp filter only
 * with force). Exits with a one-line error when that cannot be done; the
 * process is left running.
 */
void attach_connect(struct attach *a, pid_t pid, unsigned interval_ms,
		    bool force);

/*
 * attach_connect(), but a failure returns -1 with its one line in err
 * instead of ending qsptop; a refused socket leaves nothing open.
 */
int attach_try_connect(struct attach *a, pid_t pid, unsigned interval_ms,
		       bool force, char *err, size_t size);

/*
 * Whether the last attach_try_connect() failed in loading the collector
 * into a process fit for it (no thread safe to borrow, the loader's lock
 * held, a timeout), not in finding, checking or reaching the process.
 */
bool attach_injection_failed(void);

/*
 * Make pid's collector listen, waking or loading it as attach_connect()
 * would, without greeting it (a connection opened to check is closed
 * unused). Returns 0, or -1 with its one line in err. What a helper
 * process does, so that the wait for a thread to borrow (up to 3 s) does
 * not hold the table.
 */
int attach_ready(pid_t pid, bool force, char *err, size_t size);

/*
 * The memory cap of the collector in the target, in MiB (0: its default):
 * handed down to a launched command, and asked of any collector we greet.
 */
void attach_set_memory_cap(unsigned mb);

/* Ask every collector connected from now on to track holders. */
void attach_set_holders(bool on);

/*
 * Whether a launched command keeps the collector across exec (default
 * yes): its descendants get it too, but dormant, as forked children.
 */
void attach_set_follow_exec(bool follow);

/*
 * After the launched command's connection closed while it still runs (it
 * exec'd), connect to the collector of the program it runs now, waiting
 * up to timeout_ms for it to listen. Returns the new a->fd, or -1.
 */
int attach_reconnect(struct attach *a, unsigned interval_ms, int timeout_ms);

/* Remove our user's sockets left behind by killed processes (stale ones). */
void attach_sweep_sockets(void);

/* Where the collector library is: beside the executable, else installed. */
const char *attach_library_path(void);

#endif
