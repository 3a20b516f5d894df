/* Everything one run of qsptop holds: options, connection, model, symbols. */
#ifndef QSPTOP_APP_H
#define QSPTOP_APP_H

#include "attach.h"
#include "client.h"
#include "model.h"
#include "options.h"
#include "rawfutex.h"
#include "role.h"
#include "symbols.h"
#include "tasks.h"
#include "wrappers.h"

struct app {
	struct options opt;
	struct attach attach;
	struct client client;
	struct model *model;
	struct symbols *symbols;
	struct wrappers *wrappers;	/* built-in and --wrapper patterns */
	struct rawfutex *rawfutex;	/* NULL until the first sample */
	struct tasks *tasks;		/* thread names, for the details and exports */
	struct model_query query;	/* current sort, coalesce, filter */
	uint64_t reset_ns;		/* collector clock at the last reset */
	size_t wrapper_modules;		/* modules known when ranges were sent */
	unsigned wrapper_generation;	/* symbols_generation() then */
	bool wrappers_sent;		/* the collector knows our wrappers */
	struct role_rules *roles;	/* --idle, --lock, the config file's;
					   NULL until the program is known */
	unsigned roles_gen;		/* bumped when rules or names change */
	unsigned roles_symbols;		/* symbols_generation() then */
	char roles_error[512];			/* the config file's, until taken */
	bool roles_bad;			/* it is malformed: never written */
	bool child_reaped;		/* the launched command has ended */
	int child_status;		/* its wait status, once reaped */
};

/* Seconds the counts cover: from the collector's start (or reset) to now. */
double app_elapsed_s(const struct app *a);

/*
 * Tell the collector which code is lock wrappers when that may have
 * changed (modules were added, debuginfo arrived). Call after each read.
 */
void app_sync_wrappers(struct app *a);

/*
 * While the target runs, look (at most once a second) for threads in
 * futex waits that no hook sees; the model keeps how many were seen.
 * Call after each read.
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

/* Count from now on: a new baseline, never touching the target. */
void app_reset(struct app *a);

/* "running", "exited" or "collector lost". */
const char *app_state_name(const struct app *a);

/*
 * The state with detail and how qsptop attached: "running (injected)",
 * "exited with status 3 (launched)", "killed by SIGSEGV (launched)".
 */
void app_state_text(const struct app *a, char *buf, size_t size);

/* The model's totals, with no thread live once the target is gone. */
void app_stats(const struct app *a, struct model_stats *st);

#endif
