/*
 * The processes of one table. Rows, stacks and modules of several
 * processes share one model and one symbol table: each address carries
 * its process's index in bits no user-space address uses, so that the
 * same address in two processes stays two sites, two objects, two
 * modules. Process 0's addresses are unchanged.
 */
#ifndef QSPTOP_PROCS_H
#define QSPTOP_PROCS_H

#include <stdint.h>
#include <sys/types.h>

#define PROCS_SHIFT 48		/* x86_64 user addresses are below 2^47 */
#define PROCS_MAX 0xffffu	/* process indexes 0 .. PROCS_MAX - 1 */

/* addr of process proc, as the model and the symbols hold it; 0 stays 0. */
static inline uint64_t procs_tag(unsigned proc, uint64_t addr)
{
	return addr ? addr | (uint64_t)proc << PROCS_SHIFT : 0;
}

/* The address as its process knows it. */
static inline uint64_t procs_addr(uint64_t tagged)
{
	return tagged & ((UINT64_C(1) << PROCS_SHIFT) - 1);
}

/* The index of the process of a tagged address. */
static inline unsigned procs_of(uint64_t tagged)
{
	return (unsigned)(tagged >> PROCS_SHIFT);
}

/*
 * The PID a table filter "pid:N" keeps the lines of (its other lines
 * are hidden); 0 when filter is not one.
 */
pid_t procs_filter(const char *filter);

/* Name process index proc's PID. */
void procs_set_pid(unsigned proc, pid_t pid);

/* The PID of process index proc; 0 if none was named. */
pid_t procs_pid(unsigned proc);

#endif
