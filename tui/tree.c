/*
 * The launched command's tree: its descendants from /proc/PID/task/TID/
 * children, and the orphans the kernel hands to qsptop as their subreaper
 * (a double-forked daemon, the children of a command that died first).
 * qsptop's other children (the debuginfod helper, a fork of qsptop that
 * never execs) are left alone.
 */
#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "inject_proc.h"
#include "tree.h"

#define TREE_MAX 4096

struct pids {
	pid_t v[TREE_MAX];
	size_t n;
};

void tree_adopt(void)
{
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

static bool has(const struct pids *p, pid_t pid)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i] == pid)
			return true;
	return false;
}

static void add(struct pids *p, pid_t pid)
{
	if (pid > 0 && p->n < TREE_MAX && !has(p, pid))
		p->v[p->n++] = pid;
}

/* Add the children of every thread of pid ("self": qsptop's). */
static void add_children(struct pids *p, const char *pid)
{
	char path[96];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%s/task", pid);
	d = opendir(path);
	while (d && (e = readdir(d)) != NULL) {
		FILE *f;
		int child;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/task/%.20s/children",
			 pid, e->d_name);
		f = fopen(path, "re");
		while (f && fscanf(f, "%d", &child) == 1)
			add(p, child);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
}

/* Whether pid runs qsptop's own program image (a helper of ours). */
static bool is_own_image(pid_t pid)
{
	char path[64];
	struct stat self, other;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	return stat("/proc/self/exe", &self) == 0 && stat(path, &other) == 0 &&
	       self.st_dev == other.st_dev && self.st_ino == other.st_ino;
}

/* Root's descendants and our adopted orphans, parents before children. */
static void collect(struct pids *p, pid_t root)
{
	struct pids own = { .n = 0 };
	char num[16];

	if (root > 0) {
		snprintf(num, sizeof(num), "%d", (int)root);
		add_children(p, num);
	}
	add_children(&own, "self");
	for (size_t i = 0; i < own.n; i++)
		if (own.v[i] != root && !is_own_image(own.v[i]))
			add(p, own.v[i]);
	for (size_t i = 0; i < p->n; i++) {
		snprintf(num, sizeof(num), "%d", (int)p->v[i]);
		add_children(p, num);
	}
}

size_t tree_children(pid_t parent, pid_t *out, size_t max)
{
	struct pids p = { .n = 0 };
	char num[16];

	snprintf(num, sizeof(num), "%d", (int)parent);
	add_children(&p, num);
	for (size_t i = 0; i < p.n && i < max; i++)
		out[i] = p.v[i];
	return p.n < max ? p.n : max;
}

int tree_signal(pid_t root, int sig)
{
	struct pids p = { .n = 0 };
	int sent = 0;

	collect(&p, root);
	for (size_t i = 0; i < p.n; i++) {
		/* An adopted orphan that is gone is reaped, not counted. */
		if (waitpid(p.v[i], NULL, WNOHANG) == p.v[i] ||
		    !inject_process_alive(p.v[i]))
			continue;
		if (kill(p.v[i], sig) == 0)
			sent++;
	}
	return sent;
}
