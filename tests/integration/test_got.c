/*
 * GOT patching, end to end: a workload dlopens the collector at run time
 * (what qsptop -p's injection does), and its lock calls must reach the
 * hooks without LD_PRELOAD, be counted exactly by the real qsptop, and go
 * straight to libc again once qsptop detaches; a later qsptop re-activates
 * the same collector. The workload reports its own GOT slots ("view"), so
 * every step is checked on the slots themselves, not only on counts.
 */
#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../common/proto.h"
#include "../../common/sockpath.h"
#include "../unit/check.h"
#include "harness.h"

#define THREADS 4		/* as in tests/workloads/got.c */
#define ROUNDS 2000		/* a multiple of 10: condvar sites run 1 in 10 */
#define HOOK_DEADLINE_MS 5000
#define REPLY_TIMEOUT_MS 30000

static char source[PATH_MAX + 64];

/* A running workload and the pipes that drive it. */
struct wl {
	pid_t pid;
	int in, out;
	char buf[1 << 16];
	size_t len;
	char exe[PATH_MAX];
};

/* One GOT slot as the workload reports it. */
struct slot_view {
	char module[16], kind[8], name[96], value[32], lib[96];
};

struct view {
	struct slot_view v[64];
	int n;
};

/* Slots that must reach a hook, and slots that must stay with libc. */
static const char *const hooked_names[] = {
	"pthread_mutex_lock@", "pthread_mutex_trylock@",
	"pthread_rwlock_wrlock@", "pthread_rwlock_rdlock@",
	"pthread_cond_timedwait@GLIBC_2.3.2", "sem_wait@",
};
/* The slots patched only while holders are tracked (--holders). */
static const char *const unlock_names[] = { "pthread_mutex_unlock@",
					    "pthread_rwlock_unlock@",
					    "sem_post@" };
static const char *const libc_names[] = {
	"pthread_mutex_unlock@", "pthread_rwlock_unlock@", "pthread_create@",
	"pthread_join@", "pthread_cond_timedwait@GLIBC_2.2.5", "sem_post@",
};

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Build the workload source with extra flags (a variant, or the plugin). */
static bool compile(const char *out, const char *const flags[])
{
	struct args a = { 0 };
	char all[256] = "";
	int status;

	args_add(&a, "cc", "-std=gnu11", "-D_GNU_SOURCE", "-g", "-O1",
		 "-fno-inline", NULL);
	for (int i = 0; flags[i]; i++) {
		args_add(&a, flags[i], NULL);
		snprintf(all + strlen(all), sizeof(all) - strlen(all), " %s", flags[i]);
	}
	args_add(&a, "-o", out, source, "-lpthread", NULL);
	status = wait_status(start(a.v, tmp_path("cc.out"), tmp_path("cc.err")),
			     120000);
	if (status != 0) {
		char *err = slurp_file(tmp_path("cc.err"), "");

		fprintf(stderr, "cc%s failed (%d): %s\n", all, status, err);
		free(err);
	}
	return status == 0;
}

static bool wl_start(struct wl *w, const char *exe)
{
	int in[2], out[2];

	memset(w, 0, sizeof(*w));
	snprintf(w->exe, sizeof(w->exe), "%s", exe);
	if (pipe(in) < 0 || pipe(out) < 0)
		return false;
	w->pid = fork();
	if (w->pid == 0) {
		int e = open(tmp_path("wl.err"), O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(e, 2);
		close(in[1]);
		close(out[0]);
		execl(exe, exe, (char *)NULL);
		_exit(126);
	}
	close(in[0]);
	close(out[1]);
	w->in = in[1];
	w->out = out[0];
	return w->pid > 0;
}

static void wl_send(struct wl *w, const char *fmt, ...)
{
	char line[PATH_MAX + 64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	line[n++] = '\n';
	if (write(w->in, line, (size_t)n) != n)
		fprintf(stderr, "cannot write to the workload: %s\n", strerror(errno));
}

/* The workload's next line of output; false on timeout or exit. */
static bool wl_line(struct wl *w, char *line, size_t size)
{
	long deadline = monotonic_ms() + REPLY_TIMEOUT_MS;

	for (;;) {
		char *nl = memchr(w->buf, '\n', w->len);
		struct pollfd pfd = { .fd = w->out, .events = POLLIN };
		ssize_t n;

		if (nl) {
			size_t len = (size_t)(nl - w->buf);

			snprintf(line, size, "%.*s", (int)len, w->buf);
			memmove(w->buf, nl + 1, w->len - len - 1);
			w->len -= len + 1;
			return true;
		}
		if (monotonic_ms() > deadline || w->len == sizeof(w->buf) ||
		    poll(&pfd, 1, 100) < 0)
			return false;
		if (!(pfd.revents & (POLLIN | POLLHUP)))
			continue;
		n = read(w->out, w->buf + w->len, sizeof(w->buf) - w->len);
		if (n <= 0)
			return false;
		w->len += (size_t)n;
	}
}

/* Send a command and return its one-line reply ("" when none came). */
static const char *wl_ask(struct wl *w, const char *fmt, const char *arg)
{
	static char reply[512];

	wl_send(w, fmt, arg);
	if (!wl_line(w, reply, sizeof(reply)))
		reply[0] = '\0';
	return reply;
}

static bool wl_work(struct wl *w, int rounds)
{
	char n[16];

	snprintf(n, sizeof(n), "%d", rounds);
	return strncmp(wl_ask(w, "work %s", n), "ok ", 3) == 0;
}

static bool wl_view(struct wl *w, struct view *v)
{
	char line[512];

	v->n = 0;
	wl_send(w, "view");
	while (wl_line(w, line, sizeof(line))) {
		struct slot_view *s = &v->v[v->n];

		if (strcmp(line, "end") == 0)
			return true;
		if (v->n < 64 &&
		    sscanf(line, "%15s %7s %95s %31s %95s", s->module, s->kind,
			   s->name, s->value, s->lib) == 5)
			v->n++;
	}
	return false;
}

static int wl_quit(struct wl *w)
{
	int status;

	wl_send(w, "quit");
	close(w->in);
	status = wait_status(w->pid, 30000);
	close(w->out);
	return status;
}

/* Whether every slot of module named like one of names points into lib. */
static bool all_in(const struct view *v, const char *module,
		   const char *const names[], size_t nnames, const char *lib)
{
	int found = 0;

	for (int i = 0; i < v->n; i++) {
		const struct slot_view *s = &v->v[i];

		for (size_t j = 0; j < nnames; j++) {
			if (strcmp(s->module, module) != 0 ||
			    strncmp(s->name, names[j], strlen(names[j])) != 0)
				continue;
			if (strcmp(s->lib, lib) != 0)
				return false;
			found++;
		}
	}
	return found > 0;
}

static bool hooked(const struct view *v, const char *module)
{
	if (strcmp(module, "plugin") == 0)
		return all_in(v, module, hooked_names, 1, "libqsptop.so");
	return all_in(v, module, hooked_names, 6, "libqsptop.so");
}

/* Whether no slot of names points at a hook (libc, or a lazy stub). */
static bool none_hooked(const struct view *v, const char *const names[],
			size_t nnames)
{
	for (int i = 0; i < v->n; i++) {
		for (size_t j = 0; j < nnames; j++) {
			if (strncmp(v->v[i].name, names[j], strlen(names[j])) == 0 &&
			    strcmp(v->v[i].lib, "libqsptop.so") == 0)
				return false;
		}
	}
	return true;
}

/* Whether every slot the baseline knows holds its value again. */
static bool restored(const struct view *v, const struct view *base)
{
	for (int i = 0; i < base->n; i++) {
		const struct slot_view *b = &base->v[i];
		bool same = false;

		for (int j = 0; j < v->n; j++) {
			const struct slot_view *s = &v->v[j];

			same |= strcmp(s->module, b->module) == 0 &&
				strcmp(s->kind, b->kind) == 0 &&
				strcmp(s->name, b->name) == 0 &&
				strcmp(s->value, b->value) == 0;
		}
		if (!same)
			return false;
	}
	for (int j = 0; j < v->n; j++) {
		if (strcmp(v->v[j].lib, "libqsptop.so") == 0)
			return false;
	}
	return base->n > 0;
}

/* Poll the workload's view until pred holds for it, or the deadline. */
static bool poll_view(struct wl *w, struct view *v, long deadline_ms,
		      bool (*pred)(const struct view *, const void *),
		      const void *arg)
{
	long deadline = monotonic_ms() + deadline_ms;

	do {
		if (wl_view(w, v) && pred(v, arg))
			return true;
		sleep_ms(20);
	} while (monotonic_ms() < deadline);
	return false;
}

static bool pred_hooked(const struct view *v, const void *module)
{
	return hooked(v, module);
}

static bool pred_unlock_hooked(const struct view *v, const void *module)
{
	return all_in(v, module, unlock_names, 3, "libqsptop.so");
}

static bool pred_restored(const struct view *v, const void *base)
{
	return restored(v, base);
}

/* The protection columns of the program's own mappings. */
static char *exe_maps(const struct wl *w)
{
	char path[64], line[PATH_MAX + 128];
	size_t cap = 4096, len = 0;
	char *out = calloc(1, cap);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)w->pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		size_t n = strlen(line);

		if (n < 2 || strstr(line, w->exe) == NULL || len + n + 1 > cap)
			continue;
		memcpy(out + len, line, n + 1);
		len += n;
	}
	if (f)
		fclose(f);
	return out;
}

/* A qsptop -p watching the workload in batch mode. */
struct watcher {
	pid_t pid;
	char out[PATH_MAX + 64], err[PATH_MAX + 64], json[PATH_MAX + 64];
};

static void watch_start(struct watcher *q, pid_t target, const char *name,
			bool holders)
{
	char pidstr[16];

	snprintf(pidstr, sizeof(pidstr), "%d", (int)target);
	snprintf(q->out, sizeof(q->out), "%s/%s.out", tmp, name);
	snprintf(q->err, sizeof(q->err), "%s/%s.err", tmp, name);
	snprintf(q->json, sizeof(q->json), "%s/%s.json", tmp, name);
	unlink(q->json);
	unlink(q->out);		/* an earlier watcher's tables are not ours */
	unlink(q->err);
	q->pid = start((char *[]){ qsptop, "-b", "-d", "0.2", "-j", q->json,
				   "-p", pidstr, holders ? "--holders" : NULL,
				   NULL }, q->out, q->err);
}

/* How many tables the watcher has printed. */
static int watch_tables(const struct watcher *q)
{
	char *text = slurp_file(q->out, "");
	int n = 0;

	for (const char *p = text; (p = strstr(p, "\nTYPE ")) != NULL; p++)
		n++;
	free(text);
	return n;
}

/* Wait until the watcher printed more than n tables. */
static bool watch_wait(const struct watcher *q, int n)
{
	long deadline = monotonic_ms() + 10000;

	while (watch_tables(q) <= n) {
		if (monotonic_ms() > deadline)
			return false;
		sleep_ms(20);
	}
	return true;
}

/* Stop the watcher as a user would (it detaches) and load its snapshot. */
static cJSON *watch_stop(struct watcher *q, const char *label)
{
	char *text;
	cJSON *snap;
	int status;

	kill(q->pid, SIGTERM);
	status = wait_status(q->pid, 20000);
	text = slurp_file(q->err, "");
	CHECK(status == 0, "%s: qsptop -p exited %d: %s", label, status, text);
	free(text);
	snap = load_json(q->json);
	CHECK(snap != NULL, "%s: qsptop wrote no JSON snapshot", label);
	return snap;
}

/* Sum a field over the rows of one function and lock type. */
static double sum_rows(const cJSON *snap, const char *symbol, const char *type,
		       const char *field)
{
	const cJSON *row;
	double sum = 0;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const char *sym = str_field(cJSON_GetObjectItem(row, "site"), "symbol");

		if (sym && strcmp(sym, symbol) == 0 &&
		    strcmp(str_field(row, "type"), type) == 0)
			sum += num_field(row, field);
	}
	return sum;
}

/* Every site of the workload, counted exactly: times rounds of work. */
static void check_counts(const cJSON *snap, const char *label, int times,
			 bool plugin)
{
	static const struct { const char *symbol, *type, *field; int per_round_x10; } sites[] = {
		{ "site_mutex", "mutex", "acquisitions", 10 },
		{ "site_fnptr", "mutex", "acquisitions", 10 },
		{ "site_trylock", "mutex", "acquisitions", 10 },
		{ "site_trylock", "mutex", "failed", 0 },
		{ "site_wrlock", "rwlock-write", "acquisitions", 10 },
		{ "site_rdlock", "rwlock-read", "acquisitions", 10 },
		{ "site_condwait", "condvar", "failed", 1 },
		{ "site_condwait", "condvar", "acquisitions", 0 },
		{ "site_semwait", "semaphore", "acquisitions", 10 },
		{ "plugin_site", "mutex", "acquisitions", 10 },
	};

	for (size_t i = 0; i < sizeof(sites) / sizeof(sites[0]); i++) {
		double want = (double)times * THREADS * ROUNDS * sites[i].per_round_x10 / 10;
		double got = sum_rows(snap, sites[i].symbol, sites[i].type, sites[i].field);

		if (!plugin && strcmp(sites[i].symbol, "plugin_site") == 0)
			continue;
		CHECK(got == want, "%s: %s %s %s: expected %.0f, got %.0f", label,
		      sites[i].symbol, sites[i].type, sites[i].field, want, got);
	}
}

/*
 * Holders are tracked only when asked for: without --holders the unlock
 * slot stays with libc and no hold is timed; with it, the slot points at
 * the hook and holds are timed.
 */
static void check_holders(struct wl *w, const char *label, bool holders)
{
	struct view v;

	if (holders)
		CHECK(poll_view(w, &v, HOOK_DEADLINE_MS, pred_unlock_hooked, "main"),
		      "%s: with --holders the unlock and post slots point at the hooks", label);
	else
		CHECK(wl_view(w, &v) && none_hooked(&v, unlock_names, 3),
		      "%s: without --holders the unlock and post slots stay with libc", label);
}

/*
 * One attach: qsptop -p connects (patching the GOT if the collector was
 * dormant), the workload works, qsptop sees it all and detaches.
 */
static cJSON *attach_and_work(struct wl *w, const char *label,
			      const char *name, bool holders)
{
	struct watcher q;
	struct view v;
	cJSON *snap;
	int tables;

	watch_start(&q, w->pid, name, holders);
	CHECK(watch_wait(&q, 0), "%s: qsptop -p printed no table", label);
	CHECK(poll_view(w, &v, HOOK_DEADLINE_MS, pred_hooked, "main"),
	      "%s: with qsptop attached, every lock slot points at a hook", label);
	check_holders(w, label, holders);
	CHECK(wl_work(w, ROUNDS), "%s: the workload's own results are right", label);
	/* The second table after the work is from a scan after it. */
	tables = watch_tables(&q);
	CHECK(watch_wait(&q, tables + 1), "%s: qsptop stopped printing", label);
	snap = watch_stop(&q, label);
	CHECK(snap == NULL || cJSON_IsTrue(cJSON_GetObjectItem(snap, "holders")) ==
	      holders, "%s: the snapshot's holders is %s", label,
	      holders ? "true" : "false");
	if (snap && holders)
		CHECK(sum_all(snap, "holds_timed") > 0,
		      "%s: with --holders holds are timed, got none", label);
	else if (snap)
		CHECK(sum_all(snap, "holds_timed") == 0 &&
		      sum_all(snap, "hold_ns") == 0,
		      "%s: without --holders no hold is timed, got %.0f",
		      label, sum_all(snap, "holds_timed"));
	return snap;
}

/* CPU time (clock ticks) of the workload's collector thread, or -1. */
static long collector_ticks(pid_t pid)
{
	char path[128], comm[64], stat[1024];
	long ticks = -1;
	FILE *f;

	for (int tid = pid; tid < pid + 64; tid++) {
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, tid);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		comm[0] = '\0';
		if (fgets(comm, sizeof(comm), f) == NULL)
			comm[0] = '\0';
		fclose(f);
		if (strncmp(comm, "qsptop", 6) != 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, tid);
		f = fopen(path, "r");
		if (f && fgets(stat, sizeof(stat), f)) {
			unsigned long ut, st;
			const char *p = strrchr(stat, ')');

			if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
					&ut, &st) == 2)
				ticks = (long)(ut + st);
		}
		if (f)
			fclose(f);
	}
	return ticks;
}

static void send_hello(int fd)
{
	struct proto_client_hello h = { .magic = PROTO_MAGIC,
					.version = PROTO_VERSION };
	struct wbuf b = { 0 };

	proto_put_client_hello(&b, &h);
	if (send(fd, b.data, b.len, MSG_NOSIGNAL) != (ssize_t)b.len)
		fprintf(stderr, "send hello: %s\n", strerror(errno));
	wbuf_free(&b);
}

/*
 * Dormant means idle. A connection that never says hello does not wake
 * the collector; a hello does. A client that then vanishes without
 * DETACH leaves the hooks in for the grace period, not longer.
 */
static void check_grace(struct wl *w, const struct view *base)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct view v;
	long t0 = -1, t1 = -1, gone;

	/*
	 * Idle: some second, within a deadline that only catches a thread
	 * that never rests, in which it uses at most 5 clock ticks (what it
	 * does just after the detach may still take one).
	 */
	for (long end = monotonic_ms() + 20000; monotonic_ms() < end;) {
		t0 = collector_ticks(w->pid);
		sleep_ms(1000);
		t1 = collector_ticks(w->pid);
		if (t0 < 0 || t1 - t0 <= 5)
			break;
	}
	CHECK(t0 >= 0 && t1 - t0 <= 5, "the dormant collector thread: expected "
	      "a second of at most 5 clock ticks within 20 s, the last used %ld",
	      t1 - t0);
	sockpath_target(addr.sun_path, sizeof(addr.sun_path), geteuid(), w->pid);
	CHECK(connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0,
	      "connect to the dlopen'ed collector: %s", strerror(errno));
	sleep_ms(1500);
	CHECK(wl_view(w, &v) && restored(&v, base),
	      "a connection that never says hello leaves the collector dormant");
	send_hello(fd);
	CHECK(poll_view(w, &v, HOOK_DEADLINE_MS, pred_hooked, "main"),
	      "a client's hello re-activates the dormant collector");
	close(fd);
	gone = monotonic_ms();
	sleep_ms(2000);
	CHECK(wl_view(w, &v) && hooked(&v, "main"),
	      "2 s after a client vanished without DETACH the hooks are still in");
	CHECK(poll_view(w, &v, 10000, pred_restored, base),
	      "after the grace period the GOT is restored");
	CHECK(monotonic_ms() - gone >= 4500,
	      "the GOT was restored only after the grace period (%ld ms)",
	      monotonic_ms() - gone);
}

/*
 * The resolver's late write is patched back; the program's own is kept;
 * a plugin unloaded while attached is forgotten, and patched again when
 * it comes back (most likely at the same address).
 */
static void check_repatch_and_foreign(struct wl *w, const char *plugin)
{
	struct watcher q;
	struct view v;
	bool mine = false;

	watch_start(&q, w->pid, "foreign", false);
	CHECK(poll_view(w, &v, HOOK_DEADLINE_MS, pred_hooked, "main"),
	      "foreign: attached again");
	CHECK(strcmp(wl_ask(w, "resolve %s", "pthread_mutex_trylock"), "ok 1") == 0,
	      "foreign: the workload overwrote its trylock slot");
	CHECK(poll_view(w, &v, HOOK_DEADLINE_MS, pred_hooked, "main"),
	      "a hook the lazy resolver overwrote is patched back by a later scan");
	CHECK(strcmp(wl_ask(w, "own %s", "pthread_rwlock_rdlock"), "ok 1") == 0,
	      "foreign: the workload installed its own rdlock");
	CHECK(strcmp(wl_ask(w, "unplug", NULL), "ok") == 0,
	      "foreign: the workload dlcloses its plugin while attached");
	CHECK(watch_wait(&q, watch_tables(&q) + 2), "foreign: qsptop printed");
	CHECK(strcmp(wl_ask(w, "plugin %s", plugin), "ok") == 0 &&
	      poll_view(w, &v, HOOK_DEADLINE_MS, pred_hooked, "plugin"),
	      "a plugin loaded again after a dlclose is patched again");
	CHECK(wl_work(w, 10), "foreign: the reloaded plugin works");
	cJSON_Delete(watch_stop(&q, "foreign"));
	CHECK(wl_view(w, &v), "foreign: view");
	for (int i = 0; i < v.n; i++) {
		if (strncmp(v.v[i].name, "pthread_rwlock_rdlock@", 22) == 0)
			mine = strcmp(v.v[i].lib, basename(w->exe)) == 0;
	}
	CHECK(mine, "a slot the program rewrote is neither re-patched nor "
	      "restored at detach");
	CHECK(all_in(&v, "main", hooked_names, 2, "libc.so.6") &&
	      all_in(&v, "plugin", hooked_names, 1, "libc.so.6"),
	      "foreign: the other slots were restored");
	CHECK(wl_work(w, 10), "the program's own hook still works");
}

/*
 * The whole cycle on one build of the workload: dlopen, hooks, counts,
 * detach, dormant, attach again without a second dlopen, detach again.
 * extras: also a plugin loaded after attach, the grace period, and slots
 * rewritten behind the collector's back.
 */
static void test_cycle(const char *label, const char *exe, bool extras)
{
	char plugin[PATH_MAX + 64], what[128];
	struct view base, v;
	struct wl w;
	char *maps0, *maps;
	cJSON *snap;

	if (!wl_start(&w, exe)) {
		CHECK(false, "%s: cannot start %s", label, exe);
		return;
	}
	CHECK(wl_work(&w, 100), "%s: works before the collector is loaded", label);
	CHECK(wl_view(&w, &base) && base.n > 0, "%s: the workload shows its GOT", label);
	CHECK(all_in(&base, "main", hooked_names, 6, "libc.so.6"),
	      "%s: before the dlopen every lock slot points into libc", label);
	maps0 = exe_maps(&w);
	CHECK(strcmp(wl_ask(&w, "load %s", library), "ok") == 0,
	      "%s: the workload dlopens the collector", label);
	CHECK(poll_view(&w, &v, HOOK_DEADLINE_MS, pred_hooked, "main"),
	      "%s: within 5 s of the dlopen every lock slot points at a hook", label);
	CHECK(none_hooked(&v, libc_names, 6), "%s: other pthread slots and the "
	      "old-ABI condvar are left alone", label);
	maps = exe_maps(&w);
	CHECK(strcmp(maps, maps0) == 0, "%s: page protections changed by "
	      "patching:\nbefore:\n%s\nafter:\n%s", label, maps0, maps);
	free(maps);
	if (extras) {
		snprintf(plugin, sizeof(plugin), "%s/got_plugin.so", tmp);
		CHECK(compile(plugin, (const char *[]){ "-DGOT_PLUGIN", "-shared",
						   "-fPIC", NULL }) &&
		      strcmp(wl_ask(&w, "plugin %s", plugin), "ok") == 0,
		      "%s: the workload dlopens a plugin", label);
		CHECK(poll_view(&w, &v, HOOK_DEADLINE_MS, pred_hooked, "plugin"),
		      "%s: a plugin loaded later is patched at a later scan", label);
	}

	snprintf(what, sizeof(what), "%s, first attach", label);
	snap = attach_and_work(&w, what, "first", false);
	check_counts(snap, what, 1, extras);
	cJSON_Delete(snap);
	CHECK(poll_view(&w, &v, HOOK_DEADLINE_MS, pred_restored, &base),
	      "%s: after qsptop detached every slot holds its old value", label);
	CHECK(!extras || all_in(&v, "plugin", hooked_names, 1, "libc.so.6"),
	      "%s: the plugin's slot is restored too", label);
	maps = exe_maps(&w);
	CHECK(strcmp(maps, maps0) == 0, "%s: page protections changed by "
	      "restoring:\nbefore:\n%s\nafter:\n%s", label, maps0, maps);
	free(maps);

	CHECK(wl_work(&w, ROUNDS), "%s: works while the collector is dormant", label);
	/* The second one with --holders: the unlock slot too, then back. */
	snprintf(what, sizeof(what), "%s, second attach", label);
	snap = attach_and_work(&w, what, "second", true);
	/*
	 * One attached round: each session starts from its own baseline, so
	 * neither the first session's counts nor the dormant round show.
	 */
	check_counts(snap, what, 1, extras);
	cJSON_Delete(snap);
	CHECK(poll_view(&w, &v, HOOK_DEADLINE_MS, pred_restored, &base),
	      "%s: after the second detach every slot holds its old value", label);

	if (extras) {
		check_grace(&w, &base);
		check_repatch_and_foreign(&w, plugin);
	}
	CHECK(wl_quit(&w) == 0, "%s: the workload's results were all right and "
	      "it exited 0", label);
	free(maps0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median ns per lock+unlock pair over runs of the workload's bench. */
static double bench(struct wl *w, int runs)
{
	double v[16];

	for (int i = 0; i < runs; i++) {
		const char *r = wl_ask(w, "bench %s", "2000000");

		v[i] = strncmp(r, "ns ", 3) == 0 ? atof(r + 3) : -1;
	}
	qsort(v, (size_t)runs, sizeof(v[0]), cmp_double);
	return v[runs / 2];
}

/* What a lock+unlock costs before attach, attached, after detach. */
static void measure_costs(const char *exe)
{
	struct view base, v;
	struct watcher q;
	double before, during, after;
	struct wl w;

	if (!wl_start(&w, exe))
		return;
	wl_work(&w, 10);
	wl_view(&w, &base);
	before = bench(&w, 7);
	wl_ask(&w, "load %s", library);
	poll_view(&w, &v, HOOK_DEADLINE_MS, pred_hooked, "main");
	during = bench(&w, 7);
	watch_start(&q, w.pid, "bench", false);
	watch_wait(&q, 0);
	cJSON_Delete(watch_stop(&q, "bench"));
	CHECK(poll_view(&w, &v, HOOK_DEADLINE_MS, pred_restored, &base),
	      "bench: restored after detach");
	after = bench(&w, 7);
	printf("lock+unlock pair, median of 7 runs: before attach %.1f ns, "
	       "attached %.1f ns (%.2fx), after detach %.1f ns (%.2fx)\n",
	       before, during, during / before, after, after / before);
	CHECK(wl_quit(&w) == 0, "bench: the workload exited 0");
}

int main(int argc, char **argv)
{
	char now[PATH_MAX + 64], noplt[PATH_MAX + 64], plain[PATH_MAX + 64];

	find_paths("/tmp/qsptop-got-XXXXXX", "wl_got");
	snprintf(source, sizeof(source), "%s/tests/workloads/got.c", root);
	signal(SIGPIPE, SIG_IGN);
	snprintf(plain, sizeof(plain), "%s", workload);
	snprintf(now, sizeof(now), "%s/wl_got_now", tmp);
	snprintf(noplt, sizeof(noplt), "%s/wl_got_noplt", tmp);
	test_cycle("PIE, lazy binding", plain, true);
	if (compile(now, (const char *[]){ "-Wl,-z,now", "-Wl,-z,relro", NULL }))
		test_cycle("full RELRO (-z now)", now, false);
	else
		CHECK(false, "cannot build the -z now variant");
	if (compile(noplt, (const char *[]){ "-fno-plt", NULL }))
		test_cycle("-fno-plt (GLOB_DAT only)", noplt, false);
	else
		CHECK(false, "cannot build the -fno-plt variant");
	if (argc > 1 && strcmp(argv[1], "--bench") == 0)
		measure_costs(now);
	remove_tmp();
	return check_summary();
}
