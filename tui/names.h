/*
 * Names for what the table would otherwise show as an address: the
 * nearest named caller of a call site without a symbol (a stripped
 * program's static function), and a lock's name.
 */
#ifndef QSPTOP_NAMES_H
#define QSPTOP_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "symbols.h"
#include "wrappers.h"

/* Where a lock's name comes from. */
enum name_from {
	NAME_NONE,		/* no name: the address stays */
	NAME_SYMBOL,		/* the data symbol holding it: "log_mutex" */
	NAME_LOCKER,		/* the first function seen locking it */
};

/*
 * When line r's call site has no symbol: the nearest frame with one
 * outward from the site on the line's heaviest stack (model_line_stack()),
 * in *fi, and in *depth how many frames out from the site it is (1: the
 * site's caller). False when the site has a symbol, the line no stack
 * yet, or no frame of it a name.
 */
bool names_caller(struct symbols *s, const struct model *m,
		  const struct view_row *r, struct frame_info *fi,
		  unsigned *depth);

/*
 * The name of the lock at object, in buf: its data symbol ("log_mutex",
 * "stats+0x10" inside a struct); else, a lock on the heap or a stack (or
 * in a stripped module's data), the first function that is not a lock
 * wrapper (w, may be NULL) on the first stack seen waiting on it
 * (model_object_stack()). NAME_NONE, buf untouched, when neither is known.
 */
enum name_from names_object(struct symbols *s, struct wrappers *w,
			    const struct model *m, uint64_t object, char *buf,
			    size_t size);

/*
 * The names row id (at site, on object) has beside its site's label, in
 * buf, separated by a space: its nearest named caller and its lock's
 * name. False, buf empty, when it has neither.
 */
bool names_of_row(struct symbols *s, struct wrappers *w, const struct model *m,
		  uint64_t site, uint64_t object, uint32_t id, char *buf,
		  size_t size);

/* The JSON word of a name's origin: "symbol", "first_locker" or NULL. */
const char *names_from_word(enum name_from from);

#endif
