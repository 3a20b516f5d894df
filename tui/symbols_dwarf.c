/*
 * file:line and the chain of inlined calls, from a module's DWARF. In
 * inlined code file:line is the innermost place in the program's own
 * sources: the line table's line if that is one, else the line of the
 * innermost inlined call made from one (the line using std::lock_guard,
 * not libstdc++'s call to pthread); the calls further out are the chain
 * of where that code was inlined. The names of inlined functions are
 * demangled once each.
 */
#include "addrcache.h"
#include "symbols.h"
#include "symbols_impl.h"
#include "xalloc.h"

#include <dwarf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Inlined calls kept around one address; deeper ones lose their innermost. */
#define INLINE_MAX 64

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
static void module_line(struct symbols_module *m, uint64_t pc,
			struct inline_call *out)
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
static int module_places(struct symbols *s, struct symbols_module *m,
			 uint64_t pc, const char *symbol,
			 struct inline_call *places)
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

void symbols_dwarf_source(struct symbols *s, struct symbols_module *m,
			  uint64_t pc, struct frame_info *out)
{
	struct inline_call places[INLINE_MAX + 1];

	place_site(places, module_places(s, m, pc, out->symbol, places), out);
}
