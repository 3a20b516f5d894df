/* Thread names of the target, from /proc, cached. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/clock.h"
#include "ns.h"
#include "tasks.h"
#include "xalloc.h"

#define REREAD_MS 1000
#define COMM_LEN 16

struct task {
	uint32_t tid;
	uint32_t host;			/* its TID for us; 0 until found */
	char name[COMM_LEN + 1];	/* "" until read */
	long read_ms;			/* when /proc was last read for it */
};

struct tasks {
	pid_t pid;
	bool own_pidns;			/* TIDs it reports are not ours */
	struct task *v;
	size_t n, cap;
	uint32_t *index;		/* v's entries by tid: i + 1, 0 free */
	size_t mask;			/* index slots - 1 */
};

struct tasks *tasks_new(pid_t pid)
{
	struct tasks *t = xcalloc(1, sizeof *t);

	t->pid = pid;
	t->own_pidns = pid > 0 && !ns_shared(pid, "pid");
	return t;
}

void tasks_free(struct tasks *t)
{
	if (!t)
		return;
	free(t->v);
	free(t->index);
	free(t);
}

/* The index slot of tid: holding its entry, or free. */
static uint32_t *task_slot(const struct tasks *t, uint32_t tid)
{
	for (size_t i = (tid * 0x9e3779b1u) & t->mask;; i = (i + 1) & t->mask) {
		if (t->index[i] == 0 || t->v[t->index[i] - 1].tid == tid)
			return &t->index[i];
	}
}

/* Keep the index at most half full: a program may churn many threads. */
static void index_grow(struct tasks *t)
{
	if (t->index && 2 * (t->n + 1) <= t->mask + 1)
		return;
	t->mask = t->index ? 2 * t->mask + 1 : 63;
	free(t->index);
	t->index = xcalloc(t->mask + 1, sizeof *t->index);
	for (size_t i = 0; i < t->n; i++)
		*task_slot(t, t->v[i].tid) = (uint32_t)i + 1;
}

/* The entry of tid, added (never read) when new. */
static struct task *task_of(struct tasks *t, uint32_t tid)
{
	uint32_t *slot;

	index_grow(t);
	slot = task_slot(t, tid);
	if (*slot)
		return &t->v[*slot - 1];
	t->v = xgrow(t->v, &t->cap, t->n + 1, 16, sizeof *t->v);
	t->v[t->n] = (struct task){ .tid = tid, .read_ms = -REREAD_MS };
	*slot = (uint32_t)++t->n;
	return &t->v[t->n - 1];
}

/* The innermost TID on the NSpid line of a status file; 0 if none. */
static uint32_t innermost(const char *status)
{
	char line[256];
	unsigned long v = 0;
	FILE *f = fopen(status, "re");

	while (f && fgets(line, sizeof(line), f)) {
		char *p = line + 6, *end;

		if (strncmp(line, "NSpid:", 6) != 0)
			continue;
		for (unsigned long x; x = strtoul(p, &end, 10), end != p; p = end)
			v = x;
		break;
	}
	if (f)
		fclose(f);
	return (uint32_t)v;
}

/*
 * Find our TID of k, which the target reports in its own PID namespace:
 * the thread of the target whose NSpid line ends with it.
 */
static void task_find_host(const struct tasks *t, struct task *k)
{
	char path[64];
	struct dirent *e;
	DIR *d;

	if (!t->own_pidns) {
		k->host = k->tid;
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pid);
	d = opendir(path);
	while (d && k->host == 0 && (e = readdir(d)) != NULL) {
		unsigned long tid = strtoul(e->d_name, NULL, 10);

		snprintf(path, sizeof(path), "/proc/%d/task/%lu/status",
			 (int)t->pid, tid);
		if (tid != 0 && innermost(path) == k->tid)
			k->host = (uint32_t)tid;
	}
	if (d)
		closedir(d);
}

/* Read the thread's comm; the old name stays when that fails. */
static void task_read(const struct tasks *t, struct task *k)
{
	char path[64], name[64];
	FILE *f;

	if (k->host == 0)
		task_find_host(t, k);
	if (k->host == 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/task/%u/comm", (int)t->pid,
		 k->host);
	f = fopen(path, "r");
	if (f == NULL)
		return;
	if (fgets(name, sizeof(name), f)) {
		name[strcspn(name, "\n")] = '\0';
		name[COMM_LEN] = '\0';
		memcpy(k->name, name, sizeof(k->name));
	}
	fclose(f);
}

/* The entry of tid, read again from /proc when due. */
static struct task *task_fresh(struct tasks *t, uint32_t tid, bool alive)
{
	struct task *k = task_of(t, tid);
	long now = clock_now_ms();

	if (alive && t->pid > 0 && now - k->read_ms >= REREAD_MS) {
		k->read_ms = now;
		task_read(t, k);
	}
	return k;
}

const char *tasks_name(struct tasks *t, uint32_t tid, bool alive)
{
	struct task *k = task_fresh(t, tid, alive);

	return k->name[0] ? k->name : "?";
}

bool tasks_own_pidns(const struct tasks *t)
{
	return t->own_pidns;
}

uint32_t tasks_host_tid(struct tasks *t, uint32_t tid, bool alive)
{
	return task_fresh(t, tid, alive)->host;
}
