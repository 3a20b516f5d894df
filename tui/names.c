/* Names for call sites without a symbol, and for locks. */
#include <inttypes.h>
#include <stdio.h>

#include "names.h"

bool names_caller(struct symbols *s, const struct model *m,
		  const struct view_row *r, struct frame_info *fi,
		  unsigned *depth)
{
	struct frame_info site;
	struct stack_view sv;
	unsigned at;

	if (m == NULL || r->n_sites != 1 || r->site == 0 ||
	    !symbols_resolve(s, r->site, 1, &site) || site.symbol ||
	    !model_line_stack(m, r, &sv, &at))
		return false;
	for (unsigned i = at + 1; i < sv.depth; i++) {
		/* A frame still to be named ends the search until it is. */
		if (!symbols_resolve(s, sv.frames[i], 1, fi))
			return false;
		if (fi->symbol) {
			*depth = i - at;
			return true;
		}
	}
	return false;
}

/* The first function on sv that is not a wrapper, in buf. */
static bool first_locker(struct symbols *s, struct wrappers *w,
			 const struct stack_view *sv, char *buf, size_t size)
{
	for (unsigned i = 0; i < sv->depth; i++) {
		struct frame_info fi;

		if (!symbols_resolve(s, sv->frames[i], 1, &fi))
			return false;
		if (fi.symbol && !(w && wrappers_match(w, sv->frames[i]))) {
			snprintf(buf, size, "%s", fi.symbol);
			return true;
		}
	}
	return false;
}

enum name_from names_object(struct symbols *s, struct wrappers *w,
			    const struct model *m, uint64_t object, char *buf,
			    size_t size)
{
	struct stack_view sv;
	const char *name;
	uint64_t offset;

	if (object == 0)
		return NAME_NONE;
	if (symbols_data(s, object, &name, &offset)) {
		if (offset)
			snprintf(buf, size, "%s+0x%" PRIx64, name, offset);
		else
			snprintf(buf, size, "%s", name);
		return NAME_SYMBOL;
	}
	if (m && model_object_stack(m, object, &sv) &&
	    first_locker(s, w, &sv, buf, size))
		return NAME_LOCKER;
	return NAME_NONE;
}

const char *names_from_word(enum name_from from)
{
	return from == NAME_SYMBOL ? "symbol" :
	       from == NAME_LOCKER ? "first_locker" : NULL;
}
