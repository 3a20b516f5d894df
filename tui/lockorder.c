/* Lock-order warnings: kept by (process, id), written as text. */
#include <stdio.h>
#include <stdlib.h>

#include "lockorder.h"
#include "site.h"
#include "stuck_text.h"
#include "xalloc.h"

void lockorder_put(struct lockorder *l, const struct lock_order *w)
{
	for (size_t i = 0; i < l->n; i++) {
		if (l->v[i].proc == w->proc && l->v[i].id == w->id) {
			l->v[i] = *w;
			return;
		}
	}
	l->v = xgrow(l->v, &l->cap, l->n + 1, 8, sizeof(*l->v));
	l->v[l->n++] = *w;
}

void lockorder_free(struct lockorder *l)
{
	free(l->v);
	*l = (struct lockorder){ 0 };
}

void lockorder_text(char *buf, size_t size, struct symbols *s,
		    const struct lock_order *w)
{
	char a[128], b[128], first[256], then[256], rev[256], held[256];

	stuck_text_object(a, sizeof(a), s, w->first_object);
	stuck_text_object(b, sizeof(b), s, w->then_object);
	site_line(first, sizeof(first), s, w->first_site);
	site_line(then, sizeof(then), s, w->then_site);
	site_line(rev, sizeof(rev), s, w->rev_site);
	site_line(held, sizeof(held), s, w->rev_held_site);
	snprintf(buf, size,
		 "%s (taken at %s) then %s at %s; reversed: %s taken at %s "
		 "holding %s (taken at %s); seen %llu times",
		 a, first, b, then, a, rev, b, held,
		 (unsigned long long)w->count);
}
