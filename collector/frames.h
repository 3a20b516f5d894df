/*
 * Stacks captured inside lock hooks, from unwind tables prepared off the
 * hot path: the collector thread parses every module's .eh_frame (cfi.c)
 * into a sorted table of rules; a capture only reads those tables and its
 * own stack. Tables of unloaded modules are retired and freed once no
 * capture can still be reading them (epoch-based reclamation).
 */
#ifndef QSPTOP_FRAMES_H
#define QSPTOP_FRAMES_H

#include <stddef.h>
#include <stdint.h>

/* One per thread, zeroed, in memory that thread owns; see frames_capture(). */
struct frames_reader { uint64_t epoch; };

/*
 * Collector thread only: build tables for modules loaded since the last call
 * and retire those of modules unloaded. Returns the bytes of table memory in use.
 */
size_t frames_sync(void);

/*
 * Collector thread only: free retired tables that no capture can still be
 * reading. oldest() returns the smallest nonzero epoch any reader holds
 * (UINT64_MAX when none is inside a capture); it must load each reader's
 * epoch with acquire order.
 */
void frames_reclaim(uint64_t (*oldest)(void *ctx), void *ctx);

/*
 * Any thread, inside a lock hook: write into frames the return addresses of
 * the calling thread's stack, frames[0] = site (the return address into the
 * hook's caller), at most max; returns the depth, 0 when site is not among the
 * first 8 frames above the caller of frames_capture or no table covers it.
 * Never allocates, takes a lock, makes a syscall, touches TLS, or reads memory
 * other than the prepared tables and the thread's own stack.
 */
uint32_t frames_capture(struct frames_reader *r, uint64_t site, uint64_t *frames, uint32_t max);

/* Collector thread: the epoch a capture starting now would hold. */
uint64_t frames_epoch(void);

/* Collector thread: bytes retired and not yet freed by frames_reclaim(). */
size_t frames_pending(void);

#endif
