/*
 * Start-up, fork and exit of the collector.
 *
 * The constructor resolves the real functions, starts the collector thread
 * and returns: it runs under the loader lock and must not wait. Injected
 * (dlopen'ed by qsptop -p), it does no more: the collector thread patches
 * the GOT slots that send callers to the hooks (got.c). At exit the
 * destructor asks the thread for a final flush, with a bounded wait, so the
 * counts are exact and a dead qsptop never hangs the program.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/proto.h"
#include "arena.h"
#include "collector.h"
#include "ehframe.h"
#include "frames.h"
#include "got.h"
#include "hooks.h"
#include "modules.h"
#include "server.h"
#include "state.h"
#include "table.h"

#define FINAL_FLUSH_MS 5000
#define WRAPPERS_WAIT_MS 3000

enum thread_phase { THREAD_NONE, THREAD_STARTING, THREAD_RUNNING, THREAD_FAILED };

static int thread_state;
static int launch_fd = -1;

/* Create the collector thread with every signal blocked: the host's
 * signals must keep going to the host's threads. early: before main(). */
static void start_thread(bool early)
{
	sigset_t all, old;
	pthread_t thread;
	int rc;

	if (server_prepare(launch_fd, early) < 0) {
		__atomic_store_n(&thread_state, THREAD_FAILED, __ATOMIC_RELEASE);
		return;
	}
	launch_fd = -1;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&thread, NULL, server_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		__atomic_store_n(&thread_state, THREAD_FAILED, __ATOMIC_RELEASE);
		return;
	}
	pthread_setname_np(thread, "qsptop");
	pthread_detach(thread);
	__atomic_store_n(&thread_state, THREAD_RUNNING, __ATOMIC_RELEASE);
}

/* Start the collector thread unless it runs. */
static void collector_start(bool early)
{
	int none = THREAD_NONE;

	if (__atomic_load_n(&thread_state, __ATOMIC_ACQUIRE) == THREAD_NONE &&
	    __atomic_compare_exchange_n(&thread_state, &none, THREAD_STARTING,
					false, __ATOMIC_ACQ_REL,
					__ATOMIC_RELAXED))
		start_thread(early);
}

/* The memory cap qsptop passed down when it launched us. */
static void take_memory_cap(void)
{
	const char *s = getenv("QSPTOP_MEMORY_MB");
	char *end;
	unsigned long mb;

	if (s == NULL)
		return;
	mb = strtoul(s, &end, 10);
	unsetenv("QSPTOP_MEMORY_MB");
	if (*end == '\0' && mb > 0 && mb < (1ul << 20))
		arena_set_cap((size_t)mb << 20);
}

/* The connection qsptop passed down when it launched us, or -1. */
static int take_launch_fd(void)
{
	const char *s = getenv("QSPTOP_FD");
	char *end;
	long fd;

	if (s == NULL)
		return -1;
	fd = strtol(s, &end, 10);
	unsetenv("QSPTOP_FD");
	return (*end == '\0' && fd > 2 && fd < 65536) ? (int)fd : -1;
}

/*
 * How qsptop's QSPTOP_EXEC_PID (the PID of the command it launched, which
 * keeps the collector across exec) applies to us: 1 when we are that
 * process, -1 when we are a descendant that inherited it, 0 when unset.
 */
static int exec_followed(void)
{
	const char *s = getenv("QSPTOP_EXEC_PID");
	char *end;
	long pid;

	if (s == NULL)
		return 0;
	pid = strtol(s, &end, 10);
	if (*end == '\0' && pid == (long)getpid())
		return 1;
	unsetenv("QSPTOP_EXEC_PID");
	return -1;
}

/*
 * Remove this library from LD_PRELOAD so that programs the target execs
 * run without it, unless QSPTOP_FOLLOW_EXEC asks otherwise (or follow).
 */
static void strip_preload(bool follow)
{
	const char *preload = getenv("LD_PRELOAD");
	char *copy, *tok, *save, *out;
	size_t size;
	Dl_info self;

	if (preload == NULL || follow || getenv("QSPTOP_FOLLOW_EXEC") ||
	    !dladdr((void *)strip_preload, &self) || self.dli_fname == NULL)
		return;
	size = strlen(preload) + 1;
	copy = arena_alloc(size);
	out = arena_alloc(size);
	if (copy && out) {
		memcpy(copy, preload, size);
		for (tok = strtok_r(copy, " :", &save); tok;
		     tok = strtok_r(NULL, " :", &save)) {
			if (strcmp(tok, self.dli_fname) == 0)
				continue;
			if (*out)
				strcat(out, ":");
			strcat(out, tok);
		}
		if (*out)
			setenv("LD_PRELOAD", out, 1);
		else
			unsetenv("LD_PRELOAD");
	}
	arena_free(copy, size);
	arena_free(out, size);
}

/*
 * The child of fork() starts over: no counts, no sessions, no thread, and
 * it records nothing until a qsptop asks for it. A child that execs or
 * exits at once (most of them) so costs nothing and leaves nothing behind.
 */
static void on_fork_child(void)
{
	state_set_recording(false);
	table_forget_all();
	arena_forget_all();
	server_forget();
	launch_fd = -1;
	__atomic_store_n(&thread_state, THREAD_NONE, __ATOMIC_RELEASE);
}

/*
 * Called by qsptop -p, through ptrace, in a forked child whose collector
 * has no thread yet (a child of a watched, dormant or launched process):
 * start recording and serving as if it had been loaded now. A no-op
 * where the thread runs. Injected, the thread patches the GOT itself
 * unless the child inherited the slots patched.
 */
__attribute__((visibility("default"))) void qsptop_wake(void)
{
	if (__atomic_load_n(&thread_state, __ATOMIC_ACQUIRE) != THREAD_NONE)
		return;
	if (!state_injected() || got_active())
		state_set_recording(true);
	collector_start(false);
}

/*
 * Patched GOT slots point into this library: it must outlive any dlclose
 * of the handle that loaded it (threads may also be parked in a hook).
 */
static void pin_self(void)
{
	Dl_info self;

	if (dladdr((void *)pin_self, &self) && self.dli_fname)
		dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

__attribute__((constructor)) static void collector_init(void)
{
	bool launched, injected = !hooks_interposed();
	int follow = injected ? 0 : exec_followed();

	state_set_injected(injected);
	if (hooks_resolve() < 0)
		return;
	proto_set_allocator(arena_realloc, arena_free);
	if (injected) {
		/* Other threads run: the environment is not ours to touch. */
		pin_self();
	}
	modules_fence_fork();
	ehframe_set_walker(modules_iterate);
	if (!injected) {
		take_memory_cap();
		launch_fd = take_launch_fd();
		strip_preload(follow > 0);
		/*
		 * The program has not started: build the frame tables now, so
		 * that its first waits have stacks too. Injected, the thread
		 * builds them once qsptop has said its memory cap.
		 */
		frames_sync();
	}
	pthread_atfork(NULL, NULL, on_fork_child);
	if (follow < 0) {
		/* A descendant of a followed command: dormant, as if forked. */
		return;
	}
	state_set_recording(true);
	launched = launch_fd >= 0;
	collector_start(!injected);
	/*
	 * Launched (or the launched command after an exec, which qsptop
	 * connects to again): the program waits (a moment, bounded) until
	 * qsptop said which code is lock wrappers, so that its first lock
	 * calls count on their callers already.
	 */
	if ((launched || follow > 0) &&
	    __atomic_load_n(&thread_state, __ATOMIC_ACQUIRE) == THREAD_RUNNING) {
		server_wait_wrappers(WRAPPERS_WAIT_MS);
		server_release_launch();
	}
}

__attribute__((destructor)) static void collector_fini(void)
{
	if (__atomic_load_n(&thread_state, __ATOMIC_ACQUIRE) == THREAD_RUNNING)
		server_finish(FINAL_FLUSH_MS);
}
