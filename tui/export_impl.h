/* What the JSON and the folded exports share: the rows, and writing. */
#ifndef QSPTOP_EXPORT_IMPL_H
#define QSPTOP_EXPORT_IMPL_H

#include <stddef.h>

#include "app.h"

/* How long a file export may wait for names still to come. */
#define EXPORT_WAIT_MS 2000
/* Holder stacks of a line in the snapshot, at most. */
#define HOLDER_STACKS_MAX 64

/*
 * The rows an export writes, with the stacks and threads of all of them
 * found in one pass: rows built already, or a table built a part at a
 * time (a big table whole is hundreds of megabytes of rows).
 */
struct source {
	const struct view_row *rows;	/* all of them, or NULL */
	struct model_table *table;
	size_t n;
	struct view_row *part;		/* lines [from, from + held) */
	size_t from, held;
	struct drill drill;
};

/* The rows already built, with their stacks and threads. */
void export_source_rows(struct source *s, const struct app *a,
			const struct model_query *q,
			const struct view_row *rows, size_t n);

/* The rows of the view of q as it is now, built a part at a time. */
void export_source_table(struct source *s, const struct app *a,
			 const struct model_query *q);

/* Row i; rows are asked for in order. */
const struct view_row *export_source_row(struct source *s, size_t i);

void export_source_done(struct source *s);

/* Write text to path (replaced whole), or to stdout for "-"; -1 with err. */
int export_write_text(const char *path, const char *text, char *err,
		      size_t errlen);

#endif
