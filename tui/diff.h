/*
 * qsptop --diff OLD.json NEW.json: what grew or shrank between two
 * snapshots, a line per (type, call site, lock) by name, as a batch table
 * or (-j) as JSON (docs/json-schema.md, "Diff").
 */
#ifndef QSPTOP_DIFF_H
#define QSPTOP_DIFF_H

#include "options.h"

/* Compare the snapshots o names and print or write the result; exit status. */
int diff_run(const struct options *o);

#endif
