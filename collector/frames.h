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

/*
 * Lock wrappers. The collector thread publishes the code ranges [lo, hi)
 * of the functions the front end calls wrappers (n pairs, any order; none
 * to count them as the call sites they are); frames_wrappers_gen changes
 * with every set, so that a verdict on a site can be kept until it does.
 */
int frames_set_wrappers(const uint64_t *ranges, uint32_t n);
extern uint32_t frames_wrappers_gen;

#define FRAMES_STEP_UNWIND (-1)

/*
 * Any thread: how to get from site, a return address, to its caller's
 * return address when site lies in a wrapper. 0: it does not; 1 + k: the
 * caller's return address is at cfa + k - 8, where cfa is the CFA of the
 * function site returns from (the wrapper's CFA is cfa + k);
 * FRAMES_STEP_UNWIND: only an unwind finds it (frames_capture()).
 */
int32_t frames_wrapper_step(struct frames_reader *r, uint64_t site);

/* Collector thread: the epoch a capture starting now would hold. */
uint64_t frames_epoch(void);

/* Collector thread: bytes retired and not yet freed by frames_reclaim(). */
size_t frames_pending(void);

/*
 * Collector thread: the modules the last frames_sync() left without a
 * table because it would not fit under the memory cap (arena.h); their
 * frames end a capture, as code without unwind data does.
 */
uint32_t frames_skipped(void);

#endif
