/*
 * Symbolization of the target's addresses: the public API. Finished
 * answers are cached per address, each with its chain of inlined calls;
 * the strings handed out point into module records, libdw's loaded files
 * and the demangled names of inlined functions, all kept until
 * symbols_free(). Modules are symbols_module.c's, their function tables
 * symbols_elf.c's, file:line and inlined calls symbols_dwarf.c's.
 *
 * Nothing here waits on the network: libdwfl looks for debuginfo in local
 * files and in debuginfod's cache only, and asks tui/fetch for the rest;
 * when a module's debuginfo lands, the module is opened again in a Dwfl of
 * its own (the old one is kept: handed-out strings point into it). Each
 * refresh has a time budget for new addresses; past it, an address gets
 * its module and offset only, and its name on a later refresh.
 */
#include "../common/clock.h"
#include "addrcache.h"
#include "fetch.h"
#include "symbols.h"
#include "symbols_impl.h"
#include "xalloc.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Time a refresh may spend on new addresses: libc's take ~40 us each, so
 * only programs with thousands of call sites in big binaries notice.
 */
#define REFRESH_BUDGET_MS 250

/*
 * Local files by build id (libdwfl, under /usr/lib/debug/.build-id), by
 * debuglink beside the module (ours: beneath the target's root, regular
 * files only, checked by build id: libdwfl's own search would open any
 * path the target names, a FIFO too), and then debuginfod's cache; what
 * is in none is asked of the fetcher. libdwfl asks a server itself only
 * when DEBUGINFOD_URLS is set, and the fetcher took it out. An alternate
 * (dwz) file is asked for by its name, without a CRC: it is only looked
 * for locally, by its build id.
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

	fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file,
					  debuglink, crc, debuginfo_file);
	if (fd < 0 && debuglink && crc != 0)
		fd = symbols_module_open_debuglink(s, mod, file, debuglink,
						   debuginfo_file);
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

Dwfl *symbols_dwfl_begin(void)
{
	return dwfl_begin(&dwfl_callbacks);
}

struct symbols *symbols_new(void)
{
	struct symbols *s = xcalloc(1, sizeof *s);

	s->fetch = fetch_new();
	elf_version(EV_CURRENT);
	s->dwfl = symbols_dwfl_begin();
	s->returns = addrcache_new(sizeof(struct frame_info));
	s->exact = addrcache_new(sizeof(struct frame_info));
	s->names = addrcache_new(sizeof(char *));
	return s;
}

static void drop_answer(void *answer)
{
	free((void *)((struct frame_info *)answer)->inlined_in);
}

static void drop_name(void *name)
{
	free(*(char **)name);
}

void symbols_free(struct symbols *s)
{
	if (!s)
		return;
	fetch_free(s->fetch);
	addrcache_free(s->returns, drop_answer);
	addrcache_free(s->exact, drop_answer);
	for (size_t i = 0; i < s->nretired; i++)
		symbols_module_free(&s->retired[i]);
	for (size_t i = 0; i < s->nmods; i++) {
		symbols_module_free(&s->mods[i]);
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

/* Forget every cached answer: a new module may change them. */
void symbols_cache_clear(struct symbols *s)
{
	addrcache_clear(s->returns, drop_answer);
	addrcache_clear(s->exact, drop_answer);
}

/* Fill in out's address, module and offset; the module, or NULL. */
static struct symbols_module *resolve_module(struct symbols *s,
					     uint64_t address, uint64_t pc,
					     struct frame_info *out)
{
	struct symbols_module *m = symbols_module_find(s, pc);

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
	struct symbols_module *m = resolve_module(s, address, pc, out);
	struct symbols_func *sym;

	if (!m || m->state != SYMBOLS_MODULE_TRUSTED || !m->dwfl_mod)
		return;
	sym = symbols_elf_sym(m, pc);
	if (sym) {
		out->symbol = symbols_elf_name(sym);
		out->offset = address - sym->start;
	}
	out->function = out->symbol;
	symbols_dwarf_source(s, m, pc, out);
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

bool symbols_data(struct symbols *s, uint64_t address, const char **name,
		  uint64_t *offset)
{
	struct symbols_module *m = symbols_module_find(s, address);
	struct symbols_func *sym;

	if (!m || m->state != SYMBOLS_MODULE_TRUSTED || !m->dwfl_mod ||
	    !(sym = symbols_elf_data(m, address)))
		return false;
	*name = sym->name;
	*offset = address - sym->start;
	return true;
}

/* Reopen the modules of a build id whose debuginfo has landed. */
static void debuginfo_landed(void *ctx, const uint8_t *id, size_t len)
{
	struct symbols *s = ctx;

	for (size_t i = 0; i < s->nmods; i++) {
		struct symbols_module *m = &s->mods[i];

		if (m->state == SYMBOLS_MODULE_TRUSTED &&
		    m->build_id_len == len && memcmp(m->build_id, id, len) == 0)
			symbols_module_reopen(s, m);
	}
	symbols_cache_clear(s);
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
