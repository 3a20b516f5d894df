/*
 * Stacks of the calling thread, unwound from frame tables prepared off the
 * hot path, so that a capture inside a lock hook never allocates, locks,
 * or calls the host.
 */
#ifndef QSPTOP_FRAMES_H
#define QSPTOP_FRAMES_H

#include <stddef.h>
#include <stdint.h>

/* One per thread, zeroed, in memory that thread owns; see frames_capture(). */
struct frames_reader {
	uint64_t epoch;
};

/*
 * Collector thread only: build tables for modules loaded since the last
 * call and retire those of modules unloaded. Returns the bytes of table
 * memory in use.
 */
size_t frames_sync(void);

/*
 * Collector thread only: free retired tables that no capture can still be
 * reading. oldest() returns the smallest nonzero epoch any reader holds
 * (UINT64_MAX when none is inside a capture).
 */
void frames_reclaim(uint64_t (*oldest)(void *ctx), void *ctx);

/*
 * Any thread, inside a lock hook: the return addresses of the calling
 * thread's stack into frames, frames[0] = site (the return address into
 * the hook's caller), at most max; returns the depth, 0 when site is not
 * among the first frames or no table covers it.
 */
uint32_t frames_capture(struct frames_reader *r, uint64_t site,
			uint64_t *frames, uint32_t max);

#endif
