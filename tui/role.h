/*
 * The role of a call site's waits: a lock (threads wait for what another
 * thread holds or must release) or idle (threads wait for work or time).
 * Decided, first match wins, by the user (a key, --idle/--lock), by
 * built-in rules for well-known runtimes, by a heuristic over the row's
 * numbers, and otherwise by the primitive's type.
 */
#ifndef QSPTOP_ROLE_H
#define QSPTOP_ROLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/counts.h"

enum role { ROLE_LOCK, ROLE_IDLE };

/* What decided a role; values order nothing. */
enum role_from { ROLE_FROM_TYPE, ROLE_FROM_RULE, ROLE_FROM_USER,
		 ROLE_FROM_HEURISTIC };

/* "lock" or "idle". */
const char *role_name(enum role r);

/* "type", "rule", "user" or "heuristic". */
const char *role_from_name(enum role_from f);

/* The role a type has when nothing else decides: idle for condvar, futex-wake. */
enum role role_of_type(unsigned type);

/* The built-in rules, "GLOB=lock|idle", NULL-terminated (for the README). */
extern const char *const role_builtin_rules[];

/* User rules (--idle, --lock): globs over function names. */
struct role_rules;

struct role_rules *role_rules_new(void);
void role_rules_free(struct role_rules *r);

/* Add a glob whose matches have role; later rules win over earlier ones. */
void role_rules_add(struct role_rules *r, const char *glob, enum role role);

/* Add b's rules after a's (they win over a's). */
void role_rules_append(struct role_rules *a, const struct role_rules *b);

/*
 * The role of a function by name: the user's rules (from ROLE_FROM_USER)
 * first, then the built-in ones (ROLE_FROM_RULE). False when none match.
 */
bool role_by_name(const struct role_rules *r, const char *name,
		  enum role *role, enum role_from *from);

/* What the heuristic knows of a row, since reset. */
struct role_evidence {
	unsigned type;
	struct lock_calls c;
	uint32_t threads;	/* distinct threads that waited */
	double elapsed_s;	/* time the counts cover */
};

/*
 * The heuristic: a condvar wait re-armed on timeouts by several threads,
 * a few milliseconds each, is a lock (CPython's GIL); a mutex its waiters
 * wait on for long stretches, nearly all of their time, is parking
 * (idle). False while the evidence says neither.
 */
bool role_guess(const struct role_evidence *e, enum role *role);

/*
 * Whether role_guess() may say something once it knows threads and
 * elapsed_s: the cheap part of its tests, to spare counting threads.
 */
bool role_guess_possible(const struct role_evidence *e);

#endif
