/*
 * Shortening C++ function names from the inside, so that the function's
 * own name is the last thing to go: parameter lists and template
 * arguments first ("pool<…>::checkout(…)"), then the leading namespaces
 * and classes, then whatever follows the name on the line. A C name is
 * its own shortest form. Pure: no I/O, no curses.
 */
#ifndef QSPTOP_CXXNAME_H
#define QSPTOP_CXXNAME_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Write name followed by tail (e.g. "+0x12 (pool.cc:14)") in at most
 * width columns, name in the first of its forms that fits:
 *   1. as it is;
 *   2. without return type, ABI tags, "[clone …]" and qualifiers, with
 *      every parameter list elided, "(…)";
 *   3. with template arguments elided too, "<…>";
 *   4. without its leading namespaces and classes, one at a time;
 *   5. its bare name, "checkout" ("operator()", "{lambda(…)#1}").
 * Returns true when one fits. Otherwise buf holds the bare name alone,
 * cut at the right ("check…") when wider than width, and false is
 * returned. A width of 0 or less means no limit.
 */
bool cxxname_fit(char *buf, size_t size, const char *name, const char *tail,
		 int width);

#endif
