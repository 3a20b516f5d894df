/* Thread names of the target, from /proc, cached. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tasks.h"
#include "xalloc.h"

#define REREAD_MS 1000
#define COMM_LEN 16

struct task {
	uint32_t tid;
	char name[COMM_LEN + 1];	/* "" until read */
	long read_ms;			/* when /proc was last read for it */
};

struct tasks {
	pid_t pid;
	struct task *v;
	size_t n, cap;
};

struct tasks *tasks_new(pid_t pid)
{
	struct tasks *t = xcalloc(1, sizeof *t);

	t->pid = pid;
	return t;
}

void tasks_free(struct tasks *t)
{
	if (!t)
		return;
	free(t->v);
	free(t);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The entry of tid, added (never read) when new. */
static struct task *task_of(struct tasks *t, uint32_t tid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].tid == tid)
			return &t->v[i];
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 16;
		t->v = xreallocarray(t->v, t->cap, sizeof *t->v);
	}
	t->v[t->n] = (struct task){ .tid = tid, .read_ms = -REREAD_MS };
	return &t->v[t->n++];
}

/* Read the thread's comm; the old name stays when that fails. */
static void task_read(const struct tasks *t, struct task *k)
{
	char path[64], name[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%u/comm", (int)t->pid, k->tid);
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

const char *tasks_name(struct tasks *t, uint32_t tid, bool alive)
{
	struct task *k = task_of(t, tid);
	long now = now_ms();

	if (alive && t->pid > 0 && now - k->read_ms >= REREAD_MS) {
		k->read_ms = now;
		task_read(t, k);
	}
	return k->name[0] ? k->name : "?";
}
