/*
 * Separate debuginfo fetched by build id from the debuginfod servers the
 * user named in DEBUGINFOD_URLS. The fetches run in a helper process of
 * qsptop's own, one at a time, each build id once: nothing in qsptop
 * waits on the network, and quitting only has to kill the helper.
 */
#ifndef QSPTOP_FETCH_H
#define QSPTOP_FETCH_H

#include <stddef.h>
#include <stdint.h>

struct fetch;

/*
 * Take DEBUGINFOD_URLS out of the environment, so that libdw in this
 * process never asks a server itself, and keep it for the helper.
 * Call after any command was launched: it keeps its environment.
 */
struct fetch *fetch_new(void);

/* Kill the helper, if any, and free everything. */
void fetch_free(struct fetch *f);

/*
 * Open the debuginfo of a build id that debuginfod fetched before (in its
 * cache): the fd, its path in *path (malloc'd), or -1.
 */
int fetch_open_cached(const struct fetch *f, const uint8_t *id, size_t len,
		      char **path);

/*
 * Ask for the debuginfo of a build id, unless it was asked for before, no
 * server is named or fetching has stopped.
 */
void fetch_request(struct fetch *f, const uint8_t *id, size_t len);

/*
 * Read what the helper said, without waiting longer than wait_ms: call
 * landed for each build id whose debuginfo is now in the cache. Stops
 * fetching when a server does not answer in time.
 */
void fetch_poll(struct fetch *f, int wait_ms,
		void (*landed)(void *ctx, const uint8_t *id, size_t len),
		void *ctx);

/* How many build ids are asked for and not answered yet. */
size_t fetch_busy(const struct fetch *f);

/*
 * Stop fetching now: the helper is killed, the fetches under way count as
 * not answered.
 */
void fetch_stop(struct fetch *f);

/* Why fetching stopped, in one line for the user; NULL while it goes on. */
const char *fetch_failure(const struct fetch *f);

#endif
