/*
 * The JSON snapshot, built with cJSON, and the waited-on stacks in folded
 * form (flame graphs); user-given files are replaced atomically.
 */
#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export.h"
#include "outfile.h"
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

/* One stack: its waits, and frames innermost first; none when not unwound. */
static cJSON *stack_json(const struct stack_view *sv, struct symbols *s)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *frames = cJSON_CreateArray();

	cJSON_AddNumberToObject(o, "wait_ns", (double)sv->wait_ns);
	cJSON_AddNumberToObject(o, "count", (double)sv->count);
	cJSON_AddBoolToObject(o, "sampled", sv->stack == PROTO_NO_STACK);
	for (unsigned i = 0; sv->frames && i < sv->depth; i++)
		cJSON_AddItemToArray(frames, frame_json(s, sv->frames[i], 1));
	cJSON_AddItemToObject(o, "frames", frames);
	return o;
}

/* The line's stacks, heaviest first, as model_row_stacks() gives them. */
static cJSON *stacks_json(const struct app *a, const struct model_query *q,
			  const struct view_row *r)
{
	cJSON *arr = cJSON_CreateArray();
	struct stack_view *sv;
	size_t n = model_row_stacks(a->model, q, r, &sv);

	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, stack_json(&sv[i], a->symbols));
	free(sv);
	return arr;
}

/* The threads that waited behind the line: tid, count, wait_ns. */
static cJSON *threads_json(const struct app *a, const struct model_query *q,
			   const struct view_row *r)
{
	cJSON *arr = cJSON_CreateArray();
	struct thread_view *tv;
	size_t n = model_row_threads(a->model, q, r, &tv);

	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "tid", tv[i].tid);
		cJSON_AddNumberToObject(o, "count", (double)tv[i].count);
		cJSON_AddNumberToObject(o, "wait_ns", (double)tv[i].wait_ns);
		cJSON_AddItemToArray(arr, o);
	}
	free(tv);
	return arr;
}

/* The collector's memory in the target: what it uses, and its cap. */
static cJSON *memory_json(const struct model_stats *st)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "used", (double)st->memory_used);
	cJSON_AddNumberToObject(o, "cap", (double)st->memory_cap);
	return o;
}

static cJSON *row_json(const struct app *a, const struct model_query *q,
		       const struct view_row *r)
{
	struct symbols *s = a->symbols;
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
	cJSON_AddItemToObject(o, "stacks", stacks_json(a, q, r));
	cJSON_AddItemToObject(o, "threads", threads_json(a, q, r));
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
	cJSON_AddNumberToObject(o, "folded", (double)st->folded);
	cJSON_AddItemToObject(o, "collector_memory", memory_json(st));
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(rows, row_json(a, q, &v[i]));
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

/* Write text to path, or to stdout for "-". */
static int write_text(const char *path, const char *text, char *err,
		      size_t errlen)
{
	if (strcmp(path, "-") != 0)
		return outfile_replace(path, text, strlen(text), err, errlen);
	if (fputs(text, stdout) == EOF || fflush(stdout) != 0) {
		snprintf(err, errlen, "stdout: %s", strerror(errno));
		return -1;
	}
	return 0;
}

char *export_rows_json(const struct app *a, const struct model_query *q,
		       const struct view_row *rows, size_t n,
		       const struct model_stats *st)
{
	cJSON *doc = snapshot_json(a, q, rows, n, st);
	char *text = cJSON_Print(doc);
	size_t len;

	cJSON_Delete(doc);
	if (text == NULL)
		fatal("out of memory while writing JSON");
	len = strlen(text);
	text = xrealloc(text, len + 2);
	memcpy(text + len, "\n", 2);
	return text;
}

int export_json(const struct app *a, const struct model_query *q,
		const char *path, char *err, size_t errlen)
{
	struct model_stats st;
	struct view_row *rows;
	size_t n = model_view(a->model, q, &rows);
	char *text;
	int rc;

	model_stats(a->model, &st);
	text = export_rows_json(a, q, rows, n, &st);
	rc = write_text(path, text, err, errlen);
	free(text);
	free(rows);
	return rc;
}

/* A growing string. */
struct text {
	char *p;
	size_t len, cap;
};

static void text_printf(struct text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void text_printf(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (t->len + (size_t)n + 1 > t->cap) {
		t->cap = (t->len + (size_t)n + 1) * 2;
		t->p = xrealloc(t->p, t->cap);
	}
	va_start(ap, fmt);
	vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	t->len += (size_t)n;
}

/* Append a frame name with what would split it (' ', ';') made '_'. */
static void text_frame(struct text *t, const char *name)
{
	size_t from = t->len;

	text_printf(t, "%s", name);
	for (size_t i = from; i < t->len; i++)
		if (t->p[i] == ';' || isspace((unsigned char)t->p[i]))
			t->p[i] = '_';
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* A frame of a folded stack: function, module+0xoffset or 0xaddress. */
static void folded_frame(struct text *t, struct symbols *s, uint64_t address)
{
	struct frame_info fi;
	char name[64];

	symbols_resolve(s, address, 1, &fi);
	if (fi.symbol) {
		text_frame(t, fi.symbol);
		return;
	}
	if (fi.module)
		text_frame(t, base_name(fi.module));
	snprintf(name, sizeof(name), fi.module ? "+0x%" PRIx64 : "0x%" PRIx64,
		 fi.module ? fi.module_offset : address);
	text_frame(t, name);
}

/* The leaf of every folded stack: the lock, "mutex@0x55d0c0a8e040". */
static void folded_lock(struct text *t, const struct view_row *r)
{
	if (r->n_objects == 1 && r->object)
		text_printf(t, ";%s@0x%" PRIx64, lock_type_name(r->type), r->object);
	else
		text_printf(t, ";%s", lock_type_name(r->type));
}

/*
 * One folded line: the frames root first, the lock as the leaf, then the
 * wait. Waits not unwound hang under the line's call site.
 */
static void folded_line(struct text *t, struct symbols *s,
			const struct view_row *r, const struct stack_view *sv)
{
	if (sv->frames == NULL) {
		if (r->n_sites == 1)
			folded_frame(t, s, r->site);
		else
			text_printf(t, "[%u_call_sites]", r->n_sites);
		text_printf(t, ";[not_unwound]");
	}
	for (unsigned i = sv->frames ? sv->depth : 0; i-- > 0;) {
		folded_frame(t, s, sv->frames[i]);
		if (i > 0)
			text_printf(t, ";");
	}
	folded_lock(t, r);
	text_printf(t, " %" PRIu64 "\n", sv->wait_ns);
}

char *export_rows_folded(const struct app *a, const struct model_query *q,
			 const struct view_row *rows, size_t n)
{
	struct text t = { xcalloc(1, 1), 0, 1 };

	for (size_t i = 0; i < n; i++) {
		struct stack_view *sv;
		size_t k = model_row_stacks(a->model, q, &rows[i], &sv);

		for (size_t j = 0; j < k; j++)
			if (sv[j].wait_ns > 0)
				folded_line(&t, a->symbols, &rows[i], &sv[j]);
		free(sv);
	}
	return t.p;
}

int export_folded(const struct app *a, const struct model_query *q,
		  const char *path, char *err, size_t errlen)
{
	struct view_row *rows;
	size_t n = model_view(a->model, q, &rows);
	char *text = export_rows_folded(a, q, rows, n);
	int rc = write_text(path, text, err, errlen);

	free(text);
	free(rows);
	return rc;
}
