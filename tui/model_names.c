/*
 * The stacks that name what has no name of its own: a call site without
 * a symbol is named by a caller on its line's heaviest stack, a lock off
 * every module's data by the first stack seen waiting on it.
 */
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"
#include "xalloc.h"

/* The first stack of an object, and the update that brought it. */
struct first_stack {
	uint64_t object;	/* 0: a free slot */
	uint32_t stack;
	uint64_t tick;
};

/* Objects' first stacks, open addressing by object. */
struct first_stacks {
	struct first_stack *slot;
	size_t mask;		/* slots - 1, a power of two less one */
	size_t n;
};

/* The slot of object in f: holding it, or free. */
static struct first_stack *first_slot(const struct first_stacks *f,
				      uint64_t object)
{
	for (size_t i = hash_mix(object) & f->mask;; i = (i + 1) & f->mask) {
		if (f->slot[i].object == object || f->slot[i].object == 0)
			return &f->slot[i];
	}
}

/* Make room for one more object: at most half the slots are taken. */
static void first_grow(struct first_stacks *f)
{
	struct first_stacks g;

	if (f->slot && 2 * (f->n + 1) <= f->mask + 1)
		return;
	g.mask = f->slot ? 2 * f->mask + 1 : 63;
	g.slot = xcalloc(g.mask + 1, sizeof *g.slot);
	g.n = f->n;
	for (size_t i = 0; f->slot && i <= f->mask; i++) {
		if (f->slot[i].object)
			*first_slot(&g, f->slot[i].object) = f->slot[i];
	}
	free(f->slot);
	*f = g;
}

void first_stack_note(struct model *m, uint64_t object, uint32_t stack)
{
	struct first_stack *e;

	if (object == 0)
		return;
	if (m->firsts == NULL)
		m->firsts = xcalloc(1, sizeof *m->firsts);
	first_grow(m->firsts);
	e = first_slot(m->firsts, object);
	if (e->object == 0) {
		*e = (struct first_stack){ object, stack, m->ticks };
		m->firsts->n++;
	} else if (e->tick == m->ticks && stack < e->stack) {
		e->stack = stack;
	}
}

void first_stacks_free(struct first_stacks *f)
{
	if (f)
		free(f->slot);
	free(f);
}

/* The view of stack id, when it is defined. */
static bool stack_of(const struct model *m, uint32_t id,
		     struct stack_view *out)
{
	const struct stack_def *s = model_stack(m, id);

	if (s == NULL)
		return false;
	*out = (struct stack_view){ .stack = id, .depth = s->depth,
				    .frames = s->frames };
	return true;
}

bool model_object_stack(const struct model *m, uint64_t object,
			struct stack_view *out)
{
	const struct first_stack *e;

	if (m->firsts == NULL || object == 0)
		return false;
	e = first_slot(m->firsts, object);
	return e->object == object && stack_of(m, e->stack, out);
}

/* The index of site among a stack's frames, or -1. */
static int site_frame(const struct stack_def *s, uint64_t site)
{
	for (int i = 0; i < s->depth; i++) {
		if (s->frames[i] == site)
			return i;
	}
	return -1;
}

/* Order stack entries by stack id. */
static int cmp_entry_stack(const void *pa, const void *pb)
{
	const struct stack_entry *a = pa, *b = pb;

	return cmp_u64(a->stack, b->stack);
}

/* Whether waits w (of stack a) weigh more than those of stack b, best. */
static bool heavier(const struct wait_counts *w, uint32_t a,
		    const struct wait_counts *best, uint32_t b)
{
	if (w->wait_ns != best->wait_ns)
		return w->wait_ns > best->wait_ns;
	if (w->count != best->count)
		return w->count > best->count;
	return a < b;
}

bool model_line_stack(const struct model *m, const struct view_row *r,
		      struct stack_view *out, unsigned *at)
{
	const struct row *row = model_row(m, r->row_id);
	struct stack_entry *e;
	struct wait_counts best = { 0 };
	uint32_t best_id = PROTO_NO_STACK;
	size_t n;

	if (row == NULL || row->n_se == 0 || r->n_sites != 1)
		return false;
	n = row->n_se;
	e = xreallocarray(NULL, n, sizeof *e);
	memcpy(e, row->se, n * sizeof *e);
	qsort(e, n, sizeof *e, cmp_entry_stack);
	for (size_t i = 0, j; i < n; i = j) {
		struct wait_counts w = e[i].w;
		const struct stack_def *s = model_stack(m, e[i].stack);

		for (j = i + 1; j < n && e[j].stack == e[i].stack; j++)
			wait_counts_add(&w, &e[j].w);
		if (s == NULL || site_frame(s, r->site) < 0 ||
		    (best_id != PROTO_NO_STACK &&
		     !heavier(&w, e[i].stack, &best, best_id)))
			continue;
		best = w;
		best_id = e[i].stack;
	}
	free(e);
	if (best_id == PROTO_NO_STACK || !stack_of(m, best_id, out))
		return false;
	out->w = best;
	*at = (unsigned)site_frame(model_stack(m, best_id), r->site);
	return true;
}

/* Threads seen waiting, and those not yet taken by model_take_new_tids(). */
struct tid_set {
	uint32_t *slot;		/* 0: free */
	size_t mask;
	size_t n;
	uint32_t *fresh;
	size_t n_fresh, fresh_cap;
};

/* The slot of tid in t: holding it, or free. */
static uint32_t *tid_slot(const struct tid_set *t, uint32_t tid)
{
	for (size_t i = hash_mix(tid) & t->mask;; i = (i + 1) & t->mask) {
		if (t->slot[i] == tid || t->slot[i] == 0)
			return &t->slot[i];
	}
}

/* Make room for one more tid: at most half the slots are taken. */
static void tid_grow(struct tid_set *t)
{
	uint32_t *old = t->slot;
	size_t old_mask = t->mask;

	if (old && 2 * (t->n + 1) <= t->mask + 1)
		return;
	t->mask = old ? 2 * old_mask + 1 : 63;
	t->slot = xcalloc(t->mask + 1, sizeof *t->slot);
	for (size_t i = 0; old && i <= old_mask; i++) {
		if (old[i])
			*tid_slot(t, old[i]) = old[i];
	}
	free(old);
}

void tid_note(struct model *m, uint32_t tid)
{
	struct tid_set *t;
	uint32_t *slot;

	if (tid == 0)
		return;
	if (m->tids == NULL)
		m->tids = xcalloc(1, sizeof *m->tids);
	t = m->tids;
	tid_grow(t);
	slot = tid_slot(t, tid);
	if (*slot)
		return;
	*slot = tid;
	t->n++;
	t->fresh = xgrow(t->fresh, &t->fresh_cap, t->n_fresh + 1, 16,
			 sizeof *t->fresh);
	t->fresh[t->n_fresh++] = tid;
}

void tid_set_free(struct tid_set *t)
{
	if (t) {
		free(t->slot);
		free(t->fresh);
	}
	free(t);
}

size_t model_take_new_tids(struct model *m, uint32_t *out, size_t max)
{
	struct tid_set *t = m->tids;
	size_t n;

	if (t == NULL)
		return 0;
	n = t->n_fresh < max ? t->n_fresh : max;
	memcpy(out, t->fresh, n * sizeof *out);
	memmove(t->fresh, t->fresh + n, (t->n_fresh - n) * sizeof *t->fresh);
	t->n_fresh -= n;
	return n;
}
