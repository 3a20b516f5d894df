/* The field table: every number of a table row, in the JSON schema's order. */
#include <string.h>

#include "field.h"

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

const struct field fields[FIELD_TABLE_COUNT] = {
	[FIELD_SITE] = { .key = "site", .low_first = true,
			 .merge = MERGE_NONE },
	[FIELD_ACQUISITIONS] = { .key = "count", .json = "acquisitions",
				 .value = value_acquisitions },
	[FIELD_CONTENDED] = { .key = "contended", .json = "contended",
			      .value = value_contended },
	[FIELD_FAILED] = { .json = "failed", .value = value_failed },
	[FIELD_TIMEOUTS] = { .json = "timeouts", .value = value_timeouts },
	[FIELD_WAIT] = { .key = "total", .json = "wait_ns",
			 .value = value_wait },
	[FIELD_MAX_WAIT] = { .key = "max", .json = "max_wait_ns",
			     .value = row_max_wait, .merge = MERGE_MAX },
	[FIELD_AVG_WAIT] = { .key = "avg", .json = "avg_wait_ns",
			     .value = row_avg_wait, .merge = MERGE_DERIVED },
	[FIELD_WAIT_RATE] = { .key = "wait", .json = "wait_per_s_ns",
			      .value = value_wait_rate },
};

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

const struct field *field_by_key(const char *key)
{
	for (size_t i = 0; key != NULL && i < field_count(); i++) {
		const struct field *f = field_at(i);

		if (f->key && strcmp(f->key, key) == 0)
			return f;
	}
	return NULL;
}

const struct field *field_by_json(const char *name)
{
	for (size_t i = 0; name != NULL && i < field_count(); i++) {
		const struct field *f = field_at(i);

		if (f->json && strcmp(f->json, name) == 0)
			return f;
	}
	return NULL;
}
