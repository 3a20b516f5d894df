/*
 * Loading the collector into a running process. One thread of the target
 * is borrowed with ptrace, made to call dlopen() on the collector, and put
 * back exactly as it was; the other threads never stop. FACTS.md
 * ("Injection into a running process") has the recipe and its traps.
 *
 * The ptrace work runs on a short-lived thread of ours: if a tracee cannot
 * be waited for (stuck in an uninterruptible sleep), that thread gives up
 * and exits, and the kernel detaches its tracees.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "inject.h"

/* Where our calls return: canonical, so the fault comes after the ret. */
#define FAKE_RETURN 0x717370746f70ULL	/* "qsptop" */
#define RED_ZONE 128
#define MIN_STACK_ROOM (32 * 1024)
#define MAX_ATTEMPTS 5
#define PICK_RETRY_MS 200
#define XSTATE_MAX 32768
#define RTLD_NOW_FLAG 2
#define VERSYM_HIDDEN 0x8000
#define SIGCANCEL 32		/* glibc's pthread_cancel signal */
#define SIGSEGV_BIT (1ULL << (SIGSEGV - 1))
/* The kernel's internal "restart me" results, as seen in rax at a stop. */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

/* Deadlines; the tests shorten the call one. */
static int stop_timeout_ms = 2000;
static int call_timeout_ms = 5000;
static int release_timeout_ms = 1000;

/* For the tests: the thread borrowed last and the call it was parked in,
 * and a system call to borrow a thread from (-1: any safe one). */
static pid_t inject_last_tid;
static long inject_last_syscall;
static long inject_only_syscall = -1;

struct target {
	pid_t pid;
	char lib[PATH_MAX];		/* the collector, absolute */
	char libc[PATH_MAX + 64];	/* the target's libc, openable by us */
	uint64_t libc_start;		/* start of libc's offset-0 mapping */
	uint64_t dlopen, dlerror, restore_rt;
	bool already;			/* a file named like lib is mapped */
	bool fake_mapped;
	bool segv_handled;		/* SIGSEGV caught or ignored */
	char warning[256];
};

/* One borrowed thread and everything needed to put it back. */
struct borrow {
	pid_t tid;
	int mem;			/* /proc/PID/mem */
	struct user_regs_struct regs;	/* as interrupted */
	struct user_fpregs_struct fp;
	struct iovec xstate;
	int xstate_type;		/* NT_X86_XSTATE, or NT_PRFPREG */
	bool segv_blocked;
	int deferred;			/* a signal to deliver at detach */
	uint64_t slot;			/* the return address of our calls */
	uint64_t path;			/* lib, on the thread's stack */
};

struct job {
	struct target *t;
	char *msg;
	size_t len;
	int result;
	uint8_t xstate[XSTATE_MAX];
};

enum { RETRY = -2 };
enum call_result { CALL_DONE, CALL_ABANDONED, CALL_EXITED };
enum stop { STOP_TIMEOUT, STOP_GONE, STOP_RETURNED, STOP_EVENT, STOP_SIGNAL };

__attribute__((format(printf, 3, 4)))
static int fail(char *msg, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
	return -1;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Read a small file whole, NUL-terminated; -1 with errno on failure. */
static ssize_t slurp(const char *path, char *buf, size_t size)
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

/* The value of "key:" in a /proc status text; false when absent. */
static bool field(const char *text, const char *key, char *out, size_t n)
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

static bool mask_has_segv(const char *text, const char *key)
{
	char v[32];

	return field(text, key, v, sizeof(v)) &&
	       (strtoull(v, NULL, 16) & SIGSEGV_BIT);
}

static int not_permitted(const struct target *t, char *msg, size_t len)
{
	char scope[16] = "0";

	if (geteuid() != 0 &&
	    slurp("/proc/sys/kernel/yama/ptrace_scope", scope, sizeof(scope)) > 0 &&
	    atoi(scope) > 0)
		return fail(msg, len, "not permitted to trace PID %d "
			    "(kernel.yama.ptrace_scope is %d): run qsptop as "
			    "root", (int)t->pid, atoi(scope));
	return fail(msg, len, "not permitted to trace PID %d (it runs as "
		    "another user, or is not dumpable): run qsptop as that "
		    "user or as root", (int)t->pid);
}

static int exited(const struct target *t, char *msg, size_t len)
{
	return fail(msg, len, "process %d exited during attach", (int)t->pid);
}

/* The process is still there and not a zombie. */
static bool process_alive(pid_t pid)
{
	char path[64], text[4096], state[32];

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	return slurp(path, text, sizeof(text)) > 0 &&
	       field(text, "State", state, sizeof(state)) &&
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

/* State, tracer, thread-ness and seccomp mode, from /proc/PID/status. */
static int check_status(struct target *t, char *msg, size_t len)
{
	char path[64], text[8192], state[64] = "", v[64];
	int pid = (int)t->pid;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (pid <= 0 || slurp(path, text, sizeof(text)) < 0)
		return fail(msg, len, "no process with PID %d", pid);
	if (field(text, "Tgid", v, sizeof(v)) && atoi(v) != pid)
		return fail(msg, len, "PID %d is a thread of process %s: use "
			    "-p %s", pid, v, v);
	if (field(text, "TracerPid", v, sizeof(v)) && atoi(v) != 0)
		return fail(msg, len, "PID %d is already traced by PID %s (a "
			    "debugger?)", pid, v);
	field(text, "State", state, sizeof(state));
	if (state[0] == 'T' || state[0] == 't')
		return fail(msg, len, "PID %d is stopped (state %s): continue "
			    "it first with kill -CONT %d", pid, state, pid);
	if (state[0] == 'Z' || state[0] == 'X')
		return fail(msg, len, "PID %d is a zombie: it has exited", pid);
	if (!field(text, "Seccomp", v, sizeof(v)))
		v[0] = '\0';
	if (atoi(v) == 1)
		return fail(msg, len, "PID %d runs in strict seccomp mode: "
			    "loading a library would kill it", pid);
	if (atoi(v) == 2)
		snprintf(t->warning, sizeof(t->warning), "PID %d runs under a "
			 "seccomp filter: if it forbids the collector's system "
			 "calls, the collector stays silent or the process is "
			 "killed", pid);
	t->segv_handled = mask_has_segv(text, "SigCgt") ||
			  mask_has_segv(text, "SigIgn");
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
static int check_exe(const struct target *t, char *msg, size_t len)
{
	char path[64], interp[PATH_MAX] = "";
	int pid = (int)t->pid, fd, kind;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EPERM))
		return not_permitted(t, msg, len);
	if (fd < 0)
		return fail(msg, len, "cannot read the executable of PID %d "
			    "(%s): a kernel thread?", pid, strerror(errno));
	kind = elf_interp(fd, interp, sizeof(interp));
	close(fd);
	if (kind < 0)
		return fail(msg, len, "PID %d is not an x86_64 ELF program",
			    pid);
	if (kind == 0)
		return fail(msg, len, "PID %d is a static binary: start it "
			    "with qsptop -- CMD", pid);
	if (strstr(interp, "musl") != NULL)
		return fail(msg, len, "PID %d uses musl (%s): musl is not "
			    "supported", pid, interp);
	return 0;
}

/* The library is the same file inside the target's mount namespace. */
static int check_lib(struct target *t, const char *lib, char *msg,
		     size_t len)
{
	char inside[PATH_MAX + 64];
	struct stat here, there;

	if (realpath(lib, t->lib) == NULL || stat(t->lib, &here) < 0)
		return fail(msg, len, "cannot find the collector library %s: "
			    "%s", lib, strerror(errno));
	snprintf(inside, sizeof(inside), "/proc/%d/root%s", (int)t->pid,
		 t->lib);
	if (stat(inside, &there) < 0)
		return errno == EACCES || errno == EPERM
			       ? not_permitted(t, msg, len)
			       : fail(msg, len, "%s is not visible to PID %d "
				      "(another mount namespace, e.g. a "
				      "container)", t->lib, (int)t->pid);
	if (here.st_dev != there.st_dev || here.st_ino != there.st_ino)
		return fail(msg, len, "%s is another file inside PID %d's "
			    "mount namespace (a container?)", t->lib,
			    (int)t->pid);
	return 0;
}

static void note_mapping(const struct mapping *m, void *ctx)
{
	struct target *t = ctx;
	const char *lib = strrchr(t->lib, '/') + 1;

	if (FAKE_RETURN >= m->start && FAKE_RETURN < m->end)
		t->fake_mapped = true;
	if (strcmp(m->name, lib) == 0)
		t->already = true;
	if (t->libc_start != 0 || m->offset != 0)
		return;
	/* A libc replaced on disk since start is still in map_files. */
	if (strcmp(m->name, "libc.so.6 (deleted)") == 0)
		snprintf(t->libc, sizeof(t->libc), "/proc/%d/map_files/%"
			 PRIx64 "-%" PRIx64, (int)t->pid, m->start, m->end);
	else if (strcmp(m->name, "libc.so.6") == 0)
		snprintf(t->libc, sizeof(t->libc), "/proc/%d/root%s",
			 (int)t->pid, m->path);
	else
		return;
	t->libc_start = m->start;
}

/* Find libc and whether the collector is there already. */
static int check_maps(struct target *t, char *msg, size_t len)
{
	if (maps_each(t->pid, note_mapping, t) < 0)
		return errno == ENOENT ? exited(t, msg, len)
				       : not_permitted(t, msg, len);
	if (t->libc_start == 0)
		return fail(msg, len, "PID %d has no libc.so.6 mapped: only "
			    "glibc programs are supported", (int)t->pid);
	if (t->fake_mapped)
		return fail(msg, len, "PID %d has memory at qsptop's fake "
			    "return address %#llx", (int)t->pid, FAKE_RETURN);
	return 0;
}

/* A defined function's default version in .dynsym (dlopen@@GLIBC_2.34). */
static uint64_t dynsym_value(Elf *e, const char *name)
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
		    GELF_ST_TYPE(s.st_info) != STT_FUNC)
			continue;
		n = elf_strptr(e, strndx, s.st_name);
		if (n == NULL || strcmp(n, name) != 0)
			continue;
		if (vers != NULL && gelf_getversym(vers, (int)i, &v) != NULL &&
		    (v & VERSYM_HIDDEN))
			continue;
		return s.st_value;
	}
	return 0;
}

/*
 * The lowest PT_LOAD address (the load bias is the mapping start minus
 * it) and libc's __restore_rt, found by its code in an executable segment:
 * it is not exported, and it is how a timed-out thread gets back (abandon).
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

/* dlopen, dlerror and __restore_rt at their addresses in the target. */
static int resolve_libc(struct target *t, char *msg, size_t len)
{
	int fd = open(t->libc, O_RDONLY | O_CLOEXEC);
	uint64_t lowest, restore_rt, bias, o, r;
	Elf *e;
	int rc = -1;

	if (fd < 0)
		return fail(msg, len, "cannot open PID %d's libc %s: %s",
			    (int)t->pid, t->libc, strerror(errno));
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e != NULL && scan_segments(e, &lowest, &restore_rt) == 0) {
		bias = t->libc_start - (lowest & ~0xfffULL);
		o = dynsym_value(e, "dlopen");
		r = dynsym_value(e, "dlerror");
		if (o != 0 && r != 0 && restore_rt != 0) {
			t->dlopen = bias + o;
			t->dlerror = bias + r;
			t->restore_rt = bias + restore_rt;
			rc = 0;
		}
	}
	elf_end(e);
	close(fd);
	if (rc < 0)
		fail(msg, len, "cannot find dlopen, dlerror and __restore_rt "
		     "in PID %d's libc %s (glibc older than 2.34?)",
		     (int)t->pid, t->libc);
	return rc;
}

/* An open file that is not a regular file (or cannot be looked at). */
static bool fd_is_file(pid_t pid, uint64_t fd)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, (int)fd);
	return fd > INT_MAX || stat(path, &st) < 0 || S_ISREG(st.st_mode);
}

/*
 * How safe it is to borrow a thread parked in system call nr: 3 best,
 * 1 last resort, 0 never. The loader and malloc never wait in these calls,
 * so a thread parked in one holds none of their locks; dlopen in it cannot
 * deadlock on itself. Exceptions: the loader reads libraries with read(),
 * so a read of a regular file does not count; futex waits of
 * pthread_cond_wait, pthread_join and semaphores (FUTEX_WAIT_BITSET) are
 * fine; plain FUTEX_WAIT is also how glibc's internal locks wait, so only
 * as a last resort.
 */
static int syscall_rank(pid_t pid, long nr, const uint64_t a[6])
{
	static const long safe[] = {
		SYS_poll, SYS_ppoll, SYS_select, SYS_pselect6, SYS_epoll_wait,
		SYS_epoll_pwait, SYS_epoll_pwait2, SYS_nanosleep,
		SYS_clock_nanosleep, SYS_read, SYS_recvfrom, SYS_recvmsg,
		SYS_recvmmsg, SYS_accept, SYS_accept4, SYS_wait4, SYS_waitid,
		SYS_pause, SYS_rt_sigsuspend, SYS_rt_sigtimedwait,
	};

	if (nr == SYS_futex)
		return (a[1] & FUTEX_CMD_MASK) == FUTEX_WAIT_BITSET ? 2 : 1;
	if (nr == SYS_read && fd_is_file(pid, a[0]))
		return 0;
	for (size_t i = 0; i < sizeof(safe) / sizeof(safe[0]); i++)
		if (safe[i] == nr)
			return 3;
	return 0;
}

/*
 * A thread's rank from /proc (see syscall_rank). Our calls end in a
 * SIGSEGV; when SIGSEGV is blocked the kernel resets its handler to the
 * default, so a thread blocking it is never borrowed when the process
 * handles SIGSEGV.
 */
static int thread_rank(const struct target *t, pid_t tid)
{
	char path[80], text[8192];
	uint64_t a[6];
	long nr;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)t->pid,
		 (int)tid);
	if (slurp(path, text, sizeof(text)) < 0 ||
	    sscanf(text, "%ld %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64
		   " %" SCNx64 " %" SCNx64, &nr, &a[0], &a[1], &a[2], &a[3],
		   &a[4], &a[5]) != 7)
		return 0;	/* "running", or not in a system call */
	if (inject_only_syscall >= 0 && nr != inject_only_syscall)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)t->pid,
		 (int)tid);
	if (t->segv_handled &&
	    (slurp(path, text, sizeof(text)) < 0 ||
	     mask_has_segv(text, "SigBlk")))
		return 0;
	return syscall_rank(t->pid, nr, a);
}

static bool skipped(pid_t tid, const pid_t *skip, int n)
{
	for (int i = 0; i < n; i++)
		if (skip[i] == tid)
			return true;
	return false;
}

/* The safest thread to borrow, rescanning a while for a best one; 0: none. */
static pid_t pick_thread(const struct target *t, const pid_t *skip,
			 int nskip, int *rank)
{
	int64_t deadline = now_ms() + PICK_RETRY_MS;
	char path[64];
	pid_t best = 0;

	*rank = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pid);
	for (;;) {
		DIR *d = opendir(path);
		struct dirent *e;

		if (d == NULL)
			return 0;
		while ((e = readdir(d)) != NULL) {
			pid_t tid = (pid_t)atoi(e->d_name);
			int r;

			if (tid <= 0 || skipped(tid, skip, nskip))
				continue;
			r = thread_rank(t, tid);
			if (r > *rank) {
				*rank = r;
				best = tid;
			}
		}
		closedir(d);
		if (*rank == 3 || now_ms() >= deadline)
			return best;
		usleep(20000);
	}
}

/* Wait for tid to stop or go: 1, 0 at the deadline, -1 when gone. */
static int wait_tid(pid_t tid, int *status, int64_t deadline)
{
	useconds_t nap = 20;

	for (;;) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);

		if (r == tid)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1;
		if (now_ms() >= deadline)
			return 0;
		usleep(nap);
		if (nap < 2000)
			nap *= 2;
	}
}

/* The next stop of the borrowed thread; *ret is rax when it returned. */
static enum stop next_stop(struct borrow *b, int64_t deadline, int *sig,
			   uint64_t *ret)
{
	struct user_regs_struct r;
	int st, w = wait_tid(b->tid, &st, deadline);

	if (w == 0)
		return STOP_TIMEOUT;
	if (w < 0 || !WIFSTOPPED(st))
		return STOP_GONE;
	*sig = WSTOPSIG(st);
	if (st >> 16 == PTRACE_EVENT_STOP)
		return STOP_EVENT;
	if (st >> 16 != 0) {
		*sig = 0;	/* an event we did not ask for */
		return STOP_SIGNAL;
	}
	if (*sig == SIGSEGV && ptrace(PTRACE_GETREGS, b->tid, 0, &r) == 0 &&
	    r.rip == FAKE_RETURN && r.rsp == b->slot + 8) {
		*ret = r.rax;
		return STOP_RETURNED;
	}
	return STOP_SIGNAL;
}

/* Bytes of stack below rsp in its mapping (the main stack grows). */
struct room { uint64_t rsp, bytes; };

static void note_room(const struct mapping *m, void *ctx)
{
	struct room *r = ctx;

	if (r->rsp >= m->start && r->rsp < m->end)
		r->bytes = strcmp(m->path, "[stack]") == 0 ? UINT64_MAX
							   : r->rsp - m->start;
}

/*
 * Seize tid and stop it where it is. 0 when it is parked as safely as
 * rank promised, RETRY when it moved on or left, -1 with msg.
 */
static int borrow_thread(struct job *j, struct borrow *b, int rank)
{
	const struct target *t = j->t;
	int64_t deadline = now_ms() + stop_timeout_ms;
	struct room room = { 0, 0 };
	uint64_t a[6], unused;
	int sig = 0;

	if (ptrace(PTRACE_SEIZE, b->tid, 0, 0) < 0) {
		if (errno == EPERM && check_status(j->t, j->msg, j->len) < 0)
			return -1;	/* traced by someone since */
		if (errno == EPERM)
			return not_permitted(t, j->msg, j->len);
		return process_alive(t->pid) ? RETRY : exited(t, j->msg, j->len);
	}
	if (ptrace(PTRACE_INTERRUPT, b->tid, 0, 0) < 0)
		return process_alive(t->pid) ? RETRY : exited(t, j->msg, j->len);
	for (;;) {
		switch (next_stop(b, deadline, &sig, &unused)) {
		case STOP_TIMEOUT:
			/* Stuck in an uninterruptible sleep: a tracee can
			 * only be detached when stopped, so our thread's
			 * exit will let go of it. */
			return fail(j->msg, j->len, "timed out waiting for thread "
				    "%d of PID %d to stop", (int)b->tid,
				    (int)t->pid);
		case STOP_GONE:
			return process_alive(t->pid) ? RETRY
						     : exited(t, j->msg, j->len);
		case STOP_EVENT:
			if (sig == SIGTRAP)
				goto stopped;
			ptrace(PTRACE_DETACH, b->tid, 0, 0);
			return fail(j->msg, j->len, "PID %d was stopped during "
				    "attach", (int)t->pid);
		case STOP_RETURNED:
		case STOP_SIGNAL:	/* a signal came first: deliver it */
			ptrace(PTRACE_CONT, b->tid, 0, sig);
			break;
		}
	}
stopped:
	if (ptrace(PTRACE_GETREGS, b->tid, 0, &b->regs) < 0)
		return exited(t, j->msg, j->len);
	a[0] = b->regs.rdi, a[1] = b->regs.rsi, a[2] = b->regs.rdx;
	a[3] = b->regs.r10, a[4] = b->regs.r8, a[5] = b->regs.r9;
	room.rsp = b->regs.rsp;
	maps_each(t->pid, note_room, &room);
	if ((long)b->regs.orig_rax < 0 || room.bytes < MIN_STACK_ROOM ||
	    syscall_rank(t->pid, (long)b->regs.orig_rax, a) < rank ||
	    (inject_only_syscall >= 0 &&
	     (long)b->regs.orig_rax != inject_only_syscall)) {
		ptrace(PTRACE_DETACH, b->tid, 0, 0);	/* nothing changed */
		return RETRY;
	}
	return 0;
}

/* Save the FP/SSE/AVX state as a whole, and the legacy part for abandon. */
static int save_fpu(struct borrow *b)
{
	b->xstate_type = NT_X86_XSTATE;
	if (ptrace(PTRACE_GETREGSET, b->tid, (void *)(uintptr_t)NT_X86_XSTATE,
		   &b->xstate) < 0) {
		b->xstate_type = NT_PRFPREG;
		b->xstate.iov_len = sizeof(b->fp);
		if (ptrace(PTRACE_GETREGSET, b->tid, (void *)(uintptr_t)NT_PRFPREG,
			   &b->xstate) < 0)
			return -1;
	}
	return ptrace(PTRACE_GETFPREGS, b->tid, 0, &b->fp) < 0 ? -1 : 0;
}

static int put(const struct borrow *b, uint64_t addr, const void *buf,
	       size_t n)
{
	return pwrite(b->mem, buf, n, (off_t)addr) == (ssize_t)n ? 0 : -1;
}

/*
 * The registers rt_sigreturn gives the thread if it has to get back on
 * its own: those it was interrupted with, its system call restarted as
 * the kernel would after a signal without handler (a nanosleep cannot be
 * restarted after sigreturn and returns EINTR).
 */
static void fill_ucontext(ucontext_t *c, const struct user_regs_struct *r,
			  uint64_t fx)
{
	greg_t *g = c->uc_mcontext.gregs;
	long rax = (long)r->rax;

	memset(c, 0, sizeof(*c));
	/* An invalid mode: rt_sigreturn then leaves the altstack alone. */
	c->uc_stack.ss_flags = SS_ONSTACK | SS_DISABLE;
	g[REG_R8] = (greg_t)r->r8, g[REG_R9] = (greg_t)r->r9;
	g[REG_R10] = (greg_t)r->r10, g[REG_R11] = (greg_t)r->r11;
	g[REG_R12] = (greg_t)r->r12, g[REG_R13] = (greg_t)r->r13;
	g[REG_R14] = (greg_t)r->r14, g[REG_R15] = (greg_t)r->r15;
	g[REG_RDI] = (greg_t)r->rdi, g[REG_RSI] = (greg_t)r->rsi;
	g[REG_RBP] = (greg_t)r->rbp, g[REG_RBX] = (greg_t)r->rbx;
	g[REG_RDX] = (greg_t)r->rdx, g[REG_RAX] = (greg_t)r->rax;
	g[REG_RCX] = (greg_t)r->rcx, g[REG_RSP] = (greg_t)r->rsp;
	g[REG_RIP] = (greg_t)r->rip, g[REG_EFL] = (greg_t)r->eflags;
	g[REG_CSGSFS] = (greg_t)((r->cs & 0xffff) | (r->gs & 0xffff) << 16 |
				 (r->fs & 0xffff) << 32 | (r->ss & 0xffff) << 48);
	if (rax == -ERESTARTSYS || rax == -ERESTARTNOINTR ||
	    rax == -ERESTARTNOHAND) {
		g[REG_RAX] = (greg_t)r->orig_rax;
		g[REG_RIP] = (greg_t)(r->rip - 2);	/* back onto syscall */
	} else if (rax == -ERESTART_RESTARTBLOCK) {
		g[REG_RAX] = -EINTR;
	}
	c->uc_mcontext.fpregs = (fpregset_t)(uintptr_t)fx;
}

/*
 * Below the red zone, keeping the SysV alignment: the library path, a
 * signal frame (FP state and ucontext) that abandon() can point the thread
 * at, and the return slot of our calls, where the kernel expects the
 * frame's return address.
 */
static int build_frame(const struct target *t, struct borrow *b)
{
	uint64_t top = (b->regs.rsp - RED_ZONE) & ~15ULL, fx, uc;
	size_t n = strlen(t->lib) + 1;
	struct user_fpregs_struct fp = b->fp;
	ucontext_t c;

	b->path = (top - n) & ~15ULL;
	fx = (b->path - sizeof(fp)) & ~63ULL;
	uc = (fx - sizeof(c)) & ~15ULL;
	b->slot = uc - 8;
	/* No xsave magic: rt_sigreturn restores the legacy (fxsave) part. */
	memset((char *)&fp + 464, 0, sizeof(fp) - 464);
	fill_ucontext(&c, &b->regs, fx);
	return put(b, b->path, t->lib, n) < 0 || put(b, fx, &fp, sizeof(fp)) < 0 ||
	       put(b, uc, &c, sizeof(c)) < 0 ? -1 : 0;
}

/*
 * The call did not return in time: the thread may wait for a lock inside
 * dlopen (the loader lock, say). Restoring its registers now would leave
 * that dlopen half done, holding the loader lock: the process deadlocks
 * later. Detaching as is would crash it when dlopen returns to the fake
 * address. So the return slot now points at libc's __restore_rt above the
 * signal frame built with the call: whenever dlopen returns, rt_sigreturn
 * puts back the thread's registers, signal mask and FP/SSE state, and it
 * returns to its system call (restarted, or EINTR). Then we let go.
 */
static enum call_result abandon(const struct target *t, struct borrow *b,
				uint64_t *ret)
{
	int64_t deadline = now_ms() + release_timeout_ms;
	char path[80], text[8192], v[32];
	uint64_t back = t->restore_rt, mask = 0;
	int sig = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)t->pid,
		 (int)b->tid);
	if (slurp(path, text, sizeof(text)) > 0 &&
	    field(text, "SigBlk", v, sizeof(v)))
		mask = strtoull(v, NULL, 16);
	if (put(b, b->slot + 8 + offsetof(ucontext_t, uc_sigmask), &mask,
		sizeof(mask)) < 0 ||
	    put(b, b->slot, &back, sizeof(back)) < 0 ||
	    ptrace(PTRACE_INTERRUPT, b->tid, 0, 0) < 0)
		return CALL_EXITED;
	switch (next_stop(b, deadline, &sig, ret)) {
	case STOP_RETURNED:
		return CALL_DONE;	/* it returned just before the switch */
	case STOP_GONE:
		return CALL_EXITED;
	case STOP_TIMEOUT:
		return CALL_ABANDONED;	/* our thread's exit detaches it */
	case STOP_EVENT:
		sig = 0;
		break;
	case STOP_SIGNAL:
		break;
	}
	ptrace(PTRACE_DETACH, b->tid, 0, sig);
	return CALL_ABANDONED;
}

/* Run fn(a0, a1) on the borrowed thread; *ret is what it returned. */
static enum call_result call(const struct target *t, struct borrow *b,
			     uint64_t fn, uint64_t a0, uint64_t a1,
			     uint64_t *ret)
{
	int64_t deadline = now_ms() + call_timeout_ms;
	struct user_regs_struct r = b->regs;
	uint64_t fake = FAKE_RETURN;
	int sig = 0;

	r.rip = fn, r.rdi = a0, r.rsi = a1, r.rax = 0, r.rsp = b->slot;
	/* Not in a system call any more: else the kernel "restarts" it at
	 * fn - 2 when we continue (SIGILL, reproduced). */
	r.orig_rax = (unsigned long long)-1;
	if (put(b, b->slot, &fake, sizeof(fake)) < 0 ||
	    ptrace(PTRACE_SETREGS, b->tid, 0, &r) < 0 ||
	    ptrace(PTRACE_CONT, b->tid, 0, 0) < 0)
		return CALL_EXITED;
	for (;;) {
		switch (next_stop(b, deadline, &sig, ret)) {
		case STOP_RETURNED:
			return CALL_DONE;
		case STOP_GONE:
			return CALL_EXITED;
		case STOP_TIMEOUT:
			return abandon(t, b, ret);
		case STOP_EVENT:
			/* Someone stops the process: the thread must still
			 * finish (it may hold the loader lock); it stops
			 * with the others when we detach. */
			sig = 0;
			break;
		case STOP_SIGNAL:
			/* Cancellation would unwind dlopen halfway (the
			 * thread was in a cancellable call): hold it. */
			if (sig == SIGCANCEL) {
				b->deferred = sig;
				sig = 0;
			}
			break;
		}
		if (ptrace(PTRACE_CONT, b->tid, 0, sig) < 0)
			return CALL_EXITED;
	}
}

/* Registers and FP state as interrupted, then let go: the system call
 * restarts (or returns EINTR where the kernel never restarts it). */
static void put_back(struct borrow *b)
{
	uint64_t mask;

	ptrace(PTRACE_SETREGSET, b->tid, (void *)(uintptr_t)b->xstate_type,
	       &b->xstate);
	ptrace(PTRACE_SETREGS, b->tid, 0, &b->regs);
	/* The fault unblocked SIGSEGV (its handler is the default). */
	if (b->segv_blocked &&
	    ptrace(PTRACE_GETSIGMASK, b->tid, (void *)sizeof(mask), &mask) == 0) {
		mask |= SIGSEGV_BIT;
		ptrace(PTRACE_SETSIGMASK, b->tid, (void *)sizeof(mask), &mask);
	}
	ptrace(PTRACE_DETACH, b->tid, 0, b->deferred);
}

/* The C string at addr in the target. */
static void read_string(const struct borrow *b, uint64_t addr, char *out,
			size_t n)
{
	ssize_t got = addr ? pread(b->mem, out, n - 1, (off_t)addr) : -1;

	out[got > 0 ? got : 0] = '\0';
	if (got <= 0)
		snprintf(out, n, "(no error text)");
}

/* dlopen in the borrowed thread, dlerror if it fails, then put it back. */
static int load(struct job *j, struct borrow *b)
{
	const struct target *t = j->t;
	uint64_t handle = 0, text = 0, mask = 0;
	enum call_result rc;
	char why[512];

	if (ptrace(PTRACE_GETSIGMASK, b->tid, (void *)sizeof(mask), &mask) < 0 ||
	    save_fpu(b) < 0 || build_frame(t, b) < 0) {
		ptrace(PTRACE_DETACH, b->tid, 0, 0);	/* nothing changed */
		return fail(j->msg, j->len, "cannot prepare thread %d of PID "
			    "%d: %s", (int)b->tid, (int)t->pid, strerror(errno));
	}
	b->segv_blocked = mask & SIGSEGV_BIT;
	inject_last_tid = b->tid;
	inject_last_syscall = (long)b->regs.orig_rax;
	rc = call(t, b, t->dlopen, b->path, RTLD_NOW_FLAG, &handle);
	if (rc == CALL_DONE && handle == 0)
		rc = call(t, b, t->dlerror, 0, 0, &text);
	if (rc == CALL_EXITED)
		return exited(t, j->msg, j->len);
	if (rc == CALL_ABANDONED)
		return fail(j->msg, j->len, "timed out waiting for a thread to "
			    "return from dlopen in PID %d (it resumes by itself "
			    "when dlopen returns)", (int)t->pid);
	if (handle == 0)
		read_string(b, text, why, sizeof(why));
	put_back(b);
	if (handle == 0)
		return fail(j->msg, j->len, "dlopen failed in PID %d: %s",
			    (int)t->pid, why);
	return INJECT_LOADED;
}

/* Borrow the safest thread that stays put, and load the library. */
static int borrow_and_load(struct job *j)
{
	pid_t skip[MAX_ATTEMPTS];

	for (int i = 0; i < MAX_ATTEMPTS; i++) {
		struct borrow b = { .xstate = { j->xstate, XSTATE_MAX } };
		char path[64];
		int rank, rc;

		b.tid = pick_thread(j->t, skip, i, &rank);
		if (b.tid == 0)
			return fail(j->msg, j->len, "no thread of PID %d waits "
				    "in a system call where it is safe to borrow "
				    "(all run or are in unknown calls): try "
				    "again when it is less busy", (int)j->t->pid);
		rc = borrow_thread(j, &b, rank);
		skip[i] = b.tid;
		if (rc == RETRY)
			continue;
		if (rc < 0)
			return rc;
		snprintf(path, sizeof(path), "/proc/%d/mem", (int)j->t->pid);
		b.mem = open(path, O_RDWR | O_CLOEXEC);
		if (b.mem < 0) {
			ptrace(PTRACE_DETACH, b.tid, 0, 0);
			return fail(j->msg, j->len, "cannot open %s: %s", path,
				    strerror(errno));
		}
		rc = load(j, &b);
		close(b.mem);
		return rc;
	}
	return fail(j->msg, j->len, "the threads of PID %d kept leaving their "
		    "system calls while being stopped: try again",
		    (int)j->t->pid);
}

static void *inject_thread(void *arg)
{
	struct job *j = arg;
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	j->result = borrow_and_load(j);
	return NULL;
}

/*
 * Run the ptrace part on its own thread, holding the signals that would
 * end qsptop: dying halfway would leave the target's thread at our fake
 * return address.
 */
static int run_job(struct job *j)
{
	sigset_t hold, old;
	pthread_t thread;
	int rc;

	sigemptyset(&hold);
	sigaddset(&hold, SIGINT);
	sigaddset(&hold, SIGTERM);
	sigaddset(&hold, SIGHUP);
	sigaddset(&hold, SIGQUIT);
	sigaddset(&hold, SIGTSTP);
	pthread_sigmask(SIG_BLOCK, &hold, &old);
	rc = pthread_create(&thread, NULL, inject_thread, j);
	if (rc == 0)
		pthread_join(thread, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return fail(j->msg, j->len, "cannot start a thread: %s",
			    strerror(rc));
	return j->result;
}

int inject_collector(pid_t pid, const char *lib_path, char *msg, size_t len)
{
	struct target t = { .pid = pid };
	struct job *j;
	int rc;

	msg[0] = '\0';
	if (pid == getpid())
		return fail(msg, len, "cannot attach qsptop to itself");
	if (check_status(&t, msg, len) < 0 || check_exe(&t, msg, len) < 0 ||
	    check_lib(&t, lib_path, msg, len) < 0 ||
	    check_maps(&t, msg, len) < 0)
		return INJECT_FAILED;
	if (t.already) {
		snprintf(msg, len, "%s", t.warning);
		return INJECT_ALREADY;
	}
	if (resolve_libc(&t, msg, len) < 0)
		return INJECT_FAILED;
	j = calloc(1, sizeof(*j));
	if (j == NULL)
		return fail(msg, len, "out of memory");
	j->t = &t;
	j->msg = msg;
	j->len = len;
	rc = run_job(j);
	free(j);
	if (rc == INJECT_LOADED)
		snprintf(msg, len, "%s", t.warning);
	return rc < 0 ? INJECT_FAILED : rc;
}
