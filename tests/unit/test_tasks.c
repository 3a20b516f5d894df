/*
 * Thread names from /proc (tasks.c): a thread's name as it set it, kept
 * once the thread is gone, and found among many threads.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../tui/tasks.h"
#include "check.h"

static atomic_int named_tid;
static atomic_bool may_end;

static void *named_thread(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "tk-named");
	atomic_store(&named_tid, (int)syscall(SYS_gettid));
	while (!atomic_load(&may_end))
		sched_yield();
	return NULL;
}

int main(void)
{
	struct tasks *t = tasks_new(getpid());
	pthread_t th;
	uint32_t tid;

	pthread_create(&th, NULL, named_thread, NULL);
	while (atomic_load(&named_tid) == 0)
		sched_yield();
	tid = (uint32_t)atomic_load(&named_tid);
	/* Many threads seen before it, none of them live here. */
	for (uint32_t fake = 1u << 30; fake < (1u << 30) + 20000; fake++)
		tasks_name(t, fake, false);
	CHECK_STR(tasks_name(t, tid, true), "tk-named");
	atomic_store(&may_end, true);
	pthread_join(th, NULL);
	CHECK_STR(tasks_name(t, tid, true), "tk-named");
	CHECK_STR(tasks_name(t, (1u << 30) + 7, false), "?");
	tasks_free(t);
	return check_summary();
}
