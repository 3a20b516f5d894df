/*
 * The modules of the target, as the collector reported them. Each is
 * opened by path (under the target's root) and checked against its build
 * id; a trusted module is handed to libdwfl, which finds separate
 * debuginfo by build id. A module whose file is missing gets a guessed
 * extent, so that its addresses still get module+offset.
 */
#include "ns.h"
#include "symbols.h"
#include "symbols_impl.h"
#include "xalloc.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How far past its base a module whose extent is unknown may reach. */
#define GUESS_SPAN (256ull << 20)

void symbols_module_free(struct symbols_module *m)
{
	for (size_t j = 0; j < m->nsyms; j++)
		if (m->syms[j].name_owned)
			free((char *)m->syms[j].name);
	free(m->syms);
	free(m->names);
	free(m->data);
	free(m->fdes);
	if (m->own_dwfl)
		dwfl_end(m->own_dwfl);
}

/*
 * Find the span of the PT_LOAD segments of elf, relative to the bias, and
 * the file offset of its start (*lo).
 */
static bool elf_extent(Elf *elf, uint64_t *lo, uint64_t *hi, uint64_t *off)
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
		if ((ph.p_vaddr & ~0xfffull) < *lo) {
			*lo = ph.p_vaddr & ~0xfffull;
			*off = ph.p_offset & ~0xfffull;
		}
		if (ph.p_vaddr + ph.p_memsz > *hi)
			*hi = ph.p_vaddr + ph.p_memsz;
	}
	return *hi > *lo;
}

/* Whether elf is the file the target loaded as m. */
static bool elf_is_loaded_file(Elf *elf, const struct symbols_module *m)
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
static void module_report(struct symbols *s, struct symbols_module *m,
			  Dwfl *dwfl, int fd)
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

/*
 * Open path, as the target names it, beneath its root, if it is a regular
 * file (a FIFO or a device could block, a link could lead out); -1 if not.
 */
static int target_open(const struct symbols *s, const char *path)
{
	char why[PATH_MAX + 64];

	return ns_open_file_of(s->root_pid, path, why, sizeof(why));
}

static int module_open(const struct symbols *s, const struct symbols_module *m)
{
	return target_open(s, m->path);
}

/* Whether the ELF file on fd has build id (id, len) and a .debug_info. */
static bool debuginfo_matches(int fd, const unsigned char *id, int len)
{
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	const void *got;
	size_t strndx;
	GElf_Shdr sh;
	bool dwarf = false;

	if (elf && dwelf_elf_gnu_build_id(elf, &got) == len &&
	    memcmp(got, id, (size_t)len) == 0 &&
	    elf_getshdrstrndx(elf, &strndx) == 0) {
		while (!dwarf && (scn = elf_nextscn(elf, scn)) != NULL) {
			const char *name = gelf_getshdr(scn, &sh) ?
				elf_strptr(elf, strndx, sh.sh_name) : NULL;

			dwarf = name && strcmp(name, ".debug_info") == 0;
		}
	}
	if (elf)
		elf_end(elf);
	return dwarf;
}

/* The i-th place libdw looks for debuglink beside dir: -1 past the last. */
static int debuglink_place(char *out, size_t size, int i, const char *dir,
			   const char *debuglink)
{
	if (i == 0)
		return snprintf(out, size, "%s/%s", dir, debuglink);
	if (i == 1)
		return snprintf(out, size, "%s/.debug/%s", dir, debuglink);
	if (i == 2)
		return snprintf(out, size, "/usr/lib/debug%s/%s", dir, debuglink);
	return -1;
}

int symbols_module_open_debuglink(const struct symbols *s, Dwfl_Module *mod,
				  const char *file, const char *debuglink,
				  char **path)
{
	char dir[PATH_MAX], place[2 * PATH_MAX + 32];
	const unsigned char *id;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(mod, &id, &vaddr);
	const char *slash = file ? strrchr(file, '/') : NULL;

	if (len <= 0 || slash == NULL || strchr(debuglink, '/') ||
	    (size_t)(slash - file) >= sizeof(dir))
		return -1;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - file), file);
	for (int i = 0; debuglink_place(place, sizeof(place), i, dir,
					debuglink) >= 0; i++) {
		int fd = target_open(s, place);

		if (fd >= 0 && debuginfo_matches(fd, id, len)) {
			*path = xstrdup(place);
			return fd;
		}
		if (fd >= 0)
			close(fd);
	}
	return -1;
}

/* Read m's extent and state from the file at its path. */
static void module_load(struct symbols *s, struct symbols_module *m)
{
	int fd = module_open(s, m);
	uint64_t lo, hi, off = 0;
	Elf *elf;

	if (fd < 0)
		return;
	elf = elf_open_loadable(fd);
	if (elf && elf_extent(elf, &lo, &hi, &off) && m->base + lo >= m->base &&
	    m->base + hi > m->base + lo) {
		m->start = m->base + lo;
		m->end = m->base + hi;
		m->file_offset = off;
		m->state = elf_is_loaded_file(elf, m) ? SYMBOLS_MODULE_TRUSTED
						      : SYMBOLS_MODULE_MISMATCH;
	}
	if (elf)
		elf_end(elf);
	if (m->state == SYMBOLS_MODULE_TRUSTED)
		module_report(s, m, s->dwfl, fd);
	close(fd);
}

void symbols_module_reopen(struct symbols *s, struct symbols_module *m)
{
	int fd = module_open(s, m);

	s->retired = xreallocarray(s->retired, s->nretired + 1,
				   sizeof *s->retired);
	s->retired[s->nretired++] = *m;
	m->own_dwfl = symbols_dwfl_begin();
	m->dwfl_mod = NULL;
	m->syms = NULL;
	m->nsyms = 0;
	m->names = NULL;
	m->syms_built = false;
	m->data = NULL;
	m->ndata = 0;
	m->data_built = false;
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
		const struct symbols_module *m = &s->mods[i];

		if (m->base == base && m->build_id_len == len &&
		    strcmp(m->path, path) == 0 &&
		    (len == 0 || memcmp(m->build_id, build_id, len) == 0))
			return true;
	}
	return false;
}

void symbols_set_root(struct symbols *s, pid_t pid)
{
	s->root_pid = pid;
}

void symbols_add_module(struct symbols *s, const char *path, uint64_t base,
			const uint8_t *build_id, size_t build_id_len)
{
	struct symbols_module *m;
	size_t len;

	if (!path)
		return;
	if (!build_id)
		build_id_len = 0;
	if (module_known(s, path, base, build_id, build_id_len))
		return;
	s->mods = xgrow(s->mods, &s->cap, s->nmods + 1, 16, sizeof *s->mods);
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
	symbols_cache_clear(s);
}

/*
 * The module of unknown extent whose base is the closest start at or
 * below pc, if within GUESS_SPAN; modules at bias 0 are never guessed.
 */
static struct symbols_module *module_guess(struct symbols *s, uint64_t pc)
{
	struct symbols_module *best = NULL;
	uint64_t best_start = 0;

	for (size_t i = 0; i < s->nmods; i++) {
		struct symbols_module *m = &s->mods[i];
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

struct symbols_module *symbols_module_find(struct symbols *s, uint64_t pc)
{
	for (size_t i = s->nmods; i-- > 0;) {
		struct symbols_module *m = &s->mods[i];

		if (m->end && pc >= m->start && pc < m->end)
			return m;
	}
	return module_guess(s, pc);
}

size_t symbols_modules(const struct symbols *s)
{
	return s->nmods;
}

bool symbols_mapping(struct symbols *s, uint64_t address,
		     struct symbols_mapping *out)
{
	struct symbols_module *m = symbols_module_find(s, address);

	if (!m || !m->end)
		return false;
	*out = (struct symbols_mapping){ .index = (size_t)(m - s->mods),
		.path = m->path, .start = m->start, .end = m->end,
		.file_offset = m->file_offset, .build_id = m->build_id,
		.build_id_len = m->build_id_len };
	return true;
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
