/* The stacks and threads behind a line of the table. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"
#include "procs.h"
#include "xalloc.h"

/* Since-reset waits under one stack or thread id. */
struct part {
	uint32_t id;
	uint16_t proc;		/* of the rows (procs.h): one per stack or thread */
	struct wait_counts w;
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
		       uint16_t proc, const struct stack_entry *e)
{
	*p = xgrow(*p, cap, *n + 1, 16, sizeof **p);
	(*p)[(*n)++] = (struct part){ id, proc, e->w };
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
		if (!wrapper && !in_line(r, q->coalesce, row_site(q, row),
					 row->object, row->type))
			continue;
		for (uint32_t j = 0; j < row->n_se; j++) {
			const struct stack_entry *e = &row->se[j];
			uint64_t site = attrib_site(&a, row, wrapper, e);

			if (in_line(r, q->coalesce, site, row->object,
				    row->type))
				parts_push(out, &n, &cap,
					   by_thread ? e->tid : e->stack,
					   (uint16_t)procs_of(row->site), e);
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

	if ((r = -cmp_u64(a->w.wait_ns, b->w.wait_ns)) != 0)
		return r;
	if ((r = -cmp_u64(a->w.count, b->w.count)) != 0)
		return r;
	return cmp_u64(a->id, b->id);
}

static bool part_any(const struct part *p)
{
	return !wait_counts_empty(&p->w);
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
			wait_counts_add(&p[out].w, &p[i].w);
		} else {
			out += part_any(&p[out]);
			p[out] = p[i];
		}
	}
	out += part_any(&p[out]);
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
			.w = p[i].w,
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
		(*out)[i] = (struct thread_view){ p[i].id, p[i].proc, p[i].w };
	free(p);
	return n;
}


/* ---- The stacks and threads of every line at once ---- */

/* The keys of lines as in_line() compares them, each numbered once. */
struct key_set {
	uint64_t (*key)[3];
	size_t n;
	uint32_t *slots;	/* number or EMPTY_SLOT */
	size_t mask;
};

/* (site, object, type) as a line of coalesce mode c tells them apart. */
static void line_key(enum coalesce c, uint64_t site, uint64_t object,
		     uint8_t type, uint64_t k[3])
{
	k[0] = c == COALESCE_OBJECT ? 0 : site;
	k[1] = c == COALESCE_SITE ? 0 : object;
	k[2] = type;
}

/* The slot of key k: holding its number, or free. */
static uint32_t *key_slot(const struct key_set *s, const uint64_t k[3])
{
	size_t i = hash_mix(k[0] ^ hash_mix(k[1] ^ hash_mix(k[2]))) & s->mask;

	for (;; i = (i + 1) & s->mask) {
		const uint64_t *h;

		if (s->slots[i] == EMPTY_SLOT)
			return &s->slots[i];
		h = s->key[s->slots[i]];
		if (h[0] == k[0] && h[1] == k[1] && h[2] == k[2])
			return &s->slots[i];
	}
}

/* Number the keys of n lines; of[i] is line i's. */
static void key_set_init(struct key_set *s, enum coalesce c,
			 const struct line_key *lines, size_t n, uint32_t *of)
{
	size_t slots = 2;

	while (slots < 2 * n)
		slots *= 2;
	s->key = xreallocarray(NULL, n ? n : 1, sizeof *s->key);
	s->slots = xreallocarray(NULL, slots, sizeof *s->slots);
	memset(s->slots, 0xff, slots * sizeof *s->slots);
	s->mask = slots - 1;
	s->n = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t k[3];
		uint32_t *slot;

		line_key(c, lines[i].site, lines[i].object, lines[i].type, k);
		slot = key_slot(s, k);
		if (*slot == EMPTY_SLOT) {
			memcpy(s->key[s->n], k, sizeof k);
			*slot = (uint32_t)s->n++;
		}
		of[i] = *slot;
	}
}

/* The number of the line key (site, object, type), or EMPTY_SLOT. */
static uint32_t key_find(const struct key_set *s, enum coalesce c,
			 uint64_t site, uint64_t object, uint8_t type)
{
	uint64_t k[3];

	line_key(c, site, object, type, k);
	return *key_slot(s, k);
}

/* Waits of one entry that count for the line key `key`. */
struct key_part {
	uint32_t key;
	uint32_t stack;
	uint32_t tid;
	uint16_t proc;
	struct wait_counts w;
};

/* A growing list of key parts. */
struct key_parts {
	struct key_part *p;
	size_t n, cap;
};

static void key_parts_push(struct key_parts *kp, uint32_t key,
			   uint16_t proc, const struct stack_entry *e)
{
	kp->p = xgrow(kp->p, &kp->cap, kp->n + 1, 256, sizeof *kp->p);
	kp->p[kp->n++] = (struct key_part){ key, e->stack, e->tid, proc, e->w };
}

/* Every entry's waits with the line key they count for, as line_parts(). */
static void drill_parts(const struct model *m, const struct model_query *q,
			const struct key_set *s, struct key_parts *kp)
{
	struct attrib a;

	attrib_init(&a, m, q);
	for (uint32_t i = 0; i < m->cap; i++) {
		const struct row *row = &m->rows[i];
		uint32_t key = EMPTY_SLOT;
		bool wrapper;

		if (!row->defined || row->n_se == 0)
			continue;
		wrapper = attrib_row(&a, row);
		if (!wrapper) {
			key = key_find(s, q->coalesce, code_site(q, row->site),
				       row->object, row->type);
			if (key == EMPTY_SLOT)
				continue;
		}
		for (uint32_t j = 0; j < row->n_se; j++) {
			const struct stack_entry *e = &row->se[j];

			if (wrapper)
				key = key_find(s, q->coalesce,
					       attrib_site(&a, row, true, e),
					       row->object, row->type);
			if (key != EMPTY_SLOT)
				key_parts_push(kp, key,
					       (uint16_t)procs_of(row->site), e);
		}
	}
	attrib_done(&a);
}

/* Order the parts by key (stably); at[k] .. at[k + 1] are key k's. */
static struct key_part *drill_by_key(const struct key_parts *kp,
				     size_t n_keys, size_t *at)
{
	struct key_part *sorted = xreallocarray(NULL, kp->n ? kp->n : 1,
						sizeof *sorted);

	memset(at, 0, (n_keys + 1) * sizeof *at);
	for (size_t i = 0; i < kp->n; i++)
		at[kp->p[i].key + 1]++;
	for (size_t k = 0; k < n_keys; k++)
		at[k + 1] += at[k];
	for (size_t i = 0; i < kp->n; i++)
		sorted[at[kp->p[i].key]++] = kp->p[i];
	for (size_t k = n_keys; k > 0; k--)
		at[k] = at[k - 1];
	at[0] = 0;
	return sorted;
}

/* Merge n parts of one key by stack (or thread) into tmp; the count left. */
static size_t drill_merge(const struct key_part *p, size_t n, bool by_thread,
			  struct part *tmp)
{
	for (size_t i = 0; i < n; i++)
		tmp[i] = (struct part){ by_thread ? p[i].tid : p[i].stack,
					p[i].proc, p[i].w };
	return parts_merge(tmp, n);
}

/* Key k's stacks and threads, appended to the drill's arrays. */
static void drill_key(const struct model *m, const struct key_part *p,
		      size_t n, struct part *tmp, struct drill *d,
		      struct line_drill *out, size_t *ns, size_t *nt)
{
	size_t k = drill_merge(p, n, false, tmp);

	out->stacks = k ? &d->stacks[*ns] : NULL;
	out->n_stacks = k;
	for (size_t i = 0; i < k; i++) {
		const struct stack_def *s = model_stack(m, tmp[i].id);

		d->stacks[(*ns)++] = (struct stack_view){
			.stack = tmp[i].id,
			.depth = s ? s->depth : 0,
			.frames = s ? s->frames : NULL,
			.w = tmp[i].w,
		};
	}
	k = drill_merge(p, n, true, tmp);
	out->threads = k ? &d->threads[*nt] : NULL;
	out->n_threads = k;
	for (size_t i = 0; i < k; i++)
		d->threads[(*nt)++] = (struct thread_view){ tmp[i].id,
							    tmp[i].proc,
							    tmp[i].w };
}

void drill_keys(const struct model *m, const struct model_query *q,
		const struct line_key *keys, size_t n, struct drill *out)
{
	uint32_t *of = xreallocarray(NULL, n ? n : 1, sizeof *of);
	struct key_parts kp = { 0 };
	struct key_set s;
	struct line_drill *per_key;
	struct key_part *sorted;
	struct part *tmp;
	size_t *at, ns = 0, nt = 0;

	key_set_init(&s, q->coalesce, keys, n, of);
	drill_parts(m, q, &s, &kp);
	at = xreallocarray(NULL, s.n + 1, sizeof *at);
	sorted = drill_by_key(&kp, s.n, at);
	tmp = xreallocarray(NULL, kp.n ? kp.n : 1, sizeof *tmp);
	out->stacks = xreallocarray(NULL, kp.n ? kp.n : 1, sizeof *out->stacks);
	out->threads = xreallocarray(NULL, kp.n ? kp.n : 1,
				     sizeof *out->threads);
	per_key = xreallocarray(NULL, s.n ? s.n : 1, sizeof *per_key);
	for (size_t k = 0; k < s.n; k++)
		drill_key(m, sorted + at[k], at[k + 1] - at[k], tmp, out,
			  &per_key[k], &ns, &nt);
	out->line = xreallocarray(NULL, n ? n : 1, sizeof *out->line);
	for (size_t i = 0; i < n; i++)
		out->line[i] = per_key[of[i]];
	free(per_key);
	free(tmp);
	free(sorted);
	free(at);
	free(kp.p);
	free(s.key);
	free(s.slots);
	free(of);
}

void model_drill(const struct model *m, const struct model_query *q,
		 const struct view_row *rows, size_t n, struct drill *out)
{
	struct line_key *keys = xreallocarray(NULL, n ? n : 1, sizeof *keys);

	for (size_t i = 0; i < n; i++)
		keys[i] = (struct line_key){ rows[i].site, rows[i].object,
					     (uint8_t)rows[i].type };
	drill_keys(m, q, keys, n, out);
	free(keys);
}

void model_drill_free(struct drill *d)
{
	free(d->line);
	free(d->stacks);
	free(d->threads);
	memset(d, 0, sizeof *d);
}
