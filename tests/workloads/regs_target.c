/*
 * A thread that keeps known values in its registers across a system call,
 * for the injection tests: it fills rbx, rdx, rsi, rdi, r8-r10, r12-r15
 * and ymm0-ymm15 with patterns, sleeps 2 ms in a raw nanosleep (the only
 * one in the process: glibc's sleeps use clock_nanosleep), and compares.
 * errno is set before and checked after. A system call changes none of
 * them, so neither may a borrowing of the thread. Prints "probes N" every
 * 100 probes and "bad PROBE gpr=N vec=N errno=N" for a probe that found
 * changes; on SIGTERM "done probes=N bad=N" and exits 0.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NGPR 11
#define NVEC 16
#define SAFETY_EXIT_S 120
#define ERRNO_MARK 4242

static uint64_t gpr_in[NGPR], gpr_out[NGPR];
static uint8_t vec_in[NVEC][32], vec_out[NVEC][32];
static const struct timespec nap = { 0, 2000000 };
static volatile sig_atomic_t stop;

#define LOADV(i) "vmovdqu " #i "*32+%[vi], %%ymm" #i "\n\t"
#define SAVEV(i) "vmovdqu %%ymm" #i ", " #i "*32+%[vo]\n\t"

/* Patterns in, nanosleep (35), registers out. */
static void probe(void)
{
	__asm__ volatile(
		LOADV(0) LOADV(1) LOADV(2) LOADV(3) LOADV(4) LOADV(5)
		LOADV(6) LOADV(7) LOADV(8) LOADV(9) LOADV(10) LOADV(11)
		LOADV(12) LOADV(13) LOADV(14) LOADV(15)
		"mov 0+%[gi], %%rbx\n\t"
		"mov 8+%[gi], %%r12\n\t"
		"mov 16+%[gi], %%r13\n\t"
		"mov 24+%[gi], %%r14\n\t"
		"mov 32+%[gi], %%r15\n\t"
		"mov 40+%[gi], %%rdx\n\t"
		"mov 48+%[gi], %%r8\n\t"
		"mov 56+%[gi], %%r9\n\t"
		"mov 64+%[gi], %%r10\n\t"
		"lea %[ts], %%rdi\n\t"
		"xor %%esi, %%esi\n\t"
		"mov $35, %%eax\n\t"
		"syscall\n\t"
		SAVEV(0) SAVEV(1) SAVEV(2) SAVEV(3) SAVEV(4) SAVEV(5)
		SAVEV(6) SAVEV(7) SAVEV(8) SAVEV(9) SAVEV(10) SAVEV(11)
		SAVEV(12) SAVEV(13) SAVEV(14) SAVEV(15)
		"mov %%rbx, 0+%[go]\n\t"
		"mov %%r12, 8+%[go]\n\t"
		"mov %%r13, 16+%[go]\n\t"
		"mov %%r14, 24+%[go]\n\t"
		"mov %%r15, 32+%[go]\n\t"
		"mov %%rdx, 40+%[go]\n\t"
		"mov %%r8, 48+%[go]\n\t"
		"mov %%r9, 56+%[go]\n\t"
		"mov %%r10, 64+%[go]\n\t"
		"mov %%rdi, 72+%[go]\n\t"
		"mov %%rsi, 80+%[go]\n\t"
		"vzeroupper\n\t"
		: [vo] "=m"(vec_out), [go] "=m"(gpr_out)
		: [vi] "m"(vec_in), [gi] "m"(gpr_in), [ts] "m"(nap)
		: "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10",
		  "r11", "r12", "r13", "r14", "r15", "xmm0", "xmm1", "xmm2",
		  "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
		  "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",
		  "memory");
}

/* Distinct values everywhere; rdi and rsi hold nanosleep's arguments. */
static void fill_patterns(void)
{
	for (int i = 0; i < NGPR; i++)
		gpr_in[i] = 0x0101010101010101ULL * (uint64_t)(i + 1) ^
			    0x8000000000000001ULL;
	gpr_in[9] = (uint64_t)(uintptr_t)&nap;
	gpr_in[10] = 0;
	for (int i = 0; i < NVEC; i++)
		for (int k = 0; k < 32; k++)
			vec_in[i][k] = (uint8_t)(i * 32 + k + 1);
}

static void *checker(void *arg)
{
	long probes = 0, bad = 0;

	(void)arg;
	while (!stop) {
		int gpr = 0, vec = 0, err;

		errno = ERRNO_MARK;
		probe();
		err = errno != ERRNO_MARK;
		for (int i = 0; i < NGPR; i++)
			gpr += gpr_in[i] != gpr_out[i];
		for (int i = 0; i < NVEC; i++)
			vec += memcmp(vec_in[i], vec_out[i], 32) != 0;
		if (gpr || vec || err) {
			bad++;
			printf("bad %ld gpr=%d vec=%d errno=%d\n", probes, gpr,
			       vec, err);
		}
		if (++probes % 100 == 0)
			printf("probes %ld\n", probes);
	}
	printf("done probes=%ld bad=%ld\n", probes, bad);
	return NULL;
}

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_term };
	time_t start = time(NULL);
	pthread_t th;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!__builtin_cpu_supports("avx")) {
		printf("no AVX\n");
		return 0;
	}
	fill_patterns();
	sigaction(SIGTERM, &sa, NULL);
	if (pthread_create(&th, NULL, checker, NULL) != 0)
		return 2;
	printf("ready\n");
	while (!stop && time(NULL) - start < SAFETY_EXIT_S)
		pause();
	stop = 1;
	pthread_join(th, NULL);
	return 0;
}
