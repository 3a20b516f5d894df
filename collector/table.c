/* Per-thread tables: claiming, adding keys, growing, retiring, recycling. */
#include <errno.h>
#include <linux/futex.h>
#include <string.h>
#include <unistd.h>

#include "arena.h"
#include "lfstack.h"
#include "table.h"
#include "frames.h"

__thread struct thread_state tls_self __attribute__((tls_model("initial-exec")));
uint32_t table_epoch;

static struct thread_table *all_head;
static uint64_t free_head;		/* lfstack.h head of free tables */
static void *retired_head;		/* obj tables and site indexes */
static uint32_t threads_seen;
static uint64_t claim_drops;

/* The header shared by what owners retire: a link, then the size. */
struct retired {
	struct retired *next;
	uint32_t bytes;
};

struct thread_table *table_first(void)
{
	return __atomic_load_n(&all_head, __ATOMIC_ACQUIRE);
}

uint32_t table_threads_seen(void)
{
	return __atomic_load_n(&threads_seen, __ATOMIC_RELAXED);
}

uint64_t table_claim_drops(void)
{
	return __atomic_load_n(&claim_drops, __ATOMIC_RELAXED);
}

void table_count_claim_drop(void)
{
	__atomic_add_fetch(&claim_drops, 1, __ATOMIC_RELAXED);
}

static void retire(void *block)
{
	struct retired *r = block;

	r->next = __atomic_load_n(&retired_head, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&retired_head, (void **)&r->next, r,
					    true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
}

/*
 * Everything retired before this call was unpublished first (release), so
 * the collector's loads from now on (acquire) can no longer reach it.
 */
void table_free_retired(void)
{
	struct retired *r = __atomic_exchange_n(&retired_head, NULL,
						__ATOMIC_ACQUIRE);

	while (r) {
		struct retired *next = r->next;

		arena_free(r, r->bytes);
		r = next;
	}
}

static size_t site_index_bytes(uint32_t slots)
{
	return sizeof(struct site_index) + slots * sizeof(struct site_slot);
}

static size_t obj_table_bytes(uint32_t slots)
{
	return sizeof(struct obj_table) +
	       slots * (sizeof(struct obj_slot) + sizeof(struct entry *) +
			sizeof(uint32_t));
}

static struct site_index *new_site_index(uint32_t slots)
{
	size_t bytes = site_index_bytes(slots);
	struct site_index *si = arena_alloc_table(bytes);

	if (si) {
		si->bytes = (uint32_t)bytes;
		si->mask = slots - 1;
	}
	return si;
}

static struct obj_table *new_obj_table(uint64_t key, uint32_t slots)
{
	size_t bytes = obj_table_bytes(slots);
	struct obj_table *o = arena_alloc_table(bytes);

	if (o) {
		o->bytes = (uint32_t)bytes;
		o->mask = slots - 1;
		o->key = key;
	}
	return o;
}

/* Put a copy of site in an index with room for it. */
static struct site_slot *place_site(struct site_index *si,
				    const struct site_slot *site)
{
	uint32_t i = hash_fast(site->key) & si->mask;

	while (si->slot[i].key != 0)
		i = (i + 1) & si->mask;
	si->slot[i].objects = site->objects;
	si->slot[i].step = site->step;
	si->slot[i].gen = site->gen;
	si->slot[i].via = site->via;
	__atomic_store_n(&si->slot[i].key, site->key, __ATOMIC_RELEASE);
	si->used++;
	return &si->slot[i];
}

/* Replace the site index with one twice its size; false without memory. */
static bool grow_sites(struct thread_table *t)
{
	struct site_index *old = t->sites, *si = new_site_index((old->mask + 1) * 2);

	if (si == NULL)
		return false;
	for (uint32_t i = 0; i <= old->mask; i++) {
		if (old->slot[i].key)
			place_site(si, &old->slot[i]);
	}
	__atomic_store_n(&t->sites, si, __ATOMIC_RELEASE);
	t->last_hop.key = 0;
	retire(old);
	return true;
}

/*
 * What table_add_site() does; errno is the caller's to keep. Its verdict
 * on wrappers waits for its first use (gen 0 is never current once a set
 * was published; before, no site is in a wrapper).
 */
static struct site_slot *add_site(struct thread_table *t, uint64_t key)
{
	struct site_index *si = t->sites;
	struct site_slot site = { .key = key };

	if ((si->used + 1) * 2 > si->mask + 1 && !grow_sites(t) &&
	    (si->used + 1) * 4 > (si->mask + 1) * 3)
		return NULL;
	site.objects = new_obj_table(key, OBJECTS_FIRST);
	if (site.objects == NULL)
		return NULL;
	return place_site(t->sites, &site);
}

/* Adding may map memory: errno, which a failed mmap sets, is kept. */
struct site_slot *table_add_site(struct thread_table *t, uint64_t key)
{
	int saved_errno = errno;
	struct site_slot *s = add_site(t, key);

	errno = saved_errno;
	return s;
}

/* A word of this thread's stack, read past any sanitizer's checks. */
static inline uint64_t stack_word(uint64_t at)
{
	uint64_t v;

	__asm__ volatile("movq (%1), %0" : "=r"(v) : "r"(at));
	return v;
}

/* Bring a site's wrapper verdict up to date with the current set. */
static void refresh_step(struct thread_table *t, struct site_slot *s)
{
	uint32_t gen = __atomic_load_n(&frames_wrappers_gen, __ATOMIC_ACQUIRE);

	if (s->gen == gen)
		return;
	s->step = frames_wrapper_step(&t->reader, KEY_SITE(s->key));
	s->gen = gen;
}

/* Wrappers nested deeper than this are taken as the caller. */
#define WRAP_HOPS 8

/* Remember a hop of one fixed-frame wrapper found by the walk below. */
static void note_hop(struct thread_table *t, uint64_t key, int32_t step,
		     uint64_t caller, struct site_slot *site, uint32_t gen)
{
	t->last_hop = (struct wrap_hop){ .key = key, .caller = caller,
					 .site = site, .step = step, .gen = gen };
}

/*
 * From a site inside wrappers to the first caller outside them: one load
 * per wrapper of fixed frame size (the offset its unwind rule gives),
 * a full unwind from here for the others. The last single hop is kept:
 * the same wrapper entered again from the same place skips the walk.
 */
struct obj_slot *table_wrapped_slot(struct thread_table *t, uint64_t *key,
				    uint64_t object, uint64_t cfa)
{
	uint64_t frames[WRAP_HOPS + 1], first = KEY_SITE(*key), from = *key;
	uint32_t type = KEY_TYPE(*key), n = 0, hops = 0;
	uint32_t gen = __atomic_load_n(&frames_wrappers_gen, __ATOMIC_ACQUIRE);
	const struct wrap_hop *h = &t->last_hop;
	int32_t step = 0;
	struct site_slot *s;

	if (h->key == from && h->gen == gen &&
	    stack_word(cfa + (uint64_t)(h->step - 1) - 8) == h->caller) {
		*key = KEY(h->caller, type);
		return table_object(t, h->site, object);
	}
	for (uint32_t hop = 0; hop < WRAP_HOPS; hop++, hops++) {
		uint64_t caller;

		if ((s = table_site(t, *key)) == NULL)
			return NULL;
		refresh_step(t, s);
		if (s->step == 0)
			break;
		if (s->step > 0 && n == 0) {
			step = s->step;
			cfa += (uint64_t)(s->step - 1);
			caller = stack_word(cfa - 8);
		} else {
			if (n == 0)
				n = frames_capture(&t->reader, first, frames,
						   WRAP_HOPS + 1);
			if (hop + 1 >= n)
				break;
			caller = frames[hop + 1];
		}
		if (caller == 0)
			break;
		*key = KEY(caller, type);
	}
	s = table_site(t, *key);
	if (s == NULL)
		return NULL;
	if (s->via == 0 && KEY_SITE(*key) != first)
		__atomic_store_n(&s->via, first, __ATOMIC_RELAXED);
	if (hops == 1 && n == 0 && step > 0 && s->step == 0 && s->gen == gen)
		note_hop(t, from, step, KEY_SITE(*key), s, gen);
	return table_object(t, s, object);
}

/* Put an object in a table with room for it; its index. */
static uint32_t place_object(struct obj_table *o, uint64_t object,
			     uint64_t acquisitions, struct entry *e)
{
	uint32_t i = hash_fast(object) & o->mask;

	while (o->slot[i].object != 0)
		i = (i + 1) & o->mask;
	__atomic_store_n(&o->slot[i].acquisitions, acquisitions, __ATOMIC_RELAXED);
	__atomic_store_n(&obj_entries(o)[i], e, __ATOMIC_RELAXED);
	__atomic_store_n(&o->slot[i].object, object, __ATOMIC_RELEASE);
	o->used++;
	return i;
}

/* Replace a site's object table with one twice its size; NULL without memory. */
static struct obj_table *grow_objects(struct site_slot *s)
{
	struct obj_table *old = s->objects;
	struct obj_table *o = new_obj_table(old->key, (old->mask + 1) * 2);

	if (o == NULL)
		return NULL;
	for (uint32_t i = 0; i <= old->mask; i++) {
		if (old->slot[i].object)
			place_object(o, old->slot[i].object,
				     old->slot[i].acquisitions,
				     obj_entries(old)[i]);
	}
	__atomic_store_n(&s->objects, o, __ATOMIC_RELEASE);
	retire(old);
	return o;
}

/*
 * The slot for an object; past the memory cap, the site's "several
 * objects" slot instead. Per-object keys stop at three quarters of the
 * table and give way first; the folded one may fill it to seven eighths,
 * so probing never gets long whatever cannot be recorded. Three quarters,
 * not half: a site with many locks taken in no order misses the cache on
 * every slot, and a denser table (16 bytes a slot, 3/8 to 3/4 full)
 * keeps more of them in it; a longer probe mostly stays in the line.
 */
static struct obj_slot *add_object(struct site_slot *s, uint64_t object)
{
	struct obj_table *o = s->objects;
	uint32_t n = o->mask + 1;

	if (object != OBJECT_FOLDED) {
		if (arena_tight() ||
		    ((o->used + 1) * 4 > n * 3 && (o = grow_objects(s)) == NULL)) {
			struct obj_table *f = s->objects;

			for (uint32_t i = hash_fast(OBJECT_FOLDED) & f->mask;;
			     i = (i + 1) & f->mask) {
				if (f->slot[i].object == OBJECT_FOLDED)
					return &f->slot[i];
				if (f->slot[i].object == 0)
					break;
			}
			return add_object(s, OBJECT_FOLDED);
		}
	} else if ((o->used + 1) * 8 > n * 7 && (o = grow_objects(s)) == NULL) {
		return NULL;
	}
	return &o->slot[place_object(o, object, 0, NULL)];
}

struct obj_slot *table_add_object(struct thread_table *t, struct site_slot *s,
				  uint64_t object)
{
	int saved_errno = errno;
	struct obj_slot *x = add_object(s, object);

	(void)t;
	errno = saved_errno;
	return x;
}

struct entry *table_entry(struct thread_table *t, uint64_t key, uint64_t object)
{
	struct site_index *si = t->sites;
	struct obj_table *o;
	struct entry *e;
	uint32_t i;

	for (i = hash_fast(key) & si->mask; si->slot[i].key != key;
	     i = (i + 1) & si->mask) {
		if (si->slot[i].key == 0)
			return NULL;
	}
	o = si->slot[i].objects;
	for (i = hash_fast(object) & o->mask; o->slot[i].object != object;
	     i = (i + 1) & o->mask) {
		if (o->slot[i].object == 0)
			return NULL;
	}
	e = obj_entries(o)[i];
	if (e == NULL && (e = arena_alloc_table(sizeof(*e))) != NULL)
		__atomic_store_n(&obj_entries(o)[i], e, __ATOMIC_RELEASE);
	return e;
}

struct hold_slot *table_hold_slot(struct thread_table *t, uint64_t key,
				  uint64_t object)
{
	struct hold_table *h = t->holds;
	uint32_t i;

	if (h == NULL) {
		h = arena_alloc_table(sizeof(*h));
		if (h == NULL)
			return NULL;
		__atomic_store_n(&t->holds, h, __ATOMIC_RELEASE);
	}
	for (i = hash_fast(key ^ object) % HOLD_SLOTS;; i = (i + 1) % HOLD_SLOTS) {
		struct hold_slot *s = &h->slot[i];

		if (s->key == key && s->object == object)
			return s;
		if (s->key == 0)
			break;
	}
	if (h->used >= HOLD_SLOTS_USED)
		return NULL;
	h->used++;
	h->slot[i].object = object;
	__atomic_store_n(&h->slot[i].key, key, __ATOMIC_RELEASE);
	return &h->slot[i];
}

/* A table from the free list, or a new one on the list of all tables. */
static struct thread_table *take_table(void)
{
	struct thread_table *t = lf_pop(&free_head);

	if (t) {
		__atomic_store_n(&t->state, TABLE_CLAIMING, __ATOMIC_RELAXED);
		return t;
	}
	t = arena_alloc_table(sizeof(*t));
	if (t == NULL)
		return NULL;
	t->state = TABLE_CLAIMING;
	t->all_next = __atomic_load_n(&all_head, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&all_head, &t->all_next, t, true,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
	return t;
}

/*
 * Hold the table's robust mutex for the thread's life: the kernel marks it
 * owner-dead when the thread exits. Returns the thread id it holds it as.
 */
static uint32_t hold_sentinel(struct thread_table *t,
			      int (*trylock)(pthread_mutex_t *))
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&t->sentinel, &a);
	pthread_mutexattr_destroy(&a);
	if (trylock == NULL || trylock(&t->sentinel) != 0)
		return 0;
	return (uint32_t)t->sentinel.__data.__owner;
}

struct thread_table *table_claim(int (*trylock)(pthread_mutex_t *))
{
	struct thread_table *t = take_table();

	if (t == NULL)
		return NULL;
	t->sites = new_site_index(SITES_FIRST);
	/* Atomic: a waiter looking for its lock's holder reads it (hooks.c). */
	__atomic_store_n(&t->tid, t->sites ? hold_sentinel(t, trylock) : 0,
			 __ATOMIC_RELAXED);
	if (t->tid == 0) {
		if (t->sites)
			arena_free(t->sites, t->sites->bytes);
		t->sites = NULL;
		__atomic_store_n(&t->state, TABLE_FREE, __ATOMIC_RELEASE);
		lf_push(&free_head, t);
		return NULL;
	}
	__atomic_add_fetch(&threads_seen, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&t->state, TABLE_LIVE, __ATOMIC_RELEASE);
	return t;
}

bool table_thread_gone(const struct thread_table *t)
{
	int word = __atomic_load_n(&t->sentinel.__data.__lock, __ATOMIC_ACQUIRE);

	return ((uint32_t)word & FUTEX_TID_MASK) != t->tid;
}

/* Free a site's object table and the entries it points to. */
static void free_objects(struct obj_table *o)
{
	for (uint32_t i = 0; i <= o->mask; i++)
		arena_free(obj_entries(o)[i], sizeof(struct entry));
	arena_free(o, o->bytes);
}

void table_recycle(struct thread_table *t)
{
	struct site_index *si = t->sites;

	for (uint32_t i = 0; si && i <= si->mask; i++) {
		if (si->slot[i].key)
			free_objects(si->slot[i].objects);
	}
	if (si)
		arena_free(si, si->bytes);
	t->sites = NULL;
	arena_free(t->holds, sizeof(*t->holds));
	t->holds = NULL;
	arena_free(t->order, sizeof(*t->order));
	t->order = NULL;
	memset(t->recent, 0, sizeof(t->recent));
	memset(&t->waiting, 0, sizeof(t->waiting));
	t->last_hop.key = 0;
	t->dropped = 0;
	t->nested = 0;
	t->reader.epoch = 0;
	t->unwind_epoch = 0;
	t->unwinds = 0;
	t->unwind_credit_ns = 0;
	__atomic_store_n(&t->state, TABLE_FREE, __ATOMIC_RELEASE);
	lf_push(&free_head, t);
}

/*
 * In a forked child only the forking thread exists and the parent's counts
 * are not the child's. The old tables are abandoned with the arena.
 */
void table_forget_all(void)
{
	all_head = NULL;
	free_head = 0;
	retired_head = NULL;
	threads_seen = 0;
	claim_drops = 0;
	tls_self.table = NULL;
	tls_self.depth = 0;
	tls_self.nheld = 0;
}
