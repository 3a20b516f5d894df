/*
 * The code a call site names, the same in every process of a table: the
 * site (tagged, procs.h) of the first process seen running that module
 * at that offset. Processes forked from one another, or running the same
 * program, then join their rows of one code (model_query.code).
 */
#ifndef QSPTOP_CODES_H
#define QSPTOP_CODES_H

#include <stdint.h>

#include "symbols.h"

struct codes;

struct codes *codes_new(struct symbols *s);
void codes_free(struct codes *c);

/* The first site seen of site's module and offset; site outside modules. */
uint64_t codes_site(struct codes *c, uint64_t site);

#endif
