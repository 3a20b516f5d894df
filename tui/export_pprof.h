/* pprof profiles of the table's rows: --pprof, the P key, /debug/pprof/mutex. */
#ifndef QSPTOP_EXPORT_PPROF_H
#define QSPTOP_EXPORT_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "app.h"
#include "pprof.h"

/*
 * Add to p the samples of line r (a line of a table built with q) whose
 * stacks are d's: one per stack, contentions and delay its waits; the
 * line's acquisitions on its waits not unwound, or on a sample of its
 * call site alone.
 */
void export_pprof_line(struct pprof *p, const struct app *a,
		       const struct view_row *r, const struct stack_view *stacks,
		       size_t n_stacks);

/*
 * Add to p the caused wait of line r (holders): at each of its n holder
 * stacks h the share they carry, or all of it on its call site alone
 * when none was captured.
 */
void export_pprof_caused(struct pprof *p, const struct app *a,
			 const struct view_row *r, const struct holder_view *h,
			 size_t n);

/* The gzip'd profile (malloc'ed, *len bytes) of the rows q selects. */
uint8_t *export_table_pprof(const struct app *a, const struct model_query *q,
			    size_t *len);

/*
 * Write the profile of the rows q selects to path ("-" = stdout), replaced
 * atomically as export_json() does; -1 with err on failure.
 */
int export_pprof(const struct app *a, const struct model_query *q,
		 const char *path, char *err, size_t errlen);

#endif
