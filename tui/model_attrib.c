/*
 * Where waits count when lock wrappers are skipped: a wrapper row's stacks
 * go to the first frame outside every wrapper, found once per stack id.
 */
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"
#include "xalloc.h"

bool attrib_skipping(const struct model_query *q)
{
	return q->skip_wrappers && q->is_wrapper != NULL;
}

void attrib_init(struct attrib *a, const struct model *m,
		 const struct model_query *q)
{
	a->m = m;
	a->q = q;
	a->frame = NULL;
	if (attrib_skipping(q) && m->stacks_cap > 0) {
		a->frame = xreallocarray(NULL, m->stacks_cap, 1);
		memset(a->frame, ATTR_UNKNOWN, m->stacks_cap);
	}
}

void attrib_done(struct attrib *a)
{
	free(a->frame);
	a->frame = NULL;
}

uint64_t code_site(const struct model_query *q, uint64_t site)
{
	return q->code && site ? q->code(q->ctx, site) : site;
}

/*
 * A row counted through a wrapper (via) is its caller's while wrappers are
 * skipped and via is still in one. A wrapper that an earlier session named
 * and this one does not is none: its calls count on its own row.
 */
uint64_t row_site(const struct model_query *q, const struct row *r)
{
	bool through = r->via != 0 && q->skip_wrappers &&
		       (q->is_wrapper == NULL || q->is_wrapper(q->ctx, r->via));

	return code_site(q, r->via != 0 && !through ? r->via : r->site);
}

/* Whether the stacks of row r are attributed to their callers. */
bool attrib_row(const struct attrib *a, const struct row *r)
{
	return attrib_skipping(a->q) && a->q->is_wrapper(a->q->ctx, r->site);
}

/*
 * The site where entry e of row r counts: for a wrapper row and a defined
 * stack, the first frame outside every wrapper (the row's own site when all
 * frames are wrappers); otherwise the row's site.
 */
uint64_t attrib_site(struct attrib *a, const struct row *r, bool wrapper,
		     const struct stack_entry *e)
{
	const struct stack_def *s = model_stack(a->m, e->stack);
	uint8_t *f;

	if (!wrapper || s == NULL)
		return row_site(a->q, r);
	f = &a->frame[e->stack];
	if (*f == ATTR_UNKNOWN) {
		*f = ATTR_ALL_WRAPPERS;
		for (uint8_t i = 0; i < s->depth && *f == ATTR_ALL_WRAPPERS;
		     i++) {
			if (!a->q->is_wrapper(a->q->ctx, s->frames[i]))
				*f = i;
		}
	}
	return code_site(a->q, *f == ATTR_ALL_WRAPPERS ? r->site : s->frames[*f]);
}
