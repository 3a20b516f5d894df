/* Sampling the target's threads for waits that no hook times. */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "../common/clock.h"
#include "../common/hash.h"
#include "unseen.h"
#include "waitkind.h"
#include "xalloc.h"

#define SAMPLE_MS 1000
#define KINDS_MAX 32

/*
 * Waits for work or for another thread's end, not for a lock: a joiner
 * waits as long as the thread it joins runs, an unhooked condition
 * variable wait is a thread pool's idle worker.
 */
static const char *const idle_kinds[] = {
	"pthread_join", "pthread_timedjoin_np", "pthread_clockjoin_np",
	"thrd_join", "pthread_cond_wait",
	"pthread_cond_timedwait", "pthread_cond_clockwait", "cnd_wait",
	"cnd_timedwait",
};

/*
 * Waits a sample catches only in passing: a condition variable's signal
 * or broadcast waits on its internal lock for the few instructions
 * another signaller holds it. Counted, one sighting would name a blind
 * spot for the thread's whole life (the demo's producer showed as
 * "1 thread in pthread_cond_signal").
 */
static const char *const brief_kinds[] = {
	"pthread_cond_signal", "pthread_cond_broadcast", "cnd_signal",
	"cnd_broadcast",
};

/* Whether name is one of kinds[] (n of them). */
static bool kind_in(const char *name, const char *const *kinds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(name, kinds[i]) == 0)
			return true;
	return false;
}

/* A kind of wait and the threads seen in it. */
struct kind {
	char name[sizeof(((struct unseen_wait *)0)->kind)];
	uint32_t threads;
};

struct unseen {
	pid_t pid;
	long sampled_ms;		/* when the threads were last read */
	unsigned long next_tid;		/* the next sample starts here */
	struct waitkind *waitkind;
	struct kind kinds[KINDS_MAX];
	size_t nkinds;
	uint64_t *pairs;		/* tid << 8 | kind + 1 seen, 0 free */
	size_t npairs, pairs_cap;	/* pairs_cap: a power of two */
};

struct unseen *unseen_new(pid_t pid)
{
	struct unseen *u = xcalloc(1, sizeof *u);

	u->pid = pid;
	u->sampled_ms = -SAMPLE_MS;
	u->waitkind = waitkind_new(pid);
	return u;
}

void unseen_free(struct unseen *u)
{
	if (u == NULL)
		return;
	waitkind_free(u->waitkind);
	free(u->pairs);
	free(u);
}

bool unseen_idle_kind(const char *name)
{
	return kind_in(name, idle_kinds, sizeof(idle_kinds) / sizeof(idle_kinds[0]));
}

bool unseen_brief_kind(const char *name)
{
	return kind_in(name, brief_kinds, sizeof(brief_kinds) / sizeof(brief_kinds[0]));
}

/* Insert key into the pair set; whether it was new. */
static bool pair_insert(uint64_t *pairs, size_t cap, uint64_t key)
{
	size_t i = (size_t)hash_mix(key) & (cap - 1);

	for (; pairs[i] != 0; i = (i + 1) & (cap - 1))
		if (pairs[i] == key)
			return false;
	pairs[i] = key;
	return true;
}

static void pairs_grow(struct unseen *u)
{
	size_t cap = u->pairs_cap ? u->pairs_cap * 2 : 64;
	uint64_t *pairs = xcalloc(cap, sizeof *pairs);

	for (size_t i = 0; i < u->pairs_cap; i++)
		if (u->pairs[i])
			pair_insert(pairs, cap, u->pairs[i]);
	free(u->pairs);
	u->pairs = pairs;
	u->pairs_cap = cap;
}

/* The index of kind name, added if new; -1 when the table is full. */
static int kind_index(struct unseen *u, const char *name)
{
	for (size_t i = 0; i < u->nkinds; i++)
		if (strcmp(u->kinds[i].name, name) == 0)
			return (int)i;
	if (u->nkinds == KINDS_MAX)
		return -1;
	snprintf(u->kinds[u->nkinds].name, sizeof u->kinds[0].name, "%s", name);
	return (int)u->nkinds++;
}

/* Count thread tid in kind name, once. */
static void note(struct unseen *u, unsigned long tid, const char *name)
{
	int k = kind_index(u, name);

	if (k < 0)
		return;
	if (2 * (u->npairs + 1) > u->pairs_cap)
		pairs_grow(u);
	if (pair_insert(u->pairs, u->pairs_cap, (uint64_t)tid << 8 | (uint64_t)(k + 1))) {
		u->npairs++;
		u->kinds[k].threads++;
	}
}

/*
 * Look at thread tid: when it is blocked in a futex call that no hook
 * times, and still in that same call once its stack has been read, count
 * it under its kind.
 */
static void look_at(struct unseen *u, struct symbols *symbols,
		    unsigned long tid)
{
	char line[512], again[512], name[sizeof u->kinds[0].name];
	unsigned long long v[8];
	long nr;

	if (!waitkind_syscall(u->pid, tid, line, sizeof(line)) ||
	    sscanf(line, "%ld %llx %llx %llx %llx %llx %llx %llx %llx", &nr,
		   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 9 ||
	    (nr != SYS_futex && nr != SYS_futex_waitv))
		return;
	if (waitkind_of(u->waitkind, symbols, v[6], v[7], name, sizeof(name)) !=
	    WAITKIND_UNSEEN || unseen_brief_kind(name))
		return;
	if (waitkind_syscall(u->pid, tid, again, sizeof(again)) && strcmp(line, again) == 0)
		note(u, tid, name);
}

static int tid_compare(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

/* The process's threads, sorted, into *tids (the caller frees); how many. */
static size_t list_threads(DIR *dir, unsigned long **tids)
{
	size_t n = 0, cap = 0;
	struct dirent *d;

	*tids = NULL;
	while ((d = readdir(dir)) != NULL) {
		char *end;
		unsigned long tid = strtoul(d->d_name, &end, 10);

		if (*end != '\0' || tid == 0)
			continue;
		*tids = xgrow(*tids, &cap, n + 1, 64, sizeof **tids);
		(*tids)[n++] = tid;
	}
	qsort(*tids, n, sizeof **tids, tid_compare);
	return n;
}

/*
 * Forget the threads that are gone: the counts are of threads alive when
 * last looked at, so that a process whose threads come and go does not
 * pile up waits of threads long dead.
 */
static void forget_gone(struct unseen *u, const unsigned long *tids, size_t n)
{
	uint64_t *old = u->pairs;
	size_t cap = u->pairs_cap;

	u->pairs = cap ? xcalloc(cap, sizeof *u->pairs) : NULL;
	u->npairs = 0;
	for (size_t k = 0; k < u->nkinds; k++)
		u->kinds[k].threads = 0;
	for (size_t i = 0; i < cap; i++) {
		unsigned long tid = (unsigned long)(old[i] >> 8);

		if (old[i] == 0 || !bsearch(&tid, tids, n, sizeof *tids, tid_compare))
			continue;
		pair_insert(u->pairs, cap, old[i]);
		u->npairs++;
		u->kinds[(old[i] & 0xff) - 1].threads++;
	}
	free(old);
}

/* Look at up to UNSEEN_THREADS_PER_SAMPLE threads from next_tid on. */
static void look_at_threads(struct unseen *u, struct symbols *symbols,
			    DIR *dir)
{
	unsigned long *tids;
	size_t n = list_threads(dir, &tids), i = 0, looked = 0;

	forget_gone(u, tids, n);
	while (i < n && tids[i] < u->next_tid)
		i++;
	for (; i < n && looked < UNSEEN_THREADS_PER_SAMPLE; i++, looked++)
		look_at(u, symbols, tids[i]);
	u->next_tid = i < n ? tids[i] : 0;
	free(tids);
}

void unseen_sample(struct unseen *u, struct symbols *symbols)
{
	long now = clock_now_ms();
	char path[64];
	DIR *dir;

	if (u->pid <= 0 || now - u->sampled_ms < SAMPLE_MS)
		return;
	u->sampled_ms = now;
	if (!waitkind_maps(u->waitkind))
		return;		/* not glibc, or /proc is closed to us */
	snprintf(path, sizeof(path), "/proc/%d/task", (int)u->pid);
	dir = opendir(path);
	if (dir == NULL)
		return;
	look_at_threads(u, symbols, dir);
	closedir(dir);
}

/* Locks first, then by threads, most first; then by name. */
static int wait_compare(const void *a, const void *b)
{
	const struct unseen_wait *x = a, *y = b;

	if (x->idle != y->idle)
		return x->idle ? 1 : -1;
	if (x->threads != y->threads)
		return x->threads > y->threads ? -1 : 1;
	return strcmp(x->kind, y->kind);
}

size_t unseen_waits(const struct unseen *u, struct unseen_wait *out,
		    size_t max)
{
	struct unseen_wait all[KINDS_MAX];
	size_t n = 0;

	for (size_t i = 0; u && i < u->nkinds; i++) {
		if (u->kinds[i].threads == 0)
			continue;	/* its threads are gone */
		snprintf(all[n].kind, sizeof all[n].kind, "%s", u->kinds[i].name);
		all[n].threads = u->kinds[i].threads;
		all[n++].idle = unseen_idle_kind(u->kinds[i].name);
	}
	qsort(all, n, sizeof all[0], wait_compare);
	n = n < max ? n : max;
	memcpy(out, all, n * sizeof *out);
	return n;
}
