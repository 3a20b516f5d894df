/* Allocation that cannot fail quietly, and fatal errors, for the front end. */
#ifndef QSPTOP_XALLOC_H
#define QSPTOP_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t size);
/* Resize p to n elements of size bytes, refusing sizes that overflow. */
void *xreallocarray(void *p, size_t n, size_t size);
/*
 * Make room in p, of *cap elements of size bytes, for need of them: the
 * capacity doubles, from first when empty, until it holds them.
 */
void *xgrow(void *p, size_t *cap, size_t need, size_t first, size_t size);
char *xstrdup(const char *s);
/* The first n bytes of s (which has at least n), terminated. */
char *xstrndup(const char *s, size_t n);

/* Print "qsptop: MESSAGE" on stderr, restoring the terminal first, and exit 1. */
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Print "qsptop: MESSAGE" on stderr. */
void warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Called by fatal() before it prints: the screen restores the terminal. */
extern void (*fatal_cleanup)(void);

#endif
