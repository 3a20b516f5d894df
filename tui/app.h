/* Everything one run of qsptop holds: options, connection, model, symbols. */
#ifndef QSPTOP_APP_H
#define QSPTOP_APP_H

#include <poll.h>

#include "attach.h"
#include "codes.h"
#include "client.h"
#include "model.h"
#include "options.h"
#include "role.h"
#include "stuck.h"
#include "symbols.h"
#include "tasks.h"
#include "unseen.h"
#include "autowrap.h"
#include "wrappers.h"

/* A child whose collector a helper process of ours readies. */
struct readying {
	pid_t pid, parent;
	pid_t helper;
};

/* A process watched besides the first (-p's list). */
struct peer {
	struct attach attach;
	struct client client;
};

struct app {
	struct options opt;
	struct attach attach;
	struct client client;		/* the first process: -p's first PID,
					   or the launched command */
	struct peer *peers;		/* the others, in the order found */
	size_t npeers;
	struct client_ids ids;		/* the model's ids, for every client */
	unsigned next_proc;		/* the next process index (procs.h) */
	pid_t *unwatched;		/* descendants that could not be watched */
	size_t nunwatched;
	struct readying *readying;	/* descendants being readied */
	size_t nreadying;
	long children_ms;		/* when descendants were last looked for */
	struct model *model;
	struct symbols *symbols;
	struct wrappers *wrappers;	/* built-in and --wrapper patterns */
	struct autowrap *autowrap;	/* wrappers found; NULL when not looked for */
	struct unseen *unseen;		/* NULL until the first sample */
	struct tasks *tasks;		/* thread names, for the details and exports */
	struct stuck *stuck;		/* the threads view; NULL until needed */
	int64_t stuck_look_ms;		/* when app_watch_stuck() last looked */
	char outside[512];		/* why only the threads view is shown
					   (--no-inject, loading failed); "" */
	struct codes *codes;		/* sites of one code across processes */
	struct model_query query;	/* current sort, coalesce, filter */
	uint64_t reset_ns;		/* collector clock at the last reset */
	size_t wrapper_modules;		/* modules known when ranges were sent */
	unsigned wrapper_generation;	/* symbols_generation() then */
	bool wrappers_sent;		/* the collector knows our wrappers */
	size_t wrappers_found_sent;	/* of them, found from evidence */
	struct role_rules *roles;	/* --idle, --lock, the config file's;
					   NULL until the program is known */
	unsigned roles_gen;		/* bumped when rules or names change */
	unsigned roles_symbols;		/* symbols_generation() then */
	unsigned roles_swept;		/* roles_gen of the last look at every row */
	struct site_verdict *role_verdicts; /* roles.c's; NULL until needed */
	char roles_error[512];			/* the config file's, until taken */
	bool roles_bad;			/* it is malformed: never written */
	struct ledger *ledger;		/* counts over resets; NULL without --listen */
	struct serve *serve;		/* --listen's endpoint, or NULL */
	struct scrape *scrape;		/* what it serves */
	bool child_reaped;		/* the launched command has ended */
	int child_status;		/* its wait status, once reaped */
};

/*
 * Start reading the collector on a->attach.fd as a->client, a process of
 * its own in the table (the first, or the program the launched command
 * exec'd).
 */
void app_connect_first(struct app *a);

/* Add a process watched through at (connected), its counts in the table. */
void app_add_peer(struct app *a, const struct attach *at);

/* How many processes the table shows: 1 + a->npeers. */
size_t app_processes(const struct app *a);

/* The connection of process i (0: a->client; 0 .. app_processes() - 1). */
struct client *app_client(struct app *a, size_t i);
const struct client *app_client_const(const struct app *a, size_t i);

/* "pid 12", "pids 12,34,56", or past four "pid 12 +7": the processes. */
void app_pid_text(const struct app *a, char *buf, size_t size);

/* The PID of process i. */
pid_t app_pid(const struct app *a, size_t i);

/* Fill pfd with the descriptors of the connections open; how many. */
size_t app_pollfds(const struct app *a, struct pollfd *pfd, size_t max);

/* Whether a connection holds frames already read: poll without waiting. */
bool app_buffered(const struct app *a);

/*
 * Wait up to timeout_ms for any collector and apply what they sent, up to
 * the end of an interval: client_poll() of them all. 1 when the table's
 * interval closed, 0 when not, -1 once every connection is over.
 */
int app_poll(struct app *a, int timeout_ms);

/*
 * With --children, watch the children of the processes watched that are
 * not yet (looked for every half interval, within 100 ms and 1 s): each
 * joins the table from now on, its dormant collector woken (or loaded)
 * as -p does, by a helper process, so that the table goes on meanwhile.
 * One that cannot be watched is said once on stderr unless quiet, and
 * not tried again.
 */
void app_find_children(struct app *a, bool quiet);

/* Tell every collector still connected that we leave. */
void app_detach(struct app *a);

/* Close every connection and free the peers. */
void app_close(struct app *a);

/* Seconds the counts cover: from the collector's start (or reset) to now. */
double app_elapsed_s(const struct app *a);

/*
 * Tell the collector which code is lock wrappers when that may have
 * changed (modules were added, debuginfo arrived). Call after each read.
 */
void app_sync_wrappers(struct app *a);

/*
 * Track holders from now on, in every process watched and every one
 * found later (--holders does it from the start).
 */
void app_holders_on(struct app *a);

/*
 * While the target runs, look (at most once a second) for threads in
 * waits that no hook times; the model keeps which and how many were
 * seen. Call after each read.
 */
void app_probe_futex(struct app *a);

/*
 * Read the names of the threads the model saw wait for the first time,
 * while they live: a thread that ends keeps its name. Call after each
 * read.
 */
void app_name_threads(struct app *a);

/* The name of the target's thread tid, or NULL when it is not known. */
const char *app_thread_name(const struct app *a, uint32_t tid);

/* The wrappers, built in and --wrapper, resolved through a->symbols. */
void app_build_wrappers(struct app *a);

/*
 * The connection ended: when the launched command runs on (it exec'd
 * another program), connect to that program's collector and go on with
 * it. Returns whether qsptop watches it now.
 */
bool app_follow_exec(struct app *a);

/*
 * Join the processes' rows of one code and one object in one line, or
 * show each process's apart (the default): sets a->query.code.
 */
void app_join_processes(struct app *a, bool join);

/* Count from now on: a new baseline, never touching the target. */
void app_reset(struct app *a);

/* Process i's: "running", "exited" or "collector lost" (it runs on). */
const char *app_process_state(const struct app *a, size_t i);

/* "running", "exited" or "collector lost". */
const char *app_state_name(const struct app *a);

/*
 * The state with detail and how qsptop attached: "running (injected)",
 * "exited with status 3 (launched)", "killed by SIGSEGV (launched)".
 */
void app_state_text(const struct app *a, char *buf, size_t size);

/* "LOCK ORDER: 2" when pairs were taken in both orders, else NULL. */
const char *app_lock_order_text(const struct app *a, char *buf, size_t size);

/* The model's totals, with no thread live once the target is gone. */
void app_stats(const struct app *a, struct model_stats *st);

/* Add the collector's waits in progress to a sample of the threads view. */
void app_stuck_waits(const struct app *a, struct stuck *st);

/* Whether a wait in progress is on a lock and long: a thread stuck. */
bool app_stuck_lock_wait(const struct app *a, const struct model_wait *w);

/*
 * When threads look stuck on locks (long waits in progress, or no
 * acquisition while threads sit in lock calls no hook saw begin), look
 * at the threads from outside, every few seconds at most, as the
 * threads view does: the header then says DEADLOCK for a cycle.
 */
void app_watch_stuck(struct app *a);

#endif
