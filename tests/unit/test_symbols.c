/*
 * Symbols: resolves this test's own functions, a return address, libc, and
 * fixtures built and run here (PIE and non-PIE, resolved after they exited);
 * demangles C++ names and gives an inlined call the caller's line; degrades
 * to module+offset for replaced, missing, stripped and hostile files.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "../../tui/site.h"
#include "../../tui/symbols.h"

#define NOINLINE __attribute__((noinline, noclone))

/* Bases of fake modules, far from anything mapped and from each other. */
#define FAKE_BASE(n) (0x100000000000ull + (uint64_t)(n) * 0x10000000000ull)

/* A module of this process as dl_iterate_phdr reports it. */
struct loaded {
	char path[4096];
	uint64_t base;
	uint8_t build_id[64];
	size_t build_id_len;
	uint64_t text_start, text_end;	/* the executable segment */
};

static struct loaded self_mod, libc_mod;
static volatile uint64_t sink;
static char tmp_dir[] = "/tmp/qsptop-test-symbols-XXXXXX";

static const int marker_line = __LINE__ + 1;
static NOINLINE int marker_function(int x) { return x * 3 + 1; }

/* Return the address the caller will return to. */
static NOINLINE uint64_t return_address(void)
{
	uint64_t ra = (uint64_t)__builtin_return_address(0);

	sink += ra;
	return ra;
}

/* Call return_address(); *line is the line of the call. */
static NOINLINE uint64_t call_site(int *line)
{
	uint64_t ra;

	ra = return_address(); *line = __LINE__;
	sink += ra;
	return ra;
}

/* Copy the GNU build id out of the PT_NOTE segments of a loaded module. */
static size_t note_build_id(const struct dl_phdr_info *info, uint8_t *out)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const uint8_t *p, *end;

		if (ph->p_type != PT_NOTE)
			continue;
		p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			const uint8_t *desc = p + sizeof *n +
					      ((n->n_namesz + 3) & ~3u);

			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    memcmp(p + sizeof *n, "GNU", 4) == 0 &&
			    n->n_descsz <= 64) {
				memcpy(out, desc, n->n_descsz);
				return n->n_descsz;
			}
			p = desc + ((n->n_descsz + 3) & ~3u);
		}
	}
	return 0;
}

/* Record a module: path, bias, build id and executable segment. */
static void record(struct loaded *l, const struct dl_phdr_info *info,
		   const char *path)
{
	snprintf(l->path, sizeof l->path, "%s", path);
	l->base = info->dlpi_addr;
	l->build_id_len = note_build_id(info, l->build_id);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			l->text_start = info->dlpi_addr + ph->p_vaddr;
			l->text_end = l->text_start + ph->p_memsz;
		}
	}
}

/* This program's path, as the collector names the executable. */
static const char *self_path(void)
{
	static char exe[4096];

	if (!exe[0]) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

		exe[n > 0 ? n : 0] = '\0';
	}
	return exe;
}

/* Report each module to s as the collector would; note self and libc. */
static int add_loaded(struct dl_phdr_info *info, size_t size, void *data)
{
	struct symbols *s = data;
	struct loaded l;
	const char *path = info->dlpi_name;

	(void)size;
	if (!path[0] && !self_mod.path[0]) {
		path = self_path();
		record(&self_mod, info, path);
	}
	if (strstr(path, "/libc.so"))
		record(&libc_mod, info, path);
	if (!path[0])
		return 0;
	record(&l, info, path);
	symbols_add_module(s, l.path, l.base, l.build_id, l.build_id_len);
	return 0;
}

/* Whether a string ends with a suffix. */
static bool ends_with(const char *str, const char *suffix)
{
	size_t n = str ? strlen(str) : 0, k = strlen(suffix);

	return n >= k && strcmp(str + n - k, suffix) == 0;
}

/* Seconds on the monotonic clock. */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Run a shell command; true when it succeeded. */
static bool run(const char *cmd)
{
	return system(cmd) == 0;
}

/* Copy at most n bytes of file src to a new file dst. */
static bool copy_prefix(const char *src, const char *dst, size_t n)
{
	FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
	char buf[4096];
	size_t got = 1;
	bool ok = in && out;

	while (ok && n && got) {
		got = fread(buf, 1, n < sizeof buf ? n : sizeof buf, in);
		ok = fwrite(buf, 1, got, out) == got;
		n -= got;
	}
	if (in)
		fclose(in);
	if (out && fclose(out) != 0)
		ok = false;
	return ok;
}

/* A path inside the test's temporary directory. */
static const char *tmp_path(const char *name)
{
	static char paths[8][4200];
	static int next;
	char *p = paths[next++ % 8];

	snprintf(p, sizeof paths[0], "%s/%s", tmp_dir, name);
	return p;
}

/* A function of this program resolves to its name, file and line. */
static void test_function(struct symbols *s)
{
	uint64_t addr = (uint64_t)(uintptr_t)&marker_function;
	struct frame_info f;

	symbols_resolve(s, addr, 0, &f);
	CHECK_U64(f.address, addr);
	CHECK_STR(f.symbol, "marker_function");
	CHECK_U64(f.offset, 0);
	CHECK(ends_with(f.file, "test_symbols.c"), "file: got %s",
	      f.file ? f.file : "(null)");
	CHECK_U64(f.line, marker_line);
	CHECK_STR(f.module, self_path());
	CHECK_U64(f.module_offset, addr - self_mod.base);
}

/* A return address resolves to the call: caller's name, call's line. */
static void test_return_address(struct symbols *s)
{
	int line = 0;
	uint64_t ra = call_site(&line);
	uint64_t start = (uint64_t)(uintptr_t)&call_site;
	struct frame_info f;

	symbols_resolve(s, ra, 1, &f);
	CHECK_STR(f.symbol, "call_site");
	CHECK_U64(f.offset, ra - start);
	CHECK(f.offset > 0, "offset of a return address is positive");
	CHECK_U64(f.line, line);
	CHECK(ends_with(f.file, "test_symbols.c"), "file: got %s",
	      f.file ? f.file : "(null)");
}

/* An address inside libc's getpid resolves through libc's symbols. */
static void test_libc(struct symbols *s)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *getpid_fn = libc ? dlsym(libc, "getpid") : NULL;
	uint64_t addr = (uint64_t)(uintptr_t)getpid_fn + 1;
	struct frame_info f;

	CHECK(getpid_fn != NULL, "getpid found in libc.so.6");
	symbols_resolve(s, addr, 0, &f);
	CHECK(f.symbol && strstr(f.symbol, "getpid"), "libc symbol: got %s",
	      f.symbol ? f.symbol : "(null)");
	CHECK_U64(f.offset, 1);
	CHECK(f.module && strstr(f.module, "libc"), "libc module: got %s",
	      f.module ? f.module : "(null)");
	CHECK_U64(f.module_offset, addr - libc_mod.base);
	printf("libc: %s+%" PRIu64 " at %s:%d in %s\n",
	       f.symbol ? f.symbol : "??", f.offset, f.file ? f.file : "??",
	       f.line, f.module ? f.module : "??");
	if (libc)
		dlclose(libc);
}

/* Data of this program, named by its symbols: a static, a struct's member. */
static long data_marker_static[4];
struct data_marker { long a, b; int lock; } data_marker_global;

static void test_data(struct symbols *s)
{
	uint64_t stat = (uint64_t)(uintptr_t)&data_marker_static[0];
	uint64_t member = (uint64_t)(uintptr_t)&data_marker_global.lock;
	uint64_t heap = (uint64_t)(uintptr_t)s;
	const char *name = NULL;
	uint64_t offset = 99;

	data_marker_static[0] = 1;
	CHECK(symbols_data(s, stat, &name, &offset),
	      "a static's address: expected its data symbol, got none");
	CHECK_STR(name, "data_marker_static");
	CHECK_U64(offset, 0);
	CHECK(symbols_data(s, member, &name, &offset),
	      "a global struct's member: expected its data symbol, got none");
	CHECK_STR(name, "data_marker_global");
	CHECK_U64(offset, 16);
	CHECK(!symbols_data(s, heap, &name, &offset),
	      "a heap address: expected no data symbol, got %s", name);
	CHECK(!symbols_data(s, (uint64_t)(uintptr_t)&marker_function, &name,
			    &offset),
	      "a function's address: expected no data symbol, got %s", name);
}

/* An address outside every module has nothing but the address. */
static void test_outside(struct symbols *s)
{
	struct frame_info f;

	symbols_resolve(s, 0x10, 0, &f);
	CHECK_U64(f.address, 0x10);
	CHECK(f.symbol == NULL, "no symbol outside modules");
	CHECK(f.module == NULL, "no module outside modules");
	CHECK(f.file == NULL, "no file outside modules");
	CHECK_U64(f.line, 0);
	CHECK_U64(f.offset, 0);
	CHECK_U64(f.module_offset, 0);
}

/* Add path at fake base n; resolve the marker's offset in it. */
static void resolve_fake(struct symbols *s, int n, const char *path,
			 const uint8_t *id, size_t id_len,
			 struct frame_info *f)
{
	uint64_t off = (uint64_t)(uintptr_t)&marker_function - self_mod.base;

	symbols_add_module(s, path, FAKE_BASE(n), id, id_len);
	symbols_resolve(s, FAKE_BASE(n) + off, 0, f);
}

/* A module that is not what was loaded, or no file, gives module+offset. */
static void check_module_only(const struct frame_info *f, const char *path)
{
	uint64_t off = (uint64_t)(uintptr_t)&marker_function - self_mod.base;

	CHECK(f->symbol == NULL, "%s: no symbol, got %s", path,
	      f->symbol ? f->symbol : "(null)");
	CHECK(f->file == NULL, "%s: no file", path);
	CHECK_U64(f->line, 0);
	CHECK_STR(f->module, path);
	CHECK_U64(f->module_offset, off);
}

/* A wrong build id, a missing file and non-ELF paths are not trusted. */
static void test_untrusted(struct symbols *s)
{
	uint8_t wrong[20];
	struct frame_info f;

	memset(wrong, 0xab, sizeof wrong);
	resolve_fake(s, 1, self_path(), wrong, sizeof wrong, &f);
	check_module_only(&f, self_path());
	resolve_fake(s, 2, "/nonexistent/qsptop/libgone.so", NULL, 0, &f);
	check_module_only(&f, "/nonexistent/qsptop/libgone.so");
	resolve_fake(s, 3, "/tmp", NULL, 0, &f);
	check_module_only(&f, "/tmp");
	resolve_fake(s, 4, "/etc/passwd", NULL, 0, &f);
	check_module_only(&f, "/etc/passwd");
	if (mkfifo(tmp_path("fifo"), 0600) == 0) {
		resolve_fake(s, 10, tmp_path("fifo"), NULL, 0, &f);
		CHECK(f.symbol == NULL, "a FIFO neither blocks nor resolves");
	}
}

/* Truncated, empty and magic-only copies of this program never crash. */
static void test_hostile_files(struct symbols *s)
{
	static const char *const names[] = {"trunc8k", "empty", "magic"};
	static const size_t sizes[] = {8192, 0, 16};
	struct frame_info f;

	for (int i = 0; i < 3; i++) {
		const char *path = tmp_path(names[i]);

		if (!copy_prefix("/proc/self/exe", path, sizes[i])) {
			printf("skipped: could not write %s\n", path);
			continue;
		}
		resolve_fake(s, 5 + i, path, self_mod.build_id,
			     self_mod.build_id_len, &f);
		CHECK(f.symbol == NULL, "%s: no symbol, got %s", names[i],
		      f.symbol ? f.symbol : "(null)");
		CHECK_STR(f.module, path);
	}
}

/* A stripped copy at another base has no symbols but the right offset. */
static void test_stripped(struct symbols *s)
{
	const char *path = tmp_path("stripped");
	struct frame_info f;
	char cmd[8192];

	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

	/* Resolved here: /proc/self in the shell would name objcopy. */
	exe[n > 0 ? n : 0] = '\0';
	snprintf(cmd, sizeof cmd, "objcopy --strip-all '%s' %s 2>/dev/null",
		 exe, path);
	if (!run(cmd)) {
		printf("skipped: objcopy --strip-all failed\n");
		return;
	}
	resolve_fake(s, 8, path, self_mod.build_id, self_mod.build_id_len, &f);
	check_module_only(&f, path);
}

/* An address resolved before its module arrived is resolved again after. */
static void test_late_module(struct symbols *s)
{
	struct frame_info f;

	symbols_resolve(s, FAKE_BASE(9) + 0x40, 1, &f);
	CHECK(f.module == NULL, "no module before it is added");
	symbols_add_module(s, "/nonexistent/late.so", FAKE_BASE(9), NULL, 0);
	symbols_add_module(s, "/nonexistent/late.so", FAKE_BASE(9), NULL, 0);
	symbols_resolve(s, FAKE_BASE(9) + 0x40, 1, &f);
	CHECK_STR(f.module, "/nonexistent/late.so");
	CHECK_U64(f.module_offset, 0x40);
}

/* A program that prints its bias and where target(), on line 6, is. */
static const char fixture_src[] =
	"#define _GNU_SOURCE\n"
	"#include <link.h>\n"
	"#include <stdio.h>\n"
	"static int first(struct dl_phdr_info *i, size_t n, void *d)\n"
	"{ (void)n; *(unsigned long *)d = i->dlpi_addr; return 1; }\n"
	"static int __attribute__((noinline)) target(int x) { return x + 1; }\n"
	"int main(void)\n"
	"{\n"
	"\tunsigned long base = 0;\n"
	"\tdl_iterate_phdr(first, &base);\n"
	"\tprintf(\"%lx %lx\\n\", base, (unsigned long)&target);\n"
	"\treturn target(0) == 1 ? 0 : 1;\n"
	"}\n";
#define FIXTURE_TARGET_LINE 6

/* Build the fixture with flags, run it, resolve its target() after exit. */
static void test_fixture(struct symbols *s, const char *flags)
{
	const char *exe = tmp_path(flags);
	unsigned long base = 0, target = 0;
	struct frame_info f;
	char cmd[8192];
	FILE *p;
	int got = 0;

	snprintf(cmd, sizeof cmd, "cc -g -O0 %s -o %s fixture.c 2>/dev/null",
		 flags, exe);
	if (!run(cmd)) {
		printf("skipped: cannot build the %s fixture\n", flags);
		return;
	}
	p = popen(exe, "r");
	if (p) {
		got = fscanf(p, "%lx %lx", &base, &target);
		pclose(p);
	}
	CHECK(got == 2, "%s fixture printed its base and target", flags);
	if (strcmp(flags, "-no-pie") == 0)
		CHECK(base == 0, "a non-PIE executable has bias 0, got %lx",
		      base);
	else
		CHECK(base != 0, "a PIE executable has a bias");
	symbols_add_module(s, exe, base, NULL, 0);
	symbols_resolve(s, target, 0, &f);
	CHECK_STR(f.symbol, "target");
	CHECK_U64(f.offset, 0);
	CHECK_U64(f.line, FIXTURE_TARGET_LINE);
	CHECK(ends_with(f.file, "fixture.c"), "%s: file %s", flags,
	      f.file ? f.file : "(null)");
	CHECK_STR(f.module, exe);
	CHECK_U64(f.module_offset, target - base);
}

/*
 * A library linked at 0x10000000, like a prelinked one: its bias is not
 * its start. Aliases test which name wins at one address; bare_label has
 * no size and so owns only its own address.
 */
static const char library_src[] =
	"int fixture_function(int x) { return x * 7; }\n"
	"static int a_local(int) __attribute__((alias(\"fixture_function\")));\n"
	"int a_weak(int) __attribute__((weak, alias(\"fixture_function\")));\n"
	"int __a_global(int) __attribute__((alias(\"fixture_function\")));\n"
	"int (*use_local)(int) = a_local;\n"
	"__asm__(\".text\\n.globl bare_label\\n.type bare_label,@function\\n\"\n"
	"\t\"bare_label: nop\\n nop\\n ret\\n\");\n";
#define LIBRARY_FUNCTION_LINE 1

/* Find the fixture library among the loaded modules. */
static int find_library(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	if (!strstr(info->dlpi_name, "libfixture.so"))
		return 0;
	record(data, info, info->dlpi_name);
	return 1;
}

/* Resolve a symbol of the fixture library by name. */
static void resolve_library(struct symbols *s, void *lib, const char *name,
			    uint64_t delta, struct frame_info *f)
{
	void *sym = dlsym(lib, name);

	memset(f, 0, sizeof *f);
	CHECK(sym != NULL, "dlsym %s", name);
	if (sym)
		symbols_resolve(s, (uint64_t)(uintptr_t)sym + delta, 0, f);
}

/* A library placed by its own p_vaddr, aliases, and an unsized symbol. */
static void test_library(struct symbols *s)
{
	const char *src = tmp_path("libfixture.c");
	const char *so = tmp_path("libfixture.so");
	static struct loaded lib_mod;
	struct frame_info f;
	char cmd[8192];
	FILE *out = fopen(src, "w");
	void *lib;

	if (out)
		fputs(library_src, out);
	snprintf(cmd, sizeof cmd, "cc -g -O0 -shared -fPIC "
		 "-Wl,-Ttext-segment=0x10000000 -o %s %s 2>/dev/null", so, src);
	if (!out || fclose(out) != 0 || !run(cmd) ||
	    !(lib = dlopen(so, RTLD_NOW))) {
		printf("skipped: cannot build or load the library fixture\n");
		return;
	}
	dl_iterate_phdr(find_library, &lib_mod);
	symbols_add_module(s, lib_mod.path, lib_mod.base, lib_mod.build_id,
			   lib_mod.build_id_len);
	resolve_library(s, lib, "fixture_function", 4, &f);
	CHECK_STR(f.symbol, "fixture_function");
	CHECK_U64(f.offset, 4);
	CHECK_U64(f.line, LIBRARY_FUNCTION_LINE);
	CHECK(ends_with(f.file, "libfixture.c"), "library file: got %s",
	      f.file ? f.file : "(null)");
	CHECK_STR(f.module, so);
	resolve_library(s, lib, "bare_label", 0, &f);
	CHECK_STR(f.symbol, "bare_label");
	resolve_library(s, lib, "bare_label", 1, &f);
	CHECK(f.symbol == NULL, "past an unsized symbol: got %s",
	      f.symbol ? f.symbol : "(null)");
	CHECK_STR(f.module, so);
	dlclose(lib);
}

/*
 * A program built both as C and as C++ that prints its bias, where f is,
 * and the return address of f's call on line 15, made from inner(),
 * inlined on line 17 into twice(), inlined on line 20 into outer(). As
 * C++, f is ns::f(int); as C, f's symbol looks mangled but is not, and
 * must be kept as it is.
 */
static const char inline_src[] =
	"#include <link.h>\n"
	"#include <stdio.h>\n"
	"#ifdef __cplusplus\n"
	"namespace ns { int f(int x); }\n"
	"#define F ns::f\n"
	"#else\n"
	"#define F f\n"
	"int f(int x) __asm__(\"_Zqsptop_bad\");\n"
	"#endif\n"
	"static unsigned long ra;\n"
	"static int first(struct dl_phdr_info *i, size_t n, void *d)\n"
	"{ (void)n; *(unsigned long *)d = i->dlpi_addr; return 1; }\n"
	"__attribute__((noinline, noclone)) int F(int x) "
	"{ ra = (unsigned long)__builtin_return_address(0); return x + 1; }\n"
	"static inline __attribute__((always_inline)) int inner(int x)\n"
	"{ return F(x) + 2; }\n"
	"static inline __attribute__((always_inline)) int twice(int x)\n"
	"{ return inner(x) * 2; }\n"
	"__attribute__((noinline, noclone)) int outer(int x)\n"
	"{\n"
	"\treturn twice(x) + 1;\n"
	"}\n"
	"int main(void)\n"
	"{\n"
	"\tunsigned long base = 0;\n"
	"\tdl_iterate_phdr(first, &base);\n"
	"\tint r = outer(1);\n"
	"\tprintf(\"%lx %lx %lx\\n\", base, (unsigned long)&F, ra);\n"
	"\treturn r == 9 ? 0 : 1;\n"
	"}\n";
#define INLINE_F_LINE 13
#define INLINE_CALL_LINE 15
#define INLINE_TWICE_LINE 17
#define INLINE_OUTER_LINE 20

/*
 * How inline_src is built, and the names its functions must get (an
 * inlined static function has no linkage name in C++ either). Its sources
 * may be made the system's (-fdebug-prefix-map to /usr/include): then the
 * site is outer()'s line, and not inlined (inner_name NULL).
 */
struct inline_build {
	const char *compiler;	/* a command that must exist */
	const char *flags;	/* its options */
	const char *source, *exe;
	const char *f_name, *outer_name;
	const char *inner_name, *twice_name;
};

static const struct inline_build inline_builds[] = {
	{"cc", "-D_GNU_SOURCE -g -O1", "inline.c",
	 "inline-c", "_Zqsptop_bad", "outer", "inner", "twice"},
	{"c++", "-g -O1", "inline.cc", "inline-cxx",
	 "ns::f(int)", "outer(int)", "inner", "twice"},
	{"cc", "-D_GNU_SOURCE -g -O1 -fdebug-prefix-map=/tmp=/usr/include",
	 "inline.c", "inline-sys", "_Zqsptop_bad",
	 "outer", NULL, NULL},
};

/* Write text to a file of the temporary directory. */
static bool write_file(const char *name, const char *text)
{
	FILE *f = fopen(tmp_path(name), "w");

	if (!f)
		return false;
	fputs(text, f);
	return fclose(f) == 0;
}

/* Build inline_src as b says and run it; false when it cannot be built. */
static bool run_inline(const struct inline_build *b, unsigned long v[3])
{
	char cmd[8192];
	FILE *p;
	int got = 0;

	snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1",
		 b->compiler);
	if (!run(cmd)) {
		printf("skipped: no %s to build the inline fixture\n",
		       b->compiler);
		return false;
	}
	snprintf(cmd, sizeof cmd, "%s %s %s -o %s 2>/dev/null", b->compiler,
		 b->flags, tmp_path(b->source), tmp_path(b->exe));
	if (!write_file(b->source, inline_src) || !run(cmd)) {
		printf("skipped: cannot build %s\n", b->source);
		return false;
	}
	p = popen(tmp_path(b->exe), "r");
	if (p) {
		got = fscanf(p, "%lx %lx %lx", &v[0], &v[1], &v[2]);
		pclose(p);
	}
	CHECK(got == 3, "%s printed its base, f and a return address",
	      b->exe);
	return got == 3;
}

/*
 * What the table and the details read for the inlined call at ra: the
 * table names the innermost function and the one holding the address,
 * the details every place of the chain.
 */
static void check_inline_text(struct symbols *s, const struct inline_build *b,
			      uint64_t ra)
{
	const char *src = b->source, *outer = b->outer_name;
	struct frame_info f;
	char got[1024], want[1024];

	symbols_resolve(s, ra, 1, &f);
	site_both(got, sizeof got, s, ra);
	if (!b->inner_name) {
		snprintf(want, sizeof want, "%s+0x%" PRIx64 " (%s:%d)", outer,
			 f.offset, src, INLINE_OUTER_LINE);
		CHECK_STR(got, want);
		site_chain(got, sizeof got, s, ra);
		CHECK_STR(got, want);
		return;
	}
	snprintf(want, sizeof want, "%s (%s:%d) inlined in %s+0x%" PRIx64,
		 b->inner_name, src, INLINE_CALL_LINE, outer, f.offset);
	CHECK_STR(got, want);
	site_function(got, sizeof got, s, ra);
	snprintf(want, sizeof want, "%s inlined in %s+0x%" PRIx64,
		 b->inner_name, outer, f.offset);
	CHECK_STR(got, want);
	site_line(got, sizeof got, s, ra);
	snprintf(want, sizeof want, "%s:%d inlined in %s:%d", src,
		 INLINE_CALL_LINE, src, INLINE_OUTER_LINE);
	CHECK_STR(got, want);
	site_chain(got, sizeof got, s, ra);
	snprintf(want, sizeof want, "%s (%s:%d) inlined in %s (%s:%d) inlined "
		 "in %s+0x%" PRIx64 " (%s:%d)", b->inner_name, src,
		 INLINE_CALL_LINE, b->twice_name, src, INLINE_TWICE_LINE, outer,
		 f.offset, src, INLINE_OUTER_LINE);
	CHECK_STR(got, want);
	snprintf(want, sizeof want, " %s %s:%d ", b->twice_name,
		 tmp_path(src), INLINE_TWICE_LINE);
	CHECK(strstr(site_label(s, ra), want) != NULL,
	      "%s: a filter finds \"%s\" in \"%s\"", b->exe, want,
	      site_label(s, ra));
}

/* One place of an inlined site's chain: function, file and line. */
static void check_inlined_in(const struct inline_build *b,
			     const struct inline_call *c, const char *function,
			     int line)
{
	CHECK_STR(c->function, function);
	CHECK(ends_with(c->file, b->source) && c->line == line,
	      "%s: %s inlined on %s:%d, got %s:%d", b->exe, function,
	      b->source, line, c->file ? c->file : "(null)", c->line);
}

/*
 * f's name is demangled (C++) or kept (C); the return address of a call
 * made by inlined code is the caller's, at the line of the call in the
 * innermost inlined function, with the chain of where it was inlined;
 * when all of it is in system headers, at the outer function's line.
 */
static void test_inline(struct symbols *s, const struct inline_build *b)
{
	unsigned long v[3];	/* bias, f, return address */
	bool own = b->inner_name != NULL;
	struct frame_info f;

	if (!run_inline(b, v))
		return;
	symbols_add_module(s, tmp_path(b->exe), v[0], NULL, 0);
	symbols_resolve(s, v[1], 0, &f);
	CHECK_STR(f.symbol, b->f_name);
	CHECK_STR(f.function, b->f_name);
	CHECK_U64(f.offset, 0);
	CHECK_U64(f.line, INLINE_F_LINE);
	CHECK_U64(f.n_inlined, 0);
	symbols_resolve(s, v[2], 1, &f);
	CHECK_STR(f.symbol, b->outer_name);
	CHECK_STR(f.function, own ? b->inner_name : b->outer_name);
	CHECK(f.offset > 0, "%s: offset of the return address is positive",
	      b->exe);
	CHECK(f.line == (own ? INLINE_CALL_LINE : INLINE_OUTER_LINE),
	      "%s: the call from inlined code is on line %d, got %d", b->exe,
	      own ? INLINE_CALL_LINE : INLINE_OUTER_LINE, f.line);
	CHECK(ends_with(f.file, b->source), "%s: file %s", b->exe,
	      f.file ? f.file : "(null)");
	CHECK_U64(f.n_inlined, own ? 2 : 0);
	if (own && f.n_inlined == 2) {
		check_inlined_in(b, &f.inlined_in[0], b->twice_name,
				 INLINE_TWICE_LINE);
		check_inlined_in(b, &f.inlined_in[1], b->outer_name,
				 INLINE_OUTER_LINE);
	}
	CHECK_STR(f.module, tmp_path(b->exe));
	check_inline_text(s, b, v[2]);
}

/* Write the fixture's source into the temporary directory. */
static bool write_fixture(void)
{
	FILE *f = fopen(tmp_path("fixture.c"), "w");

	if (!f)
		return false;
	fputs(fixture_src, f);
	return fclose(f) == 0 && chdir(tmp_dir) == 0;
}

/* Print the cost of cached and first-time lookups. */
static void report_speed(struct symbols *s)
{
	uint64_t addr = (uint64_t)(uintptr_t)&marker_function;
	uint64_t span = libc_mod.text_end - libc_mod.text_start;
	struct frame_info f;
	double t;
	int n = 0;

	t = now();
	for (int i = 0; i < 100000; i++)
		symbols_resolve(s, addr, 0, &f);
	printf("cached: %.1f ns per lookup\n", (now() - t) * 1e9 / 100000);
	if (!span)
		return;
	t = now();
	for (uint64_t a = libc_mod.text_start + 7; a < libc_mod.text_end;
	     a += span / 20000 + 1, n++)
		symbols_resolve(s, a, 1, &f);
	printf("uncached: %.2f us per lookup (%d libc addresses)\n",
	       (now() - t) * 1e6 / n, n);
}

/* Remove the temporary directory and what the test put there. */
static void cleanup(void)
{
	static const char *const names[] = {
		"trunc8k", "empty", "magic", "stripped", "fixture.c", "-pie",
		"-no-pie", "libfixture.c", "libfixture.so", "fifo", "inline.c",
		"inline-c", "inline.cc", "inline-cxx", "inline-sys",
	};

	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		unlink(tmp_path(names[i]));
	if (chdir("/") == 0)
		rmdir(tmp_dir);
}

int main(void)
{
	struct symbols *s = symbols_new();
	double t = now();

	if (!mkdtemp(tmp_dir)) {
		perror("mkdtemp");
		return 1;
	}
	dl_iterate_phdr(add_loaded, s);
	CHECK(self_mod.path[0] != 0, "found the main program");
	CHECK(libc_mod.path[0] != 0, "found libc");
	test_function(s);
	test_return_address(s);
	test_libc(s);
	printf("first lookups: %.1f ms\n", (now() - t) * 1e3);
	test_outside(s);
	test_data(s);
	test_untrusted(s);
	test_hostile_files(s);
	test_stripped(s);
	test_late_module(s);
	if (write_fixture()) {
		test_fixture(s, "-no-pie");
		test_fixture(s, "-pie");
	}
	test_library(s);
	for (size_t i = 0; i < sizeof inline_builds / sizeof *inline_builds;
	     i++)
		test_inline(s, &inline_builds[i]);
	test_function(s);
	report_speed(s);
	symbols_free(s);
	cleanup();
	return check_summary();
}
