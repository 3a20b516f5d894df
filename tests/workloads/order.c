/*
 * Lock order (issue 25): two threads nest the locks of PAIRS pairs,
 * one after the other, so the program never deadlocks.
 *
 *   reversed    the first thread takes a then b (at ab_outer, then
 *               ab_inner); the second, once the first has ended,
 *               b then a (at ba_outer, then ba_inner): one bug,
 *               however many pairs share it
 *   consistent  both threads take a then b, at the ab sites
 *   live        reversed again and again, until killed (screen tests)
 *
 *   wl_order MODE
 *
 * Each thread nests ROUNDS times. Ends itself after 60 s (alarm).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define PAIRS 4
#define ROUNDS 4000

static pthread_mutex_t a[PAIRS], b[PAIRS];
static volatile unsigned long work;

static void __attribute__((noinline)) a_then_b(int i)
{
	pthread_mutex_lock(&a[i]);	/* site:ab_outer */
	pthread_mutex_lock(&b[i]);	/* site:ab_inner */
	work++;
	pthread_mutex_unlock(&b[i]);
	pthread_mutex_unlock(&a[i]);
}

static void __attribute__((noinline)) b_then_a(int i)
{
	pthread_mutex_lock(&b[i]);	/* site:ba_outer */
	pthread_mutex_lock(&a[i]);	/* site:ba_inner */
	work++;
	pthread_mutex_unlock(&a[i]);
	pthread_mutex_unlock(&b[i]);
}

static void *forward(void *arg)
{
	(void)arg;
	for (int r = 0; r < ROUNDS; r++)
		a_then_b(r % PAIRS);
	return NULL;
}

static void *backward(void *arg)
{
	(void)arg;
	for (int r = 0; r < ROUNDS; r++)
		b_then_a(r % PAIRS);
	return NULL;
}

/* Run fn on a thread of its own and wait for it to end. */
static void on_thread(void *(*fn)(void *))
{
	pthread_t t;

	pthread_create(&t, NULL, fn, NULL);
	pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	alarm(60);
	for (int i = 0; i < PAIRS; i++) {
		pthread_mutex_init(&a[i], NULL);
		pthread_mutex_init(&b[i], NULL);
	}
	if (strcmp(mode, "reversed") == 0) {
		on_thread(forward);
		on_thread(backward);
	} else if (strcmp(mode, "consistent") == 0) {
		on_thread(forward);
		on_thread(forward);
	} else if (strcmp(mode, "live") == 0) {
		for (;;) {
			on_thread(forward);
			on_thread(backward);
			usleep(100000);
		}
	} else {
		fprintf(stderr, "usage: wl_order reversed|consistent|live\n");
		return 2;
	}
	return 0;
}
