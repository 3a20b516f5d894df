/*
 * The interposed pthread functions.
 *
 * Every lock-like call tries the lock first. When that succeeds, the only
 * work is one counter bump in the calling thread's own table: no clock, no
 * syscall, no allocation, no write another thread makes. Only a busy lock
 * pays for two clock reads and the wait bookkeeping. A spin lock that a
 * plain load shows held skips the try (spin_held_peek()).
 *
 * Semaphore waits (sem_wait and its timed forms) are lock waits too, of
 * type semaphore: sem_trywait first, as for a mutex.
 *
 * syscall() is hooked too, for the futex locks that never call pthread;
 * any other system call number goes straight through (see below).
 *
 * Preloaded, the dynamic linker binds callers to these functions by name.
 * Dlopen'ed into a running process, got.c points callers' GOT slots at
 * them instead; after a detach, callers that still arrive (function
 * pointers copied while attached, threads parked in a wait) pass through.
 */
#include <dlfcn.h>
#include <cpuid.h>
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "hooks.h"
#include "order.h"
#include "state.h"
#include "table.h"
#include "unwind.h"

#define EXPORT __attribute__((visibility("default")))
#define CALLER ((uint64_t)(uintptr_t)__builtin_return_address(0))
#define HOOK_CFA ((uint64_t)(uintptr_t)__builtin_dwarf_cfa())
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

struct real_functions real;

/* Resolve on first use when a hook runs before the library constructor. */
#define REAL(field)                                                        \
	(unlikely(real.field == NULL) ? (hooks_resolve(), real.field)     \
				      : real.field)

/*
 * Mark the calling thread as inside the collector, so that a signal
 * handler's lock calls pass straight through instead of interleaving with
 * what this call is doing to the thread's table.
 */
static inline void guard(struct thread_state *s)
{
	s->depth = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void unguard(struct thread_state *s)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	table_sync_release(s->table);
	s->depth = 0;
}

/* The first call of a thread, a nested call, or a call while off. */
static __attribute__((noinline)) struct thread_table *enter_slow(void)
{
	struct thread_state *s = &tls_self;
	struct thread_table *t;
	int saved_errno = errno;

	if (s->depth) {
		/* A signal handler's call while this thread is inside a hook. */
		if (s->table)
			__atomic_add_fetch(&s->table->nested, 1, __ATOMIC_RELAXED);
		else
			table_count_claim_drop();	/* inside its claim */
		return NULL;
	}
	if (s->never || !state_recording())
		return NULL;
	guard(s);
	t = s->table ? s->table : table_claim(real.libc_mutex_trylock);
	errno = saved_errno;
	if (t == NULL) {
		table_count_claim_drop();
		unguard(s);
		return NULL;
	}
	s->table = t;
	if (s->sample_left == 0)
		s->sample_left = 1 + t->tid % 64;	/* spread threads' first */
	return t;
}

/*
 * The calling thread's table, guarded, when this call is to be recorded;
 * NULL to pass straight through.
 */
static inline struct thread_table *enter(void)
{
	struct thread_state *s = &tls_self;

	if (unlikely(s->table == NULL || s->depth != 0 || !state_recording()))
		return enter_slow();
	guard(s);
	return s->table;
}

static inline void leave(void)
{
	unguard(&tls_self);
}

/*
 * The slot of a key; a key with no room is counted as dropped. A call from
 * inside a lock wrapper counts on its caller's key, which *key becomes;
 * cfa is the hook's own (__builtin_dwarf_cfa()), where its caller's stack
 * pointer will be again.
 */
static inline struct obj_slot *slot_for(struct thread_table *t, uint64_t *key,
					const void *obj, uint64_t cfa)
{
	struct obj_slot *x = table_slot(t, key, (uintptr_t)obj, cfa);

	if (unlikely(x == NULL))
		table_add(&t->dropped, 1);
	return x;
}

/* Count an acquisition that did not wait. */
static inline void count_free(struct obj_slot *x)
{
	if (likely(x != NULL))
		table_add(&x->acquisitions, 1);
}

/* Count a trylock that found the lock busy. */
static __attribute__((noinline, cold)) void
count_busy(struct thread_table *t, uint64_t key, struct obj_slot *x)
{
	struct entry *e;
	int saved_errno = errno;

	if (x == NULL)
		return;
	e = table_entry(t, key, x->object);
	if (e)
		table_add(&e->c.calls.failed, 1);
	else
		table_add(&t->dropped, 1);
	errno = saved_errno;
}

/* The longest wait of the collector's current epoch, for interval maxima. */
static void note_max(struct entry *e, uint64_t ns)
{
	uint32_t epoch = __atomic_load_n(&table_epoch, __ATOMIC_RELAXED);

	if (ns > e->max_wait_ns)
		table_store(&e->max_wait_ns, ns);
	if (e->max_epoch != epoch) {
		table_store(&e->epoch_max_ns, ns);
		__atomic_store_n(&e->max_epoch, epoch, __ATOMIC_RELAXED);
	} else if (ns > e->epoch_max_ns) {
		table_store(&e->epoch_max_ns, ns);
	}
}

/* Holders one wait is split between, at most (later ones join the last). */
#define BLAME_SEGS 4

/* A blocking call in progress: where it will be counted, and since when. */
struct wait {
	struct thread_table *table;
	uint64_t key;
	uint64_t object;	/* as its slot holds it (folded or not) */
	struct entry *entry;	/* NULL: nothing is recorded */
	struct stack_use *use;
	uint64_t t0;
	uint32_t nseg;		/* holders it was spent behind, see blame_begin() */
	struct blame_seg {
		uint64_t holder;	/* the holder's row key; 0: unknown */
		uint64_t t0;		/* since when */
	} seg[BLAME_SEGS];
	uint64_t lock;		/* the lock's address (blame_begin()) */
	uint32_t nco;		/* readers sharing the first segment's hold */
	uint64_t co[BLAME_SEGS - 1];	/* their row keys, beside seg[0]'s */
	bool published;		/* in the table's waiting (wait_publish()) */
};

/*
 * Hold times. An unlock hook is cheap only when it has nothing to do, so
 * holds are timed on a sample of acquisitions: a per-thread countdown
 * (no shared write) picks about one in HOLD_SAMPLE_MEAN, at a random
 * period so that a loop over a few locks does not always pick the same.
 * A picked acquisition reads the clock and notes the lock in the
 * thread's held[]; the unlock hook, which otherwise only tests that
 * held[] is empty, adds the hold's time. holds_timed counts them: the
 * average of the timed holds times the acquisitions estimates the time
 * held (lock_calls_hold_est_ns()). Mutexes, rwlocks taken to write and
 * spinlocks, whose unlocks are hooked while holders are tracked; not
 * readers, who share the lock.
 */
#define HOLD_SAMPLE_MEAN 64

/* The next sampling period, 1/2 to 3/2 of the mean (xorshift). */
static uint32_t sample_period(struct thread_state *s)
{
	uint32_t x = s->sample_seed ? s->sample_seed : 0x9e3779b9u ^ (uint32_t)(uintptr_t)s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	s->sample_seed = x;
	return HOLD_SAMPLE_MEAN / 2 + x % HOLD_SAMPLE_MEAN;
}

/* Note that this thread took lock at key: where a waiter finds its holder. */
static inline void note_recent(struct thread_table *t, uint64_t key,
			       const void *lock)
{
	struct held_recent *r = &t->recent[recent_slot(lock)];

	__atomic_store_n(&r->object, (uint64_t)(uintptr_t)lock, __ATOMIC_RELAXED);
	__atomic_store_n(&r->key, key, __ATOMIC_RELAXED);
}

/* Start timing the hold of lock, taken at key (slot x), inside the collector. */
static __attribute__((noinline, cold)) void
hold_begin(struct thread_table *t, uint64_t key, struct obj_slot *x,
	   const void *lock)
{
	struct thread_state *s = &tls_self;
	int saved_errno = errno;
	struct hold_slot *h;

	s->sample_left = sample_period(s);
	if (x == NULL || (h = table_hold_slot(t, key, x->object)) == NULL) {
		errno = saved_errno;
		return;
	}
	/* Full: a hold never released here (another thread unlocked it) goes. */
	if (s->nheld == HELD_TIMED_MAX)
		s->held[0] = s->held[--s->nheld];
	s->held[s->nheld++] = (struct held_timed){
		.object = (uint64_t)(uintptr_t)lock, .slot = h,
		.t0 = clock_now_ns() };
	errno = saved_errno;
}

/* Count one acquisition towards the next timed hold. */
static inline void hold_countdown(struct thread_table *t, uint64_t key,
				  struct obj_slot *x, const void *lock)
{
	struct thread_state *s = &tls_self;

	if (unlikely(--s->sample_left == 0))
		hold_begin(t, key, x, lock);
}

/* What a hook learns of holders (see blame_begin()). */
enum holds {
	HOLDS_NONE,
	HOLDS_MUTEX,	/* notes its holder, times a sample, blames the owner */
	HOLDS_WRITER,	/* an rwlock writer: notes, times, blames the writer */
	HOLDS_READER,	/* an rwlock reader: notes, blames the writer */
	HOLDS_SPIN,	/* a spinlock: notes, times, blames the thread noted */
};

/*
 * Whether a mutex this thread just took was already its own: a recursive
 * mutex's count, 0 for the other kinds, is above 1 when taken again.
 */
static inline bool mutex_relocked(const void *lock)
{
	const pthread_mutex_t *m = lock;

	return __atomic_load_n(&m->__data.__count, __ATOMIC_RELAXED) > 1;
}

/*
 * This thread takes lock at key while it times holds (held[] not empty):
 * note each held lock -> lock nesting (order.h). Stale holds, and lock
 * itself (a recursive mutex), are no nesting.
 */
static __attribute__((noinline, cold)) void
order_after_held(struct thread_table *t, uint64_t key, const void *lock)
{
	struct thread_state *s = &tls_self;
	int saved_errno = errno;

	for (unsigned i = 0; i < s->nheld; i++) {
		const struct held_timed *h = &s->held[i];

		if (h->object == (uint64_t)(uintptr_t)lock ||
		    h->t0 < state_holders_since())
			continue;
		order_note(t, h->slot->key, h->object, key,
			   (uint64_t)(uintptr_t)lock);
	}
	errno = saved_errno;
}

/* A blocking acquisition, holders tracked: note what it nests in. */
static inline void order_check(struct thread_table *t, uint64_t key,
			       const void *lock)
{
	if (unlikely(tls_self.nheld != 0))
		order_after_held(t, key, lock);
}

/*
 * Holders tracked (state_holders()): note who holds lock, taken at key,
 * and count a mutex's acquisition towards its next timed hold. A
 * recursive mutex taken again keeps its outermost acquisition's note.
 */
static inline void held_note(struct thread_table *t, uint64_t key,
			     struct obj_slot *x, const void *lock,
			     enum holds holds)
{
	if (holds == HOLDS_MUTEX && unlikely(mutex_relocked(lock)))
		return;
	note_recent(t, key, lock);
	if (holds != HOLDS_READER)
		hold_countdown(t, key, x, lock);
}

/*
 * An rwlock or spinlock is being released (their unlock hooks, patched
 * while holders are tracked): forget this thread's note of it, so that a
 * waiter looking for its holders among the notes (holders_noted()) does
 * not find a thread that let go.
 */
static inline void forget_recent(const void *lock)
{
	struct thread_table *t = tls_self.table;
	struct held_recent *r;

	if (t == NULL)
		return;
	r = &t->recent[recent_slot(lock)];
	if (__atomic_load_n(&r->object, __ATOMIC_RELAXED) ==
	    (uint64_t)(uintptr_t)lock)
		__atomic_store_n(&r->object, 0, __ATOMIC_RELAXED);
}

/* The longest hold, and that of the collector's epoch, as note_max(). */
static void note_hold_max(struct hold_slot *s, uint64_t ns)
{
	uint32_t epoch = __atomic_load_n(&table_epoch, __ATOMIC_RELAXED);

	if (ns > s->max_ns)
		table_store(&s->max_ns, ns);
	if (s->max_epoch != epoch) {
		table_store(&s->epoch_max_ns, ns);
		__atomic_store_n(&s->max_epoch, epoch, __ATOMIC_RELAXED);
	} else if (ns > s->epoch_max_ns) {
		table_store(&s->epoch_max_ns, ns);
	}
}

/* The lock is being released: end its timed hold, if one is timed. */
static __attribute__((noinline)) void hold_end(const void *lock)
{
	struct thread_state *s = &tls_self;
	int saved_errno = errno;

	if (s->depth != 0)
		return;
	if (!state_holders()) {
		/* Tracking ended: what this thread was timing is stale. */
		s->nheld = 0;
		return;
	}
	for (unsigned i = 0; i < s->nheld; i++) {
		struct held_timed *h = &s->held[i];

		if (h->t0 < state_holders_since()) {
			/* From an earlier time holders were tracked. */
			s->held[i--] = s->held[--s->nheld];
			continue;
		}
		if (h->object != (uint64_t)(uintptr_t)lock)
			continue;
		guard(s);
		uint64_t ns = clock_now_ns() - h->t0;

		/* The count first: the collector reads the time first. */
		note_hold_max(h->slot, ns);
		table_add(&h->slot->holds, 1);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		table_add(&h->slot->hold_ns, ns);
		*h = s->held[--s->nheld];
		unguard(s);
		break;
	}
	errno = saved_errno;
}

/*
 * Who blocks whom. glibc keeps a locked mutex's owner TID in the mutex;
 * the owner's table says (held_recent) at which site it last took that
 * lock, which is the hold in progress. A waiter reads both before it
 * blocks. A thread that got a mutex after a wait notes, in the lock's
 * handover log, its site and when: a waiter that waited longer finds
 * there the holders it was behind in turn, and splits its wait between
 * them at those times. Each holder's part counts on a blame pseudo-stack
 * of the waiter's row, [PROTO_BLAME_MARK, holder key]. Reads of another
 * thread's table, or of a log, race with their writers: tables are never
 * freed and logs are fixed, so a stale read only mis-names a holder.
 */
#define OWNER_TID_MASK 0x3fffffffu
#define HANDOVER_LOGS 256	/* logs, shared by locks of the same hash */
#define HANDOVER_DEPTH 4	/* latest handovers a log keeps */

/* The latest handovers of a lock: who took it after a wait, and when. */
struct handover_log {
	uint64_t lock;
	uint32_t next;		/* where the next one goes, mod the depth */
	uint32_t unused;
	struct {
		uint64_t holder;	/* row key */
		uint64_t at;		/* clock_now_ns() */
	} h[HANDOVER_DEPTH];
};

/*
 * Written only by a thread that holds the lock (one writer at a time per
 * lock); locks that share a log may mix theirs, and only mis-name.
 */
static struct handover_log handover_logs[HANDOVER_LOGS];

static struct handover_log *handover_log_of(uint64_t lock)
{
	return &handover_logs[hash_fast(lock) % HANDOVER_LOGS];
}

/*
 * The latest FUTEX_WAKE calls on a futex word, and posts to a semaphore
 * that had waiters, made while holders are tracked: the waker's row key,
 * and when it was about to wake. Any number of threads may write one at
 * once: a race only mis-names.
 */
static struct handover_log wake_logs[HANDOVER_LOGS];

/* Note in l that key holds (or wakes) lock since at. */
static void log_note(struct handover_log *l, uint64_t lock, uint64_t key,
		     uint64_t at)
{
	uint32_t i;

	if (__atomic_load_n(&l->lock, __ATOMIC_RELAXED) != lock) {
		__atomic_store_n(&l->lock, lock, __ATOMIC_RELAXED);
		for (i = 0; i < HANDOVER_DEPTH; i++)
			__atomic_store_n(&l->h[i].at, 0, __ATOMIC_RELAXED);
	}
	i = __atomic_fetch_add(&l->next, 1, __ATOMIC_RELAXED) % HANDOVER_DEPTH;
	__atomic_store_n(&l->h[i].holder, key, __ATOMIC_RELAXED);
	__atomic_store_n(&l->h[i].at, at, __ATOMIC_RELAXED);
}

/* Note that this thread took lock at key after a wait that ended at. */
static void handover_note(uint64_t lock, uint64_t key, uint64_t at)
{
	log_note(handover_log_of(lock), lock, key, at);
}

/*
 * The row key of the first wake of the futex word noted after since (the
 * one that woke a wait begun then, most likely); 0: none noted.
 */
static uint64_t waker_of(uint64_t word, uint64_t since)
{
	struct handover_log *l = &wake_logs[hash_fast(word) % HANDOVER_LOGS];
	uint64_t best = UINT64_MAX, holder = 0;

	if (__atomic_load_n(&l->lock, __ATOMIC_RELAXED) != word)
		return 0;
	for (unsigned i = 0; i < HANDOVER_DEPTH; i++) {
		uint64_t at = __atomic_load_n(&l->h[i].at, __ATOMIC_RELAXED);

		if (at >= since && at < best) {
			best = at;
			holder = __atomic_load_n(&l->h[i].holder, __ATOMIC_RELAXED);
		}
	}
	return holder;
}

/*
 * The wait of w ended at end: the holders that took its lock after a
 * wait meanwhile start new segments, in the order they took it.
 */
static void handover_split(struct wait *w, uint64_t end)
{
	struct handover_log *l = handover_log_of(w->lock);
	uint64_t after = w->t0;

	if (__atomic_load_n(&l->lock, __ATOMIC_RELAXED) != w->lock)
		return;
	while (w->nseg < BLAME_SEGS) {
		uint64_t best = end, holder = 0;

		for (unsigned i = 0; i < HANDOVER_DEPTH; i++) {
			uint64_t at = __atomic_load_n(&l->h[i].at, __ATOMIC_RELAXED);

			if (at > after && at < best) {
				best = at;
				holder = __atomic_load_n(&l->h[i].holder,
							 __ATOMIC_RELAXED);
			}
		}
		if (best == end)
			return;
		w->seg[w->nseg++] = (struct blame_seg){ holder, best };
		after = best;
	}
}

/* The row key of the site where the thread tid holds lock; 0: unknown. */
static uint64_t holder_of(const void *lock, uint32_t tid)
{
	if (tid == 0)
		return 0;
	for (struct thread_table *t = table_first(); t; t = t->all_next) {
		const struct held_recent *r;

		if (__atomic_load_n(&t->tid, __ATOMIC_RELAXED) != tid ||
		    __atomic_load_n(&t->state, __ATOMIC_RELAXED) != TABLE_LIVE)
			continue;
		r = &t->recent[recent_slot(lock)];
		if (__atomic_load_n(&r->object, __ATOMIC_RELAXED) !=
		    (uint64_t)(uintptr_t)lock)
			return 0;
		return __atomic_load_n(&r->key, __ATOMIC_RELAXED);
	}
	return 0;
}

/* The owner TID of a locked mutex, as glibc keeps it; 0 when not known. */
static uint32_t mutex_owner(pthread_mutex_t *m)
{
	return (uint32_t)__atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) &
	       OWNER_TID_MASK;
}

/*
 * The writer TID of a write-locked rwlock, as glibc keeps it; 0 when
 * readers hold it (they cannot be told apart: "holder unknown").
 */
static uint32_t rwlock_writer(pthread_rwlock_t *l)
{
	return (uint32_t)__atomic_load_n(&l->__data.__cur_writer,
					 __ATOMIC_RELAXED) & OWNER_TID_MASK;
}

/* Before a wait blocks: its first holder, whose TID is tid. */
static void blame_begin(struct wait *w, const void *lock, uint32_t tid)
{
	w->lock = (uint64_t)(uintptr_t)lock;
	if (w->entry == NULL)
		return;
	w->seg[0] = (struct blame_seg){ holder_of(lock, tid), w->t0 };
	w->nseg = 1;
}

/*
 * The row keys, each once, of other live threads whose notes say they
 * hold lock: at most max. For the locks that keep no owner (an rwlock's
 * readers, a spinlock), whose unlock hooks forget the note.
 */
static uint32_t holders_noted(const void *lock, const struct thread_table *self,
			      uint64_t *keys, uint32_t max)
{
	uint32_t n = 0;

	for (struct thread_table *t = table_first(); t && n < max;
	     t = t->all_next) {
		const struct held_recent *r = &t->recent[recent_slot(lock)];
		uint64_t key;
		uint32_t i;

		if (t == self ||
		    __atomic_load_n(&t->state, __ATOMIC_RELAXED) != TABLE_LIVE ||
		    __atomic_load_n(&r->object, __ATOMIC_RELAXED) !=
			    (uint64_t)(uintptr_t)lock)
			continue;
		key = __atomic_load_n(&r->key, __ATOMIC_RELAXED);
		for (i = 0; i < n && keys[i] != key; i++)
			;
		if (key != 0 && i == n)
			keys[n++] = key;
	}
	return n;
}

/*
 * Before a wait on a lock with no owner word (a spinlock, an rwlock that
 * readers hold): the holders noted, the first segment shared between
 * them; none noted, the holder none (0: "holder unknown").
 */
static void blame_begin_noted(struct wait *w, const void *lock, uint64_t none)
{
	uint64_t keys[BLAME_SEGS];
	uint32_t n;

	w->lock = (uint64_t)(uintptr_t)lock;
	if (w->entry == NULL)
		return;
	n = holders_noted(lock, w->table, keys, BLAME_SEGS);
	w->seg[0] = (struct blame_seg){ n ? keys[0] : none, w->t0 };
	w->nseg = 1;
	w->nco = n ? n - 1 : 0;
	memcpy(w->co, keys + 1, w->nco * sizeof(keys[0]));
}

/*
 * An rwlock: its writer, whose TID glibc keeps; else its readers noted;
 * none noted, "readers" (a key of no site, of type rwlock-read).
 */
static void blame_begin_rwlock(struct wait *w, pthread_rwlock_t *l)
{
	uint32_t tid = rwlock_writer(l);

	if (tid != 0)
		blame_begin(w, l, tid);
	else
		blame_begin_noted(w, l, KEY(0, LOCK_RWLOCK_READ));
}

/*
 * After a futex or semaphore wait that began at w->t0: the wake (or
 * post) noted since then is what it waited for; none noted, "holder
 * unknown".
 */
static void blame_waker(struct wait *w, uint64_t word)
{
	w->lock = word;
	if (w->entry == NULL)
		return;
	w->seg[0] = (struct blame_seg){ waker_of(word, w->t0), w->t0 };
	w->nseg = 1;
}

/* Note that key is about to wake word's waiters. */
static void waker_note(uint64_t word, uint64_t key)
{
	log_note(&wake_logs[hash_fast(word) % HANDOVER_LOGS], word, key,
		 clock_now_ns());
}

/* Before a futex wake of word, holders tracked: note who wakes it, and when. */
static __attribute__((noinline)) void futex_wake_note(uint64_t word,
						      uint64_t site,
						      uint64_t cfa)
{
	int saved_errno = errno;
	struct thread_table *t = enter();
	uint64_t key = KEY(site, LOCK_FUTEX_WAKE);

	if (t == NULL)
		return;
	slot_for(t, &key, (const void *)(uintptr_t)word, cfa);
	waker_note(word, key);
	leave();
	errno = saved_errno;
}

/* One holder's part ns of the wait w, on its blame pseudo-stack. */
static void blame_add(struct wait *w, uint64_t holder, uint64_t ns,
		      int acquired)
{
	struct stack_use *u = unwind_blame_use(w->table, w->entry, holder);

	if (u == NULL)
		return;
	table_add(acquired ? &u->w.count : &u->w.timeouts, 1);
	table_add(&u->w.wait_ns, ns);
}

/* After the wait of ns: each holder's part, on its blame pseudo-stack. */
static void blame_end(struct wait *w, uint64_t ns, int acquired)
{
	uint64_t end = w->t0 + ns;

	handover_split(w, end);
	for (uint32_t i = 0; i < w->nseg; i++) {
		uint64_t from = w->seg[i].t0;
		uint64_t to = i + 1 < w->nseg ? w->seg[i + 1].t0 : end;
		uint32_t share = i == 0 ? 1 + w->nco : 1;
		uint64_t part = (to > from ? to - from : 0) / share;

		blame_add(w, w->seg[i].holder, part, acquired);
		for (uint32_t j = 0; i == 0 && j < w->nco; j++)
			blame_add(w, w->co[j], part, acquired);
	}
}

/* Whether a wait of this type ends holding a lock that notes its holder. */
static bool type_holds(uint32_t type)
{
	return type == LOCK_MUTEX || type == LOCK_RWLOCK_WRITE ||
	       type == LOCK_RWLOCK_READ || type == LOCK_SPIN;
}

/*
 * After a wait that ended with a lock of type_holds(): this thread holds
 * it now (a mutex's, a write lock's or a spinlock's hold may be timed);
 * but for a reader, which shares it, a handover.
 */
static void held_after_wait(struct wait *w, uint64_t ns)
{
	struct thread_state *s = &tls_self;

	order_check(w->table, w->key, (const void *)(uintptr_t)w->lock);
	note_recent(w->table, w->key, (const void *)(uintptr_t)w->lock);
	if (KEY_TYPE(w->key) != LOCK_RWLOCK_READ)
		handover_note(w->lock, w->key, w->t0 + ns);
	if (KEY_TYPE(w->key) != LOCK_RWLOCK_READ && --s->sample_left == 0)
		hold_begin(w->table, w->key,
			   table_slot_of(w->table, w->key, w->object),
			   (const void *)(uintptr_t)w->lock);
}

/*
 * Show the wait in progress in the thread's table (struct wait_now): a
 * few stores. A wait inside another (a signal handler's, while its
 * thread waits) leaves the outer one shown.
 */
static void wait_publish(struct wait *w, struct thread_table *t)
{
	struct wait_now *n = &t->waiting;

	w->published = __atomic_load_n(&n->t0, __ATOMIC_RELAXED) == 0;
	if (!w->published)
		return;
	__atomic_store_n(&n->key, w->key, __ATOMIC_RELAXED);
	__atomic_store_n(&n->object, w->object, __ATOMIC_RELAXED);
	__atomic_store_n(&n->holder, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&n->t0, w->t0, __ATOMIC_RELEASE);
}

/* The wait shown is waiting for the thread tid (0: unknown). */
static inline void wait_holder(struct wait *w, uint32_t tid)
{
	if (w->published)
		__atomic_store_n(&w->table->waiting.holder, tid,
				 __ATOMIC_RELAXED);
}

/* The wait shown has ended at end: first, before its counts grow. */
static inline void wait_unpublish(struct wait *w, uint64_t end)
{
	struct wait_now *n = &w->table->waiting;

	if (!w->published)
		return;
	__atomic_store_n(&n->ended_at, end, __ATOMIC_RELAXED);
	__atomic_store_n(&n->ended_t0, w->t0, __ATOMIC_RELEASE);
	__atomic_store_n(&n->t0, 0, __ATOMIC_RELEASE);
}

/*
 * Before a wait blocks, the lock's owner is tid: shown in the wait in
 * progress always, and its first holder when holders are tracked.
 */
static void wait_owner(struct wait *w, const void *lock, uint32_t tid)
{
	wait_holder(w, tid);
	if (state_holders())
		blame_begin(w, lock, tid);
}

/* The same for a spinlock, which keeps no owner: its holders' notes. */
static void wait_spin_owner(struct wait *w, const void *lock)
{
	if (state_holders())
		blame_begin_noted(w, lock, 0);
}

/* The same for an rwlock: its writer, else its readers' notes. */
static void wait_rwlock_owner(struct wait *w, pthread_rwlock_t *l)
{
	wait_holder(w, rwlock_writer(l));
	if (state_holders())
		blame_begin_rwlock(w, l);
}

/*
 * Before blocking, inside the collector: find the entry and the stack's
 * counter. The clock starts first, so the time spent unwinding is time
 * waited. For a lock, unwinding here costs this thread time it would
 * spend waiting anyway, and never lengthens the critical section of
 * whoever holds the lock. A condvar wait's caller holds its mutex here
 * (see COND_WAIT): the unwind lengthens that critical section. Leaves
 * the collector, so that the blocked thread's signal handlers record
 * their own lock calls.
 */
static __attribute__((noinline)) void
wait_begin(struct wait *w, struct thread_table *t, uint64_t key,
		       struct obj_slot *x)
{
	int saved_errno = errno;

	w->t0 = clock_now_ns();
	w->table = t;
	w->key = key;
	w->object = x ? x->object : 0;
	w->entry = x ? table_entry(t, key, w->object) : NULL;
	w->use = NULL;
	w->nseg = 0;
	w->nco = 0;
	w->lock = 0;
	w->published = false;
	if (w->entry) {
		wait_publish(w, t);
		w->use = unwind_use(t, w->entry, KEY_SITE(key));
	}
	else if (x)
		table_add(&t->dropped, 1);
	errno = saved_errno;
	leave();
}

/*
 * After the call returned rc: a clock read and a few stores. A wait that
 * ended without the lock (timeout, error) is a timeout, and failed, and
 * its time is still time the thread waited (on the stacks too, which
 * count it as a timeout). The slot is looked up again: a signal
 * handler's lock calls during the wait may have moved it.
 */
static __attribute__((noinline)) void wait_end(struct wait *w, int rc)
{
	uint64_t ns = clock_now_ns() - w->t0;
	struct entry *e = w->entry;
	int acquired = rc == 0 || rc == EOWNERDEAD;
	struct thread_state *s = &tls_self;

	if (e == NULL)
		return;
	wait_unpublish(w, w->t0 + ns);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	guard(s);
	/*
	 * The wait's time last: the collector reads it first, so a wait
	 * whose time it counts has its count and maximum counted too (or
	 * AVG would show above MAX until the next scan).
	 */
	note_max(e, ns);
	if (acquired) {
		count_free(table_slot_of(w->table, w->key, w->object));
		table_add(&e->c.calls.contended, 1);
	} else {
		table_add(&e->c.calls.timeouts, 1);
		table_add(&e->c.calls.failed, 1);
	}
	table_add(&e->c.hist[hist_bucket(ns)], 1);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	table_add(&e->c.calls.wait_ns, ns);
	if (w->use) {
		table_add(acquired ? &w->use->w.count : &w->use->w.timeouts, 1);
		table_add(&w->use->w.wait_ns, ns);
	} else {
		table_add(acquired ? &e->nostack.count : &e->nostack.timeouts, 1);
		table_add(&e->nostack.wait_ns, ns);
	}
	unwind_earn(w->table, ns);
	if (w->nseg)
		blame_end(w, ns, acquired);
	if (acquired && w->lock && state_holders() &&
	    type_holds(KEY_TYPE(w->key)))
		held_after_wait(w, ns);
	unguard(s);
}

static int spin_free_word = -1;	/* a free spin lock's word; -1: unknown */
static bool have_prefetchw;	/* the CPU has PREFETCHW */

/*
 * Ask for the lock's cache line exclusive just before the try. On a
 * contended lock the try's load would fetch the line shared and the real
 * lock call's atomic instruction fetch it again to write it: now it is
 * one transfer, as a bare lock call's atomic makes it. On a free lock the
 * line is usually here already, and a prefetch costs nothing.
 */
static inline void prefetch_lock(const void *lock)
{
	if (likely(__atomic_load_n(&have_prefetchw, __ATOMIC_RELAXED)))
		__asm__("prefetchw %0" : : "m"(*(const char *)lock));
}

/*
 * Whether a spin lock is held: its trylock succeeds only on the word a
 * free lock holds (1 in glibc's x86_64 code, 0 in its generic code, as
 * pthread_spin_init() showed), and on x86_64 it is a locked
 * compare-and-swap even when that fails: a second read-modify-write on
 * the contended line before the real lock's. Mutexes need no such peek:
 * glibc 2.36's trylock of the normal, error-checking and adaptive kinds
 * itself only loads the word when it is nonzero, and a load of ours in
 * front of it cost about 1 ns on every free lock.
 */
static inline bool spin_held_peek(pthread_spinlock_t *l)
{
	int free_word = __atomic_load_n(&spin_free_word, __ATOMIC_RELAXED);

	return free_word >= 0 &&
	       __atomic_load_n(l, __ATOMIC_RELAXED) != free_word;
}

/*
 * Every blocking hook has one shape: find the slot, try the lock, count
 * the acquisition if it was free, else time the blocking call.
 * TRY_THEN_WAIT spells it once. held_peek, nonzero when a plain load
 * shows the lock held, stands for a try that returned EBUSY. Anything but
 * busy from the try ends the call as it is: a robust mutex whose owner
 * died is acquired with EOWNERDEAD, which the caller must see unchanged.
 */
#define TRY_THEN_WAIT(held_peek, try_call, wait_call, pass_call, obj, type) \
	TRY_THEN_WAIT_HOLD(HOLDS_NONE, held_peek, try_call, wait_call,     \
			   pass_call, obj, type)

/*
 * The same, with holds: an acquisition of a mutex or a write lock notes
 * who holds the lock, a sample of a mutex's times the hold, and a wait
 * learns its holders (blame_begin()).
 */
#define TRY_THEN_WAIT_HOLD(holds, held_peek, try_call, wait_call, pass_call, \
			   obj, type)                                      \
	do {                                                               \
		struct thread_table *t_ = enter();                         \
		uint64_t key_ = KEY(CALLER, type);                         \
		struct obj_slot *x_;                                       \
		struct wait w_;                                            \
		int rc_;                                                   \
		if (t_ == NULL)                                            \
			return pass_call;                                  \
		x_ = slot_for(t_, &key_, obj, HOOK_CFA);                   \
		prefetch_lock(obj);                                        \
		rc_ = (held_peek) ? EBUSY : try_call;                      \
		if (likely(rc_ == 0)) {                                    \
			count_free(x_);                                    \
			if ((holds) != HOLDS_NONE &&                       \
			    unlikely(state_holders())) {                   \
				if ((holds) == HOLDS_MUTEX ||              \
				    (holds) == HOLDS_WRITER)               \
					order_check(t_, key_, obj);        \
				held_note(t_, key_, x_, obj, holds);       \
			}                                                  \
			leave();                                           \
			return 0;                                          \
		}                                                          \
		if (rc_ != EBUSY) {                                        \
			if (rc_ == EOWNERDEAD)                             \
				count_free(x_);                            \
			leave();                                           \
			return rc_;                                        \
		}                                                          \
		wait_begin(&w_, t_, key_, x_);                             \
		if ((holds) == HOLDS_NONE)                                 \
			;                                                  \
		else if ((holds) == HOLDS_MUTEX)                           \
			wait_owner(&w_, obj,                               \
				   mutex_owner((pthread_mutex_t *)(obj))); \
		else if ((holds) == HOLDS_SPIN)                            \
			wait_spin_owner(&w_, obj);                         \
		else                                                       \
			wait_rwlock_owner(&w_, (pthread_rwlock_t *)(obj)); \
		rc_ = wait_call;                                           \
		wait_end(&w_, rc_);                                        \
		return rc_;                                                \
	} while (0)

/* A trylock hook: count the acquisition or the busy lock. */
#define TRY_ONLY(try_call, obj, type)                                      \
	do {                                                               \
		struct thread_table *t_ = enter();                         \
		uint64_t key_ = KEY(CALLER, type);                         \
		struct obj_slot *x_;                                       \
		int rc_;                                                   \
		if (t_ == NULL)                                            \
			return try_call;                                   \
		x_ = slot_for(t_, &key_, obj, HOOK_CFA);                   \
		rc_ = try_call;                                            \
		if (rc_ == 0 || rc_ == EOWNERDEAD)                         \
			count_free(x_);                                    \
		else if (rc_ == EBUSY)                                     \
			count_busy(t_, key_, x_);                          \
		leave();                                                   \
		return rc_;                                                \
	} while (0)

/* The clocks glibc's clock-taking lock functions accept. */
static inline bool clock_ok(clockid_t clock)
{
	return clock == CLOCK_REALTIME || clock == CLOCK_MONOTONIC;
}

/*
 * Whether glibc would take these arguments: it returns EINVAL for others,
 * sometimes before trying the lock and sometimes only if it must wait.
 * Calls with such arguments pass straight through, unrecorded, so that
 * every result is exactly glibc's.
 */
static inline bool time_ok(clockid_t clock, const struct timespec *abstime)
{
	return clock_ok(clock) && abstime != NULL && abstime->tv_nsec >= 0 &&
	       abstime->tv_nsec < 1000000000L;
}

EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
	TRY_THEN_WAIT_HOLD(HOLDS_MUTEX, false, REAL(mutex_trylock)(m),
			   REAL(mutex_lock)(m), REAL(mutex_lock)(m), m,
			   LOCK_MUTEX);
}

/*
 * Holder stacks ("slow release", as Go's mutex profile charges the
 * releaser). glibc's low-level lock word reads 2 while a thread sleeps on
 * a locked mutex, or has the FUTEX_WAITERS bit of a PI or robust one
 * (whose word holds the owner's TID). An unlock that finds waiters, and
 * actually releases (not a recursive mutex's inner unlock), unwinds its
 * stack after the real unlock, so the critical section is not
 * lengthened, within the unwinding budget, and counts one release on
 * that stack of the row where this thread took the lock. A normal
 * mutex's word is 1 otherwise: the unlock pays one load of a word it
 * writes anyway and one test (mutex_maybe_waiters()); PI and robust
 * mutexes take the slow path, which looks closer (mutex_waiters()).
 */
static inline bool mutex_maybe_waiters(pthread_mutex_t *m)
{
	return (unsigned)__atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) > 1;
}

static bool mutex_waiters(pthread_mutex_t *m)
{
	int lock = __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED);

	return (lock == 2 || (lock & (int)0x80000000u)) &&
	       __atomic_load_n(&m->__data.__count, __ATOMIC_RELAXED) <= 1;
}

/* After releasing lock with waiters: its holder's stack, from site up. */
static __attribute__((noinline)) void holder_note(const void *lock,
						  uint64_t site)
{
	struct thread_table *t = enter();
	const struct held_recent *r;
	struct obj_slot *x;
	struct entry *e;
	struct stack_use *u;

	if (t == NULL)
		return;
	r = &t->recent[recent_slot(lock)];
	if (state_holders() && r->object == (uint64_t)(uintptr_t)lock &&
	    (x = table_slot_of(t, r->key, r->object)) != NULL &&
	    (e = table_entry(t, r->key, x->object)) != NULL &&
	    (u = unwind_holder_use(t, e, site)) != NULL)
		table_add(&u->w.count, 1);
	leave();
}

static __attribute__((noinline, cold)) int unlock_slow(pthread_mutex_t *m,
						       uint64_t site)
{
	bool waiters = mutex_waiters(m);
	int rc = REAL(mutex_unlock)(m), saved_errno = errno;

	if (rc == 0 && waiters)
		holder_note(m, site);
	errno = saved_errno;
	return rc;
}

/*
 * Reached only through GOT slots patched while holders are tracked (not
 * exported: preloaded, unlock goes straight to libc until then). Passes
 * straight through unless this thread is timing a hold; an unlock of a
 * lock taken before tracking began finds no hold and does nothing else.
 */
static int hook_mutex_unlock(pthread_mutex_t *m)
{
	/* A recursive mutex let go but not yet released: the hold goes on. */
	if (unlikely(tls_self.nheld != 0) && !mutex_relocked(m))
		hold_end(m);
	if (unlikely(mutex_maybe_waiters(m)))
		return unlock_slow(m, CALLER);
	return REAL(mutex_unlock)(m);
}

EXPORT int pthread_mutex_trylock(pthread_mutex_t *m)
{
	struct thread_table *t = enter();
	uint64_t key = KEY(CALLER, LOCK_MUTEX);
	struct obj_slot *x;
	int rc;

	if (t == NULL)
		return REAL(mutex_trylock)(m);
	x = slot_for(t, &key, m, HOOK_CFA);
	rc = REAL(mutex_trylock)(m);
	if (rc == 0 || rc == EOWNERDEAD) {
		count_free(x);
		if (unlikely(state_holders()))
			held_note(t, key, x, m, HOLDS_MUTEX);
	} else if (rc == EBUSY) {
		count_busy(t, key, x);
	}
	leave();
	return rc;
}

EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m,
				   const struct timespec *abstime)
{
	if (!time_ok(CLOCK_REALTIME, abstime))
		return REAL(mutex_timedlock)(m, abstime);
	TRY_THEN_WAIT_HOLD(HOLDS_MUTEX, false, REAL(mutex_trylock)(m),
			   REAL(mutex_timedlock)(m, abstime),
			   REAL(mutex_timedlock)(m, abstime), m, LOCK_MUTEX);
}

EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clock,
				   const struct timespec *abstime)
{
	if (!time_ok(clock, abstime))
		return REAL(mutex_clocklock)(m, clock, abstime);
	TRY_THEN_WAIT_HOLD(HOLDS_MUTEX, false, REAL(mutex_trylock)(m),
			   REAL(mutex_clocklock)(m, clock, abstime),
			   REAL(mutex_clocklock)(m, clock, abstime), m,
			   LOCK_MUTEX);
}

EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
	TRY_THEN_WAIT_HOLD(HOLDS_READER, false, REAL(rwlock_tryrdlock)(l),
			   REAL(rwlock_rdlock)(l), REAL(rwlock_rdlock)(l), l,
			   LOCK_RWLOCK_READ);
}

EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
	TRY_THEN_WAIT_HOLD(HOLDS_WRITER, false, REAL(rwlock_trywrlock)(l),
			   REAL(rwlock_wrlock)(l), REAL(rwlock_wrlock)(l), l,
			   LOCK_RWLOCK_WRITE);
}

EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
	TRY_ONLY(REAL(rwlock_tryrdlock)(l), l, LOCK_RWLOCK_READ);
}

EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
	TRY_ONLY(REAL(rwlock_trywrlock)(l), l, LOCK_RWLOCK_WRITE);
}

EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *l,
				      const struct timespec *abstime)
{
	if (!time_ok(CLOCK_REALTIME, abstime))
		return REAL(rwlock_timedrdlock)(l, abstime);
	TRY_THEN_WAIT_HOLD(HOLDS_READER, false, REAL(rwlock_tryrdlock)(l),
		      REAL(rwlock_timedrdlock)(l, abstime),
		      REAL(rwlock_timedrdlock)(l, abstime), l, LOCK_RWLOCK_READ);
}

EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *l,
				      const struct timespec *abstime)
{
	if (!time_ok(CLOCK_REALTIME, abstime))
		return REAL(rwlock_timedwrlock)(l, abstime);
	TRY_THEN_WAIT_HOLD(HOLDS_WRITER, false, REAL(rwlock_trywrlock)(l),
		      REAL(rwlock_timedwrlock)(l, abstime),
		      REAL(rwlock_timedwrlock)(l, abstime), l, LOCK_RWLOCK_WRITE);
}

EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t clock,
				      const struct timespec *abstime)
{
	if (!time_ok(clock, abstime))
		return REAL(rwlock_clockrdlock)(l, clock, abstime);
	TRY_THEN_WAIT_HOLD(HOLDS_READER, false, REAL(rwlock_tryrdlock)(l),
		      REAL(rwlock_clockrdlock)(l, clock, abstime),
		      REAL(rwlock_clockrdlock)(l, clock, abstime), l,
		      LOCK_RWLOCK_READ);
}

EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t clock,
				      const struct timespec *abstime)
{
	if (!time_ok(clock, abstime))
		return REAL(rwlock_clockwrlock)(l, clock, abstime);
	TRY_THEN_WAIT_HOLD(HOLDS_WRITER, false, REAL(rwlock_trywrlock)(l),
		      REAL(rwlock_clockwrlock)(l, clock, abstime),
		      REAL(rwlock_clockwrlock)(l, clock, abstime), l,
		      LOCK_RWLOCK_WRITE);
}

EXPORT int pthread_spin_lock(pthread_spinlock_t *l)
{
	TRY_THEN_WAIT_HOLD(HOLDS_SPIN, spin_held_peek(l), REAL(spin_trylock)(l),
			   REAL(spin_lock)(l), REAL(spin_lock)(l),
			   (const void *)l, LOCK_SPIN);
}

/*
 * The rwlock and spinlock unlock hooks: as hook_mutex_unlock(), reached
 * only while holders are tracked; each forgets its thread's note of the
 * lock (forget_recent()) and calls libc.
 */
static int hook_rwlock_unlock(pthread_rwlock_t *l)
{
	if (unlikely(tls_self.nheld != 0))
		hold_end(l);	/* a write hold's; a read one is never timed */
	forget_recent(l);
	return REAL(rwlock_unlock)(l);
}

static int hook_spin_unlock(pthread_spinlock_t *l)
{
	if (unlikely(tls_self.nheld != 0))
		hold_end((const void *)l);
	forget_recent((const void *)l);
	return REAL(spin_unlock)(l);
}

EXPORT int pthread_spin_trylock(pthread_spinlock_t *l)
{
	TRY_ONLY(REAL(spin_trylock)(l), (const void *)l, LOCK_SPIN);
}

/*
 * A wait cancelled by pthread_cancel ends inside libc with the mutex held
 * again (POSIX), and the thread unwinds through this handler: it is an
 * acquisition that waited, like any other.
 */
static void cond_cancelled(void *arg)
{
	wait_end(arg, 0);
}

/*
 * A condvar wait always blocks: every call is an acquisition that waited,
 * timed from the call until the mutex is held again (libc re-takes it
 * internally, out of our sight). A timeout counts as failed.
 *
 * The caller holds the mutex on both sides of the real wait, and libc
 * releases it only inside: whatever the hook does, it does in the
 * caller's critical section. No place in the hook is outside it, and
 * releasing the mutex ourselves would lose wake-ups (or turn the call
 * into a spurious wake-up the caller may not expect). So the work is
 * kept small: a clock read and the entry's lookup before, a clock read
 * and a few stores after, and the stack capture before, within the
 * unwinding budget (unwind.h). Measured on a wait that returns at once:
 * +200 ns with a capture at depth 13, +55 ns without, ~10 us on the
 * thread's first capture (its stack store is mapped).
 */
#define COND_WAIT(wait_call, pass_call, c, m)                               \
	do {                                                               \
		struct thread_table *t_;                                   \
		uint64_t key_ = KEY(CALLER, LOCK_CONDVAR);                 \
		struct obj_slot *x_;                                       \
		struct wait w_;                                            \
		int rc_;                                                   \
		/* Before enter(): hold_end() passes inside the collector. */\
		if (unlikely(tls_self.nheld != 0))                         \
			hold_end(m);                                       \
		t_ = enter();                                              \
		if (t_ == NULL)                                            \
			return pass_call;                                  \
		x_ = slot_for(t_, &key_, c, HOOK_CFA);                     \
		wait_begin(&w_, t_, key_, x_);                             \
		pthread_cleanup_push(cond_cancelled, &w_);                 \
		rc_ = wait_call;                                           \
		pthread_cleanup_pop(0);                                    \
		wait_end(&w_, rc_);                                        \
		if (unlikely(state_holders()) &&                           \
		    (rc_ == 0 || rc_ == ETIMEDOUT))                        \
			note_recent(t_, key_, m);                          \
		return rc_;                                                \
	} while (0)

EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	COND_WAIT(REAL(cond_wait)(c, m), REAL(cond_wait)(c, m), c, m);
}

EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
				  const struct timespec *abstime)
{
	if (!time_ok(CLOCK_REALTIME, abstime))
		return REAL(cond_timedwait)(c, m, abstime);
	COND_WAIT(REAL(cond_timedwait)(c, m, abstime),
		  REAL(cond_timedwait)(c, m, abstime), c, m);
}

EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m,
				  clockid_t clock,
				  const struct timespec *abstime)
{
	if (!time_ok(clock, abstime))
		return REAL(cond_clockwait)(c, m, clock, abstime);
	COND_WAIT(REAL(cond_clockwait)(c, m, clock, abstime),
		  REAL(cond_clockwait)(c, m, clock, abstime), c, m);
}

/*
 * A semaphore wait cancelled by pthread_cancel ends without the count
 * taken: a failed wait, its time still waited.
 */
static void sem_cancelled(void *arg)
{
	wait_end(arg, ECANCELED);
}

/*
 * A semaphore wait: as TRY_THEN_WAIT, with the sem_* convention (-1 and
 * errno). The try's EAGAIN is the caller's errno again before the real
 * wait, so that every result and errno is the real call's. Any failed
 * wait (ETIMEDOUT, EINTR from a handled signal, cancellation) is a
 * timeout and failed, as a timed-out mutex wait is.
 */
#define SEM_WAIT(wait_call, s)                                             \
	do {                                                               \
		struct thread_table *t_ = enter();                         \
		uint64_t key_ = KEY(CALLER, LOCK_SEMAPHORE);               \
		struct obj_slot *x_;                                       \
		struct wait w_;                                            \
		int rc_, err_ = errno;                                     \
		if (t_ == NULL)                                            \
			return wait_call;                                  \
		x_ = slot_for(t_, &key_, s, HOOK_CFA);                     \
		prefetch_lock(s);                                          \
		if (likely(REAL(sem_trywait)(s) == 0)) {                   \
			count_free(x_);                                    \
			leave();                                           \
			return 0;                                          \
		}                                                          \
		errno = err_;                                              \
		wait_begin(&w_, t_, key_, x_);                             \
		pthread_cleanup_push(sem_cancelled, &w_);                  \
		rc_ = wait_call;                                           \
		pthread_cleanup_pop(0);                                    \
		err_ = errno;                                              \
		if (state_holders())                                       \
			blame_waker(&w_, (uint64_t)(uintptr_t)(s));        \
		wait_end(&w_, rc_ == 0 ? 0 : err_);                        \
		errno = err_;                                              \
		return rc_;                                                \
	} while (0)

/* Whether threads wait on s: glibc counts them in its word's upper half. */
static inline bool sem_waiters(sem_t *s)
{
	return __atomic_load_n((const uint64_t *)(const void *)s,
			       __ATOMIC_RELAXED) >> 32 != 0;
}

/*
 * sem_post, reached only while holders are tracked (as the unlock hooks):
 * a post to a semaphore that has waiters notes its call site (not moved
 * past lock wrappers) in the wake log, where the waiter it wakes finds
 * it (blame_waker()). A post is what ends a semaphore wait, as a wake
 * ends a futex wait: the poster is the waiter's holder.
 */
static int hook_sem_post(sem_t *s)
{
	if (sem_waiters(s)) {
		int saved_errno = errno;

		waker_note((uint64_t)(uintptr_t)s, KEY(CALLER, LOCK_SEMAPHORE));
		errno = saved_errno;
	}
	return REAL(sem_post)(s);
}

EXPORT int sem_wait(sem_t *s)
{
	SEM_WAIT(REAL(sem_wait)(s), s);
}

/* A try: counts the acquisition, or a zero count as a busy lock. */
EXPORT int sem_trywait(sem_t *s)
{
	struct thread_table *t = enter();
	uint64_t key = KEY(CALLER, LOCK_SEMAPHORE);
	struct obj_slot *x;
	int rc, err;

	if (t == NULL)
		return REAL(sem_trywait)(s);
	x = slot_for(t, &key, s, HOOK_CFA);
	rc = REAL(sem_trywait)(s);
	err = errno;
	if (rc == 0)
		count_free(x);
	else if (err == EAGAIN)
		count_busy(t, key, x);
	leave();
	errno = err;
	return rc;
}

/*
 * glibc refuses a bad tv_nsec (sem_timedwait before anything else,
 * sem_clockwait only when it must wait) and a clock it does not take:
 * such calls pass straight through, unrecorded, as time_ok() says.
 */
EXPORT int sem_timedwait(sem_t *s, const struct timespec *abstime)
{
	if (!time_ok(CLOCK_REALTIME, abstime))
		return REAL(sem_timedwait)(s, abstime);
	SEM_WAIT(REAL(sem_timedwait)(s, abstime), s);
}

EXPORT int sem_clockwait(sem_t *s, clockid_t clock,
			 const struct timespec *abstime)
{
	if (!time_ok(clock, abstime))
		return REAL(sem_clockwait)(s, clock, abstime);
	SEM_WAIT(REAL(sem_clockwait)(s, clock, abstime), s);
}

int hooks_own_sem_clockwait(sem_t *s, clockid_t clock,
			    const struct timespec *abstime)
{
	return REAL(sem_clockwait)(s, clock, abstime);
}

/*
 * Futex locks: InnoDB's, Rust's std::sync::Mutex, absl's, folly's, and
 * many made by hand spin in user space and sleep with
 * syscall(SYS_futex, ...). They never call pthread, and their free path
 * never enters the kernel, so only their waits can be seen, here: a
 * wait counts as a contended acquisition of type futex whose object is
 * the futex word, timed, unwound and moved past lock wrappers like any
 * other; a wake that woke someone counts once on its site's futex-wake
 * row (the releasing side). Every other call passes straight through,
 * with the real function's result and errno.
 */
enum futex_role { FUTEX_PASS, FUTEX_WAITS, FUTEX_WAKES };

/* What a futex operation does; a private or realtime flag changes nothing. */
static enum futex_role futex_role(int op)
{
	switch (op & FUTEX_CMD_MASK) {
	case FUTEX_WAIT:
	case FUTEX_WAIT_BITSET:
	case FUTEX_LOCK_PI:
	case FUTEX_LOCK_PI2:
	case FUTEX_WAIT_REQUEUE_PI:
		return FUTEX_WAITS;
	case FUTEX_WAKE:
	case FUTEX_WAKE_BITSET:
	case FUTEX_WAKE_OP:
		return FUTEX_WAKES;
	default:
		return FUTEX_PASS;
	}
}

static inline long real_syscall(long number, const long a[6])
{
	return REAL(syscall)(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/*
 * The first futex word of a futex_waitv() vector, or 0. The vector is the
 * caller's and may be bad (the kernel then says EFAULT): process_vm_readv
 * fails where a plain load would crash the host.
 */
static uint64_t waitv_first_word(long waiters, long n)
{
	struct futex_waitv first;
	struct iovec local = { &first, sizeof(first) };
	struct iovec remote = { (void *)waiters, sizeof(first) };
	int saved_errno = errno;
	ssize_t got = 0;

	if (n >= 1)
		got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	errno = saved_errno;
	return got == (ssize_t)sizeof(first) ? first.uaddr : 0;
}

/*
 * How a futex wait ended, as wait_end() counts it. Woken (futex_waitv
 * returns the woken index), or gone to sleep too late (EAGAIN: the word
 * changed first) or interrupted (EINTR): the thread found the lock busy
 * and waited, one contended acquisition. A timeout or an error: failed,
 * its time still waited.
 */
static int futex_outcome(long ret, int err)
{
	return ret >= 0 || err == EAGAIN || err == EINTR ? 0 : err;
}

/*
 * A futex wait, as the other hooks time theirs. errno is as the real call
 * left it: its error, or the caller's value untouched on success.
 */
static __attribute__((noinline)) long
futex_wait(long number, const long a[6], uint64_t object, uint64_t site,
	   uint64_t cfa)
{
	int saved_errno = errno, err;
	struct thread_table *t = enter();
	uint64_t key = KEY(site, LOCK_FUTEX);
	struct obj_slot *x;
	struct wait w;
	long ret;

	if (t == NULL)
		return real_syscall(number, a);
	x = slot_for(t, &key, (const void *)(uintptr_t)object, cfa);
	wait_begin(&w, t, key, x);
	ret = real_syscall(number, a);
	err = ret == -1 ? errno : saved_errno;
	if (state_holders())
		blame_waker(&w, object);
	wait_end(&w, futex_outcome(ret, err));
	errno = err;
	return ret;
}

/* A wake that woke someone: one count on the waker's futex-wake row. */
static __attribute__((noinline)) void futex_woke(uint64_t object,
						 uint64_t site, uint64_t cfa)
{
	int saved_errno = errno;
	struct thread_table *t = enter();
	uint64_t key = KEY(site, LOCK_FUTEX_WAKE);

	if (t == NULL)
		return;
	count_free(slot_for(t, &key, (const void *)(uintptr_t)object, cfa));
	leave();
	errno = saved_errno;
}

/*
 * A futex call. A word that is not a futex's (NULL, misaligned: the
 * kernel refuses it) passes through unrecorded, as do the other
 * operations (requeues, FUTEX_FD, ...).
 */
static __attribute__((noinline)) long
futex_call(long number, const long a[6], uint64_t site, uint64_t cfa)
{
	enum futex_role role = number == SYS_futex_waitv ? FUTEX_WAITS
							  : futex_role((int)a[1]);
	uint64_t object = 0;
	long ret;

	if (role != FUTEX_PASS)
		object = number == SYS_futex_waitv ? waitv_first_word(a[0], a[1])
						   : (uint64_t)a[0];
	if (object == 0 || object % 4 != 0)
		return real_syscall(number, a);
	if (role == FUTEX_WAITS)
		return futex_wait(number, a, object, site, cfa);
	if (state_holders())
		futex_wake_note(object, site, cfa);
	ret = real_syscall(number, a);
	if (ret > 0)
		futex_woke(object, site, cfa);
	return ret;
}

/*
 * syscall() is variadic: six arguments are forwarded whatever the number
 * takes (reading unused argument registers, or the caller's stack slot
 * of a sixth, is harmless on x86_64). A call that is not a futex's costs
 * two comparisons more than the real function.
 */
EXPORT long syscall(long number, ...)
{
	long a[6];
	va_list ap;

	va_start(ap, number);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (likely(number != SYS_futex && number != SYS_futex_waitv))
		return real_syscall(number, a);
	return futex_call(number, a, CALLER, HOOK_CFA);
}

/*
 * Our hooks' own addresses. Inside this library, pthread_mutex_lock means
 * whatever the global scope binds first: libc's, when we were dlopen'ed.
 * Hidden aliases always mean ours.
 */
#define OURS(name) \
	extern __typeof(name) ours_##name __attribute__((alias(#name), copy(name), visibility("hidden")))
OURS(pthread_mutex_lock);
OURS(pthread_mutex_trylock);
OURS(pthread_mutex_timedlock);
OURS(pthread_mutex_clocklock);
OURS(pthread_rwlock_rdlock);
OURS(pthread_rwlock_wrlock);
OURS(pthread_rwlock_tryrdlock);
OURS(pthread_rwlock_trywrlock);
OURS(pthread_rwlock_timedrdlock);
OURS(pthread_rwlock_timedwrlock);
OURS(pthread_rwlock_clockrdlock);
OURS(pthread_rwlock_clockwrlock);
OURS(pthread_spin_lock);
OURS(pthread_spin_trylock);
OURS(pthread_cond_wait);
OURS(pthread_cond_timedwait);
OURS(pthread_cond_clockwait);
OURS(sem_wait);
OURS(sem_trywait);
OURS(sem_timedwait);
OURS(sem_clockwait);
OURS(syscall);

#define HOOK(field, name, version) \
	{ #name, version, (void *)ours_##name, (void **)&real.field, false }
static const struct hooked hooked[] = {
	HOOK(mutex_lock, pthread_mutex_lock, NULL),
	HOOK(mutex_trylock, pthread_mutex_trylock, NULL),
	{ "pthread_mutex_unlock", NULL, (void *)hook_mutex_unlock,
	  (void **)&real.mutex_unlock, true },
	{ "pthread_rwlock_unlock", NULL, (void *)hook_rwlock_unlock,
	  (void **)&real.rwlock_unlock, true },
	{ "pthread_spin_unlock", NULL, (void *)hook_spin_unlock,
	  (void **)&real.spin_unlock, true },
	{ "sem_post", NULL, (void *)hook_sem_post, (void **)&real.sem_post,
	  true },
	HOOK(mutex_timedlock, pthread_mutex_timedlock, NULL),
	HOOK(mutex_clocklock, pthread_mutex_clocklock, NULL),
	HOOK(rwlock_rdlock, pthread_rwlock_rdlock, NULL),
	HOOK(rwlock_wrlock, pthread_rwlock_wrlock, NULL),
	HOOK(rwlock_tryrdlock, pthread_rwlock_tryrdlock, NULL),
	HOOK(rwlock_trywrlock, pthread_rwlock_trywrlock, NULL),
	HOOK(rwlock_timedrdlock, pthread_rwlock_timedrdlock, NULL),
	HOOK(rwlock_timedwrlock, pthread_rwlock_timedwrlock, NULL),
	HOOK(rwlock_clockrdlock, pthread_rwlock_clockrdlock, NULL),
	HOOK(rwlock_clockwrlock, pthread_rwlock_clockwrlock, NULL),
	HOOK(spin_lock, pthread_spin_lock, NULL),
	HOOK(spin_trylock, pthread_spin_trylock, NULL),
	/*
	 * Plain dlsym may hand back the pre-2.3.2 condvar ABI; every caller a
	 * modern toolchain links binds the 2.3.2 one, and only those callers
	 * may be sent to our hooks (got.c skips the others).
	 */
	HOOK(cond_wait, pthread_cond_wait, "GLIBC_2.3.2"),
	HOOK(cond_timedwait, pthread_cond_timedwait, "GLIBC_2.3.2"),
	HOOK(cond_clockwait, pthread_cond_clockwait, NULL),
	HOOK(sem_wait, sem_wait, NULL),
	HOOK(sem_trywait, sem_trywait, NULL),
	HOOK(sem_timedwait, sem_timedwait, NULL),
	HOOK(sem_clockwait, sem_clockwait, NULL),
	HOOK(syscall, syscall, NULL),
};
#define NHOOKED (sizeof(hooked) / sizeof(hooked[0]))

bool hooks_interposed(void)
{
	return dlsym(RTLD_DEFAULT, "pthread_mutex_lock") ==
	       (void *)ours_pthread_mutex_lock;
}

static void *lookup(void *handle, const struct hooked *h)
{
	return h->version ? dlvsym(handle, h->name, h->version)
			  : dlsym(handle, h->name);
}

/*
 * libc's own definition. RTLD_NEXT from a library dlopen'ed RTLD_LOCAL
 * searches a scope the library is not in; ask libc by handle instead.
 */
static void *lookup_libc(const struct hooked *h)
{
	static void *libc;

	if (libc == NULL)
		libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
	return libc ? lookup(libc, h) : NULL;
}

/*
 * The next definition after ours, preloaded: libc's of the right version,
 * or another interposer's (a sanitizer, a second preloaded tool) whatever
 * version it carries, so that it still sees every call. Only libc has the
 * old condvar ABI that a plain lookup could return.
 */
static void *lookup_next(const struct hooked *h)
{
	void *p = dlsym(RTLD_NEXT, h->name);
	Dl_info info;

	if (h->version && (p == NULL || !dladdr(p, &info) ||
			   info.dli_fname == NULL ||
			   strstr(info.dli_fname, "/libc.so.6") != NULL))
		p = lookup(RTLD_NEXT, h);
	return p;
}

/* What the peeks and the prefetch need to know of libc and the CPU. */
static void learn_machine(void)
{
	unsigned int eax, ebx, ecx, edx;
	pthread_spinlock_t probe;

	if (__get_cpuid(0x80000001, &eax, &ebx, &ecx, &edx))
		__atomic_store_n(&have_prefetchw, (ecx & bit_PRFCHW) != 0,
				 __ATOMIC_RELAXED);
	if (pthread_spin_init(&probe, PTHREAD_PROCESS_PRIVATE) == 0 &&
	    (probe == 0 || probe == 1))
		__atomic_store_n(&spin_free_word, probe, __ATOMIC_RELAXED);
}

int hooks_resolve(void)
{
	bool interposed = hooks_interposed();
	int missing = 0;

	for (size_t i = 0; i < NHOOKED; i++) {
		const struct hooked *h = &hooked[i];
		void *p = interposed ? lookup_next(h) : NULL;

		if (p == NULL || p == h->hook)
			p = lookup_libc(h);
		if (p == NULL || p == h->hook) {
			missing++;
			p = NULL;
		}
		__atomic_store_n(h->real, p, __ATOMIC_RELEASE);
	}
	real.libc_mutex_trylock = lookup_libc(hooks_find("pthread_mutex_trylock"));
	learn_machine();
	if (real.libc_mutex_trylock == NULL)
		missing++;
	return missing ? -1 : 0;
}

const struct hooked *hooks_find(const char *name)
{
	for (size_t i = 0; i < NHOOKED; i++) {
		if (strcmp(hooked[i].name, name) == 0)
			return &hooked[i];
	}
	return NULL;
}
