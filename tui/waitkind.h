/*
 * What a thread blocked in a futex call is waiting in, read from outside:
 * its stack (a bounded number of words from its stack pointer, read with
 * process_vm_readv, the target never stopped) is scanned for return
 * addresses, each checked to follow a call instruction. Going outwards
 * from the stack pointer, the frames of libc (and the loader) come first;
 * the first frame outside them tells who called: the collector's library
 * (a hook times the wait) or the program (no hook does). The wait is then
 * named after the outermost libc function below that frame, or "raw
 * futex" when the system call instruction itself lies outside libc.
 */
#ifndef QSPTOP_WAITKIND_H
#define QSPTOP_WAITKIND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbols.h"

/* The name given to a futex call made by a syscall instruction outside libc. */
#define WAITKIND_RAW "raw futex"

/* How many stack words are read per thread, at most. */
#define WAITKIND_WORDS 512

/* How many return addresses waitkind_stack() keeps, at most. */
#define WAITKIND_FRAMES 48

enum waitkind_verdict {
	WAITKIND_HOOKED,	/* a hook of the collector times the wait */
	WAITKIND_UNSEEN,	/* nothing times it; named */
	WAITKIND_UNKNOWN,	/* the stack could not be read or named */
};

struct waitkind;

/* A reader of process pid's stacks; nothing is read yet. */
struct waitkind *waitkind_new(pid_t pid);
void waitkind_free(struct waitkind *w);

/*
 * Read the process's executable mappings anew (libc, the loader, the
 * collector, the rest). False when it has no libc (not glibc, or /proc is
 * closed to us): then nothing can be told.
 */
bool waitkind_maps(struct waitkind *w);

/*
 * The verdict on a thread blocked in a futex call at pc with stack
 * pointer sp; when UNSEEN, its kind is written to name (a libc function,
 * or WAITKIND_RAW). Names come from symbols; one not known yet (its
 * module's table not built within the refresh's budget) makes UNKNOWN.
 */
enum waitkind_verdict waitkind_of(struct waitkind *w, struct symbols *symbols,
				  uint64_t sp, uint64_t pc, char *name,
				  size_t size);

/* A thread's stack read from outside, as waitkind_of() reads it. */
struct waitkind_stack {
	uint64_t frames[WAITKIND_FRAMES];	/* return addresses, innermost first */
	size_t n;
	size_t outside;		/* the first frame outside libc and the
				   collector (the call site); n when none */
	uint64_t libc_outer;	/* the outermost libc frame below it, or pc */
};

/*
 * The return addresses on the stack of a thread stopped at pc with stack
 * pointer sp, found as waitkind_of() finds them; false when its stack
 * cannot be read.
 */
bool waitkind_stack(struct waitkind *w, uint64_t sp, uint64_t pc,
		    struct waitkind_stack *out);

/*
 * The name waitkind_of() gives the function holding address (a return
 * address when is_ret); false when it has no name yet.
 */
bool waitkind_name(struct symbols *symbols, uint64_t address, bool is_ret,
		   char *name, size_t size);

/*
 * Thread tid's /proc syscall line ("NR ARG1 ... ARG6 SP PC" while in a
 * call, "running", "-1 SP PC" otherwise); false when it cannot be read.
 */
bool waitkind_syscall(pid_t pid, unsigned long tid, char *line, size_t size);

/*
 * Whether the 8 bytes that end at a return address end with a call
 * instruction (direct, or indirect through a register or memory).
 */
bool waitkind_follows_call(const uint8_t before[8]);

#endif
