/* Folded stacks (flame graphs): the waited-on stacks, and the holders'. */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "export_impl.h"
#include "procs.h"
#include "xalloc.h"

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
		 fi.module ? fi.module_offset : procs_addr(address));
	text_frame(t, name);
}

/* The leaf of every folded stack: the lock, "mutex@0x55d0c0a8e040". */
static void folded_lock(struct text *t, const struct view_row *r)
{
	if (r->n_objects == 1 && r->object)
		text_printf(t, ";%s@0x%" PRIx64, lock_type_name(r->type),
			    procs_addr(r->object));
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
	text_printf(t, " %" PRIu64 "\n", sv->w.wait_ns);
}

/* The folded stacks of the rows, a line per (row, stack) with a wait. */
static char *folded_text(const struct app *a, struct source *src)
{
	struct text t = { xcalloc(1, 1), 0, 1 };

	for (size_t i = 0; i < src->n; i++) {
		const struct line_drill *l = &src->drill.line[i];

		for (size_t j = 0; j < l->n_stacks; j++)
			if (l->stacks[j].w.wait_ns > 0)
				folded_line(&t, a->symbols, export_source_row(src, i),
					    &l->stacks[j]);
	}
	return t.p;
}

/*
 * The caused wait of line r in folded form, by holder stack (root first,
 * the lock as the leaf); a line with no holder stack captured hangs it
 * under its call site and [no_holder_stack].
 */
static void folded_holders_line(struct text *t, const struct app *a,
				const struct view_row *r)
{
	struct holder_view h[HOLDER_STACKS_MAX];
	size_t n = model_holder_stacks(a->model, r, h, HOLDER_STACKS_MAX);

	if (r->c.calls.caused_wait_ns == 0)
		return;
	for (size_t i = 0; i < n; i++) {
		if (h[i].caused_ns == 0)
			continue;
		for (unsigned j = h[i].depth; j-- > 0;) {
			folded_frame(t, a->symbols, h[i].frames[j]);
			if (j > 0)
				text_printf(t, ";");
		}
		folded_lock(t, r);
		text_printf(t, " %" PRIu64 "\n", h[i].caused_ns);
	}
	if (n > 0)
		return;
	if (r->n_sites == 1)
		folded_frame(t, a->symbols, r->site);
	else
		text_printf(t, "[%u_call_sites]", r->n_sites);
	text_printf(t, ";[no_holder_stack]");
	folded_lock(t, r);
	text_printf(t, " %" PRIu64 "\n", r->c.calls.caused_wait_ns);
}

int export_folded_holders(const struct app *a, const struct model_query *q,
			  const char *path, char *err, size_t errlen)
{
	struct text t = { xcalloc(1, 1), 0, 1 };
	struct view_row *rows = NULL;
	size_t n;
	int rc;

	symbols_settle(a->symbols, EXPORT_WAIT_MS);
	n = model_view(a->model, q, &rows);
	for (size_t i = 0; i < n; i++)
		folded_holders_line(&t, a, &rows[i]);
	free(rows);
	rc = export_write_text(path, t.p, err, errlen);
	free(t.p);
	return rc;
}

char *export_rows_folded(const struct app *a, const struct model_query *q,
			 const struct view_row *rows, size_t n)
{
	struct source src;
	char *text;

	export_source_rows(&src, a, q, rows, n);
	text = folded_text(a, &src);
	export_source_done(&src);
	return text;
}

char *export_table_folded(const struct app *a, const struct model_query *q)
{
	struct source src;
	char *text;

	export_source_table(&src, a, q);
	text = folded_text(a, &src);
	export_source_done(&src);
	return text;
}

int export_folded(const struct app *a, const struct model_query *q,
		  const char *path, char *err, size_t errlen)
{
	char *text;

	symbols_settle(a->symbols, EXPORT_WAIT_MS);
	text = export_table_folded(a, q);
	int rc = export_write_text(path, text, err, errlen);

	free(text);
	return rc;
}
