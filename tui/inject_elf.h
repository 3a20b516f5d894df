/*
 * The target's ELF files read for injection (inject_elf.c): its
 * executable's kind, and the addresses in its libc, its loader and
 * a collector already mapped there. Shared by the inject*.c modules; not
 * for use outside them.
 */
#ifndef QSPTOP_INJECT_ELF_H
#define QSPTOP_INJECT_ELF_H

#include <stddef.h>

struct inject_target;

/* The syscall instruction in __restore_rt (mov $15,%rax; syscall). */
#define RESTORE_RT_SYSCALL 7

/* The executable is a dynamic x86_64 glibc program; -1 with msg if not. */
int inject_check_exe(const struct inject_target *t, char *msg, size_t len);
/* dlopen, pthread_setcancelstate, __restore_rt, libc's TLS, in the target. */
int inject_resolve_libc(struct inject_target *t, char *msg, size_t len);
/* The loader's lock in the target, as t->load_lock; 0 when not found. */
void inject_resolve_loader(struct inject_target *t);
/* qsptop_wake in the collector already mapped in the target, as t->wake. */
int inject_resolve_wake(struct inject_target *t, char *msg, size_t len);

#endif
