/* Per-thread counter tables: claiming, inserting, retiring, recycling. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collector.h"
#include "table.h"

__thread struct thread_table *tls_table;
uint32_t table_epoch;

static struct thread_table *table_head;
static uint32_t threads_seen;
static uint64_t claim_failures;
static uint64_t ignore_lo, ignore_len;
static pthread_key_t exit_key;
static int exit_key_ok;

struct thread_table *table_first(void)
{
	return __atomic_load_n(&table_head, __ATOMIC_ACQUIRE);
}

uint64_t table_claim_failures(void)
{
	return __atomic_load_n(&claim_failures, __ATOMIC_RELAXED);
}

uint32_t table_threads_seen(void)
{
	return __atomic_load_n(&threads_seen, __ATOMIC_RELAXED);
}

int table_init(void)
{
	if (pthread_key_create(&exit_key, table_release) != 0)
		return -1;
	exit_key_ok = 1;
	return 0;
}

/* Take a free table from the list, or NULL. */
static struct thread_table *reuse_free(void)
{
	for (struct thread_table *t = table_first(); t; t = t->next) {
		uint32_t free_state = TABLE_FREE;

		if (__atomic_load_n(&t->state, __ATOMIC_RELAXED) == TABLE_FREE &&
		    __atomic_compare_exchange_n(&t->state, &free_state, TABLE_LIVE,
						false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return t;
	}
	return NULL;
}

/* Map a new table and push it on the list. */
static struct thread_table *map_new(void)
{
	struct thread_table *t;

	t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (t == MAP_FAILED)
		return NULL;
	t->state = TABLE_LIVE;
	t->next = table_first();
	while (!__atomic_compare_exchange_n(&table_head, &t->next, t, true,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
	return t;
}

void table_ignore_range(uint64_t lo, uint64_t hi)
{
	ignore_lo = lo;
	ignore_len = hi > lo ? hi - lo : 0;
}

/* Whether a call site is in the collector's own libraries. */
static int ignored(uint64_t site)
{
	return site - ignore_lo < ignore_len;
}

/*
 * The first lock call of a thread lands here. It may run inside a lock
 * wrapper, so it uses nothing that takes a lock we hook, and keeps errno.
 */
struct thread_table *table_claim(uint64_t site)
{
	struct thread_table *t;
	int saved_errno = errno;

	/*
	 * libunwind locks in its thread-exit destructor, after ours released
	 * the table: that must not claim a table, nor show as a row.
	 */
	if (!collector_recording() || ignored(site)) {
		errno = saved_errno;
		return TABLE_OFF;
	}
	t = reuse_free();
	if (t == NULL)
		t = map_new();
	if (t == NULL) {
		__atomic_add_fetch(&claim_failures, 1, __ATOMIC_RELAXED);
		errno = saved_errno;
		return TABLE_OFF;
	}
	__atomic_add_fetch(&threads_seen, 1, __ATOMIC_RELAXED);
	t->tid = (uint32_t)gettid();
	if (exit_key_ok)
		pthread_setspecific(exit_key, t);
	tls_table = t;
	collector_thread_started();
	errno = saved_errno;
	return t;
}

/* Append a slot to the table's key list. */
static struct entry *publish(struct thread_table *t, uint32_t i,
			     uint64_t site, uint64_t object, uint32_t type)
{
	struct entry *e = &t->slots[i];

	e->object = object;
	e->type = type;
	__atomic_store_n(&e->site, site, __ATOMIC_RELEASE);
	t->order[t->used] = (uint16_t)i;
	__atomic_store_n(&t->used, t->used + 1, __ATOMIC_RELEASE);
	return e;
}

/*
 * A nearly full table keeps counting per call site: new keys are folded
 * into (site, object 0), the "several objects" row. Only a table full even
 * of those drops, and counts what it dropped.
 */
struct entry *table_insert(struct thread_table *t, uint64_t site,
			   uint64_t object, uint32_t type)
{
	uint32_t i;

	if (ignored(site))
		return NULL;
	if (site == 0 || t->used >= TABLE_SLOTS - 1) {
		table_add(&t->dropped, 1);
		return NULL;
	}
	if (t->used >= TABLE_FULL && object != 0)
		return table_find(site, 0, type);
	i = table_slot_hash(site, object, type);
	while (t->slots[i].site != 0)
		i = (i + 1) & (TABLE_SLOTS - 1);
	return publish(t, i, site, object, type);
}

/*
 * Thread exit (pthread key destructor). Later lock calls of this thread, from
 * other destructors, claim a fresh table, which sets the key again so that
 * glibc calls this once more.
 */
void table_release(void *table)
{
	struct thread_table *t = table;

	if (t == NULL || t != tls_table)
		return;
	tls_table = TABLE_NONE;
	__atomic_store_n(&t->state, TABLE_DEAD, __ATOMIC_RELEASE);
}

void table_recycle(struct thread_table *t)
{
	for (uint32_t i = 0; i < t->used; i++)
		memset(&t->slots[t->order[i]], 0, sizeof(struct entry));
	for (uint32_t i = 0; i < t->nuses; i++)
		memset(&t->uses[t->use_order[i]], 0, sizeof(struct stack_use));
	for (uint32_t i = 0; i < TABLE_STACKS; i++) {
		if (t->stacks[i].depth)
			memset(&t->stacks[i], 0, sizeof(struct thread_stack));
	}
	memset(t->stack_gid, 0, sizeof(t->stack_gid));
	t->used = 0;
	t->nstacks = 0;
	t->nuses = 0;
	t->unwinds = 0;
	t->unwind_credit_ns = 0;
	t->dropped = 0;
	__atomic_store_n(&t->state, TABLE_FREE, __ATOMIC_RELEASE);
}

/*
 * In a forked child only the forking thread exists and the parent's counts
 * are not the child's. The old tables are abandoned, not touched: zeroing
 * them would copy every page the parent shares with the child.
 */
void table_forget_all(void)
{
	table_head = NULL;
	threads_seen = 0;
	tls_table = TABLE_NONE;
}
