/* Listing loaded modules with their load bias and GNU build id. */
#include <elf.h>
#include <stdint.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "modules.h"

/* Copy the GNU build id found in the PT_NOTE segments of a module. */
static void read_build_id(const struct dl_phdr_info *info,
			  struct proto_module *m)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		const char *end = p + ph->p_memsz;

		if (ph->p_type != PT_NOTE)
			continue;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			const char *name = p + sizeof(*n);
			const char *desc = name + ((n->n_namesz + 3) & ~3u);

			if (desc + n->n_descsz > end)
				break;
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    memcmp(name, "GNU", 4) == 0 &&
			    n->n_descsz <= PROTO_BUILD_ID_MAX) {
				memcpy(m->build_id, desc, n->n_descsz);
				m->build_id_len = (uint16_t)n->n_descsz;
				return;
			}
			p = desc + ((n->n_descsz + 3) & ~3u);
		}
	}
}

/* The executable's path; dl_iterate_phdr names it "". */
static void module_path(const struct dl_phdr_info *info, char *out, size_t size)
{
	ssize_t n;

	if (info->dlpi_name && info->dlpi_name[0]) {
		strncpy(out, info->dlpi_name, size - 1);
		out[size - 1] = '\0';
		return;
	}
	n = readlink("/proc/self/exe", out, size - 1);
	out[n > 0 ? n : 0] = '\0';
}

static int known(const struct modules *ms, uint64_t base, const char *path)
{
	for (size_t i = 0; i < ms->n; i++) {
		if (ms->v[i].base == base && strcmp(ms->v[i].path, path) == 0)
			return 1;
	}
	return 0;
}

static int add_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct modules *ms = arg;
	struct proto_module m;
	struct proto_module *v;

	(void)size;
	memset(&m, 0, sizeof(m));
	m.base = info->dlpi_addr;
	module_path(info, m.path, sizeof(m.path));
	if (m.path[0] == '\0' || known(ms, m.base, m.path))
		return 0;
	read_build_id(info, &m);
	v = realloc(ms->v, (ms->n + 1) * sizeof(*v));
	if (v == NULL)
		return 1;
	ms->v = v;
	ms->v[ms->n++] = m;
	return 0;
}

/* Read dlpi_adds, the loader's count of modules ever loaded. */
static int read_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs))
		*(unsigned long long *)arg = info->dlpi_adds;
	return 1;
}

/* What modules_extent() looks for, and what it found. */
struct extent_query {
	uint64_t addr;
	uint64_t lo, hi;
	int found;
};

static int find_extent(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct extent_query *q = arg;
	uint64_t lo = UINT64_MAX, hi = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD)
			continue;
		lo = start < lo ? start : lo;
		hi = start + ph->p_memsz > hi ? start + ph->p_memsz : hi;
	}
	if (q->addr < lo || q->addr >= hi)
		return 0;
	q->lo = lo;
	q->hi = hi;
	q->found = 1;
	return 1;
}

int modules_extent(const void *addr, uint64_t *lo, uint64_t *hi)
{
	struct extent_query q = { .addr = (uint64_t)(uintptr_t)addr };

	dl_iterate_phdr(find_extent, &q);
	*lo = q.lo;
	*hi = q.hi;
	return q.found ? 0 : -1;
}

size_t modules_refresh(struct modules *ms)
{
	unsigned long long adds = 0;
	size_t before = ms->n;

	dl_iterate_phdr(read_adds, &adds);
	if (ms->n > 0 && adds == ms->adds)
		return 0;
	ms->adds = adds;
	dl_iterate_phdr(add_one, ms);
	return ms->n - before;
}

void modules_free(struct modules *ms)
{
	free(ms->v);
	memset(ms, 0, sizeof(*ms));
}
