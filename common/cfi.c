/* Parsing .eh_frame into sorted unwind rows; see cfi.h. */
#include <string.h>

#include "cfi.h"

/* Pointer encodings, DW_EH_PE_*: a value format and how it applies. */
enum {
	PE_ABSPTR = 0x00, PE_ULEB128 = 0x01, PE_UDATA2 = 0x02,
	PE_UDATA4 = 0x03, PE_UDATA8 = 0x04, PE_SIGNED = 0x08,
	PE_SLEB128 = 0x09, PE_SDATA2 = 0x0a, PE_SDATA4 = 0x0b,
	PE_SDATA8 = 0x0c,
	PE_PCREL = 0x10, PE_DATAREL = 0x30, PE_ALIGNED = 0x50,
	PE_INDIRECT = 0x80, PE_OMIT = 0xff,
};

/* DWARF register numbers of x86_64. */
enum { REG_RBP = 6, REG_RSP = 7, REG_RA = 16 };

/* Factors beyond these are nonsense; refusing them keeps the arithmetic exact. */
#define ALIGN_MAX (1 << 16)
#define OFF_LIMIT (1 << 30)
/* remember_state nesting; compilers use one or two levels. */
#define STATE_STACK 8

/* A bounded reader over a copied section: bad is set instead of over-reading. */
struct cur {
	const uint8_t *p, *end;
	const uint8_t *start;	/* of the copy */
	uint64_t addr;		/* the runtime address of start */
	int bad;
};

/* A CIE or an FDE, located. */
struct entry {
	size_t body;	/* offset of its CIE id / CIE pointer field */
	size_t next;	/* offset of the entry after it */
	uint32_t id;	/* 0 for a CIE, else the distance back to its CIE */
	int wide;	/* 64-bit length: stepped over, never parsed */
};

struct cie {
	size_t off;			/* which one is parsed; SIZE_MAX: none */
	int ok;
	const uint8_t *insns, *end;	/* its initial instructions */
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_enc;		/* 'R' */
	uint8_t has_z;			/* FDEs carry augmentation data */
	uint8_t signal;			/* 'S': FDEs of signal frames */
	uint8_t ra_ok;			/* the return address is column 16 */
};

struct fde {
	uint64_t start, end;		/* offsets from the module's base */
	const uint8_t *insns, *end_insns;
};

/* How a register of the caller is found. */
enum { R_SAME, R_AT, R_OTHER };

struct state {
	uint64_t cfa_reg;
	int64_t cfa_off, rbp_off, ra_off;
	uint8_t cfa_ok;		/* CFA = register + offset (no expression) */
	uint8_t rsp_ok;		/* the caller's rsp is the CFA */
	uint8_t rbp, ra;	/* R_*; R_AT means saved at CFA + *_off */
};

/* Rows as they are emitted: merged, and only counted when rows is NULL. */
struct emit {
	struct cfi_row *rows;
	size_t cap, n;
	uint32_t last_rule;	/* of rows[n - 1] */
	struct cfi_row pend;	/* the newest row: a later one at its pc replaces it */
	int has_pend, full;
};

/* One FDE's CFA program (and its CIE's) being run. */
struct run {
	const struct cfi_input *in;
	const struct cie *cie;
	struct emit *em;	/* NULL while the CIE's instructions run */
	struct state st, init, saved[STATE_STACK];
	unsigned depth;
	uint64_t loc, end;
};

static struct cur span(const struct cfi_input *in, const uint8_t *p,
		       const uint8_t *end)
{
	struct cur c = { p, end, in->eh, in->eh_addr, 0 };

	return c;
}

static uint64_t get(struct cur *c, size_t n)
{
	uint64_t v = 0;

	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = 1;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)c->p[i] << (8 * i);
	c->p += n;
	return v;
}

/* A LEB128 of at most 10 bytes; sign-extended when is_signed. */
static uint64_t leb(struct cur *c, int is_signed)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (c->bad || c->p >= c->end || shift >= 70) {
			c->bad = 1;
			return 0;
		}
		b = *c->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (is_signed && shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return v;
}

static uint64_t uleb(struct cur *c) { return leb(c, 0); }
static int64_t sleb(struct cur *c) { return (int64_t)leb(c, 1); }

static void skip(struct cur *c, uint64_t n)
{
	if (c->bad || (uint64_t)(c->end - c->p) < n) {
		c->bad = 1;
		return;
	}
	c->p += n;
}

static uint64_t here(const struct cur *c)
{
	return c->addr + (uint64_t)(c->p - c->start);
}

/* A value in the format of the low nibble of a pointer encoding. */
static uint64_t value(struct cur *c, unsigned format)
{
	switch (format) {
	case PE_ABSPTR: case PE_UDATA8: case PE_SIGNED: case PE_SDATA8:
		return get(c, 8);
	case PE_ULEB128: return uleb(c);
	case PE_UDATA2: return get(c, 2);
	case PE_UDATA4: return get(c, 4);
	case PE_SLEB128: return (uint64_t)sleb(c);
	case PE_SDATA2: return (uint64_t)(int64_t)(int16_t)get(c, 2);
	case PE_SDATA4: return (uint64_t)(int64_t)(int32_t)get(c, 4);
	}
	c->bad = 1;
	return 0;
}

/*
 * A pointer of encoding enc (the indirect bit is the caller's business).
 * textrel and funcrel have no base here, so they are refused; datarel is
 * relative to .eh_frame_hdr, as in the header itself.
 */
static uint64_t pointer(struct cur *c, uint8_t enc, uint64_t datarel)
{
	uint64_t at = here(c), v;

	if ((enc & 0x70) == PE_ALIGNED) {
		skip(c, (8 - at % 8) % 8);
		return get(c, 8);
	}
	v = value(c, enc & 0x0f);
	switch (enc & 0x70) {
	case PE_ABSPTR: return v;
	case PE_PCREL: return v + at;
	case PE_DATAREL: return v + datarel;
	}
	c->bad = 1;
	return 0;
}

/* Step over a pointer whose value we do not need (a personality routine). */
static void skip_pointer(struct cur *c, uint8_t enc)
{
	if (enc == PE_OMIT)
		return;
	if ((enc & 0x70) == PE_ALIGNED) {
		skip(c, (8 - here(c) % 8) % 8);
		skip(c, 8);
		return;
	}
	(void)value(c, enc & 0x0f);
}

/* The entry at off in eh[0, len): 1 if a well-formed one is there. */
static int entry_at(const uint8_t *eh, size_t len, size_t off, struct entry *e)
{
	struct cur c = { eh, eh + len, eh, 0, 0 };
	uint64_t n;

	if (off > len)
		return 0;
	c.p = eh + off;
	n = get(&c, 4);
	if (c.bad || n == 0)
		return 0;
	e->wide = n == 0xffffffff;
	if (e->wide)
		n = get(&c, 8);
	e->body = (size_t)(c.p - eh);
	if (c.bad || n < 4 || n > len - e->body)
		return 0;
	e->next = e->body + (size_t)n;
	e->id = (uint32_t)get(&c, 4);
	return 1;
}

/* Parse the augmentation data of a CIE whose string is aug. */
static int augmentation(struct cur *c, const char *aug, struct cie *cie)
{
	const uint8_t *end;
	uint64_t n;

	if (aug[0] == '\0')
		return 1;
	if (aug[0] != 'z')	/* "eh" and other pre-'z' forms */
		return 0;
	n = uleb(c);
	if (c->bad || n > (uint64_t)(c->end - c->p))
		return 0;
	end = c->p + n;
	for (aug++; *aug; aug++) {
		if (*aug == 'R')
			cie->fde_enc = (uint8_t)get(c, 1);
		else if (*aug == 'P')
			skip_pointer(c, (uint8_t)get(c, 1));
		else if (*aug == 'L')
			(void)get(c, 1);
		else if (*aug == 'S')
			cie->signal = 1;
		else
			break;	/* unknown: the 'z' length steps over the rest */
	}
	if (c->bad || c->p > end)
		return 0;
	c->p = end;
	cie->has_z = 1;
	return 1;
}

/* Parse the CIE at off into cie, unless it is the one already there. */
static int parse_cie(const struct cfi_input *in, size_t off, struct cie *cie)
{
	struct entry e;
	struct cur c;
	const uint8_t *nul;
	const char *aug;
	uint64_t version, ra;

	if (cie->off == off)
		return cie->ok;
	memset(cie, 0, sizeof(*cie));
	cie->off = off;
	if (!entry_at(in->eh, in->eh_len, off, &e) || e.wide || e.id != 0)
		return 0;
	c = span(in, in->eh + e.body + 4, in->eh + e.next);
	version = get(&c, 1);
	if (c.bad || (version != 1 && version != 3 && version != 4))
		return 0;
	nul = memchr(c.p, 0, (size_t)(c.end - c.p));
	if (nul == NULL)
		return 0;
	aug = (const char *)c.p;
	c.p = nul + 1;
	if (version == 4 && (get(&c, 1) != 8 || get(&c, 1) != 0))
		return 0;
	cie->code_align = uleb(&c);
	cie->data_align = sleb(&c);
	ra = version == 1 ? get(&c, 1) : uleb(&c);
	if (c.bad || cie->code_align == 0 || cie->code_align > ALIGN_MAX ||
	    cie->data_align > ALIGN_MAX || cie->data_align < -ALIGN_MAX ||
	    !augmentation(&c, aug, cie))
		return 0;
	cie->ra_ok = ra == REG_RA;
	cie->insns = c.p;
	cie->end = c.end;
	cie->ok = 1;
	return 1;
}

/* Locate the FDE at off and its CIE; 0 if either is unusable. */
static int parse_fde(const struct cfi_input *in, size_t off, struct cie *cie,
		     struct fde *f)
{
	struct entry e;
	struct cur c;
	uint64_t pc, len;

	if (!entry_at(in->eh, in->eh_len, off, &e) || e.wide || e.id == 0 ||
	    e.id > e.body || !parse_cie(in, e.body - e.id, cie))
		return 0;
	if (cie->fde_enc == PE_OMIT || (cie->fde_enc & PE_INDIRECT))
		return 0;
	c = span(in, in->eh + e.body + 4, in->eh + e.next);
	pc = pointer(&c, cie->fde_enc, in->hdr_addr);
	len = value(&c, cie->fde_enc & 0x0f);
	if (cie->has_z)
		skip(&c, uleb(&c));
	if (c.bad || pc < in->base || len == 0)
		return 0;
	f->start = pc - in->base;
	if (f->start > UINT32_MAX || len > UINT32_MAX - f->start)
		return 0;
	f->end = f->start + len;
	f->insns = c.p;
	f->end_insns = c.end;
	return 1;
}

static void commit(struct emit *e, struct cfi_row r)
{
	if (e->n ? e->last_rule == r.rule : r.rule == CFI_STOP)
		return;
	if (e->rows) {
		if (e->n >= e->cap) {
			e->full = 1;
			return;
		}
		e->rows[e->n] = r;
	}
	e->n++;
	e->last_rule = r.rule;
}

/* Rows come in pc order; a row at the pc of the one before replaces it. */
static void emit(struct emit *e, uint32_t pc, uint32_t rule)
{
	if (e->has_pend && e->pend.pc == pc) {
		e->pend.rule = rule;
		return;
	}
	if (e->has_pend)
		commit(e, e->pend);
	e->pend.pc = pc;
	e->pend.rule = rule;
	e->has_pend = 1;
}

/* The current state as a row rule; CFI_STOP for whatever it cannot say. */
static uint32_t rule_of(const struct run *r)
{
	const struct state *s = &r->st;
	uint32_t kind, slot = 0;

	if (r->cie->signal || !r->cie->ra_ok || !s->cfa_ok || !s->rsp_ok ||
	    s->ra != R_AT || s->ra_off != -8)
		return CFI_STOP;
	if (s->cfa_reg == REG_RSP)
		kind = CFI_RSP;
	else if (s->cfa_reg == REG_RBP)
		kind = CFI_RBP;
	else
		return CFI_STOP;
	if (s->cfa_off < 8 || s->cfa_off > (int64_t)CFI_CFA_MAX)
		return CFI_STOP;
	if (s->rbp == R_AT) {
		if (s->rbp_off > -16 || s->rbp_off % 8 != 0 ||
		    -s->rbp_off / 8 > (int64_t)CFI_SLOT_MAX)
			return CFI_STOP;
		slot = (uint32_t)(-s->rbp_off / 8);
	} else if (s->rbp != R_SAME) {
		return CFI_STOP;
	}
	return CFI_RULE(kind, s->cfa_off, slot);
}

/* Offsets clamped so that factoring them cannot overflow. */
static int64_t clamp_u(uint64_t v) { return v > OFF_LIMIT ? OFF_LIMIT : (int64_t)v; }

static int64_t clamp_s(int64_t v)
{
	return v > OFF_LIMIT ? OFF_LIMIT : v < -OFF_LIMIT ? -OFF_LIMIT : v;
}

/* Register reg of the caller is saved at CFA + off. */
static void set_at(struct state *s, uint64_t reg, int64_t off)
{
	if (reg == REG_RBP) {
		s->rbp = R_AT;
		s->rbp_off = off;
	} else if (reg == REG_RA) {
		s->ra = R_AT;
		s->ra_off = off;
	} else if (reg == REG_RSP) {
		s->rsp_ok = 0;
	}
}

/* Register reg of the caller is found some other way (how = R_SAME/R_OTHER). */
static void set_how(struct state *s, uint64_t reg, uint8_t how)
{
	if (reg == REG_RBP)
		s->rbp = how;
	else if (reg == REG_RA)
		s->ra = R_OTHER;
	else if (reg == REG_RSP)
		s->rsp_ok = 0;
}

/* DW_CFA_restore: reg's rule as the CIE left it. */
static void restore(struct run *r, uint64_t reg)
{
	if (reg == REG_RBP) {
		r->st.rbp = r->init.rbp;
		r->st.rbp_off = r->init.rbp_off;
	} else if (reg == REG_RA) {
		r->st.ra = r->init.ra;
		r->st.ra_off = r->init.ra_off;
	} else if (reg == REG_RSP) {
		r->st.rsp_ok = r->init.rsp_ok;
	}
}

static void def_cfa(struct state *s, uint64_t reg, int64_t off)
{
	s->cfa_reg = reg;
	s->cfa_off = off;
	s->cfa_ok = 1;
}

/* The row so far ends here: move to loc (never backwards). */
static int move_to(struct run *r, uint64_t loc)
{
	if (r->em == NULL || loc < r->loc)	/* no advancing inside a CIE */
		return 0;
	emit(r->em, (uint32_t)r->loc, rule_of(r));
	r->loc = loc;
	return 1;
}

/* delta < 2^32 and code_align <= 2^16: no overflow. */
static int advance(struct run *r, uint64_t delta)
{
	return move_to(r, r->loc + delta * r->cie->code_align);
}

static int set_loc(struct run *r, struct cur *c)
{
	uint64_t pc = pointer(c, r->cie->fde_enc, r->in->hdr_addr);

	if (c->bad || (r->cie->fde_enc & PE_INDIRECT) || pc < r->in->base)
		return 0;
	return move_to(r, pc - r->in->base);
}

static int remember(struct run *r, int push)
{
	if (push) {
		if (r->depth == STATE_STACK)
			return 0;
		r->saved[r->depth++] = r->st;
	} else {
		if (r->depth == 0)
			return 0;
		r->st = r->saved[--r->depth];
	}
	return 1;
}

/* One instruction of the extended set (high bits 0); 0 if malformed. */
static int extended(struct run *r, struct cur *c, uint8_t op)
{
	struct state *s = &r->st;
	int64_t da = r->cie->data_align;
	uint64_t reg;

	switch (op) {
	case 0x00: return 1;					/* nop */
	case 0x01: return set_loc(r, c);
	case 0x02: return advance(r, get(c, 1));
	case 0x03: return advance(r, get(c, 2));
	case 0x04: return advance(r, get(c, 4));
	case 0x05: reg = uleb(c); set_at(s, reg, clamp_u(uleb(c)) * da); return 1;
	case 0x06: restore(r, uleb(c)); return 1;
	case 0x07: set_how(s, uleb(c), R_OTHER); return 1;	/* undefined */
	case 0x08: set_how(s, uleb(c), R_SAME); return 1;
	case 0x09: reg = uleb(c); (void)uleb(c); set_how(s, reg, R_OTHER); return 1;
	case 0x0a: return remember(r, 1);
	case 0x0b: return remember(r, 0);
	case 0x0c: reg = uleb(c); def_cfa(s, reg, clamp_u(uleb(c))); return 1;
	case 0x0d: s->cfa_reg = uleb(c); return 1;
	case 0x0e: s->cfa_off = clamp_u(uleb(c)); return 1;
	case 0x0f: skip(c, uleb(c)); s->cfa_ok = 0; return 1;	/* def_cfa_expression */
	case 0x10:						/* expression */
	case 0x16:						/* val_expression */
		reg = uleb(c); skip(c, uleb(c)); set_how(s, reg, R_OTHER); return 1;
	case 0x11: reg = uleb(c); set_at(s, reg, clamp_s(sleb(c)) * da); return 1;
	case 0x12: reg = uleb(c); def_cfa(s, reg, clamp_s(sleb(c)) * da); return 1;
	case 0x13: s->cfa_off = clamp_s(sleb(c)) * da; return 1;
	case 0x14: reg = uleb(c); (void)uleb(c); set_how(s, reg, R_OTHER); return 1;
	case 0x15: reg = uleb(c); (void)sleb(c); set_how(s, reg, R_OTHER); return 1;
	case 0x2e: (void)uleb(c); return 1;			/* GNU_args_size */
	case 0x2f: reg = uleb(c); set_at(s, reg, -clamp_u(uleb(c)) * da); return 1;
	}
	return 0;
}

/* Run the instructions in [p, end) until they end or pass the FDE's end. */
static int run(struct run *r, const uint8_t *p, const uint8_t *end)
{
	struct cur c = span(r->in, p, end);
	int64_t da = r->cie->data_align;

	while (c.p < c.end && r->loc < r->end) {
		uint8_t op = (uint8_t)get(&c, 1);
		int ok = 1;

		switch (op >> 6) {
		case 1: ok = advance(r, op & 0x3f); break;
		case 2: set_at(&r->st, op & 0x3f, clamp_u(uleb(&c)) * da); break;
		case 3: restore(r, op & 0x3f); break;
		default: ok = extended(r, &c, op);
		}
		if (!ok || c.bad)
			return 0;
	}
	return 1;
}

/* Emit the rows of one FDE, ending with a stop at its end. */
static int fde_rows(const struct cfi_input *in, const struct cie *cie,
		    const struct fde *f, struct emit *em)
{
	struct run r;

	memset(&r, 0, sizeof(r));
	r.in = in;
	r.cie = cie;
	r.loc = f->start;
	r.end = f->end;
	r.st.rsp_ok = 1;
	r.st.rbp = R_SAME;
	r.st.ra = R_OTHER;
	r.init = r.st;
	if (!run(&r, cie->insns, cie->end))
		return 0;
	r.init = r.st;
	r.em = em;
	if (!run(&r, f->insns, f->end_insns))
		return 0;
	if (r.loc < r.end)
		emit(em, (uint32_t)r.loc, rule_of(&r));
	emit(em, (uint32_t)r.end, CFI_STOP);
	return 1;
}

int cfi_eh_frame_addr(const uint8_t *hdr, size_t len, uint64_t hdr_addr,
		      uint64_t *addr)
{
	struct cur c = { hdr, hdr + len, hdr, hdr_addr, 0 };
	uint64_t version = get(&c, 1), enc = get(&c, 1);

	skip(&c, 2);	/* the encodings of the search table */
	if (c.bad || version != 1 || enc == PE_OMIT)
		return 0;
	*addr = pointer(&c, (uint8_t)(enc & ~PE_INDIRECT), hdr_addr);
	if (c.bad)
		return 0;
	return enc & PE_INDIRECT ? 2 : 1;
}

uint64_t cfi_fde_count(const uint8_t *hdr, size_t len, uint64_t hdr_addr)
{
	struct cur c = { hdr, hdr + len, hdr, hdr_addr, 0 };
	uint64_t version = get(&c, 1), enc = get(&c, 1), count_enc = get(&c, 1);
	uint64_t n;

	skip(&c, 1);	/* the encoding of the search table */
	if (c.bad || version != 1 || enc == PE_OMIT || count_enc == PE_OMIT)
		return 0;
	(void)pointer(&c, (uint8_t)(enc & ~PE_INDIRECT), hdr_addr);
	n = pointer(&c, (uint8_t)(count_enc & ~PE_INDIRECT), hdr_addr);
	return c.bad || (count_enc & PE_INDIRECT) ? 0 : n;
}

size_t cfi_eh_frame_len(const uint8_t *eh, size_t max)
{
	struct entry e;
	size_t off = 0;

	while (entry_at(eh, max, off, &e))
		off = e.next;
	return off;
}

size_t cfi_count_fdes(const struct cfi_input *in)
{
	struct entry e;
	size_t off = 0, n = 0;

	for (; entry_at(in->eh, in->eh_len, off, &e); off = e.next)
		n += e.id != 0 && !e.wide;
	return n;
}

static int fde_less(const struct cfi_fde *a, const struct cfi_fde *b)
{
	return a->pc < b->pc || (a->pc == b->pc && a->off < b->off);
}

static void sift(struct cfi_fde *v, size_t i, size_t n)
{
	for (size_t c; (c = 2 * i + 1) < n; i = c) {
		struct cfi_fde t;

		if (c + 1 < n && fde_less(&v[c], &v[c + 1]))
			c++;
		if (!fde_less(&v[i], &v[c]))
			return;
		t = v[i];
		v[i] = v[c];
		v[c] = t;
	}
}

/* Heapsort: no recursion, no allocation, n log n even on hostile orders. */
static void sort_fdes(struct cfi_fde *v, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		sift(v, i, n);
	for (size_t k = n; k-- > 1;) {
		struct cfi_fde t = v[0];

		v[0] = v[k];
		v[k] = t;
		sift(v, 0, k);
	}
}

size_t cfi_index(const struct cfi_input *in, struct cfi_fde *fdes, size_t cap)
{
	struct cie cie = { .off = SIZE_MAX };
	struct entry e;
	struct fde f;
	size_t off = 0, n = 0;
	int sorted = 1;

	if (in->eh_len > UINT32_MAX)
		return 0;
	for (; n < cap && entry_at(in->eh, in->eh_len, off, &e); off = e.next) {
		if (e.id == 0 || !parse_fde(in, off, &cie, &f))
			continue;
		if (n > 0 && f.start < fdes[n - 1].pc)
			sorted = 0;
		fdes[n].pc = (uint32_t)f.start;
		fdes[n].off = (uint32_t)off;
		n++;
	}
	if (!sorted)
		sort_fdes(fdes, n);
	return n;
}

/*
 * FDEs come in pc order; one that starts inside the one before is skipped,
 * and so is one whose program is malformed (its rows are taken back), so
 * its range is a gap: "stop".
 */
size_t cfi_rows(const struct cfi_input *in, const struct cfi_fde *fdes,
		size_t nfdes, struct cfi_row *rows, size_t cap)
{
	struct emit em = { rows, cap, 0, 0, { 0, 0 }, 0, 0 };
	struct cie cie = { .off = SIZE_MAX };
	uint64_t prev_end = 0;

	for (size_t i = 0; i < nfdes; i++) {
		struct emit before = em;
		struct fde f;

		if (!parse_fde(in, fdes[i].off, &cie, &f) || f.start < prev_end)
			continue;
		if (!fde_rows(in, &cie, &f, &em)) {
			em = before;
			continue;
		}
		prev_end = f.end;
	}
	if (em.has_pend)
		commit(&em, em.pend);
	return em.full ? 0 : em.n;
}

size_t cfi_buckets(const struct cfi_row *rows, size_t n)
{
	return n == 0 ? 0 : ((rows[n - 1].pc - rows[0].pc) >> CFI_BUCKET_SHIFT) + 2;
}

void cfi_fill_buckets(const struct cfi_row *rows, size_t n, uint32_t *index,
		      size_t nindex)
{
	size_t j = 0;

	for (size_t b = 0; b < nindex; b++) {
		uint64_t at = rows[0].pc + ((uint64_t)b << CFI_BUCKET_SHIFT);

		while (j + 1 < n && rows[j + 1].pc <= at)
			j++;
		index[b] = (uint32_t)j;
	}
}
