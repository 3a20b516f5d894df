/*
 * The hashes of qsptop, collector and front end: one mix for keys of the
 * front end's tables, one multiply for the collector's fast path, one for
 * arrays of frames.
 */
#ifndef QSPTOP_HASH_H
#define QSPTOP_HASH_H

#include <stdint.h>

/* All 64 bits of x mixed (the splitmix64 finalizer). */
static inline uint64_t hash_mix(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * 32 bits of x by one multiply (Fibonacci hashing): cheap enough for a
 * lock call that does not wait, good enough for addresses.
 */
static inline uint32_t hash_fast(uint64_t x)
{
	return (uint32_t)((x * 0x9e3779b97f4a7c15ull) >> 32);
}

/* n frames (FNV-1a over words), folded to 32 bits. */
static inline uint32_t hash_frames(const uint64_t *f, uint32_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (uint32_t i = 0; i < n; i++)
		h = (h ^ f[i]) * 0x100000001b3ull;
	return (uint32_t)(h ^ (h >> 32));
}

#endif
