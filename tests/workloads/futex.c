/*
 * A futex lock as InnoDB's srw_mutex and Rust's std::sync::Mutex make one:
 * a compare-and-swap when free, syscall(SYS_futex, FUTEX_WAIT) when not,
 * and a FUTEX_WAKE on release only when someone waits. It never calls
 * pthread, so only the syscall() hook sees it.
 *
 *   wl_futex contend RESULT      a holder keeps the lock 50 ms ten times
 *                                while waiter_main waits for it; then
 *                                200,000 acquisitions of another lock
 *                                that never waits (uncontended_main)
 *   wl_futex serve               the holder and waiter rounds again and
 *                                again, "ready" first, until SIGTERM
 *   wl_futex passthrough RESULT  syscall() with other numbers and failing
 *                                futex calls: one "NAME RESULT ERRNO"
 *                                line each, the same with the collector
 *                                as without
 *   wl_futex raw                 a thread sleeps 1.5 s in a futex wait of
 *                                its own syscall instruction, which no
 *                                hook sees
 *
 * RESULT of contend gets "busy ADDR" and "quiet ADDR", the two locks.
 * Every mode ends itself after 30 s (alarm), whatever happens.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 10
#define HOLD_MS 50
#define UNCONTENDED 200000

/* 0: free; 1: held; 2: held, and someone may sleep on it (Drepper's mutex2). */
struct flock {
	atomic_int word;
};

static struct flock busy, quiet;
static atomic_int held_round, taken_round;
static volatile sig_atomic_t stopping;

static void __attribute__((noinline)) fl_lock(struct flock *l)
{
	int c = 0;

	if (atomic_compare_exchange_strong(&l->word, &c, 1))
		return;
	if (c != 2)
		c = atomic_exchange(&l->word, 2);
	while (c != 0) {
		syscall(SYS_futex, &l->word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0); /* site:fl_wait */
		c = atomic_exchange(&l->word, 2);
	}
}

static void __attribute__((noinline)) fl_unlock(struct flock *l)
{
	if (atomic_exchange(&l->word, 0) == 2)
		syscall(SYS_futex, &l->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0); /* site:fl_wake */
}

static void pause_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

/* One round: hold the lock HOLD_MS while the waiter waits for it. */
static void __attribute__((noinline)) holder_round(int round)
{
	fl_lock(&busy);
	atomic_store(&held_round, round);
	pause_us(HOLD_MS * 1000L);
	fl_unlock(&busy);
	while (atomic_load(&taken_round) != round && !stopping)
		pause_us(100);
}

/* Waits for every round's hold, then takes the lock behind it. */
static void *waiter_main(void *arg)
{
	for (int round = 1; !stopping; round++) {
		while (atomic_load(&held_round) != round && !stopping)
			pause_us(100);
		fl_lock(&busy); /* site:waiter_lock */
		fl_unlock(&busy);
		atomic_store(&taken_round, round);
		if (arg == NULL && round == ROUNDS)
			break;
	}
	return NULL;
}

static void __attribute__((noinline)) uncontended_main(void)
{
	for (int i = 0; i < UNCONTENDED; i++) {
		fl_lock(&quiet);
		fl_unlock(&quiet);
	}
}

static void on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

static int contend(const char *result)
{
	pthread_t t;
	FILE *out;

	pthread_create(&t, NULL, waiter_main, NULL);
	for (int round = 1; round <= ROUNDS; round++)
		holder_round(round);
	pthread_join(t, NULL);
	uncontended_main();
	out = fopen(result, "w");
	if (out == NULL)
		return 1;
	fprintf(out, "busy %p\nquiet %p\n", (void *)&busy.word, (void *)&quiet.word);
	return fclose(out) != 0;
}

static int serve(void)
{
	struct sigaction sa;
	pthread_t t;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	pthread_create(&t, NULL, waiter_main, &sa);
	printf("ready\n");
	fflush(stdout);
	for (int round = 1; !stopping; round++)
		holder_round(round);
	pthread_join(t, NULL);
	return 0;
}

static FILE *out;

/* One line: the call's result and errno, as the caller sees them. */
static void report(const char *name, long ret)
{
	fprintf(out, "%s %ld %d\n", name, ret, errno);
}

static void __attribute__((noinline)) probe_numbers(void)
{
	errno = 777;	/* success leaves errno alone */
	report("getpid", syscall(SYS_getpid) == getpid());
	report("gettid", syscall(SYS_gettid) == gettid());
	errno = 0;
	report("close_bad", syscall(SYS_close, -1));
	report("no_such_number", syscall(100000, 1, 2, 3, 4, 5, 6));
	report("mmap_six_args", syscall(SYS_mmap, NULL, 4096, PROT_READ,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) != -1);
}

static void __attribute__((noinline)) probe_futex_again(atomic_int *w)
{
	errno = 0;
	report("futex_again", syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, 1, NULL, NULL, 0));
}

static void __attribute__((noinline)) probe_futex_timeout(atomic_int *w)
{
	struct timespec rel = { 0, 2000000 };

	errno = 0;
	report("futex_timeout", syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, 0, &rel, NULL, 0));
}

static void __attribute__((noinline)) probe_futex_forms(atomic_int *w)
{
	struct timespec past = { 0, 0 };
	struct futex_waitv v = { .val = 0, .uaddr = (uintptr_t)w, .flags = FUTEX_32 };

	errno = 0;
	report("bitset_timeout", syscall(SYS_futex, w, FUTEX_WAIT_BITSET_PRIVATE, 0,
					 &past, NULL, FUTEX_BITSET_MATCH_ANY));
	errno = 0;
	report("waitv_timeout", syscall(SYS_futex_waitv, &v, 1, 0, &past, CLOCK_MONOTONIC));
	errno = 0;
	report("waitv_bad_vector", syscall(SYS_futex_waitv, (void *)16, 1, 0, NULL, CLOCK_MONOTONIC));
	errno = 0;
	report("futex_null", syscall(SYS_futex, NULL, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0));
	errno = 0;
	report("futex_misaligned", syscall(SYS_futex, (char *)w + 1, FUTEX_WAIT_PRIVATE, 0,
					   NULL, NULL, 0));
	errno = 0;
	report("futex_bad_op", syscall(SYS_futex, w, 99, 0, NULL, NULL, 0));
	errno = 4242;
	report("wake_nobody", syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0));
}

static int passthrough(const char *result)
{
	atomic_int word = 0;

	out = fopen(result, "w");
	if (out == NULL)
		return 1;
	probe_numbers();
	probe_futex_again(&word);
	probe_futex_timeout(&word);
	probe_futex_forms(&word);
	return fclose(out) != 0;
}

/* FUTEX_WAIT through a syscall instruction of our own, as Go's runtime does. */
static void *raw_wait(void *arg)
{
	static atomic_int word;
	struct timespec rel = { 1, 500000000 };
	register long r10 __asm__("r10") = (long)&rel;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_futex), "D"(&word), "S"((long)FUTEX_WAIT_PRIVATE),
			   "d"(0L), "r"(r10)
			 : "rcx", "r11", "memory");
	return arg;
}

static int raw(void)
{
	pthread_t t;

	pthread_create(&t, NULL, raw_wait, NULL);
	return pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
	alarm(30);
	if (argc == 3 && strcmp(argv[1], "contend") == 0)
		return contend(argv[2]);
	if (argc == 2 && strcmp(argv[1], "serve") == 0)
		return serve();
	if (argc == 3 && strcmp(argv[1], "passthrough") == 0)
		return passthrough(argv[2]);
	if (argc == 2 && strcmp(argv[1], "raw") == 0)
		return raw();
	fprintf(stderr, "usage: wl_futex contend|passthrough RESULT, or serve|raw\n");
	return 2;
}
