/*
 * The functions of a module, from its symbol table. libdwfl's own
 * address-to-symbol lookup scans every symbol, so each module gets a
 * sorted table of its functions, built on first use and searched by
 * bisection; a C++ name (or a legacy Rust one) is demangled the first time
 * a lookup lands on it.
 * Where a module has no symbol for an address (stripped), the unwind
 * entries of its .eh_frame tell where functions start.
 */
#include "../common/cfi.h"
#include "symbols.h"
#include "symbols_impl.h"
#include "xalloc.h"

#include <gelf.h>
#include <stdlib.h>
#include <string.h>

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
	const struct symbols_func *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return strcmp(x->name, y->name);
}

/*
 * Read symbol ndx of mod into out if it is a function (data false) or a
 * data object of known size (data true).
 */
static bool sym_read(Dwfl_Module *mod, int ndx, bool data,
		     struct symbols_func *out)
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
	if (data ? type != STT_OBJECT || sym.st_size == 0 :
		   type != STT_FUNC && type != STT_GNU_IFUNC)
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
static size_t syms_finish(struct symbols_func *syms, size_t n)
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
static void syms_strip_versions(struct symbols_module *m)
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

/*
 * A sorted table of m's functions, or of its data objects (STT_OBJECT with
 * a size), from libdwfl's best symbol table, in *out; its length.
 */
static size_t module_table(struct symbols_module *m, bool data,
			   struct symbols_func **out)
{
	int n = dwfl_module_getsymtab(m->dwfl_mod);
	size_t count = 0;

	if (n <= 1)
		return 0;
	*out = xreallocarray(NULL, (size_t)n, sizeof **out);
	for (int i = 1; i < n; i++)
		if (sym_read(m->dwfl_mod, i, data, &(*out)[count]))
			count++;
	qsort(*out, count, sizeof **out, sym_compare);
	return syms_finish(*out, count);
}

/* Build m's sorted function table. */
static void module_build_syms(struct symbols_module *m)
{
	m->syms_built = true;
	m->nsyms = module_table(m, false, &m->syms);
	syms_strip_versions(m);
}

/* Whether a mangled name is Rust's legacy form: its last part is "h" and 16 hex digits. */
static bool rust_legacy(const char *mangled)
{
	size_t n = strlen(mangled);

	return n > 20 && strncmp(mangled + n - 20, "17h", 3) == 0 &&
	       strspn(mangled + n - 17, "0123456789abcdef") == 16 &&
	       mangled[n - 1] == 'E';
}

/* The character a Rust escape ("LT" of "$LT$", "u20") stands for, or 0. */
static char rust_escape(const char *code, size_t len)
{
	static const char names[][3] = { "SP", "BP", "RF", "LT", "GT", "LP",
					 "RP", "C" };
	static const char chars[] = "@*&<>(),";
	unsigned long c;
	char *end;

	for (size_t i = 0; i < sizeof(chars) - 1; i++)
		if (strlen(names[i]) == len && strncmp(code, names[i], len) == 0)
			return chars[i];
	if (len < 2 || code[0] != 'u')
		return 0;
	c = strtoul(code + 1, &end, 16);
	return end == code + len && c >= 0x20 && c < 0x7f ? (char)c : 0;
}

/*
 * A legacy Rust name as the C++ demangler leaves it
 * ("std::sync::mutex::Mutex$LT$T$GT$::lock::h…") made readable in place
 * ("std::sync::mutex::Mutex<T>::lock::h…"), so that patterns such as
 * std::sync::*Mutex<*>::lock* match it.
 */
static void rust_unescape(char *name)
{
	char *out = name;

	for (const char *in = name; *in;) {
		const char *end = in[0] == '$' ? strchr(in + 1, '$') : NULL;
		char c = end ? rust_escape(in + 1, (size_t)(end - in - 1)) : 0;

		if (c) {
			*out++ = c;
			in = end + 1;
		} else if (in[0] == '.' && in[1] == '.') {
			*out++ = ':';
			*out++ = ':';
			in += 2;
		} else if (in[0] == '_' && in[1] == '$' &&
			   (out == name || out[-1] == ':')) {
			in++;
		} else {
			*out++ = *in++;
		}
	}
	*out = '\0';
}

const char *symbols_elf_name(struct symbols_func *sym)
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
		if (rust_legacy(sym->name))
			rust_unescape(demangled);
		sym->name = demangled;
		sym->name_owned = true;
	} else {
		free(demangled);
	}
	return sym->name;
}

/* The innermost of n sorted syms holding pc, or NULL. */
static struct symbols_func *syms_find(struct symbols_func *syms, size_t n,
				      uint64_t pc)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (syms[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Walk back over syms that start earlier but may still reach pc. */
	for (size_t i = lo; i-- > 0 && syms[i].max_end > pc;)
		if (syms[i].end > pc)
			return &syms[i];
	return NULL;
}

struct symbols_func *symbols_elf_sym(struct symbols_module *m, uint64_t pc)
{
	if (!m->syms_built)
		module_build_syms(m);
	return syms_find(m->syms, m->nsyms, pc);
}

/* Build m's sorted table of data objects. */
static void module_build_data(struct symbols_module *m)
{
	m->data_built = true;
	m->ndata = module_table(m, true, &m->data);
}

struct symbols_func *symbols_elf_data(struct symbols_module *m,
				      uint64_t address)
{
	if (!m->data_built)
		module_build_data(m);
	return syms_find(m->data, m->ndata, address);
}

void symbols_each_function(struct symbols *s, size_t module,
			   void (*fn)(void *ctx, const char *name,
				      uint64_t start, uint64_t end),
			   void *ctx)
{
	struct symbols_module *m;

	if (module >= s->nmods)
		return;
	m = &s->mods[module];
	if (m->dwfl_mod == NULL)
		return;
	if (!m->syms_built)
		module_build_syms(m);
	for (size_t i = 0; i < m->nsyms; i++)
		fn(ctx, symbols_elf_name(&m->syms[i]), m->syms[i].start, m->syms[i].end);
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
static void module_build_fdes(struct symbols_module *m)
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
	struct symbols_module *m = symbols_module_find(s, address);
	struct symbols_func *sym;
	size_t a = 0, b;
	uint64_t pc;

	if (m == NULL || m->dwfl_mod == NULL)
		return false;
	if ((sym = symbols_elf_sym(m, address)) != NULL) {
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
