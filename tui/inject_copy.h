/*
 * The collector where the target can load it (inject_copy.c): the same
 * file inside its root, or a copy in its /tmp. Shared by the inject*.c
 * modules; not for use outside them.
 */
#ifndef QSPTOP_INJECT_COPY_H
#define QSPTOP_INJECT_COPY_H

#include <stddef.h>

struct inject_target;

/*
 * Find lib as t->lib (absolute), and whether the target sees that same
 * file inside its root; t->copy when it does not. -1 with msg.
 */
int inject_copy_check(struct inject_target *t, const char *lib, char *msg,
		      size_t len);
/* Copy the library where the target sees it (t->copy); -1 with msg. */
int inject_copy_lib(struct inject_target *t, char *msg, size_t len);
/* Remove that copy, if any: the target's mapping of it stays valid. While
 * a dlopen may still open it, it stays (another user could put a library
 * of theirs under a name set free). */
void inject_remove_copy(struct inject_target *t);

#endif
