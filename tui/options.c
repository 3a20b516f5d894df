/* Parsing the command line. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/types.h"
#include "column.h"
#include "lockset.h"
#include "options.h"
#include "wrappers.h"
#include "xalloc.h"

/* Long options without a letter. */
enum { OPT_FOLDED = 0x100, OPT_WRAPPER, OPT_MAX_MEMORY, OPT_FORCE, OPT_MIX_IDLE, OPT_NO_FOLLOW_EXEC,
       OPT_TYPE, OPT_CHILDREN, OPT_NO_CHILDREN, OPT_JOIN_PROCESSES, OPT_IDLE,
       OPT_LOCK, OPT_NO_AUTO_WRAPPERS, OPT_PPROF, OPT_LISTEN, OPT_TOP,
       OPT_DIFF, OPT_NO_INJECT, OPT_HOLDERS, OPT_FOLDED_HOLDERS };

static const char usage_text[] =
	"Usage: qsptop [options] -p PID\n"
	"       qsptop [options] -- CMD [ARG...]\n"
	"       qsptop [-j FILE] [-N N] [-w COLUMNS] --diff OLD.json NEW.json\n"
	"Show which lock call sites of a process make its threads wait.\n"
	"\n"
	"  -p, --pid PID[,PID...] watch running processes, one table for all (the\n"
	"                         collector is loaded into each with ptrace if it\n"
	"                         has none)\n"
	"      --children         with -p, watch every descendant of the processes\n"
	"                         too, present and future, in the same table (with\n"
	"                         -- CMD, the default)\n"
	"      --no-children      with -- CMD, watch CMD alone\n"
	"      --join-processes   with several processes, one line for the rows of\n"
	"                         one code (module and offset) and one lock in all\n"
	"                         of them, not one per process\n"
	"      --no-inject        with -p PID, never load the collector: show each\n"
	"                         thread from outside (blocked on which lock, held\n"
	"                         by whom, deadlocks; the same when loading fails)\n"
	"      --force            with -p, load the collector even into a process\n"
	"                         under a seccomp filter (which kills the process\n"
	"                         if it forbids a system call the collector makes)\n"
	"  -- CMD [ARG...]        run CMD with the collector; stop when it exits and\n"
	"                         exit with its status\n"
	"  -d, --delay SECS       refresh interval (default 1)\n"
	"  -n, --iterations N     stop after N refreshes; -b -n 0 prints no table\n"
	"                         and runs until the target exits (--listen)\n"
	"  -b, --batch            print the table every interval (like top -b);\n"
	"                         the default when stdout is not a terminal\n"
	"  -N, --rows N           in batch mode, print only the first N rows of each\n"
	"                         table (default all; the live screen shows what\n"
	"                         fits, --json and --folded keep every row)\n"
	"  -o, --sort KEY         %s;\n"
	"                         site sorts A to Z, the others high to low; a\n"
	"                         leading - sorts low to high (A to Z), + high to low\n"
	"      --type LIST        show only these lock types, comma-separated:\n"
	"                         mutex, rwlock-read, rwlock-write, rwlock (both),\n"
	"                         spinlock, futex, semaphore, condvar, futex-wake;\n"
	"                         locks (the rows of the lock role, whatever their\n"
	"                         type), idle (those of the idle role)\n"
	"      --mix-idle         sort idle rows among the lock rows; by default\n"
	"                         they follow every lock row\n"
	"      --idle GLOB        rows whose call site's function (or, without a\n"
	"                         name, its nearest named caller) matches GLOB are\n"
	"                         idle: threads waiting for work (repeatable)\n"
	"      --lock GLOB        ... are locks: threads waiting for what another\n"
	"                         thread holds (repeatable; the last match wins)\n"
	"  -w, --width COLUMNS    batch line width (default: $COLUMNS, else the\n"
	"                         terminal's, else 132)\n"
	"  -m, --coalesce MODE    none (site x object) | site | object (default none)\n"
	"  -j, --json FILE        write a JSON snapshot when qsptop stops (- = stdout)\n"
	"      --folded FILE      write the waited-on stacks in folded form when\n"
	"                         qsptop stops, for flame graphs (- = stdout)\n"
	"      --folded-holders FILE  write the wait holders caused, by the holder's\n"
	"                         stack (--holders), in folded form when qsptop\n"
	"                         stops (- = stdout)\n"
	"      --pprof FILE       write a gzip'd pprof profile of the waits when\n"
	"                         qsptop stops (go tool pprof; - = stdout)\n"
	"                         (with -, batch tables and the command's output\n"
	"                         go to stderr: stdout carries that one format)\n"
	"      --wrapper GLOB     treat functions matching GLOB (a demangled name, with\n"
	"                         or without its arguments) as lock wrappers: their\n"
	"                         lock calls count on their callers' rows\n"
	"                         (repeatable); in a stripped binary name the\n"
	"                         function by an address in it, MODULE+0xOFFSET\n"
	"                         (as nm prints it) or 0xADDR (in the process)\n"
	"      --no-auto-wrappers do not look for lock wrappers by their stacks\n"
	"                         and code (short functions that lock and do not\n"
	"                         unlock, called from 3 or more others)\n"
	"      --listen [HOST:]PORT  serve /metrics (Prometheus) and\n"
	"                         /debug/pprof/mutex over HTTP (HOST default\n"
	"                         127.0.0.1)\n"
	"      --top N            /metrics: a series for each of the N sites with\n"
	"                         the most wait (default 100), the rest summed in\n"
	"                         site=\"other\" per type\n"
	"      --diff OLD NEW     compare two JSON snapshots: a table (or with -j,\n"
	"                         JSON) of what grew or shrank, by call site and\n"
	"                         lock name, sorted by the change in wait\n"
	"  -t, --theme NAME       colour theme: default, light, mono, or a file\n"
	"                         (~/.config/qsptop/themes/NAME.theme first)\n"
	"      --no-follow-exec   with -- CMD: stop watching when CMD execs another\n"
	"                         program (by default qsptop follows it)\n"
	"      --max-memory MIB   cap the collector's memory inside the target\n"
	"                         (default 64); past it rows of one lock fold\n"
	"                         into rows per call site, then counts are dropped,\n"
	"                         and the header says so\n"
	"      --holders          track lock holders from the start (HOLD, HELD%%,\n"
	"                         CAUSED/s, blocked by, while held: what a holder\n"
	"                         does while others wait, and LOCK ORDER warnings\n"
	"                         of locks taken in both orders); off by default,\n"
	"                         as it slows every lock and unlock a little; c on\n"
	"                         the live screen turns it on\n"
	"  -h, --help             show this help\n"
	"  -V, --version          show the version\n"
	"\n"
	"Holders (mutexes): about one acquisition in 64 per thread is timed until\n"
	"its unlock; HOLD is their average, HELD%% the time held (HOLD times the\n"
	"acquisitions) over the time watched, CAUSED/s the wait of other threads\n"
	"behind holds taken at the row's site; c on the live screen sorts by it.\n"
	"A wait is blocked by the site where its holder took the lock: a mutex's\n"
	"owner or an rwlock's writer (kept by glibc), the readers or a spinlock's\n"
	"holder (noted at acquisition), the FUTEX_WAKE or sem_post that ended a\n"
	"futex or semaphore wait; else \"readers\" or \"holder unknown\".\n"
	"\n"
	"Lock wrappers are skipped by default (the key w in the live screen shows\n"
	"their own rows again). Built in, besides those given with --wrapper:\n";

static void usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

static void usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("qsptop: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'qsptop --help' for more information.\n", stderr);
	exit(2);
}

/*
 * The sort keys for the help, " | " between them, a line broken before
 * a key that would pass column 78 and continued at column 25.
 */
static void sort_keys_text(char *out, size_t size)
{
	char keys[256], *key, *save = NULL;
	size_t len = 0;
	int col = 25;

	column_keys(keys, sizeof(keys), " ");
	out[0] = '\0';
	for (key = strtok_r(keys, " ", &save); key && len + 64 < size;
	     key = strtok_r(NULL, " ", &save)) {
		int w = (int)strlen(key) + (len ? 3 : 0);

		if (len && col + w > 78) {
			len += (size_t)snprintf(out + len, size - len, " |\n%25s", "");
			col = 25;
			w -= 3;
		} else if (len) {
			len += (size_t)snprintf(out + len, size - len, " | ");
		}
		len += (size_t)snprintf(out + len, size - len, "%s", key);
		col += w;
	}
}

/* The help, then the built-in wrapper patterns, filled to 78 columns. */
static void print_usage(void)
{
	int col = 0;

	char keys[512];

	sort_keys_text(keys, sizeof(keys));
	printf(usage_text, keys);
	for (size_t i = 0; wrappers_builtin_globs[i]; i++) {
		int len = (int)strlen(wrappers_builtin_globs[i]);

		if (col > 0 && col + 1 + len > 78) {
			putchar('\n');
			col = 0;
		}
		col += printf("%s%s", col ? " " : "  ", wrappers_builtin_globs[i]);
	}
	putchar('\n');
}

static void add_role(struct options *o, const char *glob, enum role role)
{
	if (*glob == '\0')
		usage_error("--%s: expected a function name or glob, got ''",
			    role_name(role));
	o->roles = xreallocarray(o->roles, o->nroles + 1, sizeof(*o->roles));
	o->roles[o->nroles++] = (struct role_option){ glob, role };
}

static void add_wrapper(struct options *o, const char *glob)
{
	if (*glob == '\0')
		usage_error("%s", "--wrapper: expected a function name or glob, got ''");
	o->wrappers = xreallocarray(o->wrappers, o->nwrappers + 1,
				    sizeof(*o->wrappers));
	o->wrappers[o->nwrappers++] = glob;
}

bool options_parse_delay(const char *s, double *delay_s)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(d) ||
	    d < OPTIONS_DELAY_MIN_S || d > OPTIONS_DELAY_MAX_S)
		return false;
	*delay_s = d;
	return true;
}

static double parse_delay(const char *s)
{
	double d;

	if (!options_parse_delay(s, &d))
		usage_error("-d: expected seconds between %g and %g, got '%s'",
			    OPTIONS_DELAY_MIN_S, OPTIONS_DELAY_MAX_S, s);
	return d;
}

static long parse_count(const char *s, const char *what, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > max)
		usage_error("%s, got '%s'", what, s);
	return v;
}

/* -p: one process id or several, comma-separated, each once. */
static void parse_pids(struct options *o, const char *list)
{
	char *copy = xstrdup(list), *save = NULL;

	if (*list == '\0' || *list == ',' || list[strlen(list) - 1] == ',' ||
	    strstr(list, ",,"))
		usage_error("-p: expected process ids (PID[,PID...]), got '%s'", list);
	for (char *s = strtok_r(copy, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
		pid_t pid = (pid_t)parse_count(s, "-p: expected process ids "
					       "(PID[,PID...])", 1L << 22);

		for (size_t i = 0; i < o->npids; i++)
			if (o->pids[i] == pid)
				usage_error("-p: PID %d given twice", (int)pid);
		o->pids = xreallocarray(o->pids, o->npids + 1, sizeof(*o->pids));
		o->pids[o->npids++] = pid;
	}
	free(copy);
	o->pid = o->pids[0];
}

/* -N: a count of rows, or "all". */
static size_t parse_rows(const char *s)
{
	if (strcmp(s, "all") == 0)
		return 0;
	return (size_t)parse_count(s, "-N: expected a positive count of rows "
				   "or 'all'", 1L << 30);
}

static void parse_sort(struct options *o, const char *s)
{
	char keys[256];

	const char *key = *s == '-' || *s == '+' ? s + 1 : s;

	o->sort = field_by_key(key);
	if (o->sort == NULL) {
		column_keys(keys, sizeof(keys), ", ");
		usage_error("-o: unknown sort key '%s' (%s)", key, keys);
	}
	o->ascending = *s == '-' || (*s != '+' && o->sort->low_first);
}

static void parse_types(struct options *o, const char *list)
{
	char bad[64], names[256];

	o->types = lockset_parse(list, bad, sizeof(bad));
	if (o->types == 0) {
		lockset_names(names, sizeof(names));
		usage_error("--type: unknown lock type '%s' (%s)", bad, names);
	}
}

static const struct option long_options[] = {
	{ .name = "pid", .has_arg = required_argument, .val = 'p' },
	{ .name = "delay", .has_arg = required_argument, .val = 'd' },
	{ .name = "iterations", .has_arg = required_argument, .val = 'n' },
	{ .name = "batch", .has_arg = no_argument, .val = 'b' },
	{ .name = "rows", .has_arg = required_argument, .val = 'N' },
	{ .name = "sort", .has_arg = required_argument, .val = 'o' },
	{ .name = "coalesce", .has_arg = required_argument, .val = 'm' },
	{ .name = "type", .has_arg = required_argument, .val = OPT_TYPE },
	{ .name = "mix-idle", .has_arg = no_argument, .val = OPT_MIX_IDLE },
	{ .name = "idle", .has_arg = required_argument, .val = OPT_IDLE },
	{ .name = "lock", .has_arg = required_argument, .val = OPT_LOCK },
	{ .name = "width", .has_arg = required_argument, .val = 'w' },
	{ .name = "json", .has_arg = required_argument, .val = 'j' },
	{ .name = "folded", .has_arg = required_argument, .val = OPT_FOLDED },
	{ .name = "folded-holders", .has_arg = required_argument,
	  .val = OPT_FOLDED_HOLDERS },
	{ .name = "pprof", .has_arg = required_argument, .val = OPT_PPROF },
	{ .name = "listen", .has_arg = required_argument, .val = OPT_LISTEN },
	{ .name = "top", .has_arg = required_argument, .val = OPT_TOP },
	{ .name = "diff", .has_arg = required_argument, .val = OPT_DIFF },
	{ .name = "wrapper", .has_arg = required_argument, .val = OPT_WRAPPER },
	{ .name = "no-auto-wrappers", .has_arg = no_argument,
	  .val = OPT_NO_AUTO_WRAPPERS },
	{ .name = "force", .has_arg = no_argument, .val = OPT_FORCE },
	{ .name = "no-inject", .has_arg = no_argument, .val = OPT_NO_INJECT },
	{ .name = "holders", .has_arg = no_argument, .val = OPT_HOLDERS },
	{ .name = "children", .has_arg = no_argument, .val = OPT_CHILDREN },
	{ .name = "no-children", .has_arg = no_argument, .val = OPT_NO_CHILDREN },
	{ .name = "join-processes", .has_arg = no_argument, .val = OPT_JOIN_PROCESSES },
	{ .name = "theme", .has_arg = required_argument, .val = 't' },
	{ .name = "no-follow-exec", .has_arg = no_argument, .val = OPT_NO_FOLLOW_EXEC },
	{ .name = "max-memory", .has_arg = required_argument, .val = OPT_MAX_MEMORY },
	{ .name = "help", .has_arg = no_argument, .val = 'h' },
	{ .name = "version", .has_arg = no_argument, .val = 'V' },
	{ 0 },
};

/* Apply one option letter. */
static void apply(struct options *o, int c, const char *arg)
{
	int m;

	switch (c) {
	case 'p': parse_pids(o, arg); break;
	case 'd': o->delay_s = parse_delay(arg); break;
	case 'n':
		o->no_tables = strcmp(arg, "0") == 0;
		o->iterations = o->no_tables ? 0 : parse_count(arg,
			"-n: expected a positive count (0 with -b: no table)", 1L << 30);
		break;
	case 'b': o->batch = true; break;
	case 'N': o->rows = parse_rows(arg); break;
	case 'o': parse_sort(o, arg); break;
	case 'm':
		if ((m = coalesce_parse(arg)) < 0)
			usage_error("-m: unknown coalesce mode '%s' (none, site, object)", arg);
		o->coalesce = (enum coalesce)m;
		break;
	case OPT_TYPE: parse_types(o, arg); break;
	case OPT_MIX_IDLE: o->mix_idle = true; break;
	case OPT_IDLE: add_role(o, arg, ROLE_IDLE); break;
	case OPT_LOCK: add_role(o, arg, ROLE_LOCK); break;
	case OPT_NO_FOLLOW_EXEC: o->no_follow_exec = true; break;
	case 'w':
		o->width = (int)parse_count(arg, "-w: expected a width between "
			"40 and 1000 columns, got '%s'", 1000);
		if (o->width < 40)
			usage_error("-w: expected a width between 40 and 1000 "
				    "columns, got '%s'", arg);
		break;
	case 'j': o->json_path = arg; break;
	case OPT_FOLDED: o->folded_path = arg; break;
	case OPT_FOLDED_HOLDERS: o->folded_holders_path = arg; break;
	case OPT_PPROF: o->pprof_path = arg; break;
	case OPT_LISTEN: o->listen = arg; break;
	case OPT_DIFF: o->diff_old = arg; break;
	case OPT_TOP: o->top = (size_t)parse_count(arg, "--top: expected a "
		"positive count of series", 1L << 20); break;
	case OPT_WRAPPER: add_wrapper(o, arg); break;
	case OPT_NO_AUTO_WRAPPERS: o->no_auto_wrappers = true; break;
	case OPT_FORCE: o->force = true; break;
	case OPT_NO_INJECT: o->no_inject = true; break;
	case OPT_HOLDERS: o->holders = true; break;
	case OPT_CHILDREN: o->children = true; break;
	case OPT_NO_CHILDREN: o->no_children = true; break;
	case OPT_JOIN_PROCESSES: o->join_processes = true; break;
	case 't': o->theme = arg; break;
	case OPT_MAX_MEMORY:
		o->max_memory_mb = (unsigned)parse_count(arg, "--max-memory: expected "
			"MiB between 1 and 1048575", (1L << 20) - 1);
		break;
	case 'h': print_usage(); exit(0);
	case 'V': printf("qsptop %s\n", QSPTOP_VERSION); exit(0);
	default: usage_error("%s", "invalid option");
	}
}

/* --diff OLD NEW: NEW is the one word left; nothing is watched. */
static void check_diff(struct options *o)
{
	if (!o->command || !o->command[0] || o->command[1])
		usage_error("%s", "--diff: expected OLD.json NEW.json");
	if (o->pid || strcmp(o->command[0], "--") == 0)
		usage_error("%s", "--diff compares snapshots: no -p or -- CMD");
	o->diff_new = o->command[0];
	o->command = NULL;
}

static bool is_stdout(const char *path)
{
	return path && strcmp(path, "-") == 0;
}

/* How many exports write to stdout. */
static int stdout_exports(const struct options *o)
{
	return is_stdout(o->json_path) + is_stdout(o->folded_path) +
	       is_stdout(o->folded_holders_path) + is_stdout(o->pprof_path);
}

void options_parse(struct options *o, int argc, char **argv)
{
	int c;

	*o = (struct options){ .delay_s = 1.0, .sort = field_by_key("wait"),
			       .types = LOCKSET_ALL, .top = 100,
			       .coalesce = COALESCE_NONE };
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+p:d:n:bN:o:m:w:j:t:hV", long_options,
				NULL)) != -1) {
		if (c == '?' && optopt)
			usage_error("unknown or incomplete option '-%s'",
				    (char[]){ (char)optopt, 0 });
		if (c == '?')
			usage_error("unknown or incomplete option '%s'", argv[optind - 1]);
		apply(o, c, optarg);
	}
	if (optind < argc)
		o->command = &argv[optind];
	if (o->diff_old) {
		check_diff(o);
		return;
	}
	if (o->pid && o->command)
		usage_error("%s", "give either -p PID or -- CMD, not both");
	if (!o->pid && !o->command && o->children)
		usage_error("%s", "--children: nothing to watch: give -p PID");
	if (!o->pid && !o->command)
		usage_error("%s", "nothing to watch: give -p PID or -- CMD");
	if (o->no_inject && !o->pid)
		usage_error("%s", "--no-inject: nothing to look at: give -p PID");
	if (o->no_inject && (o->npids > 1 || o->children))
		usage_error("%s", "--no-inject looks at one process: give one PID, "
			    "without --children");
	if (o->children && o->no_children)
		usage_error("%s", "give either --children or --no-children");
	/* A launched command's tree is watched whole unless told not to. */
	if (o->command && !o->no_children)
		o->children = true;
	if (stdout_exports(o) > 1)
		usage_error("%s", "only one of --json, --folded and --pprof "
			    "(or --folded-holders) can write to stdout (-)");
	if (o->no_tables && !o->batch)
		usage_error("%s", "-n 0 (no table) needs -b");
}

bool options_stdout_export(const struct options *o)
{
	return stdout_exports(o) > 0;
}
