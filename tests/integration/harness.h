/*
 * What the integration tests share: the paths of the build and a scratch
 * directory, starting programs with their output in files, waiting for
 * them with a deadline, and reading the JSON that qsptop writes.
 * Header-only and static inline: every .c file in tests/integration is a
 * test binary of its own, and each uses only some of these.
 */
#ifndef HARNESS_H
#define HARNESS_H

#include <cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../common/sockpath.h"
#include "../unit/check.h"

/* Set by find_paths(); tmp is the test's scratch directory. */
static char build[PATH_MAX], root[PATH_MAX], tmp[PATH_MAX];
static char qsptop[PATH_MAX], library[PATH_MAX], workload[PATH_MAX];

/* A command line built a few words at a time: args_add(&a, w1, w2, NULL). */
struct args {
	char *v[64];
	int n;
};

/* Append the words up to NULL; argv stays NULL-terminated. */
static inline void args_add(struct args *a, ...)
{
	va_list ap;
	char *w;

	va_start(ap, a);
	while ((w = va_arg(ap, char *)) != NULL && a->n < 63)
		a->v[a->n++] = w;
	va_end(ap);
	a->v[a->n] = NULL;
}

/* Append the words of a NULL-terminated list. */
static inline void args_add_all(struct args *a, char *const *list)
{
	for (; *list && a->n < 63; list++)
		a->v[a->n++] = *list;
	a->v[a->n] = NULL;
}

/*
 * Run argv quietly and wait for it: only async-signal-safe calls. Its
 * exit status, or -1 when it could not run.
 */
static inline int run_quietly(char *const argv[])
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/*
 * Remove the sockets that collectors killed by a signal left in our
 * socket directory (the tests kill their targets; qsptop sweeps such
 * sockets only when it next attaches): those of our PID namespace whose
 * process is gone.
 */
static inline void remove_dead_sockets(void)
{
	char dir[108], path[PATH_MAX], ns[64], end[8];
	unsigned long own_ns = 0, sock_ns;
	ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof(ns) - 1);
	struct dirent *e;
	long pid;
	DIR *d;

	if (n > 0) {
		ns[n] = '\0';
		sscanf(ns, "pid:[%lu]", &own_ns);
	}
	if (own_ns == 0 || sockpath_dir(dir, sizeof(dir), geteuid()) < 0 ||
	    (d = opendir(dir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (sscanf(e->d_name, "%ld-%lu%7s", &pid, &sock_ns, end) == 3 &&
		    strcmp(end, ".sock") == 0 && sock_ns == own_ns && pid > 0 &&
		    kill((pid_t)pid, 0) < 0 && errno == ESRCH &&
		    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) <
			    (int)sizeof(path))
			unlink(path);
	}
	closedir(d);
}

/* Remove the test's scratch directory (saying so when it cannot) and dead sockets. */
static inline void remove_tmp(void)
{
	char *argv[] = { "rm", "-rf", tmp, NULL };

	if (run_quietly(argv) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
	remove_dead_sockets();
}

/* A finished run: exit status and what it printed. */
struct run {
	int status;		/* exit code, 128+signal, or -1 on timeout */
	char *out;
	char *err;
};

/* How to start a program; zeroed fields inherit from the test. */
struct start_opts {
	const char *out;	/* file for stdout (truncated), or NULL */
	const char *err;	/* file for stderr; the same path as out shares it */
	const char *env;	/* "NAME=value" to add to its environment, or NULL */
	rlim_t fsize_limit;	/* RLIMIT_FSIZE for it, when nonzero */
};

/* Monotonic time in milliseconds. */
static inline long monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* The first child of pid, looked for until ms have passed (at least
 * once); -1 when none came. */
static inline pid_t first_child(pid_t pid, long ms)
{
	char path[64];
	long child = -1, end = monotonic_ms() + ms;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid,
		 (int)pid);
	for (;;) {
		f = fopen(path, "r");
		if (f && fscanf(f, "%ld", &child) != 1)
			child = -1;
		if (f)
			fclose(f);
		if (child > 0 || monotonic_ms() >= end)
			return (pid_t)child;
		usleep(20000);
	}
}

/* The number of threads of pid; 0 when it is gone. */
static inline int threads_of(pid_t pid)
{
	char path[64];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && (e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* Wait until pid runs n threads; false after ms. */
static inline bool wait_threads(pid_t pid, int n, long ms)
{
	for (long end = monotonic_ms() + ms; threads_of(pid) < n; usleep(20000))
		if (monotonic_ms() >= end)
			return false;
	return true;
}

/* out = a followed by b; out holds PATH_MAX, a longer path is fatal. */
static inline void join(char *out, const char *a, const char *b)
{
	if (strlen(a) + strlen(b) >= PATH_MAX) {
		fprintf(stderr, "path too long: %s%s\n", a, b);
		exit(1);
	}
	strcpy(out, a);
	strcat(out, b);
}

/* tmp/name, in one of 8 buffers used in turn. */
static inline char *tmp_path(const char *name)
{
	static char paths[8][PATH_MAX];
	static int next;
	char *p = paths[next++ % 8];
	char dir[PATH_MAX];

	join(dir, tmp, "/");
	join(p, dir, name);
	return p;
}

/* The whole file, malloc'ed; a copy of missing (or NULL) if it cannot be opened. */
static inline char *slurp_file(const char *path, const char *missing)
{
	char *text = check_file_text(path);

	if (text == NULL && missing)
		text = strdup(missing);
	return text;
}

/* path opened for writing (truncated), or -1 without a path. */
static inline int open_out(const char *path)
{
	return path ? open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644) : -1;
}

/* Start argv (searched in PATH) with no input, as o says; returns the pid. */
static inline pid_t start_with(char *const argv[], const struct start_opts *o)
{
	pid_t pid = fork();

	if (pid == 0) {
		int out = open_out(o->out);
		int shared = o->out && o->err && strcmp(o->out, o->err) == 0;
		int err = shared ? out : open_out(o->err);
		int null = open("/dev/null", O_RDONLY);

		dup2(null, 0);
		if (out >= 0)
			dup2(out, 1);
		if (err >= 0)
			dup2(err, 2);
		if (o->fsize_limit) {
			struct rlimit rl = { o->fsize_limit, o->fsize_limit };

			setrlimit(RLIMIT_FSIZE, &rl);
		}
		if (o->env)
			putenv((char *)o->env);
		execvp(argv[0], argv);
		_exit(126);
	}
	return pid;
}

/* Start argv with stdout and stderr in files; returns the pid. */
static inline pid_t start(char *const argv[], const char *out, const char *err)
{
	return start_with(argv, &(struct start_opts){ .out = out, .err = err });
}

/* Wait for pid: exit code, 128+signal, or -1 (killed) after timeout_ms. */
static inline int wait_status(pid_t pid, long timeout_ms)
{
	long deadline = monotonic_ms() + timeout_ms;
	int status;

	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (monotonic_ms() >= deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		usleep(5000);
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

/*
 * Wait until the file at path holds text, at most timeout_ms (a deadline
 * that only catches a hang); whether it did.
 */
static inline bool file_has_text(const char *path, const char *text,
				 long timeout_ms)
{
	for (long end = monotonic_ms() + timeout_ms;; usleep(10000)) {
		char *s = slurp_file(path, "");
		bool found = strstr(s, text) != NULL;

		free(s);
		if (found)
			return true;
		if (monotonic_ms() >= end)
			return false;
	}
}

/* Run argv to its end or timeout_ms, stdout and stderr captured. */
static inline struct run run_capture(char *const argv[], long timeout_ms,
				     rlim_t fsize_limit)
{
	char *out = tmp_path("stdout"), *err = tmp_path("stderr");
	struct start_opts o = { out, err, NULL, fsize_limit };
	struct run r;

	r.status = wait_status(start_with(argv, &o), timeout_ms);
	r.out = slurp_file(out, "");
	r.err = slurp_file(err, "");
	return r;
}

/* Free what a run captured. */
static inline void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* The JSON in path, parsed; NULL if missing or not JSON. */
static inline cJSON *load_json(const char *path)
{
	char *text = slurp_file(path, "");
	cJSON *j = cJSON_Parse(text);

	free(text);
	return j;
}

/* The string field name of o, or NULL. */
static inline const char *str_field(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The number field name of o, or -1. */
static inline double num_field(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* A TCP port of 127.0.0.1 free a moment ago, or -1. */
static inline int free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/*
 * Run qsptop's argv, which writes a JSON snapshot to json, within
 * timeout_ms: it must exit 0. The snapshot, or NULL; what names the run
 * in a failure.
 */
static inline cJSON *snapshot_of_run(char **argv, const char *json,
				     long timeout_ms, const char *what)
{
	struct run r;
	cJSON *snap;

	unlink(json);
	r = run_capture(argv, timeout_ms, 0);
	CHECK(r.status == 0, "%s: qsptop exits 0, got %d: %s", what, r.status,
	      r.err);
	run_free(&r);
	snap = load_json(json);
	CHECK(snap != NULL, "%s: a JSON snapshot", what);
	return snap;
}

/* The waits a row's histogram counts: the sum of its buckets. */
static inline double histogram_sum(const cJSON *row)
{
	const cJSON *bucket;
	double sum = 0;

	cJSON_ArrayForEach(bucket, cJSON_GetObjectItem(row, "wait_histogram"))
		sum += bucket->valuedouble;
	return sum;
}

/* The sum of a number field over every row of a snapshot. */
static inline double sum_all(const cJSON *snap, const char *field)
{
	const cJSON *row;
	double sum = 0;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows"))
		sum += num_field(row, field);
	return sum;
}

/* The first row of a snapshot whose call site's symbol is fn, or NULL. */
static inline const cJSON *row_at_symbol(const cJSON *snap, const char *fn)
{
	const cJSON *row;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const char *sym = str_field(cJSON_GetObjectItem(row, "site"),
					    "symbol");

		if (sym && strcmp(sym, fn) == 0)
			return row;
	}
	return NULL;
}

/* The line of tests/workloads/SOURCE that carries "site:NAME", or -1. */
static inline int marker_line(const char *source, const char *name)
{
	char path[PATH_MAX + 32], line[512], marker[64];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/tests/workloads/%s", root, source);
	snprintf(marker, sizeof(marker), "site:%s", name);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		const char *hit = strstr(line, marker);
		char after = hit ? hit[strlen(marker)] : 'x';

		n++;
		if (hit && after != '_' && !isalnum((unsigned char)after)) {
			fclose(f);
			return n;
		}
	}
	if (f)
		fclose(f);
	return -1;
}


/* NAME's number in a workload's result file of "NAME NUMBER" lines, or -1. */
static inline long result_number(const char *path, const char *name)
{
	char key[64];
	long v, found = -1;
	FILE *f = fopen(path, "r");

	while (f && fscanf(f, "%63s %ld", key, &v) == 2) {
		if (strcmp(key, name) == 0)
			found = v;
	}
	if (f)
		fclose(f);
	return found;
}

/* Whether a function's name is fn: "fn", or a demangled "fn(args)". */
static inline int names_function(const char *name, const char *fn)
{
	size_t n = strlen(fn);

	return name && strncmp(name, fn, n) == 0 &&
	       (name[n] == '\0' || name[n] == '(');
}

/* The acquisitions of a snapshot's rows whose call site is in function fn. */
static inline double acquisitions_in(const cJSON *snap, const char *fn)
{
	const cJSON *row;
	double sum = 0;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const cJSON *site = cJSON_GetObjectItem(row, "site");

		if (names_function(str_field(site, "symbol"), fn))
			sum += num_field(row, "acquisitions");
	}
	return sum;
}

/*
 * Lines "WHAT PID" that a workload writes to path: the PID of the n-th
 * line for what (-1 if there is none yet), and how many there are.
 */
static inline int note_pid(const char *path, const char *what, int n,
			   int *count)
{
	char *text = slurp_file(path, ""), *line = text;
	size_t len = strlen(what);
	int seen = 0, pid = -1;

	while (line && *line) {
		if (strncmp(line, what, len) == 0 && line[len] == ' ' &&
		    seen++ == n)
			pid = atoi(line + len + 1);
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	free(text);
	if (count)
		*count = seen;
	return pid;
}

/* How many lines of path start with what (then a space). */
static inline int note_lines(const char *path, const char *what)
{
	int n;

	note_pid(path, what, -1, &n);
	return n;
}

/* note_pid(), waited for up to ms; -1 if the line never came. */
static inline pid_t note_pid_wait(const char *path, const char *what, int n,
				  int ms)
{
	long deadline = monotonic_ms() + ms;
	pid_t pid;

	while ((pid = note_pid(path, what, n, NULL)) < 0 &&
	       monotonic_ms() < deadline)
		usleep(10000);
	return pid;
}

/*
 * Exactly the lock calls pid makes while qsptop -p watches it. qsptop
 * runs until its first table; pid gets SIGUSR2 (a workload that takes it
 * then makes a known number of calls and adds a line "exact PID" to
 * notes); three updates later qsptop is stopped with SIGINT. Its exit
 * status goes to *status; returns its snapshot, or NULL.
 */
static inline cJSON *watch_exact(pid_t pid, const char *notes, int *status)
{
	char json[PATH_MAX + 32], out[PATH_MAX + 32], err[PATH_MAX + 32];
	char pidstr[16], *text = NULL;
	int before = note_lines(notes, "exact");
	long deadline = monotonic_ms() + 20000;
	pid_t q;

	snprintf(json, sizeof(json), "%s/exact-%d.json", tmp, (int)pid);
	snprintf(out, sizeof(out), "%s/exact-%d.out", tmp, (int)pid);
	snprintf(err, sizeof(err), "%s/exact-%d.err", tmp, (int)pid);
	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	/* Not an earlier run's table: the first one must be this run's. */
	unlink(json);
	unlink(out);
	q = start((char *[]){ qsptop, "-b", "-d", "0.2", "-j", json, "-p",
			      pidstr, NULL }, out, err);
	while (monotonic_ms() < deadline &&
	       !((text = slurp_file(out, "")) && strstr(text, "CALL SITE"))) {
		free(text);
		text = NULL;
		usleep(20000);
	}
	free(text);
	kill(pid, SIGUSR2);
	while (monotonic_ms() < deadline && note_lines(notes, "exact") <= before)
		usleep(20000);
	usleep(600000);
	kill(q, SIGINT);
	*status = wait_status(q, 10000);
	return load_json(json);
}
/* How many times needle occurs in text, not overlapping. */
static inline int text_occurrences(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, needle)) != NULL;
	     p += strlen(needle))
		n++;
	return n;
}

/* The same in the file at path (0 when it cannot be read). */
static inline int file_occurrences(const char *path, const char *needle)
{
	char *text = slurp_file(path, "");
	int n = text_occurrences(text, needle);

	free(text);
	return n;
}

/* tmux -L SOCK ARGS..., NULL-terminated, quietly: its exit status. */
static inline int tmux_quietly(const char *sock, ...)
{
	struct args a = { 0 };
	va_list ap;
	char *w;

	args_add(&a, "tmux", "-L", (char *)sock, "-f", "/dev/null", NULL);
	va_start(ap, sock);
	while ((w = va_arg(ap, char *)) != NULL)
		args_add(&a, w, NULL);
	va_end(ap);
	return run_quietly(a.v);
}

/*
 * Whether pane "t" of tmux server sock comes to show text (shown) or to
 * no longer show it within 30 s (a deadline for a hang, not a timing).
 */
static inline bool tmux_until(const char *sock, const char *text, bool shown)
{
	char *file = tmp_path("pane");
	long end = monotonic_ms() + 30000;

	do {
		struct args a = { 0 };
		struct start_opts o = { file, NULL, NULL, 0 };
		char *s;
		bool found;

		args_add(&a, "tmux", "-L", (char *)sock, "capture-pane", "-p",
			 "-t", "t", NULL);
		wait_status(start_with(a.v, &o), 5000);
		s = slurp_file(file, "");
		found = strstr(s, text) != NULL;
		free(s);
		if (found == shown)
			return true;
		usleep(100000);
	} while (monotonic_ms() < end);
	return false;
}

/* The last capture tmux_until() made. */
static inline char *tmux_last_screen(void)
{
	return slurp_file(tmp_path("pane"), "");
}

/* Set the paths from /proc/self/exe (BUILD/tests/TEST) and make tmp. */
static inline void find_paths(const char *tmp_template, const char *wl_name)
{
	char exe[PATH_MAX], tests[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	exe[n > 0 ? n : 0] = '\0';
	strcpy(build, dirname(dirname(exe)));	/* BUILD/tests/TEST */
	strcpy(exe, build);
	strcpy(root, dirname(exe));
	join(qsptop, build, "/qsptop");
	join(library, build, "/libqsptop.so");
	join(tests, build, "/tests/");
	join(workload, tests, wl_name);
	join(tmp, tmp_template, "");
	if (mkdtemp(tmp) == NULL) {
		perror("mkdtemp");
		exit(1);
	}
}

#endif
