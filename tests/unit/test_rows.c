/*
 * The collector thread's sums, without a target: rows keyed by (site,
 * object, type) under ids that stay put and dense, threads summed into
 * one row, exited threads kept, new objects folded into their site's row
 * when memory is short; stacks interned under one global id per frame
 * list, across threads, with (row, stack, thread) totals of the waits
 * that got the lock, those that timed out, and their time.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../collector/arena.h"
#include "../../collector/hooks.h"
#include "../../collector/rows.h"
#include "../../collector/table.h"
#include "../../collector/unwind.h"
#include "check.h"
#include "table_fixture.h"

/* What table.c needs from hooks.c: libc's trylock. */
struct real_functions real;

static struct rows rs;

static struct thread_table *claim_here(void)
{
	struct thread_table *t = table_claim(real.libc_mutex_trylock);

	tls_self.table = t;
	return t;
}

/* Record waits of (site, object, type) in t: contended, timed out, their time. */
static struct entry *add_waits(struct thread_table *t, uint64_t site,
			       uint64_t object, uint32_t type, uint64_t contended,
			       uint64_t timeouts, uint64_t ns)
{
	struct obj_slot *x = fixture_acquire(t, site, object, type, contended);
	struct entry *e = x ? table_entry(t, KEY(site, type), x->object) : NULL;

	if (e)
		fixture_waits(e, contended, timeouts, ns);
	return e;
}

/* The id of (site, object, type)'s row, or UINT32_MAX. */
static uint32_t row_of(uint64_t site, uint64_t object, uint32_t type)
{
	for (uint32_t r = 0; r < rs.n; r++) {
		if (rs.v[r].site == site && rs.v[r].object == object &&
		    rs.v[r].type == type)
			return r;
	}
	return UINT32_MAX;
}

/* Whether no two rows have one key. */
static bool keys_unique(void)
{
	for (uint32_t r = 0; r < rs.n; r++) {
		if (row_of(rs.v[r].site, rs.v[r].object, rs.v[r].type) != r)
			return false;
	}
	return true;
}

/* Work a thread does and exits from: its table is retired at the next scan. */
struct work {
	uint64_t site, object;
	uint64_t acq, contended, timeouts, ns;
	struct thread_table *table;
};

static void *thread_work(void *arg)
{
	struct work *w = arg;

	w->table = claim_here();
	if (w->table == NULL)
		return NULL;
	fixture_acquire(w->table, w->site, w->object, LOCK_MUTEX, w->acq);
	if (w->contended || w->timeouts)
		add_waits(w->table, w->site, w->object, LOCK_MUTEX, w->contended,
		     w->timeouts, w->ns);
	return NULL;
}

static void run_thread(struct work *w)
{
	pthread_t th;

	pthread_create(&th, NULL, thread_work, w);
	pthread_join(th, NULL);
}

/* Ids are given in order of first sight, once per key. */
static void test_ids_dense_and_stable(void)
{
	struct thread_table *t = tls_self.table;
	uint32_t a, b, c;

	fixture_acquire(t, 0x401000, 0x1000, LOCK_MUTEX, 3);
	fixture_acquire(t, 0x401000, 0x2000, LOCK_MUTEX, 4);
	fixture_acquire(t, 0x401000, 0x1000, LOCK_SPIN, 5);
	rows_scan(&rs);
	CHECK_U64(rs.n, 3);
	a = row_of(0x401000, 0x1000, LOCK_MUTEX);
	b = row_of(0x401000, 0x2000, LOCK_MUTEX);
	c = row_of(0x401000, 0x1000, LOCK_SPIN);
	CHECK(a < 3 && b < 3 && c < 3 && a != b && a != c && b != c,
	      "three keys, three rows among ids 0-2 (%u %u %u)", a, b, c);
	CHECK_U64(rs.v[a].acq_now, 3);
	CHECK_U64(rs.v[c].acq_now, 5);
	for (uint64_t i = 1; i <= 3000; i++)
		fixture_acquire(t, 0x402000, i * 64, LOCK_MUTEX, 1);
	rows_scan(&rs);
	CHECK_U64(rs.n, 3003);
	CHECK(row_of(0x401000, 0x1000, LOCK_MUTEX) == a &&
	      row_of(0x401000, 0x2000, LOCK_MUTEX) == b &&
	      row_of(0x401000, 0x1000, LOCK_SPIN) == c,
	      "rows keep their ids while the index grows past %u", rs.index_cap);
	CHECK(keys_unique(), "each key has one row");
	CHECK_U64(rs.v[a].acq_now, 3);
	rows_scan(&rs);
	CHECK_U64(rs.n, 3003);
}

/* Threads on one key share its row; their counts add, exited or not. */
static void test_threads_sum_into_one_row(void)
{
	struct thread_table *t = tls_self.table;
	struct work w1 = { 0x403000, 0x5000, 100, 7, 2, 9000, NULL };
	struct work w2 = { 0x403000, 0x5000, 50, 3, 1, 1000, NULL };
	const struct row_waits *rw;
	uint32_t r, n_before = rs.n;

	add_waits(t, 0x403000, 0x5000, LOCK_MUTEX, 10, 0, 500);
	fixture_acquire(t, 0x403000, 0x5000, LOCK_MUTEX, 990);
	run_thread(&w1);
	run_thread(&w2);
	rows_scan(&rs);
	r = row_of(0x403000, 0x5000, LOCK_MUTEX);
	CHECK_U64(rs.n, n_before + 1);
	CHECK(r != UINT32_MAX && rs.v[r].waits != NULL, "the waits have a row");
	if (r == UINT32_MAX || rs.v[r].waits == NULL)
		return;
	rw = rs.v[r].waits;
	CHECK_U64(rs.v[r].acq_now, 1000 + 107 + 53);
	CHECK_U64(rw->now.calls.contended, 20);
	CHECK_U64(rw->now.calls.timeouts, 3);
	CHECK_U64(rw->now.calls.failed, 3);
	CHECK_U64(rw->now.calls.wait_ns, 10500);
	CHECK_U64(rw->now.hist[hist_bucket(500)], 10);
	CHECK_U64(rw->now.hist[hist_bucket(9000)], 9);
	CHECK_U64(rw->now.hist[hist_bucket(1000)], 4);
	CHECK_U64(rw->retired.calls.contended, 10);
	CHECK_U64(rw->retired.calls.timeouts, 3);
	CHECK_U64(rs.v[r].acq_retired, 160);
	CHECK(rs.v[r].changed_seq == rs.seq, "the row changed in this scan");
	rows_scan(&rs);
	CHECK_U64(rw->now.calls.contended, 20);
	CHECK_U64(rs.v[r].acq_now, 1160);
	CHECK(rs.v[r].changed_seq == rs.seq - 1,
	      "a row nothing added to keeps its scan of change");
}

/*
 * Short of memory, new objects join their site's row of several objects
 * (object 0): those the rows meet for the first time, and those the
 * thread's table itself folds. Their counts still add up, known objects
 * keep their rows, and the rows say how much was folded.
 */
static void test_fold_when_short(void)
{
	struct thread_table *t = tls_self.table;
	uint64_t slots = 0;
	uint32_t n_before, r;

	fixture_acquire(t, 0x404000, 0x100, LOCK_MUTEX, 1);
	rows_scan(&rs);
	n_before = rs.n;
	for (uint64_t i = 1; i <= 100; i++)
		slots += fixture_acquire(t, 0x404000, 0x10000 + i * 64,
					 LOCK_MUTEX, 2) != NULL;
	arena_set_cap(arena_used());
	for (uint64_t i = 101; i <= 200; i++)
		slots += fixture_acquire(t, 0x404000, 0x10000 + i * 64,
					 LOCK_MUTEX, 2) != NULL;
	fixture_acquire(t, 0x404000, 0x100, LOCK_MUTEX, 1);
	rows_scan(&rs);
	arena_set_cap(0);
	r = row_of(0x404000, 0, LOCK_MUTEX);
	CHECK(slots == 200, "every acquisition found a slot (%llu of 200)",
	      (unsigned long long)slots);
	CHECK_U64(rs.n, n_before + 1);
	CHECK(r != UINT32_MAX, "a row of several objects for the site");
	if (r != UINT32_MAX)
		CHECK_U64(rs.v[r].acq_now, 400);
	CHECK_U64(rs.v[row_of(0x404000, 0x100, LOCK_MUTEX)].acq_now, 2);
	CHECK(rs.folded >= 400, "folded events are counted (%llu)",
	      (unsigned long long)rs.folded);
	CHECK(keys_unique(), "each key has one row");
}

/* A store of one stack with given frames, used by one entry. */
static struct stack_store *store_with(struct thread_table *t,
				      const uint64_t *frames, uint32_t depth)
{
	struct stack_store *st = arena_alloc_table(sizeof(*st));

	if (st == NULL)
		return NULL;
	memcpy(st->stacks[0].frames, frames, depth * sizeof(*frames));
	st->stacks[0].depth = depth;
	st->nstacks = 1;
	t->stacks = st;
	return st;
}

/* Waits of entry e through stack index k of t's store, as a hook counts them. */
static void stack_wait(struct thread_table *t, struct entry *e, uint32_t k,
		       uint64_t contended, uint64_t timeouts, uint64_t ns)
{
	struct stack_store *st = t->stacks;
	struct stack_use *u = NULL;

	for (uint32_t i = 0; i < st->nuses; i++) {
		if (st->uses[st->use_order[i]].entry == e &&
		    st->uses[st->use_order[i]].stack == k)
			u = &st->uses[st->use_order[i]];
	}
	if (u == NULL) {
		u = &st->uses[st->nuses];
		u->entry = e;
		u->stack = k;
		st->use_order[st->nuses] = (uint16_t)st->nuses;
		st->nuses++;
	}
	table_add(&u->w.count, contended);
	table_add(&u->w.timeouts, timeouts);
	table_add(&u->w.wait_ns, ns);
}

/* The total of (row, stack, tid), or NULL. */
static const struct stack_row *stack_row(uint32_t row, uint32_t stack,
					 uint32_t tid)
{
	for (uint32_t k = 0; k < rs.stacks.n; k++) {
		const struct stack_row *sr = &rs.stacks.v[k];

		if (sr->row == row && sr->stack == stack && sr->tid == tid)
			return sr;
	}
	return NULL;
}

static const uint64_t frames_a[] = { 0x405010, 0x405500, 0x406000 };
static const uint64_t frames_b[] = { 0x405010, 0x405600, 0x406000 };

/* The stack work of a thread that exits: frames_a, then frames_b. */
static struct work stack_work = { 0x405010, 0x6000, 0, 4, 0, 4000, NULL };

static void *stack_thread(void *arg)
{
	struct work *w = arg;
	struct entry *e;

	thread_work(w);
	e = table_entry(w->table, KEY(w->site, LOCK_MUTEX), w->object);
	if (e == NULL || store_with(w->table, frames_a, 3) == NULL)
		return NULL;
	memcpy(w->table->stacks->stacks[1].frames, frames_b, sizeof(frames_b));
	w->table->stacks->stacks[1].depth = 3;
	w->table->stacks->nstacks = 2;
	stack_wait(w->table, e, 0, 3, 0, 3000);
	stack_wait(w->table, e, 1, 1, 0, 1000);
	return NULL;
}

/*
 * Equal frames in two threads' stores are one stack id; other frames
 * another. Totals are per (row, stack, thread), and an exited thread's
 * stay; waits recorded without a stack count under PROTO_NO_STACK.
 */
static void test_stacks_interned_and_totalled(void)
{
	struct thread_table *t = tls_self.table;
	struct entry *e = add_waits(t, 0x405010, 0x6000, LOCK_MUTEX, 7, 0, 7000);
	const struct stack_row *mine, *theirs, *other, *nostack;
	uint32_t tid = t->tid, r, ida = UINT32_MAX, idb = UINT32_MAX;
	pthread_t th;

	CHECK(e != NULL && store_with(t, frames_a, 3) != NULL,
	      "an entry and a stack store");
	if (e == NULL || t->stacks == NULL)
		return;
	stack_wait(t, e, 0, 5, 2, 5000);
	table_add(&e->nostack.count, 2);
	table_add(&e->nostack.timeouts, 3);
	table_add(&e->nostack.wait_ns, 2000);
	pthread_create(&th, NULL, stack_thread, &stack_work);
	pthread_join(th, NULL);
	rows_scan(&rs);
	r = row_of(0x405010, 0x6000, LOCK_MUTEX);
	for (uint32_t k = 0; k < rs.stacks.ndefs; k++) {
		const struct proto_stack *d = &rs.stacks.defs[k];

		CHECK_U64(d->id, k);
		if (d->depth == 3 && memcmp(d->frames, frames_a, 24) == 0)
			ida = k;
		if (d->depth == 3 && memcmp(d->frames, frames_b, 24) == 0)
			idb = k;
	}
	CHECK_U64(rs.stacks.ndefs, 2);
	CHECK(ida != UINT32_MAX && idb != UINT32_MAX && ida != idb,
	      "two frame lists, two stack ids (%u, %u)", ida, idb);
	mine = stack_row(r, ida, tid);
	theirs = stack_row(r, ida, stack_work.table->tid);
	other = stack_row(r, idb, stack_work.table->tid);
	nostack = stack_row(r, PROTO_NO_STACK, tid);
	CHECK(mine && theirs && other && nostack && theirs != mine,
	      "a total per (row, stack, thread)");
	if (!(mine && theirs && other && nostack))
		return;
	CHECK_U64(mine->now.count, 5);
	CHECK_U64(mine->now.timeouts, 2);
	CHECK_U64(mine->now.wait_ns, 5000);
	CHECK_U64(theirs->now.count, 3);
	CHECK_U64(theirs->now.wait_ns, 3000);
	CHECK_U64(other->now.count, 1);
	CHECK_U64(nostack->now.count, 2);
	CHECK_U64(nostack->now.timeouts, 3);
	CHECK_U64(nostack->now.wait_ns, 2000);
	CHECK_U64(rs.stacks.n, 4);
	stack_wait(t, e, 0, 1, 1, 100);
	rows_scan(&rs);
	CHECK_U64(rs.stacks.ndefs, 2);
	CHECK_U64(rs.stacks.n, 4);
	CHECK_U64(mine->now.count, 6);
	CHECK_U64(mine->now.timeouts, 3);
	CHECK(mine->changed_seq == rs.seq, "a grown total is marked changed");
	CHECK_U64(theirs->now.count, 3);
	CHECK(theirs->changed_seq == rs.seq - 1,
	      "an exited thread's total stays, unchanged");
	CHECK_U64(rs.v[r].waits->now.calls.contended, 7 + 4);
}

int main(void)
{
	real.libc_mutex_trylock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT,
								   "pthread_mutex_trylock");
	CHECK(claim_here() != NULL, "the test's thread claims a table");
	if (tls_self.table == NULL)
		return check_summary();
	test_ids_dense_and_stable();
	test_threads_sum_into_one_row();
	test_fold_when_short();
	test_stacks_interned_and_totalled();
	return check_summary();
}
