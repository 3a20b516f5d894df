/*
 * What changes nothing means: a target behaves the same watched or not.
 * Each case of wl_invariant (one blocking call, the subject, in the main
 * thread or a worker, with or without a signal handler; see
 * tests/workloads/invariant.c) runs bare; then watched: while the subject
 * waits in its call, qsptop -p samples once and detaches, twice; then four
 * times more, each with qsptop killed (SIGKILL) 0, 5, 20 or 80 ms after it
 * started. Every run's output and exit status must be the bare run's.
 * qsptop may attach or refuse in one line: the suite judges the target,
 * and says for each case what qsptop did. A tree case (CALL-tree, a
 * forking server) is watched with qsptop -p PARENT --children: a watched
 * run's qsptop goes on until it watches every process of the tree (or
 * TREE_WATCH_MS), then gets SIGTERM; its first must have watched them all,
 * a worker forked while it watched (CALL-tree-late) too. The unlock and
 * sem_post cases are watched with --holders (their hooks are patched
 * only then).
 *
 *   test_invariance [PATTERN...]   only the cases matching a pattern
 *                                  (fnmatch(3)), e.g. sleep-main or 'poll*'
 */
#include <fnmatch.h>
#include <pthread.h>
#include <stdatomic.h>

#include "harness.h"

#define CALL_MS 2500		/* how long the subject's first call waits */
#define PARALLEL 32		/* runs at once: mostly asleep */
#define TREE_PARALLEL 6		/* trees besides: each loads 4 or 5 collectors */
#define PARKED_MS 15000		/* deadlines that catch a hang */
#define QSPTOP_MS 20000
#define TARGET_MS 30000
#define MAX_CASES 256
#define TREE_WATCH_MS 8000	/* a tree's qsptop gets SIGTERM then at the latest */

/* The runs of a case: bare, watched, and with qsptop killed after each delay. */
static const int kill_ms[] = { 0, 5, 20, 80 };
#define KILLS (int)(sizeof(kill_ms) / sizeof(kill_ms[0]))
#define RUNS (2 + KILLS)
#define WATCHED 1		/* runs[1]; runs[2 + k] are the kills */

/* One run of a case's target. */
struct trial {
	const char *name;		/* the case */
	int run;			/* 0 bare, WATCHED, or 2 + which kill */
	int status;			/* exit code, 128+signal, -1 on a hang */
	char *out;			/* what it printed */
	char attach[2][320];		/* what each qsptop did */
	char problem[320];		/* qsptop's fault, or the harness's */
	int processes;			/* a tree's, from its notes; 0: no tree */
	int watched[2];			/* how many of them each qsptop watched */
	char *said_all;			/* the first tree qsptop's stderr */
};

static struct trial *trials;
static int ntrials;

/* Threads that run the trials of trees, or of the other cases. */
struct pool {
	bool trees;
	atomic_int next;		/* the next trial to look at */
};

/* The system call thread tid (of any process) is in; -1 running, -2 gone. */
static long syscall_of(long tid)
{
	char path[64], text[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/task/%ld/syscall", tid, tid);
	f = fopen(path, "r");
	if (f == NULL)
		return -2;
	if (fgets(text, sizeof(text), f) == NULL)
		text[0] = '\0';
	fclose(f);
	return strncmp(text, "running", 7) == 0 || text[0] == '\0' ? -1 :
									atol(text);
}

/* The line after the one s is in, or NULL. */
static char *next_line(char *s)
{
	s = strchr(s, '\n');
	return s && s[1] ? s + 1 : NULL;
}

/* The number a notes line "WHAT N" gives, or missing. */
static int notes_number(const char *text, const char *what, int missing)
{
	const char *s = strstr(text, what);
	int n;

	return s && sscanf(s + strlen(what), " %d", &n) == 1 ? n : missing;
}

/*
 * Whether every thread the notes list ("wait TID NR", "subject TID NR")
 * is in its system call now (NR -1: any state), the subjects' lines there
 * (as many as "workers N" says, else one), and no "phase 2" yet.
 */
static bool parked_now(const char *notes)
{
	char *text = slurp_file(notes, ""), what[16];
	bool parked = strstr(text, "phase 2") == NULL;
	int subjects = 0, workers = notes_number(text, "workers", 1);
	long tid, nr;

	for (char *line = text; parked && line; line = next_line(line)) {
		if (sscanf(line, "%15s %ld %ld", what, &tid, &nr) != 3)
			continue;
		subjects += strcmp(what, "subject") == 0;
		parked = nr < 0 || syscall_of(tid) == nr;
	}
	free(text);
	return parked && subjects >= workers;
}

/* Wait until parked_now(); false once phase 2 began, or after ms. */
static bool wait_parked(const char *notes, long ms)
{
	for (long end = monotonic_ms() + ms; !parked_now(notes);
	     usleep(5000))
		if (monotonic_ms() >= end || file_has_text(notes, "phase 2", 0))
			return false;
	return true;
}

/* name-RUN.SUFFIX in the scratch directory, into out. */
static void trial_file(char *out, size_t n, const struct trial *t,
		       const char *suffix)
{
	snprintf(out, n, "%s/%s-%d.%s", tmp, t->name, t->run, suffix);
}

/* Where qsptop number which of a trial writes its JSON snapshot, into out. */
static void json_file(char *out, size_t n, const struct trial *t, int which)
{
	char suffix[16];

	snprintf(suffix, sizeof(suffix), "q%d.json", which);
	trial_file(out, n, t, suffix);
}

/*
 * Start qsptop -p pid: once; for a tree with --children and a JSON
 * snapshot, and in a watched run for as long as it is let run.
 */
static pid_t start_qsptop(const struct trial *t, pid_t pid, int which,
			  char *out, char *err, size_t n)
{
	char pidtext[16], suffix[16], json[PATH_MAX + 64];
	struct args a = { 0 };

	snprintf(pidtext, sizeof(pidtext), "%d", (int)pid);
	snprintf(suffix, sizeof(suffix), "q%d.out", which);
	trial_file(out, n, t, suffix);
	snprintf(suffix, sizeof(suffix), "q%d.err", which);
	trial_file(err, n, t, suffix);
	json_file(json, sizeof(json), t, which);
	args_add(&a, qsptop, "-p", pidtext, "-b", "-d", "0.2", NULL);
	/* The unlock and post hooks are in only while holders are tracked. */
	if (strstr(t->name, "unlock") || strstr(t->name, "sem_post"))
		args_add(&a, "--holders", NULL);
	if (t->processes)
		args_add(&a, "--children", "-j", json, NULL);
	if (!t->processes || t->run != WATCHED)
		args_add(&a, "-n", "1", NULL);
	return start(a.v, out, err);
}

/*
 * How many processes the last batch header in text names ("pid 12",
 * "pid 12 +4", "pids 12,34,56"); 0 before the first.
 */
static int header_processes(const char *text)
{
	const char *s = NULL;
	int more = 0;

	for (const char *p = text; (p = strstr(p, " - pid")) != NULL; p++)
		s = p + 3;
	if (s == NULL)
		return 0;
	if (strncmp(s, "pids ", 5) == 0) {
		for (s += 5; *s && *s != ' '; s++)
			more += *s == ',';
		return 1 + more;
	}
	return sscanf(s, "pid %*d +%d", &more) == 1 ? 1 + more : 1;
}

/* How many processes qsptop's JSON snapshot lists as watched; -1 without one. */
static int json_watched(const char *path)
{
	cJSON *snap = load_json(path), *p;
	int n = 0;

	if (snap == NULL)
		return -1;
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(snap, "processes"))
		n += !str_field(p, "state") ||
		     strcmp(str_field(p, "state"), "not watched") != 0;
	cJSON_Delete(snap);
	return n;
}

/*
 * Let a tree's qsptop run until its header names every process of the
 * tree (or TREE_WATCH_MS passed, or it ended), then end it with SIGTERM:
 * it detaches as on q. Its status.
 */
static int run_until_watching(pid_t q, const char *out, int processes)
{
	long end = monotonic_ms() + TREE_WATCH_MS;
	siginfo_t info = { 0 };

	for (;;) {
		char *text;
		bool all;

		if (waitid(P_PID, (id_t)q, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    info.si_pid == q)
			return wait_status(q, QSPTOP_MS);
		text = slurp_file(out, "");
		all = header_processes(text) >= processes;
		free(text);
		if (all || monotonic_ms() >= end)
			break;
		usleep(20000);
	}
	kill(q, SIGTERM);
	return wait_status(q, QSPTOP_MS);
}

/* The first line of text, into out (at most n bytes). */
static void first_line(char *out, size_t n, const char *text)
{
	snprintf(out, n, "%.*s", (int)strcspn(text, "\n"), text);
}

static int count_lines(const char *text)
{
	int n = 0;

	for (; *text; text++)
		n += *text == '\n';
	return n;
}

/* The state qsptop's batch header gives ("running (injected)"), into out. */
static void header_state(char *out, size_t n, const char *text)
{
	const char *end = strstr(text, " - interval"), *s = end;

	while (s && s - text > 3 && strncmp(s - 3, " - ", 3) != 0)
		s--;
	snprintf(out, n, "%.*s", s ? (int)(end - s) : 0, s ? s : "");
}

/* Add to what a tree's qsptop did how many of the processes it watched. */
static void tell_watched(struct trial *t, int which)
{
	char json[PATH_MAX + 64];
	size_t len = strlen(t->attach[which]);

	json_file(json, sizeof(json), t, which);
	t->watched[which] = json_watched(json);
	snprintf(t->attach[which] + len, sizeof(t->attach[0]) - len,
		 ", watched %d of %d processes", t->watched[which], t->processes);
}

/*
 * Say what a qsptop that ended with status did: attached (and the state
 * its header gives: running or exited, injected or connected...) or
 * refused, in one line.
 */
static void judge_qsptop(struct trial *t, int which, int status,
			 const char *out, const char *err)
{
	char *text = slurp_file(out, ""), *msg = slurp_file(err, "");
	char line[200], state[64];
	char *said = t->attach[which];
	bool attached;

	first_line(line, sizeof(line), msg);
	header_state(state, sizeof(state), text);
	/* A tree's qsptop ends with 1 when a worker it watched dies unsaid. */
	attached = status == 0 || (t->processes && state[0]);
	if (attached)
		snprintf(said, sizeof(t->attach[0]), "attached, %s%s%s", state,
			 msg[0] ? ", said: " : "", line);
	else
		snprintf(said, sizeof(t->attach[0]), "refused: %s", line);
	if (t->processes)
		tell_watched(t, which);
	if (t->processes && which == 0)
		t->said_all = strdup(msg);
	if (status < 0 || status >= 128)
		snprintf(t->problem, sizeof(t->problem), "qsptop %d %s", which + 1,
			 status < 0 ? "hung (or never started)" :
				      "died of a signal");
	else if (!attached && count_lines(msg) != 1)
		snprintf(t->problem, sizeof(t->problem), "qsptop %d refused in "
			 "%d lines, not one: %s", which + 1, count_lines(msg), msg);
	free(text);
	free(msg);
}

/*
 * Run qsptop -p pid to its end: sample once, detach; a tree's, once it
 * watches the whole tree.
 */
static void attach_once(struct trial *t, pid_t pid, int which)
{
	char out[PATH_MAX + 64], err[PATH_MAX + 64];
	pid_t q = start_qsptop(t, pid, which, out, err, sizeof(out));
	int status = q < 0 ? -1 : t->processes ?
		     run_until_watching(q, out, t->processes) :
		     wait_status(q, QSPTOP_MS);

	judge_qsptop(t, which, status, out, err);
}

/* Start qsptop -p pid and kill it after the trial's delay. */
static void attach_killed(struct trial *t, pid_t pid)
{
	char out[PATH_MAX + 64], err[PATH_MAX + 64];
	int ms = kill_ms[t->run - 2], status;
	pid_t q = start_qsptop(t, pid, 0, out, err, sizeof(out));

	if (q < 0) {
		judge_qsptop(t, 0, -1, out, err);
		return;
	}
	usleep((useconds_t)ms * 1000);
	kill(q, SIGKILL);
	status = wait_status(q, QSPTOP_MS);
	if (status == 128 + SIGKILL)
		snprintf(t->attach[0], sizeof(t->attach[0]), "killed at %d ms",
			 ms);
	else
		judge_qsptop(t, 0, status, out, err);
}

/* The processes of a tree, from its notes; 0 when the case is no tree. */
static int notes_processes(const char *notes)
{
	char *text = slurp_file(notes, "");
	int n = notes_number(text, "processes", 0);

	free(text);
	return n;
}

/* qsptop's part of a trial, while the subject waits in its call. */
static void watch(struct trial *t, pid_t pid, const char *notes)
{
	if (!wait_parked(notes, PARKED_MS)) {
		char *text = slurp_file(notes, "");

		for (char *nl = text; (nl = strchr(nl, '\n')) != NULL;)
			*nl = ';';
		snprintf(t->attach[0], sizeof(t->attach[0]), "not run");
		snprintf(t->problem, sizeof(t->problem), "its threads were never "
			 "seen in the calls its notes name: %s", text);
		free(text);
		return;
	}
	t->processes = notes_processes(notes);
	if (t->run != WATCHED) {
		attach_killed(t, pid);
		return;
	}
	attach_once(t, pid, 0);
	if (parked_now(notes))
		attach_once(t, pid, 1);
	else
		snprintf(t->attach[1], sizeof(t->attach[1]),
			 "not run: the subject had left its call");
}

/* Run the target of a trial, and qsptop on it unless it is the bare run. */
static void run_trial(struct trial *t)
{
	char out[PATH_MAX + 64], notes[PATH_MAX + 64], ms[16];
	pid_t pid;

	trial_file(out, sizeof(out), t, "out");
	trial_file(notes, sizeof(notes), t, "notes");
	snprintf(ms, sizeof(ms), "%d", CALL_MS);
	pid = start((char *[]){ workload, (char *)t->name, ms, notes, NULL },
		    out, out);
	if (pid < 0) {
		snprintf(t->problem, sizeof(t->problem), "cannot fork");
		t->out = strdup("");
		return;
	}
	if (t->run != 0)
		watch(t, pid, notes);
	t->status = wait_status(pid, TARGET_MS);
	t->out = slurp_file(out, "");
}

/* Whether a case is a forking server's (CALL-tree...). */
static bool is_tree(const char *name)
{
	return strstr(name, "-tree") != NULL;
}

/* Run the trials of the pool's kind, one after another. */
static void *run_trials(void *arg)
{
	struct pool *p = arg;
	int i;

	while ((i = atomic_fetch_add(&p->next, 1)) < ntrials)
		if (is_tree(trials[i].name) == p->trees)
			run_trial(&trials[i]);
	return NULL;
}

/* Whether name matches one of the patterns (all do without any). */
static bool selected(const char *name, char **patterns, int n)
{
	for (int i = 0; i < n; i++)
		if (fnmatch(patterns[i], name, 0) == 0)
			return true;
	return n == 0;
}

/* The selected cases the workload lists, into names; how many. */
static int list_cases(char **names, char **patterns, int npatterns)
{
	struct run r = run_capture((char *[]){ workload, "list", NULL },
				   PARKED_MS, 0);
	int n = 0;

	for (char *s = strtok(r.out, "\n"); s && n < MAX_CASES;
	     s = strtok(NULL, "\n"))
		if (selected(s, patterns, npatterns))
			names[n++] = strdup(s);
	CHECK(r.status == 0 && n > 0, "wl_invariant list: expected cases%s, "
	      "got exit %d and \"%s\"", npatterns ? " matching the patterns" : "",
	      r.status, r.out);
	run_free(&r);
	return n;
}

static const char *run_name(int run, char *buf, size_t n)
{
	if (run == 0)
		return "bare";
	if (run == WATCHED)
		return "watched";
	snprintf(buf, n, "with qsptop killed at %d ms", kill_ms[run - 2]);
	return buf;
}

/* Whether t went as the bare run did: same output, same exit status. */
static bool same(const struct trial *bare, const struct trial *t)
{
	return t->problem[0] == '\0' && t->status == bare->status &&
	       strcmp(t->out, bare->out) == 0;
}

/* A run of a case behaved as the bare run did. */
static void check_same(const struct trial *bare, const struct trial *t)
{
	char name[64];
	const char *run = run_name(t->run, name, sizeof(name));

	CHECK(same(bare, t), "%s %s: expected what it did bare (qsptop: %s; "
	      "%s)\n-- bare: exit %d\n%s-- %s: exit %d%s%s\n%s-- end", t->name,
	      run, t->attach[0], t->attach[1][0] ? t->attach[1] : "-",
	      bare->status, bare->out, run, t->status,
	      t->problem[0] ? ", " : "", t->problem, t->out);
}

static const char *same_word(const struct trial *bare, const struct trial *t)
{
	return same(bare, t) ? "same" : "CHANGED";
}

/*
 * Say how a run with qsptop killed went: the same or not, and what
 * qsptop did if it ended before its kill.
 */
static void say_killed(const struct trial *bare, const struct trial *t)
{
	printf(" %d ms %s", kill_ms[t->run - 2], same_word(bare, t));
	if (strncmp(t->attach[0], "killed", 6) != 0)
		printf(" (%s)", t->attach[0]);
}

/* Check one case's runs and say what qsptop did in each. */
static void check_case(const struct trial *runs)
{
	const struct trial *w = &runs[WATCHED];

	CHECK(runs[0].status == 0 && strstr(runs[0].out, "exit 0\n") &&
	      !strstr(runs[0].out, "early yes"), "%s bare: expected exit 0, "
	      "every call on time, got exit %d and\n%s", runs[0].name,
	      runs[0].status, runs[0].out);
	for (int r = 1; r < RUNS; r++)
		check_same(&runs[0], &runs[r]);
	CHECK(w->processes == 0 || w->watched[0] == w->processes, "%s watched: "
	      "expected qsptop --children to watch all %d processes of the "
	      "tree, then detach; it watched %d (%s); it said:\n%s-- end",
	      w->name, w->processes, w->watched[0], w->attach[0],
	      w->said_all ? w->said_all : "");
	printf("%s: watched %s (1: %s; 2: %s); killed:", w->name,
	       same_word(&runs[0], w), w->attach[0], w->attach[1]);
	for (int k = 0; k < KILLS; k++)
		say_killed(&runs[0], &runs[2 + k]);
	printf("\n");
}

int main(int argc, char **argv)
{
	static char *names[MAX_CASES];
	static struct pool trees = { .trees = true }, others = { .trees = false };
	pthread_t threads[PARALLEL + TREE_PARALLEL];
	int ncases;
	long began;

	setvbuf(stdout, NULL, _IOLBF, 0);	/* between the FAIL lines */
	find_paths("/tmp/qsptop-invariance-XXXXXX", "wl_invariant");
	ncases = list_cases(names, argv + 1, argc - 1);
	ntrials = ncases * RUNS;
	trials = calloc((size_t)ntrials + 1, sizeof(*trials));
	for (int i = 0; i < ntrials; i++)
		trials[i] = (struct trial){ .name = names[i / RUNS],
					    .run = i % RUNS };
	began = monotonic_ms();
	for (int i = 0; i < PARALLEL + TREE_PARALLEL; i++)
		pthread_create(&threads[i], NULL, run_trials,
			       i < PARALLEL ? &others : &trees);
	for (int i = 0; i < PARALLEL + TREE_PARALLEL; i++)
		pthread_join(threads[i], NULL);
	for (int c = 0; c < ncases; c++)
		check_case(&trials[c * RUNS]);
	printf("%d cases, %d runs in %ld s\n", ncases, ntrials,
	       (monotonic_ms() - began + 500) / 1000);
	remove_tmp();
	return check_summary();
}
