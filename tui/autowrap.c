/* Lock wrappers found from the waits' stacks and the functions' extents. */
#include <stdlib.h>

#include "addrcache.h"
#include "autowrap.h"
#include "xalloc.h"

/* A function holding a lock call (directly or through wrappers). */
struct candidate {
	uint64_t lo, hi;
	uint64_t callers[AUTOWRAP_MIN_CALLERS];	/* distinct, their starts */
	unsigned ncallers;
	bool found;
};

struct autowrap {
	struct symbols *symbols;
	struct addrcache *candidates;	/* struct candidate by function start */
	uint64_t *found;		/* lo, hi of each wrapper found */
	unsigned *callers;		/* the callers each had when found */
	size_t nfound;
	size_t stacks_done;		/* stack ids read already */
};

struct autowrap *autowrap_new(struct symbols *s)
{
	struct autowrap *aw = xcalloc(1, sizeof *aw);

	aw->symbols = s;
	aw->candidates = addrcache_new(sizeof(struct candidate));
	return aw;
}

void autowrap_free(struct autowrap *aw)
{
	if (aw == NULL)
		return;
	addrcache_free(aw->candidates, NULL);
	free(aw->found);
	free(aw->callers);
	free(aw);
}

size_t autowrap_count(const struct autowrap *aw)
{
	return aw ? aw->nfound : 0;
}

void autowrap_get(const struct autowrap *aw, size_t i, uint64_t *lo,
		  uint64_t *hi, unsigned *callers)
{
	*lo = aw->found[2 * i];
	*hi = aw->found[2 * i + 1];
	*callers = aw->callers[i];
}

/* The candidate of the function holding return address ret, or NULL. */
static struct candidate *candidate_of(struct autowrap *aw, uint64_t ret)
{
	struct candidate *c;
	uint64_t lo, hi;

	if (!symbols_function_at(aw->symbols, ret - 1, &lo, &hi))
		return NULL;
	if ((c = addrcache_find(aw->candidates, lo)) != NULL)
		return c;
	c = addrcache_add(aw->candidates, lo);
	c->lo = lo;
	c->hi = hi;
	return c;
}

/* Note that the function holding return address ret called c. */
static void add_caller(struct autowrap *aw, struct candidate *c, uint64_t ret)
{
	uint64_t lo, hi;

	if (!symbols_function_at(aw->symbols, ret - 1, &lo, &hi))
		lo = ret;	/* no extent known: the call site stands for it */
	if (lo == c->lo)
		return;		/* recursion is not a caller */
	for (unsigned i = 0; i < c->ncallers; i++)
		if (c->callers[i] == lo)
			return;
	if (c->ncallers < AUTOWRAP_MIN_CALLERS)
		c->callers[c->ncallers++] = lo;
}

/* Whether c passes the rule, to be counted through from now on. */
static bool is_wrapper(const struct candidate *c)
{
	return !c->found && c->ncallers >= AUTOWRAP_MIN_CALLERS &&
	       c->hi - c->lo <= AUTOWRAP_MAX_BYTES;
}

static void record(struct autowrap *aw, struct candidate *c, struct wrappers *w)
{
	c->found = true;
	aw->found = xreallocarray(aw->found, aw->nfound + 1, 2 * sizeof *aw->found);
	aw->callers = xreallocarray(aw->callers, aw->nfound + 1,
				    sizeof *aw->callers);
	aw->found[2 * aw->nfound] = c->lo;
	aw->found[2 * aw->nfound + 1] = c->hi;
	aw->callers[aw->nfound++] = c->ncallers;
	wrappers_add_function(w, c->lo, c->hi);
}

/*
 * The first frame outside every known wrapper holds the lock call, made
 * there or through those wrappers; the frame above it is its caller.
 */
static bool read_stack(struct autowrap *aw, const uint64_t *f, size_t depth,
		       struct wrappers *w)
{
	struct candidate *c;
	size_t i = 0;

	while (i < depth && wrappers_match(w, f[i]))
		i++;
	if (i + 1 >= depth || (c = candidate_of(aw, f[i])) == NULL)
		return false;
	add_caller(aw, c, f[i + 1]);
	if (!is_wrapper(c))
		return false;
	record(aw, c, w);
	return true;
}

size_t autowrap_scan(struct autowrap *aw, const struct model *m,
		     struct wrappers *w)
{
	size_t before = aw->nfound, n = model_stack_ids(m);
	bool again = false;

	for (; aw->stacks_done < n; aw->stacks_done++) {
		const uint64_t *frames;
		size_t depth = model_stack_frames(m, (uint32_t)aw->stacks_done,
						  &frames);

		if (depth > 0 && read_stack(aw, frames, depth, w))
			again = true;
	}
	/* A wrapper found may be called by another: read them all again. */
	if (again)
		aw->stacks_done = 0;
	return aw->nfound - before;
}
