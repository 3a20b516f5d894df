/* The collector's own memory: size classes, lock-free free lists, a cap. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "arena.h"
#include "lfstack.h"

/* Classes 64 B .. 32 KiB; a slab of a class is carved into blocks at once. */
#define CLASSES 10
_Static_assert(ARENA_MIN << (CLASSES - 1) == ARENA_SMALL_MAX, "classes");
#define SLAB_SIZE (64u * 1024)

static uint64_t heads[CLASSES];		/* lfstack.h heads, one per class */
static size_t cap = ARENA_DEFAULT_CAP;
static size_t used;			/* bytes mapped: slabs and large blocks */
static size_t frames_used;		/* the part of used that is unwind tables' */

/* The class of a small size: 0 for 64 bytes, 1 for 128, ... */
static unsigned class_of(size_t size)
{
	unsigned c = 0;

	while (((size_t)ARENA_MIN << c) < size)
		c++;
	return c;
}

/* The share of the cap threads' tables may use. */
static size_t table_share(void)
{
	size_t c = __atomic_load_n(&cap, __ATOMIC_RELAXED);

	return c - c / 4;
}

/* Count size bytes as mapped if that stays under limit. */
static bool charge(size_t size, size_t limit)
{
	size_t now = __atomic_load_n(&used, __ATOMIC_RELAXED);

	do {
		if (now + size > limit)
			return false;
	} while (!__atomic_compare_exchange_n(&used, &now, now + size, true,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return true;
}

static void uncharge(size_t size)
{
	__atomic_sub_fetch(&used, size, __ATOMIC_RELAXED);
}

static void *map(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Map a slab of class c: one block for the caller, the rest freed. */
static void *refill(unsigned c, size_t limit)
{
	size_t size = (size_t)ARENA_MIN << c;
	char *slab;

	if (!charge(SLAB_SIZE, limit))
		return NULL;
	slab = map(SLAB_SIZE);
	if (slab == NULL) {
		uncharge(SLAB_SIZE);
		return NULL;
	}
	for (size_t off = size; off + size <= SLAB_SIZE; off += size)
		lf_push(&heads[c], slab + off);
	return slab;
}

static size_t large_size(size_t size)
{
	return (size + 4095) & ~(size_t)4095;
}

/*
 * A block under limit. A block from a free list is zeroed here; its first
 * word atomically, as a concurrent pop may still be reading it.
 */
static void *alloc_under(size_t size, size_t limit)
{
	unsigned c;
	void *p;

	if (size > ARENA_SMALL_MAX) {
		size = large_size(size);
		if (!charge(size, limit))
			return NULL;
		p = map(size);
		if (p == NULL)
			uncharge(size);
		return p;
	}
	c = class_of(size);
	p = lf_pop(&heads[c]);
	if (p == NULL)
		return refill(c, limit);
	__atomic_store_n((uint64_t *)p, 0, __ATOMIC_RELAXED);
	memset((char *)p + 8, 0, ((size_t)ARENA_MIN << c) - 8);
	return p;
}

void *arena_alloc(size_t size)
{
	return alloc_under(size, __atomic_load_n(&cap, __ATOMIC_RELAXED));
}

void *arena_alloc_table(size_t size)
{
	return alloc_under(size, table_share());
}

void arena_free(void *p, size_t size)
{
	if (p == NULL)
		return;
	if (size > ARENA_SMALL_MAX) {
		size = large_size(size);
		munmap(p, size);
		uncharge(size);
		return;
	}
	lf_push(&heads[class_of(size)], p);
}

void *arena_realloc(void *p, size_t old_size, size_t new_size)
{
	void *q = arena_alloc(new_size);

	if (q == NULL)
		return NULL;
	if (p)
		memcpy(q, p, old_size < new_size ? old_size : new_size);
	arena_free(p, old_size);
	return q;
}

bool arena_grow(void **v, uint32_t *capacity, uint32_t n, uint32_t first,
		size_t size)
{
	uint32_t c = *capacity ? *capacity * 2 : first;
	void *p;

	if (n < *capacity)
		return true;
	p = arena_realloc(*v, *capacity * size, c * size);
	if (p == NULL)
		return false;
	*v = p;
	*capacity = c;
	return true;
}

bool arena_tight(void)
{
	size_t share = table_share();

	return __atomic_load_n(&used, __ATOMIC_RELAXED) > share - share / 8;
}

bool arena_charge_frames(size_t size)
{
	size_t now = __atomic_load_n(&frames_used, __ATOMIC_RELAXED);

	do {
		if (now + size > arena_cap() / 2)
			return false;
	} while (!__atomic_compare_exchange_n(&frames_used, &now, now + size, true,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	if (charge(size, arena_cap()))
		return true;
	__atomic_sub_fetch(&frames_used, size, __ATOMIC_RELAXED);
	return false;
}

void arena_charge_frames_anyway(size_t size)
{
	__atomic_add_fetch(&frames_used, size, __ATOMIC_RELAXED);
	__atomic_add_fetch(&used, size, __ATOMIC_RELAXED);
}

size_t arena_frames_room(void)
{
	size_t c = arena_cap(), u = arena_used();
	size_t f = __atomic_load_n(&frames_used, __ATOMIC_RELAXED);
	size_t share = c / 2 > f ? c / 2 - f : 0, all = c > u ? c - u : 0;

	return share < all ? share : all;
}

void arena_uncharge_frames(size_t size)
{
	__atomic_sub_fetch(&frames_used, size, __ATOMIC_RELAXED);
	uncharge(size);
}

void arena_set_cap(size_t bytes)
{
	__atomic_store_n(&cap, bytes ? bytes : ARENA_DEFAULT_CAP,
			 __ATOMIC_RELAXED);
}

size_t arena_cap(void)
{
	return __atomic_load_n(&cap, __ATOMIC_RELAXED);
}

size_t arena_used(void)
{
	return __atomic_load_n(&used, __ATOMIC_RELAXED);
}

/* The parent's blocks stay mapped, untouched: copying nothing costs nothing. */
void arena_forget_all(void)
{
	memset(heads, 0, sizeof(heads));
	used = frames_used;
}
