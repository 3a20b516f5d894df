/* The field table: every number of a table row, in the JSON schema's order. */
#include <string.h>

#include "field.h"
#include "procs.h"

static double value_acquisitions(const struct view_row *r)
{
	return (double)r->c.calls.acquisitions;
}

static double value_contended(const struct view_row *r)
{
	return (double)r->c.calls.contended;
}

static double value_failed(const struct view_row *r)
{
	return (double)r->c.calls.failed;
}

static double value_timeouts(const struct view_row *r)
{
	return (double)r->c.calls.timeouts;
}

static double value_wait(const struct view_row *r)
{
	return (double)r->c.calls.wait_ns;
}

static double value_wait_rate(const struct view_row *r)
{
	return r->wait_per_s;
}

double row_avg_wait(const struct view_row *r)
{
	return lock_counts_avg_wait_ns(&r->c);
}

/*
 * The collector may send a wait's time and count an update before its
 * maximum (it reads them at different moments while the thread ends the
 * wait): until the maximum comes, the average is the one bound known.
 */
double row_max_wait(const struct view_row *r)
{
	double avg = row_avg_wait(r);

	return (double)r->max_wait_ns > avg ? (double)r->max_wait_ns : avg;
}

/* A line's process is its sites' (a shared lock's object is not). */
double row_pid(const struct view_row *r)
{
	return r->procs_mixed ? 0 : (double)procs_pid(r->proc);
}

double row_avg_hold(const struct view_row *r)
{
	const struct lock_calls *c = &r->c.calls;

	return c->holds_timed ? (double)c->hold_ns / (double)c->holds_timed : 0;
}

/* Time held over every acquisition, estimated from the timed sample. */
static double value_hold(const struct view_row *r)
{
	return lock_calls_hold_est_ns(&r->c.calls);
}

/* The longest timed hold, never below their average. */
static double value_max_hold(const struct view_row *r)
{
	double avg = row_avg_hold(r);

	return (double)r->max_hold_ns > avg ? (double)r->max_hold_ns : avg;
}

static double value_holds_timed(const struct view_row *r)
{
	return (double)r->c.calls.holds_timed;
}

/* The share of the time since start or reset the lock was held from here. */
static double value_held_share(const struct view_row *r)
{
	return r->elapsed_s > 0 ? value_hold(r) / (r->elapsed_s * 1e9) : 0;
}

static double value_caused(const struct view_row *r)
{
	return (double)r->c.calls.caused_wait_ns;
}

static double value_caused_rate(const struct view_row *r)
{
	return r->caused_per_s;
}

/* In the JSON schema's order, the call site first. */
static const struct field fields[] = {
	{ .key = "site", .low_first = true, .merge = MERGE_NONE,
	  .column = { "CALL SITE", 30, 10, 30, UNIT_SITE,
		      "where the lock is taken (s: function+offset or file:line); an unnamed site adds its named caller" } },
	{ .json = "pid", .value = row_pid, .merge = MERGE_NONE,
	  .column = { "PROC", 7, 3, 15, UNIT_PID,
		      "the process's PID (with several processes)", true } },
	{ .key = "count", .json = "acquisitions", .value = value_acquisitions,
	  .column = { "ACQ", 7, 5, 60, UNIT_COUNT,
		      "acquisitions since start or reset" } },
	{ .key = "contended", .json = "contended", .value = value_contended,
	  .column = { "CONT%", 6, 4, 70, UNIT_WAIT_SHARE,
		      "share of calls that had to wait (sorts by contended count)" } },
	{ .json = "failed", .value = value_failed },
	{ .json = "timeouts", .value = value_timeouts },
	{ .key = "total", .json = "wait_ns", .value = value_wait,
	  .column = { "WAIT", 8, 3, 50, UNIT_NS,
		      "total wait since start or reset" } },
	{ .key = "max", .json = "max_wait_ns", .value = row_max_wait,
	  .merge = MERGE_MAX,
	  .column = { "MAX", 8, 6, 90, UNIT_NS, "longest single wait" } },
	{ .key = "avg", .json = "avg_wait_ns", .value = row_avg_wait,
	  .merge = MERGE_DERIVED,
	  .column = { "AVG", 8, 7, 80, UNIT_NS,
		      "wait per wait, timed out or not" } },
	{ .key = "wait", .json = "wait_per_s_ns", .value = value_wait_rate,
	  .column = { "WAIT/s", 8, 9, 40, UNIT_NS,
		      "time threads waited here per second, last interval" } },
	{ .key = "hold", .json = "avg_hold_ns", .value = row_avg_hold,
	  .merge = MERGE_DERIVED,
	  .column = { "HOLD", 8, 0, 92, UNIT_NS,
		      "average hold from here (mutexes; a sample of holds is timed)", .holder = true } },
	{ .json = "hold_ns", .value = value_hold, .merge = MERGE_DERIVED },
	{ .json = "holds_timed", .value = value_holds_timed },
	{ .json = "max_hold_ns", .value = value_max_hold, .merge = MERGE_MAX },
	{ .key = "held", .json = "held_share", .value = value_held_share,
	  .merge = MERGE_DERIVED,
	  .column = { "HELD%", 6, 0, 94, UNIT_HELD_SHARE,
		      "share of the time the lock was held from here", .holder = true } },
	{ .key = "caused_total", .json = "caused_wait_ns", .value = value_caused },
	{ .key = "caused", .json = "caused_wait_per_s_ns",
	  .value = value_caused_rate,
	  .column = { "CAUSED/s", 8, 0, 96, UNIT_NS,
		      "others' wait behind holds taken here, per second, last interval", .holder = true } },
};

#define FIELD_TABLE_COUNT (sizeof(fields) / sizeof(fields[0]))

static const struct field *added;
static size_t n_added;

size_t field_count(void)
{
	return FIELD_TABLE_COUNT + n_added;
}

const struct field *field_at(size_t i)
{
	return i < FIELD_TABLE_COUNT ? &fields[i] : &added[i - FIELD_TABLE_COUNT];
}

void field_extend(const struct field *f, size_t n)
{
	added = f;
	n_added = n;
}

/* The field whose name (its key, or its JSON name) is name, or NULL. */
static const struct field *field_named(const char *name, bool json)
{
	for (size_t i = 0; name != NULL && i < field_count(); i++) {
		const struct field *f = field_at(i);
		const char *n = json ? f->json : f->key;

		if (n && strcmp(n, name) == 0)
			return f;
	}
	return NULL;
}

const struct field *field_by_key(const char *key)
{
	return field_named(key, false);
}

const struct field *field_by_json(const char *name)
{
	return field_named(name, true);
}
