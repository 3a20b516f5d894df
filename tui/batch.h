/* The non-interactive output: the table printed every interval (top -b). */
#ifndef QSPTOP_BATCH_H
#define QSPTOP_BATCH_H

#include <stdio.h>

#include "app.h"

/* Print the header and the table (its first -N rows) as they are now. */
void batch_print(FILE *out, const struct app *a);

#endif
