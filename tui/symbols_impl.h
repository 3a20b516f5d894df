/*
 * The symbol resolver's insides, shared by symbols.c (the public API:
 * answers cached per address, the time budget per refresh, debuginfo
 * fetched in the background), symbols_module.c (modules: their files,
 * build ids and place in libdwfl), symbols_elf.c (sorted function tables
 * and unwind entries) and symbols_dwarf.c (file:line and chains of
 * inlined calls). Not for use outside them.
 */
#ifndef QSPTOP_SYMBOLS_IMPL_H
#define QSPTOP_SYMBOLS_IMPL_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct addrcache;
struct cfi_fde;
struct fetch;
struct frame_info;

/* libstdc++'s demangler (link -lstdc++); returns a malloc'd string. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* What the file at a module's path tells about the loaded module. */
enum symbols_module_state {
	SYMBOLS_MODULE_MISSING,	/* no usable ELF file: extent unknown */
	SYMBOLS_MODULE_MISMATCH, /* an ELF file, but not the one loaded */
	SYMBOLS_MODULE_TRUSTED,	/* symbols and lines come from the file */
};

/* A function in a module's symbol table, at its address in the target. */
struct symbols_func {
	uint64_t start;
	uint64_t end;		/* start + size; start + 1 when size is 0 */
	uint64_t max_end;	/* largest end of this and every earlier sym */
	const char *name;
	int rank;		/* lower wins among syms at one address */
	bool name_final;	/* demangling was tried on name */
	bool name_owned;	/* name is the demangler's, freed with the table */
};

struct symbols_module {
	char *path;
	uint64_t base;		/* load bias */
	uint64_t start, end;	/* extent in the target; end 0 when unknown */
	uint64_t file_offset;	/* of start in the file */
	uint8_t *build_id;
	size_t build_id_len;
	enum symbols_module_state state;
	Dwfl_Module *dwfl_mod;	/* NULL unless trusted and libdwfl took it */
	Dwfl *own_dwfl;		/* dwfl_mod's, once reopened; else shared */
	struct symbols_func *syms;
	size_t nsyms;
	char *names;		/* syms' names stripped of a default version */
	bool syms_built;
	struct symbols_func *data; /* its data objects by address (names */
	size_t ndata;		/* as they are: C names, not demangled) */
	bool data_built;
	struct cfi_fde *fdes;	/* its unwind entries by address, for */
	size_t nfdes;		/* functions without a symbol */
	bool fdes_built;
};

struct symbols {
	Dwfl *dwfl;
	struct symbols_module *mods;
	size_t nmods, cap;
	struct symbols_module *retired;	/* symbol state of reopened modules */
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
	pid_t root_pid;			/* modules are named in its root; 0: ours */
};

/* Forget every cached answer: a new module may change them. */
void symbols_cache_clear(struct symbols *s);

/*
 * A Dwfl that looks for its modules' debuginfo in local files and
 * debuginfod's cache, and asks the fetcher for the rest; each module's
 * userdata must be its struct symbols.
 */
Dwfl *symbols_dwfl_begin(void);

/*
 * Open trusted module m again in a Dwfl of its own, which finds the
 * debuginfo that has landed since; its old symbols are kept until
 * symbols_free(): strings handed out point into them.
 */
void symbols_module_reopen(struct symbols *s, struct symbols_module *m);

/*
 * The separate debuginfo that file (a module's path, as the target names
 * it) names in its .gnu_debuglink: looked for where libdw would (beside
 * it, in .debug there, under /usr/lib/debug), but beneath the target's
 * root, regular files only, and only one with the module's build id and
 * DWARF in it. The descriptor (path set to a copy of its name), or -1.
 */
int symbols_module_open_debuglink(const struct symbols *s, Dwfl_Module *mod,
				  const char *file, const char *debuglink,
				  char **path);

/* Free what m's symbols came from and were made of. */
void symbols_module_free(struct symbols_module *m);

/* The module holding pc, the latest reported when several do; or NULL. */
struct symbols_module *symbols_module_find(struct symbols *s, uint64_t pc);

/* The innermost function of m holding pc, or NULL. */
struct symbols_func *symbols_elf_sym(struct symbols_module *m, uint64_t pc);

/* The data object of m holding address, or NULL. */
struct symbols_func *symbols_elf_data(struct symbols_module *m,
				      uint64_t address);

/* The name of sym to show: a C++ name demangled once, or kept as it is. */
const char *symbols_elf_name(struct symbols_func *sym);

/*
 * Fill in out's function, file, line and chain of inlined calls for pc in
 * trusted module m, from its DWARF; out->symbol, the function holding pc,
 * is the chain's outermost.
 */
void symbols_dwarf_source(struct symbols *s, struct symbols_module *m,
			  uint64_t pc, struct frame_info *out);

#endif
