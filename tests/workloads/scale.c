/*
 * Workloads the size of real servers, for the scale tests.
 *
 *   wl_scale sites   RESULT   1500 call sites x 16 locks x 8 threads, twice:
 *                             every (site, lock) pair 16 times
 *   wl_scale churn N RESULT   N short threads, 16 at a time, one lock each
 *
 * RESULT gets "acquisitions N" and "vmhwm_kb N" (the peak RSS) at the end.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OBJECTS 16
#define THREADS 8
#define ROUNDS 2

static pthread_mutex_t locks[OBJECTS];
static long acquisitions;

/* 1500 call sites: one function, one pthread_mutex_lock call each. */
#define SITE(n)                                                            \
	static void __attribute__((noinline)) site_##n(pthread_mutex_t *m) \
	{                                                                  \
		pthread_mutex_lock(m);                                     \
		pthread_mutex_unlock(m);                                   \
	}
#define TEN(n) SITE(n##0) SITE(n##1) SITE(n##2) SITE(n##3) SITE(n##4)  \
	       SITE(n##5) SITE(n##6) SITE(n##7) SITE(n##8) SITE(n##9)
#define HUNDRED(n) TEN(n##0) TEN(n##1) TEN(n##2) TEN(n##3) TEN(n##4)    \
		   TEN(n##5) TEN(n##6) TEN(n##7) TEN(n##8) TEN(n##9)
HUNDRED(10) HUNDRED(11) HUNDRED(12) HUNDRED(13) HUNDRED(14) HUNDRED(15)
HUNDRED(16) HUNDRED(17) HUNDRED(18) HUNDRED(19) HUNDRED(20) HUNDRED(21)
HUNDRED(22) HUNDRED(23) HUNDRED(24)

#undef SITE
#define SITE(n) site_##n,
static void (*const sites[])(pthread_mutex_t *) = {
	HUNDRED(10) HUNDRED(11) HUNDRED(12) HUNDRED(13) HUNDRED(14) HUNDRED(15)
	HUNDRED(16) HUNDRED(17) HUNDRED(18) HUNDRED(19) HUNDRED(20) HUNDRED(21)
	HUNDRED(22) HUNDRED(23) HUNDRED(24)
};
#define NSITES (sizeof(sites) / sizeof(sites[0]))

static void *site_worker(void *arg)
{
	for (int r = 0; r < ROUNDS; r++) {
		for (size_t s = 0; s < NSITES; s++) {
			for (int o = 0; o < OBJECTS; o++)
				sites[s](&locks[o]);
		}
	}
	__atomic_add_fetch(&acquisitions, ROUNDS * NSITES * OBJECTS,
			   __ATOMIC_RELAXED);
	return arg;
}

static void run_sites(void)
{
	pthread_t t[THREADS];

	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, site_worker, NULL);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
}

static void *churn_worker(void *arg)
{
	pthread_mutex_lock(&locks[(long)arg % OBJECTS]); /* site:churn */
	pthread_mutex_unlock(&locks[(long)arg % OBJECTS]);
	__atomic_add_fetch(&acquisitions, 1, __ATOMIC_RELAXED);
	return arg;
}

/* n short threads, 16 alive at a time. */
static void run_churn(long n)
{
	pthread_t t[16];

	for (long done = 0; done < n; done += 16) {
		int k = n - done < 16 ? (int)(n - done) : 16;

		for (int i = 0; i < k; i++)
			pthread_create(&t[i], NULL, churn_worker, (void *)(done + i));
		for (int i = 0; i < k; i++)
			pthread_join(t[i], NULL);
	}
}

/* VmHWM from /proc/self/status, in kB; -1 if unknown. */
static long peak_rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "VmHWM:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	}
	if (f)
		fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	FILE *out;

	if (argc < 3 || (strcmp(argv[1], "churn") == 0 && argc < 4)) {
		fprintf(stderr, "usage: wl_scale sites RESULT | churn N RESULT\n");
		return 2;
	}
	for (int i = 0; i < OBJECTS; i++)
		pthread_mutex_init(&locks[i], NULL);
	if (strcmp(argv[1], "sites") == 0)
		run_sites();
	else
		run_churn(atol(argv[2]));
	out = fopen(argv[argc - 1], "w");
	if (out == NULL)
		return 1;
	fprintf(out, "acquisitions %ld\nvmhwm_kb %ld\n", acquisitions, peak_rss_kb());
	fclose(out);
	return 0;
}
