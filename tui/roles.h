/*
 * The roles of a run's rows (role.h), decided as rows come and change:
 * the user's choices (--idle, --lock, the live screen's R, kept per
 * program in $XDG_CONFIG_HOME/qsptop/roles), built-in rules, the
 * heuristic, the type.
 */
#ifndef QSPTOP_ROLES_H
#define QSPTOP_ROLES_H

#include <stdbool.h>
#include <stddef.h>

#include "model.h"

struct app;

/* A user rule from the command line. */
struct role_option {
	const char *glob;
	enum role role;
};

/* Decide the roles of new and changed rows. Call after each read. */
void roles_update(struct app *a);

/*
 * Flip the role of line r's call site, by its function's name, for good:
 * the choice is added to the config file for this program. A message for
 * the status line in msg; false when it could not be done.
 */
bool roles_flip(struct app *a, const struct view_row *r, char *msg,
		size_t size);

/* The config file's error, one line, once; NULL when there is none. */
const char *roles_take_error(struct app *a);

/* Drop what roles_update() built (the run watches another program). */
void roles_free(struct app *a);

#endif
