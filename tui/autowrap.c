/* Lock wrappers found from the waits' stacks and the functions' code. */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "addrcache.h"
#include "autowrap.h"
#include "procs.h"
#include "xalloc.h"

/* What a function's code says: not read yet, a wrapper's, or not. */
enum code_verdict { CODE_UNKNOWN, CODE_WRAPPER, CODE_NOT };

/* A function holding a lock call (directly or through wrappers). */
struct candidate {
	uint64_t lo, hi;
	uint64_t callers[AUTOWRAP_MIN_CALLERS];	/* distinct, their starts */
	unsigned ncallers;
	enum code_verdict code;
	bool found;
};

struct autowrap {
	struct symbols *symbols;
	struct addrcache *candidates;	/* struct candidate by function start */
	uint64_t *found;		/* lo, hi of each wrapper found */
	unsigned *callers;		/* the callers each had when found */
	size_t nfound;
	size_t stacks_done;		/* stack ids read already */
	bool retry;			/* some code could not be judged yet */
};

struct autowrap *autowrap_new(struct symbols *s)
{
	struct autowrap *aw = xcalloc(1, sizeof *aw);

	aw->symbols = s;
	aw->candidates = addrcache_new(sizeof(struct candidate));
	return aw;
}

void autowrap_free(struct autowrap *aw)
{
	if (aw == NULL)
		return;
	addrcache_free(aw->candidates, NULL);
	free(aw->found);
	free(aw->callers);
	free(aw);
}

size_t autowrap_count(const struct autowrap *aw)
{
	return aw ? aw->nfound : 0;
}

void autowrap_get(const struct autowrap *aw, size_t i, uint64_t *lo,
		  uint64_t *hi, unsigned *callers)
{
	*lo = aw->found[2 * i];
	*hi = aw->found[2 * i + 1];
	*callers = aw->callers[i];
}

/* The candidate of the function holding return address ret, or NULL. */
static struct candidate *candidate_of(struct autowrap *aw, uint64_t ret)
{
	struct candidate *c;
	uint64_t lo, hi;

	if (!symbols_function_at(aw->symbols, ret - 1, &lo, &hi))
		return NULL;
	if ((c = addrcache_find(aw->candidates, lo)) != NULL)
		return c;
	c = addrcache_add(aw->candidates, lo);
	c->lo = lo;
	c->hi = hi;
	return c;
}

/* Note that the function holding return address ret called c. */
static void add_caller(struct autowrap *aw, struct candidate *c, uint64_t ret)
{
	uint64_t lo, hi;

	if (!symbols_function_at(aw->symbols, ret - 1, &lo, &hi))
		lo = ret;	/* no extent known: the call site stands for it */
	if (lo == c->lo)
		return;		/* recursion is not a caller */
	for (unsigned i = 0; i < c->ncallers; i++)
		if (c->callers[i] == lo)
			return;
	if (c->ncallers < AUTOWRAP_MIN_CALLERS)
		c->callers[c->ncallers++] = lo;
}

/* Read len bytes of the target at tagged address a; whether all came. */
static bool read_target(uint64_t a, void *buf, size_t len)
{
	pid_t pid = procs_pid(procs_of(a));
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)procs_addr(a), len };

	return pid > 0 &&
	       process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

static int32_t rel32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The function a GOT slot at tagged address slot holds, tagged; 0 if unread. */
static uint64_t slot_target(uint64_t slot)
{
	uint64_t dest;

	return read_target(slot, &dest, sizeof(dest)) ?
	       procs_tag(procs_of(slot), dest) : 0;
}

/*
 * Where a call to a goes: through a PLT entry ("jmp *slot(%rip)", after
 * endbr64 and bnd), the function its GOT slot holds; else a itself.
 */
static uint64_t through_plt(uint64_t a)
{
	uint8_t s[12];
	size_t k = 0;

	if (!read_target(a, s, sizeof(s)))
		return a;
	if (s[0] == 0xf3 && s[1] == 0x0f && s[2] == 0x1e && s[3] == 0xfa)
		k = 4;
	if (s[k] == 0xf2)
		k++;
	if (s[k] != 0xff || s[k + 1] != 0x25)
		return a;
	return slot_target(a + k + 6 + (uint64_t)(int64_t)rel32(s + k + 2));
}

/* Whether the function at target releases a lock; CODE_UNKNOWN: no name yet. */
static enum code_verdict unlocks(struct autowrap *aw, uint64_t target)
{
	struct frame_info fi;

	if (target == 0)
		return CODE_NOT;
	if (!symbols_resolve(aw->symbols, target, 0, &fi) && fi.module)
		return CODE_UNKNOWN;	/* past this refresh's time budget */
	return fi.symbol && strcasestr(fi.symbol, "unlock") ? CODE_WRAPPER :
							       CODE_NOT;
}

/*
 * The targets of the calls and jumps out of code (at lo, len bytes):
 * call/jmp rel32 (e8, e9) and call through a GOT slot (ff 15), found by
 * their opcodes at every byte (an opcode byte inside another instruction
 * gives a target at random, almost never an unlock function). Whether
 * one is an unlock function: a wrapper returns holding the lock.
 */
static enum code_verdict judge_calls(struct autowrap *aw, uint64_t lo,
				     uint64_t hi, const uint8_t *code, size_t len)
{
	enum code_verdict v = CODE_WRAPPER;

	for (size_t k = 0; k + 6 <= len && v != CODE_NOT; k++) {
		uint64_t t = 0, next = lo + k + 5;
		enum code_verdict u;

		if (code[k] == 0xe8 || code[k] == 0xe9)
			t = through_plt(next + (uint64_t)(int64_t)rel32(code + k + 1));
		else if (code[k] == 0xff && code[k + 1] == 0x15)
			t = slot_target(next + 1 + (uint64_t)(int64_t)rel32(code + k + 2));
		if (t == 0 || (t >= lo && t < hi))
			continue;
		u = unlocks(aw, t);
		v = u == CODE_WRAPPER ? CODE_NOT : u == CODE_UNKNOWN ? CODE_UNKNOWN : v;
	}
	return v;
}

/* What c's code says, read once: CODE_UNKNOWN when it cannot say yet. */
static enum code_verdict judge_code(struct autowrap *aw, struct candidate *c)
{
	uint8_t code[AUTOWRAP_MAX_BYTES];
	size_t len = (size_t)(c->hi - c->lo);

	if (c->code != CODE_UNKNOWN)
		return c->code;
	if (!read_target(c->lo, code, len))
		return CODE_UNKNOWN;
	c->code = judge_calls(aw, c->lo, c->hi, code, len);
	if (c->code == CODE_UNKNOWN)
		aw->retry = true;
	return c->code;
}

/*
 * Whether c passes the rule, to be counted through from now on. Called by
 * a wrapper, one caller is enough: what a wrapper calls to take the lock
 * (a static helper of a named wrapper) is part of it.
 */
static bool is_wrapper(struct autowrap *aw, struct candidate *c,
		       bool in_wrapper)
{
	return !c->found &&
	       (c->ncallers >= AUTOWRAP_MIN_CALLERS || in_wrapper) &&
	       c->hi - c->lo <= AUTOWRAP_MAX_BYTES &&
	       judge_code(aw, c) == CODE_WRAPPER;
}

static void record(struct autowrap *aw, struct candidate *c, struct wrappers *w)
{
	c->found = true;
	aw->found = xreallocarray(aw->found, aw->nfound + 1, 2 * sizeof *aw->found);
	aw->callers = xreallocarray(aw->callers, aw->nfound + 1,
				    sizeof *aw->callers);
	aw->found[2 * aw->nfound] = c->lo;
	aw->found[2 * aw->nfound + 1] = c->hi;
	aw->callers[aw->nfound++] = c->ncallers;
	wrappers_add_function(w, c->lo, c->hi);
}

/*
 * The first frame outside every known wrapper holds the lock call, made
 * there or through those wrappers; the frame above it is its caller, a
 * wrapper itself when the function is a wrapper's helper.
 */
static bool read_stack(struct autowrap *aw, const uint64_t *f, size_t depth,
		       struct wrappers *w)
{
	struct candidate *c;
	size_t i = 0;

	while (i < depth && wrappers_match(w, f[i]))
		i++;
	if (i + 1 >= depth || (c = candidate_of(aw, f[i])) == NULL)
		return false;
	add_caller(aw, c, f[i + 1]);
	if (!is_wrapper(aw, c, wrappers_match(w, f[i + 1])))
		return false;
	record(aw, c, w);
	return true;
}

size_t autowrap_scan(struct autowrap *aw, const struct model *m,
		     struct wrappers *w)
{
	size_t before = aw->nfound, n = model_stack_ids(m);
	bool again = false;

	for (; aw->stacks_done < n; aw->stacks_done++) {
		const uint64_t *frames;
		size_t depth = model_stack_frames(m, (uint32_t)aw->stacks_done,
						  &frames);

		if (depth > 0 && read_stack(aw, frames, depth, w))
			again = true;
	}
	/*
	 * A wrapper found may be called by another, and code not judged for
	 * want of names may be judged on a later refresh: read them all again.
	 */
	if (again || aw->retry)
		aw->stacks_done = 0;
	aw->retry = false;
	return aw->nfound - before;
}
