/*
 * Finding the loaded modules and copying their unwind sections out of
 * them, for frames.c. dl_iterate_phdr's callbacks only copy into storage
 * prepared beforehand (no allocation, I/O or locks in there: the loader's
 * lock is held, and a fork meanwhile would leave it held in the child);
 * everything else happens outside.
 */
#ifndef QSPTOP_EHFRAME_H
#define QSPTOP_EHFRAME_H

#include <stddef.h>
#include <stdint.h>

#define EHFRAME_NAME 256	/* bytes of a module's name kept, NUL included */
#define EHFRAME_LOADS 16	/* PT_LOAD segments kept per module */
#define EHFRAME_HDR 32		/* bytes of .eh_frame_hdr copied: its fixed part */

/* A loaded module as dl_iterate_phdr listed it. */
struct ehframe_module {
	uint64_t base;			/* dlpi_addr */
	const void *phdr;		/* dlpi_phdr: with base and name, its identity */
	uint64_t lo, hi;		/* its executable segments; lo == hi: none */
	uint64_t hdr_vaddr, hdr_size;	/* PT_GNU_EH_FRAME; size 0: none */
	uint32_t nloads;
	struct {
		uint64_t vaddr, memsz;
	} loads[EHFRAME_LOADS];
	char name[EHFRAME_NAME];	/* truncated */
};

/* The modules loaded at the last ehframe_list(). */
struct ehframe_list {
	struct ehframe_module *v;
	size_t n, cap;
	unsigned long long adds, subs;	/* dlpi_adds and dlpi_subs then */
	int filled;
};

/*
 * A module's unwind sections, copied. The copy's pages and the module's
 * pages that copying made resident are counted against the memory cap
 * (arena_charge_frames()): the first until ehframe_release(), the second
 * (resident) until the caller stops counting them.
 */
struct ehframe_copy {
	uint8_t hdr[EHFRAME_HDR];
	size_t hdr_len;
	uint64_t hdr_addr;
	uint8_t *eh;			/* pages of our own */
	size_t eh_len, eh_map;		/* bytes of .eh_frame, bytes reserved */
	uint64_t eh_addr;
	size_t charged;			/* bytes of the copy counted */
	size_t resident;		/* bytes of the module's pages counted */
	int short_of_memory;		/* the cap stopped the copy */
};

/*
 * The least memory building a table takes per FDE: its bytes (16 at
 * least) in our copy and in the module's pages the copying makes
 * resident, and its entry in the index (8).
 */
#define EHFRAME_FDE_MIN (16u + 16u + 8u)

struct dl_phdr_info;

/*
 * Walk the modules with walker instead of dl_iterate_phdr (the collector
 * passes its walk inside the fork fence, modules_iterate()).
 */
void ehframe_set_walker(int (*walker)(int (*)(struct dl_phdr_info *, size_t,
					      void *), void *));

/* Whether modules were loaded or unloaded since l was filled. */
int ehframe_changed(const struct ehframe_list *l);

/* Fill l with the modules loaded now; 0 when memory is short. */
int ehframe_list(struct ehframe_list *l);

/*
 * Copy m's .eh_frame_hdr start and .eh_frame; 0 if it has none we can
 * read, or (c->short_of_memory) when it would not fit under the cap.
 */
int ehframe_copy(const struct ehframe_module *m, struct ehframe_copy *c);

/* Give back the pages of a copy (c->resident stays counted). */
void ehframe_release(struct ehframe_copy *c);

#endif
