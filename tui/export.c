/*
 * The JSON snapshot, in cJSON_Print()'s format (export_folded.c writes the
 * folded forms); user-given files are replaced atomically.
 */
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/clock.h"
#include "export.h"
#include "export_impl.h"
#include "field.h"
#include "inject_thread.h"
#include "jsonw.h"
#include "lockset.h"
#include "names.h"
#include "outfile.h"
#include "procs.h"
#include "stuck_text.h"
#include "xalloc.h"

#define SCHEMA_VERSION 1

/* A number as text: "0x55d0c0a8e040". */
static void hex(struct jsonw *w, const char *key, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, procs_addr(v));
	jsonw_string(w, key, buf);
}

/* A line number, null when unknown. */
static void line_json(struct jsonw *w, int line)
{
	if (line > 0)
		jsonw_number(w, "line", line);
	else
		jsonw_null(w, "line");
}

/* Where the frame's function was inlined, innermost first. */
static void inlined_in_json(struct jsonw *w, const struct frame_info *fi)
{
	jsonw_array(w, "inlined_in");
	for (unsigned i = 0; i < fi->n_inlined; i++) {
		jsonw_object(w, NULL);
		jsonw_string(w, "function", fi->inlined_in[i].function);
		jsonw_string(w, "file", fi->inlined_in[i].file);
		line_json(w, fi->inlined_in[i].line);
		jsonw_end(w);
	}
	jsonw_end(w);
}

/*
 * A frame's fields: address, symbol, offset, function, file, line, module
 * and inlined_in.
 */
static void frame_fields(struct jsonw *w, const struct frame_info *fi)
{
	hex(w, "address", fi->address);
	jsonw_string(w, "symbol", fi->symbol);
	jsonw_number(w, "offset", (double)(fi->symbol ? fi->offset :
					   fi->module_offset));
	jsonw_string(w, "function", fi->function);
	jsonw_string(w, "file", fi->file);
	line_json(w, fi->line);
	jsonw_string(w, "module", fi->module);
	inlined_in_json(w, fi);
}

/* One frame, as an object of frame_fields(). */
static void frame_json(struct jsonw *w, const char *key, struct symbols *s,
		       uint64_t address, int is_return)
{
	struct frame_info fi;

	symbols_resolve(s, address, is_return, &fi);
	jsonw_object(w, key);
	frame_fields(w, &fi);
	jsonw_end(w);
}

/*
 * A line's call site, a frame with named_caller: for a site without a
 * symbol, its nearest named caller (names_caller()) and how many frames
 * out it is; else null.
 */
static void site_json(struct jsonw *w, const struct app *a,
		      const struct view_row *r)
{
	struct frame_info fi, caller;
	unsigned depth;

	symbols_resolve(a->symbols, r->site, 1, &fi);
	jsonw_object(w, "site");
	frame_fields(w, &fi);
	if (names_caller(a->symbols, a->model, r, &caller, &depth)) {
		jsonw_object(w, "named_caller");
		frame_fields(w, &caller);
		jsonw_number(w, "depth", depth);
		jsonw_end(w);
	} else {
		jsonw_null(w, "named_caller");
	}
	jsonw_end(w);
}

/* The lock's name and where it comes from (names.h), or nulls. */
static void object_name_json(struct jsonw *w, const struct app *a,
			     const struct view_row *r)
{
	enum name_from from = NAME_NONE;
	char name[512];

	if (r->n_objects == 1 && r->object)
		from = names_object(a->symbols, a->wrappers, a->model,
				    r->object, name, sizeof(name));
	jsonw_string(w, "object_name", from == NAME_NONE ? NULL : name);
	jsonw_string(w, "object_name_from", names_from_word(from));
}

/* One stack: its waits, and frames innermost first; none when not unwound. */
static void stack_json(struct jsonw *w, const struct stack_view *sv,
		       struct symbols *s)
{
	jsonw_object(w, NULL);
	jsonw_number(w, "wait_ns", (double)sv->w.wait_ns);
	jsonw_number(w, "count", (double)sv->w.count);
	jsonw_number(w, "timeouts", (double)sv->w.timeouts);
	jsonw_bool(w, "sampled", sv->stack == PROTO_NO_STACK);
	jsonw_array(w, "frames");
	for (unsigned i = 0; sv->frames && i < sv->depth; i++)
		frame_json(w, NULL, s, sv->frames[i], 1);
	jsonw_end(w);
	jsonw_end(w);
}

/* The line's stacks, heaviest first, as model_row_stacks() gives them. */
static void stacks_json(struct jsonw *w, const struct app *a,
			const struct line_drill *d)
{
	jsonw_array(w, "stacks");
	for (size_t i = 0; i < d->n_stacks; i++)
		stack_json(w, &d->stacks[i], a->symbols);
	jsonw_end(w);
}

/* The threads that waited behind the line: tid, name, count, wait_ns. */
static void threads_json(struct jsonw *w, const struct app *a,
			 const struct line_drill *d)
{
	jsonw_array(w, "threads");
	for (size_t i = 0; i < d->n_threads; i++) {
		const struct thread_view *tv = &d->threads[i];

		jsonw_object(w, NULL);
		jsonw_number(w, "tid", tv->tid);
		jsonw_string(w, "name", app_thread_name(a, tv->tid));
		jsonw_number(w, "pid", procs_pid(tv->proc));
		jsonw_number(w, "count", (double)tv->w.count);
		jsonw_number(w, "timeouts", (double)tv->w.timeouts);
		jsonw_number(w, "wait_ns", (double)tv->w.wait_ns);
		jsonw_end(w);
	}
	jsonw_end(w);
}

/* Sites named in blocked_by and blocking, at most. */
#define BLAME_SITES_MAX 64

/* Frames innermost first, as an array named name. */
static void frames_json(struct jsonw *w, const char *name, struct symbols *s,
			const uint64_t *frames, unsigned depth)
{
	jsonw_array(w, name);
	for (unsigned i = 0; i < depth; i++)
		frame_json(w, NULL, s, frames[i], 1);
	jsonw_end(w);
}

/*
 * The stack a blocked_by holder released the lock from most often (the
 * holder's row on the waiter's lock), or null when none was captured.
 */
static void holder_stack_json(struct jsonw *w, const struct app *a,
			      const struct view_row *waiter,
			      const struct blame_view *b)
{
	struct view_row v = { .site = b->site, .type = (uint8_t)b->type,
			      .object = waiter->object };
	struct holder_view h;

	if (b->site && model_holder_stacks(a->model, &v, &h, 1) == 1)
		frames_json(w, "stack", a->symbols, h.frames, h.depth);
	else
		jsonw_null(w, "stack");
}

/*
 * Where the line's holds were released while others waited: each stack
 * with its releases and the line's caused wait split by them.
 */
static void holder_stacks_json(struct jsonw *w, const struct app *a,
			       const struct view_row *r)
{
	struct holder_view h[HOLDER_STACKS_MAX];
	size_t n = model_holder_stacks(a->model, r, h, HOLDER_STACKS_MAX);

	jsonw_array(w, "holder_stacks");
	for (size_t i = 0; i < n; i++) {
		jsonw_object(w, NULL);
		jsonw_number(w, "releases", (double)h[i].releases);
		jsonw_number(w, "caused_wait_ns", (double)h[i].caused_ns);
		frames_json(w, "frames", a->symbols, h[i].frames, h[i].depth);
		jsonw_end(w);
	}
	jsonw_end(w);
}

/*
 * The holder sites the line's waits were spent behind (blocked_by), or
 * the waiter sites its holds made wait (blocking), heaviest first.
 */
static void blame_json(struct jsonw *w, const struct app *a,
		       const struct view_row *r, bool blocking)
{
	struct blame_view v[BLAME_SITES_MAX];
	size_t n = model_blame(a->model, r, blocking, v, BLAME_SITES_MAX);
	struct frame_info fi;

	jsonw_array(w, blocking ? "blocking" : "blocked_by");
	for (size_t i = 0; i < n; i++) {
		jsonw_object(w, NULL);
		if (v[i].site) {
			symbols_resolve(a->symbols, v[i].site, 1, &fi);
			jsonw_object(w, "site");
			frame_fields(w, &fi);
			jsonw_end(w);
		} else {
			jsonw_null(w, "site");
		}
		/* No site: unknown, but for readers of unknown sites. */
		if (v[i].site || v[i].type == LOCK_RWLOCK_READ)
			jsonw_string(w, "type", lock_type_name(v[i].type));
		else
			jsonw_null(w, "type");
		jsonw_number(w, "wait_ns", (double)v[i].w.wait_ns);
		jsonw_number(w, "count", (double)(v[i].w.count + v[i].w.timeouts));
		if (!blocking)
			holder_stack_json(w, a, r, &v[i]);
		jsonw_end(w);
	}
	jsonw_end(w);
}

/* The collector's memory in the target: what it uses, and its cap. */
static void memory_json(struct jsonw *w, const struct model_stats *st)
{
	jsonw_object(w, "collector_memory");
	jsonw_number(w, "used", (double)st->memory_used);
	jsonw_number(w, "cap", (double)st->memory_cap);
	jsonw_end(w);
}

/* A row's numbers, every field's with a JSON name, in the schema's order. */
static void numbers_json(struct jsonw *w, const struct view_row *r)
{
	for (size_t i = 0; i < field_count(); i++) {
		const struct field *f = field_at(i);

		if (f->json && f->value && f->column.unit == UNIT_PID &&
		    f->value(r) == 0)
			jsonw_null(w, f->json);
		else if (f->json && f->value)
			jsonw_number(w, f->json, f->value(r));
	}
}

/* The lock the holders waited for meanwhile: its row's site and object. */
static void held_lock_json(struct jsonw *w, const struct app *a, uint32_t id)
{
	enum lock_type type;
	uint64_t site, object;
	struct frame_info fi;

	if (id == 0 || !model_row_key(a->model, id - 1, &type, &site, &object)) {
		jsonw_null(w, "lock_wait_site");
		return;
	}
	symbols_resolve(a->symbols, site, 1, &fi);
	jsonw_object(w, "lock_wait_site");
	frame_fields(w, &fi);
	jsonw_end(w);
	jsonw_string(w, "lock_wait_type", lock_type_name(type));
	if (object)
		hex(w, "lock_wait_object", object);
	else
		jsonw_null(w, "lock_wait_object");
}

/* What the holders at the line's sites did while others waited. */
static void while_held_json(struct jsonw *w, const struct app *a,
			    const struct view_row *r)
{
	struct held_view h;

	if (!model_while_held(a->model, r, &h)) {
		jsonw_null(w, "while_held");
		return;
	}
	jsonw_object(w, "while_held");
	jsonw_number(w, "running_ns", (double)h.running_ns);
	jsonw_number(w, "runnable_ns", (double)h.runnable_ns);
	jsonw_object(w, "syscalls");
	for (size_t i = 0; i < h.nsys; i++)
		jsonw_number(w, h.sys[i].nr == PROTO_HELD_OTHER_CALL ? "other" :
			     inject_syscall_name(h.sys[i].nr),
			     (double)h.sys[i].ns);
	jsonw_end(w);
	jsonw_number(w, "lock_wait_ns", (double)h.lock_wait_ns);
	held_lock_json(w, a, h.lock_row);
	jsonw_number(w, "exited_ns", (double)h.exited_ns);
	jsonw_end(w);
}

static void row_json(struct jsonw *w, const struct app *a,
		     const struct view_row *r, const struct line_drill *d)
{
	jsonw_object(w, NULL);
	jsonw_string(w, "type", lock_type_name(r->type));
	jsonw_string(w, "role", role_name(r->role));
	jsonw_string(w, "role_from", role_from_name(r->role_from));
	if (r->n_objects == 1 && r->object)
		hex(w, "object", r->object);
	else
		jsonw_null(w, "object");
	object_name_json(w, a, r);
	jsonw_number(w, "n_objects", r->n_objects);
	jsonw_number(w, "n_sites", r->n_sites);
	jsonw_bool(w, "objects_folded", r->objects_folded);
	if (r->n_sites == 1)
		site_json(w, a, r);
	else
		jsonw_null(w, "site");
	numbers_json(w, r);
	jsonw_array(w, "wait_histogram");
	for (int i = 0; i < HIST_BUCKETS; i++)
		jsonw_number(w, NULL, (double)r->c.hist[i]);
	jsonw_end(w);
	stacks_json(w, a, d);
	threads_json(w, a, d);
	blame_json(w, a, r, false);
	blame_json(w, a, r, true);
	holder_stacks_json(w, a, r);
	while_held_json(w, a, r);
	jsonw_end(w);
}

/*
 * The lock types shown: all of them unless filtered (a role, "locks" or
 * "idle", may be of any type); and the roles shown.
 */
static void types_json(struct jsonw *w, const struct model_query *q)
{
	unsigned set = q->types ? q->types : LOCKSET_ALL;
	bool any = (set & (LOCKSET_LOCKS | LOCKSET_IDLE)) != 0;

	jsonw_array(w, "types");
	for (unsigned t = 0; t < LOCK_TYPE_COUNT; t++) {
		if (any || (set >> t & 1))
			jsonw_string(w, NULL, lock_type_name((enum lock_type)t));
	}
	jsonw_end(w);
	jsonw_array(w, "roles");
	for (unsigned r = ROLE_LOCK; r <= ROLE_IDLE; r++) {
		if ((set & LOCKSET_ALL) ||
		    (set & (r == ROLE_IDLE ? LOCKSET_IDLE : LOCKSET_LOCKS)))
			jsonw_string(w, NULL, role_name((enum role)r));
	}
	jsonw_end(w);
}

/* The waits no hook times, as the header names them (the idle ones left out). */
static void unseen_json(struct jsonw *w, const struct model_stats *st)
{
	jsonw_array(w, "unseen_waits");
	for (size_t i = 0; i < st->n_unseen; i++) {
		if (st->unseen[i].idle)
			continue;
		jsonw_object(w, NULL);
		jsonw_string(w, "kind", st->unseen[i].kind);
		jsonw_number(w, "threads", st->unseen[i].threads);
		jsonw_end(w);
	}
	jsonw_end(w);
}

/*
 * The lock wrappers found from evidence (autowrap.h): where each function
 * starts, as a frame, its length and the distinct callers that showed it.
 */
static void wrappers_found_json(struct jsonw *w, const struct app *a)
{
	jsonw_array(w, "wrappers_found");
	for (size_t i = 0; i < autowrap_count(a->autowrap); i++) {
		struct frame_info fi;
		uint64_t lo, hi;
		unsigned callers;

		autowrap_get(a->autowrap, i, &lo, &hi, &callers);
		symbols_resolve(a->symbols, lo, 0, &fi);
		jsonw_object(w, NULL);
		frame_fields(w, &fi);
		jsonw_number(w, "bytes", (double)(hi - lo));
		jsonw_number(w, "callers", callers);
		jsonw_end(w);
	}
	jsonw_end(w);
}

/* Every process of the table: its PID, command and state. */
static void processes_json(struct jsonw *w, const struct app *a)
{
	jsonw_array(w, "processes");
	for (size_t i = 0; i < app_processes(a); i++) {
		const struct client *c = app_client_const(a, i);

		jsonw_object(w, NULL);
		jsonw_number(w, "pid", app_pid(a, i));
		jsonw_string(w, "command", c->hello.command);
		jsonw_string(w, "state", app_process_state(a, i));
		jsonw_end(w);
	}
	for (size_t i = 0; i < a->nunwatched; i++) {
		jsonw_object(w, NULL);
		jsonw_number(w, "pid", a->unwatched[i]);
		jsonw_null(w, "command");
		jsonw_string(w, "state", "not watched");
		jsonw_end(w);
	}
	jsonw_end(w);
}

/* The snapshot's fields before its rows. */
static void head_json(struct jsonw *w, const struct app *a,
		      const struct model_query *q, const struct model_stats *st)
{
	jsonw_number(w, "schema", SCHEMA_VERSION);
	jsonw_string(w, "qsptop", QSPTOP_VERSION);
	jsonw_number(w, "pid", a->attach.pid);
	jsonw_string(w, "command", a->client.hello.command);
	jsonw_string(w, "state", strcmp(app_state_name(a), "running") == 0 ?
		     "running" : "exited");
	jsonw_number(w, "elapsed_s", app_elapsed_s(a));
	jsonw_number(w, "interval_s", a->opt.delay_s);
	jsonw_string(w, "coalesce", coalesce_name(q->coalesce));
	jsonw_bool(w, "join_processes", q->code != NULL);
	jsonw_string(w, "sort", q->sort->key);
	if (q->filter && *q->filter)
		jsonw_string(w, "filter", q->filter);
	types_json(w, q);
	jsonw_bool(w, "idle_last", !q->mix_idle);
	jsonw_bool(w, "holders", a->opt.holders);
	jsonw_number(w, "threads", st->threads_seen);
	jsonw_number(w, "dropped", (double)st->dropped);
	jsonw_number(w, "folded", (double)st->folded);
	jsonw_number(w, "lock_wait_ns", (double)st->lock_wait_ns);
	jsonw_number(w, "cond_wait_ns", (double)st->cond_wait_ns);
	jsonw_number(w, "lock_wait_per_s_ns", st->lock_wait_per_s);
	jsonw_number(w, "cond_wait_per_s_ns", st->cond_wait_per_s);
	/* The same as cond_*: the waits of idle rows, by their role's name. */
	jsonw_number(w, "idle_wait_ns", (double)st->cond_wait_ns);
	jsonw_number(w, "idle_wait_per_s_ns", st->cond_wait_per_s);
	memory_json(w, st);
	unseen_json(w, st);
	wrappers_found_json(w, a);
	processes_json(w, a);
}

/* One blocked thread of the threads view, as "waiting" lists it. */
static void waiting_one(struct jsonw *w, const struct app *a,
			const struct stuck *st, const struct stuck_thread *t)
{
	char buf[64], name[128];
	const char *holder = stuck_holder_state(st, t, buf, sizeof(buf));

	jsonw_object(w, NULL);
	jsonw_number(w, "tid", t->tid);
	if (t->ns_tid != t->tid)
		jsonw_number(w, "ns_tid", t->ns_tid);
	jsonw_string(w, "name", t->name);
	jsonw_string(w, "type", t->type);
	hex(w, "object", t->object);
	stuck_text_object(name, sizeof(name), a->symbols, t->object);
	jsonw_string(w, "object_name", name);
	if (t->depth)
		frame_json(w, "site", a->symbols, t->stack[0], 1);
	else
		jsonw_null(w, "site");
	jsonw_number(w, "blocked_ns", (double)(clock_now_ms() - t->since_ms) * 1e6);
	if (t->holder || t->holder_exited)
		jsonw_number(w, "held_by", t->holder ? t->holder : t->holder_ns);
	else
		jsonw_null(w, "held_by");
	jsonw_string(w, "holder_state", holder);
	jsonw_array(w, "stack");
	for (unsigned f = 0; f < t->depth; f++)
		frame_json(w, NULL, a->symbols, t->stack[f], 1);
	jsonw_end(w);
	jsonw_end(w);
}

/*
 * The threads view: "waiting", each thread blocked on a lock, and
 * "deadlocks", each cycle's threads and the locks they wait for.
 */
static void stuck_json(struct jsonw *w, const struct app *a,
		       const struct stuck *st)
{
	const struct stuck_thread *t;
	const struct stuck_deadlock *d;
	size_t n = stuck_threads(st, &t), nd = stuck_deadlocks(st, &d);

	jsonw_array(w, "waiting");
	for (size_t i = 0; i < n; i++)
		if (t[i].state == STUCK_LOCK)
			waiting_one(w, a, st, &t[i]);
	jsonw_end(w);
	jsonw_array(w, "deadlocks");
	for (size_t k = 0; k < nd; k++) {
		jsonw_object(w, NULL);
		jsonw_array(w, "tids");
		for (size_t m = 0; m < d[k].n; m++)
			jsonw_number(w, NULL, t[d[k].member[m]].tid);
		jsonw_end(w);
		jsonw_array(w, "objects");
		for (size_t m = 0; m < d[k].n; m++)
			hex(w, NULL, t[d[k].member[m]].object);
		jsonw_end(w);
		jsonw_end(w);
	}
	jsonw_end(w);
}

/*
 * The threads view for the snapshot: the last sample of the outside
 * view, else one taken now of the first process while it runs.
 */
static void threads_view_json(struct jsonw *w, const struct app *a)
{
	struct stuck *st = a->stuck;

	if (st == NULL) {
		st = stuck_new(a->attach.pid, false);
		if (a->attach.pid > 0 && stuck_sample(st, a->symbols))
			app_stuck_waits(a, st);
	}
	if (a->outside[0])
		jsonw_string(w, "outside", a->outside);
	stuck_json(w, a, st);
	if (st != a->stuck)
		stuck_free(st);
}

/* A model stack's frames as an array; [] for PROTO_NO_STACK. */
static void model_stack_json(struct jsonw *w, const struct app *a,
			     const char *key, uint32_t stack)
{
	const uint64_t *frames;
	size_t depth = stack == PROTO_NO_STACK ? 0 :
		       model_stack_frames(a->model, stack, &frames);

	jsonw_array(w, key);
	for (size_t f = 0; f < depth; f++)
		frame_json(w, NULL, a->symbols, frames[f], 1);
	jsonw_end(w);
}

/* One end of a lock-order warning: the lock and where it was taken. */
static void order_end_json(struct jsonw *w, const struct app *a,
			   const char *key, uint64_t object, uint64_t site)
{
	char name[128];

	jsonw_object(w, key);
	hex(w, "object", object);
	stuck_text_object(name, sizeof(name), a->symbols, object);
	jsonw_string(w, "object_name", name);
	frame_json(w, "site", a->symbols, site, 1);
}

/*
 * "lock_order": each pair of locks taken in both orders, the first order
 * seen, and where the reverse took the first lock (and the site that
 * held the second), with its stack when one was captured.
 */
static void lock_order_json(struct jsonw *w, const struct app *a)
{
	const struct lock_order *o;
	size_t n = model_lock_orders(a->model, &o);

	jsonw_array(w, "lock_order");
	for (size_t i = 0; i < n; i++) {
		jsonw_object(w, NULL);
		order_end_json(w, a, "first", o[i].first_object, o[i].first_site);
		jsonw_end(w);
		order_end_json(w, a, "then", o[i].then_object, o[i].then_site);
		model_stack_json(w, a, "stack", o[i].then_stack);
		jsonw_end(w);
		jsonw_object(w, "reversed_at");
		frame_json(w, "site", a->symbols, o[i].rev_site, 1);
		frame_json(w, "holding_site", a->symbols, o[i].rev_held_site, 1);
		model_stack_json(w, a, "stack", o[i].stack);
		jsonw_end(w);
		jsonw_number(w, "count", (double)o[i].count);
		jsonw_end(w);
	}
	jsonw_end(w);
}

/* Rows of a table built at a time, and rows written before sizing the text. */
#define PART_ROWS 1024
#define SAMPLE_ROWS 64


void export_source_rows(struct source *s, const struct app *a,
			const struct model_query *q,
			const struct view_row *rows, size_t n)
{
	memset(s, 0, sizeof(*s));
	s->rows = rows;
	s->n = n;
	model_drill(a->model, q, rows, n, &s->drill);
}

/* The rows of the view of q as it is now. */
void export_source_table(struct source *s, const struct app *a,
			 const struct model_query *q)
{
	memset(s, 0, sizeof(*s));
	s->table = model_table_new(a->model, q);
	s->n = model_table_lines(s->table);
	s->part = xreallocarray(NULL, PART_ROWS, sizeof(*s->part));
	model_table_drill(s->table, &s->drill);
}

/* Row i; rows are asked for in order. */
const struct view_row *export_source_row(struct source *s, size_t i)
{
	if (s->rows)
		return &s->rows[i];
	if (i < s->from || i >= s->from + s->held) {
		s->from = i;
		s->held = model_table_rows(s->table, i, PART_ROWS, s->part);
	}
	return &s->part[i - s->from];
}

void export_source_done(struct source *s)
{
	model_drill_free(&s->drill);
	model_table_free(s->table);
	free(s->part);
}

/*
 * The snapshot as text, a newline at the end. Written as it is built
 * (jsonw.c prints as cJSON_Print() would): a tree of a big table would
 * take gigabytes. Once some rows are written, the text gets the room
 * the rest will take, as a guess, so it seldom moves.
 */
static char *snapshot_text(const struct app *a, const struct model_query *q,
			   struct source *src, const struct model_stats *st)
{
	struct jsonw w;
	size_t start;

	jsonw_init(&w);
	jsonw_object(&w, NULL);
	head_json(&w, a, q, st);
	jsonw_array(&w, "rows");
	start = w.len;
	for (size_t i = 0; i < src->n; i++) {
		if (i == SAMPLE_ROWS)
			jsonw_reserve(&w, (w.len - start) / i * (src->n - i) *
					  9 / 8);
		row_json(&w, a, export_source_row(src, i), &src->drill.line[i]);
	}
	jsonw_end(&w);
	threads_view_json(&w, a);
	lock_order_json(&w, a);
	jsonw_end(&w);
	jsonw_raw(&w, "\n");
	return w.text;
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
	if (access(dirname(copy), W_OK) < 0) {
		outfile_error(path, errno, err, errlen);
		return -1;
	}
	if (access(path, F_OK) == 0 && access(path, W_OK) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Write text to path, or to stdout for "-". */
int export_write_text(const char *path, const char *text, char *err,
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
	struct source src;
	char *text;

	export_source_rows(&src, a, q, rows, n);
	text = snapshot_text(a, q, &src, st);
	export_source_done(&src);
	return text;
}

char *export_table_json(const struct app *a, const struct model_query *q)
{
	struct model_stats st;
	struct source src;
	char *text;

	export_source_table(&src, a, q);
	model_stats(a->model, &st);
	text = snapshot_text(a, q, &src, &st);
	export_source_done(&src);
	return text;
}

int export_json(const struct app *a, const struct model_query *q,
		const char *path, char *err, size_t errlen)
{
	char *text;

	symbols_settle(a->symbols, EXPORT_WAIT_MS);
	text = export_table_json(a, q);
	int rc = export_write_text(path, text, err, errlen);

	free(text);
	return rc;
}
