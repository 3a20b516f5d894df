/*
 * Which thread of the target to borrow, judged from /proc before it is
 * touched: what its system call does when a ptrace stop interrupts it,
 * and whether it can hold a lock the loader or malloc needs. Also who
 * holds the loader's lock now, which no borrowed thread may wait for.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "inject_proc.h"
#include "inject_thread.h"

#define PICK_RETRY_MS 200
#define TIMER_ABSTIME_FLAG 1
#define FUTEX_LOCK_PI_OP 6
#define FUTEX_LOCK_PI2_OP 13

long inject_only_syscall = -1;

/* What the target's descriptor fd is: S_IFREG, S_IFSOCK…; 0 if unknown. */
static mode_t fd_kind(pid_t pid, uint64_t fd)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, (int)fd);
	if (fd > INT_MAX || stat(path, &st) < 0)
		return 0;
	return st.st_mode & S_IFMT;
}

/*
 * The receive timeout of the target's socket fd, looked at through a
 * duplicate of it (pidfd_getfd: the target's table is not touched); true
 * when it has one, or when it cannot be told.
 */
static bool socket_times_out(pid_t pid, uint64_t fd)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0), mine = -1;
	struct timeval tv = { 1, 0 };
	socklen_t n = sizeof(tv);

	if (pidfd >= 0)
		mine = (int)syscall(SYS_pidfd_getfd, pidfd, (int)fd, 0);
	if (mine >= 0 && getsockopt(mine, SOL_SOCKET, SO_RCVTIMEO, &tv, &n) < 0)
		tv.tv_sec = 1;
	if (mine >= 0)
		close(mine);
	if (pidfd >= 0)
		close(pidfd);
	return mine < 0 || tv.tv_sec != 0 || tv.tv_usec != 0;
}

/*
 * The call runs with a signal mask of its own, the thread's saved until
 * it returns (sigsuspend; ppoll, pselect6, epoll_pwait with a mask).
 * Setting the mask of such a thread through ptrace drops the saved one:
 * the call's mask would stay the thread's for good.
 */
static bool temporary_mask(pid_t pid, long nr, const uint64_t a[6])
{
	char path[64];
	uint64_t set = 1;
	int fd;

	if (nr == SYS_rt_sigsuspend)
		return true;
	if (nr == SYS_ppoll)
		return a[3] != 0;
	if (nr == SYS_epoll_pwait || nr == SYS_epoll_pwait2)
		return a[4] != 0;
	if (nr != SYS_pselect6 || a[5] == 0)
		return false;
	/* pselect6 passes { const sigset_t *set; size_t size } */
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && pread(fd, &set, sizeof(set), (off_t)a[5]) != sizeof(set))
		set = 1;
	if (fd >= 0)
		close(fd);
	return set != 0;
}

/*
 * A read on descriptor fd: the loader reads libraries with read(), so a
 * read of a regular file is never borrowed; a socket with a receive
 * timeout fails with EINTR at any stop (signal(7)).
 */
static enum borrow_rank read_rank(pid_t pid, uint64_t fd)
{
	mode_t kind = fd_kind(pid, fd);

	if (kind == 0 || kind == S_IFREG)
		return RANK_NEVER;
	if (kind == S_IFSOCK && socket_times_out(pid, fd))
		return RANK_EINTR;
	return RANK_SAFE;
}

/*
 * A futex wait. Untimed, it restarts by itself: a condvar, join or
 * semaphore wait (FUTEX_WAIT_BITSET) holds nothing of libc's; plain
 * FUTEX_WAIT and the PI locks are also how glibc's internal locks wait.
 * Timed, its restart needs the kernel's restart block, which the signal
 * frames we return through end: borrowed when it returns.
 */
static enum borrow_rank futex_rank(const uint64_t a[6])
{
	int op = (int)(a[1] & FUTEX_CMD_MASK);

	if (op == FUTEX_LOCK_PI_OP || op == FUTEX_LOCK_PI2_OP)
		return RANK_LOCK_WAIT;
	if (op != FUTEX_WAIT && op != FUTEX_WAIT_BITSET)
		return RANK_NEVER;
	if (a[3] != 0)
		return RANK_AT_END;
	return op == FUTEX_WAIT_BITSET ? RANK_FUTEX : RANK_LOCK_WAIT;
}

/*
 * A relative sleep that the kernel, when interrupted, leaves its
 * remaining time in its own request (glibc's sleep() is nanosleep(&ts,
 * &ts)), on a clock whose sleep does so: restarted from the start, it
 * sleeps just what was left, without the restart block.
 */
bool inject_resumes_from_args(long nr, const uint64_t a[6])
{
	if (nr == SYS_nanosleep)
		return a[0] != 0 && a[0] == a[1];
	return nr == SYS_clock_nanosleep && !(a[1] & TIMER_ABSTIME_FLAG) &&
	       (a[0] == CLOCK_REALTIME || a[0] == CLOCK_MONOTONIC ||
		a[0] == CLOCK_BOOTTIME) && a[2] != 0 && a[2] == a[3];
}

/*
 * How a thread parked in system call nr may be borrowed (enum
 * borrow_rank). The loader and malloc never wait in the calls ranked
 * above RANK_NEVER, so a thread parked in one holds none of their locks
 * and dlopen in it cannot deadlock on itself.
 */
enum borrow_rank inject_syscall_rank(pid_t pid, long nr, const uint64_t a[6])
{
	if (temporary_mask(pid, nr, a))
		return RANK_NEVER;
	switch (nr) {
	case SYS_futex:
		return futex_rank(a);
	case SYS_read: case SYS_readv: case SYS_recvfrom: case SYS_recvmsg:
	case SYS_accept: case SYS_accept4:
		return read_rank(pid, a[0]);
	case SYS_recvmmsg:
		return a[4] != 0 ? RANK_EINTR : read_rank(pid, a[0]);
	case SYS_ppoll: case SYS_select: case SYS_pselect6: case SYS_wait4:
	case SYS_waitid: case SYS_pause:
		return RANK_SAFE;
	case SYS_clock_nanosleep: case SYS_nanosleep:
		return (nr == SYS_clock_nanosleep && a[1] & TIMER_ABSTIME_FLAG) ||
		       inject_resumes_from_args(nr, a) ? RANK_SAFE : RANK_AT_END;
	case SYS_poll:
		return RANK_AT_END;
	case SYS_epoll_wait: case SYS_epoll_pwait: case SYS_epoll_pwait2:
	case SYS_rt_sigtimedwait: case SYS_semop: case SYS_semtimedop:
	case SYS_io_getevents: case SYS_io_pgetevents:
		return RANK_EINTR;
	default:
		return RANK_NEVER;
	}
}

/* The name of system call nr, for messages: the ones ranked, else "#nr". */
const char *inject_syscall_name(long nr)
{
	static const struct { long nr; const char *name; } names[] = {
		{ SYS_epoll_wait, "epoll_wait" }, { SYS_epoll_pwait, "epoll_pwait" },
		{ SYS_epoll_pwait2, "epoll_pwait2" },
		{ SYS_rt_sigtimedwait, "sigtimedwait" }, { SYS_semop, "semop" },
		{ SYS_semtimedop, "semtimedop" }, { SYS_io_getevents, "io_getevents" },
		{ SYS_io_pgetevents, "io_pgetevents" }, { SYS_read, "read" },
		{ SYS_readv, "readv" }, { SYS_recvfrom, "recvfrom" },
		{ SYS_recvmsg, "recvmsg" }, { SYS_recvmmsg, "recvmmsg" },
		{ SYS_accept, "accept" }, { SYS_accept4, "accept4" },
		{ SYS_nanosleep, "nanosleep" },
		{ SYS_clock_nanosleep, "clock_nanosleep" }, { SYS_poll, "poll" },
		{ SYS_futex, "futex" }, { SYS_write, "write" },
		{ SYS_writev, "writev" }, { SYS_sendto, "sendto" },
		{ SYS_sendmsg, "sendmsg" }, { SYS_connect, "connect" },
		{ SYS_pause, "pause" }, { SYS_wait4, "wait4" },
		{ SYS_waitid, "waitid" }, { SYS_select, "select" },
		{ SYS_pselect6, "pselect6" }, { SYS_ppoll, "ppoll" },
		{ SYS_flock, "flock" }, { SYS_fcntl, "fcntl" },
		{ SYS_pread64, "pread64" }, { SYS_pwrite64, "pwrite64" },
		{ SYS_fsync, "fsync" }, { SYS_ioctl, "ioctl" },
		{ SYS_msgrcv, "msgrcv" }, { SYS_semtimedop, "semtimedop" },
	};
	static char other[32];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].nr == nr)
			return names[i].name;
	snprintf(other, sizeof(other), "#%ld", nr);
	return other;
}

/* A thread's system call and its rank, from /proc; RANK_NEVER if none. */
static enum borrow_rank thread_rank(const struct inject_target *t, pid_t tid,
				    long *nr)
{
	char path[80], text[8192];
	uint64_t a[6];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)t->pid,
		 (int)tid);
	if (inject_slurp(path, text, sizeof(text)) < 0 ||
	    sscanf(text, "%ld %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64
		   " %" SCNx64 " %" SCNx64, nr, &a[0], &a[1], &a[2], &a[3],
		   &a[4], &a[5]) != 7)
		return RANK_NEVER;	/* "running", or not in a system call */
	if (inject_only_syscall >= 0 && *nr != inject_only_syscall)
		return RANK_NEVER;
	return inject_syscall_rank(t->pid, *nr, a);
}

static bool skipped(pid_t tid, const pid_t *skip, int n)
{
	for (int i = 0; i < n; i++)
		if (skip[i] == tid)
			return true;
	return false;
}

/* One pass over the threads: the best one into p, the first EINTR one too. */
static void scan_threads(const struct inject_target *t, DIR *d,
			 const pid_t *skip, int nskip, struct pick *p)
{
	struct dirent *e;

	while ((e = readdir(d)) != NULL) {
		pid_t tid = (pid_t)atoi(e->d_name);
		enum borrow_rank r;
		long nr = -1;

		if (tid <= 0 || skipped(tid, skip, nskip))
			continue;
		r = thread_rank(t, tid, &nr);
		if (r == RANK_EINTR && p->eintr_tid == 0) {
			p->eintr_tid = tid;
			p->eintr_nr = nr;
		}
		if (r == RANK_EINTR && !t->force)
			continue;
		if (r > p->rank) {
			p->rank = r;
			p->tid = tid;
		}
	}
}

/*
 * The best thread to borrow: rescanning a while for a safe one, and while
 * none can be borrowed, until give_up (clock_now_ms); p->tid 0 when none.
 * A call that a stop would fail with EINTR only with --force.
 */
void inject_pick_thread(const struct inject_target *t, const pid_t *skip,
			int nskip, int64_t give_up, struct pick *p)
{
	int64_t safe_deadline = clock_now_ms() + PICK_RETRY_MS;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pid);
	for (;;) {
		DIR *d = opendir(path);
		int64_t now;

		*p = (struct pick){ 0 };
		if (d == NULL)
			return;
		scan_threads(t, d, skip, nskip, p);
		closedir(d);
		now = clock_now_ms();
		if (p->rank == RANK_SAFE || now >= give_up ||
		    (p->tid != 0 && now >= safe_deadline))
			return;
		usleep(20000);
	}
}

/* Thread tid of pid as its own PID namespace numbers it (NSpid's last). */
static pid_t tid_inside(pid_t pid, pid_t tid)
{
	char path[96], text[4096], ids[128];
	const char *last;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid,
		 (int)tid);
	if (inject_slurp(path, text, sizeof(text)) < 0 ||
	    !inject_field(text, "NSpid", ids, sizeof(ids)))
		return tid;
	last = strrchr(ids, '\t');
	return (pid_t)atoi(last ? last + 1 : ids);
}

/*
 * The owner of the loader's lock as we number threads: a TID, 0 when
 * free, -1 when unknown. glibc records its own TID, which inside a PID
 * namespace is not ours.
 */
pid_t inject_loader_owner(const struct inject_target *t, int mem)
{
	char path[64];
	struct dirent *e;
	pid_t found = -1;
	int32_t owner;
	DIR *d;

	if (t->load_lock == 0 ||
	    pread(mem, &owner, sizeof(owner), (off_t)(t->load_lock +
						      MUTEX_OWNER_AT)) !=
	    sizeof(owner))
		return -1;
	if (owner <= 0 || !t->pid_ns)
		return owner;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pid);
	d = opendir(path);
	while (d != NULL && found < 0 && (e = readdir(d)) != NULL)
		if (atoi(e->d_name) > 0 &&
		    tid_inside(t->pid, (pid_t)atoi(e->d_name)) == owner)
			found = (pid_t)atoi(e->d_name);
	if (d != NULL)
		closedir(d);
	return found < 0 ? owner : found;	/* an exited owner: still held */
}
