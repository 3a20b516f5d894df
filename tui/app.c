/* Facts about a run derived from its parts. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "app.h"

double app_elapsed_s(const struct app *a)
{
	const struct client *c = &a->client;

	if (!c->have_hello || c->last_tick_ns < c->hello.start_monotonic_ns)
		return 0;
	return (double)(c->last_tick_ns - c->hello.start_monotonic_ns) / 1e9;
}

const char *app_state_name(const struct app *a)
{
	switch (a->client.state) {
	case TARGET_RUNNING: return "running";
	case TARGET_EXITED: return "exited";
	case TARGET_LOST: break;
	}
	if (a->attach.child == 0 && kill(a->attach.pid, 0) == 0)
		return "collector lost";
	return "exited";
}

void app_state_text(const struct app *a, char *buf, size_t size)
{
	int st = a->child_status;

	if (!a->child_reaped)
		snprintf(buf, size, "%s", app_state_name(a));
	else if (WIFEXITED(st))
		snprintf(buf, size, "exited (status %d)", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, size, "exited (killed by SIG%s)",
			 sigabbrev_np(WTERMSIG(st)) ? sigabbrev_np(WTERMSIG(st)) : "?");
	else
		snprintf(buf, size, "exited");
}
