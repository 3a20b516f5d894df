/*
 * glib's locks, the real library's (libglib-2.0.so.0, linked without its
 * headers: the workload declares what it calls), for the built-in glib
 * wrappers (test_glib). Built without the library it exits 77.
 *   rw_writer, rw_reader   g_rw_lock_writer_lock / _reader_lock (pthread's
 *                          rwlock inside), COUNT times each, one thread
 *   gm_a, gm_b, gm_c       g_mutex_lock (a futex lock with a slow path it
 *                          jumps to) in three threads that contend until
 *                          the file GO exists, then GM_COUNT times more
 *   wl_glib GO RESULT      RESULT gets "CALLER COUNT" for the rwlock callers
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#ifdef HAVE_GLIB

#define COUNT 5000
#define GM_COUNT 20000

/* glib's GRWLock and GMutex, zeroed as G_*_INIT does; no headers needed. */
struct grwlock { void *p; unsigned i[2]; };
union gmutex { void *p; unsigned i[2]; };

void g_rw_lock_writer_lock(struct grwlock *l);
void g_rw_lock_writer_unlock(struct grwlock *l);
void g_rw_lock_reader_lock(struct grwlock *l);
void g_rw_lock_reader_unlock(struct grwlock *l);
void g_mutex_lock(union gmutex *m);
void g_mutex_unlock(union gmutex *m);

static struct grwlock rw;
static union gmutex gm;
static volatile unsigned long sink;

void __attribute__((noinline)) rw_writer(void);
void __attribute__((noinline)) rw_writer(void)
{
	for (int i = 0; i < COUNT; i++) {
		g_rw_lock_writer_lock(&rw);
		g_rw_lock_writer_unlock(&rw);
	}
}

void __attribute__((noinline)) rw_reader(void);
void __attribute__((noinline)) rw_reader(void)
{
	for (int i = 0; i < COUNT; i++) {
		g_rw_lock_reader_lock(&rw);
		g_rw_lock_reader_unlock(&rw);
	}
}

#define GM_CALLER(name)                                                  \
	void __attribute__((noinline)) name(long n);                     \
	void __attribute__((noinline)) name(long n)                      \
	{                                                                \
		for (long i = 0; i < n; i++) {                           \
			g_mutex_lock(&gm);                               \
			for (int k = 0; k < 100; k++)                    \
				sink++;                                  \
			g_mutex_unlock(&gm);                             \
		}                                                        \
	}

GM_CALLER(gm_a)
GM_CALLER(gm_b)
GM_CALLER(gm_c)

static const char *go_path;
static volatile int go;

/* One caller of g_mutex_lock: contends until GO exists, then GM_COUNT more. */
static void *run(void *fn)
{
	void (*caller)(long) = (void (*)(long))fn;

	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE)) {
		caller(1000);
		if (access(go_path, F_OK) == 0)
			__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	}
	caller(GM_COUNT);
	return NULL;
}

int main(int argc, char **argv)
{
	void (*gm_callers[])(long) = { gm_a, gm_b, gm_c };
	pthread_t t[3];
	FILE *out;

	if (argc != 3)
		return 2;
	go_path = argv[1];
	rw_writer();
	rw_reader();
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, run, (void *)gm_callers[i]);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	out = fopen(argv[2], "w");
	if (out == NULL)
		return 1;
	fprintf(out, "rw_writer %d\nrw_reader %d\n", COUNT, COUNT);
	return fclose(out) != 0;
}

#else

int main(void)
{
	return 77;
}

#endif
