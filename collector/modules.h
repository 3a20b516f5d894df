/* The modules (executable and shared objects) mapped in the target. */
#ifndef QSPTOP_MODULES_H
#define QSPTOP_MODULES_H

#include <stddef.h>

#include "../common/proto.h"

struct modules {
	struct proto_module *v;
	size_t n;
	unsigned long long adds;	/* dlpi_adds at the last refresh */
};

/*
 * Record modules loaded since the last call (all of them the first time).
 * Returns the number added. Runs on the collector thread only.
 */
size_t modules_refresh(struct modules *ms);

/* The address range of the module holding addr; -1 if none does. */
int modules_extent(const void *addr, uint64_t *lo, uint64_t *hi);

/* Release the memory of ms. */
void modules_free(struct modules *ms);

#endif
