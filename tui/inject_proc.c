/*
 * What injection reads in /proc before touching the target: whether it
 * can be traced at all, where its libc and loader are mapped and whether
 * the collector is there already; and the small readers of /proc files
 * and the error messages the other injection modules share.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inject_proc.h"
#include "maps.h"

int inject_fail(char *msg, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
	return -1;
}

ssize_t inject_slurp(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

bool inject_field(const char *text, const char *key, char *out, size_t n)
{
	size_t k = strlen(key);

	for (const char *p = text; p != NULL; p = strchr(p, '\n')) {
		p += *p == '\n';
		if (strncmp(p, key, k) == 0 && p[k] == ':') {
			p += k + 1 + strspn(p + k + 1, " \t");
			snprintf(out, n, "%.*s", (int)strcspn(p, "\n"), p);
			return true;
		}
	}
	return false;
}

int inject_not_permitted(const struct inject_target *t, char *msg, size_t len)
{
	char scope[16] = "0";

	if (geteuid() != 0 &&
	    inject_slurp("/proc/sys/kernel/yama/ptrace_scope", scope, sizeof(scope)) > 0 &&
	    atoi(scope) > 0)
		return inject_fail(msg, len, "not permitted to trace PID %d "
				   "(kernel.yama.ptrace_scope is %d): run qsptop as "
				   "root", (int)t->pid, atoi(scope));
	return inject_fail(msg, len, "not permitted to trace PID %d (it runs as "
			   "another user, or is not dumpable): run qsptop as that "
			   "user or as root", (int)t->pid);
}

int inject_exited(const struct inject_target *t, char *msg, size_t len)
{
	return inject_fail(msg, len, "process %d exited during attach", (int)t->pid);
}

bool inject_process_alive(pid_t pid)
{
	char path[64], text[4096], state[32];

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	return inject_slurp(path, text, sizeof(text)) > 0 &&
	       inject_field(text, "State", state, sizeof(state)) &&
	       state[0] != 'Z' && state[0] != 'X';
}

/*
 * Stack below rsp that is the thread's own: on the main stack (it grows),
 * or in the anonymous mapping that also holds the thread's TCB (glibc puts
 * it at the top of each thread's stack). Elsewhere (an alternate signal
 * stack from the heap, a coroutine's stack) what lies below may be
 * someone's data: none.
 */
struct room { uint64_t rsp, tcb, bytes; };

static void note_room(const struct maps_line *m, void *ctx)
{
	struct room *r = ctx;

	if (r->rsp < m->start || r->rsp >= m->end)
		return;
	if (strcmp(m->path, "[stack]") == 0)
		r->bytes = UINT64_MAX;
	else if (m->path[0] == '\0' && r->tcb >= m->start && r->tcb < m->end)
		r->bytes = r->rsp - m->start;
}

uint64_t inject_stack_room(pid_t pid, uint64_t rsp, uint64_t tcb)
{
	struct room room = { rsp, tcb, 0 };

	maps_each(pid, note_room, &room);
	return room.bytes;
}

int inject_check_status(struct inject_target *t, char *msg, size_t len)
{
	char path[64], text[8192], state[64] = "", v[64];
	int pid = (int)t->pid;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (pid <= 0 || inject_slurp(path, text, sizeof(text)) < 0)
		return inject_fail(msg, len, "no process with PID %d", pid);
	if (inject_field(text, "Tgid", v, sizeof(v)) && atoi(v) != pid)
		return inject_fail(msg, len, "PID %d is a thread of process %s: use "
				   "-p %s", pid, v, v);
	if (inject_field(text, "Uid", v, sizeof(v)))
		sscanf(v, "%*u %u", &t->euid);
	if (inject_field(text, "Gid", v, sizeof(v)))
		sscanf(v, "%*u %u", &t->egid);
	/* "NSpid: 1234 1" inside a PID namespace. */
	t->pid_ns = inject_field(text, "NSpid", v, sizeof(v)) && strpbrk(v, " \t");
	if (inject_field(text, "TracerPid", v, sizeof(v)) && atoi(v) != 0)
		return inject_fail(msg, len, "PID %d is already traced by PID %s (a "
				   "debugger?)", pid, v);
	inject_field(text, "State", state, sizeof(state));
	if (state[0] == 'T' || state[0] == 't')
		return inject_fail(msg, len, "PID %d is stopped (state %s): continue "
				   "it first with kill -CONT %d", pid, state, pid);
	if (state[0] == 'Z' || state[0] == 'X')
		return inject_fail(msg, len, "PID %d is a zombie: it has exited", pid);
	if (!inject_field(text, "Seccomp", v, sizeof(v)))
		v[0] = '\0';
	if (atoi(v) == 1)
		return inject_fail(msg, len, "PID %d runs in strict seccomp mode: "
				   "loading a library would kill it", pid);
	if (atoi(v) == 2 && !t->force)
		return inject_fail(msg, len, "PID %d runs under a seccomp filter: if "
				   "it forbids a system call of the collector, the "
				   "process is killed; use --force to load it anyway",
				   pid);
	if (atoi(v) == 2)
		snprintf(t->warning, sizeof(t->warning), "PID %d runs under a "
			 "seccomp filter: if it forbids the collector's system "
			 "calls, the collector stays silent or the process is "
			 "killed", pid);
	return 0;
}

/*
 * How we name a file the target has mapped: its path inside its root, or,
 * removed since (a libc replaced on disk, a copy of the collector), its
 * map_files entry.
 */
static void mapped_path(char *out, size_t size, pid_t pid,
			const struct maps_line *m, bool removed)
{
	if (removed)
		snprintf(out, size, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
			 (int)pid, m->start, m->end);
	else
		snprintf(out, size, "%s", m->path);
}

/* name is lib's, or lib's removed since it was mapped (a copy's). */
static bool lib_name(const char *name, const char *lib, bool *removed)
{
	size_t n = strlen(lib);

	if (strncmp(name, lib, n) != 0)
		return false;
	*removed = strcmp(name + n, " (deleted)") == 0;
	return name[n] == '\0' || *removed;
}

static void note_mapping(const struct maps_line *m, void *ctx)
{
	struct inject_target *t = ctx;
	bool removed;

	if (lib_name(m->name, strrchr(t->lib, '/') + 1, &removed)) {
		t->already = true;
		if (m->offset == 0 && t->mapped_start == 0) {
			t->mapped_start = m->start;
			mapped_path(t->mapped_lib, sizeof(t->mapped_lib), t->pid,
				    m, removed);
			t->mapped_removed = removed;
		}
	}
	if (m->offset != 0)
		return;
	if (t->libc_start == 0 && lib_name(m->name, "libc.so.6", &removed)) {
		mapped_path(t->libc, sizeof(t->libc), t->pid, m, removed);
		t->libc_removed = removed;
		t->libc_start = m->start;
	}
	if (t->ldso_start == 0 && lib_name(m->name, "ld-linux-x86-64.so.2",
					   &removed)) {
		mapped_path(t->ldso, sizeof(t->ldso), t->pid, m, removed);
		t->ldso_removed = removed;
		t->ldso_start = m->start;
	}
}

int inject_check_maps(struct inject_target *t, char *msg, size_t len)
{
	if (maps_each(t->pid, note_mapping, t) < 0)
		return errno == ENOENT ? inject_exited(t, msg, len)
				       : inject_not_permitted(t, msg, len);
	if (t->libc_start == 0)
		return inject_fail(msg, len, "PID %d has no libc.so.6 mapped: only "
				   "glibc programs are supported", (int)t->pid);
	return 0;
}

struct lib_search { const char *path; bool found; };

static void note_lib(const struct maps_line *m, void *ctx)
{
	struct lib_search *s = ctx;

	s->found |= strcmp(m->path, s->path) == 0;
}

bool inject_lib_mapped(const struct inject_target *t)
{
	struct lib_search s = { t->lib, false };

	return maps_each(t->pid, note_lib, &s) == 0 && s.found;
}
