/* Call sites named for the table: function+offset, file:line, chains. */
#ifndef QSPTOP_SITE_H
#define QSPTOP_SITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols.h"

/*
 * The table's forms of a call site. One whose lock call was inlined reads
 * "INNER inlined in OUTER": INNER is the inlined function that makes the
 * call, OUTER the function holding the address, which keeps its +0xoff;
 * the functions in between, and OUTER's line in the both form, are left
 * to site_chain() to keep the column short.
 */

/*
 * "function+0xoff", "module+0xoff" or "0xaddr";
 * "hold inlined in caller+0x24" when inlined.
 */
void site_function(char *buf, size_t size, struct symbols *s, uint64_t site);

/*
 * "file:line", falling back to site_function();
 * "blame.c:38 inlined in blame.c:56" when inlined.
 */
void site_line(char *buf, size_t size, struct symbols *s, uint64_t site);

/*
 * "function+0xoff (file:line)", falling back to site_function();
 * "hold (blame.c:38) inlined in caller+0x24" when inlined.
 */
void site_both(char *buf, size_t size, struct symbols *s, uint64_t site);

/*
 * site_both() (line) or site_function() in width columns: what
 * follows the function's name (the inlined function's, when the call was
 * inlined) gives way first, "+0xoff" then "(file:line)", then the name
 * shortens from the inside (cxxname.h), and is cut only when even its
 * bare form is too wide. A width of 0 or less means no limit.
 */
void site_fit(char *buf, size_t size, struct symbols *s, uint64_t site,
	      bool line, int width);

/*
 * The whole chain, "??" for what is unknown: "hold (blame.c:38) inlined
 * in caller+0x24 (blame.c:56)", or "caller+0x24 (blame.c:56)".
 */
void site_chain(char *buf, size_t size, struct symbols *s, uint64_t site);

/*
 * Everything a filter may match: function, file:line, each function the
 * call was inlined in with its file:line, and the module.
 */
const char *site_label(void *symbols, uint64_t site);

#endif
