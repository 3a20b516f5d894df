/*
 * Stand-in until the frame-table unwinder lands: libunwind, with the
 * hazards of its dynamic TLS when dlopen'ed.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "frames.h"

/* Frames of our own above the site, at most. */
#define OWN_FRAMES 8

size_t frames_sync(void)
{
	return 0;
}

void frames_reclaim(uint64_t (*oldest)(void *ctx), void *ctx)
{
	(void)oldest;
	(void)ctx;
}

uint32_t frames_capture(struct frames_reader *r, uint64_t site,
			uint64_t *frames, uint32_t max)
{
	void *buf[64 + OWN_FRAMES];
	int n, i;

	(void)r;
	if (max > 64)
		max = 64;
	n = unw_backtrace(buf, (int)max + OWN_FRAMES);
	for (i = 0; i < n && i < OWN_FRAMES; i++) {
		if ((uint64_t)(uintptr_t)buf[i] == site)
			break;
	}
	if (i >= n || i >= OWN_FRAMES)
		return 0;
	n -= i;
	if ((uint32_t)n > max)
		n = (int)max;
	for (int k = 0; k < n; k++)
		frames[k] = (uint64_t)(uintptr_t)buf[i + k];
	return (uint32_t)n;
}
