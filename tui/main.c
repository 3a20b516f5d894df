/*
 * qsptop: attach to a process (launch it, or connect to its collector),
 * show its lock contention every interval, and write the outputs asked for
 * when it stops.
 */
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "app.h"
#include "batch.h"
#include "column.h"
#include "diff.h"
#include "export.h"
#include "export_pprof.h"
#include "format.h"
#include "live.h"
#include "names.h"
#include "ns.h"
#include "ledger.h"
#include "roles.h"
#include "scrape.h"
#include "serve.h"
#include "site.h"
#include "stuck_text.h"
#include "theme.h"
#include "tree.h"
#include "waitkind.h"
#include "xalloc.h"

#define POLL_MS 200
#define CHILD_GRACE_MS 3000
/* How long a batch view from outside may wait for names still to come. */
#define OUTSIDE_NAMES_MS 1000

static volatile sig_atomic_t stop_requested;
/* A SIGINT came: 1 from the terminal (Ctrl-C), 2 sent to qsptop alone. */
static volatile sig_atomic_t interrupted;

static void on_stop_signal(int sig, siginfo_t *info, void *context)
{
	(void)context;
	if (sig == SIGINT)
		interrupted = info && info->si_code == SI_KERNEL ? 1 : 2;
	stop_requested = 1;
}

static void install_signals(void)
{
	struct sigaction sa = { .sa_sigaction = on_stop_signal,
				.sa_flags = SA_SIGINFO };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* A file size limit makes writes fail with EFBIG, reported like ENOSPC. */
	signal(SIGXFSZ, SIG_IGN);
}

/* In batch mode, say once on stderr that debuginfod is no longer asked. */
static void tell_fetch_failure(const struct app *a)
{
	static bool told;
	const char *why = symbols_fetch_failure(a->symbols);

	if (why && !told)
		warning("%s", why);
	told |= why != NULL;
}

/* A malformed roles file, in one line on stderr. */
static void tell_roles_error(struct app *a)
{
	const char *e = roles_take_error(a);

	if (e)
		fprintf(stderr, "qsptop: %s\n", e);
}

/*
 * Print every interval until the target ends, -n is reached or a signal;
 * on stderr when stdout carries an export.
 */
static void run_batch(struct app *a)
{
	FILE *out = options_stdout_export(&a->opt) ? stderr : stdout;
	long shown = 0;

	while (!stop_requested) {
		int rc = app_poll(a, POLL_MS);

		app_find_children(a, a->attach.child != 0);
		app_sync_wrappers(a);
		app_probe_futex(a);
		app_name_threads(a);
		roles_update(a);
		scrape_serve(a);
		tell_roles_error(a);

		if (rc == 1) {
			symbols_refresh(a->symbols);
			if (!a->opt.no_tables)
				batch_print(out, a);
			tell_fetch_failure(a);
			if (a->opt.iterations && ++shown >= a->opt.iterations)
				return;
		}
		if (rc < 0 && !app_follow_exec(a))
			return;
	}
}

/*
 * Print the threads view every interval until the target ends, -n is
 * reached or a signal (the outside view: no collector).
 */
static void run_outside_batch(struct app *a)
{
	FILE *out = options_stdout_export(&a->opt) ? stderr : stdout;
	long shown = 0;
	int64_t next = clock_now_ms() + (int64_t)(a->opt.delay_s * 1000);

	while (!stop_requested) {
		int64_t now = clock_now_ms();

		if (now < next) {
			usleep((useconds_t)((next - now < POLL_MS ? next - now :
					     POLL_MS) * 1000));
			continue;
		}
		next += (int64_t)(a->opt.delay_s * 1000);
		symbols_refresh(a->symbols);
		if (!stuck_sample(a->stuck, a->symbols))
			return;
		/* Names the first look has not reached yet, before printing. */
		symbols_settle(a->symbols, OUTSIDE_NAMES_MS);
		stuck_text_print(out, a->stuck, a->symbols, a->outside);
		if (a->opt.iterations && ++shown >= a->opt.iterations)
			return;
	}
}

/* What qsptop does to a launched command still running when it stops. */
enum ending {
	LET_IT_END,	/* it is ending by itself: wait for it */
	END_IT,		/* SIGTERM now, SIGKILL after a grace period */
	INTERRUPT_IT,	/* it got SIGINT: a grace period, then END_IT */
};

/* Signal the launched command (unless reaped) and all it started. */
static int signal_tree(struct app *a, int sig)
{
	int sent = 0;

	if (!a->child_reaped && kill(a->attach.child, sig) == 0)
		sent++;
	return sent + tree_signal(a->child_reaped ? 0 : a->attach.child, sig);
}

/*
 * After the command is reaped, what it started and left running: SIGTERM
 * was sent; SIGKILL what remains after the grace period.
 */
static void end_rest(struct app *a)
{
	long deadline = clock_now_ms() + CHILD_GRACE_MS;

	while (signal_tree(a, 0) > 0) {
		if (clock_now_ms() > deadline) {
			signal_tree(a, SIGKILL);
			deadline = clock_now_ms() + CHILD_GRACE_MS;
		}
		usleep(20000);
	}
}

/* Reap the launched command, ending it as asked. Returns its wait status. */
static int reap_child(struct app *a, enum ending how)
{
	long deadline = clock_now_ms() + CHILD_GRACE_MS;
	bool ending = how != LET_IT_END;
	int status = 0;
	pid_t got;

	if (a->child_reaped)
		return a->child_status;
	if (how == END_IT)
		signal_tree(a, SIGTERM);
	while ((got = waitpid(a->attach.child, &status,
			      how == LET_IT_END ? 0 : WNOHANG)) == 0 ||
	       (got < 0 && errno == EINTR)) {
		client_poll(&a->client, 50);
		if (how == LET_IT_END || clock_now_ms() <= deadline)
			continue;
		if (how == INTERRUPT_IT)
			warning("'%s' still runs %d s after the interrupt: ending it",
				a->opt.command[0], CHILD_GRACE_MS / 1000);
		signal_tree(a, how == INTERRUPT_IT ? SIGTERM : SIGKILL);
		how = how == INTERRUPT_IT ? END_IT : LET_IT_END;
		deadline = clock_now_ms() + CHILD_GRACE_MS;
	}
	/* The final update may still be in flight after the exit. */
	while (client_poll(&a->client, 100) >= 0)
		;
	a->child_reaped = true;
	a->child_status = status;
	if (ending && signal_tree(a, SIGTERM) > 0)
		end_rest(a);
	return status;
}

static int command_status(const struct app *a, int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status)) {
		/* The user who typed Ctrl-C needs no news of its SIGINT. */
		if (!(interrupted && WTERMSIG(status) == SIGINT))
			warning("'%s' was killed by signal %d (%s)",
				a->opt.command[0], WTERMSIG(status),
				strsignal(WTERMSIG(status)));
		return 128 + WTERMSIG(status);
	}
	return 1;
}

/* How qsptop ends after watching processes it did not launch. */
static int connected_status(struct app *a)
{
	bool several = a->opt.npids > 1 || a->opt.children;
	int rc = 0;

	for (size_t i = 0; i < app_processes(a); i++) {
		const struct client *c = app_client(a, i);

		/*
		 * Among several processes (a list, a tree), one that ended
		 * without a goodbye (a worker's _exit()) has exited; alone,
		 * it lost its collector, as a process killed does.
		 */
		if (c->state == TARGET_LOST &&
		    (!several ||
		     strcmp(app_process_state(a, i), "exited") != 0)) {
			warning("lost the collector of PID %d: %s",
				(int)app_pid(a, i), c->error);
			rc = 1;
		}
	}
	app_detach(a);
	return rc;
}

/* Write the exports asked for; rc, or 1 on failure. */
static int write_outputs(struct app *a, int rc)
{
	char err[512];

	if (a->opt.json_path &&
	    export_json(a, &a->query, a->opt.json_path, err, sizeof(err)) < 0) {
		warning("cannot write the JSON snapshot: %s", err);
		rc = rc ? rc : 1;
	}
	if (a->opt.folded_path &&
	    export_folded(a, &a->query, a->opt.folded_path, err, sizeof(err)) < 0) {
		warning("cannot write the folded stacks: %s", err);
		rc = rc ? rc : 1;
	}
	if (a->opt.folded_holders_path &&
	    export_folded_holders(a, &a->query, a->opt.folded_holders_path,
				  err, sizeof(err)) < 0) {
		warning("cannot write the holders' folded stacks: %s", err);
		rc = rc ? rc : 1;
	}
	if (a->opt.pprof_path &&
	    export_pprof(a, &a->query, a->opt.pprof_path, err, sizeof(err)) < 0) {
		warning("cannot write the pprof profile: %s", err);
		rc = rc ? rc : 1;
	}
	return rc;
}

/*
 * The threads view of a command qsptop is about to end, for the snapshot:
 * its waits as they are now, not after the end.
 */
static void sample_threads_before_end(struct app *a)
{
	if (a->opt.json_path == NULL || a->outside[0])
		return;
	if (a->stuck == NULL)
		a->stuck = stuck_new(a->attach.pid, false);
	if (stuck_sample(a->stuck, a->symbols))
		app_stuck_waits(a, a->stuck);
}

static int finish(struct app *a)
{
	bool stopped_early = a->client.state == TARGET_RUNNING;
	int rc;

	if (a->attach.child && stopped_early)
		sample_threads_before_end(a);
	if (a->attach.child) {
		if (a->client.state == TARGET_LOST && a->client.error[0] &&
		    strncmp(a->client.error, "the collector closed", 20) != 0)
			warning("%s", a->client.error);
		/* Ctrl-C reached the command too; a SIGINT for qsptop alone is passed on. */
		if (interrupted == 2 && !a->child_reaped)
			kill(a->attach.child, SIGINT);
		int status = reap_child(a, interrupted ? INTERRUPT_IT :
					stopped_early ? END_IT : LET_IT_END);

		/* A command qsptop ended itself is no failure to report. */
		rc = stopped_early && !interrupted ? 0 : command_status(a, status);
	} else {
		rc = connected_status(a);
	}
	return write_outputs(a, rc);
}

/* Theme problems before the screen exists go to stderr. */
static void theme_warning(void *ctx, const char *message)
{
	(void)ctx;
	warning("theme: %s", message);
}

/* A bad -t is a usage error, found before anything is started. */
static void check_theme(const char *name)
{
	struct theme t;
	char err[512];

	if (theme_load(&t, name, theme_warning, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "qsptop: %s\n", err);
		exit(2);
	}
}

/*
 * Where a launched command writes while the screen is ours: a private
 * file, named to the user when qsptop ends if anything was written.
 */
static int open_command_log(char *path, size_t size)
{
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	int fd;

	snprintf(path, size, "%s/qsptop-output-XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0)
		fatal("cannot create %s for the command's output: %s", path,
		      strerror(errno));
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	return fd;
}

static void report_command_log(const char *path)
{
	struct stat st;

	if (stat(path, &st) == 0 && st.st_size > 0)
		fprintf(stderr, "qsptop: the command's output is in %s\n", path);
	else
		unlink(path);
}

/*
 * A process in a mount namespace of its own (a container) names its
 * modules as it sees them: we find them through its root.
 */
static void see_from_root(struct app *a)
{
	if (!ns_shared(a->attach.pid, "mnt"))
		symbols_set_root(a->symbols, a->attach.pid);
}

/* Every PID of a -p list names a process, or qsptop says which does not. */
static void check_pids(const struct options *o)
{
	if (o->npids < 2)
		return;		/* attach_connect() says it of one */
	for (size_t i = 0; i < o->npids; i++)
		if (kill(o->pids[i], 0) < 0 && errno == ESRCH)
			fatal("-p: no process %d (of the %zu given)",
			      (int)o->pids[i], o->npids);
}

/* Connect to the processes of -p's list after the first. */
static void attach_peers(struct app *a)
{
	unsigned interval_ms = (unsigned)(a->opt.delay_s * 1000 + 0.5);

	for (size_t i = 1; i < a->opt.npids; i++) {
		struct attach at = { 0 };

		attach_connect(&at, a->opt.pids[i], interval_ms, a->opt.force);
		app_add_peer(a, &at);
	}
}

/*
 * Watch pid from outside only, with the threads view: why says why. A
 * process /proc will not show us, or without glibc, cannot be.
 */
static bool go_outside(struct app *a, pid_t pid, const char *why)
{
	struct waitkind *w = waitkind_new(pid);
	char line[512];
	bool can = waitkind_maps(w) && waitkind_syscall(pid, (unsigned long)pid,
							 line, sizeof(line));

	waitkind_free(w);
	if (!can)
		return false;
	a->attach = (struct attach){ .fd = -1, .pid = pid, .mode = "outside" };
	snprintf(a->outside, sizeof(a->outside), "%s", why);
	a->stuck = stuck_new(pid, true);
	return true;
}

/* The command of a process watched from outside, from /proc (comm). */
static void name_outside(struct app *a)
{
	char path[64], *name = a->client.hello.command;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)a->attach.pid);
	f = fopen(path, "r");
	if (f && fgets(name, sizeof(a->client.hello.command), f))
		name[strcspn(name, "\n")] = '\0';
	if (f)
		fclose(f);
}

/*
 * Connect to the one process of -p; when loading the collector into it
 * fails (refused, no thread safe to borrow), say why and watch it from
 * outside instead, where that can be done.
 */
static void connect_one(struct app *a, unsigned interval_ms)
{
	char err[512], why[600];
	pid_t pid = a->opt.pid;

	if (a->opt.no_inject) {
		if (kill(pid, 0) < 0 && errno == ESRCH)
			fatal("no process with PID %d", (int)pid);
		if (!go_outside(a, pid, "outside view (--no-inject): no lock table"))
			fatal("cannot look at the threads of PID %d from outside "
			      "(not glibc, or /proc is closed to us)", (int)pid);
		return;
	}
	if (attach_try_connect(&a->attach, pid, interval_ms, a->opt.force,
			       err, sizeof(err)) == 0)
		return;
	if (!attach_injection_failed())
		fatal("%s", err);
	warning("%s", err);
	snprintf(why, sizeof(why), "outside view: the collector could not be "
		 "loaded: %s", err);
	if (!go_outside(a, pid, why))
		exit(1);
}

static void attach(struct app *a, bool live, char *log, size_t size)
{
	unsigned interval_ms = (unsigned)(a->opt.delay_s * 1000 + 0.5);
	int log_fd = -1;

	attach_set_memory_cap(a->opt.max_memory_mb);
	attach_set_holders(a->opt.holders);
	attach_set_follow_exec(!a->opt.no_follow_exec);
	attach_sweep_sockets();
	if (a->opt.pid && a->opt.npids == 1) {
		connect_one(a, interval_ms);
		return;
	}
	if (a->opt.pid) {
		check_pids(&a->opt);
		attach_connect(&a->attach, a->opt.pid, interval_ms,
			       a->opt.force);
		return;
	}
	if (live)
		log_fd = open_command_log(log, size);
	else if (options_stdout_export(&a->opt))
		log_fd = STDERR_FILENO;
	tree_adopt();
	attach_launch(&a->attach, a->opt.command, interval_ms, log_fd);
	if (log_fd > STDERR_FILENO)
		close(log_fd);
}

/* The query's call-site label, for sorting and filtering. */
static const char *query_site_label(void *app, uint64_t site)
{
	return site_label(((struct app *)app)->symbols, site);
}

/* A row's names beside its site's label, for the filter. */
static const char *query_row_names(void *app, uint64_t site, uint64_t object,
				   uint32_t id)
{
	static char names[768];
	struct app *a = app;

	return names_of_row(a->symbols, a->wrappers, a->model, site, object,
			    id, names, sizeof(names)) ? names : NULL;
}

static bool query_is_wrapper(void *app, uint64_t address)
{
	return wrappers_match(((struct app *)app)->wrappers, address);
}

/* The wrappers: built in, then --wrapper; skipped whenever there are any. */
static void setup_query(struct app *a)
{
	app_build_wrappers(a);
	a->query = (struct model_query){ .coalesce = a->opt.coalesce,
		.sort = a->opt.sort, .ascending = a->opt.ascending,
		.mix_idle = a->opt.mix_idle, .types = a->opt.types,
		.site_label = query_site_label, .row_names = query_row_names,
		.ctx = a,
		.skip_wrappers = wrappers_count(a->wrappers) > 0,
		.is_wrapper = query_is_wrapper };
	app_join_processes(a, a->opt.join_processes);
}

/* Bad output paths are found before anything is started. */
static void check_output_paths(const struct options *o)
{
	char err[512];

	if (o->json_path && export_check_path(o->json_path, err, sizeof(err)) < 0)
		fatal("cannot write the JSON snapshot: %s", err);
	if (o->folded_path && export_check_path(o->folded_path, err, sizeof(err)) < 0)
		fatal("cannot write the folded stacks: %s", err);
	if (o->folded_holders_path &&
	    export_check_path(o->folded_holders_path, err, sizeof(err)) < 0)
		fatal("cannot write the holders' folded stacks: %s", err);
	if (o->pprof_path && export_check_path(o->pprof_path, err, sizeof(err)) < 0)
		fatal("cannot write the pprof profile: %s", err);
}

/*
 * --listen: bind before anything is started, so that a port in use stops
 * qsptop with one line and nothing to undo.
 */
static void start_serving(struct app *a)
{
	char err[512];

	if (!a->opt.listen)
		return;
	a->serve = serve_start(a->opt.listen, err, sizeof(err));
	if (!a->serve)
		fatal("%s", err);
	a->ledger = ledger_new();
	a->scrape = scrape_new(a->opt.top);
	fprintf(stderr, "qsptop: serving http://%s/metrics and "
		"/debug/pprof/mutex\n", serve_address(a->serve));
}

/*
 * Exit with rc; when Ctrl-C killed the launched command, die of SIGINT as
 * it did, so that a shell running qsptop in a loop stops too (status 130).
 */
static void exit_as(bool launched, int rc)
	__attribute__((noreturn));

static void exit_as(bool launched, int rc)
{
	if (launched && interrupted && rc == 128 + SIGINT) {
		fflush(NULL);
		signal(SIGINT, SIG_DFL);
		raise(SIGINT);
	}
	exit(rc);
}

/*
 * glibc serves blocks of 32 MiB and more with fresh mmaps, and gives the
 * top of the heap back past 128 KiB free: a view of a big table then costs
 * page faults on every refresh. Keep big blocks in the heap for reuse.
 */
static void tune_malloc(void)
{
	mallopt(M_MMAP_THRESHOLD, 512 << 20);
	mallopt(M_TRIM_THRESHOLD, 1024 << 20);
}

int main(int argc, char **argv)
{
	struct app a = { 0 };
	char log[4096] = "";
	bool live;
	int rc;

	tune_malloc();
	setlocale(LC_ALL, "");
	format_set_utf8(strcmp(nl_langinfo(CODESET), "UTF-8") == 0);
	options_parse(&a.opt, argc, argv);
	if (a.opt.diff_old)
		exit(diff_run(&a.opt));
	live = !a.opt.batch && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
	check_theme(a.opt.theme ? a.opt.theme : "default");
	check_output_paths(&a.opt);
	install_signals();
	start_serving(&a);
	a.model = model_new();
	attach(&a, live, log, sizeof(log));
	/* After the launch: the command keeps DEBUGINFOD_URLS, symbols take it. */
	a.symbols = symbols_new();
	if (a.opt.pid)
		see_from_root(&a);
	setup_query(&a);
	app_connect_first(&a);
	if (a.outside[0]) {
		name_outside(&a);
	} else {
		attach_peers(&a);
		app_find_children(&a, live || a.attach.child);
	}
	column_set_several(app_processes(&a) > 1);
	column_set_holders(a.opt.holders);
	if (live)
		live_run(&a, a.opt.theme, &stop_requested);
	else if (a.outside[0])
		run_outside_batch(&a);
	else
		run_batch(&a);
	rc = finish(&a);
	/* Shown from outside because loading failed: the failure stands. */
	if (a.outside[0] && !a.opt.no_inject && rc == 0)
		rc = 1;
	serve_stop(a.serve);
	scrape_free(a.scrape);
	ledger_free(a.ledger);
	if (!live) {
		symbols_stop_fetching(a.symbols);
		tell_fetch_failure(&a);
	}
	if (log[0])
		report_command_log(log);
	app_close(&a);
	model_free(a.model);
	wrappers_free(a.wrappers);
	autowrap_free(a.autowrap);
	unseen_free(a.unseen);
	stuck_free(a.stuck);
	roles_free(&a);
	tasks_free(a.tasks);
	codes_free(a.codes);
	symbols_free(a.symbols);
	exit_as(a.opt.command != NULL, rc);
}
