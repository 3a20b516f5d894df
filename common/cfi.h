/*
 * Call frame information: a module's .eh_frame, parsed off the hot path into
 * a compact table of unwind rules sorted by address, for frames.c to read in
 * a lock hook. Pure parsing: no globals, no allocation (the caller provides
 * every buffer), and every input byte is treated as hostile: a malformed
 * entry is skipped, never over-read.
 */
#ifndef QSPTOP_CFI_H
#define QSPTOP_CFI_H

#include <stddef.h>
#include <stdint.h>

/*
 * From pc (an offset from the module's base) up to the next row's pc, the
 * caller's frame is found by rule: CFA = rsp + off or rbp + off, the return
 * address at CFA - 8, the caller's rbp either unchanged or saved at
 * CFA - 8 * slot. CFI_STOP means "stop here": no information, or a rule we
 * do not express (signal frames, PLT entries, expressions, _start).
 */
struct cfi_row {
	uint32_t pc;
	uint32_t rule;	/* kind (2 bits) | rbp slot (6 bits) | CFA offset (24 bits) */
};

enum { CFI_STOP = 0, CFI_RSP = 1, CFI_RBP = 2 };

#define CFI_CFA_MAX ((1u << 24) - 1)
#define CFI_SLOT_MAX 63u
#define CFI_RULE(kind, off, slot) \
	((uint32_t)(kind) | (uint32_t)(slot) << 2 | (uint32_t)(off) << 8)

static inline unsigned cfi_kind(uint32_t rule) { return rule & 3; }
static inline uint32_t cfi_cfa_off(uint32_t rule) { return rule >> 8; }
static inline uint32_t cfi_rbp_slot(uint32_t rule) { return rule >> 2 & 63; }

/* A module's unwind sections, copied, and where they were copied from. */
struct cfi_input {
	const uint8_t *hdr;	/* .eh_frame_hdr (only its start is needed) */
	size_t hdr_len;
	uint64_t hdr_addr;	/* its runtime address: the datarel base */
	const uint8_t *eh;	/* .eh_frame */
	size_t eh_len;
	uint64_t eh_addr;	/* its runtime address: the pcrel base */
	uint64_t base;		/* the module's load bias; row pcs are offsets from it */
};

/* An FDE of the index: its first pc (offset from base), its offset in eh. */
struct cfi_fde {
	uint32_t pc;
	uint32_t off;
};

/*
 * The runtime address of .eh_frame from the start of .eh_frame_hdr: 1 with
 * *addr set, 2 when *addr holds the address of that pointer instead
 * (DW_EH_PE_indirect), 0 when unreadable.
 */
int cfi_eh_frame_addr(const uint8_t *hdr, size_t len, uint64_t hdr_addr,
		      uint64_t *addr);

/*
 * The number of FDEs .eh_frame_hdr says its search table holds; 0 when it
 * has none or does not say.
 */
uint64_t cfi_fde_count(const uint8_t *hdr, size_t len, uint64_t hdr_addr);

/* The length of the run of well-formed entries at eh, at most max bytes. */
size_t cfi_eh_frame_len(const uint8_t *eh, size_t max);

/* The number of FDEs in in->eh: the room cfi_index() needs. */
size_t cfi_count_fdes(const struct cfi_input *in);

/* Index the usable FDEs into fdes (room for cap), sorted by pc; returns how many. */
size_t cfi_index(const struct cfi_input *in, struct cfi_fde *fdes, size_t cap);

/*
 * Write the rows of the indexed FDEs into rows (room for cap), or only count
 * them when rows is NULL. Returns the number of rows; 0 when there are none
 * or they do not fit.
 */
size_t cfi_rows(const struct cfi_input *in, const struct cfi_fde *fdes,
		size_t nfdes, struct cfi_row *rows, size_t cap);

/* The row covering pc: the last with row.pc <= pc; NULL before the first. */
static inline const struct cfi_row *cfi_find(const struct cfi_row *rows,
					     uint32_t n, uint32_t pc)
{
	if (n == 0 || rows[0].pc > pc)
		return NULL;
	while (n > 1) {
		uint32_t half = n / 2;

		rows = rows[half].pc <= pc ? rows + half : rows;
		n -= half;
	}
	return rows;
}

/*
 * A binary search over a whole module (libc: ~15 steps, each load waiting
 * on the one before) costs more than the rest of an unwind step, so the
 * rows also get a bucket index: index[b] is the row covering
 * rows[0].pc + b * 2^CFI_BUCKET_SHIFT, which leaves a few rows to search.
 */
#define CFI_BUCKET_SHIFT 8

/* The number of index entries rows needs. */
size_t cfi_buckets(const struct cfi_row *rows, size_t n);

/* Fill index (cfi_buckets() entries) for rows. */
void cfi_fill_buckets(const struct cfi_row *rows, size_t n, uint32_t *index,
		      size_t nindex);

/* cfi_find() through the index. */
static inline const struct cfi_row *cfi_lookup(const struct cfi_row *rows,
					       const uint32_t *index,
					       uint32_t nindex, uint32_t pc)
{
	uint32_t b, lo;

	if (nindex == 0 || pc < rows[0].pc)
		return NULL;
	b = (pc - rows[0].pc) >> CFI_BUCKET_SHIFT;
	if (b >= nindex - 1)
		return &rows[index[nindex - 1]];
	lo = index[b];
	return cfi_find(rows + lo, index[b + 1] - lo + 1, pc);
}

#endif
