/*
 * Deciding the roles of a run's rows, and the config file that keeps the
 * user's choices per program: lines "PROGRAM lock|idle FUNCTION", later
 * lines winning, '#' comments. Choices are appended, so nothing in the
 * file is ever lost; a malformed file is reported and neither read nor
 * written.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/hash.h"
#include "app.h"
#include "names.h"
#include "roles.h"
#include "xalloc.h"

/* The file of the user's choices, in buf; false without a home. */
static bool config_path(char *buf, size_t size, bool make_dir)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	int n;

	if (xdg && xdg[0] == '/')
		n = snprintf(buf, size, "%s/qsptop", xdg);
	else if (home && home[0])
		n = snprintf(buf, size, "%s/.config/qsptop", home);
	else
		return false;
	if (n < 0 || (size_t)n >= size)
		return false;
	if (make_dir) {
		char parent[4096];

		snprintf(parent, sizeof(parent), "%.*s", n - 7, buf);
		mkdir(parent, 0700);
		mkdir(buf, 0700);
	}
	return snprintf(buf + n, size - (size_t)n, "/roles") < (int)(size - (size_t)n);
}

/* The watched program's name: the base name of its command's first word. */
static void program_name(const struct app *a, char *buf, size_t size)
{
	const char *cmd = a->client.hello.command;
	size_t len = strcspn(cmd, " ");
	const char *slash = memrchr(cmd, '/', len);
	const char *base = slash ? slash + 1 : cmd;

	snprintf(buf, size, "%.*s", (int)(cmd + len - base), base);
}

/* Parse one line: "PROGRAM lock|idle FUNCTION"; false when malformed. */
static bool parse_line(char *line, char **prog, enum role *role, char **name)
{
	char *r, *end;

	line[strcspn(line, "\n")] = '\0';
	*prog = line + strspn(line, " \t");
	if (**prog == '\0' || **prog == '#') {
		*prog = NULL;
		return true;
	}
	r = *prog + strcspn(*prog, " \t");
	if (*r == '\0')
		return false;
	*r++ = '\0';
	r += strspn(r, " \t");
	end = r + strcspn(r, " \t");
	if (*end == '\0')
		return false;
	*end++ = '\0';
	*name = end + strspn(end, " \t");
	if ((strcmp(r, "lock") != 0 && strcmp(r, "idle") != 0) ||
	    **name == '\0')
		return false;
	*role = r[0] == 'i' ? ROLE_IDLE : ROLE_LOCK;
	return true;
}

/* Add the file's choices for this program to the rules, or say why not. */
static void config_load(struct app *a, struct role_rules *rules)
{
	char path[4096], prog[256], line[1024], *p, *name;
	struct role_rules *mine = role_rules_new();
	unsigned lineno = 0;
	enum role role;
	FILE *f;

	if (!config_path(path, sizeof(path), false) ||
	    (f = fopen(path, "r")) == NULL)
		goto out;
	program_name(a, prog, sizeof(prog));
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (!parse_line(line, &p, &role, &name)) {
			snprintf(a->roles_error, sizeof(a->roles_error),
				 "%.400s:%u: expected 'PROGRAM lock|idle FUNCTION'; "
				 "file ignored", path, lineno);
			a->roles_bad = true;
			break;
		}
		if (p && strcmp(p, prog) == 0)
			role_rules_add(mine, name, role);
	}
	fclose(f);
out:
	if (!a->roles_bad)
		role_rules_append(rules, mine);
	role_rules_free(mine);
}

/* The rules of this run: --idle and --lock, then the file's (which win). */
static void rules_build(struct app *a)
{
	a->roles = role_rules_new();
	for (size_t i = 0; i < a->opt.nroles; i++)
		role_rules_add(a->roles, a->opt.roles[i].glob,
			       a->opt.roles[i].role);
	config_load(a, a->roles);
	a->roles_gen++;
}

/* How a row was named: by its site's own symbol, its caller's, its address. */
enum row_naming { NAMED_NOT, NAMED, NAMED_BY_CALLER, NAMED_BY_ADDRESS };

/*
 * The name rules see for a row: its site's function; without one, its
 * nearest named caller; without one (yet: the caller comes with the
 * row's stacks), "module+0xOFFSET".
 */
static enum row_naming row_name(struct app *a, uint32_t id, uint64_t site,
				char *buf, size_t size)
{
	struct view_row r = { .site = site, .row_id = id, .n_sites = 1,
			      .n_objects = 1 };
	struct frame_info fi, caller;
	unsigned depth;
	const char *slash;

	if (!symbols_resolve(a->symbols, site, 1, &fi))
		return NAMED_NOT;
	if (fi.symbol) {
		snprintf(buf, size, "%s", fi.symbol);
	} else if (names_caller(a->symbols, a->model, &r, &caller, &depth)) {
		snprintf(buf, size, "%s", caller.symbol);
		return NAMED_BY_CALLER;
	} else if (fi.module) {
		slash = strrchr(fi.module, '/');
		snprintf(buf, size, "%s+0x%" PRIx64, slash ? slash + 1 : fi.module,
			 fi.module_offset);
		return NAMED_BY_ADDRESS;
	} else {
		return NAMED_NOT;
	}
	return NAMED;
}

/* The heuristic's verdict on a row not decided by name; false for none. */
static bool row_guess(struct app *a, uint32_t id, struct role_input *in,
		      enum role *role)
{
	if (!role_guess_possible(&in->e) ||
	    !model_role_input(a->model, id, true, in))
		return false;
	in->e.elapsed_s = app_elapsed_s(a);
	return role_guess(&in->e, role);
}

/*
 * What the rules say of a site named by its own symbol or by its address
 * (named), kept for the rules' generation gen: the many rows of one site
 * (one per lock) are matched once. Direct-mapped: a site that lost its
 * slot is matched again.
 */
struct site_verdict {
	uint64_t site;
	uint32_t gen;
	bool matched;
	uint8_t named;		/* enum row_naming: NAMED or NAMED_BY_ADDRESS */
	uint8_t role;
	uint8_t from;
};

#define VERDICTS 4096

/*
 * Whether a rule names row id's role (in *role, *from), and in *gen the
 * generation to judge it by: ~roles_gen for a row named by its address,
 * so that it is judged again once its stacks may name its caller.
 */
static bool rule_of(struct app *a, uint32_t id, uint64_t site,
		    enum role *role, enum role_from *from, uint32_t *gen)
{
	struct site_verdict *v;
	enum row_naming named;
	char name[512];
	bool matched, hit;

	if (a->role_verdicts == NULL)
		a->role_verdicts = xcalloc(VERDICTS, sizeof(*v));
	v = &a->role_verdicts[hash_fast(site) % VERDICTS];
	hit = v->site == site && v->gen == a->roles_gen;
	*gen = a->roles_gen;
	/* By address, a row may yet be named by its caller: look again. */
	named = hit && v->named == NAMED ? NAMED :
		row_name(a, id, site, name, sizeof(name));
	if (named == NAMED_BY_ADDRESS)
		*gen = ~a->roles_gen;
	if (hit && v->named == named) {
		*role = (enum role)v->role;
		*from = (enum role_from)v->from;
		return v->matched;
	}
	matched = named != NAMED_NOT && role_by_name(a->roles, name, role, from);
	if (named == NAMED || named == NAMED_BY_ADDRESS)
		*v = (struct site_verdict){ site, a->roles_gen, matched,
					    (uint8_t)named,
					    matched ? (uint8_t)*role : 0,
					    matched ? (uint8_t)*from : 0 };
	return matched;
}

/*
 * Decide the role of one row. A row named by its address is judged
 * again (its generation marked ~roles_gen) once it has waited, as its
 * stacks may name its caller by then.
 */
static void row_decide(struct app *a, uint32_t id, struct role_input *in)
{
	enum role role;
	enum role_from from;

	if (in->gen != a->roles_gen) {
		uint32_t gen;

		if (rule_of(a, id, in->site, &role, &from, &gen)) {
			model_set_role(a->model, id, role, from, gen);
			return;
		}
		if (in->from == ROLE_FROM_USER || in->from == ROLE_FROM_RULE) {
			in->from = ROLE_FROM_TYPE;
			model_set_role(a->model, id, role_of_type(in->e.type),
				       ROLE_FROM_TYPE, gen);
		} else {
			model_set_role(a->model, id, in->role, in->from, gen);
		}
	}
	/* A heuristic verdict stays: the evidence for it does not go away. */
	if (in->from == ROLE_FROM_TYPE && row_guess(a, id, in, &role))
		model_set_role(a->model, id, role, ROLE_FROM_HEURISTIC,
			       a->roles_gen);
}

/* Decide row id's role again if anything it depends on may have changed. */
static void row_update(struct app *a, uint32_t id)
{
	struct role_input in;

	if (!model_role_input(a->model, id, false, &in))
		return;
	if (in.gen == a->roles_gen && in.from != ROLE_FROM_TYPE)
		return;
	/* Named by address and still no wait: no stack to name it. */
	if (in.gen == ~a->roles_gen && in.e.c.contended + in.e.c.timeouts == 0)
		return;
	row_decide(a, id, &in);
}

/*
 * The rows defined or that waited since the last call, or all of them
 * when the rules or the names changed: a refresh costs the rows that
 * waited.
 */
void roles_update(struct app *a)
{
	unsigned sg = symbols_generation(a->symbols), gen;
	uint32_t *ids;
	size_t n;

	if (!a->client.have_hello)
		return;
	if (a->roles == NULL)
		rules_build(a);
	if (sg != a->roles_symbols) {
		a->roles_symbols = sg;
		a->roles_gen++;
	}
	gen = a->roles_gen;
	n = model_take_role_dirty(a->model, &ids);
	if (gen == a->roles_swept) {
		for (size_t i = 0; i < n; i++)
			row_update(a, ids[i]);
		return;
	}
	a->roles_swept = gen;
	n = model_row_ids(a->model);
	for (uint32_t id = 0; id < n; id++)
		row_update(a, id);
}

/* Append a choice to the config file; false, with why in msg, if not. */
static bool config_append(struct app *a, const char *name, enum role role,
			  char *msg, size_t size)
{
	char path[4096], prog[256];
	FILE *f;

	if (a->roles_bad) {
		snprintf(msg, size, "role not saved: the config file is malformed");
		return false;
	}
	if (!config_path(path, sizeof(path), true) ||
	    (f = fopen(path, "a")) == NULL) {
		snprintf(msg, size, "role not saved: %s", strerror(errno));
		return false;
	}
	program_name(a, prog, sizeof(prog));
	fprintf(f, "%s %s %s\n", prog, role_name(role), name);
	return fclose(f) == 0;
}

bool roles_flip(struct app *a, const struct view_row *r, char *msg,
		size_t size)
{
	enum role role = r->role == ROLE_IDLE ? ROLE_LOCK : ROLE_IDLE;
	char name[512];

	if (r->n_sites != 1 || r->site == 0 ||
	    row_name(a, r->row_id, r->site, name, sizeof(name)) == NAMED_NOT) {
		snprintf(msg, size, "role: this row has no call site to name");
		return false;
	}
	if (a->roles == NULL)
		rules_build(a);
	role_rules_add(a->roles, name, role);
	a->roles_gen++;
	roles_update(a);
	if (!config_append(a, name, role, msg, size))
		return true;
	snprintf(msg, size, "%s: %s from now on (saved)", name, role_name(role));
	return true;
}

const char *roles_take_error(struct app *a)
{
	static char taken[sizeof(a->roles_error)];

	if (a->roles_error[0] == '\0')
		return NULL;
	memcpy(taken, a->roles_error, sizeof(taken));
	a->roles_error[0] = '\0';
	return taken;
}

void roles_free(struct app *a)
{
	role_rules_free(a->roles);
	a->roles = NULL;
	free(a->role_verdicts);
	a->role_verdicts = NULL;
	a->roles_gen++;
}
