/*
 * Promises of the README, through the real qsptop on wl_promises:
 * - a launched command that ignores SIGTERM is killed (SIGKILL) about 3 s
 *   after it, when qsptop stops first (-n reached, q on the screen), and
 *   qsptop exits 0;
 * - idle waits come after the lock rows unless --mix-idle (or i) mixes
 *   them in, in batch output, the JSON and the live screen;
 * - QSPTOP_MEMORY_MB caps a collector preloaded by hand;
 * - a forked child starts no thread and opens no socket until qsptop -p
 *   asks it;
 * - qsptop -p refuses a musl process with one line and leaves it running.
 */
#include <dirent.h>
#include <sys/stat.h>

#include "../../common/sockpath.h"
#include "tmux.h"

#define DEADLINE_MS 30000	/* catches a hang, never a slow machine */
#define GRACE_MS 3000		/* SIGTERM to SIGKILL, as the README says */
/*
 * Less than the grace by what a loaded machine may put between qsptop's
 * start of the grace and its kill(SIGTERM), two lines apart.
 */
#define GRACE_FLOOR_MS 2000

static char wl[PATH_MAX];

/* The processes started here, ended at exit if still there. */
static pid_t started[16];
static int nstarted;

static pid_t track(pid_t pid)
{
	if (pid > 0 && nstarted < 16)
		started[nstarted++] = pid;
	return pid;
}

/* Whether pid is a running process (not gone, not a zombie) named comm. */
static bool running_as(pid_t pid, const char *comm)
{
	char path[64], line[512], *open, *close_paren;
	FILE *f;
	bool ok = false;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (f && fgets(line, sizeof(line), f)) {
		open = strchr(line, '(');
		close_paren = strrchr(line, ')');
		ok = open && close_paren && close_paren[1] == ' ' &&
		     close_paren[2] != 'Z' &&
		     strncmp(open + 1, comm, strlen(comm)) == 0;
	}
	if (f)
		fclose(f);
	return ok;
}

static void end_started(void)
{
	for (int i = 0; i < nstarted; i++) {
		if (running_as(started[i], "wl_promises") ||
		    running_as(started[i], "qsptop") ||
		    running_as(started[i], "musl_target"))
			kill(started[i], SIGKILL);
	}
}

/*
 * The first nv numbers of the n-th line "what V0 V1 ..." of path into v;
 * false until it is there, waiting up to DEADLINE_MS.
 */
static bool wait_note(const char *path, const char *what, int n, long *v, int nv)
{
	long deadline = monotonic_ms() + DEADLINE_MS;

	for (;;) {
		char *text = slurp_file(path, ""), *line = text;
		size_t len = strlen(what);
		int seen = 0;

		while (line && *line) {
			if (strncmp(line, what, len) == 0 && line[len] == ' ' &&
			    seen++ == n) {
				line += len;
				for (int i = 0; i < nv; i++)
					v[i] = strtol(line, &line, 10);
				free(text);
				return true;
			}
			line = strchr(line, '\n');
			line = line ? line + 1 : NULL;
		}
		free(text);
		if (monotonic_ms() >= deadline)
			return false;
		usleep(10000);
	}
}

/* The PID on the first "what PID" line of path, or -1 after the deadline. */
static pid_t noted_pid(const char *path, const char *what)
{
	long pid = -1;

	return wait_note(path, what, 0, &pid, 1) ? track((pid_t)pid) : -1;
}

/* Wait until pid is no longer running; the CLOCK_MONOTONIC ms it was seen so, or -1. */
static long wait_dead(pid_t pid, const char *comm)
{
	long deadline = monotonic_ms() + DEADLINE_MS;

	while (running_as(pid, comm)) {
		if (monotonic_ms() >= deadline)
			return -1;
		usleep(5000);
	}
	return monotonic_ms();
}

/* A /proc file into buf (whose size slurp_file cannot know); "" if unreadable. */
static char *proc_text(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, size - 1) : -1;

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* --- a command that ignores SIGTERM ------------------------------------ */

/*
 * After qsptop stopped: the command saw SIGTERM once, no other signal it
 * could catch, lived on for the grace and then died. It catches every
 * signal but SIGKILL and SIGSTOP and never exits by itself, so its end
 * can only be SIGKILL.
 */
static void check_killed_after_grace(const char *how, pid_t cmd, const char *notes)
{
	/* The signal, when the command last ran before it, when it took it. */
	long term[3] = { 0 }, other = 0, dead_ms = wait_dead(cmd, "wl_promises");

	CHECK(dead_ms >= 0, "%s: the command that ignores SIGTERM is dead within %d ms",
	      how, DEADLINE_MS);
	CHECK(wait_note(notes, "signal", 0, term, 3) && term[0] == SIGTERM,
	      "%s: the command's first signal: expected SIGTERM (%d), got %ld", how,
	      SIGTERM, term[0]);
	if (note_lines(notes, "signal") > 1)
		wait_note(notes, "signal", 1, &other, 1);
	CHECK(note_lines(notes, "signal") == 1,
	      "%s: the command got exactly one signal it could catch, got %d "
	      "(the second: %ld): it must die of SIGKILL", how,
	      note_lines(notes, "signal"), other);
	CHECK(dead_ms < 0 || dead_ms - term[1] >= GRACE_FLOOR_MS,
	      "%s: the command must live on for the grace after SIGTERM (%d ms): "
	      "it died %ld ms after it", how, GRACE_MS, dead_ms - term[1]);
	if (dead_ms >= 0)
		printf("%s: killed %ld-%ld ms after SIGTERM\n", how,
		       dead_ms - term[2], dead_ms - term[1]);
}

/* -n 1 reached: qsptop ends the command and exits 0. */
static void test_stop_at_n(void)
{
	char *notes = tmp_path("stubborn-n.notes"), *out = tmp_path("stubborn-n.out");
	pid_t q, cmd;
	int status;

	q = track(start((char *[]){ qsptop, "-b", "-n", "1", "-d", "0.2", "--", wl,
				    "stubborn", notes, NULL },
			out, tmp_path("stubborn-n.err")));
	cmd = noted_pid(notes, "ready");
	CHECK(cmd > 0, "-n 1: the command started");
	status = wait_status(q, DEADLINE_MS);
	CHECK(status == 0, "-n 1: qsptop ended the command and exits 0, got %d", status);
	if (cmd > 0)
		check_killed_after_grace("-n 1", cmd, notes);
}

/* q on the live screen: the same. */
static void test_stop_by_q(void)
{
	char *notes = tmp_path("stubborn-q.notes"), program[3 * PATH_MAX];
	char qwl[PATH_MAX + 8], qnotes[PATH_MAX + 8], *text;
	pid_t cmd;

	quoted(qwl, sizeof(qwl), wl);
	quoted(qnotes, sizeof(qnotes), notes);
	snprintf(program, sizeof(program), "%s stubborn %s", qwl, qnotes);
	if (!start_sized("stop", WIDTH, HEIGHT, "", "-d 0.2", program))
		return;
	cmd = noted_pid(notes, "ready");
	SEE("q", "CALL SITE");
	keys("q", NULL);
	text = wait_exit_file("stop", DEADLINE_MS);
	CHECK(text && strcmp(text, "EXIT=0\n") == 0,
	      "q: qsptop ended the command and exits 0: expected \"EXIT=0\", got \"%s\"",
	      text ? text : "(no exit within the deadline)");
	free(text);
	if (cmd > 0)
		check_killed_after_grace("q", cmd, notes);
}

/* --- idle waits after the locks, or among them --------------------------- */

/* The TYPE words of the rows of the last table in batch output. */
static void batch_types(const char *out, char *types, size_t size)
{
	const char *p = out, *title = NULL;
	size_t len = 0;

	types[0] = '\0';
	while ((p = strstr(p, "\nTYPE ")) != NULL)
		title = ++p;
	if (title == NULL)
		return;
	for (p = strchr(title, '\n'); p && p[1] && p[1] != '\n'; p = strchr(p + 1, '\n')) {
		int n = (int)strcspn(p + 1, " \n");

		len += (size_t)snprintf(types + len, size - len, "%s%.*s",
					len ? " " : "", n, p + 1);
		if (len >= size)
			return;
	}
}

/* The last totals line ("lock wait ...") of batch output; false if none. */
static bool last_totals_line(const char *out, char *line, size_t size)
{
	const char *p = out, *last = NULL;

	while ((p = strstr(p, "\nlock wait ")) != NULL)
		last = ++p;
	line[0] = '\0';
	if (last)
		snprintf(line, size, "%.*s", (int)strcspn(last, "\n"), last);
	return last != NULL;
}

/* condvar rows only after every lock row, and some of each. */
static bool idle_after_locks(const char *types)
{
	const char *cond = strstr(types, "condvar");

	return cond && cond != types && strstr(types, "mutex") &&
	       strstr(cond, "mutex") == NULL;
}

/* Mixed by total wait: the idle waiters' condvar row has the most. */
static bool idle_mixed(const char *types)
{
	return strncmp(types, "condvar", 7) == 0 && strstr(types, "mutex");
}

/* How many tables qsptop has printed to path. */
static int tables_printed(const char *path)
{
	char *text = slurp_file(path, ""), *p = text;
	int n = 0;

	while ((p = strstr(p, "\nTYPE ")) != NULL) {
		n++;
		p++;
	}
	free(text);
	return n;
}

/*
 * qsptop -b on wl_idle until the waiters have waited about 1 s each and
 * two more tables came, then SIGTERM: the last table's order.
 */
static void check_batch_order(bool mix)
{
	const char *how = mix ? "--mix-idle" : "default";
	char *notes = tmp_path(mix ? "mix.notes" : "idle.notes");
	char *out = tmp_path("idle.out"), *json = tmp_path("idle.json");
	char types[1024], totals[1024], *text;
	long waited, deadline = monotonic_ms() + DEADLINE_MS;
	struct args a = { 0 };
	int status, before;
	cJSON *snap;
	const cJSON *first;
	pid_t q;

	args_add(&a, qsptop, "-b", "-d", "0.25", "-o", "total", "-j", json, NULL);
	if (mix)
		args_add(&a, "--mix-idle", NULL);
	args_add(&a, "--", wl, "idle", notes, NULL);
	q = track(start(a.v, out, tmp_path("idle.err")));
	CHECK(wait_note(notes, "waited", 0, &waited, 1),
	      "%s: the idle waiters waited", how);
	before = tables_printed(out);
	while (tables_printed(out) < before + 2 && monotonic_ms() < deadline)
		usleep(20000);
	kill(q, SIGTERM);
	status = wait_status(q, DEADLINE_MS);
	CHECK(status == 0, "%s: qsptop, stopped by SIGTERM, exits 0, got %d", how, status);
	text = slurp_file(out, "");
	batch_types(text, types, sizeof(types));
	CHECK(mix ? idle_mixed(types) : idle_after_locks(types),
	      "%s, sorted by total: expected %s, got rows \"%s\"", how,
	      mix ? "the condvar row (the most wait) first"
		  : "every condvar row after every mutex row", types);
	CHECK(last_totals_line(text, totals, sizeof(totals)) &&
	      (strstr(totals, "idle last") != NULL) == !mix,
	      "%s: expected the header's totals line %s \"idle last\", got \"%s\"",
	      how, mix ? "without" : "with", totals);
	free(text);
	snap = load_json(json);
	first = cJSON_GetArrayItem(cJSON_GetObjectItem(snap, "rows"), 0);
	CHECK(cJSON_IsBool(cJSON_GetObjectItem(snap, "idle_last")) &&
	      cJSON_IsTrue(cJSON_GetObjectItem(snap, "idle_last")) == !mix,
	      "%s: the JSON's idle_last is %s", how, mix ? "false" : "true");
	CHECK(check_streq(str_field(first, "type"), mix ? "condvar" : "mutex"),
	      "%s: the JSON's first row is a %s row, got %s", how,
	      mix ? "condvar" : "mutex", check_show(str_field(first, "type")));
	cJSON_Delete(snap);
}

/* The TYPE words of the rows on the screen. */
static void screen_types(char *types, size_t size)
{
	char line[4096];
	int end, t = title_line(&end), n = screen_lines();
	size_t len = 0;

	types[0] = '\0';
	for (int i = t + 1; t >= 0 && i < n - 1; i++) {
		screen_line(i, line, sizeof(line));
		if (line[0] == '\0' || line[0] == ' ')
			continue;
		len += (size_t)snprintf(types + len, size - len, "%s%.*s",
					len ? " " : "", (int)strcspn(line, " "), line);
		if (len >= size)
			return;
	}
}

static bool screen_idle_last(const void *arg)
{
	char types[1024];

	(void)arg;
	screen_types(types, sizeof(types));
	return totals_have("idle last") && idle_after_locks(types);
}

static bool screen_mixed(const void *arg)
{
	char types[1024];

	(void)arg;
	screen_types(types, sizeof(types));
	return !totals_have("idle last") && idle_mixed(types);
}

static void expect_screen_order(const char *context, screen_pred pred, const char *want)
{
	char types[1024];
	bool ok = wait_until(pred, NULL, DEADLINE_MS);

	screen_types(types, sizeof(types));
	CHECK_SCREEN(ok, "%s: expected %s, got rows \"%s\"", context, want, types);
}

static void test_idle_order(void)
{
	char *notes = tmp_path("idle-live.notes"), program[3 * PATH_MAX];
	char qwl[PATH_MAX + 8], qnotes[PATH_MAX + 8];

	check_batch_order(false);
	check_batch_order(true);
	quoted(qwl, sizeof(qwl), wl);
	quoted(qnotes, sizeof(qnotes), notes);
	snprintf(program, sizeof(program), "%s idle %s", qwl, qnotes);
	if (!start_sized("idle", WIDTH, HEIGHT, "", "-o total -d 0.2", program))
		return;
	noted_pid(notes, "ready");
	expect_screen_order("live, at start", screen_idle_last,
			    "\"idle last\" and the condvar rows after the mutex rows");
	keys("i", NULL);
	expect_screen_order("i", screen_mixed,
			    "no \"idle last\" and the condvar row (the most wait) first");
	keys("i", NULL);
	expect_screen_order("i again", screen_idle_last,
			    "\"idle last\" and the condvar rows after the mutex rows");
	quit_session("idle");
}

/* --- QSPTOP_MEMORY_MB ----------------------------------------------------- */

#define MANY_LOCKS "50000"

/* VmHWM of pid in KiB, or -1. */
static long peak_rss_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "VmHWM:", 6) == 0)
			kib = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kib;
}

/* What qsptop -p saw of wl_promises many, preloaded by hand with env. */
struct capped {
	double cap, used, folded, dropped, counted;
	long made, peak_kib;
};

static struct capped run_preloaded(const char *name, const char *env)
{
	char preload[PATH_MAX + 16], pidstr[16];
	char *notes = tmp_path(name), *json = tmp_path("memory.json");
	struct capped c = { .cap = -1 };
	const cJSON *row;
	struct run r;
	cJSON *snap;
	pid_t pid;

	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", library);
	pid = track(start((char *[]){ "env", preload, (char *)env, wl, "many",
				      MANY_LOCKS, notes, NULL }, NULL, NULL));
	if (!wait_note(notes, "made", 0, &c.made, 1)) {
		CHECK(false, "%s: the workload made its lock calls", env);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return c;
	}
	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	unlink(json);
	r = run_capture((char *[]){ qsptop, "-b", "-n", "1", "-d", "0.2", "-j", json,
				    "-p", pidstr, NULL }, DEADLINE_MS, 0);
	CHECK(r.status == 0, "%s: qsptop -p exits 0, got %d: %s", env, r.status, r.err);
	snap = load_json(json);
	c.cap = num_field(cJSON_GetObjectItem(snap, "collector_memory"), "cap");
	c.used = num_field(cJSON_GetObjectItem(snap, "collector_memory"), "used");
	c.folded = num_field(snap, "folded");
	c.dropped = num_field(snap, "dropped");
	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows"))
		if (names_function(str_field(cJSON_GetObjectItem(row, "site"), "symbol"),
				   "site_many"))
			c.counted += num_field(row, "acquisitions");
	c.peak_kib = peak_rss_kib(pid);
	printf("%s: cap %.0f, used %.0f, %.0f counted (%.0f folded) + %.0f dropped "
	       "of %ld made, peak RSS %ld KiB\n", env, c.cap, c.used, c.counted,
	       c.folded, c.dropped, c.made, c.peak_kib);
	cJSON_Delete(snap);
	run_free(&r);
	kill(pid, SIGTERM);
	CHECK(wait_status(pid, DEADLINE_MS) == 0, "%s: the workload ends on SIGTERM", env);
	return c;
}

static void test_memory_env(void)
{
	struct capped small = run_preloaded("capped.notes", "QSPTOP_MEMORY_MB=4");
	struct capped dflt = run_preloaded("default.notes", "QSPTOP_UNRELATED=1");

	CHECK(small.cap == 4 << 20, "QSPTOP_MEMORY_MB=4: the collector's cap is "
	      "4 MiB (%d), got %.0f", 4 << 20, small.cap);
	CHECK(small.used >= 0 && small.used <= 4 << 20,
	      "QSPTOP_MEMORY_MB=4: memory used stays under the cap, got %.0f",
	      small.used);
	CHECK(small.folded > 0, "QSPTOP_MEMORY_MB=4: %s locks at one site fold "
	      "into its row of several locks: expected folded > 0, got %.0f",
	      MANY_LOCKS, small.folded);
	CHECK(small.counted + small.dropped == small.made,
	      "QSPTOP_MEMORY_MB=4: %.0f counted + %.0f dropped, expected %ld made",
	      small.counted, small.dropped, small.made);
	CHECK(dflt.cap == 64 << 20, "without QSPTOP_MEMORY_MB: the default cap "
	      "64 MiB, got %.0f", dflt.cap);
	CHECK(dflt.folded == 0 && dflt.dropped == 0 && dflt.counted == dflt.made,
	      "without QSPTOP_MEMORY_MB: every call counted on its own row: "
	      "%.0f of %ld, %.0f folded, %.0f dropped", dflt.counted, dflt.made,
	      dflt.folded, dflt.dropped);
	CHECK(small.peak_kib > 0 && small.peak_kib < dflt.peak_kib,
	      "QSPTOP_MEMORY_MB=4: the target's peak RSS is below the uncapped "
	      "one's: %ld KiB, uncapped %ld KiB", small.peak_kib, dflt.peak_kib);
}

/* --- a forked child, before and after it is asked ------------------------ */

/* How many threads pid has, and whether one is named qsptop. */
static int thread_count(pid_t pid, bool *collector)
{
	char path[PATH_MAX], name[64];
	struct dirent *e;
	DIR *d;
	int n = 0;

	*collector = false;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		n++;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)pid, e->d_name);
		*collector |= strcmp(proc_text(path, name, sizeof(name)), "qsptop\n") == 0;
	}
	if (d)
		closedir(d);
	return n;
}

/* How many sockets the descriptors in dir hold that seen does not. */
static int sockets_in(const char *dir, char (*seen)[32], int *nseen)
{
	char path[PATH_MAX + 300], target[32];
	struct dirent *e;
	DIR *d = opendir(dir);
	int n = 0;

	while (d && (e = readdir(d)) != NULL) {
		ssize_t len;
		bool known = false;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		target[len > 0 ? len : 0] = '\0';
		if (strncmp(target, "socket:", 7) != 0)
			continue;
		for (int i = 0; i < *nseen && !known; i++)
			known = strcmp(seen[i], target) == 0;
		if (!known && *nseen < 64)
			strcpy(seen[(*nseen)++], target);
		n += !known;
	}
	if (d)
		closedir(d);
	return n;
}

/*
 * How many sockets pid's threads hold: the collector's thread keeps its
 * descriptors in a table of its own.
 */
static int socket_count(pid_t pid)
{
	char path[PATH_MAX], seen[64][32];
	struct dirent *e;
	int n = 0, nseen = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/fd", (int)pid,
			 e->d_name);
		n += sockets_in(path, seen, &nseen);
	}
	if (d)
		closedir(d);
	return n;
}

static bool has_socket_file(pid_t pid)
{
	char path[PATH_MAX];

	return sockpath_target(path, sizeof(path), geteuid(), pid) == 0 &&
	       access(path, F_OK) == 0;
}

/* What a process has of the collector: its thread, sockets, socket file. */
static void check_collector(const char *label, pid_t pid, bool expected)
{
	bool thread;
	int threads = thread_count(pid, &thread), sockets = socket_count(pid);

	if (expected) {
		CHECK(thread && sockets > 0 && has_socket_file(pid),
		      "%s: expected the collector's thread, a socket and its file, "
		      "got %d threads (qsptop among them: %s), %d sockets, file: %s",
		      label, threads, thread ? "yes" : "no", sockets,
		      has_socket_file(pid) ? "yes" : "no");
		return;
	}
	CHECK(threads == 1 && !thread,
	      "%s: expected its one thread only, got %d (qsptop among them: %s)",
	      label, threads, thread ? "yes" : "no");
	CHECK(sockets == 0, "%s: expected no socket among its descriptors, got %d",
	      label, sockets);
	CHECK(!has_socket_file(pid), "%s: expected no socket file", label);
}

/* Wait until path holds text; false after the deadline. */
static bool wait_text(const char *path, const char *text)
{
	long deadline = monotonic_ms() + DEADLINE_MS;

	for (;;) {
		char *got = slurp_file(path, "");
		bool found = strstr(got, text) != NULL;

		free(got);
		if (found || monotonic_ms() >= deadline)
			return found;
		usleep(20000);
	}
}

static void test_forked_child(void)
{
	char *notes = tmp_path("fork.notes"), *out = tmp_path("child.out");
	char *json = tmp_path("child.json"), pidstr[16];
	pid_t launcher, parent, child, q;
	cJSON *snap;
	int status;

	launcher = track(start((char *[]){ qsptop, "-b", "-d", "0.2", "--", wl, "fork",
					   notes, NULL },
			       "/dev/null", tmp_path("launcher.err")));
	parent = noted_pid(notes, "ready");
	child = noted_pid(notes, "child");
	CHECK(parent > 0 && child > 0, "the launched parent forked a child");
	if (child <= 0) {
		kill(launcher, SIGTERM);
		wait_status(launcher, DEADLINE_MS);
		return;
	}
	check_collector("the launched parent", parent, true);
	check_collector("its child, after 1000 lock calls, not asked", child, false);

	snprintf(pidstr, sizeof(pidstr), "%d", (int)child);
	q = track(start((char *[]){ qsptop, "-b", "-d", "0.2", "-j", json, "-p", pidstr,
				    NULL }, out, tmp_path("child.err")));
	CHECK(wait_text(out, "CALL SITE"), "qsptop -p CHILD prints a table");
	check_collector("the child, asked by qsptop -p", child, true);
	kill(q, SIGTERM);
	status = wait_status(q, DEADLINE_MS);
	CHECK(status == 0, "qsptop -p CHILD, stopped by SIGTERM, exits 0, got %d", status);
	snap = load_json(json);
	CHECK(acquisitions_in(snap, "child_lock") > 0,
	      "the child, once asked, counts its own lock calls (%.0f)",
	      acquisitions_in(snap, "child_lock"));
	cJSON_Delete(snap);

	kill(parent, SIGTERM);
	status = wait_status(launcher, DEADLINE_MS);
	CHECK(status == 0, "the launched parent ends on SIGTERM and qsptop exits 0, got %d",
	      status);
}

/* --- musl ---------------------------------------------------------------- */

/* A musl program that answers each SIGUSR1 with a line "pong". */
static const char musl_source[] =
	"#include <signal.h>\n#include <stdio.h>\n#include <unistd.h>\n"
	"static volatile sig_atomic_t asked;\n"
	"static void on_usr1(int s) { (void)s; asked++; }\n"
	"int main(int argc, char **argv) {\n"
	"	int told = 0;\n"
	"	FILE *f;\n"
	"	if (argc != 2) return 2;\n"
	"	signal(SIGUSR1, on_usr1);\n"
	"	f = fopen(argv[1], \"a\");\n"
	"	fprintf(f, \"ready %d\\n\", (int)getpid());\n"
	"	fflush(f);\n"
	"	for (;;) {\n"
	"		for (; told < asked; told++) { fprintf(f, \"pong 1\\n\"); fflush(f); }\n"
	"		usleep(10000);\n"
	"	}\n"
	"}\n";

/* Build musl_target with musl-gcc; false, with a SKIP, when it cannot. */
static bool build_musl_target(char *exe)
{
	char *src = tmp_path("musl_target.c");
	FILE *f = fopen(src, "w");

	if (f == NULL || fputs(musl_source, f) < 0 || fclose(f) != 0) {
		CHECK(false, "cannot write %s", src);
		return false;
	}
	join(exe, tmp, "/musl_target");
	if (run_quietly((char *[]){ "musl-gcc", "-o", exe, src, NULL }) != 0) {
		SKIP("the musl refusal: needs musl-gcc (apt-get install -y musl-tools)");
		return false;
	}
	return true;
}

/* Whether pid is neither stopped nor traced. */
static bool free_running(pid_t pid)
{
	char path[64], text[4096], *state, *tracer;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	proc_text(path, text, sizeof(text));
	state = strstr(text, "\nState:\t");
	tracer = strstr(text, "\nTracerPid:\t");
	return state && strchr("SR", state[8]) && tracer && atoi(tracer + 12) == 0;
}

static void test_musl_refused(void)
{
	char exe[PATH_MAX], pidstr[16], *notes = tmp_path("musl.notes");
	struct run r;
	long pong;
	pid_t pid;
	char *nl;

	if (!build_musl_target(exe))
		return;
	pid = track(start((char *[]){ exe, notes, NULL }, NULL, NULL));
	CHECK(noted_pid(notes, "ready") == pid, "the musl program started");
	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	r = run_capture((char *[]){ qsptop, "-b", "-n", "1", "-p", pidstr, NULL },
			DEADLINE_MS, 0);
	nl = strchr(r.err, '\n');
	CHECK(r.status == 1, "-p on a musl process: expected exit 1, got %d", r.status);
	CHECK(strstr(r.err, "uses musl") && nl && nl[1] == '\0',
	      "-p on a musl process: expected one line saying it uses musl, got \"%s\"",
	      r.err);
	CHECK(r.out[0] == '\0', "-p on a musl process: nothing on stdout, got \"%s\"",
	      r.out);
	CHECK(free_running(pid), "the musl process is left running, neither stopped "
	      "nor traced");
	kill(pid, SIGUSR1);
	CHECK(wait_note(notes, "pong", 0, &pong, 1),
	      "the musl process still answers signals after the refusal");
	run_free(&r);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

int main(void)
{
	if (!tmux_begin("promises"))
		return check_summary();
	atexit(end_started);
	join(wl, build, "/tests/wl_promises");
	test_stop_at_n();
	test_stop_by_q();
	test_idle_order();
	test_memory_env();
	test_forked_child();
	test_musl_refused();
	return tmux_end("test_promises");
}
