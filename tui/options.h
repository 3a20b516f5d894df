/* The command line: a stable contract (README.md, "Use"; qsptop --help). */
#ifndef QSPTOP_OPTIONS_H
#define QSPTOP_OPTIONS_H

#include <stdbool.h>
#include <sys/types.h>

#include "model.h"
#include "roles.h"

struct options {
	double delay_s;
	long iterations;	/* 0: until the target exits or the user quits */
	bool batch;
	size_t rows;		/* -N: batch tables' first rows; 0 = all */
	const struct field *sort; /* -o: a field of field.h */
	bool ascending;
	bool no_follow_exec;	/* --no-follow-exec: exec'd programs unwatched */
	bool mix_idle;		/* --mix-idle: idle waits among the locks */
	unsigned types;		/* --type: lock types shown (lockset.h) */
	int width;		/* -w: batch line width; 0: COLUMNS, terminal, 132 */
	enum coalesce coalesce;
	const char *json_path;	/* "-" for stdout */
	const char *folded_path; /* --folded; "-" for stdout */
	const char *folded_holders_path; /* --folded-holders; "-": stdout */
	const char *pprof_path;	/* --pprof; "-" for stdout */
	const char *listen;	/* --listen [HOST:]PORT, or NULL */
	size_t top;		/* --top: named series of /metrics */
	bool no_tables;		/* -b -n 0: print no table */
	const char **wrappers;	/* --wrapper globs, in order given */
	size_t nwrappers;
	bool no_auto_wrappers;	/* --no-auto-wrappers: only named ones */
	struct role_option *roles; /* --idle, --lock, in order given */
	size_t nroles;
	const char *theme;	/* -t; NULL = "default" */
	unsigned max_memory_mb;	/* --max-memory; 0: the collector's default */
	pid_t pid;		/* -p: the first PID; 0 when launching */
	pid_t *pids;		/* -p: every PID, in order given */
	size_t npids;
	bool force;		/* --force: -p even under a seccomp filter */
	bool no_inject;		/* --no-inject: -p from outside only */
	bool holders;		/* --holders, or c pressed: holders tracked */
	bool no_children;	/* --no-children */
	bool join_processes;	/* --join-processes: one line per code and
				   object across processes */
	bool children;		/* --children (the default with -- CMD, unless
				   --no-children): every descendant, as it comes */
	char **command;		/* after --; NULL with -p */
	const char *diff_old;	/* --diff OLD NEW: the snapshots, or NULL */
	const char *diff_new;
};

/* The refresh interval's bounds in seconds: -d, and d on the live screen. */
#define OPTIONS_DELAY_MIN_S 0.01
#define OPTIONS_DELAY_MAX_S 3600.0

/* s as a refresh interval in seconds, into *delay_s; false if not one. */
bool options_parse_delay(const char *s, double *delay_s);

/*
 * Parse argv. Prints help or version and exits 0 for -h/-V; prints a
 * one-line error and a hint and exits 2 for bad usage.
 */
void options_parse(struct options *o, int argc, char **argv);

/* Whether --json, --folded or --pprof writes to stdout ("-"), which is then theirs. */
bool options_stdout_export(const struct options *o);

#endif
