/* Facts about a run derived from its parts. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "app.h"
#include "roles.h"

/* How long a program the launched command exec'd has to start listening. */
#define EXEC_CONNECT_MS 5000

/* The collector's clock at the last tick, or when counting began. */
static uint64_t last_tick_ns(const struct app *a)
{
	const struct client *c = &a->client;

	return c->ticks ? c->last_tick_ns : c->origin_ns;
}

double app_elapsed_s(const struct app *a)
{
	const struct client *c = &a->client;
	uint64_t from = a->reset_ns ? a->reset_ns : c->origin_ns;
	uint64_t to = last_tick_ns(a);

	if (!c->have_hello || to < from)
		return 0;
	return (double)(to - from) / 1e9;
}

/*
 * The collector counts every call from inside a wrapper on its caller,
 * and says which wrapper call site it went through: whether wrappers are
 * skipped or shown is then the model's choice alone, for past counts too.
 */
void app_sync_wrappers(struct app *a)
{
	size_t modules = symbols_modules(a->symbols);
	unsigned generation = symbols_generation(a->symbols);
	uint64_t *ranges = NULL;
	size_t n = 0;

	if (!a->client.have_hello || modules == 0 ||
	    (a->wrappers_sent && modules == a->wrapper_modules &&
	     generation == a->wrapper_generation))
		return;
	if (a->wrappers)
		n = wrappers_ranges(a->wrappers, &ranges);
	client_send_wrappers(&a->client, ranges, n);
	free(ranges);
	a->wrappers_sent = true;
	a->wrapper_modules = modules;
	a->wrapper_generation = generation;
}

void app_probe_futex(struct app *a)
{
	if (!a->client.have_hello || a->client.state != TARGET_RUNNING)
		return;
	if (a->rawfutex == NULL)
		a->rawfutex = rawfutex_new(a->attach.pid);
	rawfutex_sample(a->rawfutex);
	model_note_raw_futex(a->model, rawfutex_threads(a->rawfutex));
}

/* Threads named in one go at most; the rest wait for the next read. */
#define NAME_BATCH 256

void app_name_threads(struct app *a)
{
	uint32_t tids[NAME_BATCH];
	size_t n;

	if (!a->client.have_hello || a->client.state != TARGET_RUNNING)
		return;
	if (a->tasks == NULL)
		a->tasks = tasks_new(a->attach.pid);
	n = model_take_new_tids(a->model, tids, NAME_BATCH);
	for (size_t i = 0; i < n; i++)
		tasks_name(a->tasks, tids[i], true);
}

const char *app_thread_name(const struct app *a, uint32_t tid)
{
	const char *name;

	if (a->tasks == NULL)
		return NULL;
	name = tasks_name(a->tasks, tid, a->client.state == TARGET_RUNNING);
	return strcmp(name, "?") == 0 ? NULL : name;
}

void app_reset(struct app *a)
{
	model_reset(a->model);
	a->reset_ns = last_tick_ns(a);
}

void app_build_wrappers(struct app *a)
{
	wrappers_free(a->wrappers);
	a->wrappers = wrappers_new(a->symbols);
	wrappers_builtin(a->wrappers);
	for (size_t i = 0; i < a->opt.nwrappers; i++)
		wrappers_add(a->wrappers, a->opt.wrappers[i]);
}

bool app_follow_exec(struct app *a)
{
	unsigned interval_ms = (unsigned)(a->opt.delay_s * 1000 + 0.5);

	if (a->attach.child == 0 || a->child_reaped ||
	    a->client.state == TARGET_EXITED ||
	    attach_reconnect(&a->attach, interval_ms, EXEC_CONNECT_MS) < 0)
		return false;
	/* The program's modules are not the old one's: name them afresh. */
	client_close(&a->client);
	symbols_free(a->symbols);
	a->symbols = symbols_new();
	app_build_wrappers(a);
	roles_free(a);
	client_init(&a->client, a->attach.fd, a->model, a->symbols);
	a->wrappers_sent = false;
	return true;
}

/* Whether the target is gone (a collector lost with it counts). */
static bool target_exited(const struct app *a)
{
	switch (a->client.state) {
	case TARGET_RUNNING: return a->child_reaped;
	case TARGET_EXITED: return true;
	case TARGET_LOST: break;
	}
	return !(a->attach.child == 0 && kill(a->attach.pid, 0) == 0);
}

const char *app_state_name(const struct app *a)
{
	if (target_exited(a))
		return "exited";
	return a->client.state == TARGET_RUNNING ? "running" : "collector lost";
}

void app_state_text(const struct app *a, char *buf, size_t size)
{
	int st = a->child_status;
	const char *sig;

	if (!a->child_reaped)
		snprintf(buf, size, "%s (%s)", app_state_name(a), a->attach.mode);
	else if (WIFEXITED(st))
		snprintf(buf, size, "exited with status %d (%s)", WEXITSTATUS(st),
			 a->attach.mode);
	else if (WIFSIGNALED(st) && (sig = sigabbrev_np(WTERMSIG(st))) != NULL)
		snprintf(buf, size, "killed by SIG%s (%s)", sig, a->attach.mode);
	else
		snprintf(buf, size, "exited (%s)", a->attach.mode);
}

void app_stats(const struct app *a, struct model_stats *st)
{
	model_stats(a->model, st);
	if (target_exited(a))
		st->threads_live = 0;
}
