/*
 * Writing JSON text as it is built, byte for byte as cJSON_Print() would
 * print the same tree (tabs, separators, number and string forms), without
 * a tree: a snapshot of a big table would need gigabytes of nodes.
 */
#ifndef QSPTOP_JSONW_H
#define QSPTOP_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSONW_MAX_DEPTH 64

struct jsonw {
	char *text;		/* NUL-terminated; the caller frees it */
	size_t len;
	size_t cap;
	int depth;		/* containers open */
	bool empty;		/* the innermost one has nothing yet */
	uint64_t objects;	/* bit d: container d + 1 is an object */
	char point;		/* the locale's decimal point, printed '.' */
};

/* An empty text. */
void jsonw_init(struct jsonw *w);

/*
 * Each value goes into the container open: key names it in an object and
 * is NULL in an array or for the outermost value.
 */
void jsonw_object(struct jsonw *w, const char *key);
void jsonw_array(struct jsonw *w, const char *key);

/* Close the innermost object or array. */
void jsonw_end(struct jsonw *w);

/* A string; NULL writes null. */
void jsonw_string(struct jsonw *w, const char *key, const char *s);
void jsonw_number(struct jsonw *w, const char *key, double d);
void jsonw_bool(struct jsonw *w, const char *key, bool b);
void jsonw_null(struct jsonw *w, const char *key);

/* Make room for n more bytes now, so the text need not move as it grows. */
void jsonw_reserve(struct jsonw *w, size_t n);

/* Append raw text (a newline after the outermost value). */
void jsonw_raw(struct jsonw *w, const char *s);

#endif
