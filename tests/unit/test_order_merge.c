/*
 * Lock order in the collector, without a target: nestings noted in a
 * thread's table as the lock hooks note them, merged by the collector
 * thread into one warning per four call sites, the first order the one
 * seen first; a pair seen the other way round later is the same
 * warning; a consistent order is none; counts grow; a full table drops
 * and counts; a thread noting while the collector merges loses no
 * nesting (built under ThreadSanitizer too, which must stay silent).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "../../collector/hooks.h"
#include "../../collector/order.h"
#include "../../collector/table.h"
#include "check.h"

/* What table.c needs from hooks.c: libc's trylock. */
struct real_functions real;

static struct thread_table *t;
static struct order_set os;
static struct stacks ss;
static uint64_t seq;

#define K(site) KEY((uint64_t)(site), LOCK_MUTEX)

/* n nestings: object held, taken at site held_at, then object at site at. */
static void nest(uint64_t held, uint64_t held_at, uint64_t object,
		 uint64_t at, int n)
{
	for (int i = 0; i < n; i++)
		order_note(t, K(held_at), held, K(at), object);
}

static void scan(void)
{
	order_scan_table(&os, &ss, t, ++seq);
}

/* The warning whose first order is taken at first_site, or NULL. */
static const struct order_warning *warning_at(uint64_t first_site)
{
	for (uint32_t k = 0; k < os.nw; k++)
		if (os.w[k].m.first_site == first_site)
			return &os.w[k];
	return NULL;
}

/* a then b at 1, 2; b then a at 3, 4: one warning naming all four sites. */
static void test_reversed_pair(void)
{
	const struct order_warning *w;

	nest(0xa0, 1, 0xb0, 2, 3);
	scan();
	CHECK_U64(os.nw, 0);
	nest(0xb0, 3, 0xa0, 4, 2);
	scan();
	CHECK_U64(os.nw, 1);
	w = warning_at(1);
	CHECK(w != NULL, "the warning's first order is taken at site 1");
	if (w == NULL)
		return;
	CHECK_U64(w->m.first_object, 0xa0);
	CHECK_U64(w->m.then_object, 0xb0);
	CHECK_U64(w->m.then_site, 2);
	CHECK_U64(w->m.rev_held_site, 3);
	CHECK_U64(w->m.rev_site, 4);
	CHECK_U64(w->m.count, 5);
	CHECK_U64(w->changed_seq, seq);
}

/* Four lock pairs at the same four sites, noted in one scan: one warning. */
static void test_pairs_share_a_warning(void)
{
	uint32_t before = os.nw;

	for (uint64_t i = 0; i < 4; i++)
		nest(0x100 + i, 11, 0x200 + i, 12, 1);
	for (uint64_t i = 0; i < 4; i++)
		nest(0x200 + i, 13, 0x100 + i, 14, 1);
	scan();
	CHECK_U64(os.nw, before + 1);
	CHECK(warning_at(11) && warning_at(11)->m.count == 8,
	      "the four pairs count on one warning: expected 8, got %llu",
	      warning_at(11) ? (unsigned long long)warning_at(11)->m.count : 0);
	CHECK(warning_at(13) == NULL, "no warning starts at the reverse");
}

/*
 * c, d seen c then d first (21, 22), then d then c (23, 24); e, f seen
 * the other way round first: the same four sites, the same warning.
 */
static void test_mirror_is_the_same(void)
{
	uint32_t before = os.nw;

	nest(0xc0, 21, 0xd0, 22, 1);
	nest(0xd0, 23, 0xc0, 24, 1);
	scan();
	nest(0xf0, 23, 0xe0, 24, 1);
	nest(0xe0, 21, 0xf0, 22, 1);
	scan();
	CHECK_U64(os.nw, before + 1);
	CHECK(warning_at(21) && warning_at(21)->m.count == 4,
	      "both pairs count on the warning at 21");
}

/* g then h at two places, never the reverse: no warning. */
static void test_consistent_is_none(void)
{
	uint32_t before = os.nw;

	nest(0x300, 31, 0x400, 32, 5);
	nest(0x300, 33, 0x400, 34, 5);
	scan();
	CHECK_U64(os.nw, before);
}

/* More nestings of a warned pair: its count grows, marked changed. */
static void test_count_grows(void)
{
	const struct order_warning *w = warning_at(1);
	uint64_t count = w ? w->m.count : 0;

	nest(0xb0, 3, 0xa0, 4, 7);
	scan();
	CHECK(w && w->m.count == count + 7, "count grows by 7: expected "
	      "%llu, got %llu", (unsigned long long)count + 7,
	      w ? (unsigned long long)w->m.count : 0);
	CHECK(w && w->changed_seq == seq, "the warning is marked changed");
}

/* Past ORDER_EDGES_USED nestings, a thread's new ones are dropped, counted. */
static void test_full_table_drops(void)
{
	uint64_t dropped = table_load(&t->dropped);
	uint32_t room = ORDER_EDGES_USED - t->order->used;

	for (uint64_t i = 0; i < room + 5; i++)
		nest(0x1000 + i, 41, 0x2000 + i, 42, 1);
	CHECK_U64(t->order->used, ORDER_EDGES_USED);
	CHECK_U64(table_load(&t->dropped) - dropped, 5);
}

#ifdef __SANITIZE_THREAD__
#define ROUNDS 20000
#else
#define ROUNDS 200000
#endif

static struct thread_table *writer_table;	/* published with release */
static int writer_done;

/* Nest 0x5000 and 0x6000 both ways ROUNDS times in a table of its own. */
static void *writer(void *arg)
{
	struct thread_table *w = table_claim(real.libc_mutex_trylock);

	(void)arg;
	tls_self.table = w;
	__atomic_store_n(&writer_table, w, __ATOMIC_RELEASE);
	for (int r = 0; w && r < ROUNDS; r++) {
		order_note(w, K(51), 0x5000, K(52), 0x6000);
		order_note(w, K(53), 0x6000, K(54), 0x5000);
	}
	__atomic_store_n(&writer_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Scanned again and again while a thread notes: every nesting counted once. */
static void test_merge_while_noting(void)
{
	struct thread_table *w;
	pthread_t th;

	pthread_create(&th, NULL, writer, NULL);
	while (!__atomic_load_n(&writer_done, __ATOMIC_ACQUIRE))
		if ((w = __atomic_load_n(&writer_table, __ATOMIC_ACQUIRE)))
			order_scan_table(&os, &ss, w, ++seq);
	pthread_join(th, NULL);
	w = __atomic_load_n(&writer_table, __ATOMIC_ACQUIRE);
	CHECK(w != NULL, "the writer thread claims a table");
	if (w == NULL)
		return;
	order_scan_table(&os, &ss, w, ++seq);
	CHECK(warning_at(51) && warning_at(51)->m.count == 2 * ROUNDS,
	      "while noting: expected %d nestings counted, got %llu", 2 * ROUNDS,
	      warning_at(51) ? (unsigned long long)warning_at(51)->m.count : 0);
}

int main(void)
{
	real.libc_mutex_trylock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT,
								   "pthread_mutex_trylock");
	t = table_claim(real.libc_mutex_trylock);
	CHECK(t != NULL, "the test's thread claims a table");
	if (t == NULL)
		return check_summary();
	tls_self.table = t;
	test_reversed_pair();
	test_pairs_share_a_warning();
	test_mirror_is_the_same();
	test_consistent_is_none();
	test_count_grows();
	test_full_table_drops();
	test_merge_while_noting();
	return check_summary();
}
