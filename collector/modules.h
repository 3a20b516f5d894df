/*
 * The modules (executable and shared objects) mapped in the target, and
 * the one door to the loader's module list.
 *
 * dl_iterate_phdr holds the loader's write lock while its callback runs.
 * Every walk of the collector goes through modules_iterate(), which also
 * holds the fork fence: glibc 2.36 does not reset that loader lock in a
 * fork child, so a fork in the middle of a walk would leave the child's
 * next dlopen blocked forever. Callbacks allocate nothing from the host
 * and do no I/O: what they need from files is read before or after.
 */
#ifndef QSPTOP_MODULES_H
#define QSPTOP_MODULES_H

#include <link.h>
#include <stdbool.h>
#include <stddef.h>

#include "../common/proto.h"

struct modules {
	struct proto_module *v;
	uint32_t n, cap;
	unsigned long long adds;	/* dlpi_adds at the last refresh */
};

/* dl_iterate_phdr(cb, arg) inside the fork fence. */
int modules_iterate(int (*cb)(struct dl_phdr_info *, size_t, void *),
		    void *arg);

/* Install the fork fence (pthread_atfork); the child side resets it. */
void modules_fence_fork(void);

/*
 * Record modules loaded since the last call (all of them the first time).
 * Returns the number added. Collector thread only.
 */
size_t modules_refresh(struct modules *ms);

/*
 * Copy the GNU build id found in size bytes of ELF notes into m; notes
 * that claim more than size are ignored, never read past.
 */
void modules_note_build_id(const void *notes, size_t size,
			   struct proto_module *m);

/* Whether [p, p + len) lies in one PT_LOAD segment of info with flags need. */
bool modules_in_segment(const struct dl_phdr_info *info, const void *p,
			size_t len, unsigned need);

#endif
