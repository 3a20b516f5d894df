/*
 * Sorting the lines of a view: each line gets a compact key that orders
 * like the comparison the table is defined by (the query's key, then total
 * wait, site, object, type and row id), and only the part of the order a
 * caller asks for is sorted.
 */
#include <stdlib.h>
#include <string.h>

#include "field.h"
#include "model_impl.h"
#include "xalloc.h"

/* Below this many keys a part is sorted whole. */
#define ORDER_SMALL 32

/* ---- Distinct sites ---- */

/* Make room for one more site, the index twice as big as the sites. */
static void site_set_grow(struct site_set *s)
{
	size_t slots;

	if (s->n < s->cap)
		return;
	s->site = xgrow(s->site, &s->cap, s->n + 1, 64, sizeof *s->site);
	slots = 2 * s->cap;
	free(s->slots);
	s->slots = xreallocarray(NULL, slots, sizeof *s->slots);
	memset(s->slots, 0xff, slots * sizeof *s->slots);
	s->mask = slots - 1;
	for (size_t i = 0; i < s->n; i++) {
		size_t j = hash_mix(s->site[i]) & s->mask;

		while (s->slots[j] != EMPTY_SLOT)
			j = (j + 1) & s->mask;
		s->slots[j] = (uint32_t)i;
	}
}

uint32_t site_set_add(struct site_set *s, uint64_t site)
{
	size_t j;

	site_set_grow(s);
	for (j = hash_mix(site) & s->mask; s->slots[j] != EMPTY_SLOT;
	     j = (j + 1) & s->mask) {
		if (s->site[s->slots[j]] == site)
			return s->slots[j];
	}
	s->site[s->n] = site;
	s->slots[j] = (uint32_t)s->n;
	return (uint32_t)s->n++;
}

void site_set_free(struct site_set *s)
{
	free(s->site);
	free(s->slots);
	memset(s, 0, sizeof *s);
}

/* ---- Keys ---- */

/* A double as a word that orders like it (-0 with 0; never NaN here). */
static uint64_t double_word(double d)
{
	uint64_t u;

	if (d == 0)
		d = 0;
	memcpy(&u, &d, sizeof u);
	return u >> 63 ? ~u : u | 1ull << 63;
}

/* Labels of distinct sites, ordered by an index. */
struct labels {
	char **text;
};

static int cmp_label(const void *pa, const void *pb, void *arg)
{
	const struct labels *l = arg;
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;

	return strcmp(l->text[a], l->text[b]);
}

/*
 * The rank of each distinct site's label among them, equal labels equal
 * ranks. Labels are copied: a label function may reuse its buffer.
 */
static uint64_t *label_ranks(const struct model_query *q,
			     const struct site_set *s)
{
	struct labels l = { xreallocarray(NULL, s->n + 1, sizeof *l.text) };
	uint32_t *by = xreallocarray(NULL, s->n + 1, sizeof *by);
	uint64_t *rank = xreallocarray(NULL, s->n + 1, sizeof *rank);
	uint64_t r = 0;

	for (size_t i = 0; i < s->n; i++) {
		const char *t = q->site_label(q->ctx, s->site[i]);

		l.text[i] = xstrdup(t ? t : "");
		by[i] = (uint32_t)i;
	}
	qsort_r(by, s->n, sizeof *by, cmp_label, &l);
	for (size_t i = 0; i < s->n; i++) {
		if (i > 0 && strcmp(l.text[by[i]], l.text[by[i - 1]]) != 0)
			r++;
		rank[by[i]] = r;
	}
	for (size_t i = 0; i < s->n; i++)
		free(l.text[i]);
	free(l.text);
	free(by);
	return rank;
}

/*
 * Locks before idle waits unless they are mixed; then biggest first
 * unless ascending; ties: most total wait first, then site,
 * object, type and row id, lowest first. By site the first word waits
 * for order_sites().
 */
void order_key(const struct model_query *q, const struct view_row *v,
	       uint32_t i, struct order *out)
{
	uint64_t k = q->sort->value ? double_word(q->sort->value(v)) : 0;

	out->key[WORD_IDLE] = !q->mix_idle && v->role == ROLE_IDLE;
	out->key[WORD_PRIMARY] = q->ascending ? k : ~k;
	out->key[WORD_WAIT] = ~v->c.calls.wait_ns;
	out->key[WORD_SITE] = v->site;
	out->key[WORD_OBJECT] = v->object;
	out->key[WORD_TYPE_ROW] = (uint64_t)v->type << 32 | v->row_id;
	out->line = i;
}

/*
 * By site, ascending sorts the labels A to Z (the field's first order,
 * field.h) and descending Z to A. Without labels sites sort by address,
 * as their fixed-width hex would.
 */
void order_sites(const struct model_query *q, struct order *o, size_t n)
{
	struct site_set s = { 0 };
	uint32_t *of;
	uint64_t *rank;

	if (q->sort->value != NULL)
		return;
	if (q->site_label == NULL) {
		for (size_t i = 0; i < n; i++) {
			uint64_t site = o[i].key[WORD_SITE];

			o[i].key[WORD_PRIMARY] = q->ascending ? site : ~site;
		}
		return;
	}
	of = xreallocarray(NULL, n + 1, sizeof *of);
	for (size_t i = 0; i < n; i++)
		of[i] = site_set_add(&s, o[i].key[WORD_SITE]);
	rank = label_ranks(q, &s);
	for (size_t i = 0; i < n; i++)
		o[i].key[WORD_PRIMARY] = q->ascending ? rank[of[i]] : ~rank[of[i]];
	free(rank);
	free(of);
	site_set_free(&s);
}

/* ---- Sorting part of the keys ---- */

static int cmp_order(const void *a, const void *b)
{
	return order_cmp(a, b);
}

static void order_swap(struct order *a, struct order *b)
{
	struct order t = *a;

	*a = *b;
	*b = t;
}

/*
 * Partition o[0..n), n >= 4, around the median of its first, middle and
 * last keys; returns where that pivot ends, everything before it sorting
 * no later and everything after it no earlier.
 */
static size_t order_partition(struct order *o, size_t n)
{
	size_t mid = n / 2, i = 0, j = n - 2;
	struct order pivot;

	if (order_cmp(&o[mid], &o[0]) < 0)
		order_swap(&o[mid], &o[0]);
	if (order_cmp(&o[n - 1], &o[0]) < 0)
		order_swap(&o[n - 1], &o[0]);
	if (order_cmp(&o[n - 1], &o[mid]) < 0)
		order_swap(&o[n - 1], &o[mid]);
	order_swap(&o[mid], &o[n - 2]);
	pivot = o[n - 2];
	for (;;) {
		while (order_cmp(&o[++i], &pivot) < 0)
			;
		while (order_cmp(&o[--j], &pivot) > 0)
			;
		if (i >= j)
			break;
		order_swap(&o[i], &o[j]);
	}
	order_swap(&o[i], &o[n - 2]);
	return i;
}

/*
 * Quickselect that sorts only the parts holding [lo, hi); past depth
 * levels (bad pivots) it sorts what is left whole, so it stays
 * O(n log n) at worst and is O(n + k log k) for k lines on average.
 */
static void order_part(struct order *o, size_t n, size_t lo, size_t hi,
		       unsigned depth)
{
	while (lo < hi) {
		size_t p;

		if (n <= ORDER_SMALL || depth-- == 0 || (lo == 0 && hi == n)) {
			qsort(o, n, sizeof *o, cmp_order);
			return;
		}
		p = order_partition(o, n);
		if (hi <= p) {
			n = p;
			continue;
		}
		if (lo < p)
			order_part(o, p, lo, p, depth);
		lo = lo > p ? lo - p - 1 : 0;
		hi -= p + 1;
		o += p + 1;
		n -= p + 1;
	}
}

void order_range(struct order *o, size_t n, size_t lo, size_t hi)
{
	unsigned depth = 0;

	for (size_t k = n; k > 1; k >>= 1)
		depth += 2;
	if (hi > n)
		hi = n;
	order_part(o, n, lo, hi, depth);
}

size_t order_rank(const struct order *o, size_t n, const struct order *k)
{
	size_t r = 0;

	for (size_t i = 0; i < n; i++)
		r += order_cmp(&o[i], k) < 0;
	return r;
}
