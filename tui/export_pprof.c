/*
 * The table's rows as a pprof profile: a sample per (line, stack) with
 * the waits through that stack, labelled with the lock's type, name,
 * role and process.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export.h"
#include "export_pprof.h"
#include "names.h"
#include "outfile.h"
#include "procs.h"
#include "xalloc.h"

/* Holder stacks of a line in a profile, at most. */
#define HOLDER_STACKS_MAX 256

/* How long a file export may wait for names still to come. */
#define EXPORT_WAIT_MS 2000

/* The lock's name, else its address; NULL for a line of several locks. */
static const char *object_label(const struct app *a, const struct view_row *r,
				char *buf, size_t size)
{
	if (r->n_objects != 1 || !r->object)
		return NULL;
	if (names_object(a->symbols, a->wrappers, a->model, r->object, buf,
			 size) == NAME_NONE)
		snprintf(buf, size, "0x%" PRIx64, procs_addr(r->object));
	return buf;
}

/* A sample of line r, its labels set, no value yet. */
static struct pprof_sample line_sample(const struct app *a,
				       const struct view_row *r, char *object,
				       size_t size)
{
	return (struct pprof_sample){ .type = lock_type_name(r->type),
		.role = role_name(r->role),
		.object = object_label(a, r, object, size),
		.pid = r->procs_mixed ? 0 : procs_pid(r->proc) };
}

void export_pprof_caused(struct pprof *p, const struct app *a,
			 const struct view_row *r, const struct holder_view *h,
			 size_t n)
{
	char object[512], sites[48];
	struct pprof_sample smp = line_sample(a, r, object, sizeof(object));

	if (r->c.calls.caused_wait_ns == 0)
		return;
	snprintf(sites, sizeof(sites), "[%u call sites]", r->n_sites);
	smp.where = sites;
	for (size_t i = 0; i < n; i++) {
		if (h[i].caused_ns == 0)
			continue;
		smp.frames = h[i].frames;
		smp.depth = h[i].depth;
		smp.value[PPROF_CAUSED] = (int64_t)h[i].caused_ns;
		pprof_add(p, &smp);
	}
	if (n == 0) {
		smp.frames = &r->site;
		smp.depth = r->site ? 1 : 0;
		smp.value[PPROF_CAUSED] = (int64_t)r->c.calls.caused_wait_ns;
		pprof_add(p, &smp);
	}
}

void export_pprof_line(struct pprof *p, const struct app *a,
		       const struct view_row *r, const struct stack_view *stacks,
		       size_t n_stacks)
{
	char object[512], sites[48];
	struct pprof_sample smp = line_sample(a, r, object, sizeof(object));
	int64_t acquisitions = (int64_t)r->c.calls.acquisitions;

	snprintf(sites, sizeof(sites), "[%u call sites]", r->n_sites);
	for (size_t i = 0; i <= n_stacks; i++) {
		const struct stack_view *sv = i < n_stacks ? &stacks[i] : NULL;
		bool unwound = sv && sv->frames;

		/* The acquisitions go on the waits not unwound, else alone. */
		if (sv == NULL && acquisitions == 0)
			break;
		if (sv && sv->w.wait_ns == 0 && sv->w.count == 0 &&
		    (unwound || acquisitions == 0))
			continue;
		smp.frames = unwound ? sv->frames : &r->site;
		smp.depth = unwound ? sv->depth : r->site ? 1 : 0;
		smp.where = sites;
		smp.value[PPROF_CONTENTIONS] = sv ? (int64_t)sv->w.count : 0;
		smp.value[PPROF_DELAY] = sv ? (int64_t)sv->w.wait_ns : 0;
		smp.value[PPROF_ACQUISITIONS] = unwound ? 0 : acquisitions;
		if (!unwound)
			acquisitions = 0;
		pprof_add(p, &smp);
	}
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint8_t *export_table_pprof(const struct app *a, const struct model_query *q,
			    size_t *len)
{
	struct pprof *p = pprof_new(a->symbols);
	struct view_row *rows = NULL;
	size_t n = model_view(a->model, q, &rows);
	struct drill d;

	model_drill(a->model, q, rows, n, &d);
	for (size_t i = 0; i < n; i++) {
		struct holder_view h[HOLDER_STACKS_MAX];
		size_t nh = model_holder_stacks(a->model, &rows[i], h,
						HOLDER_STACKS_MAX);

		export_pprof_line(p, a, &rows[i], d.line[i].stacks,
				  d.line[i].n_stacks);
		export_pprof_caused(p, a, &rows[i], h, nh);
	}
	model_drill_free(&d);
	free(rows);
	return pprof_finish(p, now_ns(), (int64_t)(app_elapsed_s(a) * 1e9), len);
}

int export_pprof(const struct app *a, const struct model_query *q,
		 const char *path, char *err, size_t errlen)
{
	uint8_t *data;
	size_t len;
	int rc = 0;

	symbols_settle(a->symbols, EXPORT_WAIT_MS);
	data = export_table_pprof(a, q, &len);
	if (strcmp(path, "-") != 0) {
		rc = outfile_replace(path, (const char *)data, len, err, errlen);
	} else if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0) {
		snprintf(err, errlen, "stdout: write failed");
		rc = -1;
	}
	free(data);
	return rc;
}
