/*
 * What injection learns before touching the target, from /proc and ELF
 * files: whether it can be traced at all, where dlopen, __restore_rt and
 * libc's thread-local variables are, and which of its threads is safest
 * to borrow.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "inject_proc.h"
#include "ns.h"

#define VERSYM_HIDDEN 0x8000

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

/* The process is still there and not a zombie. */
bool inject_process_alive(pid_t pid)
{
	char path[64], text[4096], state[32];

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	return inject_slurp(path, text, sizeof(text)) > 0 &&
	       inject_field(text, "State", state, sizeof(state)) &&
	       state[0] != 'Z' && state[0] != 'X';
}

struct mapping {
	uint64_t start, end, offset;
	const char *path;		/* "" when anonymous */
	const char *name;		/* after the last '/' */
};

/* Call fn for each line of /proc/PID/maps; -1 with errno if unreadable. */
static int maps_each(pid_t pid, void (*fn)(const struct mapping *, void *),
		     void *ctx)
{
	char path[64], line[PATH_MAX + 256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		struct mapping m;
		const char *slash;
		int at = 0;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64
			   " %*s %*s %n", &m.start, &m.end, &m.offset, &at) < 3 ||
		    at == 0)
			continue;
		line[strcspn(line, "\n")] = '\0';
		m.path = line + at;
		slash = strrchr(m.path, '/');
		m.name = slash ? slash + 1 : m.path;
		fn(&m, ctx);
	}
	fclose(f);
	return 0;
}

/*
 * Stack below rsp that is the thread's own: on the main stack (it grows),
 * or in the anonymous mapping that also holds the thread's TCB (glibc puts
 * it at the top of each thread's stack). Elsewhere (an alternate signal
 * stack from the heap, a coroutine's stack) what lies below may be
 * someone's data: none.
 */
struct room { uint64_t rsp, tcb, bytes; };

static void note_room(const struct mapping *m, void *ctx)
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

/* State, tracer, thread-ness and seccomp mode, from /proc/PID/status. */
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

/* 1 and the interpreter of an x86_64 ELF file, 0 without one, -1 if not. */
static int elf_interp(int fd, char *out, size_t n)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;

	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64)
		return -1;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		off_t at = (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize);
		ssize_t got;

		if (pread(fd, &ph, sizeof(ph), at) != sizeof(ph))
			return -1;
		if (ph.p_type != PT_INTERP)
			continue;
		got = pread(fd, out, ph.p_filesz < n ? ph.p_filesz : n - 1,
			    (off_t)ph.p_offset);
		if (got < 0)
			return -1;
		out[got] = '\0';
		return 1;
	}
	return 0;
}

/* The executable is a dynamic x86_64 glibc program. */
static int check_exe(const struct inject_target *t, char *msg, size_t len)
{
	char path[64], interp[PATH_MAX] = "";
	int pid = (int)t->pid, fd, kind;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EPERM))
		return inject_not_permitted(t, msg, len);
	if (fd < 0)
		return inject_fail(msg, len, "cannot read the executable of PID %d "
				   "(%s): a kernel thread?", pid, strerror(errno));
	kind = elf_interp(fd, interp, sizeof(interp));
	close(fd);
	if (kind < 0)
		return inject_fail(msg, len, "PID %d is not an x86_64 ELF program",
				   pid);
	if (kind == 0)
		return inject_fail(msg, len, "PID %d is a static binary: start it "
				   "with qsptop -- CMD", pid);
	if (strstr(interp, "musl") != NULL)
		return inject_fail(msg, len, "PID %d uses musl (%s): musl is not "
				   "supported", pid, interp);
	return 0;
}

/*
 * The library is the same file inside the target's root (found as it
 * would find it); when it is not there, or another file has its name (in
 * a container), the target loads a copy (copy_lib).
 */
static int check_lib(struct inject_target *t, const char *lib, char *msg,
		     size_t len)
{
	struct stat here, there;
	int root, fd = -1;

	if (realpath(lib, t->lib) == NULL || stat(t->lib, &here) < 0)
		return inject_fail(msg, len, "cannot find the collector library %s: "
				   "%s", lib, strerror(errno));
	root = ns_open_root(t->pid);
	if (root < 0)
		return errno == ENOENT ? inject_exited(t, msg, len)
				       : inject_not_permitted(t, msg, len);
	fd = ns_open_path(root, t->lib);
	close(root);
	t->copy = fd < 0 || fstat(fd, &there) < 0 ||
		  here.st_dev != there.st_dev || here.st_ino != there.st_ino;
	if (fd >= 0)
		close(fd);
	return 0;
}

/* Copy the open file from into to; -1 with errno. */
static int copy_file(int from, int to)
{
	char buf[65536];
	ssize_t n;

	while ((n = read(from, buf, sizeof(buf))) > 0) {
		for (ssize_t done = 0, w; done < n; done += w) {
			w = write(to, buf + done, (size_t)(n - done));
			if (w < 0)
				return -1;
		}
	}
	return n < 0 ? -1 : 0;
}

/* The target's /tmp, found inside its root, in t->copy_tmp; -1 with errno. */
static int open_target_tmp(struct inject_target *t)
{
	int root = ns_open_root(t->pid);

	if (root < 0)
		return -1;
	t->copy_tmp = ns_open_path(root, "/tmp");
	close(root);
	return t->copy_tmp < 0 ? -1 : 0;
}

/*
 * A fresh directory of ours, readable by all, in the target's /tmp: in
 * t->copy_fd, kept open to remove what is in it, whatever is renamed.
 */
static int make_copy_dir(struct inject_target *t)
{
	unsigned rnd;

	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		return -1;
	snprintf(t->copy_dir, sizeof(t->copy_dir), "qsptop-lib-%08x", rnd);
	if (mkdirat(t->copy_tmp, t->copy_dir, 0700) < 0) {
		t->copy_dir[0] = '\0';
		return -1;
	}
	t->copy_fd = openat(t->copy_tmp, t->copy_dir,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return t->copy_fd < 0 ? -1 : fchmod(t->copy_fd, 0755);
}

/* The copy itself: its directory, then the file; -1 with errno. */
static int write_copy(struct inject_target *t, int from, const char *name)
{
	int to, rc;

	if (make_copy_dir(t) < 0)
		return -1;
	to = openat(t->copy_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0755);
	if (to < 0)
		return -1;
	rc = fchmod(to, 0755) < 0 || copy_file(from, to) < 0 ? -1 : 0;
	if (close(to) < 0)
		rc = -1;
	return rc;
}

/*
 * Act as uid and gid (effective), or as root again with uid 0: the group
 * changes while we are still root.
 */
static int act_as(uid_t uid, gid_t gid)
{
	if (uid != 0)
		return setegid(gid) < 0 || seteuid(uid) < 0 ? -1 : 0;
	return seteuid(0) < 0 || setegid(0) < 0 ? -1 : 0;
}

/*
 * The collector, copied where the target can load it: in a directory of
 * its /tmp, found inside its root (a link there cannot send the copy
 * elsewhere), readable whatever user it runs as. What we create in a
 * filesystem of another user namespace must belong to a user it knows
 * (our root is nobody there): root makes it as the target's user. t->lib
 * becomes the path of the copy as the target sees it; remove_copy
 * removes it.
 */
int inject_copy_lib(struct inject_target *t, char *msg, size_t len)
{
	char name[NAME_MAX + 1];
	bool as_target = geteuid() == 0 && !ns_shared(t->pid, "user");
	int from = open(t->lib, O_RDONLY | O_CLOEXEC), rc = -1, err;

	/* t->lib is rewritten below: the name must not point into it. */
	snprintf(name, sizeof(name), "%s", strrchr(t->lib, '/') + 1);
	if (from < 0)
		return inject_fail(msg, len, "cannot read the collector library %s: %s",
				   t->lib, strerror(errno));
	/* Its /tmp is found as we are; only what we create there is not. */
	if (open_target_tmp(t) == 0 &&
	    (!as_target || act_as(t->euid, t->egid) == 0))
		rc = write_copy(t, from, name);
	err = errno;
	close(from);
	if (as_target && act_as(0, 0) < 0)
		rc = -1;
	if (rc == 0) {
		snprintf(t->lib, sizeof(t->lib), "/tmp/%s/%s", t->copy_dir,
			 name);
		return 0;
	}
	inject_remove_copy(t);
	return inject_fail(msg, len, "cannot copy the collector library into PID %d's "
			   "/tmp (it cannot see %s): %s", (int)t->pid, t->lib,
			   strerror(err));
}

void inject_remove_copy(struct inject_target *t)
{
	bool keep = t->dlopen_pending;

	if (t->copy_fd >= 0 && !keep)
		unlinkat(t->copy_fd, strrchr(t->lib, '/') + 1, 0);
	if (t->copy_fd >= 0)
		close(t->copy_fd);
	if (t->copy_dir[0] && !keep)
		unlinkat(t->copy_tmp, t->copy_dir, AT_REMOVEDIR);
	if (t->copy_tmp >= 0)
		close(t->copy_tmp);
	t->copy_fd = t->copy_tmp = -1;
	t->copy_dir[0] = '\0';
}

/*
 * How we name a file the target has mapped: its path inside its root, or,
 * removed since (a libc replaced on disk, a copy of the collector), its
 * map_files entry.
 */
static void mapped_path(char *out, size_t size, pid_t pid,
			const struct mapping *m, bool removed)
{
	if (removed)
		snprintf(out, size, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
			 (int)pid, m->start, m->end);
	else
		snprintf(out, size, "%s", m->path);
}

/*
 * Open a file the target has mapped (named by mapped_path): beneath its
 * root, never outside it, and only a regular file, without blocking; -1
 * with why filled in.
 */
static int open_mapped(pid_t pid, const char *path, bool removed, char *why,
		       size_t size)
{
	return removed ? ns_open_mapped(path, why, size)
		       : ns_open_file_of(pid, path, why, size);
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

static void note_mapping(const struct mapping *m, void *ctx)
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

/* Find libc and whether the collector is there already. */
static int check_maps(struct inject_target *t, char *msg, size_t len)
{
	if (maps_each(t->pid, note_mapping, t) < 0)
		return errno == ENOENT ? inject_exited(t, msg, len)
				       : inject_not_permitted(t, msg, len);
	if (t->libc_start == 0)
		return inject_fail(msg, len, "PID %d has no libc.so.6 mapped: only "
				   "glibc programs are supported", (int)t->pid);
	return 0;
}

int inject_preflight(struct inject_target *t, const char *lib, char *msg, size_t len)
{
	return inject_check_status(t, msg, len) < 0 || check_exe(t, msg, len) < 0 ||
	       check_lib(t, lib, msg, len) < 0 ||
	       check_maps(t, msg, len) < 0 ? -1 : 0;
}

/*
 * A defined symbol's default version in .dynsym (dlopen@@GLIBC_2.34):
 * true with its value, false when absent.
 */
static bool dynsym_find(Elf *e, const char *name, int type, uint64_t *value)
{
	Elf_Scn *scn = NULL;
	Elf_Data *syms = NULL, *vers = NULL;
	size_t strndx = 0, count = 0;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e, scn)) != NULL) {
		if (gelf_getshdr(scn, &sh) == NULL)
			continue;
		if (sh.sh_type == SHT_DYNSYM && sh.sh_entsize != 0) {
			syms = elf_getdata(scn, NULL);
			strndx = sh.sh_link;
			count = sh.sh_size / sh.sh_entsize;
		} else if (sh.sh_type == SHT_GNU_versym) {
			vers = elf_getdata(scn, NULL);
		}
	}
	for (size_t i = 0; syms != NULL && i < count; i++) {
		GElf_Sym s;
		GElf_Versym v = 0;
		const char *n;

		if (gelf_getsym(syms, (int)i, &s) == NULL ||
		    s.st_shndx == SHN_UNDEF ||
		    GELF_ST_TYPE(s.st_info) != type)
			continue;
		n = elf_strptr(e, strndx, s.st_name);
		if (n == NULL || strcmp(n, name) != 0)
			continue;
		if (vers != NULL && gelf_getversym(vers, (int)i, &v) != NULL &&
		    (v & VERSYM_HIDDEN))
			continue;
		*value = s.st_value;
		return true;
	}
	return false;
}

/* In one SHT_RELA section, the r_offset of a TPOFF64 of name, or 0. */
static uint64_t rela_tpoff(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh,
			   const char *name)
{
	Elf_Scn *symscn = elf_getscn(e, sh->sh_link);
	Elf_Data *rels = elf_getdata(scn, NULL);
	Elf_Data *syms = symscn ? elf_getdata(symscn, NULL) : NULL;
	GElf_Shdr symsh;

	if (rels == NULL || syms == NULL || sh->sh_entsize == 0 ||
	    gelf_getshdr(symscn, &symsh) == NULL)
		return 0;
	for (size_t i = 0; i < sh->sh_size / sh->sh_entsize; i++) {
		const char *n;
		GElf_Rela r;
		GElf_Sym s;

		if (gelf_getrela(rels, (int)i, &r) == NULL ||
		    GELF_R_TYPE(r.r_info) != R_X86_64_TPOFF64 ||
		    GELF_R_SYM(r.r_info) == 0 ||
		    gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &s) == NULL)
			continue;
		n = elf_strptr(e, symsh.sh_link, s.st_name);
		if (n != NULL && strcmp(n, name) == 0)
			return r.r_offset;
	}
	return 0;
}

/* The r_offset of a TPOFF64 relocation of symbol name, or 0. */
static uint64_t tpoff_reloc(Elf *e, const char *name)
{
	Elf_Scn *scn = NULL;
	uint64_t at;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e, scn)) != NULL)
		if (gelf_getshdr(scn, &sh) != NULL && sh.sh_type == SHT_RELA &&
		    (at = rela_tpoff(e, scn, &sh, name)) != 0)
			return at;
	return 0;
}

/*
 * Where libc keeps dlerror's record and errno for each thread: the GOT
 * slot the loader filled with the record's offset from the thread
 * pointer, and both variables' offsets in libc's TLS block. Whatever is
 * not found stays unknown: the injection then gives no dlerror text, or
 * does not restore errno.
 */
static void find_tls(Elf *e, struct inject_target *t, uint64_t bias)
{
	uint64_t got = tpoff_reloc(e, "__libc_dlerror_result");

	if (got == 0 || !dynsym_find(e, "__libc_dlerror_result", STT_TLS,
				     &t->tls_dlerror))
		return;
	t->dlerror_got = bias + got;
	t->errno_known = dynsym_find(e, "errno", STT_TLS, &t->tls_errno);
}

/* pthread_mutex_trylock and _unlock, to take the loader's lock. */
static void find_mutex_calls(Elf *e, struct inject_target *t, uint64_t bias)
{
	uint64_t lock, unlock;

	if (dynsym_find(e, "pthread_mutex_trylock", STT_FUNC, &lock) &&
	    dynsym_find(e, "pthread_mutex_unlock", STT_FUNC, &unlock) &&
	    lock != 0 && unlock != 0) {
		t->mutex_trylock = bias + lock;
		t->mutex_unlock = bias + unlock;
	}
}

/*
 * The lowest PT_LOAD address (the load bias is the mapping start minus
 * it) and libc's __restore_rt, found by its code in an executable segment:
 * it is not exported, and every call we make returns into it.
 */
static int scan_segments(Elf *e, uint64_t *lowest, uint64_t *restore_rt)
{
	static const uint8_t code[] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0,
					0x0f, 0x05 };	/* mov $15,%rax; syscall */
	size_t n, size;
	const char *raw = elf_rawfile(e, &size);
	GElf_Phdr ph;

	*lowest = UINT64_MAX;
	*restore_rt = 0;
	if (raw == NULL || elf_getphdrnum(e, &n) != 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const char *hit;

		if (gelf_getphdr(e, (int)i, &ph) == NULL ||
		    ph.p_type != PT_LOAD)
			continue;
		if (ph.p_vaddr < *lowest)
			*lowest = ph.p_vaddr;
		if (!(ph.p_flags & PF_X) || *restore_rt != 0 ||
		    ph.p_offset + ph.p_filesz > size)
			continue;
		hit = memmem(raw + ph.p_offset, ph.p_filesz, code, sizeof(code));
		if (hit != NULL)
			*restore_rt = ph.p_vaddr + (uint64_t)(hit - raw) -
				      ph.p_offset;
	}
	return *lowest == UINT64_MAX ? -1 : 0;
}

/* dlopen, pthread_setcancelstate, __restore_rt, libc's TLS, in the target. */
int inject_resolve_libc(struct inject_target *t, char *msg, size_t len)
{
	char why[PATH_MAX + 64];
	int fd = open_mapped(t->pid, t->libc, t->libc_removed, why, sizeof(why));
	uint64_t lowest, restore_rt, bias, o, c;
	Elf *e;
	int rc = -1;

	if (fd < 0)
		return inject_fail(msg, len, "cannot open PID %d's libc %s: %s",
				   (int)t->pid, t->libc, why);
	elf_version(EV_CURRENT);
	/* Read, not mapped: a file the target truncates cannot fault us. */
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e != NULL && scan_segments(e, &lowest, &restore_rt) == 0) {
		bias = t->libc_start - (lowest & ~0xfffULL);
		if (dynsym_find(e, "dlopen", STT_FUNC, &o) && o != 0 &&
		    dynsym_find(e, "pthread_setcancelstate", STT_FUNC, &c) &&
		    c != 0 && restore_rt != 0) {
			t->dlopen = bias + o;
			t->setcancelstate = bias + c;
			t->restore_rt = bias + restore_rt;
			find_tls(e, t, bias);
			find_mutex_calls(e, t, bias);
			rc = 0;
		}
	}
	elf_end(e);
	close(fd);
	if (rc < 0)
		inject_fail(msg, len, "cannot find dlopen, pthread_setcancelstate and "
			    "__restore_rt in PID %d's libc %s (glibc older than 2.34?)",
			    (int)t->pid, t->libc);
	return rc;
}

/*
 * Whether the recursive mutex at lock, in the target, is the loader's:
 * struct rtld_global has the namespace count (1 to 16) just before it,
 * and its kind is PTHREAD_MUTEX_RECURSIVE_NP; owner and count agree.
 */
static bool is_load_lock(int mem, uint64_t lock)
{
	struct { uint64_t nns; int32_t lock, count, owner, users, kind; } m;

	if (pread(mem, &m, sizeof(m), (off_t)(lock - 8)) != sizeof(m))
		return false;
	return m.nns >= 1 && m.nns <= 16 && m.kind == 1 &&
	       (m.owner == 0) == (m.count == 0) && m.owner >= 0;
}

/*
 * _rtld_global's _dl_load_lock, which every dlopen takes: its offset
 * follows the 16 namespaces of struct rtld_global, whose size glibc
 * changed in 2.32 and 2.35. Each layout is tried and checked in memory.
 */
static void find_load_lock(struct inject_target *t, uint64_t rtld_global)
{
	static const uint64_t offsets[] = { 2568, 2440, 2312 };
	char path[64];
	int mem;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)t->pid);
	mem = open(path, O_RDONLY | O_CLOEXEC);
	for (size_t i = 0; mem >= 0 && i < sizeof(offsets) / sizeof(offsets[0]);
	     i++)
		if (is_load_lock(mem, rtld_global + offsets[i])) {
			t->load_lock = rtld_global + offsets[i];
			break;
		}
	if (mem >= 0)
		close(mem);
}

void inject_resolve_loader(struct inject_target *t)
{
	char why[PATH_MAX + 64];
	int fd = t->ldso_start == 0 ? -1 : open_mapped(t->pid, t->ldso,
						       t->ldso_removed, why,
						       sizeof(why));
	uint64_t lowest, unused, o;
	Elf *e;

	t->load_lock = 0;
	if (fd < 0 || t->mutex_trylock == 0)
		goto out;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e != NULL && scan_segments(e, &lowest, &unused) == 0 &&
	    dynsym_find(e, "_rtld_global", STT_OBJECT, &o) && o != 0)
		find_load_lock(t, t->ldso_start - (lowest & ~0xfffULL) + o);
	elf_end(e);
out:
	if (fd >= 0)
		close(fd);
}

int inject_resolve_wake(struct inject_target *t, char *msg, size_t len)
{
	char why[PATH_MAX + 64];
	int fd = open_mapped(t->pid, t->mapped_lib, t->mapped_removed, why,
			     sizeof(why));
	uint64_t lowest, unused, o;
	Elf *e;
	int rc = -1;

	if (fd < 0)
		return inject_fail(msg, len, "cannot open the collector mapped in PID "
				   "%d (%s): %s", (int)t->pid, t->mapped_lib, why);
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e != NULL && scan_segments(e, &lowest, &unused) == 0 &&
	    dynsym_find(e, "qsptop_wake", STT_FUNC, &o) && o != 0) {
		t->wake = t->mapped_start - (lowest & ~0xfffULL) + o;
		rc = 0;
	}
	elf_end(e);
	close(fd);
	if (rc < 0)
		inject_fail(msg, len, "the collector in PID %d (%s) cannot be woken: "
			    "it is from an older qsptop", (int)t->pid, t->mapped_lib);
	return rc;
}

struct lib_search { const char *path; bool found; };

static void note_lib(const struct mapping *m, void *ctx)
{
	struct lib_search *s = ctx;

	s->found |= strcmp(m->path, s->path) == 0;
}

bool inject_lib_mapped(const struct inject_target *t)
{
	struct lib_search s = { t->lib, false };

	return maps_each(t->pid, note_lib, &s) == 0 && s.found;
}
