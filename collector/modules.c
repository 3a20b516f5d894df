/* Listing loaded modules with their load bias and GNU build id. */
#include <elf.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"
#include "hooks.h"
#include "modules.h"

/* How long a fork waits for a walk in progress before going ahead. */
#define FENCE_WAIT_NS 1000000000L

static pthread_mutex_t fence = PTHREAD_MUTEX_INITIALIZER;
static bool fence_held_by_fork;

int modules_iterate(int (*cb)(struct dl_phdr_info *, size_t, void *),
		    void *arg)
{
	int rc;

	real.mutex_lock(&fence);
	rc = dl_iterate_phdr(cb, arg);
	pthread_mutex_unlock(&fence);
	return rc;
}

/*
 * A fork waits for a walk in progress, with a bound: a host thread blocked
 * inside its own dl_iterate_phdr callback could otherwise hold the walk,
 * and so the fork, forever.
 */
static void fence_prepare(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += FENCE_WAIT_NS / 1000000000L;
	fence_held_by_fork = real.mutex_clocklock(&fence, CLOCK_MONOTONIC, &ts) == 0;
}

static void fence_parent(void)
{
	if (fence_held_by_fork)
		pthread_mutex_unlock(&fence);
}

static void fence_child(void)
{
	pthread_mutex_init(&fence, NULL);
}

void modules_fence_fork(void)
{
	pthread_atfork(fence_prepare, fence_parent, fence_child);
}

bool modules_in_segment(const struct dl_phdr_info *info, const void *p,
			size_t len, unsigned need)
{
	uintptr_t a = (uintptr_t)p;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & need) == need &&
		    a >= lo && len <= ph->p_memsz && a - lo <= ph->p_memsz - len)
			return true;
	}
	return false;
}

void modules_note_build_id(const void *notes, size_t size,
			   struct proto_module *m)
{
	const char *seg = notes;
	size_t off = 0;

	while (size - off >= sizeof(ElfW(Nhdr))) {
		const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)(seg + off);
		size_t name = off + sizeof(*n);
		size_t desc = name + (((size_t)n->n_namesz + 3) & ~(size_t)3);
		size_t next = desc + (((size_t)n->n_descsz + 3) & ~(size_t)3);

		if (name > size || desc > size || n->n_descsz > size - desc ||
		    next < desc || ((size_t)n->n_namesz > desc - name))
			return;
		if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
		    memcmp(seg + name, "GNU", 4) == 0 &&
		    n->n_descsz <= PROTO_BUILD_ID_MAX) {
			memcpy(m->build_id, seg + desc, n->n_descsz);
			m->build_id_len = (uint16_t)n->n_descsz;
			return;
		}
		off = next;
	}
}

/* Whether a module is listed; the executable (named "") by its base. */
static bool known(const struct modules *ms, uint64_t base, const char *path)
{
	for (size_t i = 0; i < ms->n; i++) {
		if (ms->v[i].base == base &&
		    (path[0] == '\0' || strcmp(ms->v[i].path, path) == 0))
			return true;
	}
	return false;
}

/* Room for one more module; false when memory is short. */
static bool room_for_one(struct modules *ms)
{
	return arena_grow((void **)&ms->v, &ms->cap, ms->n, 16, sizeof(*ms->v));
}

/* Inside the walk: arena memory only (no host lock), no I/O. */
static int add_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct modules *ms = arg;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	struct proto_module *m;

	(void)size;
	ms->adds = info->dlpi_adds;
	if (known(ms, info->dlpi_addr, name) || !room_for_one(ms))
		return 0;
	m = &ms->v[ms->n++];
	memset(m, 0, sizeof(*m));
	m->base = info->dlpi_addr;
	strncpy(m->path, name, sizeof(m->path) - 1);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const void *notes = (const void *)(info->dlpi_addr + ph->p_vaddr);

		if (ph->p_type == PT_NOTE && m->build_id_len == 0 &&
		    modules_in_segment(info, notes, ph->p_memsz, PF_R))
			modules_note_build_id(notes, ph->p_memsz, m);
	}
	return 0;
}

/* Read dlpi_adds, the loader's count of modules ever loaded. */
static int read_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs))
		*(unsigned long long *)arg = info->dlpi_adds;
	return 1;
}

/* The executable is listed as ""; after the walk, give it its path. */
static void name_executable(struct modules *ms, size_t from)
{
	for (size_t i = from; i < ms->n; i++) {
		ssize_t n;

		if (ms->v[i].path[0] != '\0')
			continue;
		n = readlink("/proc/self/exe", ms->v[i].path,
			     sizeof(ms->v[i].path) - 1);
		ms->v[i].path[n > 0 ? n : 0] = '\0';
	}
}

size_t modules_refresh(struct modules *ms)
{
	unsigned long long adds = 0;
	size_t before = ms->n;

	modules_iterate(read_adds, &adds);
	if (ms->n > 0 && adds == ms->adds)
		return 0;
	modules_iterate(add_one, ms);
	name_executable(ms, before);
	return ms->n - before;
}
