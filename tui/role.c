/* Roles of call sites: names, rules over function names, the heuristic. */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "../common/types.h"
#include "role.h"
#include "xalloc.h"

/* A condvar wait is a lock when at least this many waits timed out, */
#define GUESS_TIMEOUTS_MIN 10
/* making at least this share (percent) of its waits, */
#define GUESS_TIMEOUTS_PCT 20
/* each this short on average (the GIL re-arms 5 ms waits). */
#define GUESS_TOKEN_MEAN_NS (50 * 1000000ull)
/* A mutex is parking when its waits are this long on average, */
#define GUESS_PARK_MEAN_NS (100 * 1000000ull)
/* and fill this share (percent) of its waiting threads' time. */
#define GUESS_PARK_BUSY_PCT 80

const char *const role_builtin_rules[] = {
	/* CPython: the GIL, a mutex and a 5 ms timed condvar wait. */
	"take_gil=lock", "drop_gil=lock", "PyEval_RestoreThread=lock",
	"PyEval_AcquireThread=lock",
	/* Debian's stripped python3.11: take_gil shows as its caller. */
	"_PyEval_EvalFrameDefault=lock",
	/* Thread pools waiting for work. */
	"*get_task=idle", "*wait_for_work*=idle",
	"*wait_for_task*=idle", "g_thread_pool_wait_for_new_task=idle",
	"g_async_queue_pop_intern_unlocked=idle", "worker=idle",
	"uv__io_poll=idle",
	/* Redis: I/O threads parked on a mutex the main thread holds. */
	"IOThreadMain=idle",
	NULL,
};

struct role_rule {
	char *glob;
	enum role role;
};

struct role_rules {
	struct role_rule *rule;
	size_t n;
	size_t cap;
};

const char *role_name(enum role r)
{
	return r == ROLE_IDLE ? "idle" : "lock";
}

const char *role_from_name(enum role_from f)
{
	static const char *const names[] = { "type", "rule", "user",
					     "heuristic" };

	return (unsigned)f < 4 ? names[f] : "type";
}

enum role role_of_type(unsigned type)
{
	return type == LOCK_CONDVAR || type == LOCK_FUTEX_WAKE ? ROLE_IDLE
							       : ROLE_LOCK;
}

struct role_rules *role_rules_new(void)
{
	return xcalloc(1, sizeof(struct role_rules));
}

void role_rules_free(struct role_rules *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->n; i++)
		free(r->rule[i].glob);
	free(r->rule);
	free(r);
}

void role_rules_add(struct role_rules *r, const char *glob, enum role role)
{
	r->rule = xgrow(r->rule, &r->cap, r->n + 1, 8, sizeof *r->rule);
	r->rule[r->n++] = (struct role_rule){ xstrdup(glob), role };
}

void role_rules_append(struct role_rules *a, const struct role_rules *b)
{
	for (size_t i = 0; i < b->n; i++)
		role_rules_add(a, b->rule[i].glob, b->rule[i].role);
}

/*
 * Whether a glob matches name, name without its "(args)", or without a
 * GCC clone suffix (".constprop.0", ".isra.0", ".cold").
 */
static bool name_matches(const char *glob, const char *name)
{
	char bare[512];
	size_t len = strcspn(name, "(");

	if (fnmatch(glob, name, 0) == 0)
		return true;
	if (len >= sizeof(bare))
		return false;
	memcpy(bare, name, len);
	bare[len] = '\0';
	if (name[len] && fnmatch(glob, bare, 0) == 0)
		return true;
	len = strcspn(bare, ".");
	if (bare[len] == '\0' || len == 0)
		return false;
	bare[len] = '\0';
	return fnmatch(glob, bare, 0) == 0;
}

/* The built-in rule matching name: its role. */
static bool builtin_role(const char *name, enum role *role)
{
	for (size_t i = 0; role_builtin_rules[i]; i++) {
		const char *rule = role_builtin_rules[i];
		const char *eq = strchr(rule, '=');
		char glob[64];

		memcpy(glob, rule, (size_t)(eq - rule));
		glob[eq - rule] = '\0';
		if (name_matches(glob, name)) {
			*role = strcmp(eq + 1, "idle") == 0 ? ROLE_IDLE
							    : ROLE_LOCK;
			return true;
		}
	}
	return false;
}

bool role_by_name(const struct role_rules *r, const char *name,
		  enum role *role, enum role_from *from)
{
	if (name == NULL)
		return false;
	for (size_t i = r ? r->n : 0; i-- > 0;) {
		if (name_matches(r->rule[i].glob, name)) {
			*role = r->rule[i].role;
			*from = ROLE_FROM_USER;
			return true;
		}
	}
	if (!builtin_role(name, role))
		return false;
	*from = ROLE_FROM_RULE;
	return true;
}

/* Timed condvar waits re-armed often, a few ms each (threads aside). */
static bool token_numbers(const struct role_evidence *e)
{
	uint64_t waits = e->c.contended + e->c.timeouts;

	return e->type == LOCK_CONDVAR && e->c.timeouts >= GUESS_TIMEOUTS_MIN &&
	       e->c.contended > 0 &&
	       e->c.timeouts * 100 >= waits * GUESS_TIMEOUTS_PCT &&
	       e->c.wait_ns / waits <= GUESS_TOKEN_MEAN_NS;
}

/* ... by several threads. */
static bool guess_token(const struct role_evidence *e)
{
	return token_numbers(e) && e->threads >= 2;
}

/* Long mutex or rwlock waits (their threads' time aside). */
static bool parking_numbers(const struct role_evidence *e)
{
	uint64_t waits = e->c.contended + e->c.timeouts;

	return (e->type == LOCK_MUTEX || e->type == LOCK_RWLOCK_READ ||
		e->type == LOCK_RWLOCK_WRITE) && waits >= 2 &&
	       e->c.wait_ns / waits >= GUESS_PARK_MEAN_NS;
}

/* ... that fill nearly all their threads' time. */
static bool guess_parking(const struct role_evidence *e)
{
	double busy = e->elapsed_s * 1e9 * e->threads;

	return parking_numbers(e) && busy > 0 &&
	       (double)e->c.wait_ns * 100 >= busy * GUESS_PARK_BUSY_PCT;
}

bool role_guess_possible(const struct role_evidence *e)
{
	return token_numbers(e) || parking_numbers(e);
}

bool role_guess(const struct role_evidence *e, enum role *role)
{
	if (guess_token(e)) {
		*role = ROLE_LOCK;
		return true;
	}
	if (guess_parking(e)) {
		*role = ROLE_IDLE;
		return true;
	}
	return false;
}
