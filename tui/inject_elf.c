/*
 * What injection reads in the target's ELF files: whether its executable
 * is a dynamic glibc program; in its libc, dlopen, pthread_setcancelstate, __restore_rt
 * and the thread-local variables the borrowed thread's call touches; the
 * loader's lock; qsptop_wake in a collector already mapped there. The
 * files are read, never mapped: one the target truncates cannot fault us.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "inject_elf.h"
#include "inject_proc.h"
#include "ns.h"

#define VERSYM_HIDDEN 0x8000

/* 1 and the interpreter of an x86_64 ELF file, 0 without one, -1 if not. */
static int elf_interp(int fd, char *out, size_t n)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;

	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64)
		return -1;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		off_t at = (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize);
		ssize_t got;

		if (pread(fd, &ph, sizeof(ph), at) != sizeof(ph))
			return -1;
		if (ph.p_type != PT_INTERP)
			continue;
		got = pread(fd, out, ph.p_filesz < n ? ph.p_filesz : n - 1,
			    (off_t)ph.p_offset);
		if (got < 0)
			return -1;
		out[got] = '\0';
		return 1;
	}
	return 0;
}

int inject_check_exe(const struct inject_target *t, char *msg, size_t len)
{
	char path[64], interp[PATH_MAX] = "";
	int pid = (int)t->pid, fd, kind;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EPERM))
		return inject_not_permitted(t, msg, len);
	if (fd < 0)
		return inject_fail(msg, len, "cannot read the executable of PID %d "
				   "(%s): a kernel thread?", pid, strerror(errno));
	kind = elf_interp(fd, interp, sizeof(interp));
	close(fd);
	if (kind < 0)
		return inject_fail(msg, len, "PID %d is not an x86_64 ELF program",
				   pid);
	if (kind == 0)
		return inject_fail(msg, len, "PID %d is a static binary: start it "
				   "with qsptop -- CMD", pid);
	if (strstr(interp, "musl") != NULL)
		return inject_fail(msg, len, "PID %d uses musl (%s): musl is not "
				   "supported", pid, interp);
	return 0;
}

/*
 * Open a file the target has mapped (named by mapped_path): beneath its
 * root, never outside it, and only a regular file, without blocking; -1
 * with why filled in.
 */
static int open_mapped(pid_t pid, const char *path, bool removed, char *why,
		       size_t size)
{
	return removed ? ns_open_mapped(path, why, size)
		       : ns_open_file_of(pid, path, why, size);
}

/*
 * A defined symbol's default version in .dynsym (dlopen@@GLIBC_2.34):
 * true with its value, false when absent.
 */
static bool dynsym_find(Elf *e, const char *name, int type, uint64_t *value)
{
	Elf_Scn *scn = NULL;
	Elf_Data *syms = NULL, *vers = NULL;
	size_t strndx = 0, count = 0;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e, scn)) != NULL) {
		if (gelf_getshdr(scn, &sh) == NULL)
			continue;
		if (sh.sh_type == SHT_DYNSYM && sh.sh_entsize != 0) {
			syms = elf_getdata(scn, NULL);
			strndx = sh.sh_link;
			count = sh.sh_size / sh.sh_entsize;
		} else if (sh.sh_type == SHT_GNU_versym) {
			vers = elf_getdata(scn, NULL);
		}
	}
	for (size_t i = 0; syms != NULL && i < count; i++) {
		GElf_Sym s;
		GElf_Versym v = 0;
		const char *n;

		if (gelf_getsym(syms, (int)i, &s) == NULL ||
		    s.st_shndx == SHN_UNDEF ||
		    GELF_ST_TYPE(s.st_info) != type)
			continue;
		n = elf_strptr(e, strndx, s.st_name);
		if (n == NULL || strcmp(n, name) != 0)
			continue;
		if (vers != NULL && gelf_getversym(vers, (int)i, &v) != NULL &&
		    (v & VERSYM_HIDDEN))
			continue;
		*value = s.st_value;
		return true;
	}
	return false;
}

/* In one SHT_RELA section, the r_offset of a TPOFF64 of name, or 0. */
static uint64_t rela_tpoff(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh,
			   const char *name)
{
	Elf_Scn *symscn = elf_getscn(e, sh->sh_link);
	Elf_Data *rels = elf_getdata(scn, NULL);
	Elf_Data *syms = symscn ? elf_getdata(symscn, NULL) : NULL;
	GElf_Shdr symsh;

	if (rels == NULL || syms == NULL || sh->sh_entsize == 0 ||
	    gelf_getshdr(symscn, &symsh) == NULL)
		return 0;
	for (size_t i = 0; i < sh->sh_size / sh->sh_entsize; i++) {
		const char *n;
		GElf_Rela r;
		GElf_Sym s;

		if (gelf_getrela(rels, (int)i, &r) == NULL ||
		    GELF_R_TYPE(r.r_info) != R_X86_64_TPOFF64 ||
		    GELF_R_SYM(r.r_info) == 0 ||
		    gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &s) == NULL)
			continue;
		n = elf_strptr(e, symsh.sh_link, s.st_name);
		if (n != NULL && strcmp(n, name) == 0)
			return r.r_offset;
	}
	return 0;
}

/* The r_offset of a TPOFF64 relocation of symbol name, or 0. */
static uint64_t tpoff_reloc(Elf *e, const char *name)
{
	Elf_Scn *scn = NULL;
	uint64_t at;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e, scn)) != NULL)
		if (gelf_getshdr(scn, &sh) != NULL && sh.sh_type == SHT_RELA &&
		    (at = rela_tpoff(e, scn, &sh, name)) != 0)
			return at;
	return 0;
}

/*
 * Where libc keeps dlerror's record and errno for each thread: the GOT
 * slot the loader filled with the record's offset from the thread
 * pointer, and both variables' offsets in libc's TLS block. Whatever is
 * not found stays unknown: the injection then gives no dlerror text, or
 * does not restore errno.
 */
static void find_tls(Elf *e, struct inject_target *t, uint64_t bias)
{
	uint64_t got = tpoff_reloc(e, "__libc_dlerror_result");

	if (got == 0 || !dynsym_find(e, "__libc_dlerror_result", STT_TLS,
				     &t->tls_dlerror))
		return;
	t->dlerror_got = bias + got;
	t->errno_known = dynsym_find(e, "errno", STT_TLS, &t->tls_errno);
}

/* pthread_mutex_trylock and _unlock, to take the loader's lock. */
static void find_mutex_calls(Elf *e, struct inject_target *t, uint64_t bias)
{
	uint64_t lock, unlock;

	if (dynsym_find(e, "pthread_mutex_trylock", STT_FUNC, &lock) &&
	    dynsym_find(e, "pthread_mutex_unlock", STT_FUNC, &unlock) &&
	    lock != 0 && unlock != 0) {
		t->mutex_trylock = bias + lock;
		t->mutex_unlock = bias + unlock;
	}
}

/*
 * The lowest PT_LOAD address (the load bias is the mapping start minus
 * it) and libc's __restore_rt, found by its code in an executable segment:
 * it is not exported, and every call we make returns into it.
 */
static int scan_segments(Elf *e, uint64_t *lowest, uint64_t *restore_rt)
{
	static const uint8_t code[] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0,
					0x0f, 0x05 };	/* mov $15,%rax; syscall */
	size_t n, size;
	const char *raw = elf_rawfile(e, &size);
	GElf_Phdr ph;

	*lowest = UINT64_MAX;
	*restore_rt = 0;
	if (raw == NULL || elf_getphdrnum(e, &n) != 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const char *hit;

		if (gelf_getphdr(e, (int)i, &ph) == NULL ||
		    ph.p_type != PT_LOAD)
			continue;
		if (ph.p_vaddr < *lowest)
			*lowest = ph.p_vaddr;
		if (!(ph.p_flags & PF_X) || *restore_rt != 0 ||
		    ph.p_offset + ph.p_filesz > size)
			continue;
		hit = memmem(raw + ph.p_offset, ph.p_filesz, code, sizeof(code));
		if (hit != NULL)
			*restore_rt = ph.p_vaddr + (uint64_t)(hit - raw) -
				      ph.p_offset;
	}
	return *lowest == UINT64_MAX ? -1 : 0;
}

int inject_resolve_libc(struct inject_target *t, char *msg, size_t len)
{
	char why[PATH_MAX + 64];
	int fd = open_mapped(t->pid, t->libc, t->libc_removed, why, sizeof(why));
	uint64_t lowest, restore_rt, bias, o, c;
	Elf *e;
	int rc = -1;

	if (fd < 0)
		return inject_fail(msg, len, "cannot open PID %d's libc %s: %s",
				   (int)t->pid, t->libc, why);
	elf_version(EV_CURRENT);
	/* Read, not mapped: a file the target truncates cannot fault us. */
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e != NULL && scan_segments(e, &lowest, &restore_rt) == 0) {
		bias = t->libc_start - (lowest & ~0xfffULL);
		if (dynsym_find(e, "dlopen", STT_FUNC, &o) && o != 0 &&
		    dynsym_find(e, "pthread_setcancelstate", STT_FUNC, &c) &&
		    c != 0 && restore_rt != 0) {
			t->dlopen = bias + o;
			t->setcancelstate = bias + c;
			t->restore_rt = bias + restore_rt;
			find_tls(e, t, bias);
			find_mutex_calls(e, t, bias);
			rc = 0;
		}
	}
	elf_end(e);
	close(fd);
	if (rc < 0)
		inject_fail(msg, len, "cannot find dlopen, pthread_setcancelstate and "
			    "__restore_rt in PID %d's libc %s (glibc older than 2.34?)",
			    (int)t->pid, t->libc);
	return rc;
}

/*
 * Whether the recursive mutex at lock, in the target, is the loader's:
 * struct rtld_global has the namespace count (1 to 16) just before it,
 * and its kind is PTHREAD_MUTEX_RECURSIVE_NP; owner and count agree.
 */
static bool is_load_lock(int mem, uint64_t lock)
{
	struct { uint64_t nns; int32_t lock, count, owner, users, kind; } m;

	if (pread(mem, &m, sizeof(m), (off_t)(lock - 8)) != sizeof(m))
		return false;
	return m.nns >= 1 && m.nns <= 16 && m.kind == 1 &&
	       (m.owner == 0) == (m.count == 0) && m.owner >= 0;
}

/*
 * _rtld_global's _dl_load_lock, which every dlopen takes: its offset
 * follows the 16 namespaces of struct rtld_global, whose size glibc
 * changed in 2.32 and 2.35. Each layout is tried and checked in memory.
 */
static void find_load_lock(struct inject_target *t, uint64_t rtld_global)
{
	static const uint64_t offsets[] = { 2568, 2440, 2312 };
	char path[64];
	int mem;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)t->pid);
	mem = open(path, O_RDONLY | O_CLOEXEC);
	for (size_t i = 0; mem >= 0 && i < sizeof(offsets) / sizeof(offsets[0]);
	     i++)
		if (is_load_lock(mem, rtld_global + offsets[i])) {
			t->load_lock = rtld_global + offsets[i];
			break;
		}
	if (mem >= 0)
		close(mem);
}

void inject_resolve_loader(struct inject_target *t)
{
	char why[PATH_MAX + 64];
	int fd = t->ldso_start == 0 ? -1 : open_mapped(t->pid, t->ldso,
						       t->ldso_removed, why,
						       sizeof(why));
	uint64_t lowest, unused, o;
	Elf *e;

	t->load_lock = 0;
	if (fd < 0 || t->mutex_trylock == 0)
		goto out;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e != NULL && scan_segments(e, &lowest, &unused) == 0 &&
	    dynsym_find(e, "_rtld_global", STT_OBJECT, &o) && o != 0)
		find_load_lock(t, t->ldso_start - (lowest & ~0xfffULL) + o);
	elf_end(e);
out:
	if (fd >= 0)
		close(fd);
}

int inject_resolve_wake(struct inject_target *t, char *msg, size_t len)
{
	char why[PATH_MAX + 64];
	int fd = open_mapped(t->pid, t->mapped_lib, t->mapped_removed, why,
			     sizeof(why));
	uint64_t lowest, unused, o;
	Elf *e;
	int rc = -1;

	if (fd < 0)
		return inject_fail(msg, len, "cannot open the collector mapped in PID "
				   "%d (%s): %s", (int)t->pid, t->mapped_lib, why);
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e != NULL && scan_segments(e, &lowest, &unused) == 0 &&
	    dynsym_find(e, "qsptop_wake", STT_FUNC, &o) && o != 0) {
		t->wake = t->mapped_start - (lowest & ~0xfffULL) + o;
		rc = 0;
	}
	elf_end(e);
	close(fd);
	if (rc < 0)
		inject_fail(msg, len, "the collector in PID %d (%s) cannot be woken: "
			    "it is from an older qsptop", (int)t->pid, t->mapped_lib);
	return rc;
}
