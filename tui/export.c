/* The JSON snapshot, built with cJSON and written atomically. */
#include <cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export.h"
#include "xalloc.h"

#define SCHEMA_VERSION 1

static cJSON *hex(uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return cJSON_CreateString(buf);
}

static cJSON *string_or_null(const char *s)
{
	return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

/* One frame: address, symbol, offset, file, line, module. */
static cJSON *frame_json(struct symbols *s, uint64_t address, int is_return)
{
	cJSON *o = cJSON_CreateObject();
	struct frame_info fi;

	symbols_resolve(s, address, is_return, &fi);
	cJSON_AddItemToObject(o, "address", hex(address));
	cJSON_AddItemToObject(o, "symbol", string_or_null(fi.symbol));
	cJSON_AddNumberToObject(o, "offset", (double)(fi.symbol ? fi.offset :
						     fi.module_offset));
	cJSON_AddItemToObject(o, "file", string_or_null(fi.file));
	if (fi.line > 0)
		cJSON_AddNumberToObject(o, "line", fi.line);
	else
		cJSON_AddNullToObject(o, "line");
	cJSON_AddItemToObject(o, "module", string_or_null(fi.module));
	return o;
}

static cJSON *row_json(const struct view_row *r, struct symbols *s)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *hist = cJSON_CreateArray();

	cJSON_AddStringToObject(o, "type", lock_type_name(r->type));
	cJSON_AddItemToObject(o, "object", r->n_objects == 1 && r->object ?
			      hex(r->object) : cJSON_CreateNull());
	cJSON_AddNumberToObject(o, "n_objects", r->n_objects);
	cJSON_AddNumberToObject(o, "n_sites", r->n_sites);
	cJSON_AddItemToObject(o, "site", r->n_sites == 1 ?
			      frame_json(s, r->site, 1) : cJSON_CreateNull());
	cJSON_AddNumberToObject(o, "acquisitions", (double)r->c.acquisitions);
	cJSON_AddNumberToObject(o, "contended", (double)r->c.contended);
	cJSON_AddNumberToObject(o, "failed", (double)r->c.failed);
	cJSON_AddNumberToObject(o, "wait_ns", (double)r->c.wait_ns);
	cJSON_AddNumberToObject(o, "max_wait_ns", (double)r->max_wait_ns);
	cJSON_AddNumberToObject(o, "avg_wait_ns", r->c.acquisitions ?
				(double)r->c.wait_ns / (double)r->c.acquisitions : 0);
	cJSON_AddNumberToObject(o, "wait_per_s_ns", r->wait_per_s);
	for (int i = 0; i < HIST_BUCKETS; i++)
		cJSON_AddItemToArray(hist, cJSON_CreateNumber((double)r->c.hist[i]));
	cJSON_AddItemToObject(o, "wait_histogram", hist);
	cJSON_AddItemToObject(o, "stacks", cJSON_CreateArray());
	return o;
}

static cJSON *snapshot_json(const struct app *a, const struct model_query *q,
			    const struct view_row *v, size_t n,
			    const struct model_stats *st)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *rows = cJSON_CreateArray();

	cJSON_AddNumberToObject(o, "schema", SCHEMA_VERSION);
	cJSON_AddStringToObject(o, "qsptop", QSPTOP_VERSION);
	cJSON_AddNumberToObject(o, "pid", a->attach.pid);
	cJSON_AddStringToObject(o, "command", a->client.hello.command);
	cJSON_AddStringToObject(o, "state", a->client.state == TARGET_RUNNING ?
				"running" : "exited");
	cJSON_AddNumberToObject(o, "elapsed_s", app_elapsed_s(a));
	cJSON_AddNumberToObject(o, "interval_s", a->opt.delay_s);
	cJSON_AddStringToObject(o, "coalesce", coalesce_name(q->coalesce));
	cJSON_AddStringToObject(o, "sort", sort_key_name(q->sort));
	if (q->filter && *q->filter)
		cJSON_AddStringToObject(o, "filter", q->filter);
	cJSON_AddNumberToObject(o, "threads", st->threads_seen);
	cJSON_AddNumberToObject(o, "dropped", (double)st->dropped);
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(rows, row_json(&v[i], a->symbols));
	cJSON_AddItemToObject(o, "rows", rows);
	return o;
}

int export_check_path(const char *path, char *err, size_t errlen)
{
	char copy[PATH_MAX];
	struct stat st;

	if (strcmp(path, "-") == 0)
		return 0;
	snprintf(copy, sizeof(copy), "%s", path);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: is a directory", path);
		return -1;
	}
	if (access(dirname(copy), W_OK) < 0 ||
	    (access(path, F_OK) == 0 && access(path, W_OK) < 0)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Write text to a temporary file beside path, then rename it over path. */
static int write_atomic(const char *path, const char *text, char *err,
			size_t errlen)
{
	char tmp[PATH_MAX];
	size_t len = strlen(text);
	int fd, ok;
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp)) {
		snprintf(err, errlen, "%s: path too long", path);
		return -1;
	}
	fd = mkstemp(tmp);
	if (fd < 0 || (f = fdopen(fd, "w")) == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	fchmod(fd, 0644);
	ok = fwrite(text, 1, len, f) == len && fputc('\n', f) != EOF &&
	     fflush(f) == 0 && fsync(fd) == 0;
	if (!ok)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	if (fclose(f) != 0 && ok) {
		ok = 0;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	}
	if (ok && rename(tmp, path) < 0) {
		ok = 0;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	}
	if (!ok)
		unlink(tmp);
	return ok ? 0 : -1;
}

int export_rows(const struct app *a, const struct model_query *q,
		const struct view_row *rows, size_t n,
		const struct model_stats *st, const char *path, char *err,
		size_t errlen)
{
	cJSON *doc = snapshot_json(a, q, rows, n, st);
	char *text = cJSON_Print(doc);
	int rc = 0;

	cJSON_Delete(doc);
	if (text == NULL)
		fatal("out of memory while writing JSON");
	if (strcmp(path, "-") == 0) {
		if (puts(text) == EOF || fflush(stdout) != 0) {
			snprintf(err, errlen, "stdout: %s", strerror(errno));
			rc = -1;
		}
	} else {
		rc = write_atomic(path, text, err, errlen);
	}
	free(text);
	return rc;
}

int export_json(const struct app *a, const struct model_query *q,
		const char *path, char *err, size_t errlen)
{
	struct model_stats st;
	struct view_row *rows;
	size_t n = model_view(a->model, q, &rows);
	int rc;

	model_stats(a->model, &st);
	rc = export_rows(a, q, rows, n, &st, path, err, errlen);
	free(rows);
	return rc;
}
