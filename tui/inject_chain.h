/*
 * The chain of calls a borrowed thread runs, laid out on its own stack as
 * signal frames (inject_chain.c), and the borrowed thread itself, shared
 * by inject.c, which stops it, runs the chain and puts it back. Not for
 * use outside them.
 */
#ifndef QSPTOP_INJECT_CHAIN_H
#define QSPTOP_INJECT_CHAIN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/user.h>

#include "inject_thread.h"

struct inject_target;

#define SYSCALL_INSN_LEN 2
/* The kernel's internal "restart me" results, as seen in rax at a stop. */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

/* The steps of the chain, by the frame a call returns into. */
enum { TO_TRYLOCK, TO_DLOPEN, TO_UNLOCK, TO_RESTORE_STATE, TO_THREAD, CHAIN };

/* One borrowed thread and everything needed to put it back. */
struct borrow {
	pid_t tid;
	int mem;			/* /proc/PID/mem */
	struct user_regs_struct regs;	/* as interrupted */
	struct iovec xstate;
	int xstate_type;		/* NT_X86_XSTATE, or NT_PRFPREG */
	uint64_t mask;			/* blocked signals as interrupted */
	uint64_t errno_at;		/* the thread's errno, or 0: unknown */
	int32_t saved_errno;
	uint64_t path;			/* lib, on the thread's stack */
	/* The chain (build_chain): the return slot of each call, holding
	 * __restore_rt over the frame of the next step, and where the
	 * first call leaves the thread's cancel state for the last. */
	uint64_t slot[CHAIN];
	uint64_t old_state_at;
	long nr;			/* the call it was parked in */
	uint64_t args[6];
	enum borrow_rank rank;		/* and that call's */
	int step;			/* entered last, or -1 */
	bool slept;			/* let go: its call went on too long */
	bool dlopen_returned;
	bool loader_busy;		/* dlopen skipped: the lock was taken */
};

/* Save the thread's FP/SSE/AVX state as a whole into b->xstate. */
int chain_save_fpu(struct borrow *b);
/* Write or read n bytes of the target at addr; -1 when short. */
int chain_put(const struct borrow *b, uint64_t addr, const void *buf, size_t n);
int chain_get(const struct borrow *b, uint64_t addr, void *buf, size_t n);
/* The registers that resume the thread's system call as interrupted. */
struct user_regs_struct chain_resumed(const struct user_regs_struct *in);
/* The loader's lock is taken around dlopen (not around qsptop_wake). */
bool chain_takes_loader_lock(const struct inject_target *t);
/* The step the first call, pthread_setcancelstate, returns into. */
int chain_first_step(const struct inject_target *t);
/* Lay the chain out below the thread's stack pointer; -1 on failure. */
int chain_build(const struct inject_target *t, struct borrow *b);

#endif
