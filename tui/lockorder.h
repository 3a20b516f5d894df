/*
 * Lock-order warnings as the collectors send them: two locks taken in
 * both orders, each warning standing for one set of four call sites.
 */
#ifndef QSPTOP_LOCKORDER_H
#define QSPTOP_LOCKORDER_H

#include <stddef.h>
#include <stdint.h>

#include "../common/proto.h"
#include "symbols.h"

struct lock_order {
	unsigned proc;		/* whose collector sent it */
	uint32_t id;		/* its id in that collector */
	uint32_t stack;		/* model stack id; PROTO_NO_STACK: none */
	uint32_t then_stack;	/* the same, of then_site's acquisition */
	uint64_t first_object, first_site;	/* sites tagged (procs.h) */
	uint64_t then_object, then_site;
	uint64_t rev_held_site, rev_site;
	uint64_t count;
};

struct lockorder {
	struct lock_order *v;
	size_t n, cap;
};

/* Add a warning, or update the one proc's collector sent as m->id. */
void lockorder_put(struct lockorder *l, const struct lock_order *w);

void lockorder_free(struct lockorder *l);

/*
 * One warning as a line: "lock_a then lock_b at demo.c:40, reversed at
 * demo.c:60 (holding lock_b from demo.c:58), seen 12 times".
 */
void lockorder_text(char *buf, size_t size, struct symbols *s,
		    const struct lock_order *w);

#endif
