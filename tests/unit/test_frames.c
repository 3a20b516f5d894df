/*
 * Stack capture from prepared tables, compared with libunwind's
 * unw_backtrace() as the oracle: C chains built at -O2 without frame
 * pointers, a chain through libc, C++ in a module loaded after the first
 * sync, a second thread, deep recursion cut at max; stops that must be
 * clean (a signal frame, code without CFI, a site not found); tables of an
 * unloaded module retired, then freed only once no reader can hold them;
 * the copy inside dl_iterate_phdr when process_vm_readv is refused. The
 * cost of a capture is printed, never asserted.
 */
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <errno.h>
#include <libunwind.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../collector/arena.h"
#include "../../collector/frames.h"
#include "check.h"

#define MAXF 512

/* What one hook call saw: our frames, libunwind's, and the site among them. */
struct result {
	uint64_t ours[MAXF];
	uint32_t n;
	void *theirs[MAXF];
	int m, at;
};

static struct frames_reader reader;
static volatile int sink;

static uint64_t no_readers(void *ctx)
{
	(void)ctx;
	return UINT64_MAX;
}

/* What a lock hook does: capture from the return address into its caller. */
static __attribute__((noinline)) void hook(struct result *res, uint32_t max)
{
	uint64_t site = (uint64_t)(uintptr_t)__builtin_return_address(0);

	res->n = frames_capture(&reader, site, res->ours, max);
	res->m = unw_backtrace(res->theirs, MAXF);
	res->at = -1;
	for (int i = 0; i < res->m && res->at < 0; i++) {
		if ((uint64_t)(uintptr_t)res->theirs[i] == site)
			res->at = i;
	}
	sink++;
}

static void show(const char *who, const void *const *f, int n)
{
	for (int i = 0; i < n; i++) {
		Dl_info d;
		const char *name = dladdr(f[i], &d) && d.dli_sname ? d.dli_sname : "?";

		fprintf(stderr, "  %s #%d %p %s\n", who, i, f[i], name);
	}
}

/* Whether ours is libunwind's stack from the site on: all of it, or a prefix. */
static int matches(const struct result *r, int whole)
{
	int ok = r->at >= 0 && r->n > 0 && (int)r->n <= r->m - r->at;

	for (uint32_t i = 0; ok && i < r->n; i++)
		ok = r->ours[i] == (uint64_t)(uintptr_t)r->theirs[r->at + i];
	if (ok && whole)
		ok = (int)r->n == r->m - r->at;
	if (!ok) {
		fprintf(stderr, "  site at %d of libunwind's %d, we have %u\n",
			r->at, r->m, r->n);
		show("ours  ", (const void *const *)r->ours, (int)r->n);
		show("theirs", (const void *const *)r->theirs, r->m);
	}
	return ok;
}

/* Call chains of differently shaped frames, at -O2 without frame pointers. */
static __attribute__((noinline)) void chain(int depth, struct result *res, uint32_t max)
{
	if (depth <= 0)
		hook(res, max);
	else
		chain(depth - 1, res, max);
	sink++;
}

static __attribute__((noinline)) void with_alloca(int n, struct result *res)
{
	volatile char *buf = __builtin_alloca((size_t)n);	/* CFA from rbp */

	buf[0] = 1;
	chain(2, res, MAXF);
	sink += buf[0];
}

static __attribute__((noinline)) void with_aligned(struct result *res)
{
	volatile char buf[256] __attribute__((aligned(64)));	/* realigned */

	buf[0] = 1;
	with_alloca(100, res);
	sink += buf[0];
}

static __attribute__((noinline)) void with_big_frame(struct result *res)
{
	volatile char buf[100000];	/* CFA offset past 64 KiB */

	buf[0] = 1;
	buf[99999] = 2;
	with_aligned(res);
	sink += buf[0] + buf[99999];
}

static void test_c_chains(void)
{
	static struct result r;

	chain(5, &r, MAXF);
	CHECK(matches(&r, 1), "a C chain at -O2: libunwind's stack, to _start");
	CHECK(r.n >= 9, "the chain is all there: %u frames", r.n);
	with_big_frame(&r);
	CHECK(matches(&r, 1), "alloca (rbp CFA), a realigned frame, a 100 KB frame");
}

static void test_truncated(void)
{
	static struct result r;

	chain(100, &r, 32);
	CHECK(r.n == 32, "deep recursion stops at max: %u frames", r.n);
	CHECK(matches(&r, 0), "and they are libunwind's first 32");
	chain(100, &r, MAXF);
	CHECK(matches(&r, 1) && r.n > 100, "without max: all %u of them", r.n);
	chain(3, &r, 1);
	CHECK(r.n == 1 && r.ours[0] == (uint64_t)(uintptr_t)r.theirs[r.at],
	      "max 1: only the site");
}

/* frames_capture from depth levels below the frame whose return address is site. */
static __attribute__((noinline)) uint32_t capture_below(int depth, uint64_t site)
{
	uint64_t f[8];
	uint32_t n;

	if (depth > 0)
		n = capture_below(depth - 1, site);
	else
		n = frames_capture(&reader, site, f, 8);
	sink++;
	return n;
}

static __attribute__((noinline)) void site_window(uint32_t *near, uint32_t *far)
{
	uint64_t site = (uint64_t)(uintptr_t)__builtin_return_address(0);

	*near = capture_below(6, site);
	*far = capture_below(12, site);
	sink++;
}

static void test_site(void)
{
	uint64_t f[8];
	uint32_t near, far;

	CHECK(frames_capture(&reader, 0x1234, f, 8) == 0, "a site not on the stack: 0");
	CHECK(reader.epoch == 0, "the reader is out of its capture");
	site_window(&near, &far);
	CHECK(near > 0, "a site 7 frames up is found");
	CHECK(far == 0, "a site 13 frames up is not looked for");
	CHECK(frames_capture(&reader, (uint64_t)(uintptr_t)__builtin_return_address(0), f, 0) == 0,
	      "max 0: nothing");
	reader.epoch = 1;	/* as if this interrupted a capture of the same thread */
	site_window(&near, &far);
	CHECK(near > 0 && reader.epoch == 1, "a nested capture leaves the outer one's epoch");
	reader.epoch = 0;
}

/* A chain through libc: captured inside qsort's comparator. */
static struct result *sorting;

static int compare(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	if (sorting != NULL) {
		hook(sorting, MAXF);
		sorting = NULL;
	}
	return (x > y) - (x < y);
}

static void test_libc(void)
{
	static struct result r;
	int v[64];

	for (int i = 0; i < 64; i++)
		v[i] = (i * 37) % 64;
	sorting = &r;
	qsort(v, 64, sizeof(v[0]), compare);
	CHECK(matches(&r, 1), "through qsort in libc, to _start");
	CHECK(r.n >= 5, "with qsort's frames: %u", r.n);
}

static void *thread_main(void *arg)
{
	chain(3, arg, MAXF);
	return NULL;
}

static void test_thread(void)
{
	static struct result r;
	pthread_t t;

	pthread_create(&t, NULL, thread_main, &r);
	pthread_join(t, NULL);
	CHECK(matches(&r, 1), "a second thread: libunwind's stack, to clone3");
}

static struct result *in_handler;

static void on_signal(int sig)
{
	(void)sig;
	hook(in_handler, MAXF);
	sink++;		/* not a tail call: the handler keeps its frame */
}

static void test_signal(void)
{
	static struct result r;
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGUSR1, &sa, &old);
	in_handler = &r;
	raise(SIGUSR1);
	sigaction(SIGUSR1, &old, NULL);
	CHECK(matches(&r, 0), "in a signal handler: a prefix of libunwind's stack");
	CHECK(r.n >= 2 && (int)r.n < r.m - r.at,
	      "that stops at the signal frame (%u of %d frames)", r.n, r.m - r.at);
}

/* Code in an anonymous mapping, without CFI, calls a C function that hooks. */
static uint64_t anon_frames[8];
static uint32_t anon_n;

static __attribute__((noinline)) void anon_hook(void)
{
	uint64_t site = (uint64_t)(uintptr_t)__builtin_return_address(0);

	anon_n = frames_capture(&reader, site, anon_frames, 8);
	sink++;
}

static __attribute__((noinline)) void called_from_anon(void)
{
	anon_hook();
	sink++;
}

static void test_anon_code(void)
{
	/* sub $8,%rsp; call *%rdi; add $8,%rsp; ret */
	static const uint8_t code[] = { 0x48, 0x83, 0xec, 0x08, 0xff, 0xd7,
					0x48, 0x83, 0xc4, 0x08, 0xc3 };
	uint8_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void (*run)(void (*)(void));

	if (page == MAP_FAILED) {
		CHECK(0, "a page for code: %s", strerror(errno));
		return;
	}
	memcpy(page, code, sizeof(code));
	if (mprotect(page, 4096, PROT_READ | PROT_EXEC) != 0) {
		CHECK(0, "an executable page: %s", strerror(errno));
		munmap(page, 4096);
		return;
	}
	run = (void (*)(void (*)(void)))(uintptr_t)page;
	run(called_from_anon);
	CHECK(anon_n == 2, "code without CFI: the site and the return into it, %u", anon_n);
	CHECK(anon_n == 2 && anon_frames[1] - (uint64_t)(uintptr_t)page < sizeof(code),
	      "the last frame is in the anonymous page");
	munmap(page, 4096);
}

/* The C++ module: its entry point, found after dlopen. */
static int (*mod_run)(void (*)(void *), void *);

static void hook_cb(void *arg)
{
	hook(arg, MAXF);
	sink++;
}

static void *load_mod(void)
{
	void *h = dlopen(FRAMES_MOD, RTLD_NOW | RTLD_LOCAL);

	mod_run = h ? (int (*)(void (*)(void *), void *))dlsym(h, "frames_mod_run") : NULL;
	if (mod_run == NULL)
		fprintf(stderr, "cannot load %s: %s\n", FRAMES_MOD, dlerror());
	return mod_run ? h : NULL;
}

static void test_module(void)
{
	static struct result r;
	size_t before = frames_sync(), loaded, after;
	uint64_t e0;
	void *h = load_mod();

	CHECK(h != NULL, "the C++ module loads");
	if (h == NULL)
		return;
	mod_run(hook_cb, &r);
	CHECK(matches(&r, 0) && r.n == 2,
	      "before a sync, capture stops at the module's first frame (%u)", r.n);
	loaded = frames_sync();
	CHECK(loaded > before, "the sync adds its table (%zu -> %zu bytes)", before, loaded);
	mod_run(hook_cb, &r);
	CHECK(matches(&r, 1), "then C++ frames unwind as libunwind does, to _start");
	CHECK(r.n >= 12, "all of them: %u frames", r.n);
	e0 = frames_epoch();
	dlclose(h);
	after = frames_sync();
	CHECK(after < loaded, "dlclose and sync: its table leaves the live set");
	CHECK(frames_pending() > 0, "and is retired");
	CHECK(frames_epoch() > e0, "in a new epoch");
}

/*
 * Under a cap with no room for its tables, a module loaded gets none: it
 * is counted as skipped, the unwind memory stays within half the cap, and
 * a capture stops at its first frame. Room again, the next sync builds it.
 */
static void test_cap(void)
{
	static struct result r;
	size_t live = frames_sync();
	void *h;

	arena_set_cap(2 * (arena_used() + 4096));
	h = load_mod();
	if (h == NULL)
		return;
	frames_sync();
	CHECK(frames_skipped() == 1, "past the cap: the module is skipped (%u)",
	      frames_skipped());
	CHECK(arena_used() <= arena_cap(), "memory within the cap: %zu of %zu",
	      arena_used(), arena_cap());
	mod_run(hook_cb, &r);
	CHECK(matches(&r, 0) && r.n == 2,
	      "and a capture stops at its first frame (%u)", r.n);
	arena_set_cap(0);
	CHECK(frames_sync() > live && frames_skipped() == 0,
	      "the default cap again: the next sync builds its table");
	mod_run(hook_cb, &r);
	CHECK(matches(&r, 1), "and its frames unwind");
	dlclose(h);
	frames_sync();
}

/*
 * The cap shrinks below what the tables take: the next sync keeps only
 * what fits (here nothing), and their memory is given back once no
 * capture can read it. The cap restored, they are built again.
 */
static void test_cap_shrinks(void)
{
	size_t live = frames_sync(), used;

	frames_reclaim(no_readers, NULL);
	used = arena_used();
	arena_set_cap(8192);
	frames_sync();
	frames_reclaim(no_readers, NULL);
	CHECK(frames_skipped() > 0 && arena_used() < used,
	      "a smaller cap: %u tables given up, %zu -> %zu bytes counted",
	      frames_skipped(), used, arena_used());
	arena_set_cap(0);
	CHECK(frames_sync() == live && frames_skipped() == 0,
	      "the cap restored: the tables are built again");
}

/* oldest() for readers frozen at a given epoch. */
static uint64_t frozen_at(void *ctx)
{
	return *(const uint64_t *)ctx;
}

static void test_reclaim(void)
{
	uint64_t e0, e1;
	void *h;

	frames_reclaim(no_readers, NULL);
	CHECK(frames_pending() == 0, "nothing pending when no reader is in a capture");
	e0 = frames_epoch();
	h = load_mod();
	if (h == NULL)
		return;
	frames_sync();
	dlclose(h);
	frames_sync();
	e1 = frames_epoch();
	CHECK(frames_pending() > 0, "load, sync, unload, sync: tables retired");
	frames_reclaim(frozen_at, &e0);
	CHECK(frames_pending() > 0, "a reader that entered before: nothing freed");
	frames_reclaim(frozen_at, &(uint64_t){ e1 - 1 });
	CHECK(frames_pending() > 0, "a reader that entered between the syncs: its table kept");
	frames_reclaim(frozen_at, &e1);
	CHECK(frames_pending() == 0, "readers all entered after: freed");
}

/* Captures on other threads while modules come and go and memory is freed. */
#define RACERS 2
static struct frames_reader racer_readers[RACERS];
static volatile int racing;
static unsigned long racer_bad[RACERS], racer_done[RACERS];

static __attribute__((noinline)) uint32_t race_hook(struct frames_reader *rd)
{
	uint64_t f[64];
	uint64_t site = (uint64_t)(uintptr_t)__builtin_return_address(0);
	uint32_t n = frames_capture(rd, site, f, 64);

	sink++;
	return n;
}

static void *racer(void *arg)
{
	size_t i = (size_t)(uintptr_t)arg;

	while (racing) {
		racer_bad[i] += race_hook(&racer_readers[i]) < 3;
		racer_done[i]++;
	}
	return NULL;
}

static uint64_t scan_readers(void *ctx)
{
	uint64_t o = UINT64_MAX;

	(void)ctx;
	for (int i = 0; i < RACERS; i++) {
		uint64_t e = __atomic_load_n(&racer_readers[i].epoch, __ATOMIC_ACQUIRE);

		if (e != 0 && e < o)
			o = e;
	}
	return o;
}

static void test_race(void)
{
	pthread_t t[RACERS];
	unsigned long bad = 0, done = 0;
	int rounds = 0;

	racing = 1;
	for (size_t i = 0; i < RACERS; i++)
		pthread_create(&t[i], NULL, racer, (void *)(uintptr_t)i);
	for (; rounds < 100; rounds++) {
		void *h = load_mod();

		if (h == NULL)
			break;
		frames_sync();
		frames_reclaim(scan_readers, NULL);
		dlclose(h);
		frames_sync();
		frames_reclaim(scan_readers, NULL);
	}
	racing = 0;
	for (int i = 0; i < RACERS; i++) {
		pthread_join(t[i], NULL);
		bad += racer_bad[i];
		done += racer_done[i];
	}
	frames_reclaim(scan_readers, NULL);
	CHECK(rounds == 100, "100 load/unload rounds under captures");
	CHECK(bad == 0 && done > 0, "every capture meanwhile whole: %lu of %lu short",
	      bad, done);
	CHECK(frames_pending() == 0, "all retired memory freed at the end");
}

/* Make process_vm_readv fail with EPERM, as a seccomp sandbox may. */
static int refuse_vm_readv(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
	       prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

/* In a child: tables copied inside dl_iterate_phdr still unwind C++. */
static int fallback_child(void)
{
	static struct result r;
	char byte = 0, out;
	struct iovec l = { &out, 1 }, rem = { &byte, 1 };

	if (!refuse_vm_readv())
		return 77;
	if (process_vm_readv(getpid(), &l, 1, &rem, 1, 0) >= 0 || errno != EPERM)
		return 2;
	if (load_mod() == NULL)
		return 3;
	frames_sync();
	mod_run(hook_cb, &r);
	return matches(&r, 1) ? 0 : 1;
}

static void test_fallback(void)
{
	pid_t pid = fork();
	int status = 0;

	if (pid == 0)
		_exit(fallback_child());
	waitpid(pid, &status, 0);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
		printf("note: seccomp unavailable here; the fallback copy is not tested\n");
		return;
	}
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "process_vm_readv refused: copied in the callback, C++ unwinds (status %#x)",
	      status);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

#define ROUNDS 31
#define CALLS 4000

/*
 * ns per call over alternating rounds of ours and libunwind's: the
 * median, and the least (this VM's neighbours make the median noisy).
 */
static __attribute__((noinline)) uint32_t time_here(int measure, double cost[4])
{
	uint64_t site = (uint64_t)(uintptr_t)__builtin_return_address(0);
	uint64_t f[64];
	void *b[64];
	double a[ROUNDS], u[ROUNDS];

	for (int k = 0; measure && k < ROUNDS; k++) {
		double t0 = now_ns();

		for (int i = 0; i < CALLS; i++)
			sink += (int)frames_capture(&reader, site, f, 64);
		a[k] = (now_ns() - t0) / CALLS;
		t0 = now_ns();
		for (int i = 0; i < CALLS; i++)
			sink += unw_backtrace(b, 64);
		u[k] = (now_ns() - t0) / CALLS;
	}
	if (measure) {
		qsort(a, ROUNDS, sizeof(a[0]), cmp_double);
		qsort(u, ROUNDS, sizeof(u[0]), cmp_double);
		cost[0] = a[ROUNDS / 2];
		cost[1] = a[0];
		cost[2] = u[ROUNDS / 2];
		cost[3] = u[0];
	}
	return frames_capture(&reader, site, f, 64);
}

static __attribute__((noinline)) uint32_t time_chain(int depth, int measure,
						     double cost[4])
{
	uint32_t n = depth > 0 ? time_chain(depth - 1, measure, cost)
			       : time_here(measure, cost);

	sink++;
	return n;
}

static void report_cost(void)
{
	double cost[4] = { 0 };
	uint32_t depth;
	int k = 0;

	/* The chain that makes the captured stack 13 frames deep. */
	while (k < 20 && time_chain(k, 0, cost) < 13)
		k++;
	depth = time_chain(k, 1, cost);
	printf("capture at depth %u, ns per call (median / least of %d rounds):"
	       " frames_capture %.0f / %.0f, unw_backtrace %.0f / %.0f\n",
	       depth, ROUNDS, cost[0], cost[1], cost[2], cost[3]);
}

int main(void)
{
	CHECK(frames_sync() > 0, "the first sync builds tables");
	test_site();
	test_c_chains();
	test_truncated();
	test_libc();
	test_thread();
	test_signal();
	test_anon_code();
	test_module();
	test_cap();
	test_cap_shrinks();
	test_reclaim();
	test_race();
	test_fallback();
	report_cost();
	return check_summary();
}
