/*
 * The Prometheus text exposition: rows grouped into series by their
 * labels, the series named by the rules of metrics.h, then each family
 * written whole (HELP, TYPE, its samples).
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "idmap.h"
#include "metrics.h"
#include "procs.h"
#include "xalloc.h"

/* One series: its labels, and the counts of its rows summed. */
struct series {
	char *key;		/* "site\ntype\npid": what groups rows */
	char *site;
	const char *type;
	pid_t pid;		/* 0: of no one process ("other", shared locks) */
	char comm[64];
	struct lock_counts c;
};

struct metrics {
	size_t top;
	char **named;		/* the keys of named series, and of those */
	bool *is_named;		/* summed in "other" (false) */
	size_t nnamed, named_cap;
	struct idmap named_ids;	/* by key hash, probing on collisions */
};

struct metrics *metrics_new(size_t top)
{
	struct metrics *m = xcalloc(1, sizeof(*m));

	m->top = top;
	return m;
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nnamed; i++)
		free(m->named[i]);
	free(m->named);
	free(m->is_named);
	idmap_free(&m->named_ids);
	free(m);
}

static uint64_t key_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* The place of key among the series placed so far: 1 named, 0 other, -1 none. */
static int placed(const struct metrics *m, const char *key)
{
	uint64_t h = key_hash(key);
	uint32_t id;

	while ((id = idmap_get(&m->named_ids, h)) != 0) {
		if (strcmp(m->named[id - 1], key) == 0)
			return m->is_named[id - 1];
		h++;
	}
	return -1;
}

static void place(struct metrics *m, const char *key, bool named)
{
	uint64_t h = key_hash(key);

	while (idmap_get(&m->named_ids, h) != 0)
		h++;
	m->named = xgrow(m->named, &m->named_cap, m->nnamed + 1, 64,
			 sizeof(*m->named));
	m->is_named = xreallocarray(m->is_named, m->named_cap,
				    sizeof(*m->is_named));
	m->named[m->nnamed] = xstrdup(key);
	m->is_named[m->nnamed++] = named;
	idmap_put(&m->named_ids, h, (uint32_t)m->nnamed);
}

/* How many of the series placed are named. */
static size_t named_count(const struct metrics *m)
{
	size_t n = 0;

	for (size_t i = 0; i < m->nnamed; i++)
		n += m->is_named[i];
	return n;
}

/* "function (file:line)", "function", "module+0xOFFSET" or "0xADDRESS". */
static char *site_text(struct symbols *s, uint64_t site)
{
	const char *name, *slash;
	struct frame_info fi;
	char buf[1024];

	symbols_resolve(s, site, 1, &fi);
	name = fi.function ? fi.function : fi.symbol;
	if (name && fi.file && fi.line > 0)
		snprintf(buf, sizeof(buf), "%s (%s:%d)", name, fi.file, fi.line);
	else if (name)
		snprintf(buf, sizeof(buf), "%s", name);
	else if (fi.module && (slash = strrchr(fi.module, '/')) != NULL)
		snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, slash + 1,
			 fi.module_offset);
	else
		snprintf(buf, sizeof(buf), "0x%" PRIx64, procs_addr(site));
	return xstrdup(buf);
}

/* The command name of process index proc: its program's base name. */
static void comm_of(const struct app *a, unsigned proc, char *buf,
		    size_t size)
{
	buf[0] = '\0';
	for (size_t i = 0; i < app_processes(a); i++) {
		const struct client *c = app_client_const(a, i);
		const char *cmd = c->hello.command, *slash;
		size_t len = strcspn(cmd, " ");

		if (c->proc != proc)
			continue;
		slash = memrchr(cmd, '/', len);
		if (slash)
			len -= (size_t)(slash + 1 - cmd), cmd = slash + 1;
		snprintf(buf, size, "%.*s", (int)len, cmd);
	}
}

static int by_key(const void *x, const void *y)
{
	return strcmp(((const struct series *)x)->key,
		      ((const struct series *)y)->key);
}

static int by_wait(const void *x, const void *y)
{
	const struct series *a = x, *b = y;

	if (a->c.calls.wait_ns != b->c.calls.wait_ns)
		return a->c.calls.wait_ns < b->c.calls.wait_ns ? 1 : -1;
	return strcmp(a->key, b->key);
}

/* The rows' series, one per key, heaviest wait first; how many. */
static size_t group_rows(const struct app *a, const struct ledger_view *v,
			 struct series **out)
{
	struct series *s = xreallocarray(NULL, v->n ? v->n : 1, sizeof(*s));
	size_t n = 0;

	for (size_t i = 0; i < v->n; i++) {
		const struct view_row *r = &v->rows[i];
		struct series *e = &s[i];
		char key[1200];

		memset(e, 0, sizeof(*e));
		e->site = site_text(a->symbols, r->site);
		e->type = lock_type_name(r->type);
		e->pid = r->procs_mixed ? 0 : procs_pid(r->proc);
		if (e->pid)
			comm_of(a, r->proc, e->comm, sizeof(e->comm));
		e->c = r->c;
		snprintf(key, sizeof(key), "%s\n%s\n%d", e->site, e->type,
			 (int)e->pid);
		e->key = xstrdup(key);
	}
	qsort(s, v->n, sizeof(*s), by_key);
	for (size_t i = 0; i < v->n; i++) {
		if (n && strcmp(s[n - 1].key, s[i].key) == 0) {
			lock_counts_add(&s[n - 1].c, &s[i].c);
			free(s[i].key);
			free(s[i].site);
		} else {
			s[n++] = s[i];
		}
	}
	qsort(s, n, sizeof(*s), by_wait);
	*out = s;
	return n;
}

/*
 * Name the series not placed yet while there is room, heaviest first;
 * the others go to "other" for good. Then fold them in: the series of
 * "other", one per type, replace them. Returns how many remain.
 */
static size_t fold_other(struct metrics *m, struct series *s, size_t n)
{
	size_t named = named_count(m), k = 0;
	struct series other[LOCK_TYPE_COUNT] = { 0 };
	bool any[LOCK_TYPE_COUNT] = { false };

	for (size_t i = 0; i < n; i++) {
		int p = placed(m, s[i].key);

		if (p < 0) {
			p = named < m->top;
			named += (size_t)p;
			place(m, s[i].key, p);
		}
		if (p) {
			s[k++] = s[i];
			continue;
		}
		for (unsigned t = 0; t < LOCK_TYPE_COUNT; t++) {
			if (strcmp(lock_type_name((enum lock_type)t), s[i].type))
				continue;
			lock_counts_add(&other[t].c, &s[i].c);
			other[t].type = s[i].type;
			any[t] = true;
		}
		free(s[i].key);
		free(s[i].site);
	}
	for (unsigned t = 0; t < LOCK_TYPE_COUNT; t++) {
		if (!any[t])
			continue;
		other[t].site = xstrdup("other");
		other[t].key = xstrdup("other");
		s[k++] = other[t];
	}
	return k;
}

/* A label value with \, " and newlines escaped. */
static void label_value(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

/* {site="...",type="...",pid="...",comm="..."} and extra ("le=..."), if any. */
static void labels(FILE *f, const struct series *s, const char *extra)
{
	fputs("{site=\"", f);
	label_value(f, s->site);
	fprintf(f, "\",type=\"%s\"", s->type);
	if (s->pid) {
		fprintf(f, ",pid=\"%d\",comm=\"", (int)s->pid);
		label_value(f, s->comm);
		fputc('"', f);
	}
	if (extra)
		fprintf(f, ",%s", extra);
	fputc('}', f);
}

static void family(FILE *f, const char *name, const char *type,
		   const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Nanoseconds as seconds, exactly. */
static void seconds(FILE *f, uint64_t ns)
{
	fprintf(f, "%" PRIu64 ".%09" PRIu64, ns / 1000000000, ns % 1000000000);
}

/*
 * One counter family: a sample per series of the count at offset, or of
 * the nanoseconds there as seconds (a *_seconds_total family).
 */
static void counter(FILE *f, const struct series *s, size_t n,
		    const char *name, const char *help, size_t offset,
		    bool in_seconds)
{
	family(f, name, "counter", help);
	for (size_t i = 0; i < n; i++) {
		uint64_t v;

		memcpy(&v, (const char *)&s[i].c.calls + offset, sizeof(v));
		fputs(name, f);
		labels(f, &s[i], NULL);
		fputc(' ', f);
		if (in_seconds)
			seconds(f, v);
		else
			fprintf(f, "%" PRIu64, v);
		fputc('\n', f);
	}
}

/* The wait histogram: bucket b holds waits under 2^(b+1) ns. */
static void histogram(FILE *f, const struct series *s, size_t n)
{
	const char *name = "qsptop_lock_wait_seconds";

	family(f, name, "histogram", "Waits for a lock, by length.");
	for (size_t i = 0; i < n; i++) {
		uint64_t sum = 0;
		char le[48];

		for (unsigned b = 0; b < HIST_BUCKETS; b++) {
			sum += s[i].c.hist[b];
			if (b == HIST_BUCKETS - 1)
				snprintf(le, sizeof(le), "le=\"+Inf\"");
			else
				snprintf(le, sizeof(le), "le=\"%.10g\"",
					 (double)(UINT64_C(2) << b) / 1e9);
			fprintf(f, "%s_bucket", name);
			labels(f, &s[i], le);
			fprintf(f, " %" PRIu64 "\n", sum);
		}
		fprintf(f, "%s_sum", name);
		labels(f, &s[i], NULL);
		fputc(' ', f);
		seconds(f, s[i].c.calls.wait_ns);
		fprintf(f, "\n%s_count", name);
		labels(f, &s[i], NULL);
		fprintf(f, " %" PRIu64 "\n", sum);
	}
}

/*
 * The holders' counters. The hold time is that of the holds timed (a
 * sample, hooks.c), not an estimate over every hold: an estimate could
 * go down as the sample's average moves, a counter must not.
 */
static void hold_totals(FILE *f, const struct series *s, size_t n)
{
	counter(f, s, n, "qsptop_lock_hold_seconds_total",
		"Time the lock was held, of the holds timed (a sample).",
		offsetof(struct lock_calls, hold_ns), true);
	counter(f, s, n, "qsptop_lock_holds_timed_total",
		"Holds timed: the sample qsptop_lock_hold_seconds_total covers.",
		offsetof(struct lock_calls, holds_timed), false);
	counter(f, s, n, "qsptop_lock_caused_wait_seconds_total",
		"Time other threads waited behind holds taken here.",
		offsetof(struct lock_calls, caused_wait_ns), true);
}

/* The series key of a wait in progress, as group_rows() makes them. */
static char *wait_key(const struct app *a, const struct model_wait *w,
		      const char **type)
{
	enum lock_type t;
	uint64_t site, object;
	char key[1200], *text;

	if (!model_row_key(a->model, w->row, &t, &site, &object))
		return NULL;
	*type = lock_type_name(t);
	text = site_text(a->symbols, site);
	snprintf(key, sizeof(key), "%s\n%s\n%d", text, *type,
		 (int)procs_pid(procs_of(site)));
	free(text);
	return xstrdup(key);
}

/* Whether key is that of a named series (not "other"). */
static bool named_series(const struct series *s, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s[i].key, key) == 0)
			return strcmp(key, "other") != 0;
	return false;
}

/* Threads in a lock wait now, per series (a wait counts before it ends). */
static void waiting_threads(FILE *f, const struct app *a,
			    const struct series *s, size_t n)
{
	const char *name = "qsptop_lock_waiting_threads";
	const struct model_wait *w;
	size_t nw = model_waits(a->model, &w);
	char **keys = xcalloc(nw ? nw : 1, sizeof(*keys));
	const char **types = xcalloc(nw ? nw : 1, sizeof(*types));

	for (size_t k = 0; k < nw; k++)
		keys[k] = wait_key(a, &w[k], &types[k]);
	family(f, name, "gauge", "Threads blocked on a lock now.");
	for (size_t i = 0; i < n; i++) {
		bool other = strcmp(s[i].key, "other") == 0;
		unsigned count = 0;

		for (size_t k = 0; k < nw; k++)
			count += keys[k] && (other ?
				 strcmp(types[k], s[i].type) == 0 &&
				 !named_series(s, n, keys[k]) :
				 strcmp(keys[k], s[i].key) == 0);
		fputs(name, f);
		labels(f, &s[i], NULL);
		fprintf(f, " %u\n", count);
	}
	for (size_t k = 0; k < nw; k++)
		free(keys[k]);
	free(keys);
	free(types);
}

/* qsptop's own health: the target up, events dropped, collector memory. */
static void health(FILE *f, const struct app *a)
{
	struct model_stats st;

	app_stats(a, &st);
	family(f, "qsptop_up", "gauge", "1 while the watched process runs.");
	fprintf(f, "qsptop_up %d\n",
		strcmp(app_state_name(a), "running") == 0);
	family(f, "qsptop_dropped_total", "counter",
	       "Lock events the collector could not record.");
	fprintf(f, "qsptop_dropped_total %" PRIu64 "\n", st.dropped);
	family(f, "qsptop_collector_memory_bytes", "gauge",
	       "Memory the collector uses in the target.");
	fprintf(f, "qsptop_collector_memory_bytes %" PRIu64 "\n", st.memory_used);
	family(f, "qsptop_collector_memory_limit_bytes", "gauge",
	       "The cap on the collector's memory (--max-memory).");
	fprintf(f, "qsptop_collector_memory_limit_bytes %" PRIu64 "\n",
		st.memory_cap);
}

char *metrics_text(struct metrics *m, const struct app *a,
		   const struct ledger_view *v)
{
	struct series *s;
	size_t n, len;
	char *text = NULL;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		fatal("cannot build the metrics: out of memory");
	n = group_rows(a, v, &s);
	n = fold_other(m, s, n);
	counter(f, s, n, "qsptop_lock_acquisitions_total",
		"Acquisitions of a lock at a call site.",
		offsetof(struct lock_calls, acquisitions), false);
	counter(f, s, n, "qsptop_lock_contended_total",
		"Acquisitions that waited for the lock.",
		offsetof(struct lock_calls, contended), false);
	counter(f, s, n, "qsptop_lock_failed_total",
		"Busy trylocks and timed-out waits.",
		offsetof(struct lock_calls, failed), false);
	counter(f, s, n, "qsptop_lock_wait_seconds_total",
		"Time threads waited for a lock.",
		offsetof(struct lock_calls, wait_ns), true);
	hold_totals(f, s, n);
	histogram(f, s, n);
	waiting_threads(f, a, s, n);
	health(f, a);
	fclose(f);
	for (size_t i = 0; i < n; i++) {
		free(s[i].key);
		free(s[i].site);
	}
	free(s);
	return text;
}
