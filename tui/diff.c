/*
 * Two snapshots compared. Addresses and PIDs change from run to run, so a
 * line is keyed by names: the lock type, the call site as a function
 * (and file:line) or module+offset, and the lock's name; rows of one key
 * are summed in each snapshot, then subtracted.
 */
#include <cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "diff.h"
#include "format.h"
#include "idmap.h"
#include "jsonw.h"
#include "outfile.h"
#include "xalloc.h"

/* The counts of a line in one snapshot. */
struct counts {
	double acquisitions, contended, failed, wait_ns;
};

struct line {
	char *type, *site, *object;
	struct counts old, new;
};

struct lines {
	struct line *v;
	size_t n, cap;
	struct idmap ids;	/* key hash -> index + 1, probing on collisions */
};

/* The snapshot at path, or NULL after saying why. */
static cJSON *load(const char *path)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t len = 0;
	cJSON *j;

	if (!f) {
		warning("--diff: %s: %s", path, strerror(errno));
		return NULL;
	}
	FILE *mem = open_memstream(&text, &len);
	char buf[65536];
	size_t n;

	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		fwrite(buf, 1, n, mem);
	fclose(f);
	fclose(mem);
	j = cJSON_Parse(text);
	free(text);
	if (!j || !cJSON_IsArray(cJSON_GetObjectItem(j, "rows"))) {
		warning("--diff: %s: not a qsptop JSON snapshot", path);
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

static const char *string_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double number_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* A row's call site by name: "fn (file:line)", "fn", "module+0xOFF". */
static void site_name(const cJSON *row, char *buf, size_t size)
{
	const cJSON *site = cJSON_GetObjectItem(row, "site");
	const char *fn, *file, *module, *slash;

	if (!cJSON_IsObject(site)) {
		snprintf(buf, size, "[%.0f call sites]", number_of(row, "n_sites"));
		return;
	}
	fn = string_of(site, "function") ? string_of(site, "function") :
	     string_of(site, "symbol");
	file = string_of(site, "file");
	module = string_of(site, "module");
	if (fn && file && number_of(site, "line") > 0)
		snprintf(buf, size, "%s (%s:%.0f)", fn, file,
			 number_of(site, "line"));
	else if (fn)
		snprintf(buf, size, "%s", fn);
	else
		snprintf(buf, size, "%s+0x%" PRIx64,
			 module ? ((slash = strrchr(module, '/')) ? slash + 1 :
				   module) : "?",
			 (uint64_t)number_of(site, "offset"));
}

static uint64_t key_hash(const char *type, const char *site,
			 const char *object)
{
	const char *parts[3] = { type, site, object };
	uint64_t h = 0xcbf29ce484222325ull;

	for (int i = 0; i < 3; i++)
		for (const char *c = parts[i]; ; c++) {
			h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
			if (!*c)
				break;
		}
	return h;
}

/* The line of key (type, site, object), added if new. */
static struct line *line_of(struct lines *ls, const char *type,
			    const char *site, const char *object)
{
	uint64_t h = key_hash(type, site, object);
	uint32_t id;

	while ((id = idmap_get(&ls->ids, h)) != 0) {
		struct line *l = &ls->v[id - 1];

		if (!strcmp(l->type, type) && !strcmp(l->site, site) &&
		    !strcmp(l->object, object))
			return l;
		h++;
	}
	ls->v = xgrow(ls->v, &ls->cap, ls->n + 1, 64, sizeof(*ls->v));
	ls->v[ls->n] = (struct line){ .type = xstrdup(type),
		.site = xstrdup(site), .object = xstrdup(object) };
	idmap_put(&ls->ids, h, (uint32_t)++ls->n);
	return &ls->v[ls->n - 1];
}

/* Add every row of snapshot j to its line's old or new counts. */
static void add_rows(struct lines *ls, const cJSON *j, bool new)
{
	const cJSON *row;
	char site[1024];

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(j, "rows")) {
		const char *type = string_of(row, "type");
		const char *object = string_of(row, "object_name");
		struct line *l;
		struct counts *c;

		site_name(row, site, sizeof(site));
		l = line_of(ls, type ? type : "?", site, object ? object : "");
		c = new ? &l->new : &l->old;
		c->acquisitions += number_of(row, "acquisitions");
		c->contended += number_of(row, "contended");
		c->failed += number_of(row, "failed");
		c->wait_ns += number_of(row, "wait_ns");
	}
}

static double grown(const struct line *l)
{
	return l->new.wait_ns - l->old.wait_ns;
}

/* Most grown first, most shrunk last; then by key. */
static int by_change(const void *x, const void *y)
{
	const struct line *a = x, *b = y;

	if (grown(a) != grown(b))
		return grown(a) < grown(b) ? 1 : -1;
	return strcmp(a->site, b->site) ? strcmp(a->site, b->site) :
	       strcmp(a->type, b->type) ? strcmp(a->type, b->type) :
	       strcmp(a->object, b->object);
}

/* "+1.23ms", "-950ns", "0ns". */
static void signed_duration(char *buf, size_t size, double ns)
{
	char d[24];

	format_duration(d, sizeof(d), fabs(ns));
	snprintf(buf, size, "%s%s", ns > 0 ? "+" : ns < 0 ? "-" : "", d);
}

static void signed_count(char *buf, size_t size, double n)
{
	char d[24];

	format_count(d, sizeof(d), fabs(n));
	snprintf(buf, size, "%s%s", n > 0 ? "+" : n < 0 ? "-" : "", d);
}

static int table_width(const struct options *o)
{
	const char *env = getenv("COLUMNS");
	struct winsize ws;

	if (o->width)
		return o->width;
	if (env && atoi(env) >= 40)
		return atoi(env);
	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 &&
	    ws.ws_col >= 40)
		return ws.ws_col;
	return 132;
}

/* The batch table: a header, then a line per (type, site, lock). */
static void print_table(const struct options *o, const struct lines *ls)
{
	int site_w = table_width(o) - 13 - 15 - 5 * 10;
	size_t shown = o->rows && o->rows < ls->n ? o->rows : ls->n;

	if (site_w < 20)
		site_w = 20;
	printf("qsptop --diff %s %s - %zu lines, sorted by the change in wait\n",
	       o->diff_old, o->diff_new, ls->n);
	printf("%-12s %-14s %-*s %9s %9s %9s %9s %9s\n", "TYPE", "OBJECT",
	       site_w, "CALL SITE", "WAIT+-", "OLD", "NEW", "ACQ+-", "CONT+-");
	for (size_t i = 0; i < shown; i++) {
		const struct line *l = &ls->v[i];
		char obj[64], site[1024], dw[32], ow[32], nw[32], da[32], dc[32];


		format_fit_right(obj, sizeof(obj), l->object, 14);
		format_fit_right(site, sizeof(site), l->site, site_w);
		signed_duration(dw, sizeof(dw), grown(l));
		format_duration(ow, sizeof(ow), l->old.wait_ns);
		format_duration(nw, sizeof(nw), l->new.wait_ns);
		signed_count(da, sizeof(da), l->new.acquisitions - l->old.acquisitions);
		signed_count(dc, sizeof(dc), l->new.contended - l->old.contended);
		printf("%-12s %-14s %-*s %9s %9s %9s %9s %9s\n", l->type, obj,
		       site_w, site, dw, ow, nw, da, dc);
	}
}

static void counts_json(struct jsonw *w, const char *key,
			const struct counts *c)
{
	jsonw_object(w, key);
	jsonw_number(w, "acquisitions", c->acquisitions);
	jsonw_number(w, "contended", c->contended);
	jsonw_number(w, "failed", c->failed);
	jsonw_number(w, "wait_ns", c->wait_ns);
	jsonw_end(w);
}

/* The comparison as JSON text (malloc'ed). */
static char *diff_json(const struct options *o, const struct lines *ls)
{
	struct jsonw w;

	jsonw_init(&w);
	jsonw_object(&w, NULL);
	jsonw_number(&w, "schema", 1);
	jsonw_string(&w, "qsptop", QSPTOP_VERSION);
	jsonw_string(&w, "old", o->diff_old);
	jsonw_string(&w, "new", o->diff_new);
	jsonw_array(&w, "rows");
	for (size_t i = 0; i < ls->n; i++) {
		const struct line *l = &ls->v[i];
		struct counts d = { l->new.acquisitions - l->old.acquisitions,
				    l->new.contended - l->old.contended,
				    l->new.failed - l->old.failed, grown(l) };

		jsonw_object(&w, NULL);
		jsonw_string(&w, "type", l->type);
		jsonw_string(&w, "site", l->site);
		jsonw_string(&w, "object_name", *l->object ? l->object : NULL);
		counts_json(&w, "old", &l->old);
		counts_json(&w, "new", &l->new);
		counts_json(&w, "change", &d);
		jsonw_end(&w);
	}
	jsonw_end(&w);
	jsonw_end(&w);
	jsonw_raw(&w, "\n");
	return w.text;
}

static int write_json(const struct options *o, const struct lines *ls)
{
	char *text = diff_json(o, ls), err[512];
	int rc = 0;

	if (strcmp(o->json_path, "-") == 0) {
		if (fputs(text, stdout) == EOF || fflush(stdout) != 0) {
			warning("cannot write the diff: stdout: %s", strerror(errno));
			rc = 1;
		}
	} else if (outfile_replace(o->json_path, text, strlen(text), err,
				   sizeof(err)) < 0) {
		warning("cannot write the diff: %s", err);
		rc = 1;
	}
	free(text);
	return rc;
}

int diff_run(const struct options *o)
{
	cJSON *old = load(o->diff_old), *new = old ? load(o->diff_new) : NULL;
	struct lines ls = { 0 };
	int rc = 0;

	if (!old || !new) {
		cJSON_Delete(old);
		return 1;
	}
	add_rows(&ls, old, false);
	add_rows(&ls, new, true);
	idmap_free(&ls.ids);
	qsort(ls.v, ls.n, sizeof(*ls.v), by_change);
	if (o->json_path)
		rc = write_json(o, &ls);
	if (!o->json_path || strcmp(o->json_path, "-") != 0)
		print_table(o, &ls);
	for (size_t i = 0; i < ls.n; i++) {
		free(ls.v[i].type);
		free(ls.v[i].site);
		free(ls.v[i].object);
	}
	free(ls.v);
	cJSON_Delete(old);
	cJSON_Delete(new);
	return rc;
}
