/* Everything one run of qsptop holds: options, connection, model, symbols. */
#ifndef QSPTOP_APP_H
#define QSPTOP_APP_H

#include "attach.h"
#include "client.h"
#include "model.h"
#include "options.h"
#include "symbols.h"

struct app {
	struct options opt;
	struct attach attach;
	struct client client;
	struct model *model;
	struct symbols *symbols;
	struct model_query query;	/* current sort, coalesce, filter */
};

/* Seconds the counts cover: from the collector's start (or reset) to now. */
double app_elapsed_s(const struct app *a);

/* "running", "exited" or "collector lost". */
const char *app_state_name(const struct app *a);

#endif
