/* What an empty table means, in words. */
#include <stdio.h>
#include <string.h>

#include "explain.h"
#include "totals.h"

#define HOOKED "pthread mutexes, rwlocks, spinlocks and condition " \
	"variables, sem_wait and its timed forms, futex calls through syscall()"

/* How the collector came into the process. */
static const char *how(const char *mode)
{
	if (mode && strcmp(mode, "launched") == 0)
		return "the collector preloaded at launch";
	if (mode && strcmp(mode, "injected") == 0)
		return "the collector injected into the running process, "
		       "its modules' calls redirected";
	return "the collector already running in the process";
}

void explain_looked(char *buf, size_t size, const char *mode)
{
	snprintf(buf, size, "Looked at: the calls qsptop hooks (" HOOKED
		 "), with %s.", how(mode));
}

void explain_unseen(char *buf, size_t size, const struct model_stats *st)
{
	char list[UNSEEN_KINDS * 64];

	if (totals_unseen_list(list, sizeof(list), st, false))
		snprintf(buf, size, "Not seen: %s: waits no hook times (the "
			 "threads are looked at once a second).", list);
	else
		snprintf(buf, size, "Not seen: no thread was found in a wait "
			 "that no hook times (the threads are looked at once a "
			 "second).");
}

bool explain_idle(char *buf, size_t size, const struct model_stats *st)
{
	char list[UNSEEN_KINDS * 64];

	buf[0] = '\0';
	if (!totals_unseen_list(list, sizeof(list), st, true))
		return false;
	snprintf(buf, size, "Idle, not counted: %s (waiting for a thread's end "
		 "or for work, not for a lock).", list);
	return true;
}
