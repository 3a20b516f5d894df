/*
 * The .eh_frame parser: the rows of hand-built CIEs and FDEs (pointer
 * encodings, augmentations, the CFA program's opcodes, gaps, overlaps,
 * merging), then hostile bytes: every truncation of a real .eh_frame and
 * seeded random byte flips, in buffers that end at a guard page, never
 * crash, never over-read and always give a well-formed table.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "../../common/cfi.h"
#include "check.h"

/* Where the hand-built sections pretend to live. */
#define BASE 0x400000ull
#define HDR_ADDR (BASE + 0x800)
#define EH_ADDR (BASE + 0x1000)
#define TEXT (BASE + 0x10000)

#define RSP8 CFI_RULE(CFI_RSP, 8, 0)
#define NONE 0xffffffffu	/* rule_at: no row at all */

/* A section being built. */
struct sec {
	uint8_t b[4096];
	size_t n;
};

static void put(struct sec *s, uint64_t v, int size)
{
	for (int i = 0; i < size; i++)
		s->b[s->n++] = (uint8_t)(v >> (8 * i));
}

static void put_uleb(struct sec *s, uint64_t v)
{
	do {
		s->b[s->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

static void put_sleb(struct sec *s, int64_t v)
{
	for (;;) {
		uint8_t b = v & 0x7f;

		v >>= 7;
		if ((v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40))) {
			s->b[s->n++] = b;
			return;
		}
		s->b[s->n++] = b | 0x80;
	}
}

static void put_bytes(struct sec *s, const void *p, size_t n)
{
	memcpy(s->b + s->n, p, n);
	s->n += n;
}

/* A pointer v (absolute) in encoding enc, at the section's current end. */
static void put_ptr(struct sec *s, uint8_t enc, uint64_t v)
{
	uint64_t here = EH_ADDR + s->n;

	if ((enc & 0x70) == 0x50) {	/* aligned */
		while ((EH_ADDR + s->n) % 8)
			s->b[s->n++] = 0;
		put(s, v, 8);
		return;
	}
	if ((enc & 0x70) == 0x10)
		v -= here;
	else if ((enc & 0x70) == 0x30)
		v -= HDR_ADDR;
	switch (enc & 0x0f) {
	case 0x00: case 0x04: case 0x0c: put(s, v, 8); break;
	case 0x01: put_uleb(s, v); break;
	case 0x09: put_sleb(s, (int64_t)v); break;
	case 0x02: case 0x0a: put(s, v, 2); break;
	default: put(s, v, 4);
	}
}

static size_t open_entry(struct sec *s)
{
	size_t at = s->n;

	put(s, 0, 4);
	return at;
}

static void close_entry(struct sec *s, size_t at)
{
	uint32_t len = (uint32_t)(s->n - at - 4);

	memcpy(s->b + at, &len, 4);
}

/* The usual CIE prologue: CFA = rsp + 8, return address at CFA - 8. */
static const uint8_t cie_insns[] = { 0x0c, 0x07, 0x08, 0x90, 0x01 };

/* A CIE of version 1 with augmentation aug, FDE encoding enc, given RA column. */
static size_t put_cie_ra(struct sec *s, const char *aug, uint8_t enc, uint8_t ra)
{
	size_t at = open_entry(s);
	struct sec data = { .n = 0 };

	put(s, 0, 4);
	put(s, 1, 1);
	put_bytes(s, aug, strlen(aug) + 1);
	put_uleb(s, 1);
	put_sleb(s, -8);
	put(s, ra, 1);
	for (const char *a = aug + (aug[0] == 'z'); aug[0] == 'z' && *a; a++) {
		if (*a == 'R')
			put(&data, enc, 1);
		else if (*a == 'P')
			put(&data, 0x9b, 1), put(&data, 0x1234, 4);
		else if (*a == 'L')
			put(&data, 0x1b, 1);
	}
	if (aug[0] == 'z') {
		put_uleb(s, data.n);
		put_bytes(s, data.b, data.n);
	}
	put_bytes(s, cie_insns, sizeof(cie_insns));
	close_entry(s, at);
	return at;
}

static size_t put_cie(struct sec *s, const char *aug, uint8_t enc)
{
	return put_cie_ra(s, aug, enc, 16);
}

/* An FDE for [pc, pc + len) with the CFA program insns. */
static void put_fde(struct sec *s, size_t cie, uint8_t enc, int z, uint64_t pc,
		    uint64_t len, const void *insns, size_t n)
{
	size_t at = open_entry(s);

	put(s, s->n - cie, 4);
	put_ptr(s, enc, pc);
	put_ptr(s, enc & 0x0f, len);
	if (z)
		put_uleb(s, 0);
	put_bytes(s, insns, n);
	close_entry(s, at);
}

/* The table of eh[0, len), through all the steps frames.c takes. */
static size_t parse(const uint8_t *eh, size_t len, uint64_t base,
		    struct cfi_row *rows, size_t cap)
{
	struct cfi_input in = { NULL, 0, HDR_ADDR, eh, len, EH_ADDR, base };
	size_t nf = cfi_count_fdes(&in), need, got;
	struct cfi_fde *fdes = calloc(nf + 1, sizeof(*fdes));

	nf = cfi_index(&in, fdes, nf);
	need = cfi_rows(&in, fdes, nf, NULL, 0);
	got = cfi_rows(&in, fdes, nf, rows, cap);
	CHECK(need <= cap ? got == need : got == 0,
	      "rows counted %zu, written %zu (room %zu)", need, got, cap);
	free(fdes);
	return got;
}

static struct cfi_row rows[4096];
static size_t nrows;

static void parse_sec(const struct sec *s, uint64_t base)
{
	nrows = parse(s->b, s->n, base, rows, 4096);
}

/* The rule at pc (absolute, of a module at base), NONE before every row. */
static uint32_t rule_at_base(uint64_t pc, uint64_t base)
{
	const struct cfi_row *r = cfi_find(rows, (uint32_t)nrows, (uint32_t)(pc - base));

	return r ? r->rule : NONE;
}

static uint32_t rule_at(uint64_t pc)
{
	return rule_at_base(pc, BASE);
}

#define CHECK_RULE(pc, want)                                                  \
	CHECK(rule_at(pc) == (want), "rule at %#llx: expected %#x, got %#x",  \
	      (unsigned long long)(pc), (unsigned)(want), rule_at(pc))

/* A frame-pointer prologue, body and epilogue, as GCC writes them. */
static void test_prologue(void)
{
	static const uint8_t p[] = {
		0x41, 0x0e, 0x10, 0x86, 0x02,	/* +1: push rbp */
		0x43, 0x0d, 0x06,		/* +4: mov rsp, rbp */
		0x58, 0x0c, 0x07, 0x08,		/* +0x1c: pop rbp */
	};
	struct sec s = { .n = 0 };
	size_t cie = put_cie(&s, "zR", 0x1b);

	put_fde(&s, cie, 0x1b, 1, TEXT, 0x20, p, sizeof(p));
	parse_sec(&s, BASE);
	CHECK_RULE(TEXT - 1, NONE);
	CHECK_RULE(TEXT, RSP8);
	CHECK_RULE(TEXT + 1, CFI_RULE(CFI_RSP, 16, 2));
	CHECK_RULE(TEXT + 3, CFI_RULE(CFI_RSP, 16, 2));
	CHECK_RULE(TEXT + 4, CFI_RULE(CFI_RBP, 16, 2));
	CHECK_RULE(TEXT + 0x1b, CFI_RULE(CFI_RBP, 16, 2));
	CHECK_RULE(TEXT + 0x1c, CFI_RULE(CFI_RSP, 8, 2));
	CHECK_RULE(TEXT + 0x20, CFI_STOP);
	CHECK(nrows == 5, "five rows, got %zu", nrows);
}

/* One FDE's program at TEXT, length 0x40, in a fresh "zR" section. */
static void parse_program(const void *insns, size_t n)
{
	struct sec s = { .n = 0 };
	size_t cie = put_cie(&s, "zR", 0x1b);

	put_fde(&s, cie, 0x1b, 1, TEXT, 0x40, insns, n);
	parse_sec(&s, BASE);
}

struct program_case {
	const char *name;
	uint8_t insns[24];
	size_t n;
	uint64_t at;		/* offset from TEXT */
	uint32_t want;
};

/* The CFA program's opcodes, one case each. */
static const struct program_case programs[] = {
	{ "remember/restore_state", { 0x41, 0x0e, 0x10, 0x44, 0x0a, 0x0e, 0x08, 0x41, 0x0b }, 9,
	  6, CFI_RULE(CFI_RSP, 16, 0) },
	{ "the remembered state's row", { 0x41, 0x0e, 0x10, 0x44, 0x0a, 0x0e, 0x08, 0x41, 0x0b }, 9,
	  5, RSP8 },
	{ "advance_loc1", { 0x02, 0x20, 0x0e, 0x20 }, 4, 0x20, CFI_RULE(CFI_RSP, 32, 0) },
	{ "advance_loc2", { 0x03, 0x21, 0x00, 0x0e, 0x20 }, 5, 0x21, CFI_RULE(CFI_RSP, 32, 0) },
	{ "advance_loc4", { 0x04, 0x22, 0, 0, 0, 0x0e, 0x20 }, 7, 0x22, CFI_RULE(CFI_RSP, 32, 0) },
	{ "before advance_loc4", { 0x04, 0x22, 0, 0, 0, 0x0e, 0x20 }, 7, 0x21, RSP8 },
	{ "offset_extended", { 0x0e, 0x10, 0x05, 0x06, 0x02 }, 5, 0, CFI_RULE(CFI_RSP, 16, 2) },
	{ "offset_extended_sf", { 0x0e, 0x18, 0x11, 0x06, 0x03 }, 5, 0, CFI_RULE(CFI_RSP, 24, 3) },
	{ "restore", { 0x0e, 0x10, 0x86, 0x02, 0x41, 0xc6 }, 6, 1, CFI_RULE(CFI_RSP, 16, 0) },
	{ "restore_extended", { 0x0e, 0x10, 0x86, 0x02, 0x41, 0x06, 0x06 }, 7, 1,
	  CFI_RULE(CFI_RSP, 16, 0) },
	{ "same_value", { 0x0e, 0x10, 0x86, 0x02, 0x41, 0x08, 0x06 }, 7, 1, CFI_RULE(CFI_RSP, 16, 0) },
	{ "def_cfa_sf", { 0x12, 0x07, 0x7e }, 3, 0, CFI_RULE(CFI_RSP, 16, 0) },
	{ "def_cfa_offset_sf", { 0x13, 0x7d }, 2, 0, CFI_RULE(CFI_RSP, 24, 0) },
	{ "def_cfa_register", { 0x0e, 0x10, 0x86, 0x02, 0x0d, 0x06 }, 6, 0, CFI_RULE(CFI_RBP, 16, 2) },
	{ "a CFA past 64 KiB", { 0x0e, 0xa0, 0x8d, 0x06 }, 4, 0, CFI_RULE(CFI_RSP, 100000, 0) },
	{ "GNU_args_size", { 0x0e, 0x10, 0x2e, 0x10 }, 4, 0, CFI_RULE(CFI_RSP, 16, 0) },
	{ "nop", { 0x00, 0x0e, 0x10, 0x00 }, 4, 0, CFI_RULE(CFI_RSP, 16, 0) },
	{ "expression for rbx: ignored", { 0x10, 0x03, 0x02, 0x77, 0x08 }, 5, 0, RSP8 },
	{ "register rbx: ignored", { 0x09, 0x03, 0x0c }, 3, 0, RSP8 },
	/* what cannot be said: stop */
	{ "def_cfa_expression", { 0x0f, 0x02, 0x77, 0x08 }, 4, 0, CFI_STOP },
	{ "undefined return address", { 0x07, 0x10 }, 2, 0, CFI_STOP },
	{ "rbp in another register", { 0x09, 0x06, 0x03 }, 3, 0, CFI_STOP },
	{ "rbp by expression", { 0x10, 0x06, 0x02, 0x76, 0x00 }, 5, 0, CFI_STOP },
	{ "return address elsewhere", { 0x0e, 0x10, 0x90, 0x02 }, 4, 0, CFI_STOP },
	{ "return address by val_offset", { 0x14, 0x10, 0x01 }, 3, 0, CFI_STOP },
	{ "rsp restored from memory", { 0x11, 0x07, 0x01 }, 3, 0, CFI_STOP },
	{ "CFA from rdi", { 0x0c, 0x05, 0x00 }, 3, 0, CFI_STOP },
	{ "CFA offset 0", { 0x0e, 0x00 }, 2, 0, CFI_STOP },
	{ "rbp above the CFA", { 0x2f, 0x06, 0x02 }, 3, 0, CFI_STOP },
	{ "rbp too far below", { 0x0e, 0x10, 0x86, 0x40 }, 4, 0, CFI_STOP },
	/* malformed: the FDE is skipped, its range a gap */
	{ "unknown opcode", { 0x0e, 0x10, 0x3f }, 3, 0, NONE },
	{ "restore_state with nothing remembered", { 0x0b }, 1, 0, NONE },
	{ "remember_state nested too deep",
	  { 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a }, 9, 0, NONE },
	{ "a LEB128 cut short", { 0x0e, 0x90 }, 2, 0, NONE },
	{ "a LEB128 of 11 bytes", { 0x0e, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
				    0x80, 0x00 }, 12, 0, NONE },
};

static void test_programs(void)
{
	for (size_t i = 0; i < sizeof(programs) / sizeof(programs[0]); i++) {
		const struct program_case *c = &programs[i];

		uint32_t got;

		parse_program(c->insns, c->n);
		got = rule_at(TEXT + c->at);
		if (c->want == CFI_STOP && got == NONE)
			got = CFI_STOP;	/* rows that all stop are not kept */
		CHECK(got == c->want, "%s: expected %#x, got %#x", c->name, c->want, got);
	}
}

/* DW_CFA_set_loc, with absolute 8-byte pointers. */
static void test_set_loc(void)
{
	uint8_t p[16] = { 0x01 };
	uint64_t to = TEXT + 0x10;
	struct sec s = { .n = 0 };
	size_t cie = put_cie(&s, "zR", 0x00);

	memcpy(p + 1, &to, 8);
	p[9] = 0x0e;
	p[10] = 0x10;
	put_fde(&s, cie, 0x00, 1, TEXT, 0x40, p, 11);
	parse_sec(&s, BASE);
	CHECK_RULE(TEXT + 0xf, RSP8);
	CHECK_RULE(TEXT + 0x10, CFI_RULE(CFI_RSP, 16, 0));
	s.n = 0;
	cie = put_cie(&s, "zR", 0x00);
	to = TEXT;
	p[0] = 0x41;		/* advance 1, then set_loc back to the start */
	p[1] = 0x01;
	memcpy(p + 2, &to, 8);
	put_fde(&s, cie, 0x00, 1, TEXT, 0x40, p, 10);
	parse_sec(&s, BASE);
	CHECK_RULE(TEXT, NONE);
}

struct enc_case {
	uint8_t enc;
	uint64_t base, pc;
	int usable;
};

/* Every DW_EH_PE value format and application for an FDE's pc range. */
static const struct enc_case encodings[] = {
	{ 0x00, BASE, TEXT, 1 },	/* absptr */
	{ 0x01, BASE, TEXT, 1 },	/* uleb128 */
	{ 0x02, 0, 0x1000, 1 },		/* udata2 */
	{ 0x03, BASE, TEXT, 1 },	/* udata4 */
	{ 0x04, BASE, TEXT, 1 },	/* udata8 */
	{ 0x09, BASE, TEXT, 1 },	/* sleb128 */
	{ 0x0a, 0, 0x1000, 1 },		/* sdata2 */
	{ 0x0b, BASE, TEXT, 1 },	/* sdata4 */
	{ 0x0c, BASE, TEXT, 1 },	/* sdata8 */
	{ 0x12, BASE, TEXT, 1 },	/* pcrel udata2 */
	{ 0x1b, BASE, TEXT, 1 },	/* pcrel sdata4 */
	{ 0x1c, BASE, TEXT, 1 },	/* pcrel sdata8 */
	{ 0x19, BASE, TEXT, 1 },	/* pcrel sleb128 */
	{ 0x3b, BASE, TEXT, 1 },	/* datarel sdata4 */
	{ 0x50, BASE, TEXT, 1 },	/* aligned */
	{ 0x2b, BASE, TEXT, 0 },	/* textrel: no base known */
	{ 0x4b, BASE, TEXT, 0 },	/* funcrel */
	{ 0x9b, BASE, TEXT, 0 },	/* indirect: not for a pc range */
	{ 0x0f, BASE, TEXT, 0 },	/* no such format */
	{ 0x03, TEXT + 0x100, TEXT, 0 },	/* below the module's base */
};

static void test_encodings(void)
{
	for (size_t i = 0; i < sizeof(encodings) / sizeof(encodings[0]); i++) {
		const struct enc_case *c = &encodings[i];
		struct sec s = { .n = 0 };
		size_t cie = put_cie(&s, "zR", c->enc);
		uint32_t in, after;

		put_fde(&s, cie, c->enc, 1, c->pc, 0x10, "", 0);
		parse_sec(&s, c->base);
		in = rule_at_base(c->pc, c->base);
		after = rule_at_base(c->pc + 0x10, c->base);
		CHECK(c->usable ? in == RSP8 && after == CFI_STOP : nrows == 0,
		      "encoding %#x: rules %#x then %#x, %zu rows", c->enc, in, after, nrows);
	}
}

/* A table of two FDEs: a plain one before TEXT, then one with CIE cie. */
static void parse_after_plain(struct sec *s, size_t cie, int z)
{
	size_t plain = put_cie(s, "zR", 0x1b);

	put_fde(s, plain, 0x1b, 1, TEXT - 0x10, 0x10, "", 0);
	put_fde(s, cie, 0x1b, z, TEXT, 0x10, "", 0);
	parse_sec(s, BASE);
}

static void test_augmentations(void)
{
	struct sec s = { .n = 0 };
	size_t cie;

	parse_after_plain(&s, put_cie(&s, "zPLR", 0x1b), 1);
	CHECK_RULE(TEXT, RSP8);
	s.n = 0;
	parse_after_plain(&s, put_cie(&s, "zRS", 0x1b), 1);
	CHECK_RULE(TEXT - 1, RSP8);
	CHECK_RULE(TEXT, CFI_STOP);	/* a signal frame */
	s.n = 0;
	cie = put_cie(&s, "", 0);
	put_fde(&s, cie, 0x00, 0, TEXT, 0x10, "", 0);
	parse_sec(&s, BASE);
	CHECK_RULE(TEXT, RSP8);		/* no augmentation: absolute pointers */
	s.n = 0;
	cie = put_cie(&s, "eh", 0);
	put_fde(&s, cie, 0x00, 0, TEXT, 0x10, "", 0);
	parse_sec(&s, BASE);
	CHECK(nrows == 0, "augmentation \"eh\" is refused");
	s.n = 0;
	parse_after_plain(&s, put_cie(&s, "zRX", 0x1b), 1);
	CHECK_RULE(TEXT, RSP8);		/* unknown letters: 'z' steps over them */
	s.n = 0;
	cie = put_cie(&s, "zR", 0x1b);
	s.b[cie + 8] = 3;		/* version 3: the RA column as a ULEB128 */
	put_fde(&s, cie, 0x1b, 1, TEXT, 0x10, "", 0);
	parse_sec(&s, BASE);
	CHECK_RULE(TEXT, RSP8);
	s.n = 0;
	cie = put_cie(&s, "zR", 0x1b);
	s.b[cie + 8] = 2;
	put_fde(&s, cie, 0x1b, 1, TEXT, 0x10, "", 0);
	parse_sec(&s, BASE);
	CHECK(nrows == 0, "CIE version 2 is refused");
	s.n = 0;
	parse_after_plain(&s, put_cie_ra(&s, "zR", 0x1b, 17), 1);
	CHECK_RULE(TEXT, CFI_STOP);	/* return address in another column */
}

static void test_layout(void)
{
	static const uint8_t cfa16[] = { 0x0e, 0x10 };
	struct sec s = { .n = 0 };
	size_t cie = put_cie(&s, "zR", 0x1b), at;

	put_fde(&s, cie, 0x1b, 1, TEXT + 0x20, 0x10, "", 0);	/* out of order */
	put_fde(&s, cie, 0x1b, 1, TEXT, 0x10, "", 0);
	parse_sec(&s, BASE);
	CHECK_RULE(TEXT, RSP8);
	CHECK_RULE(TEXT + 0x15, CFI_STOP);			/* the gap */
	CHECK_RULE(TEXT + 0x20, RSP8);
	CHECK_RULE(TEXT + 0x30, CFI_STOP);
	CHECK(nrows == 4 && rows[0].pc < rows[1].pc && rows[2].pc < rows[3].pc,
	      "sorted, %zu rows", nrows);

	put_fde(&s, cie, 0x1b, 1, TEXT + 0x10, 0x10, "", 0);	/* fills the gap */
	parse_sec(&s, BASE);
	CHECK(nrows == 2, "adjacent equal rules merge into one row, got %zu", nrows);

	s.n = 0;
	cie = put_cie(&s, "zR", 0x1b);
	put_fde(&s, cie, 0x1b, 1, TEXT, 0x20, cfa16, sizeof(cfa16));
	put_fde(&s, cie, 0x1b, 1, TEXT + 0x10, 0x20, "", 0);	/* overlaps */
	parse_sec(&s, BASE);
	CHECK_RULE(TEXT + 0x18, CFI_RULE(CFI_RSP, 16, 0));
	CHECK_RULE(TEXT + 0x25, CFI_STOP);

	s.n = 0;
	cie = put_cie(&s, "zR", 0x1b);
	at = open_entry(&s);			/* a 64-bit length entry */
	memset(s.b + at, 0xff, 4);
	put(&s, 16, 8);
	put(&s, 0xdeadbeef, 8);
	put(&s, 0x12345678, 8);
	put_fde(&s, cie, 0x1b, 1, TEXT, 0x10, "", 0);
	put_fde(&s, s.n, 0x1b, 1, TEXT + 0x10, 0x10, "", 0);	/* its "CIE" is itself */
	at = open_entry(&s);			/* a CIE pointer before the section */
	put(&s, 0x7fffffff, 4);
	close_entry(&s, at);
	put_fde(&s, cie, 0x1b, 1, TEXT + 0x40, 0, "", 0);	/* empty */
	parse_sec(&s, BASE);
	CHECK_RULE(TEXT, RSP8);
	CHECK_RULE(TEXT + 0x10, CFI_STOP);
	CHECK(nrows == 2, "only the sane FDE has rows: %zu", nrows);

	at = s.n;
	put(&s, 0, 4);				/* the terminator */
	put_fde(&s, cie, 0x1b, 1, TEXT + 0x80, 0x10, "", 0);
	CHECK(cfi_eh_frame_len(s.b, s.n) == at, "the walk ends at the terminator");
	parse_sec(&s, BASE);
	CHECK_RULE(TEXT + 0x80, CFI_STOP);
}

static void test_hdr(void)
{
	uint8_t h[16] = { 1, 0x1b, 0x03, 0x3b };
	int32_t rel = (int32_t)(EH_ADDR - (HDR_ADDR + 4));
	uint64_t addr = 0, abs = EH_ADDR;

	memcpy(h + 4, &rel, 4);
	CHECK(cfi_eh_frame_addr(h, 8, HDR_ADDR, &addr) == 1 && addr == EH_ADDR,
	      "eh_frame_ptr pcrel sdata4");
	CHECK(cfi_eh_frame_addr(h, 7, HDR_ADDR, &addr) == 0, "cut short: refused");
	h[1] = 0x3b;
	rel = (int32_t)(EH_ADDR - HDR_ADDR);
	memcpy(h + 4, &rel, 4);
	CHECK(cfi_eh_frame_addr(h, 8, HDR_ADDR, &addr) == 1 && addr == EH_ADDR,
	      "eh_frame_ptr datarel sdata4");
	h[1] = 0x04;
	memcpy(h + 4, &abs, 8);
	CHECK(cfi_eh_frame_addr(h, 12, HDR_ADDR, &addr) == 1 && addr == EH_ADDR,
	      "eh_frame_ptr udata8");
	h[1] = 0x84;
	CHECK(cfi_eh_frame_addr(h, 12, HDR_ADDR, &addr) == 2 && addr == EH_ADDR,
	      "eh_frame_ptr indirect: where the pointer is");
	h[1] = 0xff;
	CHECK(cfi_eh_frame_addr(h, 12, HDR_ADDR, &addr) == 0, "omitted: refused");
	h[0] = 2;
	h[1] = 0x04;
	CHECK(cfi_eh_frame_addr(h, 12, HDR_ADDR, &addr) == 0, "version 2: refused");
}

/* The FDE count after eh_frame_ptr, as the header encodes it. */
static void test_fde_count(void)
{
	uint8_t h[16] = { 1, 0x1b, 0x03, 0x3b };
	uint32_t n = 150000;

	memcpy(h + 8, &n, 4);
	CHECK(cfi_fde_count(h, 12, HDR_ADDR) == 150000, "fde_count udata4");
	CHECK(cfi_fde_count(h, 11, HDR_ADDR) == 0, "cut short: none");
	h[2] = 0xff;
	CHECK(cfi_fde_count(h, 12, HDR_ADDR) == 0, "omitted: none");
	h[2] = 0x03;
	h[1] = 0x04;
	memcpy(h + 4, &(uint64_t){ EH_ADDR }, 8);
	memcpy(h + 12, &n, 4);
	CHECK(cfi_fde_count(h, 16, HDR_ADDR) == 150000,
	      "after an 8-byte eh_frame_ptr");
}

static void test_capacity(void)
{
	struct sec s = { .n = 0 };
	size_t cie = put_cie(&s, "zR", 0x1b);
	struct cfi_row few[2];

	put_fde(&s, cie, 0x1b, 1, TEXT, 0x10, "", 0);
	put_fde(&s, cie, 0x1b, 1, TEXT + 0x20, 0x10, "", 0);
	CHECK(parse(s.b, s.n, BASE, few, 2) == 0, "rows that do not fit: none at all");
}

/* A real module's sections, as frames.c finds them. */
struct real {
	const char *want;	/* a substring of its name; "" the executable */
	const uint8_t *hdr, *eh;
	size_t eh_len;
	uint64_t base;
};

static int find_real(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct real *r = arg;
	uint64_t hdr = 0, eh = 0;

	(void)size;
	if (r->want[0] ? strstr(info->dlpi_name, r->want) == NULL : info->dlpi_name[0] != '\0')
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME)
			hdr = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
	}
	if (hdr == 0 || cfi_eh_frame_addr((const uint8_t *)hdr, 16, hdr, &eh) != 1)
		return 1;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && eh >= lo && eh < lo + ph->p_memsz)
			r->eh_len = cfi_eh_frame_len((const uint8_t *)eh, lo + ph->p_memsz - eh);
	}
	r->hdr = (const uint8_t *)hdr;
	r->eh = (const uint8_t *)eh;
	r->base = info->dlpi_addr;
	return 1;
}

/* A well-formed table: pcs rising, no two equal rules in a row, ends stopped. */
static int well_formed(const struct cfi_row *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (cfi_kind(r[i].rule) == 3 ||
		    (i > 0 && (r[i].pc <= r[i - 1].pc || r[i].rule == r[i - 1].rule)))
			return 0;
	}
	return n == 0 || (r[0].rule != CFI_STOP && r[n - 1].rule == CFI_STOP);
}

/* Parse eh[0, len) of a module at base into fresh rows; their number. */
static size_t parse_real(const uint8_t *eh, size_t len, uint64_t eh_addr,
			 uint64_t base, struct cfi_row **out)
{
	struct cfi_input in = { NULL, 0, 0, eh, len, eh_addr, base };
	size_t nf = cfi_count_fdes(&in), n;
	struct cfi_fde *fdes = malloc((nf + 1) * sizeof(*fdes));

	nf = cfi_index(&in, fdes, nf);
	n = cfi_rows(&in, fdes, nf, NULL, 0);
	*out = malloc((n + 1) * sizeof(**out));
	if (cfi_rows(&in, fdes, nf, *out, n) != n)
		n = (size_t)-1;
	free(fdes);
	return n;
}

/* libc's table: rules at function entries, and the bucket index. */
static void test_real(void)
{
	struct real r = { "libc.so", NULL, NULL, 0, 0 };
	struct cfi_row *t;
	uint32_t *index, nindex, bad = 0, pc;
	const char *fns[] = { "qsort", "getpid", "strlen", "pthread_mutex_lock" };
	size_t n;

	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);

	dl_iterate_phdr(find_real, &r);
	CHECK(r.eh_len > 10000, "libc's .eh_frame found: %zu bytes", r.eh_len);
	n = parse_real(r.eh, r.eh_len, (uint64_t)(uintptr_t)r.eh, r.base, &t);
	CHECK(n > 1000 && n != (size_t)-1 && well_formed(t, n), "libc: %zu rows", n);
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		/* libc's own, not a sanitizer's interceptor */
		uint64_t f = (uint64_t)(uintptr_t)dlsym(libc, fns[i]);
		const struct cfi_row *row = cfi_find(t, (uint32_t)n, (uint32_t)(f - r.base));

		CHECK(row && row->rule == RSP8, "%s's entry: CFA = rsp + 8", fns[i]);
	}
	nindex = (uint32_t)cfi_buckets(t, n);
	index = malloc(nindex * sizeof(*index));
	cfi_fill_buckets(t, n, index, nindex);
	for (pc = t[0].pc - 64; pc < t[n - 1].pc + 64; pc++)
		bad += cfi_lookup(t, index, nindex, pc) != cfi_find(t, (uint32_t)n, pc);
	CHECK(bad == 0, "the bucket index finds what the search finds (%u differ)", bad);
	free(index);
	free(t);
	dlclose(libc);
}

/* Room for n bytes that end where an unreadable page begins. */
struct guarded {
	uint8_t *map;
	size_t len;
};

static uint8_t *guard_place(struct guarded *g, size_t n)
{
	size_t need = (n + 4095) / 4096 * 4096 + 4096;

	if (g->len < need) {
		if (g->map)
			munmap(g->map, g->len);
		g->map = mmap(NULL, need, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		g->len = need;
		mprotect(g->map + need - 4096, 4096, PROT_NONE);
	}
	return g->map + g->len - 4096 - n;
}

static uint64_t rnd_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rnd_state = rnd_state * 6364136223846793005ull + 1442695040888963407ull;
	return rnd_state >> 33;
}

/* Parse what is at p, checking the result; 1 if it is well formed. */
static int hostile_parse(const uint8_t *p, size_t len, const struct real *r)
{
	struct cfi_row *t;
	size_t n = parse_real(p, len, (uint64_t)(uintptr_t)r->eh, r->base, &t);
	int ok = n != (size_t)-1 && well_formed(t, n);

	free(t);
	return ok;
}

static void hostile(const char *want, size_t step, int flips)
{
	struct real r = { want, NULL, NULL, 0, 0 };
	struct guarded g = { NULL, 0 };
	unsigned bad = 0, cut = 0;
	uint64_t addr;

	dl_iterate_phdr(find_real, &r);
	if (r.eh == NULL) {
		CHECK(0, "no .eh_frame found in \"%s\"", want);
		return;
	}
	for (size_t len = 0; len <= r.eh_len; len += len + step > r.eh_len && len < r.eh_len
							   ? r.eh_len - len : step) {
		uint8_t *p = guard_place(&g, len);

		memcpy(p, r.eh, len);
		bad += !hostile_parse(p, len, &r);
		cut++;
	}
	CHECK(bad == 0, "\"%s\": %u of %u truncations gave a malformed table", want, bad, cut);
	for (size_t len = 0; len <= 16; len++) {
		uint8_t *p = guard_place(&g, len);

		memcpy(p, r.hdr, len);
		bad += cfi_eh_frame_addr(p, len, (uint64_t)(uintptr_t)r.hdr, &addr) == 1 &&
		       len < 8;
	}
	CHECK(bad == 0, "\"%s\": .eh_frame_hdr cut short is refused", want);
	for (int i = 0; i < flips; i++) {
		uint8_t *p = guard_place(&g, r.eh_len);
		int k = 1 + (int)(rnd() % 8);

		memcpy(p, r.eh, r.eh_len);
		while (k-- > 0)
			p[rnd() % r.eh_len] ^= (uint8_t)(1 + rnd() % 255);
		bad += !hostile_parse(p, r.eh_len, &r);
		if (i % 2 == 0)		/* the same flips cut short */
			bad += !hostile_parse(p + r.eh_len / 2, r.eh_len - r.eh_len / 2, &r);
	}
	CHECK(bad == 0, "\"%s\": %u of %d flipped copies gave a malformed table", want, bad,
	      flips);
	munmap(g.map, g.len);
}

int main(void)
{
	test_prologue();
	test_programs();
	test_set_loc();
	test_encodings();
	test_augmentations();
	test_layout();
	test_hdr();
	test_fde_count();
	test_capacity();
	test_real();
	hostile("", 1, 3000);
	hostile("libc.so", 1009, 100);
	if (dlopen("libstdc++.so.6", RTLD_NOW) != NULL)	/* C++: zPLR CIEs, LSDAs */
		hostile("libstdc++", 1009, 100);
	return check_summary();
}
