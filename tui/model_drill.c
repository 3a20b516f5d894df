/* The stacks and threads behind a line of the table. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"
#include "xalloc.h"

/* Since-reset waits under one stack or thread id. */
struct part {
	uint32_t id;
	uint64_t count;
	uint64_t wait;
};

/* Whether the key (site, object, type) is grouped into line r. */
static bool in_line(const struct view_row *r, enum coalesce c, uint64_t site,
		    uint64_t object, uint8_t type)
{
	if (type != r->type)
		return false;
	if (c == COALESCE_SITE)
		return site == r->site;
	if (c == COALESCE_OBJECT)
		return object == r->object;
	return site == r->site && object == r->object;
}

static void parts_push(struct part **p, size_t *n, size_t *cap, uint32_t id,
		       const struct stack_entry *e)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*p = xreallocarray(*p, *cap, sizeof **p);
	}
	(*p)[(*n)++] = (struct part){ id, e->count,
				      e->wait };
}

/*
 * The waits of the entries that count in line r, by stack or by thread id,
 * not yet summed. With wrappers skipped, a wrapper row's entry counts where
 * its stack is attributed.
 */
static size_t line_parts(const struct model *m, const struct model_query *q,
			 const struct view_row *r, bool by_thread,
			 struct part **out)
{
	struct attrib a;
	size_t n = 0, cap = 0;

	*out = NULL;
	attrib_init(&a, m, q);
	for (size_t i = 0; i < m->cap; i++) {
		const struct row *row = &m->rows[i];
		bool wrapper;

		if (!row->defined || row->n_se == 0 || row->type != r->type)
			continue;
		wrapper = attrib_row(&a, row);
		if (!wrapper && !in_line(r, q->coalesce, row->site,
					 row->object, row->type))
			continue;
		for (uint32_t j = 0; j < row->n_se; j++) {
			const struct stack_entry *e = &row->se[j];
			uint64_t site = attrib_site(&a, row, wrapper, e);

			if (in_line(r, q->coalesce, site, row->object,
				    row->type))
				parts_push(out, &n, &cap,
					   by_thread ? e->tid : e->stack, e);
		}
	}
	attrib_done(&a);
	return n;
}

static int cmp_part_id(const void *pa, const void *pb)
{
	const struct part *a = pa, *b = pb;

	return cmp_u64(a->id, b->id);
}

/* Most wait first, then most count, then lowest id. */
static int cmp_part_weight(const void *pa, const void *pb)
{
	const struct part *a = pa, *b = pb;
	int r;

	if ((r = -cmp_u64(a->wait, b->wait)) != 0)
		return r;
	if ((r = -cmp_u64(a->count, b->count)) != 0)
		return r;
	return cmp_u64(a->id, b->id);
}

/* Sum the parts of each id, drop empty sums, order heaviest first. */
static size_t parts_merge(struct part *p, size_t n)
{
	size_t out = 0;

	if (n == 0)
		return 0;
	qsort(p, n, sizeof *p, cmp_part_id);
	for (size_t i = 1; i < n; i++) {
		if (p[i].id == p[out].id) {
			p[out].count += p[i].count;
			p[out].wait += p[i].wait;
		} else {
			out += p[out].count != 0 || p[out].wait != 0;
			p[out] = p[i];
		}
	}
	out += p[out].count != 0 || p[out].wait != 0;
	qsort(p, out, sizeof *p, cmp_part_weight);
	return out;
}

size_t model_row_stacks(const struct model *m, const struct model_query *q,
			const struct view_row *r, struct stack_view **out)
{
	struct part *p;
	size_t n = line_parts(m, q, r, false, &p);

	n = parts_merge(p, n);
	*out = n ? xreallocarray(NULL, n, sizeof **out) : NULL;
	for (size_t i = 0; i < n; i++) {
		const struct stack_def *s = model_stack(m, p[i].id);

		(*out)[i] = (struct stack_view){
			.stack = p[i].id,
			.depth = s ? s->depth : 0,
			.frames = s ? s->frames : NULL,
			.count = p[i].count,
			.wait_ns = p[i].wait,
		};
	}
	free(p);
	return n;
}

size_t model_row_threads(const struct model *m, const struct model_query *q,
			 const struct view_row *r, struct thread_view **out)
{
	struct part *p;
	size_t n = line_parts(m, q, r, true, &p);

	n = parts_merge(p, n);
	*out = n ? xreallocarray(NULL, n, sizeof **out) : NULL;
	for (size_t i = 0; i < n; i++)
		(*out)[i] = (struct thread_view){ p[i].id, p[i].count,
						  p[i].wait };
	free(p);
	return n;
}


