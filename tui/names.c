/* Names for call sites without a symbol, and for locks. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "names.h"

/*
 * Where every thread's stack begins: a name that says nothing of the
 * code that locked (all of a stripped program's frames below it unnamed).
 */
static bool thread_entry(const char *symbol)
{
	static const char *const entries[] = {
		"start_thread", "clone", "clone3", "__clone", "__clone3",
		"__libc_start_main", "__libc_start_call_main", "_start",
	};

	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++)
		if (strcmp(symbol, entries[i]) == 0)
			return true;
	return false;
}

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
			return !thread_entry(fi->symbol);
		}
	}
	return false;
}

/*
 * The function of the first frame on sv that is not in a lock wrapper, in
 * buf; false when it has no name (a stripped program's static function:
 * the site's address says as much).
 */
static bool first_locker(struct symbols *s, struct wrappers *w,
			 const struct stack_view *sv, char *buf, size_t size)
{
	for (unsigned i = 0; i < sv->depth; i++) {
		struct frame_info fi;

		if (w && wrappers_match(w, sv->frames[i]))
			continue;
		if (!symbols_resolve(s, sv->frames[i], 1, &fi) ||
		    fi.symbol == NULL || thread_entry(fi.symbol))
			return false;
		snprintf(buf, size, "%s", fi.symbol);
		return true;
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

bool names_of_row(struct symbols *s, struct wrappers *w, const struct model *m,
		  uint64_t site, uint64_t object, uint32_t id, char *buf,
		  size_t size)
{
	struct view_row r = { .site = site, .object = object, .row_id = id,
			      .n_sites = 1, .n_objects = 1 };
	struct frame_info caller;
	unsigned depth;
	char lock[256];
	size_t at = 0;

	buf[0] = '\0';
	if (names_caller(s, m, &r, &caller, &depth)) {
		snprintf(buf, size, "%s", caller.symbol);
		at = strlen(buf);
	}
	if (names_object(s, w, m, object, lock, sizeof(lock)) != NAME_NONE)
		snprintf(buf + at, size - at, "%s%s", at ? " " : "", lock);
	return buf[0] != '\0';
}

const char *names_from_word(enum name_from from)
{
	return from == NAME_SYMBOL ? "symbol" :
	       from == NAME_LOCKER ? "first_locker" : NULL;
}
