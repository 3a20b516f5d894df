/* Snapshots written to files: JSON (docs/json-schema.md), folded stacks. */
#ifndef QSPTOP_EXPORT_H
#define QSPTOP_EXPORT_H

#include <stddef.h>

#include "app.h"

/* Check early that path can be written ("-" is stdout); -1 with err. */
int export_check_path(const char *path, char *err, size_t errlen);

/*
 * Write the rows q selects as a JSON snapshot to path ("-" = stdout). A file
 * is replaced atomically (outfile_replace()): on any error the old one
 * stays and err says why.
 */
int export_json(const struct app *a, const struct model_query *q,
		const char *path, char *err, size_t errlen);

/* The JSON snapshot (malloc'ed) of the rows q selects. */
char *export_table_json(const struct app *a, const struct model_query *q);

/* The JSON snapshot (malloc'ed) of rows and stats already built. */
char *export_rows_json(const struct app *a, const struct model_query *q,
		       const struct view_row *rows, size_t n,
		       const struct model_stats *st);

/*
 * Write the waited-on stacks of the rows q selects in folded form, one line
 * per (row, stack) with a wait: "root;...;caller;site_fn;TYPE@0xOBJECT NS".
 * Written like export_json().
 */
int export_folded(const struct app *a, const struct model_query *q,
		  const char *path, char *err, size_t errlen);

/*
 * Write the caused wait of the rows q selects in folded form, by holder
 * stack (where the holds were released while others waited), one line
 * per stack, the lock as the leaf; -1 with err on failure.
 */
int export_folded_holders(const struct app *a, const struct model_query *q,
			  const char *path, char *err, size_t errlen);

/* The folded stacks (malloc'ed) of the rows q selects. */
char *export_table_folded(const struct app *a, const struct model_query *q);

/* The folded stacks (malloc'ed) of rows already built. */
char *export_rows_folded(const struct app *a, const struct model_query *q,
			 const struct view_row *rows, size_t n);

#endif
