/*
 * pprof profiles (tui/profile.proto), gzip-compressed: samples of lock
 * waits by stack, with the locations, functions and mappings their
 * addresses resolve to, in the convention of Go's mutex profile.
 */
#ifndef QSPTOP_PPROF_H
#define QSPTOP_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "symbols.h"

/* The values of a sample, in the profile's sample_type order. */
enum pprof_value {
	PPROF_CONTENTIONS,	/* contentions/count: waits that got the lock */
	PPROF_DELAY,		/* delay/nanoseconds: time waited */
	PPROF_ACQUISITIONS,	/* acquisitions/count */
	PPROF_CAUSED,		/* caused/nanoseconds: others' wait behind
				   holds, at the holder's stack */
	PPROF_VALUES,
};

/* One sample: a stack and its values, labelled with the lock. */
struct pprof_sample {
	const uint64_t *frames;	/* return addresses, innermost first */
	unsigned depth;		/* 0: the sample hangs under where */
	const char *where;	/* a pseudo-frame's name when depth is 0 */
	int64_t value[PPROF_VALUES];
	const char *type;	/* "mutex", ... */
	const char *object;	/* the lock's name or address, or NULL */
	const char *role;	/* "lock" or "idle" */
	int64_t pid;		/* 0: none */
};

struct pprof;

/* A profile resolving addresses (tagged, procs.h) through s. */
struct pprof *pprof_new(struct symbols *s);

/* Add a sample; what it points to is copied. */
void pprof_add(struct pprof *p, const struct pprof_sample *smp);

/*
 * The profile, taken at time_ns (since the epoch) over duration_ns,
 * gzip'd into a malloc'ed buffer of *len bytes; frees p.
 */
uint8_t *pprof_finish(struct pprof *p, int64_t time_ns, int64_t duration_ns,
		      size_t *len);

#endif
