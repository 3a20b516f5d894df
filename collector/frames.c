/* Stack capture from prepared unwind tables, and their registry. */
#include <string.h>

#include "../common/cfi.h"
#include "../common/hash.h"
#include "ehframe.h"
#include "frames.h"
#include "pages.h"

/* Frames above frames_capture's caller searched for the site. */
#define OWN_FRAMES 8
/* A caller's frame further than this above its callee's is not believed. */
#define FRAME_MAX (16u << 20)

#if defined(__has_attribute)
#if __has_attribute(no_stack_protector)
#define NO_CANARY __attribute__((no_stack_protector))
#endif
#endif
#ifndef NO_CANARY
#define NO_CANARY
#endif

/* Every mapping a capture may read starts with this, for its retirement. */
struct block {
	size_t len;		/* bytes mapped */
	size_t resident;	/* bytes of a module's pages counted with it */
	uint64_t epoch;		/* the epoch it was retired in */
	struct block *next;	/* on the retired list */
};

/*
 * Captures mostly meet the same few return addresses again, so each table
 * has a cache of rules by pc: one load on a hit, instead of a search with
 * loads that wait on each other. Slots are written once, by whichever
 * capture misses on an empty one, and never change after: readers only
 * share the cache lines, never bounce them. Between CACHE_MIN and
 * CACHE_MAX slots, a quarter of the rows.
 */
#define CACHE_MIN 64u
#define CACHE_MAX 4096u

/* One module's rows, their index and cache, and what identifies the module. */
struct table {
	struct block b;
	uint64_t base;
	const void *phdr;
	uint64_t kept;		/* the last sync that found the module loaded */
	char name[EHFRAME_NAME];
	uint32_t nrows, nindex, cache_shift;
	const uint32_t *index;	/* after the cache, after the rows */
	uint64_t *cache;	/* rule << 32 | pc; 0: empty */
	_Alignas(8) struct cfi_row rows[];	/* the cache follows them, aligned */
};

/* A module as a capture sees it. */
struct mod {
	uint64_t lo, hi, base;
	const struct cfi_row *rows;
	const uint32_t *index;
	uint64_t *cache;
	uint32_t nindex, cache_shift;
	struct table *t;
};

/* The modules with tables, sorted by lo: what is published to captures. */
struct set {
	struct block b;
	uint32_t n;
	struct mod v[];
};

/* The registers a step needs. */
struct regs {
	uint64_t pc, sp, bp;
};

/* The code ranges of lock wrappers, sorted: what is published to hooks. */
struct wrapset {
	struct block b;
	uint32_t n;
	uint64_t r[];		/* lo, hi, lo, hi, ... */
};

/* Read by captures on any thread. */
static struct set *published;
static struct wrapset *wrappers;
static uint64_t global_epoch = 1;
uint32_t frames_wrappers_gen;

/* The collector thread's own. */
static struct block *retired;
static size_t bytes_live, bytes_retired;
static uint64_t syncs;
static struct ehframe_list listed;
static uint32_t skipped;	/* modules left without a table by the cap */
static size_t cap_at_sync;	/* the cap when they were */

/* The modules a capture found last: its stack alternates between few. */
struct hints {
	const struct mod *a, *b;
};

static inline int holds(const struct mod *m, uint64_t pc)
{
	return m != NULL && pc - m->lo < m->hi - m->lo;
}

/* The module holding pc: one of the hints, or the binary search. */
static inline const struct mod *module_of(const struct set *s, struct hints *h,
					  uint64_t pc)
{
	const struct mod *v = s->v, *t;
	uint32_t n = s->n;

	if (holds(h->a, pc))
		return h->a;
	if (holds(h->b, pc)) {
		t = h->a;
		h->a = h->b;
		h->b = t;
		return h->a;
	}
	if (n == 0 || pc < v[0].lo)
		return NULL;
	while (n > 1) {
		uint32_t half = n / 2;

		v = v[half].lo <= pc ? v + half : v;
		n -= half;
	}
	if (pc >= v->hi)
		return NULL;
	h->b = h->a;
	h->a = v;
	return v;
}

/* The rule covering pc (an offset in m): cached, or searched and cached. */
static inline uint32_t rule_at(const struct mod *m, uint32_t pc)
{
	uint64_t *slot = &m->cache[hash_fast(pc) >> m->cache_shift];
	uint64_t e = __atomic_load_n(slot, __ATOMIC_RELAXED);
	const struct cfi_row *row;
	uint32_t rule;

	if (e != 0 && (uint32_t)e == pc)
		return (uint32_t)(e >> 32);
	row = cfi_lookup(m->rows, m->index, m->nindex, pc);
	rule = row != NULL ? row->rule : CFI_STOP;
	if (e == 0)
		__atomic_store_n(slot, (uint64_t)rule << 32 | pc, __ATOMIC_RELAXED);
	return rule;
}

/*
 * A word of the thread's stack. In asm, so that a sanitizer build does not
 * check it against the shadow of whichever instrumented frame holds it.
 */
static inline uint64_t stack_word(uint64_t at)
{
	uint64_t v;

	__asm__ volatile("movq (%1), %0" : "=r"(v) : "r"(at));
	return v;
}

/*
 * Unwind r by one frame with the row covering look (pc, or pc - 1 for a
 * return address: a call may be the last instruction of its function).
 * 0 at a stop row, outside every table, or when a sanity check fails.
 */
static inline int step(const struct set *s, struct hints *h, struct regs *r,
		       uint64_t look)
{
	const struct mod *m = module_of(s, h, look);
	uint64_t cfa, slot;
	uint32_t rule;

	if (m == NULL)
		return 0;
	rule = rule_at(m, (uint32_t)(look - m->base));
	if (cfi_kind(rule) == CFI_STOP)
		return 0;
	cfa = (cfi_kind(rule) == CFI_RSP ? r->sp : r->bp) + cfi_cfa_off(rule);
	if (cfa <= r->sp || cfa - r->sp >= FRAME_MAX || (cfa & 7) != 0)
		return 0;
	slot = cfi_rbp_slot(rule);
	if (slot != 0) {
		if (cfa - 8 * slot < r->sp)
			return 0;
		r->bp = stack_word(cfa - 8 * slot);
	}
	r->pc = stack_word(cfa - 8);
	r->sp = cfa;
	return r->pc != 0;
}

/*
 * Unwind from frames_capture's own frame (at its exact pc) past our hook's
 * frames until the site, then record from there.
 */
static uint32_t walk(const struct set *s, struct regs *r, uint64_t site,
		     uint64_t *frames, uint32_t max)
{
	struct hints h = { NULL, NULL };
	uint64_t look = r->pc;
	uint32_t n = 0, own = 0;

	while (step(s, &h, r, look)) {
		look = r->pc - 1;
		if (n == 0 && r->pc != site) {
			if (own++ == OWN_FRAMES)
				return 0;
			continue;
		}
		frames[n++] = r->pc;
		if (n == max)
			break;
	}
	return n;
}

/*
 * Announce the epoch, then read the published set. The exchange is a full
 * fence: either frames_reclaim() sees our epoch, or we see the set that
 * replaced anything it frees. A capture nested in a signal handler finds
 * the epoch of the one it interrupted already set (older, so it protects
 * at least as much) and leaves it for that one to clear.
 */
static const struct set *enter(struct frames_reader *rd, int *nested)
{
	*nested = __atomic_load_n(&rd->epoch, __ATOMIC_RELAXED) != 0;
	if (!*nested)
		__atomic_exchange_n(&rd->epoch,
				    __atomic_load_n(&global_epoch, __ATOMIC_ACQUIRE),
				    __ATOMIC_SEQ_CST);
	return __atomic_load_n(&published, __ATOMIC_SEQ_CST);
}

static void leave(struct frames_reader *rd, int nested)
{
	if (!nested)
		__atomic_store_n(&rd->epoch, 0, __ATOMIC_RELEASE);
}

__attribute__((noinline)) NO_CANARY
uint32_t frames_capture(struct frames_reader *rd, uint64_t site,
			uint64_t *frames, uint32_t max)
{
	const struct set *s;
	struct regs r;
	uint32_t n = 0;
	int nested;

	/* Where we are, in one asm: the rule at pc holds for this sp. */
	__asm__ volatile("leaq 0(%%rip), %0\n\t"
			 "movq %%rsp, %1\n\t"
			 "movq %%rbp, %2"
			 : "=r"(r.pc), "=r"(r.sp), "=r"(r.bp));
	s = enter(rd, &nested);
	if (s != NULL && max > 0)
		n = walk(s, &r, site, frames, max);
	leave(rd, nested);
	return n;
}

/* log2 of the cache slots for nrows rows. */
static uint32_t cache_bits(size_t nrows)
{
	uint32_t bits = 0;

	while ((1u << bits) < CACHE_MIN || ((1u << bits) < CACHE_MAX && (1u << bits) < nrows / 4))
		bits++;
	return bits;
}

/* A table for m: rows, then their cache, then their bucket index. */
static struct table *table_new(const struct ehframe_module *m,
			       const struct cfi_row *rows, size_t nrows)
{
	size_t nindex = cfi_buckets(rows, nrows);
	uint32_t bits = cache_bits(nrows);
	size_t len = sizeof(struct table) + nrows * sizeof(struct cfi_row) +
		     ((size_t)1 << bits) * sizeof(uint64_t) + nindex * sizeof(uint32_t);
	struct table *t;
	uint32_t *index;

	if (nrows > UINT32_MAX || nindex > UINT32_MAX || (t = pages_map(len)) == NULL)
		return NULL;
	t->b.len = pages_round(len);
	t->base = m->base;
	t->phdr = m->phdr;
	memcpy(t->name, m->name, sizeof(t->name));
	t->nrows = (uint32_t)nrows;
	memcpy(t->rows, rows, nrows * sizeof(struct cfi_row));
	t->cache = (uint64_t *)(t->rows + nrows);
	t->cache_shift = 32 - bits;
	/* Written now: a capture's first store to a slot must not fault. */
	memset(t->cache, 0, ((size_t)1 << bits) * sizeof(uint64_t));
	index = (uint32_t *)(t->cache + ((size_t)1 << bits));
	cfi_fill_buckets(t->rows, nrows, index, nindex);
	t->index = index;
	t->nindex = (uint32_t)nindex;
	return t;
}

/* Parse a copy of m's sections: index the FDEs, count the rows, write them. */
static struct table *build_table(const struct ehframe_module *m,
				 const struct ehframe_copy *c)
{
	struct cfi_input in = { c->hdr, c->hdr_len, c->hdr_addr, c->eh,
				c->eh_len, c->eh_addr, m->base };
	size_t nf = cfi_count_fdes(&in), flen = nf * sizeof(struct cfi_fde);
	struct cfi_fde *fdes = nf > 0 ? pages_map(flen) : NULL;
	struct cfi_row *rows = NULL;
	struct table *t = NULL;
	size_t nr = 0, rlen = 0;

	if (fdes != NULL) {
		nf = cfi_index(&in, fdes, nf);
		nr = cfi_rows(&in, fdes, nf, NULL, 0);
		rlen = nr * sizeof(struct cfi_row);
	}
	if (nr > 0 && (rows = pages_map(rlen)) != NULL &&
	    cfi_rows(&in, fdes, nf, rows, nr) == nr)
		t = table_new(m, rows, nr);
	pages_unmap(rows, rlen);
	pages_unmap(fdes, flen);
	return t;
}

/*
 * A table for m, or NULL: no executable code, no .eh_frame, unreadable,
 * or (counted in skipped) too large for the memory cap. The module's pages
 * that copying made resident stay counted as long as its table lives.
 */
static struct table *load_table(const struct ehframe_module *m)
{
	struct ehframe_copy c;
	struct table *t;

	if (m->hi <= m->lo || m->lo < m->base || m->hi - m->base > UINT32_MAX)
		return NULL;
	if (!ehframe_copy(m, &c)) {
		skipped += c.short_of_memory;
		return NULL;
	}
	t = build_table(m, &c);
	ehframe_release(&c);
	if (t != NULL) {
		t->b.resident = c.resident;
		return t;
	}
	arena_uncharge_frames(c.resident);
	skipped++;
	return NULL;
}

/* The table old already has for m, if m is the module it was built for. */
static struct table *find_table(const struct set *old, const struct ehframe_module *m)
{
	for (uint32_t i = 0; old != NULL && i < old->n; i++) {
		struct table *t = old->v[i].t;

		if (t->base == m->base && t->phdr == m->phdr && t->kept != syncs &&
		    strcmp(t->name, m->name) == 0)
			return t;
	}
	return NULL;
}

static void add_mod(struct set *s, const struct ehframe_module *m, struct table *t)
{
	struct mod *v = &s->v[s->n];

	if (s->n > 0) {		/* keep them sorted by lo: few, and nearly so */
		for (; v > s->v && v[-1].lo > m->lo; v--)
			v[0] = v[-1];
	}
	v->lo = m->lo;
	v->hi = m->hi;
	v->base = m->base;
	v->rows = t->rows;
	v->index = t->index;
	v->cache = t->cache;
	v->nindex = t->nindex;
	v->cache_shift = t->cache_shift;
	v->t = t;
	s->n++;
}

static void retire(struct block *b)
{
	b->epoch = global_epoch;
	b->next = retired;
	retired = b;
	bytes_retired += b->len;
}

/*
 * Publish s, then retire what only the old set leads to, tagged with the
 * current epoch, and move to the next one: a capture holding a later
 * epoch read the global epoch after s was published, so it can only see s.
 */
static void publish(struct set *s, struct set *old)
{
	__atomic_store_n(&published, s, __ATOMIC_SEQ_CST);
	bytes_live = s->b.len;
	for (uint32_t i = 0; i < s->n; i++)
		bytes_live += s->v[i].t->b.len;
	if (old == NULL)
		return;
	for (uint32_t i = 0; i < old->n; i++) {
		if (old->v[i].t->kept != syncs)
			retire(&old->v[i].t->b);
	}
	retire(&old->b);
	__atomic_add_fetch(&global_epoch, 1, __ATOMIC_SEQ_CST);
}

/*
 * Whether modules came or went, or the cap changed: a larger one may have
 * room for the modules skipped, a smaller one less for those kept.
 */
static int sync_due(void)
{
	return ehframe_changed(&listed) || arena_cap() != cap_at_sync;
}

/* The memory a table is counted for. */
static size_t table_cost(const struct table *t)
{
	return t->b.len + t->b.resident;
}

/*
 * t, if the tables kept so far (kept bytes) leave it room under a cap
 * that may have shrunk; else NULL, counted as skipped (t is retired with
 * the set it was in).
 */
static struct table *keep_table(struct table *t, size_t kept)
{
	if (kept + table_cost(t) <= arena_cap() / 2)
		return t;
	skipped++;
	return NULL;
}

size_t frames_sync(void)
{
	struct set *old = published, *s;
	size_t len, kept = 0;

	if (!sync_due() || !ehframe_list(&listed))
		return bytes_live;
	len = sizeof(struct set) + listed.n * sizeof(struct mod);
	s = pages_map_anyway(len);
	if (s == NULL) {
		listed.filled = 0;	/* try again next time */
		return bytes_live;
	}
	s->b.len = pages_round(len);
	syncs++;
	skipped = 0;
	cap_at_sync = arena_cap();
	for (size_t i = 0; i < listed.n; i++) {
		const struct ehframe_module *m = &listed.v[i];
		struct table *had = find_table(old, m);
		struct table *t = had ? keep_table(had, kept) : load_table(m);

		if (t == NULL)
			continue;
		kept += table_cost(t);
		t->kept = syncs;
		add_mod(s, m, t);
	}
	publish(s, old);
	return bytes_live;
}

void frames_reclaim(uint64_t (*oldest)(void *ctx), void *ctx)
{
	struct block **pp = &retired;
	uint64_t o;

	if (retired == NULL)
		return;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	o = oldest(ctx);
	while (*pp != NULL) {
		struct block *b = *pp;

		if (b->epoch < o) {
			*pp = b->next;
			bytes_retired -= b->len;
			arena_uncharge_frames(b->resident);
			pages_unmap(b, b->len);
		} else {
			pp = &b->next;
		}
	}
}

/* Sort n (lo, hi) pairs by lo: sets are small and set rarely. */
static void sort_ranges(uint64_t *r, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++) {
		uint64_t lo = r[2 * i], hi = r[2 * i + 1];
		uint32_t j = i;

		for (; j > 0 && r[2 * (j - 1)] > lo; j--) {
			r[2 * j] = r[2 * (j - 1)];
			r[2 * j + 1] = r[2 * (j - 1) + 1];
		}
		r[2 * j] = lo;
		r[2 * j + 1] = hi;
	}
}

int frames_set_wrappers(const uint64_t *ranges, uint32_t n)
{
	size_t len = sizeof(struct wrapset) + (size_t)n * 2 * sizeof(uint64_t);
	struct wrapset *w = NULL, *old = wrappers;

	if (n > 0) {
		w = pages_map_anyway(len);
		if (w == NULL)
			return -1;
		w->b.len = pages_round(len);
		w->n = n;
		memcpy(w->r, ranges, (size_t)n * 2 * sizeof(uint64_t));
		sort_ranges(w->r, n);
	}
	__atomic_store_n(&wrappers, w, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&frames_wrappers_gen, 1, __ATOMIC_RELEASE);
	if (old != NULL) {
		retire(&old->b);
		__atomic_add_fetch(&global_epoch, 1, __ATOMIC_SEQ_CST);
	}
	return 0;
}

/* Whether pc lies in one of the ranges of w. */
static int in_wrapper(const struct wrapset *w, uint64_t pc)
{
	uint32_t lo = 0, hi = w ? w->n : 0;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (pc < w->r[2 * mid])
			hi = mid;
		else if (pc >= w->r[2 * mid + 1])
			lo = mid + 1;
		else
			return 1;
	}
	return 0;
}

/*
 * A return address into a wrapper: the wrapper's CFA at that call is its
 * stack pointer (the CFA of the function it called) plus the rule's
 * offset, and its caller's return address lies just below that CFA.
 */
int32_t frames_wrapper_step(struct frames_reader *rd, uint64_t site)
{
	struct hints h = { NULL, NULL };
	const struct mod *m;
	int32_t step = 0;
	uint32_t rule;
	int nested;
	const struct set *s = enter(rd, &nested);
	const struct wrapset *w = __atomic_load_n(&wrappers, __ATOMIC_SEQ_CST);

	if (in_wrapper(w, site - 1)) {
		step = FRAMES_STEP_UNWIND;
		m = s ? module_of(s, &h, site - 1) : NULL;
		rule = m ? rule_at(m, (uint32_t)(site - 1 - m->base)) : CFI_STOP;
		if (cfi_kind(rule) == CFI_RSP && cfi_cfa_off(rule) >= 8)
			step = (int32_t)cfi_cfa_off(rule) + 1;
	}
	leave(rd, nested);
	return step;
}

uint64_t frames_epoch(void)
{
	return __atomic_load_n(&global_epoch, __ATOMIC_RELAXED);
}

size_t frames_pending(void)
{
	return bytes_retired;
}

uint32_t frames_skipped(void)
{
	return skipped;
}
