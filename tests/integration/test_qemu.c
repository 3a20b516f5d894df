/*
 * qsptop side by side with QEMU's own sync-profiler (QSP, util/qsp.c).
 *
 * QEMU runs a firmware of our making (a 64 KiB -bios image whose vCPU loops
 * on port I/O: every access takes the BQL, the PIT writes arm a timer) with
 * QSP on. `qsptop -p` attaches; QSP is reset while the guest is paused; the
 * guest runs; it is paused again, qsptop takes two more updates and stops,
 * and `info sync-profile` is read. The guest makes its lock traffic only
 * while both windows are open, so the two counts of a call site can be
 * compared exactly.
 *
 * QSP names a site by the __FILE__:__LINE__ that the lock macro passes to
 * the lock function; qsptop by the return address into the caller. The
 * test reads the file and line back from the caller's code (objdump: the
 * immediate loaded into the line argument's register, the string the file
 * argument's register points at) and adds up qsptop's rows by them. On
 * every QSP mutex site the two counts must be equal, and there must be 3
 * sites with 500 acquisitions or more, 2 of them the BQL's (else the guest
 * did not run). The table goes to stderr.
 *
 * The one exception is inherent: a lock call made as a tail call
 * (pause_all_vcpus() ends in a jump to the BQL's lock) returns into the
 * caller's caller, so qsptop counts it there, on a call that passes no
 * file and line: that row matches no QSP site, and QSP's site of the call
 * gets no qsptop row. Such sites are skipped, and the acquisitions of the
 * rows matching no site must equal, exactly, the sum of theirs (a stop
 * takes one).
 *
 * QSP's own wrappers (qsp_mutex_lock ...) are static: in a stripped QEMU
 * (Debian's) they have no name, so they are given to qsptop as
 * MODULE+0xOFFSET, read from the addresses qsp_enable() stores.
 *
 * Skipped, saying why, without qemu-system-x86_64, objdump or nm, or when
 * this QEMU has no QSP or does not export qsp_enable. No KVM is needed: TCG.
 */
#include <cJSON.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../unit/check.h"
#include "harness.h"

enum {
	QEMU_START_MS = 10000,	/* until the QMP socket answers */
	QMP_REPLY_MS = 10000,	/* one QMP command */
	ATTACH_MS = 30000,	/* qsptop -p until its first table */
	GUEST_RUN_MS = 3000,	/* how long the guest runs */
	TABLES_MS = 10000,	/* qsptop's two updates after the pause */
	QSPTOP_EXIT_MS = 10000,
	TOOL_MS = 20000,	/* one objdump or nm */
	WATCHDOG_S = 100,	/* the whole test, whatever hangs */
	MIN_COUNT = 500,	/* QSP's sites with this many are compared */
	MIN_SITES = 3,		/* fewer compared means the guest idled */
	MIN_BQL_SITES = 2,	/* the BQL from several call sites */
	MAX_INSNS = 4096,	/* a lock-calling function's code, disassembled */
	MAX_WRAPPERS = 16,
	MAX_SITES = 128,
};

/* The processes started, 0 once reaped: the watchdog ends them. */
static pid_t qemu_pid, qsptop_pid, tool_pid;

/* Whether *pid has ended (then reaped, *pid 0, its status in *status). */
static bool ended(pid_t *pid, int *status)
{
	int st;

	if (*pid <= 0 || waitpid(*pid, &st, WNOHANG) == 0)
		return *pid <= 0;
	*pid = 0;
	if (status)
		*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return true;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Kill and reap, from the watchdog too: both calls are async-signal-safe. */
static void end_now(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

/* Whatever hangs past the deadlines: end what we started, and fail. */
static void watchdog(int sig)
{
	static const char msg[] = "FAIL test_qemu: watchdog expired\n0 passed, 1 failed\n";

	(void)sig;
	end_now(tool_pid);
	end_now(qsptop_pid);
	end_now(qemu_pid);
	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

/* The full path of an executable found in PATH, or false. */
static bool in_path(const char *name, char *out)
{
	const char *path = getenv("PATH");
	char dir[PATH_MAX];

	while (path && *path) {
		size_t n = strcspn(path, ":");

		if (n > 0 && n < sizeof(dir) - strlen(name) - 2) {
			memcpy(dir, path, n);
			snprintf(dir + n, sizeof(dir) - n, "/%s", name);
			if (access(dir, X_OK) == 0 && realpath(dir, out) != NULL)
				return true;
		}
		path += n + (path[n] == ':');
	}
	return false;
}

/* ---- the firmware ---- */

/*
 * 64 KiB of BIOS: the reset vector (F000:FFF0) jumps to F000:0000, which
 * sets PIT channel 0 to mode 2 and loops: out 0x80 (POST port); two writes
 * of channel 0's count (each load re-arms the PIT's timer); in 0x71 (RTC).
 */
static bool write_bios(const char *path)
{
	static const unsigned char code[] = {
		0xb0, 0x34, 0xe6, 0x43,		/* mov al,0x34; out 0x43,al */
		0xe6, 0x80,			/* loop: out 0x80,al */
		0xb0, 0xff, 0xe6, 0x40,		/* mov al,0xff; out 0x40,al */
		0xe6, 0x40,			/* out 0x40,al */
		0xe4, 0x71,			/* in al,0x71 */
		0xeb, 0xf4,			/* jmp loop */
	};
	static const unsigned char reset[] = { 0xea, 0x00, 0x00, 0x00, 0xf0 };
	static unsigned char image[65536];
	FILE *f = fopen(path, "wb");
	bool ok;

	memset(image, 0xf4, sizeof(image));	/* hlt */
	memcpy(image, code, sizeof(code));
	memcpy(image + 0xfff0, reset, sizeof(reset));
	if (f == NULL)
		return false;
	ok = fwrite(image, 1, sizeof(image), f) == sizeof(image);
	return fclose(f) == 0 && ok;
}

/* ---- QMP ---- */

struct qmp {
	int fd;
	char buf[1 << 16];
	size_t len;
};

static bool qmp_connect(struct qmp *q, const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	long deadline = monotonic_ms() + QEMU_START_MS;

	if (strlen(path) >= sizeof(a.sun_path))
		return false;
	memcpy(a.sun_path, path, strlen(path) + 1);
	q->len = 0;
	while (monotonic_ms() < deadline) {
		q->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (q->fd >= 0 && connect(q->fd, (struct sockaddr *)&a, sizeof(a)) == 0)
			return true;
		if (q->fd >= 0)
			close(q->fd);
		q->fd = -1;
		if (ended(&qemu_pid, NULL))
			return false;
		sleep_ms(20);
	}
	return false;
}

/* The next JSON line that is no event, parsed; NULL past the deadline. */
static cJSON *qmp_read(struct qmp *q)
{
	long deadline = monotonic_ms() + QMP_REPLY_MS;

	for (;;) {
		char *nl = memchr(q->buf, '\n', q->len);

		if (nl) {
			cJSON *j;

			*nl = '\0';
			j = cJSON_Parse(q->buf);
			q->len -= (size_t)(nl + 1 - q->buf);
			memmove(q->buf, nl + 1, q->len);
			if (j && cJSON_GetObjectItem(j, "event") == NULL)
				return j;
			cJSON_Delete(j);
			continue;
		}
		long left = deadline - monotonic_ms();
		struct pollfd p = { q->fd, POLLIN, 0 };
		ssize_t n;

		if (left <= 0 || q->len + 1 >= sizeof(q->buf) ||
		    poll(&p, 1, (int)left) <= 0)
			return NULL;
		n = read(q->fd, q->buf + q->len, sizeof(q->buf) - 1 - q->len);
		if (n <= 0)
			return NULL;
		q->len += (size_t)n;
	}
}

/* Run a QMP command; its reply, or NULL. */
static cJSON *qmp_cmd(struct qmp *q, const char *execute, cJSON *args)
{
	cJSON *c = cJSON_CreateObject();
	char *text;
	bool sent;

	cJSON_AddStringToObject(c, "execute", execute);
	if (args)
		cJSON_AddItemToObject(c, "arguments", args);
	text = cJSON_PrintUnformatted(c);
	cJSON_Delete(c);
	sent = text && write(q->fd, text, strlen(text)) == (ssize_t)strlen(text) &&
	       write(q->fd, "\n", 1) == 1;
	free(text);
	return sent ? qmp_read(q) : NULL;
}

/* Whether a QMP command succeeded. */
static bool qmp_ok(struct qmp *q, const char *execute)
{
	cJSON *r = qmp_cmd(q, execute, NULL);
	bool ok = r && cJSON_GetObjectItem(r, "return") != NULL;

	cJSON_Delete(r);
	return ok;
}

/* An HMP command through QMP; what it printed (malloc'ed), or NULL. */
static char *hmp(struct qmp *q, const char *line)
{
	cJSON *args = cJSON_CreateObject(), *r;
	const cJSON *ret;
	char *out = NULL;

	cJSON_AddStringToObject(args, "command-line", line);
	r = qmp_cmd(q, "human-monitor-command", args);
	ret = r ? cJSON_GetObjectItem(r, "return") : NULL;
	if (cJSON_IsString(ret))
		out = strdup(ret->valuestring);
	cJSON_Delete(r);
	return out;
}

/* ---- QSP's report ---- */

struct qsp_site {
	char type[16];		/* "mutex", "BQL mutex", "rec_mutex", "condvar" */
	char at[256];		/* file:line, shortened by QSP */
	unsigned long long count;
	double qsptop;		/* qsptop's acquisitions at the same file:line */
	char rows[512];		/* qsptop's rows there */
};

/*
 * "BQL mutex  0x55cad0939b40  util/main-loop.c:318  0.00007  23  3.12" or
 * "mutex      [           2]  util/qemu-timer.c:547 ...", one per line.
 */
static int parse_qsp(const char *report, struct qsp_site *s, int max)
{
	int n = 0;

	for (const char *line = report; line && *line && n < max;) {
		const char *end = strchr(line, '\n'), *p = line;
		char buf[512];
		size_t len = end ? (size_t)(end - line) : strlen(line);
		double secs;

		if (len >= sizeof(buf))
			len = sizeof(buf) - 1;
		memcpy(buf, line, len);
		buf[len] = '\0';
		line = end ? end + 1 : NULL;
		p = buf;
		if (strncmp(p, "BQL mutex ", 10) == 0) {
			strcpy(s[n].type, "BQL mutex");
			p += 10;
		} else if (sscanf(p, "%15s", s[n].type) == 1 &&
			   (strcmp(s[n].type, "mutex") == 0 ||
			    strcmp(s[n].type, "rec_mutex") == 0 ||
			    strcmp(s[n].type, "condvar") == 0)) {
			p += strlen(s[n].type);
		} else {
			continue;
		}
		p += strspn(p, " ");
		p = *p == '[' ? strchr(p, ']') : p + strcspn(p, " ");
		if (p == NULL)
			continue;
		p += *p == ']';
		if (sscanf(p, "%255s %lf %llu", s[n].at, &secs, &s[n].count) == 3) {
			s[n].qsptop = 0;
			s[n].rows[0] = '\0';
			n++;
		}
	}
	return n;
}

static bool is_condvar(const struct qsp_site *s)
{
	return strcmp(s->type, "condvar") == 0;
}

/* QSP sorts by wait: its mutex sites by count instead, condvars last. */
static int by_count(const void *pa, const void *pb)
{
	const struct qsp_site *a = pa, *b = pb;

	if (is_condvar(a) != is_condvar(b))
		return is_condvar(a) ? 1 : -1;
	return a->count < b->count ? 1 : a->count > b->count ? -1 : 0;
}

/* ---- the target's modules ---- */

struct module {
	char path[PATH_MAX];
	uint64_t start, end, bias;
};

/* The load bias of an ELF file mapped at base (its offset-0 mapping). */
static uint64_t elf_bias(const char *path, uint64_t base)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	uint64_t low = UINT64_MAX;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return base;
	if (pread(fd, &eh, sizeof(eh), 0) == sizeof(eh))
		for (int i = 0; i < eh.e_phnum; i++)
			if (pread(fd, &ph, sizeof(ph),
				  (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) ==
				    sizeof(ph) &&
			    ph.p_type == PT_LOAD && ph.p_vaddr < low)
				low = ph.p_vaddr;
	close(fd);
	return low == UINT64_MAX ? base : base - (low & ~(uint64_t)0xfff);
}

/* The file-backed executable code of pid: a module per path. */
static int read_modules(pid_t pid, struct module *m, int max)
{
	char path[64], line[PATH_MAX + 128];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char perms[8], file[PATH_MAX];
		int i;

		file[0] = '\0';
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &lo, &hi, perms,
			   &off, file) < 4 || file[0] != '/')
			continue;
		for (i = 0; i < n && strcmp(m[i].path, file) != 0; i++)
			;
		if (i == n) {
			if (n == max)
				continue;
			snprintf(m[n].path, sizeof(m[n].path), "%s", file);
			m[n].start = lo;
			m[n].end = hi;
			m[n].bias = 0;
			n++;
		}
		if (lo < m[i].start)
			m[i].start = lo;
		if (hi > m[i].end)
			m[i].end = hi;
		if (off == 0 && m[i].bias == 0)
			m[i].bias = elf_bias(file, lo);
	}
	if (f)
		fclose(f);
	return n;
}

static const struct module *module_at(const struct module *m, int n, uint64_t a)
{
	for (int i = 0; i < n; i++)
		if (a >= m[i].start && a < m[i].end)
			return &m[i];
	return NULL;
}

/* A NUL-terminated string of pid's memory at a, or false. */
static bool read_string(pid_t pid, uint64_t a, char *out, size_t size)
{
	char path[64];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = pread(fd, out, size - 1, (off_t)a);
	close(fd);
	if (n <= 0)
		return false;
	out[n] = '\0';
	return strlen(out) > 0 && strlen(out) < (size_t)n;
}

/* ---- reading code with objdump ---- */

/* Run objdump or nm: what it printed, or NULL. Its pid is kept for the watchdog. */
static char *run_tool(char *const argv[])
{
	char *out = tmp_path("tool.out"), *text;
	struct start_opts o = { .out = out, .err = tmp_path("tool.err") };
	int status;

	tool_pid = start_with(argv, &o);
	status = wait_status(tool_pid, TOOL_MS);
	tool_pid = 0;
	text = slurp_file(out, NULL);
	if (status != 0) {
		free(text);
		return NULL;
	}
	return text;
}

struct insn {
	uint64_t at;
	char text[256];		/* "mnemonic operands", the comment cut off */
	uint64_t ref;		/* the address objdump's "# ADDR" comment names */
};

/* Disassemble [lo, hi) of file; the instructions, or -1. */
static int disassemble(const char *file, uint64_t lo, uint64_t hi,
		       struct insn *out, int max)
{
	char start[32], stop[32];
	char *argv[] = { "objdump", "-d", "--no-show-raw-insn", start, stop,
			 (char *)file, NULL };
	char *text;
	int n = 0;

	snprintf(start, sizeof(start), "--start-address=0x%llx", (unsigned long long)lo);
	snprintf(stop, sizeof(stop), "--stop-address=0x%llx", (unsigned long long)hi);
	text = run_tool(argv);
	if (text == NULL)
		return -1;
	for (char *line = text; line && *line && n < max;) {
		char *end = strchr(line, '\n'), *tab, *hash;
		unsigned long long at;

		if (end)
			*end = '\0';
		tab = strchr(line, '\t');
		if (tab && sscanf(line, " %llx:", &at) == 1 && tab[1]) {
			out[n].at = at;
			snprintf(out[n].text, sizeof(out[n].text), "%s", tab + 1);
			hash = strstr(out[n].text, "# ");
			out[n].ref = hash ? strtoull(hash + 2, NULL, 16) : 0;
			if (hash)
				*hash = '\0';
			for (size_t k = strlen(out[n].text);
			     k > 0 && out[n].text[k - 1] == ' '; k--)
				out[n].text[k - 1] = '\0';
			n++;
		}
		line = end ? end + 1 : NULL;
	}
	free(text);
	return n;
}

/* A register's family: "%r12d" -> "r12", "%esi" -> "si", "%al" -> "ax". */
static void reg_family(const char *reg, char *out)
{
	char r[16];
	size_t n;

	snprintf(r, sizeof(r), "%s", reg + (reg[0] == '%'));
	n = strlen(r);
	if (r[0] == 'r' && r[1] >= '0' && r[1] <= '9') {
		while (n > 0 && strchr("dwb", r[n - 1]))
			r[--n] = '\0';
		strcpy(out, r);
		return;
	}
	if (n == 3 && (r[0] == 'r' || r[0] == 'e'))
		memmove(r, r + 1, 3);	/* rsi, esi -> si */
	else if (n == 3 && r[2] == 'l')
		r[2] = '\0';		/* sil -> si */
	else if (n == 2 && (r[1] == 'l' || r[1] == 'h'))
		r[1] = 'x';		/* al -> ax */
	strcpy(out, r);
}

/*
 * The family of the register an instruction writes, or "" (none, or
 * memory). A pop is taken for an epilogue's, of another path: the backward
 * scan is linear, so it passes over the ends of other paths.
 */
static void written_reg(const char *text, char *out)
{
	static const char *const readonly[] = { "cmp", "test", "push", "pop", "j",
						"nop", "bt", "call", "ret", NULL };
	const char *dest = strrchr(text, ',');

	out[0] = '\0';
	for (int i = 0; readonly[i]; i++)
		if (strncmp(text, readonly[i], strlen(readonly[i])) == 0)
			return;
	if (dest == NULL)
		dest = strchr(text, ' ');	/* inc %eax: the only operand */
	if (dest == NULL)
		return;
	dest += strspn(dest, ", ");
	if (dest[0] == '%' && strchr(dest, '(') == NULL)
		reg_family(dest, out);
}

static bool callee_saved(const char *family)
{
	return strcmp(family, "bx") == 0 || strcmp(family, "bp") == 0 ||
	       strcmp(family, "r12") == 0 || strcmp(family, "r13") == 0 ||
	       strcmp(family, "r14") == 0 || strcmp(family, "r15") == 0;
}

/*
 * The file and line the lock call just before ret passes: QEMU's lock
 * macros call qemu_mutex_lock_iothread_impl(file, line), or a function
 * pointer (obj, file, line). Read back from the last writes of those
 * argument registers, following a copy from another register.
 */
static bool call_file_line(const struct insn *in, int n, uint64_t *file,
			   unsigned *line)
{
	const char *call = in[n - 1].text;
	bool bql = strstr(call, "qemu_mutex_lock_iothread_impl") != NULL;
	char fwant[8], lwant[8], w[8];
	bool lfound = false, ffound = false;

	strcpy(fwant, bql ? "di" : "si");
	strcpy(lwant, bql ? "si" : "dx");
	for (int i = n - 2; i >= 0 && !(lfound && ffound); i--) {
		const char *t = in[i].text;
		bool is_call = strncmp(t, "call", 4) == 0;

		if (is_call && (!lfound || !callee_saved(fwant)))
			return false;
		written_reg(t, w);
		if (!lfound && strcmp(w, lwant) == 0) {
			if (strncmp(t, "mov ", 4) != 0 || strstr(t, "$0x") == NULL)
				return false;
			*line = (unsigned)strtoul(strstr(t, "$0x") + 1, NULL, 16);
			lfound = true;
		} else if (!ffound && strcmp(w, fwant) == 0) {
			if (strncmp(t, "lea ", 4) == 0 && strstr(t, "(%rip)") && in[i].ref) {
				*file = in[i].ref;
				ffound = true;
			} else if (strncmp(t, "mov ", 4) == 0 && t[4 + strspn(t + 4, " ")] == '%') {
				const char *src = t + 4 + strspn(t + 4, " ");
				char reg[16];

				snprintf(reg, sizeof(reg), "%.*s", (int)strcspn(src, ","), src);
				reg_family(reg, fwant);
			} else {
				return false;
			}
		}
	}
	return lfound && ffound;
}

/*
 * "file:line" of the lock call returning to the site at vaddr of module m
 * (code from start on, or from some way back when the function is unknown).
 */
static bool site_file_line(pid_t pid, const struct module *m, uint64_t vaddr,
			   uint64_t fn_start, char *out, size_t size)
{
	static struct insn in[MAX_INSNS];

	for (int attempt = 0; attempt < 8; attempt++) {
		uint64_t lo = fn_start ? fn_start : vaddr - 512 - (uint64_t)attempt;
		int n = disassemble(m->path, lo, vaddr + 1, in, MAX_INSNS);
		uint64_t file = 0;
		unsigned line = 0;
		char name[256];

		if (n >= 2 && in[n - 1].at == vaddr &&
		    strncmp(in[n - 2].text, "call", 4) == 0) {
			if (!call_file_line(in, n - 1, &file, &line) ||
			    !read_string(pid, m->bias + file, name, sizeof(name)))
				return false;
			snprintf(out, size, "%s:%u", name, line);
			return true;
		}
		if (fn_start)
			return false;
	}
	return false;
}

/* ---- QSP's wrappers in a stripped QEMU ---- */

/* The address of a dynamic symbol of file, or 0. */
static uint64_t dynamic_symbol(const char *file, const char *name)
{
	char *argv[] = { "nm", "-D", "--defined-only", (char *)file, NULL };
	char *text = run_tool(argv);
	uint64_t found = 0;

	for (char *line = text; line && *line && !found;) {
		char *end = strchr(line, '\n'), kind, sym[256];
		unsigned long long a;

		if (end)
			*end = '\0';
		if (sscanf(line, "%llx %c %255s", &a, &kind, sym) == 3 &&
		    strcmp(sym, name) == 0)
			found = a;
		line = end ? end + 1 : NULL;
	}
	free(text);
	return found;
}

/*
 * qsp_enable() stores each QSP wrapper into a lock function pointer:
 * `lea qsp_mutex_lock(%rip),%rax; mov %rax,qemu_mutex_lock_func(%rip)`.
 * Their offsets, up to its return.
 */
static int qsp_wrappers(const char *file, uint64_t *out, int max)
{
	static struct insn in[64];
	uint64_t enable = dynamic_symbol(file, "qsp_enable");
	int n = enable ? disassemble(file, enable, enable + 0x100, in, 64) : -1, k = 0;

	for (int i = 0; i < n && strncmp(in[i].text, "ret", 3) != 0 && k < max; i++)
		if (strncmp(in[i].text, "lea ", 4) == 0 && strstr(in[i].text, "(%rip)") &&
		    in[i].ref)
			out[k++] = in[i].ref;
	return k;
}

/* ---- the run ---- */

/* How many batch tables qsptop has printed to path. */
static int tables(const char *path)
{
	char *text = slurp_file(path, "");
	int n = strncmp(text, "TYPE", 4) == 0;

	for (const char *p = text; (p = strstr(p, "\nTYPE")) != NULL; p++)
		n++;
	free(text);
	return n;
}

/* Wait until qsptop has printed at least want tables; false past the deadline. */
static bool wait_tables(const char *path, int want, long timeout_ms)
{
	long deadline = monotonic_ms() + timeout_ms;

	while (tables(path) < want) {
		if (monotonic_ms() >= deadline || ended(&qsptop_pid, NULL))
			return false;
		sleep_ms(10);
	}
	return true;
}

/* "symbol+0xoff" or "module+0xoff" of a qsptop row, appended to rows. */
static void add_row_name(struct qsp_site *s, const cJSON *site)
{
	const char *sym = str_field(site, "symbol"), *mod = str_field(site, "module");
	const char *base = mod && strrchr(mod, '/') ? strrchr(mod, '/') + 1 : mod;
	size_t len = strlen(s->rows);
	char name[160];

	snprintf(name, sizeof(name), "%s+0x%llx", sym ? sym : base ? base : "?",
		 (unsigned long long)num_field(site, "offset"));
	if (len + strlen(name) + 3 < sizeof(s->rows))
		snprintf(s->rows + len, sizeof(s->rows) - len, "%s%s",
			 len ? ", " : "", name);
}

/*
 * Whether decoded (a qsptop site's file:line) is QSP's at: QSP cuts as
 * many characters off every __FILE__ as its own has before "util/qsp.c".
 */
static bool same_site(const char *decoded, const char *at)
{
	size_t d = strlen(decoded), a = strlen(at);

	return d >= a && strcmp(decoded + d - a, at) == 0;
}

/* Add qsptop's mutex rows to the QSP sites they match; the unmatched total. */
static double match_rows(const cJSON *snap, struct qsp_site *qs, int nq,
			 double *total)
{
	struct module mods[256];
	int nmods = read_modules(qemu_pid, mods, 256);
	const cJSON *row;
	double unmatched = 0;

	*total = 0;
	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const cJSON *site = cJSON_GetObjectItem(row, "site");
		const char *type = str_field(row, "type"), *addr = str_field(site, "address");
		double acq = num_field(row, "acquisitions"), off = num_field(site, "offset");
		uint64_t a = addr ? strtoull(addr, NULL, 16) : 0;
		const struct module *m = module_at(mods, nmods, a);
		char at[PATH_MAX + 32] = "";
		int hit = -1;

		if (!type || strcmp(type, "mutex") != 0)
			continue;
		*total += acq;
		if (m && site_file_line(qemu_pid, m, a - m->bias,
					str_field(site, "symbol") && off >= 0 ?
						a - m->bias - (uint64_t)off : 0,
					at, sizeof(at)))
			for (int i = 0; i < nq && hit < 0; i++)
				if (!is_condvar(&qs[i]) && same_site(at, qs[i].at))
					hit = i;
		if (hit < 0) {
			struct qsp_site none = { .rows = "" };

			add_row_name(&none, site);
			fprintf(stderr, "qsptop row matched to no QSP site: %s (%s), "
				"%.0f acquisitions\n", none.rows,
				m && at[0] ? at : "file:line not read", acq);
			unmatched += acq;
			continue;
		}
		qs[hit].qsptop += acq;
		add_row_name(&qs[hit], site);
	}
	return unmatched;
}

/* End a process we started and have not reaped yet. */
static void kill_and_reap(pid_t *pid)
{
	end_now(*pid);
	*pid = 0;
}

/* The scratch files of the run. */
struct files {
	char bios[PATH_MAX], sock[PATH_MAX], qemu_out[PATH_MAX];
	char out[PATH_MAX], err[PATH_MAX], json[PATH_MAX];
};

/* When each step came (monotonic ms): the table's header shows the windows. */
struct times {
	long table, reset, cont, stop, last, info;
};

/* Copies: tmp_path() reuses its buffers, and the tools take some. */
static void name_files(struct files *f)
{
	snprintf(f->bios, sizeof(f->bios), "%s", tmp_path("bios.bin"));
	snprintf(f->sock, sizeof(f->sock), "%s", tmp_path("qmp.sock"));
	snprintf(f->qemu_out, sizeof(f->qemu_out), "%s", tmp_path("qemu.out"));
	snprintf(f->out, sizeof(f->out), "%s", tmp_path("qsptop.out"));
	snprintf(f->err, sizeof(f->err), "%s", tmp_path("qsptop.err"));
	snprintf(f->json, sizeof(f->json), "%s", tmp_path("qemu.json"));
}

/*
 * QEMU paused (-S) before our firmware's first instruction, under TCG (no
 * KVM needed), answering QMP, QSP on. Its RTC keeps the guest's time
 * (-rtc clock=vm): on the host's clock, its timers ran while the guest
 * was paused, and one that fired between qsptop's first table and QSP's
 * reset was counted by qsptop alone. False when it cannot go on: failed,
 * or skipped when this QEMU has no QSP.
 */
static bool start_qemu(const char *qemu, const struct files *f, struct qmp *q)
{
	char qmparg[PATH_MAX + 64], *text;
	char *argv[] = { (char *)qemu, "-machine", "pc,accel=tcg", "-nodefaults",
			 "-display", "none", "-S", "-bios", (char *)f->bios,
			 "-rtc", "clock=vm", "-qmp", qmparg, NULL };
	bool on;

	snprintf(qmparg, sizeof(qmparg), "unix:%s,server=on,wait=off", f->sock);
	if (!write_bios(f->bios)) {
		CHECK(0, "write the firmware %s", f->bios);
		return false;
	}
	qemu_pid = start(argv, f->qemu_out, f->qemu_out);
	if (qmp_connect(q, f->sock))
		cJSON_Delete(qmp_read(q));	/* the greeting */
	if (q->fd < 0 || !qmp_ok(q, "qmp_capabilities")) {
		text = slurp_file(f->qemu_out, "");
		CHECK(0, "QEMU starts and answers QMP: %s", text);
		free(text);
		return false;
	}
	/* Switching on prints nothing; a QEMU before 3.0 knows no such command. */
	text = hmp(q, "sync-profile on");
	on = text && text[0] == '\0';
	if (text && strstr(text, "unknown command"))
		SKIP("this QEMU has no sync-profiler (QSP): %s", text);
	else
		CHECK(on, "QSP switches on: %s", text ? text : "(no reply)");
	free(text);
	return on;
}

/* argv as one line, for the report. */
static void command_line(char *const argv[], char *out, size_t size)
{
	size_t len = 0;

	out[0] = '\0';
	for (int i = 0; argv[i] && len < size; i++)
		len += (size_t)snprintf(out + len, size - len, "%s%s", i ? " " : "",
					argv[i]);
}

/*
 * qsptop -p QEMU, in batch mode, a table by site every 0.25 s, QSP's
 * wrappers given as MODULE+0xOFFSET, and no others: a function QSP counts
 * as a call site may also pass for a wrapper (--no-auto-wrappers). False
 * unless it prints a table.
 */
static bool start_qsptop(const char *qemu, const struct files *f,
			 const uint64_t *wrappers, int nw, char *cmd, size_t size)
{
	static char wrap[MAX_WRAPPERS][PATH_MAX + 32];
	const char *module = strrchr(qemu, '/') + 1;
	char pid[16], *text;
	struct args a = { 0 };

	snprintf(pid, sizeof(pid), "%d", (int)qemu_pid);
	args_add(&a, qsptop, "-p", pid, "-b", "-d", "0.25", "-m", "site",
		 "--no-auto-wrappers", "-j", f->json, NULL);
	for (int i = 0; i < nw; i++) {
		snprintf(wrap[i], sizeof(wrap[i]), "%s+0x%llx", module,
			 (unsigned long long)wrappers[i]);
		args_add(&a, "--wrapper", wrap[i], NULL);
	}
	command_line(a.v, cmd, size);
	qsptop_pid = start(a.v, f->out, f->err);
	if (wait_tables(f->out, 1, ATTACH_MS))
		return true;
	text = slurp_file(f->err, "");
	CHECK(0, "qsptop -p attaches to QEMU and prints a table: %s", text);
	free(text);
	return false;
}

/*
 * One window for both: QSP is reset while the guest is paused and qsptop
 * already counts; the guest runs; once it is paused again, qsptop takes
 * two more updates (the second began after the pause) and is stopped.
 * QSP's report (malloc'ed), or NULL.
 */
static char *profile_guest(struct qmp *q, const struct files *f, struct times *t)
{
	int before, status = -1;
	char *report, *text;

	t->table = monotonic_ms();
	free(hmp(q, "sync-profile reset"));
	t->reset = monotonic_ms();
	CHECK(qmp_ok(q, "cont"), "the guest continues");
	t->cont = monotonic_ms();
	sleep_ms(GUEST_RUN_MS);
	CHECK(qmp_ok(q, "stop"), "the guest stops");
	t->stop = monotonic_ms();
	before = tables(f->out);
	CHECK(wait_tables(f->out, before + 2, TABLES_MS),
	      "qsptop prints two tables after the pause");
	t->last = monotonic_ms();
	if (!ended(&qsptop_pid, &status))
		kill(qsptop_pid, SIGINT);
	report = hmp(q, "info sync-profile 100");
	t->info = monotonic_ms();
	if (qsptop_pid > 0) {
		status = wait_status(qsptop_pid, QSPTOP_EXIT_MS);
		qsptop_pid = 0;
	}
	text = slurp_file(f->err, "");
	CHECK(status == 0, "qsptop exits 0 on SIGINT, got %d: %s", status, text);
	free(text);
	return report;
}

/*
 * Print QSP's mutex sites beside qsptop's counts, and require every one
 * to be equal, but for a site whose lock call is a tail call: qsptop has
 * no row there (its count is on the caller's caller's row, which matches
 * no site). Those sites' QSP counts, summed, are returned. MIN_COUNT or
 * more (marked *) on enough sites shows the guest ran.
 */
static double compare_sites(struct qsp_site *qs, int nq, const char *qemu,
			    const char *cmd, const struct times *t)
{
	int compared = 0, bql = 0;
	struct check_tally equal = { 0 };
	double tail = 0;

	fprintf(stderr,
		"\nQSP vs qsptop, mutex acquisitions per call site (%s, guest ran %ld ms)\n"
		"%s\nwindows: qsptop's first table -> QSP reset %ld ms; guest paused "
		"from QSP reset to cont (%ld ms) and from stop to info sync-profile "
		"(%ld ms); qsptop's last update came after the stop (%ld ms later)\n\n"
		"  %-9s  %-34s %10s %10s %7s  %s\n", qemu, t->stop - t->cont, cmd,
		t->reset - t->table, t->cont - t->reset, t->info - t->stop,
		t->last - t->stop, "TYPE", "QSP CALL SITE", "QSP", "QSPTOP", "RATIO",
		"QSPTOP ROWS");
	qsort(qs, (size_t)nq, sizeof(qs[0]), by_count);
	for (int i = 0; i < nq && !is_condvar(&qs[i]); i++) {
		double ratio = qs[i].count ? qs[i].qsptop / (double)qs[i].count : 0;
		bool top = qs[i].count >= MIN_COUNT;

		fprintf(stderr, "%c %-9s  %-34s %10llu %10.0f %7.4f  %s\n",
			top ? '*' : ' ', qs[i].type, qs[i].at, qs[i].count,
			qs[i].qsptop, ratio, qs[i].rows[0] ? qs[i].rows : "-");
		if (qs[i].rows[0] == '\0') {
			tail += (double)qs[i].count;
			continue;
		}
		compared += top;
		bql += top && strcmp(qs[i].type, "BQL mutex") == 0;
		TALLY(&equal, qs[i].qsptop == (double)qs[i].count,
		      "%s %s: qsptop counts %.0f, QSP %llu", qs[i].type,
		      qs[i].at, qs[i].qsptop, qs[i].count);
	}
	fprintf(stderr, "(* %d or more acquisitions)\n", MIN_COUNT);
	CHECK_TALLY(&equal, "qsptop counts exactly what QSP counts on every "
		    "mutex site where it has a row");
	CHECK(compared >= MIN_SITES && bql >= MIN_BQL_SITES,
	      "at least %d of QSP's sites, %d of them the BQL's, have %d or more "
	      "acquisitions (%d do, %d the BQL's)", MIN_SITES, MIN_BQL_SITES,
	      MIN_COUNT, compared, bql);
	return tail;
}

/* QSP's report and qsptop's snapshot, site by site. */
static void compare(const char *report, const struct files *f, const char *qemu,
		    const char *cmd, const struct times *t)
{
	static struct qsp_site qs[MAX_SITES];
	int nq = parse_qsp(report, qs, MAX_SITES);
	cJSON *snap = load_json(f->json);
	double total, unmatched, tail;

	CHECK(nq > 0, "QSP reports sites: %s", report ? report : "(no reply)");
	CHECK(snap != NULL, "qsptop writes its JSON snapshot");
	if (nq > 0 && snap != NULL) {
		unmatched = match_rows(snap, qs, nq, &total);
		tail = compare_sites(qs, nq, qemu, cmd, t);
		fprintf(stderr, "qsptop's mutex rows matched to no QSP site: %.0f "
			"of %.0f acquisitions\n\n", unmatched, total);
		CHECK(unmatched == tail,
		      "qsptop's rows that match no QSP site (tail calls) hold "
		      "exactly the acquisitions of QSP's sites without a qsptop "
		      "row: expected %.0f, got %.0f (of %.0f)", tail, unmatched,
		      total);
	}
	cJSON_Delete(snap);
}

static void test_side_by_side(const char *qemu)
{
	uint64_t wrappers[MAX_WRAPPERS];
	int nw = qsp_wrappers(qemu, wrappers, MAX_WRAPPERS);
	struct qmp q = { .fd = -1 };
	char cmd[4096], *report;
	struct files f;
	struct times t;

	if (nw == 0) {
		SKIP("%s exports no qsp_enable (or objdump cannot read it): "
		     "QSP's wrappers cannot be found", qemu);
		return;
	}
	name_files(&f);
	if (start_qemu(qemu, &f, &q) &&
	    start_qsptop(qemu, &f, wrappers, nw, cmd, sizeof(cmd))) {
		report = profile_guest(&q, &f, &t);
		compare(report, &f, qemu, cmd, &t);
		free(report);
	}
	if (q.fd >= 0)
		close(q.fd);
	kill_and_reap(&qsptop_pid);
	kill_and_reap(&qemu_pid);
}

int main(void)
{
	char qemu[PATH_MAX], tool[PATH_MAX];

	signal(SIGALRM, watchdog);
	alarm(WATCHDOG_S);
	signal(SIGPIPE, SIG_IGN);
	find_paths("/tmp/qsptop-qemu-XXXXXX", "wl_demo");
	if (!in_path("qemu-system-x86_64", qemu))
		SKIP("qemu-system-x86_64 is not installed (apt-get install "
		     "qemu-system-x86): no side-by-side with QSP");
	else if (!in_path("objdump", tool) || !in_path("nm", tool))
		SKIP("objdump or nm (binutils) is missing: QEMU's call sites "
		     "cannot be read");
	else
		test_side_by_side(qemu);
	if (check_failed == 0) {
		remove_tmp();
	} else {
		fprintf(stderr, "kept for a look: %s\n", tmp);
	}
	return check_summary();
}
