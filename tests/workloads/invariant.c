/*
 * The target of the invariance suite (test_invariance): one blocking call,
 * the subject, made twice — first for MS milliseconds, while qsptop may
 * attach, then for 200 ms, to show the program goes on — each time
 * printing what it returned in words that do not change from run to run
 * (no times, no PIDs, no descriptor numbers). Watched or not, the output
 * must be the same.
 *
 *   wl_invariant list             the case names, one a line
 *   wl_invariant CASE MS NOTES    run CASE; NOTES gets "wait TID NR" for a
 *                                 thread besides the subject the test must
 *                                 see in system call NR (-1: running), then
 *                                 "subject TID NR" once the subject is
 *                                 about to make its first call, and
 *                                 "phase 2" before the second
 *
 * CASE is CALL-WHERE or CALL-WHERE-handler: WHERE is main, or worker (the
 * main thread then waits in pthread_join); -handler installs a SIGUSR2
 * handler without SA_RESTART, never raised. A call either times out after
 * MS, or ends with an event a helper thread delivers after MS (CALL_event,
 * and the calls that have no timeout). The last three calls are a sleep
 * in the main thread while another thread is inside a plugin's
 * constructor (the loader lock held), spins, or calls malloc.
 *
 * CALL-tree is a forking server: the parent forks WORKERS processes, each
 * making the call in its main thread, waits for them (waitpid) and prints
 * what each printed and how it ended, in order; CALL-tree-handler's
 * parent has a SIGCHLD handler, its workers the SIGUSR2 one (both without
 * SA_RESTART), and it says how many of its waits were interrupted:
 * qsptop must send it no SIGCHLD. CALL-tree-late forks one
 * more worker MS/2 later, whose first call waits MS/2. A tree's NOTES
 * begin with "workers N" (the subjects to see before qsptop starts) and
 * "processes N" (the tree's, the late worker's included). The *_shared
 * calls wait on what the workers share: each worker's helper posts the
 * semaphore, or connects to the listening socket, once.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PHASE2_MS 200
#define EARLY_MS 250	/* a call that ends this much before its time is early */
#define CHILD_STATUS 7	/* waitpid's child exits with it */
#define WORKERS 3	/* a tree's workers, forked at once */

/* Which cases a call has, besides main and worker (and their -handler). */
enum {
	TREE = 1,		/* CALL-tree */
	ONLY_TREE = 2,		/* no main or worker case */
	LATE = 4,		/* CALL-tree-late */
};

/* What a call returned: its value and errno (or the error it returned). */
struct outcome {
	long ret;
	int err;
};

struct ctx;

/* One subject call and what it needs around it. */
struct call {
	const char *name;
	long nr;				/* the system call it waits in */
	struct outcome (*block)(struct ctx *);	/* the call itself */
	void (*prepare)(struct ctx *);		/* in the subject's thread, before */
	void (*hold)(struct ctx *);		/* in the helper, before it is ready */
	void (*deliver)(struct ctx *);		/* the helper's event, after MS */
	void (*companion)(struct ctx *);	/* another thread's business */
	int tree;				/* TREE, ONLY_TREE, LATE */
};

/* What a tree's workers share, made before the first fork. */
struct shared {
	sem_t sem;			/* sem_shared: each worker's helper posts once */
	int listener;			/* accept_shared: each helper connects once */
	struct sockaddr_in addr;
};

static struct shared *shared;

/* What the calls wait on, made once for both phases. */
struct ctx {
	const struct call *call;
	int ms;				/* how long this phase's call waits */
	int notes;			/* the notes file */
	int pipe[2];			/* the poll family and read_pipe wait on [0] */
	int sock[2];			/* read_socket waits on [0] */
	int listener;			/* accept waits on it, at addr */
	struct sockaddr_in addr;
	int epoll;			/* watches pipe[0] */
	sem_t sem;			/* the sem_* calls */
	sem_t ready;			/* the helper (or companion) is ready */
	pthread_mutex_t held;		/* mutex_lock: the helper holds it */
	pthread_mutex_t own;		/* mutex_unlock: the subject's */
	pthread_mutex_t checked;	/* mutex_unlock: error-checking, unheld */
	pthread_mutex_t nest;		/* mutex_unlock_nested: taken in own */
	pthread_rwlock_t own_rw;	/* rwlock_unlock: the subject's */
	pthread_spinlock_t own_spin;	/* spin_unlock: the subject's */
	sem_t posted;			/* sem_post: a thread waits on it */
	sem_t full;			/* sem_post: at SEM_VALUE_MAX */
	pthread_mutex_t cond_mutex;
	pthread_cond_t cond;		/* nobody signals it */
	uint32_t futex_word;		/* nobody wakes it */
	pid_t child;			/* waitpid's */
	pthread_t subject;		/* the thread making the call */
	struct outcome helper;		/* the helper's own sleep */
	atomic_bool stop;		/* the companion should stop */
	char said[128];			/* what the companion observed */
};

static struct outcome result(long ret)
{
	return (struct outcome){ ret, ret < 0 ? errno : 0 };
}

/* The outcome of a call that returns an error number. */
static struct outcome returned(int err)
{
	return (struct outcome){ err, err };
}

static struct timespec span(int ms)
{
	return (struct timespec){ ms / 1000, ms % 1000 * 1000000L };
}

/* ms from now on clock, as an absolute time. */
static struct timespec after(clockid_t clock, int ms)
{
	struct timespec t;

	clock_gettime(clock, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += ms % 1000 * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

static void note(struct ctx *x, const char *what, long nr)
{
	dprintf(x->notes, "%s %d %ld\n", what, (int)gettid(), nr);
}

/* The calls. */

static struct outcome call_sleep(struct ctx *x)
{
	unsigned left = sleep((unsigned)(x->ms + 999) / 1000);

	return (struct outcome){ left, left ? errno : 0 };
}

static struct outcome call_usleep(struct ctx *x)
{
	return result(usleep((useconds_t)x->ms * 1000));
}

static struct outcome call_nanosleep(struct ctx *x)
{
	struct timespec t = span(x->ms);

	return result(nanosleep(&t, NULL));
}

static struct outcome call_clock_nanosleep(struct ctx *x)
{
	struct timespec t = span(x->ms);

	return returned(clock_nanosleep(CLOCK_MONOTONIC, 0, &t, NULL));
}

static struct outcome call_clock_nanosleep_abs(struct ctx *x)
{
	struct timespec t = after(CLOCK_MONOTONIC, x->ms);

	return returned(clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t,
					NULL));
}

/* poll and friends with a timeout of ms, or none (-1). */
static struct outcome do_poll(struct ctx *x, int ms)
{
	struct pollfd p = { .fd = x->pipe[0], .events = POLLIN };

	return result(poll(&p, 1, ms));
}

static struct outcome do_ppoll(struct ctx *x, int ms)
{
	struct pollfd p = { .fd = x->pipe[0], .events = POLLIN };
	struct timespec t = span(ms);

	return result(ppoll(&p, 1, ms < 0 ? NULL : &t, NULL));
}

static struct outcome do_select(struct ctx *x, int ms)
{
	struct timeval t = { ms / 1000, ms % 1000 * 1000 };
	fd_set r;

	FD_ZERO(&r);
	FD_SET(x->pipe[0], &r);
	return result(select(x->pipe[0] + 1, &r, NULL, NULL,
			     ms < 0 ? NULL : &t));
}

static struct outcome do_pselect(struct ctx *x, int ms)
{
	struct timespec t = span(ms);
	fd_set r;

	FD_ZERO(&r);
	FD_SET(x->pipe[0], &r);
	return result(pselect(x->pipe[0] + 1, &r, NULL, NULL,
			      ms < 0 ? NULL : &t, NULL));
}

static struct outcome do_epoll(struct ctx *x, int ms)
{
	struct epoll_event e;

	return result(epoll_wait(x->epoll, &e, 1, ms));
}

static struct outcome call_poll(struct ctx *x) { return do_poll(x, x->ms); }
static struct outcome call_poll_event(struct ctx *x) { return do_poll(x, -1); }
static struct outcome call_ppoll(struct ctx *x) { return do_ppoll(x, x->ms); }
static struct outcome call_ppoll_event(struct ctx *x) { return do_ppoll(x, -1); }
static struct outcome call_select(struct ctx *x) { return do_select(x, x->ms); }
static struct outcome call_select_event(struct ctx *x) { return do_select(x, -1); }
static struct outcome call_pselect(struct ctx *x) { return do_pselect(x, x->ms); }
static struct outcome call_pselect_event(struct ctx *x) { return do_pselect(x, -1); }
static struct outcome call_epoll(struct ctx *x) { return do_epoll(x, x->ms); }
static struct outcome call_epoll_event(struct ctx *x) { return do_epoll(x, -1); }

static struct outcome call_read_pipe(struct ctx *x)
{
	char c;

	return result(read(x->pipe[0], &c, 1));
}

static struct outcome call_read_socket(struct ctx *x)
{
	char c;

	return result(read(x->sock[0], &c, 1));
}

/* The descriptor's number is not behaviour: any descriptor returns 0. */
static struct outcome call_accept(struct ctx *x)
{
	int fd = accept(x->listener, NULL, NULL);
	struct outcome o = result(fd < 0 ? -1 : 0);

	if (fd >= 0)
		close(fd);
	return o;
}

/* The child's exit status, not its PID. */
static struct outcome call_waitpid(struct ctx *x)
{
	int status = 0;
	pid_t got = waitpid(x->child, &status, 0);

	if (got == x->child && WIFEXITED(status))
		return (struct outcome){ WEXITSTATUS(status), 0 };
	return result(got < 0 ? -1 : -2);
}

static struct outcome call_pause(struct ctx *x)
{
	(void)x;
	return result(pause());
}

static struct outcome call_sigwaitinfo(struct ctx *x)
{
	sigset_t set;

	(void)x;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	return result(sigwaitinfo(&set, NULL));
}

static struct outcome call_sem_wait(struct ctx *x)
{
	return result(sem_wait(&x->sem));
}

static struct outcome call_sem_timedwait(struct ctx *x)
{
	struct timespec t = after(CLOCK_REALTIME, x->ms);

	return result(sem_timedwait(&x->sem, &t));
}

static struct outcome call_sem_clockwait(struct ctx *x)
{
	struct timespec t = after(CLOCK_MONOTONIC, x->ms);

	return result(sem_clockwait(&x->sem, CLOCK_MONOTONIC, &t));
}

static struct outcome call_sem_shared(struct ctx *x)
{
	(void)x;
	return result(sem_wait(&shared->sem));
}

static struct outcome call_accept_shared(struct ctx *x)
{
	int fd = accept(shared->listener, NULL, NULL);
	struct outcome o = result(fd < 0 ? -1 : 0);

	(void)x;
	if (fd >= 0)
		close(fd);
	return o;
}

static struct outcome call_cond_timedwait(struct ctx *x)
{
	struct timespec t = after(CLOCK_REALTIME, x->ms);
	int err;

	pthread_mutex_lock(&x->cond_mutex);
	err = pthread_cond_timedwait(&x->cond, &x->cond_mutex, &t);
	pthread_mutex_unlock(&x->cond_mutex);
	return returned(err);
}

static struct outcome call_mutex_lock(struct ctx *x)
{
	int err = pthread_mutex_lock(&x->held);

	if (err == 0)
		pthread_mutex_unlock(&x->held);
	return returned(err);
}

/*
 * Lock and unlock a mutex of its own many times, 1 ms apart, for MS (the
 * unlock hook times a sample of the holds), unlocking meanwhile an
 * error-checking mutex it does not hold: every unlock returns what libc
 * says (0, EPERM) and leaves errno as it was.
 */
static struct outcome call_mutex_unlock(struct ctx *x)
{
	struct timespec t = span(1), until = after(CLOCK_MONOTONIC, x->ms), now;
	int err;

	do {
		for (int i = 0; i < 100; i++) {
			pthread_mutex_lock(&x->own);
			errno = 4321;
			err = pthread_mutex_unlock(&x->own);
			if (err != 0 || errno != 4321)
				return returned(err ? err : -1);
		}
		errno = 4321;
		err = pthread_mutex_unlock(&x->checked);
		if (err != EPERM || errno != 4321)
			return returned(err == EPERM ? -1 : err);
		nanosleep(&t, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec < until.tv_sec ||
		 (now.tv_sec == until.tv_sec && now.tv_nsec < until.tv_nsec));
	return returned(0);
}

/* Lock outer then inner; -1 (or the error) unless each returns 0, errno kept. */
static int nest_once(pthread_mutex_t *outer, pthread_mutex_t *inner)
{
	int err;

	errno = 4321;
	if ((err = pthread_mutex_lock(outer)) != 0 || errno != 4321)
		return err ? err : -1;
	if ((err = pthread_mutex_lock(inner)) != 0 || errno != 4321)
		return err ? err : -1;
	if ((err = pthread_mutex_unlock(inner)) != 0 || errno != 4321)
		return err ? err : -1;
	if ((err = pthread_mutex_unlock(outer)) != 0 || errno != 4321)
		return err ? err : -1;
	return 0;
}

/*
 * Nest two mutexes in both orders many times, 1 ms apart, for MS (the
 * lock hook notes the nestings of sampled holds, the lock-order
 * warnings), and inside them relock an error-checking mutex this thread
 * holds: every call returns what libc says (0, EDEADLK), errno kept.
 */
static struct outcome call_mutex_unlock_nested(struct ctx *x)
{
	struct timespec t = span(1), until = after(CLOCK_MONOTONIC, x->ms), now;
	int err;

	do {
		for (int i = 0; i < 100; i++) {
			err = i % 2 ? nest_once(&x->own, &x->nest)
				    : nest_once(&x->nest, &x->own);
			if (err)
				return returned(err);
		}
		pthread_mutex_lock(&x->own);
		pthread_mutex_lock(&x->checked);
		errno = 4321;
		err = pthread_mutex_lock(&x->checked);
		pthread_mutex_unlock(&x->checked);
		pthread_mutex_unlock(&x->own);
		if (err != EDEADLK || errno != 4321)
			return returned(err == EDEADLK ? -1 : err);
		nanosleep(&t, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec < until.tv_sec ||
		 (now.tv_sec == until.tv_sec && now.tv_nsec < until.tv_nsec));
	return returned(0);
}

/* Lock m, then unlock it: the thread mutex_unlock_waiters starts. */
static void *lock_once(void *m)
{
	if (pthread_mutex_lock(m) == 0)
		pthread_mutex_unlock(m);
	return NULL;
}

/*
 * Whether a thread sleeps on locked m: glibc's lock word reads 2, or
 * has FUTEX_WAITERS beside the owner's TID (a robust mutex).
 */
static bool has_sleeper(pthread_mutex_t *m)
{
	int lock = __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED);

	return lock == 2 || (lock & (int)0x80000000u);
}

/*
 * Unlock m, taken times times (a recursive mutex twice), while another
 * thread sleeps on it: the inner unlock keeps it, the outer releases
 * it; each returns 0 and leaves errno as it was (the unlock hook
 * unwinds the holder's stack then). False when one did not.
 */
static bool unlock_with_waiter(pthread_mutex_t *m, int times)
{
	struct timespec t = span(1);
	pthread_t waiter;
	bool ok = true;

	for (int i = 0; i < times; i++)
		pthread_mutex_lock(m);
	if (pthread_create(&waiter, NULL, lock_once, m) != 0) {
		for (int i = 0; i < times; i++)
			pthread_mutex_unlock(m);
		return false;
	}
	for (int i = 0; i < 1000 && !has_sleeper(m); i++)
		nanosleep(&t, NULL);
	for (int i = 0; i < times; i++) {
		errno = 4321;
		ok &= pthread_mutex_unlock(m) == 0 && errno == 4321;
	}
	pthread_join(waiter, NULL);
	return ok;
}

/* A mutex of type and robustness (PTHREAD_MUTEX_ROBUST or _STALLED). */
static void mutex_of(pthread_mutex_t *m, int type, int robust)
{
	pthread_mutexattr_t attr;

	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, type);
	pthread_mutexattr_setrobust(&attr, robust);
	pthread_mutex_init(m, &attr);
	pthread_mutexattr_destroy(&attr);
}

/*
 * Unlock a mutex another thread sleeps on, 1 ms apart, for MS (holders
 * tracked: the unlock hook captures the releasing stack), a recursive
 * one and a robust one in turn: every unlock returns what libc says and
 * leaves errno as it was.
 */
static struct outcome call_mutex_unlock_waiters(struct ctx *x)
{
	struct timespec t = span(1), until = after(CLOCK_MONOTONIC, x->ms), now;
	pthread_mutex_t m, robust;
	bool ok = true;

	mutex_of(&m, PTHREAD_MUTEX_RECURSIVE, PTHREAD_MUTEX_STALLED);
	mutex_of(&robust, PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_ROBUST);
	do {
		ok = unlock_with_waiter(&m, 2) && unlock_with_waiter(&robust, 1);
		nanosleep(&t, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (ok && (now.tv_sec < until.tv_sec ||
			(now.tv_sec == until.tv_sec && now.tv_nsec < until.tv_nsec)));
	pthread_mutex_destroy(&m);
	pthread_mutex_destroy(&robust);
	return returned(ok ? 0 : -1);
}

/* Whether now is still before until. */
static bool before(const struct timespec *until)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec < until->tv_sec ||
	       (now.tv_sec == until->tv_sec && now.tv_nsec < until->tv_nsec);
}

/*
 * Read-lock, write-lock and unlock an rwlock of its own many times, 1 ms
 * apart, for MS (the unlock hook forgets each hold): every unlock returns
 * 0 and leaves errno as it was.
 */
static struct outcome call_rwlock_unlock(struct ctx *x)
{
	struct timespec t = span(1), until = after(CLOCK_MONOTONIC, x->ms);
	int err;

	do {
		for (int i = 0; i < 100; i++) {
			if (i % 2)
				pthread_rwlock_rdlock(&x->own_rw);
			else
				pthread_rwlock_wrlock(&x->own_rw);
			errno = 4321;
			err = pthread_rwlock_unlock(&x->own_rw);
			if (err != 0 || errno != 4321)
				return returned(err ? err : -1);
		}
		nanosleep(&t, NULL);
	} while (before(&until));
	return returned(0);
}

/* The same with a spinlock of its own. */
static struct outcome call_spin_unlock(struct ctx *x)
{
	struct timespec t = span(1), until = after(CLOCK_MONOTONIC, x->ms);
	int err;

	do {
		for (int i = 0; i < 100; i++) {
			pthread_spin_lock(&x->own_spin);
			errno = 4321;
			err = pthread_spin_unlock(&x->own_spin);
			if (err != 0 || errno != 4321)
				return returned(err ? err : -1);
		}
		nanosleep(&t, NULL);
	} while (before(&until));
	return returned(0);
}

/* Take every post to x->posted, until a post finds x->stop set. */
static void *take_posts(void *arg)
{
	struct ctx *x = arg;

	while (!atomic_load(&x->stop))
		while (sem_wait(&x->posted) != 0)
			;
	return NULL;
}

/*
 * Post, 1 ms apart for MS, to a semaphore another thread waits on (the
 * sem_post hook notes such posts), and to one that is full: every post
 * returns what libc says (0, or -1 and EOVERFLOW) and leaves errno as
 * it was on success.
 */
static struct outcome call_sem_post(struct ctx *x)
{
	struct timespec t = span(1), until = after(CLOCK_MONOTONIC, x->ms);
	struct outcome out = returned(0);
	pthread_t taker;
	int rc;

	atomic_store(&x->stop, false);
	pthread_create(&taker, NULL, take_posts, x);
	do {
		errno = 4321;
		rc = sem_post(&x->posted);
		if (rc != 0 || errno != 4321) {
			out = returned(rc ? errno : -1);
			break;
		}
		errno = 4321;
		rc = sem_post(&x->full);
		if (rc != -1 || errno != EOVERFLOW) {
			out = returned(rc == -1 ? errno : -1);
			break;
		}
		nanosleep(&t, NULL);
	} while (before(&until));
	atomic_store(&x->stop, true);
	sem_post(&x->posted);
	pthread_join(taker, NULL);
	return out;
}

static struct outcome call_futex_wait(struct ctx *x)
{
	struct timespec t = span(x->ms);

	return result(syscall(SYS_futex, &x->futex_word, FUTEX_WAIT, 0, &t,
			      NULL, 0));
}

/* Before the call, in the subject's thread. */

/* A child that exits after ms, untouched by qsptop. */
static void fork_child(struct ctx *x)
{
	struct timespec t = span(x->ms);

	x->child = fork();
	if (x->child == 0) {
		while (nanosleep(&t, &t) < 0 && errno == EINTR)
			;
		_exit(CHILD_STATUS);
	}
}

static void on_signal(int sig)
{
	(void)sig;
}

/* A handler for sig, without SA_RESTART. */
static void catch_signal(int sig)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

static void catch_usr1(struct ctx *x)
{
	(void)x;
	catch_signal(SIGUSR1);
}

static void block_usr1(struct ctx *x)
{
	sigset_t set;

	(void)x;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* The helper's events. */

static void lock_held(struct ctx *x) { pthread_mutex_lock(&x->held); }
static void unlock_held(struct ctx *x) { pthread_mutex_unlock(&x->held); }
static void post_sem(struct ctx *x) { sem_post(&x->sem); }
static void post_shared(struct ctx *x) { (void)x; sem_post(&shared->sem); }
static void signal_subject(struct ctx *x) { pthread_kill(x->subject, SIGUSR1); }

static void write_pipe(struct ctx *x)
{
	if (write(x->pipe[1], "x", 1) != 1)
		perror("write");
}

static void write_socket(struct ctx *x)
{
	if (write(x->sock[1], "x", 1) != 1)
		perror("write");
}

static void connect_to(const struct sockaddr_in *addr)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (connect(fd, (const struct sockaddr *)addr, sizeof(*addr)) < 0)
		perror("connect");
	close(fd);
}

static void connect_peer(struct ctx *x) { connect_to(&x->addr); }
static void connect_shared(struct ctx *x) { (void)x; connect_to(&shared->addr); }

/* The companions: other threads' business while main sleeps. */

/* dlopen a plugin whose constructor sleeps past the main thread's call. */
static void load_plugin(struct ctx *x)
{
	char path[PATH_MAX], so[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	const int *slept;
	void *lib;

	path[n > 0 ? n : 0] = '\0';
	snprintf(so, sizeof(so), "%s/libwl_invariant_plugin.so", dirname(path));
	note(x, "wait", SYS_clock_nanosleep);
	sem_post(&x->ready);
	lib = dlopen(so, RTLD_NOW);
	slept = lib ? dlsym(lib, "invariant_plugin_slept") : NULL;
	if (slept)
		snprintf(x->said, sizeof(x->said), "plugin loaded, its "
			 "constructor slept %s", *slept ? "fully" : "less");
	else
		snprintf(x->said, sizeof(x->said), "plugin: %s", dlerror());
}

/* Burn this thread's time at the lowest priority: the others go first. */
static void be_nice(void)
{
	setpriority(PRIO_PROCESS, (id_t)gettid(), 19);
}

static void spin(struct ctx *x)
{
	volatile unsigned long spins = 0;

	be_nice();
	note(x, "wait", -1);
	sem_post(&x->ready);
	while (!atomic_load(&x->stop))
		spins++;
	snprintf(x->said, sizeof(x->said), "spinner stopped when asked");
}

static void malloc_loop(struct ctx *x)
{
	unsigned long n = 0;

	be_nice();
	note(x, "wait", -1);
	sem_post(&x->ready);
	while (!atomic_load(&x->stop)) {
		void *volatile p = malloc(16 + n++ % 4096);

		free(p);
	}
	snprintf(x->said, sizeof(x->said), "malloc loop stopped when asked");
}

/*
 * CALL_event: no timeout, the event comes from the helper after MS. The
 * last three are a nanosleep beside a companion thread.
 */
static const struct call calls[] = {
	{ "sleep", SYS_clock_nanosleep, call_sleep, .tree = TREE | LATE },
	{ "usleep", SYS_clock_nanosleep, call_usleep },
	{ "nanosleep", SYS_clock_nanosleep, call_nanosleep },
	{ "clock_nanosleep", SYS_clock_nanosleep, call_clock_nanosleep },
	{ "clock_nanosleep_abs", SYS_clock_nanosleep, call_clock_nanosleep_abs },
	{ "poll", SYS_poll, call_poll, .tree = TREE | LATE },
	{ "poll_event", SYS_poll, call_poll_event, .deliver = write_pipe },
	{ "ppoll", SYS_ppoll, call_ppoll },
	{ "ppoll_event", SYS_ppoll, call_ppoll_event, .deliver = write_pipe },
	{ "select", SYS_pselect6, call_select },
	{ "select_event", SYS_pselect6, call_select_event, .deliver = write_pipe },
	{ "pselect", SYS_pselect6, call_pselect },
	{ "pselect_event", SYS_pselect6, call_pselect_event,
	  .deliver = write_pipe },
	{ "epoll_wait", SYS_epoll_wait, call_epoll },
	{ "epoll_wait_event", SYS_epoll_wait, call_epoll_event,
	  .deliver = write_pipe },
	{ "read_pipe", SYS_read, call_read_pipe, .deliver = write_pipe },
	{ "read_socket", SYS_read, call_read_socket, .deliver = write_socket },
	{ "accept", SYS_accept, call_accept, .deliver = connect_peer },
	{ "waitpid", SYS_wait4, call_waitpid, .prepare = fork_child },
	{ "pause", SYS_pause, call_pause, .prepare = catch_usr1,
	  .deliver = signal_subject },
	{ "sigwaitinfo", SYS_rt_sigtimedwait, call_sigwaitinfo,
	  .prepare = block_usr1, .deliver = signal_subject },
	{ "sem_wait", SYS_futex, call_sem_wait, .deliver = post_sem },
	{ "sem_timedwait", SYS_futex, call_sem_timedwait },
	{ "sem_clockwait", SYS_futex, call_sem_clockwait },
	{ "sem_shared", SYS_futex, call_sem_shared, .deliver = post_shared,
	  .tree = TREE | ONLY_TREE },
	{ "accept_shared", SYS_accept, call_accept_shared,
	  .deliver = connect_shared, .tree = TREE | ONLY_TREE },
	{ "cond_timedwait", SYS_futex, call_cond_timedwait, .tree = TREE },
	{ "mutex_lock", SYS_futex, call_mutex_lock, .hold = lock_held,
	  .deliver = unlock_held, .tree = TREE },
	{ "futex_wait", SYS_futex, call_futex_wait },
	{ "mutex_unlock", SYS_clock_nanosleep, call_mutex_unlock },
	{ "mutex_unlock_nested", SYS_clock_nanosleep, call_mutex_unlock_nested },
	{ "mutex_unlock_waiters", SYS_clock_nanosleep, call_mutex_unlock_waiters },
	{ "rwlock_unlock", SYS_clock_nanosleep, call_rwlock_unlock },
	{ "spin_unlock", SYS_clock_nanosleep, call_spin_unlock },
	{ "sem_post", SYS_clock_nanosleep, call_sem_post },
	{ "plugin_ctor", SYS_clock_nanosleep, call_nanosleep,
	  .companion = load_plugin },
	{ "spinner", SYS_clock_nanosleep, call_nanosleep, .companion = spin },
	{ "malloc_loop", SYS_clock_nanosleep, call_nanosleep,
	  .companion = malloc_loop },
};
#define NCALLS (sizeof(calls) / sizeof(calls[0]))

/* Set up everything a call may wait on; false if something failed. */
static bool ctx_init(struct ctx *x, const char *notes)
{
	struct epoll_event e = { .events = EPOLLIN };
	socklen_t len = sizeof(x->addr);
	pthread_mutexattr_t attr;

	x->notes = open(notes, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	x->listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	x->addr = (struct sockaddr_in){ .sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	x->epoll = epoll_create1(EPOLL_CLOEXEC);
	sem_init(&x->sem, 0, 0);
	sem_init(&x->ready, 0, 0);
	pthread_mutex_init(&x->held, NULL);
	pthread_mutex_init(&x->own, NULL);
	pthread_mutex_init(&x->nest, NULL);
	pthread_rwlock_init(&x->own_rw, NULL);
	pthread_spin_init(&x->own_spin, PTHREAD_PROCESS_PRIVATE);
	sem_init(&x->posted, 0, 0);
	sem_init(&x->full, 0, SEM_VALUE_MAX);
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&x->checked, &attr);
	pthread_mutexattr_destroy(&attr);
	pthread_mutex_init(&x->cond_mutex, NULL);
	pthread_cond_init(&x->cond, NULL);
	if (x->notes < 0 || pipe2(x->pipe, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, x->sock) < 0 ||
	    bind(x->listener, (struct sockaddr *)&x->addr, sizeof(x->addr)) < 0 ||
	    listen(x->listener, 4) < 0 ||
	    getsockname(x->listener, (struct sockaddr *)&x->addr, &len) < 0)
		return false;
	e.data.fd = x->pipe[0];
	return epoll_ctl(x->epoll, EPOLL_CTL_ADD, x->pipe[0], &e) == 0;
}

/* Read what an event left in the pipe and the socket. */
static void drain(struct ctx *x)
{
	struct pollfd p[2] = { { .fd = x->pipe[0], .events = POLLIN },
			       { .fd = x->sock[0], .events = POLLIN } };
	char buf[16];

	while (poll(p, 2, 0) > 0) {
		for (int i = 0; i < 2; i++)
			if ((p[i].revents & POLLIN) &&
			    read(p[i].fd, buf, sizeof(buf)) <= 0)
				return;
	}
}

/* The helper: hold what the call waits for, then deliver after ms. */
static void *helper(void *arg)
{
	struct ctx *x = arg;
	struct timespec t = span(x->ms);

	if (x->call->hold)
		x->call->hold(x);
	sem_post(&x->ready);
	x->helper = returned(clock_nanosleep(CLOCK_MONOTONIC, 0, &t, NULL));
	x->call->deliver(x);
	return NULL;
}

static const char *err_name(int err)
{
	const char *name = err ? strerrorname_np(err) : "0";

	return name ? name : "unknown";
}

/* Make the call once, for ms, and say what it returned. */
static void phase(struct ctx *x, int n, int ms)
{
	const struct call *c = x->call;
	struct outcome o;
	pthread_t h;
	long began;

	/* Before the helper starts: its event comes at least ms later. */
	began = now_ms();
	x->ms = ms;
	x->subject = pthread_self();
	if (c->prepare)
		c->prepare(x);
	if (c->deliver) {
		pthread_create(&h, NULL, helper, x);
		sem_wait(&x->ready);
	}
	if (n == 1)
		note(x, "subject", c->nr);
	errno = 0;
	o = c->block(x);
	printf("phase %d: %s returned %ld, errno %s, early %s", n, c->name,
	       o.ret, err_name(o.err),
	       now_ms() - began < ms - EARLY_MS ? "yes" : "no");
	if (c->deliver) {
		pthread_join(h, NULL);
		printf("; helper's sleep returned %s", err_name((int)x->helper.err));
	}
	printf("\n");
	drain(x);
}

static void *companion(void *arg)
{
	struct ctx *x = arg;

	x->call->companion(x);
	return NULL;
}

/* Phase 1 (with the companion, if any), then phase 2. */
static void *run_phases(void *arg)
{
	struct ctx *x = arg;
	pthread_t t;

	if (x->call->companion) {
		pthread_create(&t, NULL, companion, x);
		sem_wait(&x->ready);
	}
	phase(x, 1, x->ms);
	if (x->call->companion) {
		atomic_store(&x->stop, true);
		pthread_join(t, NULL);
		printf("companion: %s\n", x->said);
	}
	dprintf(x->notes, "phase 2\n");
	phase(x, 2, PHASE2_MS);
	return NULL;
}

/* What follows a call's name in a case name: where, and the handler. */
static const char *const variants[] = { "main", "main-handler", "worker",
					"worker-handler", "tree", "tree-handler",
					"tree-late" };
#define NVARIANTS (int)(sizeof(variants) / sizeof(variants[0]))
#define TREE_VARIANT 4		/* it and those after fork a tree */
#define LATE_VARIANT 6
#define HAS_HANDLER(v) ((v) % 2 == 1)

/* Whether call c runs in variant v (the companions' only in main). */
static bool has_variant(const struct call *c, int v)
{
	if (v == LATE_VARIANT)
		return c->tree & LATE;
	if (v >= TREE_VARIANT)
		return c->tree & TREE;
	return !(c->tree & ONLY_TREE) && (v < 2 || !c->companion);
}

static int list(void)
{
	for (size_t i = 0; i < NCALLS; i++)
		for (int v = 0; v < NVARIANTS; v++)
			if (has_variant(&calls[i], v))
				printf("%s-%s\n", calls[i].name, variants[v]);
	return 0;
}

/* The call of case name, and its variant's index; NULL if none. */
static const struct call *parse_case(const char *name, int *variant)
{
	const char *dash = strchr(name, '-');
	size_t n = dash ? (size_t)(dash - name) : 0;

	for (size_t i = 0; dash && i < NCALLS; i++) {
		if (strlen(calls[i].name) != n || strncmp(name, calls[i].name, n))
			continue;
		for (int v = 0; v < NVARIANTS; v++) {
			if (strcmp(dash + 1, variants[v]) == 0 &&
			    has_variant(&calls[i], v)) {
				*variant = v;
				return &calls[i];
			}
		}
	}
	return NULL;
}

/* The tree's shared semaphore and listening socket; false if they failed. */
static bool share(void)
{
	socklen_t len = sizeof(shared->addr);

	shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		return false;
	shared->listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	shared->addr = (struct sockaddr_in){ .sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	return sem_init(&shared->sem, 1, 0) == 0 &&
	       bind(shared->listener, (struct sockaddr *)&shared->addr,
		    sizeof(shared->addr)) == 0 &&
	       listen(shared->listener, WORKERS * 4) == 0 &&
	       getsockname(shared->listener, (struct sockaddr *)&shared->addr,
			   &len) == 0;
}

/* A worker: its own ctx, its phases, its output into the pipe out. */
static void worker(struct ctx *x, const char *notes, int ms, int out)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (dup2(out, STDOUT_FILENO) < 0 || !ctx_init(x, notes)) {
		perror("wl_invariant: worker set-up");
		_exit(1);
	}
	x->ms = ms;
	run_phases(x);
	printf("exit 0\n");
	_exit(0);
}

/* Fork a worker whose first call waits ms; its pid, or -1. */
static pid_t fork_worker(struct ctx *x, const char *notes, int ms, int *out)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0)
		worker(x, notes, ms, p[1]);
	close(p[1]);
	*out = p[0];
	return pid;
}

/*
 * Reap the n workers in the order they end, as a server does
 * (waitpid(-1)), their statuses into status; how many waits a signal
 * interrupted (with the SIGCHLD handler, only a SIGCHLD that no ending
 * worker sent can).
 */
static int reap_workers(const pid_t *pid, int n, int *status)
{
	int left = 0, interrupted = 0, st;
	pid_t got;

	for (int i = 0; i < n; i++)
		left += pid[i] > 0;
	while (left > 0) {
		got = waitpid(-1, &st, 0);
		if (got < 0 && errno == EINTR) {
			interrupted++;
			continue;
		}
		if (got < 0)
			break;
		for (int i = 0; i < n; i++)
			if (pid[i] == got) {
				status[i] = st;
				left--;
			}
	}
	return interrupted;
}

/* Print what worker i printed and how it ended; whether it exited 0. */
static bool tell_worker(int i, int status, int out)
{
	char buf[4096];
	FILE *f = fdopen(out, "r");

	while (f && fgets(buf, sizeof(buf), f))
		printf("worker %d: %s", i, buf);
	if (f)
		fclose(f);
	if (WIFSIGNALED(status))
		printf("worker %d: killed by %s\n", i, sigabbrev_np(WTERMSIG(status)));
	else
		printf("worker %d: exit status %d\n", i, WEXITSTATUS(status));
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* The late worker, forked ms/2 after the others, waits ms/2 first. */
static pid_t fork_late(struct ctx *x, const char *notes, long began, int *out)
{
	struct timespec t = { began / 1000, began % 1000 * 1000000L };

	t.tv_sec += x->ms / 2 / 1000;
	t.tv_nsec += x->ms / 2 % 1000 * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
		;
	return fork_worker(x, notes, x->ms / 2, out);
}

/*
 * A forking server: the workers make the call, the parent waits for them;
 * with handler, in waits that a SIGCHLD handler without SA_RESTART would
 * interrupt.
 */
static int run_tree(struct ctx *x, const char *notes, bool late, bool handler)
{
	int n = WORKERS + late, out[WORKERS + 1], status[WORKERS + 1] = { 0 };
	pid_t pid[WORKERS + 1];
	long began = now_ms();
	bool ok = true;

	if (handler)
		catch_signal(SIGCHLD);
	if (!share()) {
		perror("wl_invariant: tree set-up");
		return 1;
	}
	dprintf(x->notes, "workers %d\nprocesses %d\n", WORKERS, n + 1);
	for (int i = 0; i < WORKERS; i++)
		pid[i] = fork_worker(x, notes, x->ms, &out[i]);
	/* The late worker's parent sleeps first: any state will do then. */
	note(x, "wait", late ? -1 : SYS_wait4);
	if (late)
		pid[WORKERS] = fork_late(x, notes, began, &out[WORKERS]);
	printf("parent: %d waits interrupted\n", reap_workers(pid, n, status));
	for (int i = 0; i < n; i++)
		ok &= pid[i] > 0 && tell_worker(i, status[i], out[i]);
	printf("exit %d\n", ok ? 0 : 1);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	static struct ctx x;
	int variant = 0;
	char plugin_ms[16];
	pthread_t t;

	if (argc == 2 && strcmp(argv[1], "list") == 0)
		return list();
	if (argc != 4 || (x.call = parse_case(argv[1], &variant)) == NULL ||
	    (x.ms = atoi(argv[2])) <= 2 * EARLY_MS) {
		fprintf(stderr, "usage: wl_invariant list | CASE MS NOTES\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!ctx_init(&x, argv[3])) {
		perror("wl_invariant: set-up");
		return 1;
	}
	if (HAS_HANDLER(variant))
		catch_signal(SIGUSR2);
	if (variant >= TREE_VARIANT)
		return run_tree(&x, argv[3], variant == LATE_VARIANT,
				HAS_HANDLER(variant));
	/* The plugin's constructor sleeps past the main thread's call. */
	snprintf(plugin_ms, sizeof(plugin_ms), "%d", x.ms + 1000);
	setenv("INVARIANT_PLUGIN_MS", plugin_ms, 1);
	if (variant >= 2) {
		pthread_create(&t, NULL, run_phases, &x);
		pthread_join(t, NULL);
	} else {
		run_phases(&x);
	}
	printf("exit 0\n");
	return 0;
}
