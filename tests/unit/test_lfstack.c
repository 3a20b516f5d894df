/*
 * The free lists' lock-free stack, as the collector uses it for thread
 * tables: threads pop a table, initialise it with plain stores (the
 * sentinel mutex first), and push it back, while others pop. Built under
 * ThreadSanitizer, which reports a popper's read of a block's link that a
 * new owner is writing: the link must be a word no owner writes.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "../../collector/lfstack.h"
#include "../../collector/table.h"
#include "check.h"

enum { BLOCKS = 8, THREADS = 4, ROUNDS = 20000 };

static uint64_t head;
static struct thread_table *blocks[BLOCKS];
static atomic_int owner[BLOCKS];
static atomic_long shared_owner, empty_pops;

static int index_of(const struct thread_table *t)
{
	for (int i = 0; i < BLOCKS; i++)
		if (blocks[i] == t)
			return i;
	return -1;
}

/* What table_claim does to a table it took: plain stores, as libc makes. */
static void claim_like(struct thread_table *t)
{
	pthread_mutex_init(&t->sentinel, NULL);
	t->tid = 1;
	t->state = TABLE_CLAIMING;
	t->dropped = 0;
}

static void *churn(void *arg)
{
	(void)arg;
	for (int r = 0; r < ROUNDS; r++) {
		struct thread_table *t = lf_pop(&head);
		int i;

		if (t == NULL) {
			atomic_fetch_add(&empty_pops, 1);
			continue;
		}
		i = index_of(t);
		if (i < 0 || atomic_exchange(&owner[i], 1) != 0) {
			atomic_fetch_add(&shared_owner, 1);
			continue;
		}
		claim_like(t);
		atomic_store(&owner[i], 0);
		lf_push(&head, t);
	}
	return NULL;
}

static int stacked(void)
{
	int n = 0;

	while (lf_pop(&head))
		n++;
	return n;
}

int main(void)
{
	pthread_t th[THREADS];

	for (int i = 0; i < BLOCKS; i++) {
		blocks[i] = aligned_alloc(64, (sizeof(struct thread_table) + 63) & ~63ul);
		memset(blocks[i], 0, sizeof(struct thread_table));
		lf_push(&head, blocks[i]);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, churn, NULL);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	CHECK(atomic_load(&shared_owner) == 0,
	      "no table was handed to two threads at once (%ld were)",
	      atomic_load(&shared_owner));
	CHECK(stacked() == BLOCKS, "every table is back on the stack");
	for (int i = 0; i < BLOCKS; i++)
		free(blocks[i]);
	return check_summary();
}
