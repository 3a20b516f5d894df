/* Facts about a run derived from its parts. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/clock.h"
#include "app.h"
#include "ledger.h"
#include "column.h"
#include "inject_proc.h"
#include "procs.h"
#include "roles.h"
#include "shmobj.h"
#include "tree.h"
#include "xalloc.h"

/* How long a program the launched command exec'd has to start listening. */
#define EXEC_CONNECT_MS 5000
/* How often the children of the processes watched are looked for, at most and least. */
#define CHILDREN_MIN_MS 100
#define CHILDREN_MAX_MS 1000

size_t app_processes(const struct app *a)
{
	return 1 + a->npeers;
}

struct client *app_client(struct app *a, size_t i)
{
	return i == 0 ? &a->client : &a->peers[i - 1].client;
}

const struct client *app_client_const(const struct app *a, size_t i)
{
	return i == 0 ? &a->client : &a->peers[i - 1].client;
}

pid_t app_pid(const struct app *a, size_t i)
{
	return i == 0 ? a->attach.pid : a->peers[i - 1].attach.pid;
}

void app_pid_text(const struct app *a, char *buf, size_t size)
{
	size_t n = app_processes(a), len;

	if (n == 1 || n > 4) {
		snprintf(buf, size, n == 1 ? "pid %d" : "pid %d +%zu",
			 (int)a->attach.pid, n - 1);
		return;
	}
	snprintf(buf, size, "pids %d", (int)a->attach.pid);
	for (size_t i = 1; i < n && (len = strlen(buf)) < size; i++)
		snprintf(buf + len, size - len, ",%d", (int)app_pid(a, i));
}

/* The connection whose ticks close the table's intervals. */
static const struct client *clock_client(const struct app *a)
{
	for (size_t i = 0; i < app_processes(a); i++)
		if (app_client_const(a, i)->clock)
			return app_client_const(a, i);
	return &a->client;
}

/* Every live connection's waits in progress, for the table. */
static void sum_waits(struct app *a)
{
	struct model_wait *all = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < app_processes(a); i++) {
		const struct client *c = app_client(a, i);

		if (c->fd < 0 || c->n_waits == 0)
			continue;
		all = xgrow(all, &cap, n + c->n_waits, 16, sizeof(*all));
		memcpy(all + n, c->waits, c->n_waits * sizeof(*all));
		n += c->n_waits;
	}
	model_set_waits(a->model, all, n);
	free(all);
}

/*
 * Add the other connections' last totals to the clock's tick; every
 * connection's waits in progress go to the table.
 */
static void sum_tick(void *ctx, struct proto_tick *t)
{
	struct app *a = ctx;

	sum_waits(a);
	for (size_t i = 0; i < app_processes(a); i++) {
		const struct client *c = app_client(a, i);

		if (c->clock)
			continue;
		t->threads_seen += c->tick.threads_seen;
		t->threads_live += c->fd >= 0 ? c->tick.threads_live : 0;
		t->dropped += c->tick.dropped;
		t->folded += c->tick.folded;
		t->memory_used += c->fd >= 0 ? c->tick.memory_used : 0;
		t->memory_cap += c->fd >= 0 ? c->tick.memory_cap : 0;
	}
}

/* Whether the table may hold several processes: then shared locks are named across them. */
static bool several(const struct app *a)
{
	return a->opt.npids > 1 || a->opt.children;
}

void app_connect_first(struct app *a)
{
	unsigned proc = a->next_proc++;

	client_init(&a->client, a->attach.fd, a->model, a->symbols, proc,
		    &a->ids);
	procs_set_pid(proc, a->attach.pid);
	/* Followed to an exec'd program, it ticks for the peers as before. */
	a->client.sum_tick = sum_tick;
	a->client.sum_ctx = a;
	if (several(a))
		a->client.shm = shmobj_new(a->attach.pid);
}

void app_add_peer(struct app *a, const struct attach *at)
{
	unsigned proc = a->next_proc++;
	struct peer *p;

	if (proc >= PROCS_MAX)
		fatal("cannot watch more than %u processes", PROCS_MAX);
	a->peers = xreallocarray(a->peers, a->npeers + 1, sizeof(*a->peers));
	p = &a->peers[a->npeers++];
	p->attach = *at;
	client_init(&p->client, at->fd, a->model, a->symbols, proc, &a->ids);
	procs_set_pid(proc, at->pid);
	p->client.shm = shmobj_new(at->pid);
	p->client.clock = false;
	a->wrappers_sent = false;
}

size_t app_pollfds(const struct app *a, struct pollfd *pfd, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < app_processes(a) && n < max; i++) {
		int fd = app_client_const(a, i)->fd;

		if (fd >= 0)
			pfd[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
	}
	return n;
}

bool app_buffered(const struct app *a)
{
	for (size_t i = 0; i < app_processes(a); i++)
		if (client_buffered(app_client_const(a, i)))
			return true;
	return false;
}

/* The clock's connection is over: the first one still open ticks now. */
static bool pass_clock(struct app *a)
{
	for (size_t i = 0; i < app_processes(a); i++) {
		struct client *c = app_client(a, i);

		if (c->fd >= 0) {
			for (size_t j = 0; j < app_processes(a); j++)
				app_client(a, j)->clock = j == i;
			c->sum_tick = sum_tick;
			c->sum_ctx = a;
			return true;
		}
	}
	return false;
}

int app_poll(struct app *a, int timeout_ms)
{
	struct pollfd *pfd;
	struct client *clock = NULL;
	int rc = 0;

	if (a->npeers == 0)
		return client_poll(&a->client, timeout_ms);
	/* The launched command's end (or exec) ends the table, as alone. */
	if (a->attach.child && a->client.fd < 0)
		return -1;
	pfd = xreallocarray(NULL, app_processes(a), sizeof(*pfd));
	if (!app_buffered(a))
		poll(pfd, app_pollfds(a, pfd, app_processes(a)), timeout_ms);
	free(pfd);
	/* The others first: what they sent before the tick counts in its interval. */
	for (size_t i = 0; i < app_processes(a); i++) {
		struct client *c = app_client(a, i);

		if (c->clock)
			clock = c;
		else
			client_poll(c, 0);
	}
	if (clock)
		rc = client_poll(clock, 0);
	if (a->attach.child && a->client.fd < 0)
		return -1;
	if ((clock == NULL || rc < 0) && pass_clock(a))
		return rc == 1 ? 1 : 0;
	return rc;
}

/* Whether pid is watched already, being readied, or found unwatchable. */
static bool pid_known(const struct app *a, pid_t pid)
{
	for (size_t i = 0; i < app_processes(a); i++)
		if (app_pid(a, i) == pid)
			return true;
	for (size_t i = 0; i < a->nreadying; i++)
		if (a->readying[i].pid == pid)
			return true;
	for (size_t i = 0; i < a->nunwatched; i++)
		if (a->unwatched[i] == pid)
			return true;
	return false;
}

static void unwatched(struct app *a, pid_t pid)
{
	a->unwatched = xreallocarray(a->unwatched, a->nunwatched + 1,
				     sizeof(*a->unwatched));
	a->unwatched[a->nunwatched++] = pid;
}

/* Have a helper process make pid's collector listen: it may wait 3 s. */
static void start_ready(struct app *a, pid_t pid, pid_t parent, bool quiet)
{
	char err[512];
	pid_t helper = fork();

	if (helper == 0) {
		int rc = attach_ready(pid, a->opt.force, err, sizeof(err));

		if (rc < 0 && !quiet && inject_process_alive(pid))
			warning("not watching PID %d, a child of PID %d: %s",
				(int)pid, (int)parent, err);
		_exit(rc < 0);
	}
	if (helper < 0) {
		unwatched(a, pid);
		return;
	}
	a->readying = xreallocarray(a->readying, a->nreadying + 1,
				    sizeof(*a->readying));
	a->readying[a->nreadying++] = (struct readying){ pid, parent, helper };
}

/* Connect to a readied child, its collector listening now. */
static void watch_child(struct app *a, pid_t pid, pid_t parent, bool quiet)
{
	unsigned interval_ms = (unsigned)(a->opt.delay_s * 1000 + 0.5);
	struct attach at = { 0 };
	char err[512];

	if (attach_try_connect(&at, pid, interval_ms, a->opt.force, err,
			       sizeof(err)) == 0) {
		app_add_peer(a, &at);
		return;
	}
	unwatched(a, pid);
	if (!quiet && inject_process_alive(pid))
		warning("not watching PID %d, a child of PID %d: %s", (int)pid,
			(int)parent, err);
}

/* Watch the children whose helpers are done; forget those that failed. */
static void finish_ready(struct app *a, bool quiet)
{
	for (size_t i = 0; i < a->nreadying;) {
		struct readying r = a->readying[i];
		int status;
		pid_t got = waitpid(r.helper, &status, WNOHANG);

		if (got == 0 || (got < 0 && errno == EINTR)) {
			i++;
			continue;
		}
		a->readying[i] = a->readying[--a->nreadying];
		if (got == r.helper && WIFEXITED(status) &&
		    WEXITSTATUS(status) == 0)
			watch_child(a, r.pid, r.parent, quiet);
		else
			unwatched(a, r.pid);
	}
}

/* Half the interval, within 100 ms and 1 s: a child joins within two. */
static long children_every_ms(const struct app *a)
{
	long ms = (long)(a->opt.delay_s * 500);

	return ms < CHILDREN_MIN_MS ? CHILDREN_MIN_MS :
	       ms > CHILDREN_MAX_MS ? CHILDREN_MAX_MS : ms;
}

void app_find_children(struct app *a, bool quiet)
{
	pid_t kids[256];
	long now = clock_now_ms();

	if (!a->opt.children)
		return;
	finish_ready(a, quiet);
	if (now - a->children_ms < children_every_ms(a))
		return;
	a->children_ms = now;
	for (size_t i = 0; i < app_processes(a); i++) {
		pid_t parent = app_pid(a, i);
		size_t n;

		if (app_client(a, i)->state != TARGET_RUNNING)
			continue;
		n = tree_children(parent, kids, sizeof(kids) / sizeof(kids[0]));
		for (size_t k = 0; k < n; k++)
			if (!pid_known(a, kids[k]))
				start_ready(a, kids[k], parent, quiet);
	}
	if (column_several() != (app_processes(a) > 1))
		column_set_several(app_processes(a) > 1);
}

/* End the helpers still at work, by PID: their borrowed threads go back by themselves. */
static void end_helpers(struct app *a)
{
	for (size_t i = 0; i < a->nreadying; i++) {
		kill(a->readying[i].helper, SIGKILL);
		waitpid(a->readying[i].helper, NULL, 0);
	}
	a->nreadying = 0;
}

void app_detach(struct app *a)
{
	for (size_t i = 0; i < app_processes(a); i++)
		if (app_client(a, i)->state == TARGET_RUNNING)
			client_detach(app_client(a, i));
}

void app_close(struct app *a)
{
	end_helpers(a);
	for (size_t i = 0; i < app_processes(a); i++)
		client_close(app_client(a, i));
	free(a->peers);
	free(a->unwatched);
	free(a->readying);
	a->peers = NULL;
	a->unwatched = NULL;
	a->readying = NULL;
	a->npeers = a->nunwatched = 0;
}

/* The collector's clock at the last tick, or when counting began. */
static uint64_t last_tick_ns(const struct app *a)
{
	const struct client *c = clock_client(a);

	return c->ticks ? c->last_tick_ns : c->origin_ns;
}

double app_elapsed_s(const struct app *a)
{
	const struct client *c = clock_client(a);
	uint64_t from = a->reset_ns ? a->reset_ns : c->origin_ns;
	uint64_t to = last_tick_ns(a);

	if (!c->have_hello || to < from)
		return 0;
	return (double)(to - from) / 1e9;
}

/*
 * Send c the n ranges (pairs lo, hi, tagged) that are of its own process,
 * untagged.
 */
static void send_wrappers(struct client *c, const uint64_t *ranges, size_t n)
{
	uint64_t *own = xreallocarray(NULL, n ? 2 * n : 1, sizeof(*own));
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (procs_of(ranges[2 * i]) != c->proc)
			continue;
		own[2 * k] = procs_addr(ranges[2 * i]);
		own[2 * k + 1] = procs_addr(ranges[2 * i + 1]);
		k++;
	}
	client_send_wrappers(c, own, k);
	free(own);
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

	if (a->autowrap && a->wrappers)
		autowrap_scan(a->autowrap, a->model, a->wrappers);
	if (!a->client.have_hello || modules == 0 ||
	    (a->wrappers_sent && modules == a->wrapper_modules &&
	     generation == a->wrapper_generation &&
	     a->wrappers_found_sent == wrappers_found(a->wrappers)))
		return;
	if (a->wrappers)
		n = wrappers_ranges(a->wrappers, &ranges);
	for (size_t i = 0; i < app_processes(a); i++)
		send_wrappers(app_client(a, i), ranges, n);
	free(ranges);
	a->wrappers_sent = true;
	a->wrappers_found_sent = a->wrappers ? wrappers_found(a->wrappers) : 0;
	a->wrapper_modules = modules;
	a->wrapper_generation = generation;
}

void app_holders_on(struct app *a)
{
	if (a->opt.holders)
		return;
	a->opt.holders = true;
	attach_set_holders(true);
	for (size_t i = 0; i < app_processes(a); i++)
		client_send_holders(app_client(a, i), true);
}

void app_probe_futex(struct app *a)
{
	struct unseen_wait w[UNSEEN_KINDS];

	if (!a->client.have_hello || a->client.state != TARGET_RUNNING)
		return;
	if (a->unseen == NULL)
		a->unseen = unseen_new(a->attach.pid);
	unseen_sample(a->unseen, a->symbols);
	model_note_unseen(a->model, w, unseen_waits(a->unseen, w, UNSEEN_KINDS));
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

/* The query's code of a site: codes.h. */
static uint64_t query_code(void *app, uint64_t site)
{
	struct app *a = app;

	if (a->codes == NULL)
		a->codes = codes_new(a->symbols);
	return codes_site(a->codes, site);
}

void app_join_processes(struct app *a, bool join)
{
	a->query.code = join ? query_code : NULL;
}

void app_reset(struct app *a)
{
	/* Exported counters never go down: the ledger keeps what r takes. */
	if (a->ledger)
		ledger_carry(a->ledger, a);
	model_reset(a->model);
	a->reset_ns = last_tick_ns(a);
}

void app_build_wrappers(struct app *a)
{
	wrappers_free(a->wrappers);
	autowrap_free(a->autowrap);
	a->autowrap = a->opt.no_auto_wrappers ? NULL : autowrap_new(a->symbols);
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
	/*
	 * The program's addresses are not the old one's: it is a process of
	 * its own in the table (procs.h), its modules beside the old ones',
	 * whose rows keep their names.
	 */
	client_close(&a->client);
	app_build_wrappers(a);
	roles_free(a);
	app_connect_first(a);
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

/* Whether a process besides the first is still watched. */
static bool peer_running(const struct app *a)
{
	for (size_t i = 0; i < a->npeers; i++)
		if (a->peers[i].client.state == TARGET_RUNNING)
			return true;
	return false;
}

/* The first process's state, as the header gave it with one process. */
static const char *first_state(const struct app *a)
{
	if (target_exited(a))
		return "exited";
	return a->client.state == TARGET_RUNNING ? "running" : "collector lost";
}

const char *app_process_state(const struct app *a, size_t i)
{
	const struct client *c = app_client_const(a, i);

	if (i == 0)
		return first_state(a);
	if (c->state == TARGET_RUNNING)
		return "running";
	if (c->state == TARGET_EXITED || !inject_process_alive(app_pid(a, i)))
		return "exited";
	return "collector lost";
}

const char *app_state_name(const struct app *a)
{
	if (peer_running(a))
		return "running";
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

const char *app_lock_order_text(const struct app *a, char *buf, size_t size)
{
	const struct lock_order *o;
	size_t n = model_lock_orders(a->model, &o);

	if (n == 0)
		return NULL;
	snprintf(buf, size, "LOCK ORDER: %zu", n);
	return buf;
}

void app_stats(const struct app *a, struct model_stats *st)
{
	model_stats(a->model, st);
	st->wrappers_found = autowrap_count(a->autowrap);
	if (target_exited(a) && !peer_running(a))
		st->threads_live = 0;
}

/* Waits this long or longer are a thread stuck on a lock. */
#define STUCK_WAIT_MIN_NS 1000000000ull
/* While threads are stuck, they are looked at from outside this often. */
#define STUCK_LOOK_MS 5000

bool app_stuck_lock_wait(const struct app *a, const struct model_wait *w)
{
	enum lock_type type;
	uint64_t site, object, min = (uint64_t)(a->opt.delay_s * 1e9);

	if (min < STUCK_WAIT_MIN_NS)
		min = STUCK_WAIT_MIN_NS;
	return w->blocked_ns >= min &&
	       model_row_key(a->model, w->row, &type, &site, &object) &&
	       (type == LOCK_MUTEX || type == LOCK_RWLOCK_READ ||
		type == LOCK_RWLOCK_WRITE || type == LOCK_SPIN);
}

/*
 * Whether threads look stuck on locks: a wait in progress the collector
 * reports is long, or nothing was acquired in the last interval while
 * threads sit in lock calls no hook times (waits begun before the
 * collector was loaded: the hung process qsptop was attached to).
 */
static bool stuck_on_locks(const struct app *a)
{
	const struct model_wait *w;
	size_t n = model_waits(a->model, &w);
	struct model_stats st;

	for (size_t i = 0; i < n; i++) {
		if (app_stuck_lock_wait(a, &w[i]))
			return true;
	}
	model_stats(a->model, &st);
	if (st.ticks < 2 || st.acq_per_s > 0)
		return false;
	for (size_t i = 0; i < st.n_unseen; i++) {
		if (!st.unseen[i].idle && st.unseen[i].threads > 0)
			return true;
	}
	return false;
}

void app_watch_stuck(struct app *a)
{
	const struct stuck_deadlock *d;
	int64_t ms = clock_now_ms();
	bool stuck;

	if (a->outside[0] || !a->client.have_hello ||
	    a->client.state != TARGET_RUNNING ||
	    ms - a->stuck_look_ms < STUCK_LOOK_MS)
		return;
	stuck = stuck_on_locks(a);
	/* Looked at again once no longer stuck: a deadlock shown goes. */
	if (!stuck && !(a->stuck && stuck_deadlocks(a->stuck, &d) > 0))
		return;
	a->stuck_look_ms = ms;
	if (a->stuck == NULL)
		a->stuck = stuck_new(a->attach.pid, false);
	if (stuck_sample(a->stuck, a->symbols))
		app_stuck_waits(a, a->stuck);
}

void app_stuck_waits(const struct app *a, struct stuck *st)
{
	const struct model_wait *w;
	size_t n = model_waits(a->model, &w), k = 0;
	struct stuck_wait *sw = xcalloc(n ? n : 1, sizeof(*sw));

	for (size_t i = 0; i < n; i++) {
		enum lock_type type;
		uint64_t site, object;

		if (!model_row_key(a->model, w[i].row, &type, &site, &object))
			continue;
		sw[k++] = (struct stuck_wait){ .tid = (pid_t)w[i].tid,
			.type = lock_type_name(type), .object = object,
			.site = site, .blocked_ns = w[i].blocked_ns,
			.holder = (pid_t)w[i].holder };
	}
	stuck_add_waits(st, sw, k);
	free(sw);
}
