/* Naming a thread's futex wait from its stack, read from outside. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "maps.h"
#include "waitkind.h"
#include "xalloc.h"

/* Return addresses whose call check is kept (direct-mapped). */
#define CHECKED_SLOTS 1024

enum owner { OWNER_LIBC, OWNER_COLLECTOR, OWNER_PROGRAM };

/* An executable mapping of the process. */
struct code_range {
	struct maps_span span;	/* first: see maps_span_find() */
	enum owner owner;
};

/* A return address checked for a call before it. */
struct checked {
	uint64_t address;
	bool call;
};

struct waitkind {
	pid_t pid;
	struct code_range *ranges;
	size_t nranges, cap;
	bool have_libc;
	struct checked checked[CHECKED_SLOTS];
};

struct waitkind *waitkind_new(pid_t pid)
{
	struct waitkind *w = xcalloc(1, sizeof *w);

	w->pid = pid;
	return w;
}

void waitkind_free(struct waitkind *w)
{
	if (w == NULL)
		return;
	free(w->ranges);
	free(w);
}

/* Whose code a mapping's file is: libc's side (libc, the loader), ours, or not. */
static enum owner owner_of(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (strcmp(base, "libc.so.6") == 0 ||
	    strcmp(base, "ld-linux-x86-64.so.2") == 0)
		return OWNER_LIBC;
	if (strcmp(base, "libqsptop.so") == 0)
		return OWNER_COLLECTOR;
	return OWNER_PROGRAM;
}

static void add_range(struct waitkind *w, uint64_t lo, uint64_t hi,
		      const char *path)
{
	struct code_range *r;

	w->ranges = xgrow(w->ranges, &w->cap, w->nranges + 1, 32, sizeof *r);
	r = &w->ranges[w->nranges++];
	r->span = (struct maps_span){ lo, hi };
	r->owner = owner_of(path);
	if (r->owner == OWNER_LIBC && strstr(path, "libc.so.6"))
		w->have_libc = true;
}

/* Keep an executable mapping (maps_each()'s callback). */
static void keep_code(const struct maps_line *l, void *ctx)
{
	if (maps_exec(l))
		add_range(ctx, l->start, l->end, l->path);
}

bool waitkind_maps(struct waitkind *w)
{
	w->nranges = 0;
	w->have_libc = false;
	memset(w->checked, 0, sizeof w->checked);
	maps_each(w->pid, keep_code, w);
	return w->have_libc;
}

/* The mapping holding address. */
static const struct code_range *range_of(const struct waitkind *w, uint64_t a)
{
	return maps_span_find(w->ranges, w->nranges, sizeof *w->ranges, a);
}

/* Read size bytes of the process at address; how many were read. */
static size_t read_target(const struct waitkind *w, uint64_t address,
			  void *buf, size_t size)
{
	struct iovec local = { buf, size };
	struct iovec remote = { (void *)(uintptr_t)address, size };
	ssize_t n = process_vm_readv(w->pid, &local, 1, &remote, 1, 0);

	return n > 0 ? (size_t)n : 0;
}

bool waitkind_follows_call(const uint8_t b[8])
{
	/* ModRM with reg field 2 (call) in each addressing form, by length. */
	bool reg = b[6] == 0xff && (b[7] & 0xf8) == 0xd0;	     /* *%reg */
	bool ind = b[6] == 0xff && (b[7] & 0xf8) == 0x10 &&
		   b[7] != 0x14 && b[7] != 0x15;		     /* *(%reg) */
	bool sib = b[5] == 0xff && b[6] == 0x14;		     /* *(SIB) */
	bool d8 = b[5] == 0xff && (b[6] & 0xf8) == 0x50 && b[6] != 0x54;
	bool sib8 = b[4] == 0xff && b[5] == 0x54;		     /* d8(SIB) */
	bool rel = b[3] == 0xe8;				     /* rel32 */
	bool rip = b[2] == 0xff && b[3] == 0x15;		     /* *d32(%rip) */
	bool d32 = b[2] == 0xff && (b[3] & 0xf8) == 0x90 && b[3] != 0x94;
	bool sib32 = b[1] == 0xff && b[2] == 0x94;		     /* d32(SIB) */

	return reg || ind || sib || d8 || sib8 || rel || rip || d32 || sib32;
}

/* Whether address follows a call instruction in the process's code. */
static bool is_return(struct waitkind *w, uint64_t address)
{
	struct checked *c = &w->checked[(address >> 2) % CHECKED_SLOTS];
	uint8_t before[8];

	if (c->address == address)
		return c->call;
	c->address = address;
	c->call = read_target(w, address - 8, before, 8) == 8 &&
		  waitkind_follows_call(before);
	return c->call;
}

/*
 * glibc functions that the public ones jump to rather than call, so that
 * only they are on the stack: the name a user knows.
 */
static const char *const public_names[][2] = {
	{ "__new_sem_wait_slow64", "sem_wait" },
	{ "__pthread_once_slow", "pthread_once" },
	{ "__pthread_clockjoin_ex", "pthread_join" },
};

/*
 * The function holding address into name, without the suffix of a
 * compiler's copy (".constprop.0", ".isra.0"), under its public name.
 */
bool waitkind_name(struct symbols *symbols, uint64_t address, bool is_ret,
		   char *name, size_t size)
{
	struct frame_info fi;

	if (!symbols_resolve(symbols, address, is_ret, &fi) || fi.symbol == NULL)
		return false;
	snprintf(name, size, "%.*s", (int)strcspn(fi.symbol, "."), fi.symbol);
	for (size_t i = 0; i < sizeof(public_names) / sizeof(public_names[0]); i++)
		if (strcmp(name, public_names[i][0]) == 0)
			snprintf(name, size, "%s", public_names[i][1]);
	return true;
}

enum waitkind_verdict waitkind_of(struct waitkind *w, struct symbols *symbols,
				  uint64_t sp, uint64_t pc, char *name,
				  size_t size)
{
	const struct code_range *r = range_of(w, pc);
	uint64_t stack[WAITKIND_WORDS], outer = pc;
	size_t n;

	if (r == NULL || r->owner != OWNER_LIBC) {
		snprintf(name, size, "%s", WAITKIND_RAW);
		return WAITKIND_UNSEEN;
	}
	n = read_target(w, sp, stack, sizeof stack) / sizeof stack[0];
	if (n == 0)
		return WAITKIND_UNKNOWN;
	for (size_t i = 0; i < n; i++) {
		r = range_of(w, stack[i]);
		if (r == NULL || !is_return(w, stack[i]))
			continue;
		if (r->owner == OWNER_COLLECTOR)
			return WAITKIND_HOOKED;
		if (r->owner == OWNER_PROGRAM)
			break;
		outer = stack[i];
	}
	if (!waitkind_name(symbols, outer, outer != pc, name, size))
		return WAITKIND_UNKNOWN;
	return WAITKIND_UNSEEN;
}

bool waitkind_stack(struct waitkind *w, uint64_t sp, uint64_t pc,
		    struct waitkind_stack *out)
{
	uint64_t stack[WAITKIND_WORDS];
	size_t n = read_target(w, sp, stack, sizeof stack) / sizeof stack[0];
	const struct code_range *r;

	out->n = 0;
	out->outside = 0;
	out->libc_outer = pc;
	r = range_of(w, pc);
	if (n == 0)
		return false;
	if (r && r->owner != OWNER_PROGRAM)
		out->outside = WAITKIND_FRAMES;
	for (size_t i = 0; i < n && out->n < WAITKIND_FRAMES; i++) {
		r = range_of(w, stack[i]);
		if (r == NULL || !is_return(w, stack[i]))
			continue;
		if (out->outside == WAITKIND_FRAMES && r->owner == OWNER_PROGRAM)
			out->outside = out->n;
		else if (out->outside == WAITKIND_FRAMES && r->owner == OWNER_LIBC)
			out->libc_outer = stack[i];
		out->frames[out->n++] = stack[i];
	}
	if (out->outside > out->n)
		out->outside = out->n;
	return true;
}

bool waitkind_syscall(pid_t pid, unsigned long tid, char *line, size_t size)
{
	char path[64];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "/proc/%d/task/%lu/syscall", (int)pid, tid);
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	ok = fgets(line, (int)size, f) != NULL;
	fclose(f);
	return ok;
}
