/* Listing loaded modules and copying their unwind sections; see ehframe.h. */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../common/cfi.h"
#include "ehframe.h"
#include "pages.h"

/* More than this is not the unwind data of a sane module. */
#define EH_MAX (256u << 20)
/* .eh_frame is copied this much at a time, up to its end. */
#define EH_CHUNK (64u << 10)
/* Modules may come and go while we list them: retry this often at most. */
#define LIST_TRIES 8

/* Set once process_vm_readv is refused (seccomp, or no such system call). */
static int vm_refused;

struct list_arg {
	struct ehframe_list *l;
	size_t n;
	int counted;			/* adds and subs are known */
	unsigned long long adds, subs;
};

struct copy_arg {
	const struct ehframe_module *m;
	uint64_t addr;
	void *dst;
	size_t len, got;
};

static void copy_name(char *dst, const char *src)
{
	size_t i = 0;

	for (; src != NULL && i < EHFRAME_NAME - 1 && src[i]; i++)
		dst[i] = src[i];
	dst[i] = '\0';
}

/* Note what a module's program headers say about its code and unwind data. */
static void describe(const struct dl_phdr_info *info, struct ehframe_module *m)
{
	memset(m, 0, sizeof(*m));
	m->base = info->dlpi_addr;
	m->phdr = info->dlpi_phdr;
	m->lo = UINT64_MAX;
	copy_name(m->name, info->dlpi_name);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = m->base + ph->p_vaddr, hi = lo + ph->p_memsz;

		if (ph->p_type == PT_GNU_EH_FRAME) {
			m->hdr_vaddr = ph->p_vaddr;
			m->hdr_size = ph->p_memsz;
		}
		if (ph->p_type != PT_LOAD)
			continue;
		if (m->nloads < EHFRAME_LOADS) {
			m->loads[m->nloads].vaddr = ph->p_vaddr;
			m->loads[m->nloads++].memsz = ph->p_memsz;
		}
		if (ph->p_flags & PF_X) {
			m->lo = lo < m->lo ? lo : m->lo;
			m->hi = hi > m->hi ? hi : m->hi;
		}
	}
	if (m->lo == UINT64_MAX)
		m->lo = m->hi = 0;
}

static void note_counters(const struct dl_phdr_info *info, size_t size,
			  struct list_arg *a)
{
	a->counted = size >= offsetof(struct dl_phdr_info, dlpi_subs) +
			    sizeof(info->dlpi_subs);
	if (a->counted) {
		a->adds = info->dlpi_adds;
		a->subs = info->dlpi_subs;
	}
}

static int counters_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	note_counters(info, size, arg);
	return 1;
}

static int list_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct list_arg *a = arg;

	if (a->n == 0)
		note_counters(info, size, a);
	if (a->n < a->l->cap)
		describe(info, &a->l->v[a->n]);
	a->n++;
	return 0;
}

/* How to walk the modules: dl_iterate_phdr, or the collector's fenced walk. */
static int (*walk)(int (*)(struct dl_phdr_info *, size_t, void *), void *) =
	dl_iterate_phdr;

void ehframe_set_walker(int (*walker)(int (*)(struct dl_phdr_info *, size_t,
					      void *), void *))
{
	walk = walker;
}

int ehframe_changed(const struct ehframe_list *l)
{
	struct list_arg a = { 0 };

	walk(counters_cb, &a);
	return !l->filled || !a.counted || a.adds != l->adds || a.subs != l->subs;
}

static int grow(struct ehframe_list *l, size_t n)
{
	size_t cap = pages_round(n * sizeof(*l->v)) / sizeof(*l->v);
	struct ehframe_module *v = pages_map_anyway(cap * sizeof(*v));

	if (v == NULL)
		return 0;
	pages_unmap(l->v, l->cap * sizeof(*v));
	l->v = v;
	l->cap = cap;
	return 1;
}

int ehframe_list(struct ehframe_list *l)
{
	for (int i = 0; i < LIST_TRIES; i++) {
		struct list_arg a = { l, 0, 0, 0, 0 };

		walk(list_cb, &a);
		if (a.n <= l->cap) {
			l->n = a.n;
			l->adds = a.adds;
			l->subs = a.subs;
			l->filled = a.counted;
			return 1;
		}
		if (!grow(l, a.n + 16))
			return 0;
	}
	return 0;
}

/*
 * The fallback copy. While a callback runs the module it is given cannot
 * be unmapped (dlclose unlinks it, under the lock dl_iterate_phdr holds,
 * before unmapping it), so copying from one of its readable PT_LOAD
 * segments, as the loader lists them now, is safe.
 */
static int copy_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct copy_arg *a = arg;

	(void)size;
	if (info->dlpi_addr != a->m->base || (const void *)info->dlpi_phdr != a->m->phdr)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_R) ||
		    a->addr < lo || a->addr >= hi)
			continue;
		a->got = a->len < hi - a->addr ? a->len : (size_t)(hi - a->addr);
		memcpy(a->dst, (const void *)(uintptr_t)a->addr, a->got);
		break;
	}
	return 1;
}

/*
 * Copy len bytes at addr in module m; returns the bytes copied. Through
 * the kernel first: a module unmapped meanwhile gives EFAULT, not a crash.
 */
static size_t read_mem(const struct ehframe_module *m, uint64_t addr,
		       void *dst, size_t len)
{
	struct copy_arg a = { m, addr, dst, len, 0 };

	if (!vm_refused) {
		struct iovec local = { dst, len };
		struct iovec remote = { (void *)(uintptr_t)addr, len };
		ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);

		if (n >= 0)
			return (size_t)n;
		if (errno != ENOSYS && errno != EPERM)
			return 0;
		vm_refused = 1;
	}
	walk(copy_cb, &a);
	return a.got;
}

/* The end of the PT_LOAD segment of m holding addr; 0 if none does. */
static uint64_t segment_end(const struct ehframe_module *m, uint64_t addr)
{
	for (uint32_t i = 0; i < m->nloads; i++) {
		uint64_t lo = m->base + m->loads[i].vaddr;

		if (addr >= lo && addr - lo < m->loads[i].memsz)
			return lo + m->loads[i].memsz;
	}
	return 0;
}

/* Find .eh_frame through .eh_frame_hdr's eh_frame_ptr. */
static int locate(const struct ehframe_module *m, struct ehframe_copy *c)
{
	size_t want = m->hdr_size < EHFRAME_HDR ? m->hdr_size : EHFRAME_HDR;
	uint64_t p;

	c->hdr_addr = m->base + m->hdr_vaddr;
	c->hdr_len = read_mem(m, c->hdr_addr, c->hdr, want);
	switch (cfi_eh_frame_addr(c->hdr, c->hdr_len, c->hdr_addr, &c->eh_addr)) {
	case 1:
		return 1;
	case 2:
		if (read_mem(m, c->eh_addr, &p, sizeof(p)) != sizeof(p))
			return 0;
		c->eh_addr = p;
		return 1;
	}
	return 0;
}

/*
 * Whether the entries that end at len in eh[0, got) may go on past got:
 * the one at len is cut short (not a terminator, not known to be whole).
 */
static int cut_short(const uint8_t *eh, size_t len, size_t got)
{
	uint32_t n32;
	uint64_t n;

	if (got - len < 4)
		return 1;
	memcpy(&n32, eh + len, 4);
	if (n32 == 0)
		return 0;
	if (n32 != 0xffffffff)
		return n32 > got - len - 4;
	if (got - len < 12)
		return 1;
	memcpy(&n, eh + len + 4, 8);
	return n > got - len - 12;
}

/* The pages spanned by [addr, addr + len). */
static size_t span(uint64_t addr, size_t len)
{
	uint64_t first = addr & ~(uint64_t)(PAGES_SIZE - 1);

	return len == 0 ? 0 : pages_round(addr + len - first);
}

/*
 * Count the pages that copying [got, got + want) of .eh_frame adds: ours,
 * and the module's own that reading them makes resident in the target.
 */
static int charge_chunk(struct ehframe_copy *c, size_t got, size_t want)
{
	size_t ours = pages_round(got + want) - pages_round(got);
	size_t theirs = span(c->eh_addr, got + want) - span(c->eh_addr, got);

	if (!arena_charge_frames(ours + theirs)) {
		c->short_of_memory = 1;
		return 0;
	}
	c->charged += ours;
	c->resident += theirs;
	return 1;
}

/*
 * .eh_frame's size is not recorded: copy it a chunk at a time until its
 * entries end, bounded by its segment, so that only what it holds is read.
 */
static void copy_entries(const struct ehframe_module *m, struct ehframe_copy *c)
{
	size_t got = 0, len = 0;

	while (got < c->eh_map) {
		size_t want = c->eh_map - got < EH_CHUNK ? c->eh_map - got : EH_CHUNK;
		size_t n;

		if (!charge_chunk(c, got, want))
			return;
		n = read_mem(m, c->eh_addr + got, c->eh + got, want);
		got += n;
		len += cfi_eh_frame_len(c->eh + len, got - len);
		if (n < want || !cut_short(c->eh, len, got))
			break;
	}
	c->eh_len = len;
}

/*
 * Whether a table for the .eh_frame the header describes may fit under
 * the cap: its least cost, from the FDEs the header counts.
 */
static int may_fit(struct ehframe_copy *c)
{
	uint64_t n = cfi_fde_count(c->hdr, c->hdr_len, c->hdr_addr);

	if (n <= arena_frames_room() / EHFRAME_FDE_MIN)
		return 1;
	c->short_of_memory = 1;
	return 0;
}

int ehframe_copy(const struct ehframe_module *m, struct ehframe_copy *c)
{
	uint64_t end;

	memset(c, 0, sizeof(*c));
	if (m->hdr_size == 0 || !locate(m, c) || !may_fit(c))
		return 0;
	end = segment_end(m, c->eh_addr);
	if (end == 0)
		return 0;
	c->eh_map = end - c->eh_addr < EH_MAX ? (size_t)(end - c->eh_addr) : EH_MAX;
	c->eh = pages_reserve(c->eh_map);
	if (c->eh == NULL)
		return 0;
	copy_entries(m, c);
	if (c->eh_len == 0 || c->short_of_memory) {
		ehframe_release(c);
		arena_uncharge_frames(c->resident);
		c->resident = 0;
		return 0;
	}
	return 1;
}

void ehframe_release(struct ehframe_copy *c)
{
	pages_unreserve(c->eh, c->eh_map);
	arena_uncharge_frames(c->charged);
	c->eh = NULL;
	c->eh_len = c->eh_map = c->charged = 0;
}
