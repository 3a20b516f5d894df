/* The collector thread: socket, sessions, periodic scans, exit flush. */
#ifndef QSPTOP_SERVER_H
#define QSPTOP_SERVER_H

#include <stdbool.h>

/*
 * Set up the wake pipe (and the launching qsptop's session when fd >= 0);
 * early: before main(), no host thread runs yet.
 */
int server_prepare(int launch_fd, bool early);

/* The collector thread's body. */
void *server_main(void *arg);

/*
 * Wait at most timeout_ms until the launching qsptop said which code is
 * lock wrappers (or left).
 */
void server_wait_wrappers(int timeout_ms);

/*
 * Launched, once the wait for wrappers is over (still before main()):
 * close the host's copy of qsptop's socket if the thread took its own.
 */
void server_release_launch(void);

/* Ask the thread for the final flush and wait for it, at most timeout_ms. */
void server_finish(int timeout_ms);

/* Drop the parent's sessions and socket in a forked child. */
void server_forget(void);

#endif
