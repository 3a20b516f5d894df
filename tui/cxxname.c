/*
 * Shortening demangled C++ names. The name is cut into pieces at its top
 * level (outside every <>, (), {} and []): names, template arguments,
 * parameter lists, tags ("[abi:cxx11]", " [clone .cold]"), qualifiers
 * (" const") and scope separators ("::"). A top-level space elsewhere
 * ends a return type ("void ns::f<int>(int)"), which is left out. Each
 * form is then the pieces put back with some left out or elided.
 */
#include <stdio.h>
#include <string.h>

#include "cxxname.h"
#include "format.h"
#include "screen.h"

#define MAX_PIECES 96
/* Forms longer than this are never asked to fit. */
#define FORM_MAX 4096

enum piece_kind { P_NAME, P_TARGS, P_PARAMS, P_TAG, P_QUAL, P_SCOPE };

struct piece {
	enum piece_kind kind;
	size_t at, len;
};

struct parsed {
	const char *s;
	struct piece p[MAX_PIECES];
	size_t n;
	size_t scopes;		/* P_SCOPE pieces */
	bool ok;		/* false: too many pieces, only the name as it is */
};

/* Index just past the group opened at s[i], nested brackets skipped. */
static size_t group_end(const char *s, size_t i)
{
	int depth = 0;

	for (; s[i]; i++) {
		if (strchr("<({[", s[i]))
			depth++;
		else if (strchr(">)}]", s[i]) && --depth == 0)
			return i + 1;
	}
	return i;
}

static bool ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '$';
}

/* The conversion operator's type: up to its parameter list. */
static size_t conversion_len(const char *s, size_t k)
{
	while (s[k] && s[k] != '(')
		k = strchr("<{[", s[k]) ? group_end(s, k) : k + 1;
	return k;
}

/* Length of an operator's name at s ("operator<<", "operator()"), or 0. */
static size_t operator_len(const char *s)
{
	size_t k = strlen("operator");

	if (strncmp(s, "operator", k) != 0 || ident_char(s[k]))
		return 0;
	if ((s[k] == '(' && s[k + 1] == ')') || (s[k] == '[' && s[k + 1] == ']'))
		return k + 2;
	if (strncmp(s + k, " new", 4) == 0 || strncmp(s + k, " delete", 7) == 0) {
		k += s[k + 1] == 'n' ? 4 : 7;
		return strncmp(s + k, "[]", 2) == 0 ? k + 2 : k;
	}
	if (s[k] == '"') {		/* operator"" _suffix */
		k += 2;
		while (s[k] == ' ' || ident_char(s[k]))
			k++;
		return k;
	}
	if (s[k] == ' ')
		return conversion_len(s, k + 1);
	while (s[k] && strchr("+-*/%^&|~!=<>,", s[k]))
		k++;
	return k;
}

static void add(struct parsed *p, enum piece_kind kind, size_t at, size_t end)
{
	if (p->n == MAX_PIECES) {
		p->ok = false;
		return;
	}
	p->p[p->n++] = (struct piece){ kind, at, end - at };
	p->scopes += kind == P_SCOPE;
}

/* End of qualifiers after a parameter list: at "::", " [" or the end. */
static size_t qualifiers_end(const char *s, size_t i)
{
	while (s[i] && strncmp(s + i, "::", 2) != 0 && strncmp(s + i, " [", 2) != 0)
		i++;
	return i;
}

/* A top-level space at s[i]: returns where the next piece starts. */
static size_t space(struct parsed *p, size_t i, bool *start, bool after_params)
{
	const char *s = p->s;
	size_t end;

	if (s[i + 1] == '<')		/* "operator< <T>" */
		return i + 1;
	if (s[i + 1] == '[') {
		end = group_end(s, i + 1);
		add(p, P_TAG, i, end);
		return end;
	}
	if (after_params) {
		end = qualifiers_end(s, i);
		add(p, P_QUAL, i, end);
		return end;
	}
	p->n = 0;			/* what came before is a return type */
	p->scopes = 0;
	*start = true;
	return i + 1;
}

/* The piece at s[i] and where the next starts; *start: a new component. */
static size_t piece(struct parsed *p, size_t i, bool *start, bool *after_params)
{
	const char *s = p->s;
	size_t end = *start ? operator_len(s + i) : 0;
	enum piece_kind kind = P_NAME;

	if (s[i] == ' ')
		return space(p, i, start, *after_params);
	if (strncmp(s + i, "::", 2) == 0) {
		add(p, P_SCOPE, i, i + 2);
		*start = true;
		*after_params = false;
		return i + 2;
	}
	if (end) {
		end += i;
	} else if (strchr("<({[", s[i])) {
		end = group_end(s, i);
		kind = s[i] == '<' ? P_TARGS : s[i] == '[' ? P_TAG :
		       s[i] == '(' && !*start ? P_PARAMS : P_NAME;
	} else {
		for (end = i + 1; s[end] && !strchr("<({[ :", s[end]); end++)
			;
	}
	add(p, kind, i, end);
	*after_params = kind == P_PARAMS || (*after_params && kind == P_TAG);
	*start = false;
	return end;
}

static void parse(struct parsed *p, const char *s)
{
	bool start = true, after_params = false;

	memset(p, 0, sizeof(*p));
	p->s = s;
	p->ok = true;
	for (size_t i = 0; s[i] && p->ok;)
		i = piece(p, i, &start, &after_params);
}

/* A bounded string being built. */
struct out {
	char *buf;
	size_t size, len;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (n >= o->size - o->len)
		n = o->size - o->len - 1;
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

static const char *ellipsis(void)
{
	return format_utf8() ? "\u2026" : "...";
}

/* A group "<…>" or "(…)" with its inside elided; empty ones kept. */
static void put_elided(struct out *o, const char *s, size_t len)
{
	put(o, s, 1);
	if (len > 2)
		put(o, ellipsis(), strlen(ellipsis()));
	put(o, s + len - 1, 1);
}

/* A name, the parameters of a lambda in it elided: "{lambda(…)#1}". */
static void put_name(struct out *o, const char *s, size_t len, bool elide)
{
	int braces = 0;

	for (size_t i = 0; i < len;) {
		if (elide && braces > 0 && s[i] == '(') {
			size_t end = group_end(s, i);

			end = end > len ? len : end;
			put_elided(o, s + i, end - i);
			i = end;
			continue;
		}
		braces += (s[i] == '{') - (s[i] == '}');
		put(o, s + i++, 1);
	}
}

/* Form 2 (targs false) or 3 (targs true) without the first skip components. */
static void put_form(struct out *o, const struct parsed *p, size_t skip,
		     bool targs)
{
	size_t i = 0;

	for (; skip > 0 && i < p->n; i++)
		skip -= p->p[i].kind == P_SCOPE;
	for (; i < p->n; i++) {
		const struct piece *q = &p->p[i];
		const char *s = p->s + q->at;

		if (q->kind == P_TARGS && o->len && o->buf[o->len - 1] == '<')
			put(o, " ", 1);	/* "operator< <T>" */
		if (q->kind == P_PARAMS || (q->kind == P_TARGS && !targs))
			put_elided(o, s, q->len);
		else if (q->kind == P_NAME)
			put_name(o, s, q->len, true);
		else if (q->kind == P_TARGS || q->kind == P_SCOPE)
			put(o, s, q->len);
	}
}

/* The bare name: the last component's names alone. */
static void put_bare(struct out *o, const struct parsed *p)
{
	size_t i = p->n;

	while (i > 0 && p->p[i - 1].kind != P_SCOPE)
		i--;
	for (; i < p->n; i++) {
		if (p->p[i].kind == P_NAME)
			put_name(o, p->s + p->p[i].at, p->p[i].len, true);
	}
}

/* Form number f (0: the name as it is); false past the last one. */
static bool form(char *buf, size_t size, const struct parsed *p, size_t f)
{
	struct out o = { buf, size, 0 };
	size_t last = p->ok ? 3 + p->scopes : 0;

	buf[0] = '\0';
	if (f == 0)
		put(&o, p->s, strlen(p->s));
	else if (f == 1 || f == 2)
		put_form(&o, p, 0, f == 1);
	else if (f < last)
		put_form(&o, p, f - 2, false);
	else if (f == last)
		put_bare(&o, p);
	return f <= last;
}

bool cxxname_fit(char *buf, size_t size, const char *name, const char *tail,
		 int width)
{
	struct parsed p;
	int tail_w = screen_width(tail);
	char f[FORM_MAX];

	if (width <= 0) {
		snprintf(buf, size, "%s%s", name, tail);
		return true;
	}
	parse(&p, name);
	for (size_t i = 0; form(f, sizeof(f), &p, i); i++) {
		if (screen_width(f) + tail_w <= width) {
			snprintf(buf, size, "%s%s", f, tail);
			return true;
		}
	}
	form(f, sizeof(f), &p, p.ok ? 3 + p.scopes : 0);
	format_fit_right(buf, size, f, width);
	return false;
}
