/* Threads, their locks and the locks' holders, read from outside. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../common/clock.h"
#include "inject_thread.h"
#include "mapsyms.h"
#include "stuck.h"
#include "waitkind.h"
#include "xalloc.h"

/* glibc 2.36's pthread_rwlock_t: the futex words waiters sleep on, the writer. */
#define RWLOCK_WRPHASE_AT 8	/* readers; a writer waiting for readers */
#define RWLOCK_WRITERS_AT 12	/* a writer waiting for another writer */
#define RWLOCK_WRITER_AT 24	/* __cur_writer: the writer's TID */
/* The futex value a writer waiting for another writer expects (1 | USED). */
#define RWLOCK_WRITERS_WAIT 3

#define FUTEX_CMD(op) ((op) & 127)

struct stuck {
	pid_t pid;
	bool own_modules;
	struct waitkind *waitkind;
	struct stuck_thread *t, *prev;
	size_t n, cap, nprev, prev_cap;
	struct stuck_deadlock *d;
	size_t nd, dcap;
};

struct stuck *stuck_new(pid_t pid, bool own_modules)
{
	struct stuck *s = xcalloc(1, sizeof *s);

	s->pid = pid;
	s->own_modules = own_modules;
	s->waitkind = waitkind_new(pid);
	return s;
}

void stuck_free(struct stuck *s)
{
	if (s == NULL)
		return;
	waitkind_free(s->waitkind);
	free(s->t);
	free(s->prev);
	free(s->d);
	free(s);
}

pid_t stuck_pid(const struct stuck *s)
{
	return s->pid;
}

/* Read size bytes of the target at address; whether all were. */
static bool peek(const struct stuck *s, uint64_t address, void *buf,
		 size_t size)
{
	struct iovec local = { buf, size };
	struct iovec remote = { (void *)(uintptr_t)address, size };

	return process_vm_readv(s->pid, &local, 1, &remote, 1, 0) ==
	       (ssize_t)size;
}

/* Name, state letter and namespace TID from the thread's status file. */
static bool read_status(const struct stuck *s, struct stuck_thread *t)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)s->pid,
		 (int)t->tid);
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	t->ns_tid = t->tid;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "Name:\t", 6) == 0)
			snprintf(t->name, sizeof t->name, "%.19s", line + 6);
		else if (strncmp(line, "State:\t", 7) == 0)
			t->proc_state = line[7];
		else if (strncmp(line, "NSpid:", 6) == 0 && strrchr(line, '\t'))
			t->ns_tid = (pid_t)atoi(strrchr(line, '\t') + 1);
	}
	fclose(f);
	return true;
}

/* System calls whose first argument is a file descriptor. */
static bool fd_call(long nr)
{
	static const long calls[] = {
		SYS_read, SYS_write, SYS_readv, SYS_writev, SYS_pread64,
		SYS_pwrite64, SYS_recvfrom, SYS_recvmsg, SYS_recvmmsg,
		SYS_sendto, SYS_sendmsg, SYS_accept, SYS_accept4, SYS_connect,
		SYS_epoll_wait, SYS_epoll_pwait, SYS_epoll_pwait2, SYS_flock,
		SYS_fsync, SYS_fdatasync, SYS_ioctl, SYS_fcntl,
	};

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (calls[i] == nr)
			return true;
	return false;
}

/* "read()", or "read() on pipe:[123]" when its descriptor has a target. */
static void describe_call(const struct stuck *s, struct stuck_thread *t,
			  uint64_t fd)
{
	char path[64], target[64];
	ssize_t n = -1;

	if (fd_call(t->nr) && fd < 1u << 30) {
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)s->pid, (int)fd);
		n = readlink(path, target, sizeof(target) - 1);
	}
	if (n > 0)
		snprintf(t->call, sizeof t->call, "%s() on %.*s",
			 inject_syscall_name(t->nr), (int)n, target);
	else
		snprintf(t->call, sizeof t->call, "%s()", inject_syscall_name(t->nr));
}

/* The lock type a glibc function named name waits for, or NULL. */
static const char *lock_type(const char *name)
{
	if (strstr(name, "cond") || strstr(name, "spin"))
		return NULL;
	if (strstr(name, "rdlock"))
		return "rwlock-read";
	if (strstr(name, "wrlock"))
		return "rwlock-write";
	if (strstr(name, "mutex_lock") || strstr(name, "mutex_timedlock") ||
	    strstr(name, "mutex_clocklock"))
		return "mutex";
	return NULL;
}

/*
 * The lock's address and the TID its memory names as holder (0: none
 * known), from the futex word the thread sleeps on and the value it
 * expects there.
 */
static void lock_of(const struct stuck *s, struct stuck_thread *t,
		    uint64_t expected)
{
	int32_t owner = 0;

	if (strcmp(t->type, "mutex") == 0) {
		t->object = t->word;
		peek(s, t->object + MUTEX_OWNER_AT, &owner, sizeof owner);
	} else if (strcmp(t->type, "rwlock-write") == 0 &&
		   expected == RWLOCK_WRITERS_WAIT) {
		t->object = t->word - RWLOCK_WRITERS_AT;
		peek(s, t->object + RWLOCK_WRITER_AT, &owner, sizeof owner);
	} else {
		/* Waiting for the phase to change: a writer, or readers. */
		t->object = t->word - RWLOCK_WRPHASE_AT;
		t->readers_hold = strcmp(t->type, "rwlock-write") == 0;
		if (!t->readers_hold)
			peek(s, t->object + RWLOCK_WRITER_AT, &owner, sizeof owner);
	}
	t->holder_ns = owner > 0 ? owner : 0;
}

/* A futex wait: a lock when its stack says so, else a wait of its kind. */
static void futex_wait(struct stuck *s, struct symbols *symbols,
		       struct stuck_thread *t, const uint64_t a[6], uint64_t sp)
{
	struct waitkind_stack st;
	char name[64] = "";

	if (waitkind_stack(s->waitkind, sp, t->pc, &st))
		waitkind_name(symbols, st.libc_outer, st.libc_outer != t->pc,
			      name, sizeof(name));
	t->type = FUTEX_CMD(a[1]) == 1 ? NULL : lock_type(name);
	if (t->type == NULL) {
		snprintf(t->call, sizeof t->call, "futex() in %s",
			 name[0] ? name : "?");
		return;
	}
	t->state = STUCK_LOCK;
	lock_of(s, t, a[2]);
	for (size_t i = st.outside; i < st.n && t->depth < STUCK_FRAMES; i++)
		t->stack[t->depth++] = st.frames[i];
}

/*
 * Where thread t is, from its syscall line; the line is read again after
 * the stack so that a thread that moved meanwhile is not misread.
 */
static void look_at(struct stuck *s, struct symbols *symbols,
		    struct stuck_thread *t)
{
	char line[512], again[512];
	unsigned long long v[8];

	t->state = STUCK_OTHER;
	if (!waitkind_syscall(s->pid, (unsigned long)t->tid, line, sizeof(line)))
		return;
	if (strncmp(line, "running", 7) == 0 || t->proc_state == 'R') {
		t->state = STUCK_RUNNING;
		return;
	}
	if (sscanf(line, "%ld %llx %llx %llx %llx %llx %llx %llx %llx", &t->nr,
		   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 9)
		return;
	uint64_t a[6] = { v[0], v[1], v[2], v[3], v[4], v[5] };

	t->word = a[0];
	t->pc = v[7];
	t->state = STUCK_SYSCALL;
	if (t->nr == SYS_futex)
		futex_wait(s, symbols, t, a, v[6]);
	else
		describe_call(s, t, a[0]);
	if (!waitkind_syscall(s->pid, (unsigned long)t->tid, again, sizeof(again)) ||
	    strcmp(line, again) != 0)
		t->state = STUCK_RUNNING;	/* it moved on */
}

static int tid_compare(const void *a, const void *b)
{
	const struct stuck_thread *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* Read the threads of the process into s->t, sorted; false if it is gone. */
static bool list_threads(struct stuck *s)
{
	char path[64];
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)s->pid);
	dir = opendir(path);
	if (dir == NULL)
		return false;
	s->n = 0;
	while ((d = readdir(dir)) != NULL) {
		char *end;
		long tid = strtol(d->d_name, &end, 10);

		if (*end != '\0' || tid <= 0)
			continue;
		s->t = xgrow(s->t, &s->cap, s->n + 1, 16, sizeof *s->t);
		memset(&s->t[s->n], 0, sizeof s->t[0]);
		s->t[s->n].tid = (pid_t)tid;
		s->t[s->n].deadlock = -1;
		if (read_status(s, &s->t[s->n]))
			s->n++;
	}
	closedir(dir);
	qsort(s->t, s->n, sizeof *s->t, tid_compare);
	return s->n > 0;
}

const struct stuck_thread *stuck_find(const struct stuck *s, pid_t tid)
{
	struct stuck_thread key = { .tid = tid };

	return s->n ? bsearch(&key, s->t, s->n, sizeof *s->t, tid_compare) : NULL;
}

/* Since when t has been in this same wait: kept from the last sample. */
static void carry_since(const struct stuck *s, struct stuck_thread *t,
			int64_t now)
{
	struct stuck_thread key = { .tid = t->tid };
	const struct stuck_thread *p = s->nprev ?
		bsearch(&key, s->prev, s->nprev, sizeof *s->prev, tid_compare) : NULL;

	t->since_ms = now;
	if (p && p->state == t->state && p->nr == t->nr && p->word == t->word &&
	    p->pc == t->pc && t->state != STUCK_RUNNING)
		t->since_ms = p->since_ms;
}

/* Our TID of the thread the lock names as holder; whether it is gone. */
static void find_holder(const struct stuck *s, struct stuck_thread *t)
{
	char path[64];

	for (size_t i = 0; i < s->n && t->holder_ns; i++)
		if (s->t[i].ns_tid == t->holder_ns) {
			t->holder = s->t[i].tid;
			return;
		}
	if (t->holder_ns == 0)
		return;
	/* Not listed: gone, unless it was born after the listing. */
	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)s->pid,
		 (int)t->holder_ns);
	t->holder_exited = access(path, F_OK) != 0;
}

/* Record the cycle that starts at thread i. */
static void add_cycle(struct stuck *s, size_t i)
{
	struct stuck_deadlock *d;
	size_t k = i;

	s->d = xgrow(s->d, &s->dcap, s->nd + 1, 4, sizeof *s->d);
	d = &s->d[s->nd];
	d->n = 0;
	do {
		if (d->n < STUCK_CYCLE_MAX)
			d->member[d->n++] = k;
		s->t[k].deadlock = (int)s->nd;
		k = (size_t)(stuck_find(s, s->t[k].holder) - s->t);
	} while (k != i);
	s->nd++;
}

/*
 * Each blocked thread points to its holder: follow every chain; one that
 * comes back to a thread of its own walk is a cycle.
 */
static void find_cycles(struct stuck *s)
{
	unsigned *walk = xcalloc(s->n ? s->n : 1, sizeof *walk);

	s->nd = 0;
	for (size_t i = 0; i < s->n; i++) {
		size_t k = i;
		const struct stuck_thread *h;

		while (walk[k] == 0) {
			walk[k] = (unsigned)i + 1;
			if (s->t[k].state != STUCK_LOCK ||
			    (h = stuck_find(s, s->t[k].holder)) == NULL)
				break;
			k = (size_t)(h - s->t);
			if (walk[k] == (unsigned)i + 1 && s->t[k].deadlock < 0)
				add_cycle(s, k);
		}
	}
	free(walk);
}

bool stuck_sample(struct stuck *s, struct symbols *symbols)
{
	int64_t now = clock_now_ms();
	struct stuck_thread *swap = s->prev;
	size_t swap_cap = s->prev_cap;

	s->prev = s->t;
	s->prev_cap = s->cap;
	s->nprev = s->n;
	s->t = swap;
	s->cap = swap_cap;
	s->nd = 0;
	if (s->own_modules)
		mapsyms_load(symbols, s->pid);
	if (!waitkind_maps(s->waitkind) || !list_threads(s)) {
		s->n = 0;
		return kill(s->pid, 0) == 0;
	}
	for (size_t i = 0; i < s->n; i++) {
		look_at(s, symbols, &s->t[i]);
		carry_since(s, &s->t[i], now);
	}
	for (size_t i = 0; i < s->n; i++)
		if (s->t[i].state == STUCK_LOCK)
			find_holder(s, &s->t[i]);
	find_cycles(s);
	return true;
}

/*
 * The stack the look from outside read, from the call site site on (its
 * frames past the hooks, whose own frames hold copies of the site: the
 * last one starts the caller's part); the site alone when it has none.
 */
static void keep_stack_from(struct stuck_thread *t, uint64_t site)
{
	unsigned from = t->depth;

	for (unsigned i = 0; i < t->depth; i++)
		if (t->stack[i] == site)
			from = i;
	if (from == t->depth) {
		t->stack[0] = site;
		t->depth = 1;
		return;
	}
	memmove(t->stack, t->stack + from, (t->depth - from) * sizeof(t->stack[0]));
	t->depth -= from;
}

/* Thread t is blocked as w says. */
static void take_wait(struct stuck_thread *t, const struct stuck_wait *w,
		      int64_t now)
{
	t->state = STUCK_LOCK;
	t->type = w->type;
	t->object = w->object;
	keep_stack_from(t, w->site);
	t->since_ms = now - (int64_t)(w->blocked_ns / 1000000);
	t->holder_ns = w->holder;
	t->holder = 0;
	t->holder_exited = false;
	t->readers_hold = false;
}

void stuck_add_waits(struct stuck *s, const struct stuck_wait *w, size_t n)
{
	int64_t now = clock_now_ms();

	for (size_t i = 0; i < n; i++) {
		struct stuck_thread *t = (struct stuck_thread *)stuck_find(s, w[i].tid);

		if (t == NULL)
			continue;
		take_wait(t, &w[i], now);
		find_holder(s, t);
	}
	for (size_t i = 0; i < s->n; i++)
		s->t[i].deadlock = -1;
	find_cycles(s);
}

size_t stuck_threads(const struct stuck *s, const struct stuck_thread **out)
{
	*out = s->t;
	return s->n;
}

size_t stuck_deadlocks(const struct stuck *s, const struct stuck_deadlock **out)
{
	*out = s->d;
	return s->nd;
}

const char *stuck_holder_state(const struct stuck *s,
			       const struct stuck_thread *t, char *buf,
			       size_t size)
{
	const struct stuck_thread *h = stuck_find(s, t->holder);

	if (t->state != STUCK_LOCK)
		return NULL;
	if (t->holder_exited)
		return "exited";
	if (h == NULL)
		return NULL;
	switch (h->state) {
	case STUCK_LOCK: return "blocked";
	case STUCK_SYSCALL:
		snprintf(buf, size, "syscall:%s", h->nr == SYS_futex ? "futex" :
			 inject_syscall_name(h->nr));
		return buf;
	case STUCK_RUNNING: return "running";
	case STUCK_OTHER: break;
	}
	return "running";
}
