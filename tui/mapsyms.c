/* Modules of a process found in its maps, for the symbols. */
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "maps.h"
#include "mapsyms.h"
#include "ns.h"

/*
 * The lowest PT_LOAD address of the ELF file on fd, page-aligned: a
 * module's load bias is where its first mapping starts minus this (0 for
 * a PIE or a library, the link address for a fixed executable). False
 * when fd is no 64-bit ELF file.
 */
static bool first_load(int fd, uint64_t *vaddr)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;

	if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof ph)
		return false;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) !=
		    (ssize_t)sizeof ph)
			return false;
		if (ph.p_type == PT_LOAD) {
			*vaddr = ph.p_vaddr & ~(uint64_t)0xfff;
			return true;
		}
	}
	return false;
}

/* Add the module whose mapping at file offset 0 is [lo, hi), named path. */
static void add_mapping(struct symbols *symbols, pid_t pid, unsigned long lo,
			unsigned long hi, const char *path)
{
	char file[96], why[256];
	uint64_t vaddr;
	int fd;

	snprintf(file, sizeof(file), "/proc/%d/map_files/%lx-%lx", (int)pid, lo, hi);
	fd = ns_open_mapped(file, why, sizeof(why));
	if (fd < 0)
		return;
	if (first_load(fd, &vaddr))
		symbols_add_module(symbols, path, lo - vaddr, NULL, 0);
	close(fd);
}

/* What a mapping callback needs. */
struct mapsyms_ctx {
	struct symbols *symbols;
	pid_t pid;
};

/* A file's first mapping (offset 0) is a module to read symbols from. */
static void note_module(const struct maps_line *l, void *ctx)
{
	struct mapsyms_ctx *c = ctx;

	if (l->offset == 0 && l->path[0] == '/' &&
	    !strstr(l->path, " (deleted)"))
		add_mapping(c->symbols, c->pid, l->start, l->end, l->path);
}

bool mapsyms_load(struct symbols *symbols, pid_t pid)
{
	struct mapsyms_ctx c = { symbols, pid };

	return maps_each(pid, note_module, &c) == 0;
}
