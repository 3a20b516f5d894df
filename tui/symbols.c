/*
 * Symbolization of the target's addresses. Each module the collector
 * reported is opened by path and checked against its build id; a trusted
 * module is handed to libdwfl, which finds separate debuginfo by build id.
 * libdwfl's own address-to-symbol lookup scans every symbol, so each module
 * gets a sorted table of its functions, built on first use and searched by
 * bisection; a C++ name is demangled the first time a lookup lands on
 * it. file:line comes from libdw. In inlined code it is the innermost
 * place in the program's own sources: the line table's line if that is
 * one, else the line of the innermost inlined call made from one (the
 * line using std::lock_guard, not libstdc++'s call to pthread); the calls
 * further out are the chain of where that code was inlined. Finished
 * answers are cached per address, each with its chain. The strings handed
 * out point into module records, libdw's loaded files and the demangled
 * names of inlined functions, all kept until symbols_free().
 *
 * Nothing here waits on the network: libdwfl looks for debuginfo in local
 * files and in debuginfod's cache only, and asks tui/fetch for the rest;
 * when a module's debuginfo lands, the module is opened again in a Dwfl of
 * its own (the old one is kept: handed-out strings point into it). Each
 * refresh has a time budget for new addresses; past it, an address gets
 * its module and offset only, and its name on a later refresh.
 */
#include "../common/cfi.h"
#include "../common/clock.h"
#include "../common/hash.h"
#include "addrcache.h"
#include "fetch.h"
#include "symbols.h"
#include "xalloc.h"

#include <dwarf.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* libstdc++'s demangler (link -lstdc++); returns a malloc'd string. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* How far past its base a module whose extent is unknown may reach. */
#define GUESS_SPAN (256ull << 20)
/*
 * Time a refresh may spend on new addresses: libc's take ~40 us each, so
 * only programs with thousands of call sites in big binaries notice.
 */
#define REFRESH_BUDGET_MS 250
/* Inlined calls kept around one address; deeper ones lose their innermost. */
#define INLINE_MAX 64

/* What the file at a module's path tells about the loaded module. */
enum module_state {
	MODULE_MISSING,		/* no usable ELF file: extent unknown */
	MODULE_MISMATCH,	/* an ELF file, but not the one loaded */
	MODULE_TRUSTED,		/* symbols and lines come from the file */
};

/* A function in a module's symbol table, at its address in the target. */
struct sym {
	uint64_t start;
	uint64_t end;		/* start + size; start + 1 when size is 0 */
	uint64_t max_end;	/* largest end of this and every earlier sym */
	const char *name;
	int rank;		/* lower wins among syms at one address */
	bool name_final;	/* demangling was tried on name */
	bool name_owned;	/* name is the demangler's, freed with the table */
};

struct module {
	char *path;
	uint64_t base;		/* load bias */
	uint64_t start, end;	/* extent in the target; end 0 when unknown */
	uint8_t *build_id;
	size_t build_id_len;
	enum module_state state;
	Dwfl_Module *dwfl_mod;	/* NULL unless trusted and libdwfl took it */
	Dwfl *own_dwfl;		/* dwfl_mod's, once reopened; else shared */
	struct sym *syms;
	size_t nsyms;
	char *names;		/* syms' names stripped of a default version */
	bool syms_built;
	struct cfi_fde *fdes;	/* its unwind entries by address, for */
	size_t nfdes;		/* functions without a symbol */
	bool fdes_built;
};

struct symbols {
	Dwfl *dwfl;
	struct module *mods;
	size_t nmods, cap;
	struct module *retired;	/* symbol state of reopened modules */
	size_t nretired;
	struct fetch *fetch;
	unsigned generation;	/* bumped when debuginfo landed */
	int64_t budget_ends_ms;	/* 0: no budget */
	size_t pending;		/* addresses past the budget since it began */
	/* Answers (struct frame_info, each with its own inlined_in), by address. */
	struct addrcache *returns;	/* return addresses */
	struct addrcache *exact;	/* other addresses */
	/*
	 * Inlined functions' demangled names (char *, the demangler's, NULL
	 * if it failed) by the address of their mangled names in libdw.
	 */
	struct addrcache *names;
	char root[32];			/* before each module's path */
};

/*
 * libdwfl's search in local files (by build id, by debuglink) and then in
 * debuginfod's cache; what is in neither is asked of the fetcher. libdwfl
 * asks a server itself only when DEBUGINFOD_URLS is set, and the fetcher
 * took it out. An alternate (dwz) file is asked for by its name, without
 * a CRC: it is only looked for locally.
 */
static int find_debuginfo(Dwfl_Module *mod, void **userdata,
			  const char *modname, Dwarf_Addr base,
			  const char *file, const char *debuglink,
			  GElf_Word crc, char **debuginfo_file)
{
	struct symbols *s = *userdata;
	const unsigned char *id;
	GElf_Addr vaddr;
	int fd, len;

	fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file,
					  debuglink, crc, debuginfo_file);
	if (fd >= 0 || (debuglink && crc == 0) ||
	    (len = dwfl_module_build_id(mod, &id, &vaddr)) <= 0)
		return fd;
	fd = fetch_open_cached(s->fetch, id, (size_t)len, debuginfo_file);
	if (fd < 0)
		fetch_request(s->fetch, id, (size_t)len);
	return fd;
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

struct symbols *symbols_new(void)
{
	struct symbols *s = xcalloc(1, sizeof *s);

	s->fetch = fetch_new();
	elf_version(EV_CURRENT);
	s->dwfl = dwfl_begin(&dwfl_callbacks);
	s->returns = addrcache_new(sizeof(struct frame_info));
	s->exact = addrcache_new(sizeof(struct frame_info));
	s->names = addrcache_new(sizeof(char *));
	return s;
}

static void drop_answer(void *answer);

static void drop_name(void *name)
{
	free(*(char **)name);
}

/* Free what m's symbols came from and were made of. */
static void module_free_symbols(struct module *m)
{
	for (size_t j = 0; j < m->nsyms; j++)
		if (m->syms[j].name_owned)
			free((char *)m->syms[j].name);
	free(m->syms);
	free(m->names);
	free(m->fdes);
	if (m->own_dwfl)
		dwfl_end(m->own_dwfl);
}

void symbols_free(struct symbols *s)
{
	if (!s)
		return;
	fetch_free(s->fetch);
	addrcache_free(s->returns, drop_answer);
	addrcache_free(s->exact, drop_answer);
	for (size_t i = 0; i < s->nretired; i++)
		module_free_symbols(&s->retired[i]);
	for (size_t i = 0; i < s->nmods; i++) {
		module_free_symbols(&s->mods[i]);
		free(s->mods[i].path);
		free(s->mods[i].build_id);
	}
	if (s->dwfl)
		dwfl_end(s->dwfl);
	addrcache_free(s->names, drop_name);
	free(s->retired);
	free(s->mods);
	free(s);
}

/* Find the span of the PT_LOAD segments of elf, relative to the bias. */
static bool elf_extent(Elf *elf, uint64_t *lo, uint64_t *hi)
{
	size_t phnum;
	GElf_Phdr ph;

	*lo = UINT64_MAX;
	*hi = 0;
	if (elf_getphdrnum(elf, &phnum) != 0)
		return false;
	for (size_t i = 0; i < phnum; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph))
			return false;
		if (ph.p_type != PT_LOAD || ph.p_memsz == 0)
			continue;
		if (ph.p_vaddr + ph.p_memsz < ph.p_vaddr)
			return false;
		if ((ph.p_vaddr & ~0xfffull) < *lo)
			*lo = ph.p_vaddr & ~0xfffull;
		if (ph.p_vaddr + ph.p_memsz > *hi)
			*hi = ph.p_vaddr + ph.p_memsz;
	}
	return *hi > *lo;
}

/* Whether elf is the file the target loaded as m. */
static bool elf_is_loaded_file(Elf *elf, const struct module *m)
{
	GElf_Ehdr eh;
	const void *id;
	ssize_t len;

	/* An executable is never relocated: a bias means another file. */
	if (!gelf_getehdr(elf, &eh) || (eh.e_type == ET_EXEC && m->base))
		return false;
	if (m->build_id_len == 0)
		return true;
	len = dwelf_elf_gnu_build_id(elf, &id);
	return len > 0 && (size_t)len == m->build_id_len &&
	       memcmp(id, m->build_id, m->build_id_len) == 0;
}

/* Open fd as an ELF executable or shared object, or return NULL. */
static Elf *elf_open_loadable(int fd)
{
	struct stat st;
	GElf_Ehdr eh;
	Elf *elf;

	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return NULL;
	/* ELF_C_READ reads with pread: a truncated file cannot fault. */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF && gelf_getehdr(elf, &eh) &&
	    (eh.e_type == ET_EXEC || eh.e_type == ET_DYN))
		return elf;
	if (elf)
		elf_end(elf);
	return NULL;
}

/* Hand the trusted file open on fd to dwfl, placed at m's bias. */
static void module_report(struct symbols *s, struct module *m, Dwfl *dwfl,
			  int fd)
{
	char name[32];
	void **userdata;
	int dwfl_fd;

	if (!dwfl)
		return;
	dwfl_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dwfl_fd < 0)
		return;
	/*
	 * Names are unique: libdwfl merges a module reported again under the
	 * same name and range, and drops the old one if the files differ.
	 * With add_p_vaddr true the base is the bias (dlpi_addr); an ET_EXEC
	 * ignores it and gets bias 0, which is what its dlpi_addr is.
	 */
	snprintf(name, sizeof name, "module%zu", (size_t)(m - s->mods));
	dwfl_report_begin_add(dwfl);
	m->dwfl_mod = dwfl_report_elf(dwfl, name, m->path, dwfl_fd, m->base,
				      true);
	dwfl_report_end(dwfl, NULL, NULL);
	if (!m->dwfl_mod)
		close(dwfl_fd);
	else if (dwfl_module_info(m->dwfl_mod, &userdata, NULL, NULL, NULL,
				  NULL, NULL, NULL))
		*userdata = s;	/* for find_debuginfo */
}

/* Open the file at m's path, if it is a regular file; -1 if not. */
static int module_open(const struct symbols *s, const struct module *m)
{
	char path[PATH_MAX + sizeof(s->root)];
	struct stat st;

	snprintf(path, sizeof(path), "%s%s", s->root, m->path);
	/* Only regular files: opening a FIFO or a device could block. */
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return -1;
	return open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
}

/* Read m's extent and state from the file at its path. */
static void module_load(struct symbols *s, struct module *m)
{
	int fd = module_open(s, m);
	uint64_t lo, hi;
	Elf *elf;

	if (fd < 0)
		return;
	elf = elf_open_loadable(fd);
	if (elf && elf_extent(elf, &lo, &hi) && m->base + lo >= m->base &&
	    m->base + hi > m->base + lo) {
		m->start = m->base + lo;
		m->end = m->base + hi;
		m->state = elf_is_loaded_file(elf, m) ? MODULE_TRUSTED
						      : MODULE_MISMATCH;
	}
	if (elf)
		elf_end(elf);
	if (m->state == MODULE_TRUSTED)
		module_report(s, m, s->dwfl, fd);
	close(fd);
}

/*
 * Open trusted module m again in a Dwfl of its own, which finds the
 * debuginfo that has landed since; its old symbols are kept until
 * symbols_free(): strings handed out point into them.
 */
static void module_reopen(struct symbols *s, struct module *m)
{
	int fd = module_open(s, m);

	s->retired = xreallocarray(s->retired, s->nretired + 1,
				   sizeof *s->retired);
	s->retired[s->nretired++] = *m;
	m->own_dwfl = dwfl_begin(&dwfl_callbacks);
	m->dwfl_mod = NULL;
	m->syms = NULL;
	m->nsyms = 0;
	m->names = NULL;
	m->syms_built = false;
	m->fdes = NULL;
	m->nfdes = 0;
	m->fdes_built = false;
	if (fd >= 0) {
		module_report(s, m, m->own_dwfl, fd);
		close(fd);
	}
}

/* Whether the module is already known with this path, bias and id. */
static bool module_known(const struct symbols *s, const char *path,
			 uint64_t base, const uint8_t *build_id, size_t len)
{
	for (size_t i = 0; i < s->nmods; i++) {
		const struct module *m = &s->mods[i];

		if (m->base == base && m->build_id_len == len &&
		    strcmp(m->path, path) == 0 &&
		    (len == 0 || memcmp(m->build_id, build_id, len) == 0))
			return true;
	}
	return false;
}

static void drop_answer(void *answer)
{
	free((void *)((struct frame_info *)answer)->inlined_in);
}

/* Forget every cached answer: a new module may change them. */
static void cache_clear(struct symbols *s)
{
	addrcache_clear(s->returns, drop_answer);
	addrcache_clear(s->exact, drop_answer);
}

void symbols_set_root(struct symbols *s, const char *root)
{
	snprintf(s->root, sizeof(s->root), "%s", root);
}

void symbols_add_module(struct symbols *s, const char *path, uint64_t base,
			const uint8_t *build_id, size_t build_id_len)
{
	struct module *m;
	size_t len;

	if (!path)
		return;
	if (!build_id)
		build_id_len = 0;
	if (module_known(s, path, base, build_id, build_id_len))
		return;
	if (s->nmods == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->mods = xreallocarray(s->mods, s->cap, sizeof *s->mods);
	}
	m = &s->mods[s->nmods];
	memset(m, 0, sizeof *m);
	len = strlen(path) + 1;
	m->path = memcpy(xreallocarray(NULL, len, 1), path, len);
	m->base = base;
	m->build_id_len = build_id_len;
	m->build_id = xreallocarray(NULL, build_id_len, 1);
	if (build_id_len)
		memcpy(m->build_id, build_id, build_id_len);
	module_load(s, m);
	s->nmods++;
	cache_clear(s);
}

/* Count the leading underscores of a name. */
static int underscores(const char *name)
{
	int n = 0;

	while (name[n] == '_')
		n++;
	return n;
}

/*
 * Rank a symbol among others at the same address, lower first: sized
 * before unsized, global or weak before local, fewer leading underscores
 * (getpid before __getpid), then global before weak.
 */
static int sym_rank(const GElf_Sym *sym, const char *name)
{
	int bind = GELF_ST_BIND(sym->st_info);
	int u = underscores(name);

	return (sym->st_size == 0) << 12 | (bind == STB_LOCAL) << 11 |
	       (u > 7 ? 7 : u) << 8 | (bind == STB_WEAK) << 7;
}

/* Order syms by address, the preferred one first at each address. */
static int sym_compare(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Read function symbol ndx of mod into out; false if it is not one. */
static bool sym_read(Dwfl_Module *mod, int ndx, struct sym *out)
{
	GElf_Sym sym;
	GElf_Addr addr;
	GElf_Word shndx;
	const char *name;
	int type;

	name = dwfl_module_getsym_info(mod, ndx, &sym, &addr, &shndx, NULL,
				       NULL);
	if (!name || !*name)
		return false;
	type = GELF_ST_TYPE(sym.st_info);
	if (type != STT_FUNC && type != STT_GNU_IFUNC)
		return false;
	/* Undefined, absolute and non-allocated symbols are not code. */
	if (shndx == SHN_UNDEF || shndx == SHN_ABS || shndx == (GElf_Word)-1)
		return false;
	out->start = addr;
	out->end = addr + (sym.st_size ? sym.st_size : 1);
	if (out->end < out->start)
		return false;
	out->name = name;
	out->rank = sym_rank(&sym, name);
	out->name_final = false;
	out->name_owned = false;
	return true;
}

/* Keep the first sym at each address and fill in max_end. */
static size_t syms_finish(struct sym *syms, size_t n)
{
	size_t kept = 0;
	uint64_t max_end = 0;

	for (size_t i = 0; i < n; i++) {
		if (kept && syms[kept - 1].start == syms[i].start)
			continue;
		syms[kept] = syms[i];
		if (syms[kept].end > max_end)
			max_end = syms[kept].end;
		syms[kept++].max_end = max_end;
	}
	return kept;
}

/*
 * Drop the default version from names like "pthread_mutex_lock@@GLIBC_2.2.5"
 * (glibc's .symtab spells them so); "name@VERSION", a compat version, keeps
 * its suffix to tell it from the default one.
 */
static void syms_strip_versions(struct module *m)
{
	size_t total = 0, used = 0;
	const char *at;

	for (size_t i = 0; i < m->nsyms; i++)
		if ((at = strstr(m->syms[i].name, "@@")))
			total += (size_t)(at - m->syms[i].name) + 1;
	if (!total)
		return;
	m->names = xreallocarray(NULL, total, 1);
	for (size_t i = 0; i < m->nsyms; i++) {
		size_t len;

		if (!(at = strstr(m->syms[i].name, "@@")))
			continue;
		len = (size_t)(at - m->syms[i].name);
		memcpy(m->names + used, m->syms[i].name, len);
		m->names[used + len] = 0;
		m->syms[i].name = m->names + used;
		used += len + 1;
	}
}

/* Build m's sorted function table from libdwfl's best symbol table. */
static void module_build_syms(struct module *m)
{
	int n;
	size_t count = 0;

	m->syms_built = true;
	n = dwfl_module_getsymtab(m->dwfl_mod);
	if (n <= 1)
		return;
	m->syms = xreallocarray(NULL, (size_t)n, sizeof *m->syms);
	for (int i = 1; i < n; i++)
		if (sym_read(m->dwfl_mod, i, &m->syms[count]))
			count++;
	qsort(m->syms, count, sizeof *m->syms, sym_compare);
	m->nsyms = syms_finish(m->syms, count);
	syms_strip_versions(m);
}

/* The name of sym to show: a C++ name demangled once, or kept as it is. */
static const char *sym_name(struct sym *sym)
{
	char *demangled;
	int status;

	if (sym->name_final)
		return sym->name;
	sym->name_final = true;
	if (strncmp(sym->name, "_Z", 2) != 0)
		return sym->name;
	demangled = __cxa_demangle(sym->name, NULL, NULL, &status);
	if (status == 0 && demangled) {
		sym->name = demangled;
		sym->name_owned = true;
	} else {
		free(demangled);
	}
	return sym->name;
}

/* The innermost function of m holding pc, or NULL. */
static struct sym *module_sym(struct module *m, uint64_t pc)
{
	size_t lo = 0, hi;

	if (!m->syms_built)
		module_build_syms(m);
	hi = m->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->syms[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Walk back over syms that start earlier but may still reach pc. */
	for (size_t i = lo; i-- > 0 && m->syms[i].max_end > pc;)
		if (m->syms[i].end > pc)
			return &m->syms[i];
	return NULL;
}

/* The inlined calls holding a pc, outermost first. */
struct inline_path {
	Dwarf_Die call[INLINE_MAX];
	int n;
	bool cut;		/* calls deeper than INLINE_MAX were left out */
};

/* Whether DIEs of this tag hold code of the function they are in. */
static bool code_scope(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_lexical_block || tag == DW_TAG_try_block ||
	       tag == DW_TAG_catch_block;
}

static int unit_path(Dwarf_Die *parent, Dwarf_Addr pc, struct inline_path *p);

/*
 * Search the children of parent that hold code, or with namespaces true
 * its namespaces, for pc, adding every inlined call on the way down to p:
 * 1 when a child holds pc, -1 when none does.
 */
static int search_children(Dwarf_Die *parent, Dwarf_Addr pc,
			   struct inline_path *p, bool namespaces)
{
	Dwarf_Die child;
	int tag;

	if (dwarf_child(parent, &child) != 0)
		return -1;
	do {
		tag = dwarf_tag(&child);
		if (namespaces) {
			if ((tag == DW_TAG_namespace || tag == DW_TAG_module) &&
			    unit_path(&child, pc, p) > 0)
				return 1;
		} else if (code_scope(tag) && dwarf_haspc(&child, pc) > 0) {
			if (tag == DW_TAG_inlined_subroutine && p->n == INLINE_MAX)
				p->cut = true;
			else if (tag == DW_TAG_inlined_subroutine)
				p->call[p->n++] = child;
			search_children(&child, pc, p, false);
			return 1;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return -1;
}

/*
 * Find the inlined calls holding pc among the descendants of a unit or
 * namespace: 1 when one of them holds pc, -1 otherwise. GCC puts the code
 * of a function at the top of its unit, clang inside its namespace: the
 * namespaces, thousands of declarations in C++, are searched only when
 * the code around them does not hold pc.
 */
static int unit_path(Dwarf_Die *parent, Dwarf_Addr pc, struct inline_path *p)
{
	int found = search_children(parent, pc, p, false);

	return found >= 0 ? found : search_children(parent, pc, p, true);
}

/*
 * A C++ name of libdw's demangled, once per name: libdw's strings stay
 * put, so their addresses are the keys.
 */
static const char *demangle_once(struct symbols *s, const char *mangled)
{
	uint64_t key = (uint64_t)(uintptr_t)mangled;
	char **known, *name;
	int status;

	if (strncmp(mangled, "_Z", 2) != 0)
		return mangled;
	if ((known = addrcache_find(s->names, key)))
		return *known ? *known : mangled;
	name = __cxa_demangle(mangled, NULL, NULL, &status);
	if (status != 0 || !name) {
		free(name);
		name = NULL;
	}
	*(char **)addrcache_add(s->names, key) = name;
	return name ? name : mangled;
}

/* The name of the function an inlined call inlined, or NULL. */
static const char *inlined_function(struct symbols *s, Dwarf_Die *call)
{
	Dwarf_Attribute attr;
	const char *name;

	name = dwarf_formstring(dwarf_attr_integrate(call, DW_AT_linkage_name,
						     &attr));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(
			call, DW_AT_MIPS_linkage_name, &attr));
	if (name)
		return demangle_once(s, name);
	return dwarf_formstring(dwarf_attr_integrate(call, DW_AT_name, &attr));
}

/* Fill in the file and line an inlined call was made from, if known. */
static void call_place(Dwarf_Die *call, Dwarf_Files *files,
		       struct inline_call *out)
{
	Dwarf_Attribute attr;
	Dwarf_Word file, line;

	if (!files ||
	    dwarf_formudata(dwarf_attr(call, DW_AT_call_file, &attr),
			    &file) != 0 ||
	    dwarf_formudata(dwarf_attr(call, DW_AT_call_line, &attr),
			    &line) != 0 ||
	    line == 0 || line > INT_MAX)
		return;
	out->file = dwarf_filesrc(files, file, NULL, NULL);
	out->line = out->file ? (int)line : 0;
}

/* Fill in out's file and line for pc from m's line table, if it has one. */
static void module_line(struct module *m, uint64_t pc, struct inline_call *out)
{
	Dwfl_Line *line = dwfl_module_getsrc(m->dwfl_mod, pc);
	Dwarf_Addr addr;
	const char *file;
	int lineno = 0;

	if (!line)
		return;
	file = dwfl_lineinfo(line, &addr, &lineno, NULL, NULL, NULL);
	if (file && lineno > 0) {
		out->file = file;
		out->line = lineno;
	}
}

/*
 * The places the code at pc is at, innermost first: its line-table line
 * in the innermost function inlined there, then each inlined call's line
 * in the function around it, the last one in the function holding pc,
 * named symbol. Returns how many (at most INLINE_MAX + 1). A path cut
 * short has no line-table place: that line is in a function left out.
 */
static int module_places(struct symbols *s, struct module *m, uint64_t pc,
			 const char *symbol, struct inline_call *places)
{
	struct inline_path path = { .n = 0 };
	Dwarf_Files *files = NULL;
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(m->dwfl_mod, pc, &bias);
	int n = 0;

	if (cu)
		unit_path(cu, pc - bias, &path);
	if (path.n && dwarf_getsrcfiles(cu, &files, NULL) != 0)
		files = NULL;
	if (!path.cut) {
		places[n] = (struct inline_call){ .function = path.n ?
			inlined_function(s, &path.call[path.n - 1]) : symbol };
		module_line(m, pc, &places[n++]);
	}
	for (int i = path.n; i-- > 0; n++) {
		places[n] = (struct inline_call){ .function = i ?
			inlined_function(s, &path.call[i - 1]) : symbol };
		call_place(&path.call[i], files, &places[n]);
	}
	return n;
}

/*
 * Whether a source file is the system's, not the program's own: under
 * /usr/include, /usr/local/include or /usr/lib (glibc's headers, the
 * compilers' own: /usr/lib/gcc/..., /usr/lib/llvm-N/...), or anywhere in
 * a compiler's tree (libstdc++'s include/c++, a toolchain in /opt). The
 * program's own paths are often relative to its build directory.
 */
static bool system_source(const char *path)
{
	static const char *const under[] = { "/usr/include/",
					     "/usr/local/include/", "/usr/lib/" };
	static const char *const inside[] = { "/include/c++/", "/lib/gcc/",
					      "/lib/clang/" };

	for (size_t i = 0; i < sizeof under / sizeof *under; i++)
		if (strncmp(path, under[i], strlen(under[i])) == 0)
			return true;
	for (size_t i = 0; i < sizeof inside / sizeof *inside; i++)
		if (strstr(path, inside[i]))
			return true;
	return false;
}

/*
 * Fill in out's function, file, line and chain from the places of its
 * code: the innermost in the program's own sources, or if none is, the
 * outermost known (a line of symbol's function).
 */
static void place_site(const struct inline_call *places, int n,
		       struct frame_info *out)
{
	int k = 0;

	while (k < n && (!places[k].file || system_source(places[k].file)))
		k++;
	if (k == n) {
		k = n - 1;
		while (k >= 0 && !places[k].file)
			k--;
	}
	if (k < 0)
		return;
	out->function = places[k].function;
	out->file = places[k].file;
	out->line = places[k].line;
	out->n_inlined = (unsigned)(n - 1 - k);
	if (out->n_inlined)
		out->inlined_in = memcpy(xreallocarray(NULL, out->n_inlined,
						       sizeof *places),
					 &places[k + 1],
					 out->n_inlined * sizeof *places);
}

/*
 * The module of unknown extent whose base is the closest start at or
 * below pc, if within GUESS_SPAN; modules at bias 0 are never guessed.
 */
static struct module *module_guess(struct symbols *s, uint64_t pc)
{
	struct module *best = NULL;
	uint64_t best_start = 0;

	for (size_t i = 0; i < s->nmods; i++) {
		struct module *m = &s->mods[i];
		uint64_t start = m->end ? m->start : m->base;

		if (start && start <= pc && start >= best_start) {
			best = m;
			best_start = start;
		}
	}
	if (!best || best->end || pc - best->base >= GUESS_SPAN)
		return NULL;
	return best;
}

/* The module holding pc, the latest reported when several do. */
static struct module *module_find(struct symbols *s, uint64_t pc)
{
	for (size_t i = s->nmods; i-- > 0;) {
		struct module *m = &s->mods[i];

		if (m->end && pc >= m->start && pc < m->end)
			return m;
	}
	return module_guess(s, pc);
}

/* Fill in out's address, module and offset; the module, or NULL. */
static struct module *resolve_module(struct symbols *s, uint64_t address,
				     uint64_t pc, struct frame_info *out)
{
	struct module *m = module_find(s, pc);

	memset(out, 0, sizeof *out);
	out->address = address;
	if (m) {
		out->module = m->path;
		out->module_offset = address - m->base;
	}
	return m;
}

/* Resolve address without the cache. */
static void resolve(struct symbols *s, uint64_t address, bool is_return,
		    struct frame_info *out)
{
	uint64_t pc = is_return && address ? address - 1 : address;
	struct inline_call places[INLINE_MAX + 1];
	struct module *m = resolve_module(s, address, pc, out);
	struct sym *sym;

	if (!m || m->state != MODULE_TRUSTED || !m->dwfl_mod)
		return;
	sym = module_sym(m, pc);
	if (sym) {
		out->symbol = sym_name(sym);
		out->offset = address - sym->start;
	}
	out->function = out->symbol;
	place_site(places, module_places(s, m, pc, out->symbol, places), out);
}

bool symbols_resolve(struct symbols *s, uint64_t address, int is_return,
		     struct frame_info *out)
{
	struct addrcache *cache = is_return ? s->returns : s->exact;
	struct frame_info *known = addrcache_find(cache, address);

	if (!known && s->budget_ends_ms && clock_now_ms() > s->budget_ends_ms) {
		resolve_module(s, address, is_return && address ? address - 1
								: address, out);
		s->pending++;
		return false;
	}
	if (!known) {
		known = addrcache_add(cache, address);
		resolve(s, address, is_return != 0, known);
	}
	*out = *known;
	return true;
}

/* Reopen the modules of a build id whose debuginfo has landed. */
static void debuginfo_landed(void *ctx, const uint8_t *id, size_t len)
{
	struct symbols *s = ctx;

	for (size_t i = 0; i < s->nmods; i++) {
		struct module *m = &s->mods[i];

		if (m->state == MODULE_TRUSTED && m->build_id_len == len &&
		    memcmp(m->build_id, id, len) == 0)
			module_reopen(s, m);
	}
	cache_clear(s);
	s->generation++;
}

bool symbols_refresh(struct symbols *s)
{
	unsigned generation = s->generation;
	size_t busy = fetch_busy(s->fetch), pending = s->pending;
	const char *failure = fetch_failure(s->fetch);

	fetch_poll(s->fetch, 0, debuginfo_landed, s);
	s->pending = 0;
	s->budget_ends_ms = clock_now_ms() + REFRESH_BUDGET_MS;
	return pending || generation != s->generation ||
	       busy != fetch_busy(s->fetch) || failure != fetch_failure(s->fetch);
}

/*
 * Three quarters of the time for fetches under way, the rest at least for
 * resolving.
 */
void symbols_settle(struct symbols *s, unsigned ms)
{
	int64_t start = clock_now_ms(), fetch_end = start + ms * 3 / 4;

	while (fetch_busy(s->fetch) && clock_now_ms() < fetch_end)
		fetch_poll(s->fetch, (int)(fetch_end - clock_now_ms()),
			   debuginfo_landed, s);
	s->pending = 0;
	s->budget_ends_ms = start + ms;
}

void symbols_progress(const struct symbols *s, bool utf8, char *buf,
		      size_t size)
{
	const char *dots = utf8 ? "\u2026" : "...";
	size_t busy = fetch_busy(s->fetch);

	if (busy)
		snprintf(buf, size, "resolving%s debuginfod: fetching %zu", dots,
			 busy);
	else if (s->pending)
		snprintf(buf, size, "resolving%s", dots);
	else if (size)
		buf[0] = '\0';
}

const char *symbols_fetch_failure(const struct symbols *s)
{
	return fetch_failure(s->fetch);
}

void symbols_stop_fetching(struct symbols *s)
{
	fetch_stop(s->fetch);
}

unsigned symbols_generation(const struct symbols *s)
{
	return s->generation;
}

size_t symbols_modules(const struct symbols *s)
{
	return s->nmods;
}

void symbols_each_function(struct symbols *s, size_t module,
			   void (*fn)(void *ctx, const char *name,
				      uint64_t start, uint64_t end),
			   void *ctx)
{
	struct module *m;

	if (module >= s->nmods)
		return;
	m = &s->mods[module];
	if (m->dwfl_mod == NULL)
		return;
	if (!m->syms_built)
		module_build_syms(m);
	for (size_t i = 0; i < m->nsyms; i++)
		fn(ctx, sym_name(&m->syms[i]), m->syms[i].start, m->syms[i].end);
}

/* A section of elf by name: its data and address; NULL if none. */
static Elf_Data *section(Elf *elf, const char *name, uint64_t *addr)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *n;

		if (gelf_getshdr(scn, &sh) == NULL ||
		    (n = elf_strptr(elf, shstrndx, sh.sh_name)) == NULL ||
		    strcmp(n, name) != 0 || sh.sh_type == SHT_NOBITS)
			continue;
		*addr = sh.sh_addr;
		return elf_getdata(scn, NULL);
	}
	return NULL;
}

/* Index the unwind entries of m's file: each starts a function. */
static void module_build_fdes(struct module *m)
{
	Dwarf_Addr bias;
	Elf *elf;
	Elf_Data *hdr, *eh;
	uint64_t hdr_addr = 0, eh_addr = 0;
	struct cfi_input in;
	size_t n;

	m->fdes_built = true;
	elf = m->dwfl_mod ? dwfl_module_getelf(m->dwfl_mod, &bias) : NULL;
	if (elf == NULL || (hdr = section(elf, ".eh_frame_hdr", &hdr_addr)) == NULL ||
	    (eh = section(elf, ".eh_frame", &eh_addr)) == NULL)
		return;
	in = (struct cfi_input){ hdr->d_buf, hdr->d_size, hdr_addr + m->base,
				 eh->d_buf, eh->d_size, eh_addr + m->base, m->base };
	n = cfi_count_fdes(&in);
	m->fdes = xreallocarray(NULL, n ? n : 1, sizeof *m->fdes);
	m->nfdes = cfi_index(&in, m->fdes, n);
}

/*
 * The extent of the function holding address: its symbol's, or where the
 * module has none (stripped), from the unwind entry (FDE) that starts the
 * function to the next one.
 */
bool symbols_function_at(struct symbols *s, uint64_t address, uint64_t *lo,
			 uint64_t *hi)
{
	struct module *m = module_find(s, address);
	struct sym *sym;
	size_t a = 0, b;
	uint64_t pc;

	if (m == NULL || m->dwfl_mod == NULL)
		return false;
	if ((sym = module_sym(m, address)) != NULL) {
		*lo = sym->start;
		*hi = sym->end;
		return true;
	}
	if (!m->fdes_built)
		module_build_fdes(m);
	pc = address - m->base;
	for (b = m->nfdes; a < b;) {
		size_t mid = a + (b - a) / 2;

		if (m->fdes[mid].pc <= pc)
			a = mid + 1;
		else
			b = mid;
	}
	if (a == 0)
		return false;
	*lo = m->base + m->fdes[a - 1].pc;
	*hi = a < m->nfdes ? m->base + m->fdes[a].pc : (m->end ? m->end : *lo + 1);
	return *hi > *lo;
}

uint64_t symbols_module_base(const struct symbols *s, const char *name)
{
	for (size_t i = 0; i < s->nmods; i++) {
		const char *path = s->mods[i].path, *slash = strrchr(path, '/');

		if (strcmp(path, name) == 0 || (slash && strcmp(slash + 1, name) == 0))
			return s->mods[i].base;
	}
	return 0;
}
