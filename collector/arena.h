/*
 * The collector's memory: every byte it keeps inside the target comes from
 * here, never from the host's malloc (whose locks a hooked thread may be
 * holding, or which may itself call our hooks).
 *
 * Blocks come in power-of-two size classes from ARENA_MIN to ARENA_MAX.
 * Small classes are cut from regions mapped once; a freed block goes on its
 * class's free list, a lock-free stack whose head carries a tag against
 * ABA. Large blocks are mapped and unmapped whole. Any thread may allocate
 * and free: no lock, no host call, at most an mmap.
 *
 * Every block counts against a cap, settable while running. When a request
 * would pass it, the allocation returns NULL and the caller degrades (folds
 * rows, drops counts, says so); nothing ever waits for memory. Threads'
 * tables may use three quarters of the cap: the rest keeps the collector
 * thread (rows, modules, sessions) able to report what was folded and
 * dropped. The unwind tables (frames.c), in pages of their own, are charged
 * against the same cap and may use half of it.
 */
#ifndef QSPTOP_ARENA_H
#define QSPTOP_ARENA_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#define ARENA_MIN 64
#define ARENA_SMALL_MAX (32u * 1024)	/* larger blocks are mapped alone */
#define ARENA_DEFAULT_CAP (64u << 20)

/* A zeroed block of at least size bytes, aligned to 64; NULL past the cap. */
void *arena_alloc(size_t size);

/* Like arena_alloc(), for threads' tables: NULL past 3/4 of the cap. */
void *arena_alloc_table(size_t size);

/* Give back a block of size bytes (the size it was allocated with). */
void arena_free(void *p, size_t size);

/*
 * Move a block to a new size, keeping min(old, new) bytes; the old block is
 * freed. NULL (the old block untouched) past the cap.
 */
void *arena_realloc(void *p, size_t old_size, size_t new_size);

/*
 * Make room for element n of *v, an array of *capacity elements of size
 * bytes: the capacity doubles, from first when empty. false when short of
 * memory (*v untouched).
 */
bool arena_grow(void **v, uint32_t *capacity, uint32_t n, uint32_t first,
		size_t size);

/*
 * Whether tables' memory is nearly spent: past 7/8 of their share, new
 * per-object entries give way so that the rest serves per-site entries.
 */
bool arena_tight(void);

/*
 * Count size bytes of the unwind tables' memory (mapped by frames.c and
 * ehframe.c, or host pages their copying made resident) against the cap:
 * false, nothing counted, past half of it or past the cap itself.
 */
bool arena_charge_frames(size_t size);

/*
 * Count size bytes of the unwind tables' memory even past the cap: the
 * few pages that list modules and tables (see pages_map_anyway()).
 */
void arena_charge_frames_anyway(size_t size);

/* The bytes arena_charge_frames() could count now. */
size_t arena_frames_room(void);

/* Stop counting size bytes that arena_charge_frames() counted. */
void arena_uncharge_frames(size_t size);

/* Set the cap in bytes (0: the default). */
void arena_set_cap(size_t bytes);

/* The cap, and the bytes in blocks handed out now. */
size_t arena_cap(void);
size_t arena_used(void);

/*
 * The child side of fork(): everything allocated before belongs to threads
 * that do not exist here. Start empty, returning the pages; the unwind
 * tables, which the child goes on using, stay counted.
 */
void arena_forget_all(void);

#endif
