/* What holders do while others wait: see heldby.h. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arena.h"
#include "heldby.h"
#include "table.h"

#define HELD_ROWS_MAX 1024	/* holder rows with totals, at most */
#define HELD_WAITERS 64		/* waits followed at once, at most */

/* A holder row's totals, and the scan after which they last changed. */
struct held_row {
	uint64_t changed_seq;
	struct proto_while_held m;
};

enum held_state { HELD_RUNNING, HELD_SYSCALL, HELD_LOCK, HELD_EXITED };

/* What a holder does now. */
struct look {
	enum held_state state;
	double running;		/* HELD_RUNNING: the part on a CPU */
	uint32_t nr;		/* HELD_SYSCALL */
	uint32_t lock_row;	/* HELD_LOCK: its wait's row + 1 */
};

/*
 * A wait followed: since when it is counted, its holder's row + 1, and
 * what the holder did at the last look (the wait's end counts as that).
 */
struct waiter {
	uint32_t tid;
	uint32_t holder_row;
	uint64_t t0;
	uint64_t last;
	struct look look;
	bool looked;		/* look is set */
	bool seen;		/* in the current look */
};

/* A holder's scheduler times at its last look (running or runnable). */
struct holder_times {
	uint32_t tid;
	uint64_t run_ns, delay_ns;
	uint64_t at;
	double running;		/* the share of R spent on a CPU, at at */
};

struct held_by {
	struct held_row *v;
	uint32_t n, cap;
	struct waiter w[HELD_WAITERS];
	uint32_t nw;
	struct holder_times h[HELD_WAITERS];
	uint32_t next_h;
};

/* Read /proc/self/task/TID/NAME into buf; its length, or -1. */
static ssize_t read_task(uint32_t tid, const char *name, char *buf,
			 size_t size)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%u/%s", tid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* The live table of thread tid, or NULL. */
static struct thread_table *table_of(uint32_t tid)
{
	for (struct thread_table *t = table_first(); t; t = t->all_next) {
		if (__atomic_load_n(&t->tid, __ATOMIC_RELAXED) == tid &&
		    __atomic_load_n(&t->state, __ATOMIC_ACQUIRE) == TABLE_LIVE)
			return t;
	}
	return NULL;
}

/* The row + 1 where thread tid holds lock, from its recent[]; 0: unknown. */
static uint32_t holder_row(struct rows *rs, uint64_t lock, uint32_t tid)
{
	struct thread_table *t = table_of(tid);
	const struct held_recent *r;

	if (t == NULL)
		return 0;
	r = &t->recent[recent_slot((const void *)(uintptr_t)lock)];
	if (__atomic_load_n(&r->object, __ATOMIC_RELAXED) != lock)
		return 0;
	return rows_of_key(rs, __atomic_load_n(&r->key, __ATOMIC_RELAXED), lock);
}

/* The share of its time holder tid spent on a CPU since its last look. */
static double running_share(struct held_by *hb, uint32_t tid, uint64_t now)
{
	struct holder_times *h = NULL;
	unsigned long long run, delay;
	char buf[128];
	double share = 1;

	for (uint32_t i = 0; i < HELD_WAITERS && h == NULL; i++)
		if (hb->h[i].tid == tid)
			h = &hb->h[i];
	if (h && h->at == now)
		return h->running;
	if (read_task(tid, "schedstat", buf, sizeof(buf)) <= 0 ||
	    sscanf(buf, "%llu %llu", &run, &delay) != 2)
		return 1;
	if (h == NULL) {
		h = &hb->h[hb->next_h++ % HELD_WAITERS];
		*h = (struct holder_times){ .tid = tid };
	} else if (run + delay > h->run_ns + h->delay_ns) {
		share = (double)(run - h->run_ns) /
			(double)(run + delay - h->run_ns - h->delay_ns);
	}
	h->run_ns = run;
	h->delay_ns = delay;
	h->at = now;
	h->running = share;
	return share;
}

/* What holder tid does now: its own lock wait, its state, its call. */
static struct look look_at(struct held_by *hb, struct rows *rs, uint32_t tid,
			   uint64_t now)
{
	struct thread_table *t = table_of(tid);
	struct look l = { .state = HELD_RUNNING, .running = 1 };
	char buf[512], *p;

	if (t && __atomic_load_n(&t->waiting.t0, __ATOMIC_ACQUIRE)) {
		l.state = HELD_LOCK;
		l.lock_row = rows_of_key(rs,
			__atomic_load_n(&t->waiting.key, __ATOMIC_RELAXED),
			__atomic_load_n(&t->waiting.object, __ATOMIC_RELAXED));
		return l;
	}
	if (read_task(tid, "stat", buf, sizeof(buf)) <= 0) {
		l.state = HELD_EXITED;
		return l;
	}
	p = strrchr(buf, ')');
	if (p && p[1] == ' ' && p[2] == 'R') {
		l.running = running_share(hb, tid, now);
		return l;
	}
	if (read_task(tid, "syscall", buf, sizeof(buf)) > 0 &&
	    buf[0] >= '0' && buf[0] <= '9') {
		l.state = HELD_SYSCALL;
		l.nr = (uint32_t)strtoul(buf, NULL, 10);
	}
	return l;
}

/* The totals of holder row r, made when new; NULL when no room. */
static struct held_row *held_row(struct held_by *hb, uint32_t r)
{
	for (uint32_t i = 0; i < hb->n; i++)
		if (hb->v[i].m.row == r)
			return &hb->v[i];
	if (hb->n == HELD_ROWS_MAX ||
	    !arena_grow((void **)&hb->v, &hb->cap, hb->n, 16, sizeof(*hb->v)))
		return NULL;
	memset(&hb->v[hb->n], 0, sizeof(hb->v[0]));
	hb->v[hb->n].m.row = r;
	return &hb->v[hb->n++];
}

/* Add ns in system call nr; past the names kept, to the last, "other". */
static void add_call(struct proto_while_held *m, uint32_t nr, uint64_t ns)
{
	unsigned i;

	for (i = 0; i < m->nsys; i++)
		if (m->sys[i].nr == nr)
			break;
	if (i == m->nsys) {
		if (m->nsys == PROTO_HELD_SYSCALLS) {
			i = PROTO_HELD_SYSCALLS - 1;
			m->sys[i].nr = PROTO_HELD_OTHER_CALL;
		} else {
			i = m->nsys++;
			m->sys[i].nr = nr;
			m->sys[i].ns = 0;
		}
	}
	m->sys[i].ns += ns;
}

/* Count ns of what the holder did (l) on its row. */
static void charge(struct held_row *h, const struct look *l, uint64_t ns,
		   uint64_t seq)
{
	struct proto_while_held *m = &h->m;
	uint64_t run;

	switch (l->state) {
	case HELD_RUNNING:
		run = (uint64_t)((double)ns * l->running);
		m->running_ns += run;
		m->runnable_ns += ns - run;
		break;
	case HELD_SYSCALL: add_call(m, l->nr, ns); break;
	case HELD_LOCK:
		m->lock_wait_ns += ns;
		if (l->lock_row)
			m->lock_row = l->lock_row;
		break;
	case HELD_EXITED: m->exited_ns += ns; break;
	}
	h->changed_seq = seq;
}

/* The follow-up of the wait of thread tid begun at t0; NULL when full. */
static struct waiter *waiter_of(struct held_by *hb, uint32_t tid, uint64_t t0)
{
	for (uint32_t i = 0; i < hb->nw; i++)
		if (hb->w[i].tid == tid && hb->w[i].t0 == t0)
			return &hb->w[i];
	if (hb->nw == HELD_WAITERS)
		return NULL;
	hb->w[hb->nw] = (struct waiter){ .tid = tid, .t0 = t0, .last = t0 };
	return &hb->w[hb->nw++];
}

/*
 * A wait the current look did not see has ended: its time since the
 * last look, up to its end (as its thread noted it), counts as what the
 * holder did then.
 */
static void finish(struct held_by *hb, const struct rows *rs,
		   const struct waiter *w)
{
	struct thread_table *t = table_of(w->tid);
	struct held_row *h;
	uint64_t end;

	if (t == NULL || !w->looked || w->holder_row == 0 ||
	    w->holder_row > rs->n ||
	    __atomic_load_n(&t->waiting.ended_t0, __ATOMIC_ACQUIRE) != w->t0)
		return;
	end = __atomic_load_n(&t->waiting.ended_at, __ATOMIC_RELAXED);
	if (end > w->last && (h = held_row(hb, w->holder_row - 1)) != NULL)
		charge(h, &w->look, end - w->last, rs->seq + 1);
}

/* Forget the waits the current look did not see: they ended. */
static void drop_ended(struct held_by *hb, const struct rows *rs)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < hb->nw; i++) {
		if (hb->w[i].seen) {
			hb->w[i].seen = false;
			hb->w[k++] = hb->w[i];
		} else {
			finish(hb, rs, &hb->w[i]);
		}
	}
	hb->nw = k;
}

/*
 * Follow the wait of table t, if it has one with a known holder: count
 * what the holder does now since the last look (since the wait began,
 * at the first: a wait found late counts whole, as its holder is now).
 */
static bool follow(struct held_by *hb, struct rows *rs,
		   const struct thread_table *t, uint64_t now)
{
	const struct wait_now *n = &t->waiting;
	uint64_t t0 = __atomic_load_n(&n->t0, __ATOMIC_ACQUIRE);
	uint32_t holder = (uint32_t)__atomic_load_n(&n->holder, __ATOMIC_RELAXED);
	uint64_t lock = __atomic_load_n(&n->object, __ATOMIC_RELAXED);
	struct waiter *w;
	struct held_row *h;
	struct look l;

	if (t0 == 0 || holder == 0 || t0 > now ||
	    (w = waiter_of(hb, t->tid, t0)) == NULL)
		return t0 != 0 && holder != 0;
	w->seen = true;
	if (w->holder_row == 0)
		w->holder_row = holder_row(rs, lock, holder);
	if (w->holder_row == 0 || w->holder_row > rs->n ||
	    (h = held_row(hb, w->holder_row - 1)) == NULL)
		return true;
	l = look_at(hb, rs, holder, now);
	charge(h, &l, now - w->last, rs->seq + 1);
	w->last = now;
	w->look = l;
	w->looked = true;
	return true;
}

bool heldby_sample(struct rows *rs, uint64_t now)
{
	struct held_by *hb = rs->held;
	bool any = false;

	if (hb == NULL && (hb = rs->held = arena_alloc(sizeof(*hb))) == NULL)
		return false;
	for (struct thread_table *t = table_first(); t; t = t->all_next) {
		if (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) == TABLE_LIVE &&
		    !table_thread_gone(t))
			any |= follow(hb, rs, t, now);
	}
	drop_ended(hb, rs);
	return any;
}

void heldby_send(const struct rows *rs, struct wbuf *out, uint64_t sent_seq)
{
	const struct held_by *hb = rs->held;

	for (uint32_t i = 0; hb && i < hb->n; i++)
		if (hb->v[i].changed_seq > sent_seq)
			proto_put_while_held(out, &hb->v[i].m);
}
