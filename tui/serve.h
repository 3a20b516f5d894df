/*
 * The HTTP endpoint of --listen (libmicrohttpd, in a thread of its own).
 * Its thread never reads the model: a request waits (its connection
 * suspended) until the main loop answers it in serve_answer(), between
 * two reads of the collectors, so every answer is built from one
 * consistent state by the thread that owns it.
 */
#ifndef QSPTOP_SERVE_H
#define QSPTOP_SERVE_H

#include <stddef.h>
#include <stdint.h>

/* Build the answer to a GET of path: body (malloc'ed), its length, its type; HTTP status. */
typedef int (*serve_fn)(void *ctx, const char *path, uint8_t **body,
			size_t *len, const char **content_type);

struct serve;

/*
 * Listen on [HOST:]PORT (HOST default 127.0.0.1; PORT 0 picks one) and
 * start serving; NULL with err (one line) when it cannot.
 */
struct serve *serve_start(const char *listen, char *err, size_t errlen);

/* The address served, "127.0.0.1:9464". */
const char *serve_address(const struct serve *s);

/* Answer the requests waiting, through fn (in the caller's thread). */
void serve_answer(struct serve *s, serve_fn fn, void *ctx);

/* Answer what still waits with 503, stop the thread, close the socket. */
void serve_stop(struct serve *s);

#endif
