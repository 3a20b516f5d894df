/*
 * GOT patching: how a dlopen'ed collector sends the process's lock calls to
 * its hooks, and gives them back.
 *
 * Every module but libc, the loader, the vdso, the unwinder and ourselves
 * is walked with dl_iterate_phdr: its JUMP_SLOT relocations (calls through
 * the PLT) and GLOB_DAT ones (-fno-plt calls, function pointers taken in
 * PIE code) that name a hooked function get the hook's address, provided
 * the slot holds libc's function or the module's own lazy-binding stub;
 * anything else is another interposer's, and is left alone. References to
 * another version than the hook's (the pre-2.3.2 condvars) are skipped.
 *
 * The loader holds its write lock while a dl_iterate_phdr callback runs,
 * and dlclose unmaps under that lock: every slot is read and written from
 * inside the callback of the module that owns it, so never after unmap.
 *
 * A module is patched only once the loader has relocated it and applied
 * RELRO (note_ready()), so that the protection read from /proc/self/maps
 * before the walk is the one to give back. What the walk keeps comes
 * from the arena, never from the host's malloc: a host thread may hold an
 * allocator lock while it waits for the loader's lock we hold.
 *
 * A thread that is inside the lazy-binding resolver when a slot is patched
 * writes libc's address over the hook a moment later: every scan checks
 * the slots again and patches those back. A slot holding anything else
 * was rewritten by the program, and is forgotten.
 *
 * The unlock hook (hooked.holders) is patched on its own, only while
 * holders are tracked, whether the collector was injected or preloaded:
 * preloaded, the other hooks are bound by the loader and never touched.
 */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arena.h"
#include "got.h"
#include "hooks.h"
#include "modules.h"

/* One GOT slot pointed at a hook. */
struct slot {
	void **addr;
	void *original;		/* libc's function, or the lazy-binding stub */
	const struct hooked *h;
	bool lost;		/* the program rewrote it: never touched again */
};

/* A module with slots, known by base, program headers and name. */
struct module {
	uintptr_t base;
	const void *phdr;
	char *name;
	size_t name_size;
	struct slot *slots;
	uint32_t n, cap;
	bool seen;		/* found by the current pass */
};

static struct {
	struct module *v;
	uint32_t n, cap;
	unsigned long long adds, subs;	/* loader counters at the last scan */
	bool active;		/* the lock hooks are patched (injected) */
	bool holders;		/* the unlock hook is patched */
} got;

/* A module's dynamic section, every pointer checked against its segments. */
struct image {
	const struct dl_phdr_info *info;
	const ElfW(Rela) *jmprel, *rela;
	size_t njmprel, nrela;
	const ElfW(Sym) *symtab;
	const char *strtab;
	size_t strsz;
	const ElfW(Half) *versym;
	const ElfW(Verneed) *verneed;
	size_t nverneed;
};

enum pass_kind { PASS_PATCH, PASS_VERIFY, PASS_RESTORE };

/* Whether slots of hook h are patched now. */
static bool wanted(const struct hooked *h)
{
	return h->holders ? got.holders : got.active;
}

/* Modules the loader has finished relocating, by base and headers. */
struct ready {
	struct ready_module { uintptr_t base; const void *phdr; } *v;
	uint32_t n, cap;
};

/* One walk over the modules. */
struct pass {
	enum pass_kind kind;
	char *maps;		/* /proc/self/maps, read before the walk */
	size_t maps_size;
	struct ready ready;
};

/*
 * An address from the dynamic section. glibc relocates most d_ptr values
 * in place (DT_SYMTAB, DT_JMPREL, ...), but not DT_VERNEED, nor any in
 * the vdso: a value below the load base still needs it added.
 */
static const void *dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) v)
{
	if (info->dlpi_addr != 0 && v < info->dlpi_addr)
		v += info->dlpi_addr;
	return (const void *)v;
}

/* Read the tags we use from one dynamic entry. */
static void read_tag(struct image *img, const ElfW(Dyn) *d, size_t *sizes)
{
	const struct dl_phdr_info *info = img->info;

	switch (d->d_tag) {
	case DT_JMPREL: img->jmprel = dyn_ptr(info, d->d_un.d_ptr); break;
	case DT_PLTRELSZ: sizes[0] = d->d_un.d_val; break;
	case DT_PLTREL: sizes[1] = d->d_un.d_val; break;
	case DT_RELA: img->rela = dyn_ptr(info, d->d_un.d_ptr); break;
	case DT_RELASZ: sizes[2] = d->d_un.d_val; break;
	case DT_RELAENT: sizes[3] = d->d_un.d_val; break;
	case DT_SYMTAB: img->symtab = dyn_ptr(info, d->d_un.d_ptr); break;
	case DT_SYMENT: sizes[4] = d->d_un.d_val; break;
	case DT_STRTAB: img->strtab = dyn_ptr(info, d->d_un.d_ptr); break;
	case DT_STRSZ: img->strsz = d->d_un.d_val; break;
	case DT_VERSYM: img->versym = dyn_ptr(info, d->d_un.d_ptr); break;
	case DT_VERNEED: img->verneed = dyn_ptr(info, d->d_un.d_ptr); break;
	case DT_VERNEEDNUM: img->nverneed = d->d_un.d_val; break;
	default: break;
	}
}

/* Find the relocation tables and symbols of a module; -1 if unusable. */
static int image_open(struct image *img, const struct dl_phdr_info *info)
{
	/* DT_PLTRELSZ, DT_PLTREL, DT_RELASZ, DT_RELAENT, DT_SYMENT */
	size_t sizes[5] = { 0, DT_RELA, 0, sizeof(ElfW(Rela)), sizeof(ElfW(Sym)) };
	const ElfW(Dyn) *d = NULL;

	memset(img, 0, sizeof(*img));
	img->info = info;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			d = (const void *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	}
	for (; d && modules_in_segment(info, d, sizeof(*d), PF_R) && d->d_tag != DT_NULL; d++)
		read_tag(img, d, sizes);
	if (img->symtab == NULL || sizes[4] != sizeof(ElfW(Sym)) ||
	    img->strtab == NULL || !modules_in_segment(info, img->strtab, img->strsz, PF_R))
		return -1;
	if (sizes[1] == DT_RELA && modules_in_segment(info, img->jmprel, sizes[0], PF_R))
		img->njmprel = sizes[0] / sizeof(ElfW(Rela));
	if (sizes[3] == sizeof(ElfW(Rela)) &&
	    modules_in_segment(info, img->rela, sizes[2], PF_R))
		img->nrela = sizes[2] / sizeof(ElfW(Rela));
	return 0;
}

/* The string at off in the string table, or NULL past its end. */
static const char *str_at(const struct image *img, size_t off)
{
	if (off >= img->strsz ||
	    memchr(img->strtab + off, '\0', img->strsz - off) == NULL)
		return NULL;
	return img->strtab + off;
}

static const char *sym_name(const struct image *img, size_t idx)
{
	const ElfW(Sym) *sym = img->symtab + idx;

	if (!modules_in_segment(img->info, sym, sizeof(*sym), PF_R))
		return NULL;
	return str_at(img, sym->st_name);
}

/* The version a reference to symbol idx needs, or NULL if unversioned. */
static const char *version_of(const struct image *img, size_t idx)
{
	const struct dl_phdr_info *info = img->info;
	const ElfW(Verneed) *vn = img->verneed;
	unsigned want;

	if (img->versym == NULL ||
	    !modules_in_segment(info, img->versym + idx, sizeof(ElfW(Half)), PF_R))
		return NULL;
	want = img->versym[idx] & 0x7fff;
	for (size_t i = 0; want >= 2 && vn && i < img->nverneed &&
	     modules_in_segment(info, vn, sizeof(*vn), PF_R); i++) {
		const ElfW(Vernaux) *a = (const void *)((const char *)vn + vn->vn_aux);

		for (unsigned j = 0; j < vn->vn_cnt &&
		     modules_in_segment(info, a, sizeof(*a), PF_R); j++) {
			if (a->vna_other == want)
				return str_at(img, a->vna_name);
			a = (const void *)((const char *)a + a->vna_next);
		}
		if (vn->vn_next == 0)
			break;
		vn = (const void *)((const char *)vn + vn->vn_next);
	}
	return NULL;
}

/* Modules whose calls are never redirected: libc, its loader, ourselves. */
static bool skipped(const struct dl_phdr_info *info)
{
	static const char *const prefixes[] = {
		"libc.so.6", "ld-linux-x86-64.so.2", "libunwind", "libgcc_s",
		"linux-vdso.so.1",
	};
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	const char *base = strrchr(name, '/');

	base = base ? base + 1 : name;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		if (strncmp(base, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	}
	return modules_in_segment(info, (const void *)got_patch_all, 1, 0);
}

static struct module *find_module(const struct dl_phdr_info *info)
{
	const char *name = info->dlpi_name ? info->dlpi_name : "";

	for (size_t i = 0; i < got.n; i++) {
		struct module *m = &got.v[i];

		if (m->base == info->dlpi_addr && m->phdr == info->dlpi_phdr &&
		    strcmp(m->name, name) == 0)
			return m;
	}
	return NULL;
}

/*
 * Every allocation of a walk comes from the arena: it takes no lock the
 * host could hold while it waits for the loader's.
 */
static struct module *add_module(const struct dl_phdr_info *info)
{
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	size_t size = strlen(name) + 1;
	struct module *m;
	char *copy;

	if (!arena_grow((void **)&got.v, &got.cap, got.n, 16, sizeof(*got.v)))
		return NULL;
	copy = arena_alloc(size);
	if (copy == NULL)
		return NULL;
	memcpy(copy, name, size);
	m = &got.v[got.n++];
	memset(m, 0, sizeof(*m));
	m->base = info->dlpi_addr;
	m->phdr = info->dlpi_phdr;
	m->name = copy;
	m->name_size = size;
	return m;
}

static struct slot *find_slot(struct module *m, void **addr)
{
	for (size_t i = 0; i < m->n; i++) {
		if (m->slots[i].addr == addr)
			return &m->slots[i];
	}
	return NULL;
}

static struct slot *add_slot(struct module *m, void **addr, void *original,
			     const struct hooked *h)
{
	if (!arena_grow((void **)&m->slots, &m->cap, m->n, 8, sizeof(*m->slots)))
		return NULL;
	m->slots[m->n] = (struct slot){ .addr = addr, .original = original, .h = h };
	return &m->slots[m->n++];
}

/*
 * The whole of /proc/self/maps, NUL-terminated, into p (arena memory);
 * read before a walk, never inside one.
 */
static void read_maps(struct pass *p)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	uint32_t len = 0, cap = 0;
	char *buf = NULL;
	ssize_t n = 1;

	/* At least 4 KiB free for each read. */
	while (fd >= 0 && n > 0 &&
	       arena_grow((void **)&buf, &cap, len + 4096, 16384, 1)) {
		n = read(fd, buf + len, cap - len - 1);
		len += n > 0 ? (uint32_t)n : 0;
	}
	if (fd >= 0)
		close(fd);
	if (buf && n != 0) {
		arena_free(buf, cap);
		buf = NULL;
	}
	if (buf)
		buf[len] = '\0';
	p->maps = buf;
	p->maps_size = cap;
}

/* The protection of the private mapping holding page; -1 if none. */
static int page_prot(struct pass *p, uintptr_t page)
{
	if (p->maps == NULL)
		return -1;
	for (const char *line = p->maps; line && *line; ) {
		unsigned long lo, hi;
		char perms[5];

		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 &&
		    page >= lo && page < hi) {
			if (perms[3] != 'p')
				return -1;
			return (perms[0] == 'r' ? PROT_READ : 0) |
			       (perms[1] == 'w' ? PROT_WRITE : 0) |
			       (perms[2] == 'x' ? PROT_EXEC : 0);
		}
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	return -1;
}

/*
 * Store value in a slot. Full RELRO left the page read-only: make it
 * writable for the one aligned 8-byte store (atomic on x86_64, so a
 * caller reads the old or the new address, never half of each), then
 * give the page back exactly the protection it had.
 */
static bool store(struct pass *p, void **addr, void *value)
{
	size_t pagesize = (size_t)sysconf(_SC_PAGESIZE);
	void *page = (void *)((uintptr_t)addr & ~(uintptr_t)(pagesize - 1));
	int prot = page_prot(p, (uintptr_t)page);
	bool ro = prot >= 0 && !(prot & PROT_WRITE);

	if (prot < 0 || (ro && mprotect(page, pagesize, prot | PROT_WRITE) < 0))
		return false;
	__atomic_store_n(addr, value, __ATOMIC_SEQ_CST);
	if (ro)
		mprotect(page, pagesize, prot);
	return __atomic_load_n(addr, __ATOMIC_SEQ_CST) == value;
}

/* Check a known slot: patch it back, or let it go if the program took it. */
static void check_slot(struct pass *p, struct slot *s)
{
	void *v = __atomic_load_n(s->addr, __ATOMIC_ACQUIRE);

	if (s->lost || v == s->h->hook)
		return;
	if (v != s->original && v != __atomic_load_n(s->h->real, __ATOMIC_RELAXED)) {
		s->lost = true;
		return;
	}
	store(p, s->addr, s->h->hook);
}

/* A slot seen in a relocation: new ones are patched, known ones checked. */
static void patch_slot(struct pass *p, const struct image *img,
		       struct module *m, void **addr, const struct hooked *h)
{
	struct slot *s = find_slot(m, addr);
	void *v = __atomic_load_n(addr, __ATOMIC_ACQUIRE);
	void *libc = __atomic_load_n(h->real, __ATOMIC_RELAXED);

	if (s) {
		check_slot(p, s);
		return;
	}
	if (v == h->hook) {
		add_slot(m, addr, libc, h);
		return;
	}
	/* libc's function, or this module's lazy stub (in its own code). */
	if (v != libc && !modules_in_segment(img->info, v, 1, PF_X))
		return;
	if ((s = add_slot(m, addr, v, h)) != NULL && !store(p, addr, h->hook))
		m->n--;
}

/* Patch every slot of one relocation table that names a hooked function. */
static void patch_table(struct pass *p, const struct image *img,
			struct module *m, const ElfW(Rela) *r, size_t n,
			uint32_t type)
{
	for (size_t i = 0; i < n; i++, r++) {
		size_t sym = ELF64_R_SYM(r->r_info);
		const char *name, *version;
		const struct hooked *h;
		void **addr;

		if (ELF64_R_TYPE(r->r_info) != type ||
		    (name = sym_name(img, sym)) == NULL ||
		    (strncmp(name, "pthread_", 8) != 0 &&
		     strncmp(name, "sem_", 4) != 0 &&
		     strcmp(name, "syscall") != 0) ||
		    (h = hooks_find(name)) == NULL || !wanted(h))
			continue;
		version = version_of(img, sym);
		if (h->version && (version == NULL || strcmp(version, h->version)))
			continue;	/* another ABI (old condvars): not ours */
		addr = (void **)(img->info->dlpi_addr + r->r_offset);
		if ((uintptr_t)addr % sizeof(*addr) == 0 &&
		    modules_in_segment(img->info, addr, sizeof(*addr), PF_R | PF_W))
			patch_slot(p, img, m, addr, h);
	}
}

/*
 * Put back the original of every slot of a hook no longer wanted that
 * still holds it, and forget those slots.
 */
static void restore_module(struct pass *p, struct module *m)
{
	uint32_t kept = 0;

	for (size_t i = 0; i < m->n; i++) {
		struct slot *s = &m->slots[i];

		if (wanted(s->h)) {
			m->slots[kept++] = *s;
			continue;
		}
		if (!s->lost && __atomic_load_n(s->addr, __ATOMIC_ACQUIRE) == s->h->hook)
			store(p, s->addr, s->original);
	}
	m->n = kept;
}

/* The address of a module's first loaded byte. */
static void *first_byte(const struct dl_phdr_info *info)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type == PT_LOAD)
			return (void *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	}
	return NULL;
}

/*
 * Note the modules glibc has relocated and protected (RELRO) already:
 * _dl_find_object only knows a dlopen'ed module from then on. A module
 * still being loaded must not be touched: making its GOT read-only again
 * under the relocating loader would crash the host.
 */
static int note_ready(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct ready *r = arg;
	struct dl_find_object found;
	void *first = first_byte(info);

	(void)size;
	if (first == NULL || _dl_find_object(first, &found) != 0)
		return 0;
	if (!arena_grow((void **)&r->v, &r->cap, r->n, 64, sizeof(*r->v)))
		return 0;
	r->v[r->n++] = (struct ready_module){ info->dlpi_addr, info->dlpi_phdr };
	return 0;
}

static bool is_ready(const struct ready *r, const struct dl_phdr_info *info)
{
	for (size_t i = 0; i < r->n; i++) {
		if (r->v[i].base == info->dlpi_addr && r->v[i].phdr == info->dlpi_phdr)
			return true;
	}
	return false;
}

static int visit(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct pass *p = arg;
	struct module *m;
	struct image img;

	(void)size;
	if (skipped(info))
		return 0;
	m = find_module(info);
	if (m)
		m->seen = true;
	if (p->kind == PASS_RESTORE && m) {
		restore_module(p, m);
	} else if (p->kind == PASS_VERIFY && m) {
		for (size_t i = 0; i < m->n; i++)
			check_slot(p, &m->slots[i]);
	} else if (p->kind == PASS_PATCH && (m || is_ready(&p->ready, info)) &&
		   image_open(&img, info) == 0 && (m || (m = add_module(info)))) {
		m->seen = true;
		patch_table(p, &img, m, img.jmprel, img.njmprel, R_X86_64_JUMP_SLOT);
		patch_table(p, &img, m, img.rela, img.nrela, R_X86_64_GLOB_DAT);
	}
	return 0;
}

/* Drop the modules a pass did not find (unloaded), or all of them. */
static void forget_modules(bool all)
{
	size_t kept = 0;

	for (size_t i = 0; i < got.n; i++) {
		struct module *m = &got.v[i];

		if (all || !m->seen || m->n == 0) {
			arena_free(m->name, m->name_size);
			arena_free(m->slots, m->cap * sizeof(*m->slots));
			continue;
		}
		got.v[kept++] = *m;
	}
	got.n = kept;
}

static int read_counters(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *c = arg;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		c[0] = info->dlpi_adds;
		c[1] = info->dlpi_subs;
	}
	return 1;
}

static void run_pass(enum pass_kind kind)
{
	struct pass p = { .kind = kind };
	unsigned long long c[2] = { 0, 0 };

	/* Counters first: a module loaded during the pass gets the next one. */
	modules_iterate(read_counters, c);
	got.adds = c[0];
	got.subs = c[1];
	if (kind == PASS_PATCH)
		modules_iterate(note_ready, &p.ready);
	read_maps(&p);
	for (size_t i = 0; i < got.n; i++)
		got.v[i].seen = false;
	modules_iterate(visit, &p);
	arena_free(p.maps, p.maps_size);
	arena_free(p.ready.v, p.ready.cap * sizeof(*p.ready.v));
	forget_modules(kind == PASS_RESTORE && !got.active && !got.holders);
}

void got_patch_all(void)
{
	got.active = true;
	run_pass(PASS_PATCH);
}

void got_refresh(void)
{
	unsigned long long c[2] = { 0, 0 };

	if (!got.active && !got.holders)
		return;
	modules_iterate(read_counters, c);
	run_pass(c[0] != got.adds || c[1] != got.subs ? PASS_PATCH : PASS_VERIFY);
}

void got_restore_all(void)
{
	got.active = false;
	got.holders = false;
	run_pass(PASS_RESTORE);
}

void got_set_holders(bool on)
{
	if (on == got.holders)
		return;
	got.holders = on;
	run_pass(on ? PASS_PATCH : PASS_RESTORE);
}

bool got_active(void)
{
	return got.active;
}
