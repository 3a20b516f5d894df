/*
 * The chain of calls a borrowed thread runs: signal frames below its
 * stack pointer, each call returning into libc's __restore_rt, whose
 * rt_sigreturn enters the next frame; the last holds the thread's own
 * registers, signal mask and FP state. Written into the target through
 * /proc/PID/mem; inject.c runs it.
 */
#include <cpuid.h>
#include <elf.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "inject_chain.h"
#include "inject_proc.h"

#define RED_ZONE 128
#define RTLD_NOW_FLAG 2
/* The signal frame's FP state: a legacy fxsave area whose software bytes
 * (464..511) say an xsave image follows, closed by a second magic word. */
#define FP_SW_BYTES 464
#define FP_XSTATE_BV 512
#define FP_MAGIC1 0x46505853U
#define FP_MAGIC2 0x46505845U

/* struct _fpx_sw_bytes of <asm/sigcontext.h>, which clashes with glibc's. */
struct fp_sw_bytes {
	uint32_t magic1, extended_size;
	uint64_t xfeatures;
	uint32_t xstate_size, padding[7];
};

/* Save the FP/SSE/AVX state as a whole (the legacy part without XSAVE). */
int chain_save_fpu(struct borrow *b)
{
	b->xstate_type = NT_X86_XSTATE;
	if (ptrace(PTRACE_GETREGSET, b->tid, (void *)(uintptr_t)NT_X86_XSTATE,
		   &b->xstate) == 0)
		return 0;
	b->xstate_type = NT_PRFPREG;
	b->xstate.iov_len = sizeof(struct user_fpregs_struct);
	return ptrace(PTRACE_GETREGSET, b->tid, (void *)(uintptr_t)NT_PRFPREG,
		      &b->xstate) < 0 ? -1 : 0;
}

int chain_put(const struct borrow *b, uint64_t addr, const void *buf, size_t n)
{
	return pwrite(b->mem, buf, n, (off_t)addr) == (ssize_t)n ? 0 : -1;
}

int chain_get(const struct borrow *b, uint64_t addr, void *buf, size_t n)
{
	return pread(b->mem, buf, n, (off_t)addr) == (ssize_t)n ? 0 : -1;
}

/*
 * The registers that resume the thread's system call as the kernel
 * would after a stop: restarted from the start with its own arguments,
 * else returning what it returned. A call that needs the kernel's restart
 * block is never borrowed in it (borrow_at_end), so none is left here.
 */
struct user_regs_struct chain_resumed(const struct user_regs_struct *in)
{
	struct user_regs_struct r = *in;
	long rax = (long)r.rax;

	if (rax == -ERESTARTSYS || rax == -ERESTARTNOINTR ||
	    rax == -ERESTARTNOHAND) {
		r.rax = r.orig_rax;
		r.rip -= SYSCALL_INSN_LEN;	/* back onto syscall */
	}
	return r;
}

/* The ucontext rt_sigreturn puts the thread back with, FP state at fx. */
static void fill_ucontext(ucontext_t *c, const struct borrow *b, uint64_t fx)
{
	struct user_regs_struct r = chain_resumed(&b->regs);
	greg_t *g = c->uc_mcontext.gregs;

	memset(c, 0, sizeof(*c));
	/* An invalid mode: rt_sigreturn then leaves the altstack alone. */
	c->uc_stack.ss_flags = SS_ONSTACK | SS_DISABLE;
	g[REG_R8] = (greg_t)r.r8, g[REG_R9] = (greg_t)r.r9;
	g[REG_R10] = (greg_t)r.r10, g[REG_R11] = (greg_t)r.r11;
	g[REG_R12] = (greg_t)r.r12, g[REG_R13] = (greg_t)r.r13;
	g[REG_R14] = (greg_t)r.r14, g[REG_R15] = (greg_t)r.r15;
	g[REG_RDI] = (greg_t)r.rdi, g[REG_RSI] = (greg_t)r.rsi;
	g[REG_RBP] = (greg_t)r.rbp, g[REG_RBX] = (greg_t)r.rbx;
	g[REG_RDX] = (greg_t)r.rdx, g[REG_RAX] = (greg_t)r.rax;
	g[REG_RCX] = (greg_t)r.rcx, g[REG_RSP] = (greg_t)r.rsp;
	g[REG_RIP] = (greg_t)r.rip, g[REG_EFL] = (greg_t)r.eflags;
	g[REG_CSGSFS] = (greg_t)((r.cs & 0xffff) | (r.gs & 0xffff) << 16 |
				 (r.fs & 0xffff) << 32 | (r.ss & 0xffff) << 48);
	c->uc_mcontext.fpregs = (fpregset_t)(uintptr_t)fx;
	memcpy(&c->uc_sigmask, &b->mask, sizeof(b->mask));
}

/*
 * The end of the (standard format) xsave image's last component in
 * features: its offset plus its size, as CPUID leaf 0xd says; at least
 * the legacy area and the header.
 */
static uint32_t xstate_end(uint64_t features, uint32_t n)
{
	uint32_t end = FP_XSTATE_BV + 64, size, offset, ecx, edx;

	for (unsigned i = 2; i < 64; i++) {
		if (!(features >> i & 1) ||
		    !__get_cpuid_count(0xd, i, &size, &offset, &ecx, &edx))
			continue;
		if (offset + size > end)
			end = offset + size;
	}
	return end < n ? end : n;
}

/*
 * The FP state as a signal frame holds it: the xsave image the kernel
 * gave us, its software bytes saying so and the closing magic word, so
 * that rt_sigreturn restores AVX and the rest, not only the legacy part.
 * The image is cut after the last component in use: ptrace's is as big
 * as every feature the CPU has (11008 bytes with AMX), but rt_sigreturn
 * takes an image no bigger than the thread's own, and restores only the
 * legacy part (the low halves of the vector registers) from a bigger one.
 * Without XSAVE, the fxsave image alone (software bytes zero).
 */
static int put_fpstate(const struct borrow *b, uint64_t fx)
{
	const uint8_t *img = b->xstate.iov_base;
	uint32_t n = (uint32_t)b->xstate.iov_len, magic2 = FP_MAGIC2, size;
	struct fp_sw_bytes sw = { 0 };
	uint64_t xcr0, bv;

	if (chain_put(b, fx, img, n) < 0)
		return -1;
	if (b->xstate_type == NT_X86_XSTATE && n > FP_XSTATE_BV + 8) {
		/* ptrace leaves XCR0 in the software bytes. */
		memcpy(&xcr0, img + FP_SW_BYTES, sizeof(xcr0));
		memcpy(&bv, img + FP_XSTATE_BV, sizeof(bv));
		size = xstate_end(xcr0 & bv, n);
		sw = (struct fp_sw_bytes){ .magic1 = FP_MAGIC1,
					   .extended_size = size + sizeof(magic2),
					   .xfeatures = xcr0 & bv,
					   .xstate_size = size };
		if (chain_put(b, fx + size, &magic2, sizeof(magic2)) < 0)
			return -1;
	}
	return chain_put(b, fx + FP_SW_BYTES, &sw, sizeof(sw));
}

/* Make c, a copy of the thread's frame, call fn(a0, a1) returning to slot. */
static void set_call(ucontext_t *c, uint64_t fn, uint64_t a0, uint64_t a1,
		     uint64_t slot)
{
	greg_t *g = c->uc_mcontext.gregs;

	g[REG_RIP] = (greg_t)fn, g[REG_RDI] = (greg_t)a0;
	g[REG_RSI] = (greg_t)a1, g[REG_RSP] = (greg_t)slot, g[REG_RAX] = 0;
}

/* The loader's lock is taken around dlopen (not around qsptop_wake). */
bool chain_takes_loader_lock(const struct inject_target *t)
{
	return t->load_lock != 0 && t->wake == 0;
}

/* The step the first call, pthread_setcancelstate, returns into. */
int chain_first_step(const struct inject_target *t)
{
	return chain_takes_loader_lock(t) ? TO_TRYLOCK : TO_DLOPEN;
}

/*
 * Below the red zone, keeping the SysV alignment: the library path, the
 * FP state, and a signal frame for each step, each under the return slot
 * (holding __restore_rt) of the call before it:
 *   pthread_setcancelstate(DISABLE, &the old state) returns into
 *   TRYLOCK: pthread_mutex_trylock(the loader's lock), into
 *   DLOPEN: dlopen(path, RTLD_NOW) (or, to wake a collector already
 *      there, qsptop_wake()), into
 *   UNLOCK: pthread_mutex_unlock(the loader's lock), into
 *   RESTORE_STATE: pthread_setcancelstate(the old state, NULL), into
 *   THREAD: the thread as interrupted, its system call restarted.
 * A call's own stack lies below its slot, over frames already used. Once
 * the thread runs the first call it gets back through THREAD, watched or
 * not. A pthread_cancel acted on inside dlopen (at a cancellation point
 * of a constructor, say) would unwind it holding the loader lock:
 * disabled, cancellation waits (no SIGCANCEL is even sent), and restoring
 * the old state acts on it once dlopen is done, as the thread's own call
 * would. dlopen never waits for the loader's lock: we take it first with
 * a trylock, and when another thread holds it, run_chain skips to
 * RESTORE_STATE (and an unlock of a lock we do not hold fails harmlessly,
 * should the chain run on without us).
 */
int chain_build(const struct inject_target *t, struct borrow *b)
{
	uint64_t top = (b->regs.rsp - RED_ZONE) & ~15ULL, fx, uc = 0;
	size_t n = strlen(t->lib) + 1;
	ucontext_t c[CHAIN];
	bool lock = chain_takes_loader_lock(t);

	b->path = (top - n) & ~15ULL;
	fx = (b->path - b->xstate.iov_len - sizeof(uint32_t)) & ~63ULL;
	fill_ucontext(&c[TO_THREAD], b, fx);
	for (int i = 0; i < TO_THREAD; i++)
		c[i] = c[TO_THREAD];
	for (int i = CHAIN - 1; i >= 0; i--) {
		uc = ((i == CHAIN - 1 ? fx : b->slot[i + 1]) - sizeof(c[i])) & ~15ULL;
		b->slot[i] = uc - 8;
		if (i == TO_RESTORE_STATE)
			b->old_state_at = uc + offsetof(ucontext_t,
						       uc_mcontext.gregs[REG_RDI]);
	}
	set_call(&c[TO_RESTORE_STATE], t->setcancelstate, PTHREAD_CANCEL_DISABLE,
		 0, b->slot[TO_THREAD]);
	set_call(&c[TO_UNLOCK], t->mutex_unlock, t->load_lock, 0,
		 b->slot[TO_RESTORE_STATE]);
	if (t->wake)
		set_call(&c[TO_DLOPEN], t->wake, 0, 0, b->slot[TO_RESTORE_STATE]);
	else
		set_call(&c[TO_DLOPEN], t->dlopen, b->path, RTLD_NOW_FLAG,
			 b->slot[lock ? TO_UNLOCK : TO_RESTORE_STATE]);
	set_call(&c[TO_TRYLOCK], t->mutex_trylock, t->load_lock, 0,
		 b->slot[TO_DLOPEN]);
	if (chain_put(b, b->path, t->lib, n) < 0 || put_fpstate(b, fx) < 0)
		return -1;
	for (int i = chain_first_step(t); i < CHAIN; i++)
		if (chain_put(b, b->slot[i] + 8, &c[i], sizeof(c[i])) < 0 ||
		    chain_put(b, b->slot[i], &t->restore_rt, sizeof(t->restore_rt)) < 0)
			return -1;
	return 0;
}
