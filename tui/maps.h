/*
 * Reading a process's mappings (/proc/PID/maps), one line at a time: the
 * one parser for the injector, the shared-lock identities, the wait
 * naming from outside and the outside view's symbols.
 */
#ifndef QSPTOP_MAPS_H
#define QSPTOP_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One line of /proc/PID/maps. */
struct maps_line {
	uint64_t start, end;
	uint64_t offset;	/* in its file */
	uint64_t dev, ino;	/* dev: major << 32 | minor */
	char perms[5];		/* "r-xp" */
	const char *path;	/* "" when anonymous; may end " (deleted)" */
	const char *name;	/* after the last '/' of path */
};

/*
 * Call fn for each mapping of pid, in address order (the line is valid
 * during the call only); -1 with errno when the file cannot be opened.
 */
int maps_each(pid_t pid, void (*fn)(const struct maps_line *, void *),
	      void *ctx);

/* An address range [start, end), as a mapping spans. */
struct maps_span {
	uint64_t start, end;
};

/*
 * In an array of n elements of stride bytes, each beginning with its
 * span, in address order without overlaps: the element whose span holds
 * address, or NULL (by bisection).
 */
const void *maps_span_find(const void *array, size_t n, size_t stride,
			   uint64_t address);

/* Whether mapping m is executable, and whether it is shared. */
static inline bool maps_exec(const struct maps_line *m)
{
	return m->perms[2] == 'x';
}

static inline bool maps_shared(const struct maps_line *m)
{
	return m->perms[3] == 's';
}

#endif
