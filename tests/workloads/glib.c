/*
 * glib's locks, the real library's (libglib-2.0.so.0, linked without its
 * headers: the workload declares what it calls), for the built-in glib
 * wrappers (test_glib). Built without the library it exits 77.
 *   rw_writer, rw_reader   g_rw_lock_writer_lock / _reader_lock (pthread's
 *                          rwlock inside), COUNT times each, one thread
 *   gm_a, gm_b, gm_c       g_mutex_lock (a futex lock with a slow path it
 *                          jumps to) in three threads that contend
 *   wl_glib RESULT         RESULT gets "CALLER COUNT" for the rwlock callers
 */
#include <pthread.h>
#include <stdio.h>

#ifdef HAVE_GLIB

#define COUNT 5000
#define GM_COUNT 100000

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
	void __attribute__((noinline)) name(void);                       \
	void __attribute__((noinline)) name(void)                        \
	{                                                                \
		for (long i = 0; i < GM_COUNT; i++) {                    \
			g_mutex_lock(&gm);                               \
			for (int k = 0; k < 100; k++)                    \
				sink++;                                  \
			g_mutex_unlock(&gm);                             \
		}                                                        \
	}

GM_CALLER(gm_a)
GM_CALLER(gm_b)
GM_CALLER(gm_c)

static void *run(void *fn)
{
	((void (*)(void))fn)();
	return NULL;
}

int main(int argc, char **argv)
{
	void (*gm_callers[])(void) = { gm_a, gm_b, gm_c };
	pthread_t t[3];
	FILE *out;

	if (argc != 2)
		return 2;
	rw_writer();
	rw_reader();
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, run, (void *)gm_callers[i]);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	out = fopen(argv[1], "w");
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
