/* Allocation helpers that report and exit instead of returning NULL. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

void (*fatal_cleanup)(void);

static void vreport(const char *fmt, va_list ap)
{
	fputs("qsptop: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void fatal(const char *fmt, ...)
{
	va_list ap;

	if (fatal_cleanup)
		fatal_cleanup();
	va_start(ap, fmt);
	vreport(fmt, ap);
	va_end(ap);
	exit(1);
}

void warning(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(fmt, ap);
	va_end(ap);
}

void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (p == NULL)
		fatal("out of memory (%zu bytes)", size);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL)
		fatal("out of memory (%zu x %zu bytes)", n, size);
	return p;
}

void *xrealloc(void *p, size_t size)
{
	p = realloc(p, size ? size : 1);
	if (p == NULL)
		fatal("out of memory (%zu bytes)", size);
	return p;
}

void *xreallocarray(void *p, size_t n, size_t size)
{
	if (size != 0 && n > SIZE_MAX / size)
		fatal("allocation too large (%zu x %zu bytes)", n, size);
	return xrealloc(p, n * size);
}

void *xgrow(void *p, size_t *cap, size_t need, size_t first, size_t size)
{
	size_t n = *cap ? *cap : first;

	if (need <= *cap)
		return p;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			fatal("allocation too large (%zu elements)", need);
		n *= 2;
	}
	*cap = n;
	return xreallocarray(p, n, size);
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = memcpy(xmalloc(n + 1), s, n);

	p[n] = '\0';
	return p;
}
