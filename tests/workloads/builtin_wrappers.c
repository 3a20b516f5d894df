/*
 * Lock wrappers named as InnoDB's, Rust's std, absl's, PostgreSQL's,
 * Varnish's, RocksDB's, APR's and glib's are, so that
 * qsptop's built-in wrapper patterns (and nothing given on its command
 * line) must match them: each is a function of exactly such a symbol
 * (mangled, as the compilers of those projects write it) that takes a
 * pthread mutex, and each is called from one function of ours, via_N,
 * COUNT times. Then it writes one line per wrapper to EXPECT_FILE:
 *   CALLER COUNT SYMBOL
 *   wl_builtin_wrappers EXPECT_FILE
 */
#include <pthread.h>
#include <stdio.h>

#define COUNT 1000

/* One wrapper: a function named symbol that locks m and returns. */
#define WRAPPER(n, symbol)                                                 \
	void __attribute__((noinline)) wrapper_##n(pthread_mutex_t *m)     \
		__asm__(symbol);                                           \
	void __attribute__((noinline)) wrapper_##n(pthread_mutex_t *m)     \
	{                                                                  \
		pthread_mutex_lock(m);                                     \
		__asm__ volatile("" ::: "memory");                         \
	}                                                                  \
	static pthread_mutex_t lock_##n = PTHREAD_MUTEX_INITIALIZER;      \
	static void __attribute__((noinline)) via_##n(void)                \
	{                                                                  \
		for (int i = 0; i < COUNT; i++) {                          \
			wrapper_##n(&lock_##n);                            \
			pthread_mutex_unlock(&lock_##n);                   \
		}                                                          \
	}

#define WRAPPERS(X)                                                        \
	/* InnoDB's lock templates. */                                     \
	X(1, "_ZN14srw_mutex_implILb1EE7wr_lockEv")                        \
	X(2, "_ZN14ssux_lock_implILb0EE7rd_lockEv")                        \
	X(3, "_ZN13srw_lock_implILb0EE7wr_lockEv")                         \
	/* Rust's std, legacy mangling (rustc's default) and v0. */        \
	X(4, "_ZN3std3sys4unix5locks11futex_mutex5Mutex14lock_contended17h0123456789abcdefE") \
	X(5, "_RNvMs_NtNtNtNtCs5V9Zx3Gv2H2_3std3sys4sync5mutex5futexNtB4_5Mutex14lock_contended") \
	X(6, "_ZN3std4sync5mutex14Mutex$LT$T$GT$4lock17h0123456789abcdefE") \
	X(7, "_ZN3std4sync6rwlock15RwLock$LT$T$GT$4read17h0123456789abcdefE") \
	X(8, "_ZN3std4sync6rwlock15RwLock$LT$T$GT$5write17h0123456789abcdefE") \
	X(9, "_ZN3std4sync7condvar7Condvar4wait17h0123456789abcdefE")      \
	/* absl's Mutex, CondVar, waiters and spin lock. */                \
	X(10, "_ZN4absl12lts_202308025Mutex4LockEv")                        \
	X(11, "_ZN4absl12lts_202308025Mutex10ReaderLockEv")                 \
	X(12, "_ZN4absl12lts_202308025Mutex10WriterLockEv")                 \
	X(13, "_ZN4absl12lts_202308025Mutex8LockSlowEv")                    \
	X(14, "_ZN4absl12lts_202308025Mutex5BlockEv")                       \
	X(15, "_ZN4absl12lts_202308027CondVar4WaitEv")                      \
	X(16, "_ZN4absl12lts_2023080224synchronization_internal11FutexWaiter4WaitEv") \
	X(17, "_ZN4absl12lts_2023080213base_internal8SpinLock8SlowLockEv")  \
	X(18, "AbslInternalPerThreadSemWait_lts_20230802")                  \
	X(19, "AbslInternalSpinLockDelay_lts_20230802")                     \
	/* PostgreSQL's LWLocks and the semaphore they sleep on. */        \
	X(20, "PGSemaphoreLock")                                           \
	X(21, "LWLockAcquire")                                             \
	X(22, "LWLockAcquireOrWait")                                       \
	X(23, "LWLockWaitForVar")                                          \
	/* Varnish's, RocksDB's, APR's and glib's. */                      \
	X(24, "Lck__Lock")                                                 \
	X(25, "Lck_CondWaitUntil")                                         \
	X(26, "_ZN7rocksdb4port5Mutex4LockEv")                              \
	X(27, "_ZN7rocksdb4port7RWMutex8ReadLockEv")                        \
	X(28, "_ZN7rocksdb4port7RWMutex9WriteLockEv")                       \
	X(29, "_ZN7rocksdb4port7CondVar4WaitEv")                            \
	X(30, "_ZN7rocksdb17InstrumentedMutex4LockEv")                      \
	X(31, "_ZN7rocksdb19InstrumentedCondVar4WaitEv")                    \
	X(32, "apr_thread_mutex_lock")                                     \
	X(33, "apr_thread_rwlock_wrlock")                                  \
	X(34, "apr_thread_cond_timedwait")                                 \
	X(35, "apr_global_mutex_lock")                                     \
	X(36, "g_mutex_lock_slowpath")                                     \
	X(37, "g_rec_mutex_lock")                                          \
	X(38, "g_rw_lock_reader_lock")                                     \
	X(39, "g_cond_wait_until")

WRAPPERS(WRAPPER)

#define CALL(n, symbol) via_##n();
#define EXPECT(n, symbol) fprintf(f, "via_%d %d %s\n", n, COUNT, symbol);

int main(int argc, char **argv)
{
	FILE *f;

	if (argc != 2)
		return 2;
	WRAPPERS(CALL)
	f = fopen(argv[1], "w");
	if (f == NULL)
		return 1;
	WRAPPERS(EXPECT)
	return fclose(f) != 0;
}
