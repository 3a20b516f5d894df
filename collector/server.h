/* The collector thread: socket, sessions, periodic scans, exit flush. */
#ifndef QSPTOP_SERVER_H
#define QSPTOP_SERVER_H

/* Set up the socket (and the launching qsptop's session when fd >= 0). */
int server_prepare(int launch_fd);

/* The collector thread's body. */
void *server_main(void *arg);

/*
 * Wait at most timeout_ms until the launching qsptop said which code is
 * lock wrappers (or left).
 */
void server_wait_wrappers(int timeout_ms);

/* Ask the thread for the final flush and wait for it, at most timeout_ms. */
void server_finish(int timeout_ms);

/* Drop the parent's sessions and socket in a forked child. */
void server_forget(void);

#endif
