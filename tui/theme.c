/* Colour themes: the slot table, the theme file parser and the search path. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "theme.h"

#ifndef QSPTOP_PREFIX
#define QSPTOP_PREFIX "/usr/local"
#endif
#ifndef QSPTOP_SOURCE_THEMES
#define QSPTOP_SOURCE_THEMES "themes"
#endif

#define THEME_MAX_BYTES (64 * 1024)	/* theme files are read up to this */
#define MAX_DIRS 4
#define QUOTE_MAX 40			/* longest word quoted in a warning */

/*
 * One row per slot: its name in theme files, its default style (a dark
 * terminal, like htop) and the attributes theme_monochrome() adds so that
 * bars drawn with a background colour still stand out without colour.
 */
static const struct slot_info {
	enum theme_slot slot;
	const char *name;
	struct theme_style style;
	uint8_t mono;
} slots[] = {
#define D COLOR_DEFAULT
	{ SLOT_NORMAL, "normal", { D, D, 0 }, 0 },
	{ SLOT_HEADER, "header", { 6, D, ATTR_BOLD }, 0 },
	{ SLOT_COLUMN, "column", { 0, 2, 0 }, ATTR_REVERSE },
	{ SLOT_SORTED, "sorted", { 0, 6, ATTR_BOLD }, ATTR_BOLD | ATTR_REVERSE },
	{ SLOT_SELECTION, "selection", { 0, 6, 0 }, ATTR_REVERSE },
	{ SLOT_HOT, "hot", { 1, D, ATTR_BOLD }, 0 },
	{ SLOT_WARM, "warm", { 3, D, 0 }, 0 },
	{ SLOT_COOL, "cool", { D, D, 0 }, 0 },
	{ SLOT_SPARKLINE, "sparkline", { 2, D, 0 }, 0 },
	{ SLOT_STATUS, "status", { 0, 7, 0 }, ATTR_REVERSE },
	{ SLOT_ERROR, "error", { 7, 1, ATTR_BOLD }, ATTR_BOLD | ATTR_REVERSE },
	{ SLOT_ALARM, "alarm", { 3, 1, ATTR_BOLD }, ATTR_BOLD | ATTR_REVERSE },
};
#undef D
_Static_assert(sizeof slots / sizeof slots[0] == SLOT_COUNT,
	       "one slots[] row per enum theme_slot");

static const char *const colour_names[] = {
	"black", "red", "green", "yellow", "blue", "magenta", "cyan", "white",
};

static const struct {
	const char *name;
	uint8_t bit;
} attr_names[] = {
	{ "bold", ATTR_BOLD },
	{ "dim", ATTR_DIM },
	{ "underline", ATTR_UNDERLINE },
	{ "reverse", ATTR_REVERSE },
};

/* A piece of the text being parsed; not NUL-terminated. */
struct span {
	const char *p;
	size_t n;
};

struct dirs {
	int n;
	char path[MAX_DIRS][PATH_MAX];
};

static void set_error(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_error(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

void theme_defaults(struct theme *t)
{
	memset(t, 0, sizeof *t);
	snprintf(t->name, sizeof t->name, "default");
	for (size_t i = 0; i < SLOT_COUNT; i++)
		t->slot[slots[i].slot] = slots[i].style;
}

void theme_monochrome(struct theme *t)
{
	for (size_t i = 0; i < SLOT_COUNT; i++) {
		struct theme_style *s = &t->slot[slots[i].slot];

		/* A bar that relied on its background keeps standing out. */
		if (s->attrs == 0 || s->bg != COLOR_DEFAULT)
			s->attrs |= slots[i].mono;
		s->fg = COLOR_DEFAULT;
		s->bg = COLOR_DEFAULT;
	}
}

const char *theme_slot_name(enum theme_slot slot)
{
	for (size_t i = 0; i < SLOT_COUNT; i++)
		if (slots[i].slot == slot)
			return slots[i].name;
	return "unknown";
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static struct span trim(struct span s)
{
	while (s.n > 0 && is_space(s.p[0])) {
		s.p++;
		s.n--;
	}
	while (s.n > 0 && is_space(s.p[s.n - 1]))
		s.n--;
	return s;
}

/* Take the next whitespace-separated word off *rest; false at the end. */
static bool next_word(struct span *rest, struct span *word)
{
	*rest = trim(*rest);
	if (rest->n == 0)
		return false;
	word->p = rest->p;
	word->n = 0;
	while (word->n < rest->n && !is_space(rest->p[word->n]))
		word->n++;
	rest->p += word->n;
	rest->n -= word->n;
	return true;
}

static bool span_is(struct span s, const char *word)
{
	return strlen(word) == s.n && strncasecmp(s.p, word, s.n) == 0;
}

/* Copy s into buf for a message: printable, and cut short when long. */
static const char *quote(char *buf, size_t size, struct span s)
{
	size_t n = 0;

	for (size_t i = 0; i < s.n && i < QUOTE_MAX && n + 1 < size; i++) {
		unsigned char c = (unsigned char)s.p[i];

		buf[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	if (s.n > QUOTE_MAX && n + 3 < size) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return buf;
}

/* Parse "colorN"; 0 ok, -1 not that form, -2 out of range. */
static int parse_color_n(struct span s, int16_t *out)
{
	int v = 0;

	if (s.n <= 5 || strncasecmp(s.p, "color", 5) != 0)
		return -1;
	for (size_t i = 5; i < s.n; i++) {
		if (s.p[i] < '0' || s.p[i] > '9')
			return -1;
		if (v < 1000)
			v = v * 10 + (s.p[i] - '0');
	}
	if (v > 255)
		return -2;
	*out = (int16_t)v;
	return 0;
}

/* Parse a colour word; 0 ok, -1 unknown, -2 out of range. */
static int parse_colour(struct span s, int16_t *out)
{
	bool bright = s.n > 7 && strncasecmp(s.p, "bright-", 7) == 0;
	struct span base = { s.p + (bright ? 7 : 0), s.n - (bright ? 7 : 0) };

	if (span_is(s, "default") || span_is(s, "none")) {
		*out = COLOR_DEFAULT;
		return 0;
	}
	for (int i = 0; i < 8; i++) {
		if (span_is(base, colour_names[i])) {
			*out = (int16_t)(i + (bright ? 8 : 0));
			return 0;
		}
	}
	return parse_color_n(s, out);
}

static int parse_attr(struct span s, uint8_t *attrs)
{
	for (size_t i = 0; i < sizeof attr_names / sizeof attr_names[0]; i++) {
		if (span_is(s, attr_names[i].name)) {
			*attrs |= attr_names[i].bit;
			return 0;
		}
	}
	return -1;
}

/* Explain why word is not a colour into msg. */
static void bad_colour(char *msg, size_t size, struct span word, int why)
{
	char q[QUOTE_MAX + 4];

	quote(q, sizeof q, word);
	if (why == -2)
		snprintf(msg, size, "colour '%s' out of range (0-255)", q);
	else
		snprintf(msg, size, "unknown colour '%s'", q);
}

/* Parse the background after "on"; false with msg on a problem. */
static bool parse_background(struct span *rest, struct theme_style *st,
			     bool *have_bg, char *msg, size_t size)
{
	struct span word;
	int r;

	if (*have_bg) {
		snprintf(msg, size, "background given twice");
		return false;
	}
	if (!next_word(rest, &word)) {
		snprintf(msg, size, "expected a colour after 'on'");
		return false;
	}
	r = parse_colour(word, &st->bg);
	if (r < 0) {
		bad_colour(msg, size, word, r);
		return false;
	}
	*have_bg = true;
	return true;
}

/* Parse the words after FG: "on BG" and attributes. */
static bool parse_modifiers(struct span rest, struct theme_style *st,
			    char *msg, size_t size)
{
	char q[QUOTE_MAX + 4];
	bool have_bg = false;
	struct span word;
	int16_t colour;
	int r;

	while (next_word(&rest, &word)) {
		if (span_is(word, "on")) {
			if (!parse_background(&rest, st, &have_bg, msg, size))
				return false;
		} else if (parse_attr(word, &st->attrs) < 0) {
			r = parse_colour(word, &colour);
			if (r == -2)
				bad_colour(msg, size, word, r);
			else if (r == 0)
				snprintf(msg, size, "unexpected colour '%s' "
					 "(write 'FG on BG')",
					 quote(q, sizeof q, word));
			else
				snprintf(msg, size, "unknown attribute '%s'",
					 quote(q, sizeof q, word));
			return false;
		}
	}
	return true;
}

/* Parse "FG [on BG] [ATTR...]"; false with msg on a problem. */
static bool parse_style(struct span text, struct theme_style *st, char *msg,
			size_t size)
{
	char q[QUOTE_MAX + 4];
	struct span word;
	uint8_t attr = 0;
	int r;

	st->fg = st->bg = COLOR_DEFAULT;
	st->attrs = 0;
	if (!next_word(&text, &word)) {
		snprintf(msg, size, "missing style after '='");
		return false;
	}
	r = parse_colour(word, &st->fg);
	if (r == -1 && parse_attr(word, &attr) == 0) {
		snprintf(msg, size, "expected a colour before '%s' "
			 "(e.g. 'default %s')", quote(q, sizeof q, word), q);
		return false;
	}
	if (r < 0) {
		bad_colour(msg, size, word, r);
		return false;
	}
	return parse_modifiers(text, st, msg, size);
}

static int find_slot(struct span name)
{
	for (size_t i = 0; i < SLOT_COUNT; i++)
		if (span_is(name, slots[i].name))
			return (int)slots[i].slot;
	return -1;
}

/* Apply one "slot = style" line to t; false with msg on a problem. */
static bool parse_line(struct theme *t, struct span line, char *msg,
		       size_t size)
{
	char q[QUOTE_MAX + 4];
	const char *hash = memchr(line.p, '#', line.n);
	const char *eq;
	struct span name, value;
	struct theme_style st;
	int slot;

	if (hash)
		line.n = (size_t)(hash - line.p);
	line = trim(line);
	if (line.n == 0)
		return true;
	eq = memchr(line.p, '=', line.n);
	if (!eq) {
		snprintf(msg, size, "expected '=' in '%s' (SLOT = STYLE)",
			 quote(q, sizeof q, line));
		return false;
	}
	name = trim((struct span){ line.p, (size_t)(eq - line.p) });
	value = (struct span){ eq + 1, line.n - (size_t)(eq + 1 - line.p) };
	if (name.n == 0) {
		snprintf(msg, size, "missing slot name before '='");
		return false;
	}
	slot = find_slot(name);
	if (slot < 0) {
		snprintf(msg, size, "unknown slot '%s'", quote(q, sizeof q, name));
		return false;
	}
	if (!parse_style(value, &st, msg, size))
		return false;
	t->slot[slot] = st;
	return true;
}

static void report(theme_warn_fn warn, void *ctx, const char *source,
		   unsigned line, const char *msg)
{
	char buf[PATH_MAX + 256];

	if (!warn)
		return;
	snprintf(buf, sizeof buf, "%s:%u: %s", source ? source : "theme",
		 line, msg);
	warn(ctx, buf);
}

int theme_parse(struct theme *t, const char *text, const char *source,
		theme_warn_fn warn, void *ctx)
{
	unsigned lineno = 1;
	int problems = 0;
	char msg[256];

	while (text && *text) {
		const char *end = strchr(text, '\n');
		struct span line = { text, end ? (size_t)(end - text)
					       : strlen(text) };

		if (!parse_line(t, line, msg, sizeof msg)) {
			report(warn, ctx, source, lineno, msg);
			problems++;
		}
		text = line.p + line.n + (end ? 1 : 0);
		lineno++;
	}
	return problems;
}

/* The line number of the byte at text + n. */
static unsigned line_at(const char *text, size_t n)
{
	unsigned line = 1;

	for (size_t i = 0; i < n; i++)
		line += text[i] == '\n';
	return line;
}

/*
 * Cut the n bytes read to what theme_parse reads: not past a NUL byte, and
 * at most THEME_MAX_BYTES, ending at a line break. Warns when it cuts.
 */
static void limit_text(char *text, size_t n, const char *path,
		       theme_warn_fn warn, void *ctx)
{
	size_t max = n < THEME_MAX_BYTES ? n : THEME_MAX_BYTES;
	const char *nul = memchr(text, '\0', max);
	char *nl;

	text[n] = '\0';
	if (nul) {
		report(warn, ctx, path, line_at(text, (size_t)(nul - text)),
		       "NUL byte; ignoring the rest of the file");
	} else if (n > THEME_MAX_BYTES) {
		text[THEME_MAX_BYTES] = '\0';
		nl = strrchr(text, '\n');
		n = nl ? (size_t)(nl - text) + 1 : 0;
		text[n] = '\0';
		report(warn, ctx, path, line_at(text, n), "file larger than "
		       "64 KiB; ignoring this line and the rest");
	}
}

/* Apply the open theme file f over t; -1 with err when it cannot be read. */
static int load_file(struct theme *t, FILE *f, const char *path,
		     theme_warn_fn warn, void *ctx, char *err, size_t errlen)
{
	char *text = malloc(THEME_MAX_BYTES + 2);
	size_t n;

	if (!text) {
		set_error(err, errlen, "%s: %s", path, strerror(ENOMEM));
		return -1;
	}
	n = fread(text, 1, THEME_MAX_BYTES + 1, f);
	if (ferror(f)) {
		set_error(err, errlen, "%s: %s", path, strerror(errno));
		free(text);
		return -1;
	}
	limit_text(text, n, path, warn, ctx);
	theme_parse(t, text, path, warn, ctx);
	free(text);
	return 0;
}

/* Name a theme by its file: the base name without ".theme". */
static void name_from_path(struct theme *t, const char *path)
{
	const char *base = strrchr(path, '/');
	size_t n;

	base = base ? base + 1 : path;
	n = strlen(base);
	if (n > 6 && strcmp(base + n - 6, ".theme") == 0)
		n -= 6;
	if (n >= sizeof t->name)
		n = sizeof t->name - 1;
	memcpy(t->name, base, n);
	t->name[n] = '\0';
}

static bool valid_name(const char *s, size_t n)
{
	if (n == 0 || n >= 64 || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.' ||
		      c == '-'))
			return false;
	}
	return true;
}

/* Add dir a + b to the search path unless empty, too long or there already. */
static void dirs_add(struct dirs *d, const char *a, const char *b)
{
	char *p = d->path[d->n];

	if (d->n >= MAX_DIRS || !a || !*a ||
	    (size_t)snprintf(p, PATH_MAX, "%s%s", a, b) >= PATH_MAX)
		return;
	for (int i = 0; i < d->n; i++)
		if (strcmp(d->path[i], p) == 0)
			return;
	d->n++;
}

/* Add <dir of the executable>/../share/qsptop/themes. */
static void dirs_add_relocatable(struct dirs *d)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	char *slash;

	if (n <= 0)
		return;
	exe[n] = '\0';
	for (int up = 0; up < 2; up++) {
		slash = strrchr(exe, '/');
		if (!slash)
			return;
		*slash = '\0';
	}
	dirs_add(d, exe[0] ? exe : "/", exe[0] ? "/share/qsptop/themes"
					       : "share/qsptop/themes");
}

/* The directories searched for NAME.theme, first match wins. */
static void search_dirs(struct dirs *d)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");

	d->n = 0;
	if (xdg && xdg[0] == '/')
		dirs_add(d, xdg, "/qsptop/themes");
	else if (home)
		dirs_add(d, home, "/.config/qsptop/themes");
	dirs_add_relocatable(d);
	dirs_add(d, QSPTOP_PREFIX, "/share/qsptop/themes");
	dirs_add(d, QSPTOP_SOURCE_THEMES, "");
}

/* Load the theme file at path over t. */
static int load_path(struct theme *t, const char *path, theme_warn_fn warn,
		     void *ctx, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	int r;

	if (!f) {
		set_error(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	r = load_file(t, f, path, warn, ctx, err, errlen);
	fclose(f);
	if (r == 0)
		name_from_path(t, path);
	return r;
}

/* Append text to the list in buf (size, *off used), after ", " if not first. */
static void list_add(char *buf, size_t size, size_t *off, const char *text)
{
	if (*off < size)
		*off += (size_t)snprintf(buf + *off, size - *off, "%s%s",
					 *off ? ", " : "", text);
}

/* Join the n names with ", " into buf. */
static void join_names(char *buf, size_t size, char (*names)[64], size_t n)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++)
		list_add(buf, size, &off, names[i]);
}

/* Join the directories of d that exist with ", " into buf; how many. */
static int join_existing(char *buf, size_t size, const struct dirs *d)
{
	size_t off = 0;
	struct stat st;
	int n = 0;

	buf[0] = '\0';
	for (int i = 0; i < d->n; i++) {
		if (stat(d->path[i], &st) != 0 || !S_ISDIR(st.st_mode))
			continue;
		list_add(buf, size, &off, d->path[i]);
		n++;
	}
	return n;
}

/* Report that name was found nowhere in d: the themes there are, and where. */
static void not_found(const struct dirs *d, const char *name, char *err,
		      size_t errlen)
{
	char names[32][64], list[32 * 66], where[MAX_DIRS * (PATH_MAX + 2)];

	join_names(list, sizeof list, names, theme_list(names, 32));
	if (join_existing(where, sizeof where, d) > 0)
		set_error(err, errlen, "no theme named '%s'; themes: %s (in %s)",
			  name, list, where);
	else
		set_error(err, errlen, "no theme named '%s'; themes: %s (built "
			  "in: no theme directory found)", name, list);
}

int theme_load(struct theme *t, const char *name, theme_warn_fn warn,
	       void *ctx, char *err, size_t errlen)
{
	char path[PATH_MAX];
	struct dirs d;

	theme_defaults(t);
	if (!name)
		name = "default";
	if (strchr(name, '/'))
		return load_path(t, name, warn, ctx, err, errlen);
	if (!valid_name(name, strlen(name))) {
		set_error(err, errlen, "invalid theme name (use letters, "
			  "digits, '_', '-' and '.', not first)");
		return -1;
	}
	search_dirs(&d);
	for (int i = 0; i < d.n; i++) {
		if ((size_t)snprintf(path, sizeof path, "%s/%s.theme",
				     d.path[i], name) >= sizeof path)
			continue;
		if (access(path, F_OK) == 0)
			return load_path(t, path, warn, ctx, err, errlen);
	}
	if (strcmp(name, "default") == 0)
		return 0;
	not_found(&d, name, err, errlen);
	return -1;
}

/* Insert a name into the sorted list of n (at most max) unless there. */
static void list_insert(char (*names)[64], size_t max, size_t *n,
			const char *name, size_t len)
{
	size_t i = 0;
	int c = 1;
	char buf[64];

	memcpy(buf, name, len);
	buf[len] = '\0';
	while (i < *n && (c = strcmp(names[i], buf)) < 0)
		i++;
	if ((i < *n && c == 0) || i >= max)
		return;
	if (*n == max)
		(*n)--;
	memmove(names[i + 1], names[i], (*n - i) * sizeof names[0]);
	memcpy(names[i], buf, len + 1);
	(*n)++;
}

/* Add the NAME of every NAME.theme in dir. */
static void list_dir(const char *dir, char (*names)[64], size_t max,
		     size_t *n)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	size_t len;

	if (!dp)
		return;
	while ((e = readdir(dp))) {
		len = strlen(e->d_name);
		if (e->d_type == DT_DIR || len <= 6 ||
		    strcmp(e->d_name + len - 6, ".theme") != 0)
			continue;
		if (valid_name(e->d_name, len - 6))
			list_insert(names, max, n, e->d_name, len - 6);
	}
	closedir(dp);
}

size_t theme_list(char (*names)[64], size_t max)
{
	struct dirs d;
	size_t n = 0;

	list_insert(names, max, &n, "default", 7);
	search_dirs(&d);
	for (int i = 0; i < d.n; i++)
		list_dir(d.path[i], names, max, &n);
	return n;
}
