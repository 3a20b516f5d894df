/*
 * Futex waits qsptop cannot see. A lock that sleeps through a syscall
 * instruction of its own (inlined in the program, not glibc's syscall())
 * reaches no hook. Its threads are found by sampling /proc: a thread
 * blocked in futex() or futex_waitv() whose instruction pointer lies
 * outside libc made the call itself.
 */
#ifndef QSPTOP_RAWFUTEX_H
#define QSPTOP_RAWFUTEX_H

#include <stdint.h>
#include <sys/types.h>

struct rawfutex;

/* A sampler of the threads of pid; nothing is read yet. */
struct rawfutex *rawfutex_new(pid_t pid);
void rawfutex_free(struct rawfutex *r);

/*
 * Look at every thread, at most once a second; a thread /proc will not
 * show (another user's, a thread gone meanwhile) is skipped.
 */
void rawfutex_sample(struct rawfutex *r);

/* How many distinct threads were ever seen waiting so. */
uint32_t rawfutex_threads(const struct rawfutex *r);

#endif
