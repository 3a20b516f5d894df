/* Unit tests of themes: defaults, the parser, the shipped files, search. */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../tui/theme.h"
#include "check.h"

#ifndef QSPTOP_PREFIX
#define QSPTOP_PREFIX "/usr/local"
#endif
#ifndef QSPTOP_SOURCE_THEMES
#define QSPTOP_SOURCE_THEMES "themes"
#endif

#define D COLOR_DEFAULT
#define B ATTR_BOLD
#define U ATTR_UNDERLINE
#define R ATTR_REVERSE

#define CHECK_STYLE(got, want, what)                                       \
	CHECK(style_eq((got), (want)),                                     \
	      "%s: expected {%d, %d, %d}, got {%d, %d, %d}", (what),       \
	      (want).fg, (want).bg, (want).attrs, (got).fg, (got).bg,      \
	      (got).attrs)

/* The warnings of the last parse or load. */
static struct {
	int n;
	char first[512];
	char last[512];
	int unprintable;	/* messages with control or 8-bit bytes */
} warned;

static char tmp[64];		/* this run's scratch directory */

static void collect(void *ctx, const char *message)
{
	(void)ctx;
	if (warned.n++ == 0)
		snprintf(warned.first, sizeof warned.first, "%s", message);
	snprintf(warned.last, sizeof warned.last, "%s", message);
	for (const unsigned char *p = (const unsigned char *)message; *p; p++)
		if (*p < 0x20 || *p >= 0x7f) {
			warned.unprintable++;
			break;
		}
}

static void forget_warnings(void)
{
	memset(&warned, 0, sizeof warned);
}

static int style_eq(struct theme_style a, struct theme_style b)
{
	return a.fg == b.fg && a.bg == b.bg && a.attrs == b.attrs;
}

static struct theme_style style(int fg, int bg, int attrs)
{
	return (struct theme_style){ (int16_t)fg, (int16_t)bg, (uint8_t)attrs };
}

/* Parse text over the defaults, collecting warnings; returns the count. */
static int parse(struct theme *t, const char *text)
{
	theme_defaults(t);
	forget_warnings();
	return theme_parse(t, text, "t", collect, NULL);
}

/* Whether every slot of a equals the same slot of b. */
static int same_slots(const struct theme *a, const struct theme *b)
{
	for (int i = 0; i < SLOT_COUNT; i++)
		if (!style_eq(a->slot[i], b->slot[i]))
			return 0;
	return 1;
}

static void test_defaults_cover_every_slot(void)
{
	static const struct {
		enum theme_slot slot;
		const char *name;
		struct theme_style style;
	} want[] = {
		{ SLOT_NORMAL, "normal", { D, D, 0 } },
		{ SLOT_HEADER, "header", { 6, D, B } },
		{ SLOT_COLUMN, "column", { 0, 2, 0 } },
		{ SLOT_SORTED, "sorted", { 0, 6, B } },
		{ SLOT_SELECTION, "selection", { 0, 6, 0 } },
		{ SLOT_HOT, "hot", { 1, D, B } },
		{ SLOT_WARM, "warm", { 3, D, 0 } },
		{ SLOT_COOL, "cool", { D, D, 0 } },
		{ SLOT_SPARKLINE, "sparkline", { 2, D, 0 } },
		{ SLOT_STATUS, "status", { 0, 7, 0 } },
		{ SLOT_ERROR, "error", { 7, 1, B } },
		{ SLOT_ALARM, "alarm", { 3, 1, B } },
	};
	struct theme t;

	memset(&t, 0x55, sizeof t);
	theme_defaults(&t);
	CHECK_STR(t.name, "default");
	CHECK_U64(sizeof want / sizeof want[0], SLOT_COUNT);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		CHECK_STR(theme_slot_name(want[i].slot), want[i].name);
		CHECK_STYLE(t.slot[want[i].slot], want[i].style, want[i].name);
	}
	CHECK_STR(theme_slot_name(SLOT_COUNT), "unknown");
}

static void test_every_slot_name_parses(void)
{
	char text[64];
	struct theme t;

	for (int i = 0; i < SLOT_COUNT; i++) {
		snprintf(text, sizeof text, "%s = color%d underline\n",
			 theme_slot_name((enum theme_slot)i), 100 + i);
		CHECK_U64(parse(&t, text), 0);
		CHECK_STYLE(t.slot[i], style(100 + i, D, U), text);
	}
}

static void test_colour_and_attribute_words(void)
{
	static const struct {
		const char *word;
		int value;
	} colours[] = {
		{ "default", D }, { "none", D }, { "black", 0 }, { "red", 1 },
		{ "green", 2 }, { "yellow", 3 }, { "blue", 4 }, { "magenta", 5 },
		{ "cyan", 6 }, { "white", 7 }, { "bright-black", 8 },
		{ "bright-red", 9 }, { "bright-cyan", 14 },
		{ "bright-white", 15 }, { "color0", 0 }, { "color007", 7 },
		{ "color255", 255 }, { "COLOR42", 42 },
	};
	static const struct {
		const char *words;
		int attrs;
	} attrs[] = {
		{ "bold", B }, { "dim", ATTR_DIM }, { "underline", U },
		{ "reverse", R }, { "bold reverse bold", B | R },
		{ "dim underline reverse bold", B | ATTR_DIM | U | R },
	};
	char text[128];
	struct theme t;

	for (size_t i = 0; i < sizeof colours / sizeof colours[0]; i++) {
		snprintf(text, sizeof text, "warm = %s on %s", colours[i].word,
			 colours[i].word);
		CHECK_U64(parse(&t, text), 0);
		CHECK_STYLE(t.slot[SLOT_WARM],
			    style(colours[i].value, colours[i].value, 0), text);
	}
	for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
		snprintf(text, sizeof text, "warm = blue %s", attrs[i].words);
		CHECK_U64(parse(&t, text), 0);
		CHECK_STYLE(t.slot[SLOT_WARM], style(4, D, attrs[i].attrs), text);
	}
}

static void test_layout_comments_and_case(void)
{
	static const struct {
		const char *text;
		struct theme_style hot;
	} cases[] = {
		{ "hot = blue bold # a trailing comment\n", { 4, D, B } },
		{ "hot=blue#no spaces", { 4, D, 0 } },
		{ "# only a comment\n\n   \n\thot = blue\n", { 4, D, 0 } },
		{ "\t  hot\t=\tblue  \r\n", { 4, D, 0 } },
		{ "HoT = Bright-RED ON Color17 BOLD UnderLine\n", { 9, 17, B | U } },
		{ "hot = blue\nhot = green\n", { 2, D, 0 } },
		{ "hot = none\n", { D, D, 0 } },
		{ "hot = red on blue\n", { 1, 4, 0 } },
		{ "hot = red bold on blue\n", { 1, 4, B } },
		{ "", { 1, D, B } },
	};
	struct theme t;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		CHECK_U64(parse(&t, cases[i].text), 0);
		CHECK_U64(warned.n, 0);
		CHECK_STYLE(t.slot[SLOT_HOT], cases[i].hot, cases[i].text);
	}
}

static void test_partial_file_keeps_defaults(void)
{
	struct theme t, d;

	theme_defaults(&d);
	CHECK_U64(parse(&t, "hot = blue\nerror = magenta\n"), 0);
	CHECK_STYLE(t.slot[SLOT_HOT], style(4, D, 0), "hot");
	CHECK_STYLE(t.slot[SLOT_ERROR], style(5, D, 0), "error");
	for (int i = 0; i < SLOT_COUNT; i++)
		if (i != SLOT_HOT && i != SLOT_ERROR)
			CHECK_STYLE(t.slot[i], d.slot[i],
				    theme_slot_name((enum theme_slot)i));
}

/* Each case is one bad line (or more): all skipped, every slot default. */
static void test_bad_lines_warn_and_are_skipped(void)
{
	static const struct {
		const char *text;
		int warnings;
		const char *first;
	} cases[] = {
		{ "foo = red\n", 1, "t:1: unknown slot 'foo'" },
		{ "# c\n\nhot = redd bold\n", 1, "t:3: unknown colour 'redd'" },
		{ "hot red\n", 1, "t:1: expected '=' in 'hot red' (SLOT = STYLE)" },
		{ "warm = color300\n", 1,
		  "t:1: colour 'color300' out of range (0-255)" },
		{ "warm = red on color256 # x\n", 1,
		  "t:1: colour 'color256' out of range (0-255)" },
		{ "warm = color99999999999999999999\n", 1,
		  "t:1: colour 'color99999999999999999999' out of range (0-255)" },
		{ "hot =\n", 1, "t:1: missing style after '='" },
		{ "hot = # nothing\n", 1, "t:1: missing style after '='" },
		{ "= red\n", 1, "t:1: missing slot name before '='" },
		{ "hot = red blink\n", 1, "t:1: unknown attribute 'blink'" },
		{ "hot = red blue\n", 1,
		  "t:1: unexpected colour 'blue' (write 'FG on BG')" },
		{ "hot = red bold color300\n", 1,
		  "t:1: colour 'color300' out of range (0-255)" },
		{ "hot = red on\n", 1, "t:1: expected a colour after 'on'" },
		{ "hot = red on blue on green\n", 1,
		  "t:1: background given twice" },
		{ "hot = bold\n", 1,
		  "t:1: expected a colour before 'bold' (e.g. 'default bold')" },
		{ "hot = bright-default\n", 1,
		  "t:1: unknown colour 'bright-default'" },
		{ "hot = color\n", 1, "t:1: unknown colour 'color'" },
		{ "hot = color-1\n", 1, "t:1: unknown colour 'color-1'" },
		{ "hot = colour12\n", 1, "t:1: unknown colour 'colour12'" },
		{ "hot x = red\n", 1, "t:1: unknown slot 'hot x'" },
		{ "\x01\x02\xff\xfe = \x80\n\x7f\x1b[31m\n", 2,
		  "t:1: unknown slot '?\?\?\?'" },
		{ "foo = red\nbar\nhot = \xc3\xa9\n", 3, "t:1: unknown slot 'foo'" },
	};
	struct theme t, d;

	theme_defaults(&d);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		CHECK_U64(parse(&t, cases[i].text), cases[i].warnings);
		CHECK_U64(warned.n, cases[i].warnings);
		CHECK_STR(warned.first, cases[i].first);
		CHECK_U64(warned.unprintable, 0);
		CHECK(same_slots(&t, &d), "case %zu changed a slot", i);
	}
	parse(&t, "\x01\x02\xff\xfe = \x80\n\x7f\x1b[31m\n");
	CHECK_STR(warned.last, "t:2: expected '=' in '?\?[31m' (SLOT = STYLE)");
	parse(&t, "foo = red\nbar\nhot = \xc3\xa9\n");
	CHECK_STR(warned.last, "t:3: unknown colour '?\?'");
}

static void test_good_lines_around_bad_ones_apply(void)
{
	struct theme t;

	CHECK_U64(parse(&t, "warm = blue\nhot = blue bogus\ncool = red\n"), 1);
	CHECK_STR(warned.first, "t:2: unknown attribute 'bogus'");
	CHECK_STYLE(t.slot[SLOT_WARM], style(4, D, 0), "warm");
	CHECK_STYLE(t.slot[SLOT_HOT], style(1, D, B), "hot kept its default");
	CHECK_STYLE(t.slot[SLOT_COOL], style(1, D, 0), "cool");
	theme_defaults(&t);
	CHECK_U64(theme_parse(&t, "foo = red\n", "t", NULL, NULL), 1);
	CHECK_U64(theme_parse(&t, NULL, "t", collect, NULL), 0);
}

/* A 100 KB line as a bad value, a comment, blanks and a long slot name. */
static void test_very_long_lines(void)
{
	size_t n = 100 * 1000;
	char *text = malloc(n + 64);
	struct theme t;

	memcpy(text, "hot = ", 6);
	memset(text + 6, 'x', n);
	strcpy(text + 6 + n, "\nwarm = blue\n");
	CHECK_U64(parse(&t, text), 1);
	CHECK_STR(warned.first, "t:1: unknown colour "
		  "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...'");
	CHECK_STYLE(t.slot[SLOT_WARM], style(4, D, 0), "warm after long line");

	text[0] = '#';
	CHECK_U64(parse(&t, text), 0);
	CHECK_STYLE(t.slot[SLOT_WARM], style(4, D, 0), "warm after comment");

	memset(text, ' ', n);
	strcpy(text + n, "hot = blue");
	CHECK_U64(parse(&t, text), 0);
	CHECK_STYLE(t.slot[SLOT_HOT], style(4, D, 0), "hot after blanks");

	memset(text, 'h', n);
	strcpy(text + n, " = blue\n=\n");
	CHECK_U64(parse(&t, text), 2);
	CHECK(strncmp(warned.first, "t:1: unknown slot 'hhhh", 23) == 0,
	      "long slot name: got \"%.60s\"", warned.first);
	CHECK_STR(warned.last, "t:2: missing slot name before '='");
	free(text);
}

/* Random byte soup built from theme words: never crashes, always counts. */
static void test_random_input_never_crashes(void)
{
	static const char *const words[] = {
		"hot", "=", " ", "\n", "#", "on", "red", "color", "999", "bold",
		"\t", "\xff", "\x01", "bright-", "==", "selection", "none",
	};
	unsigned seed = 12345;
	char text[512];
	struct theme t;
	struct check_tally counted = { 0 };

	for (int iter = 0; iter < 20000; iter++) {
		size_t n = 0;

		while (n < sizeof text - 16) {
			seed = seed * 1103515245u + 12345u;
			if ((seed >> 16) % 40 == 0)
				break;
			n += (size_t)snprintf(text + n, sizeof text - n, "%s",
					      words[(seed >> 8) % 17]);
		}
		text[n] = '\0';
		int problems = parse(&t, text);

		TALLY(&counted, problems == warned.n && !warned.unprintable,
		      "input %d: %d problems, %d warnings, %s", iter,
		      problems, warned.n, warned.unprintable ?
		      "an unprintable warning" : "all printable");
	}
	CHECK_TALLY(&counted, "20000 random inputs: one printable warning "
		    "per problem");
}

static void test_shipped_themes(void)
{
	static const struct {
		const char *path;
		enum theme_slot slot;
		struct theme_style style;
	} cases[] = {
		{ "themes/default.theme", SLOT_COLUMN, { 0, 2, 0 } },
		{ "themes/default.theme", SLOT_SORTED, { 0, 6, B } },
		{ "themes/light.theme", SLOT_HEADER, { 4, D, B } },
		{ "themes/light.theme", SLOT_HOT, { 1, D, B } },
		{ "themes/light.theme", SLOT_WARM, { 5, D, 0 } },
		{ "themes/light.theme", SLOT_SPARKLINE, { 4, D, 0 } },
		{ "themes/mono.theme", SLOT_SELECTION, { D, D, R } },
		{ "themes/mono.theme", SLOT_SORTED, { D, D, B | R } },
		{ "themes/mono.theme", SLOT_ERROR, { D, D, B | R } },
		{ "themes/mono.theme", SLOT_ALARM, { D, D, B | R } },
		{ "themes/default.theme", SLOT_ALARM, { 3, 1, B } },
		{ "themes/light.theme", SLOT_ALARM, { 0, 1, B } },
		{ "themes/mono.theme", SLOT_HOT, { D, D, B } },
		{ "themes/mono.theme", SLOT_SPARKLINE, { D, D, 0 } },
	};
	char err[256] = "";
	struct theme t;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		forget_warnings();
		CHECK_U64(theme_load(&t, cases[i].path, collect, NULL, err,
				     sizeof err), 0);
		CHECK(warned.n == 0, "%s: %d warnings, first \"%s\"",
		      cases[i].path, warned.n, warned.first);
		CHECK_STYLE(t.slot[cases[i].slot], cases[i].style,
			    cases[i].path);
	}
	CHECK_STR(t.name, "mono");
}

/* default.theme is the built-in theme; light has no yellow/white text. */
static void test_shipped_themes_keep_their_promises(void)
{
	struct theme t, d;
	char err[256];

	theme_defaults(&d);
	CHECK_U64(theme_load(&t, "themes/default.theme", collect, NULL, err,
			     sizeof err), 0);
	CHECK(same_slots(&t, &d), "default.theme differs from the built-in");
	CHECK_U64(theme_load(&t, "themes/light.theme", collect, NULL, err,
			     sizeof err), 0);
	CHECK_STR(t.name, "light");
	for (int i = 0; i < SLOT_COUNT; i++) {
		int fg = t.slot[i].fg;

		CHECK(fg != 3 && fg != 7 && fg != 11 && fg != 15,
		      "light %s has pale text %d",
		      theme_slot_name((enum theme_slot)i), fg);
	}
	CHECK_U64(theme_load(&t, "themes/mono.theme", collect, NULL, err,
			     sizeof err), 0);
	d = t;
	theme_monochrome(&d);
	CHECK(same_slots(&t, &d), "mono.theme is not already monochrome");
}

static void test_monochrome(void)
{
	static const struct {
		enum theme_slot slot;
		struct theme_style style;
	} want[] = {
		{ SLOT_NORMAL, { D, D, 0 } },
		{ SLOT_HEADER, { D, D, B } },
		{ SLOT_COLUMN, { D, D, U | R } },	/* had a background */
		{ SLOT_SORTED, { D, D, B | R } },
		{ SLOT_SELECTION, { D, D, R } },	/* had no attribute */
		{ SLOT_HOT, { D, D, B } },
		{ SLOT_WARM, { D, D, 0 } },
		{ SLOT_SPARKLINE, { D, D, 0 } },
		{ SLOT_STATUS, { D, D, U } },		/* stands out already */
		{ SLOT_ERROR, { D, D, B | R } },
	};
	struct theme t;

	parse(&t, "selection = blue\nstatus = default underline\n"
		  "column = black on green underline\n");
	theme_monochrome(&t);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		CHECK_STYLE(t.slot[want[i].slot], want[i].style,
			    theme_slot_name(want[i].slot));
	theme_defaults(&t);
	theme_monochrome(&t);
	CHECK_STYLE(t.slot[SLOT_COLUMN], style(D, D, R), "default column");
	CHECK_STYLE(t.slot[SLOT_STATUS], style(D, D, R), "default status");
	CHECK_STYLE(t.slot[SLOT_SELECTION], style(D, D, R), "default selection");
}

/* Write text (len bytes) to tmp/rel, creating the directories. */
static void write_file(const char *rel, const char *text, size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", tmp, rel);
	for (char *p = path + strlen(tmp) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0700);
		*p = '/';
	}
	f = fopen(path, "w");
	CHECK(f != NULL, "create %s: %s", path, strerror(errno));
	if (f) {
		fwrite(text, 1, len, f);
		fclose(f);
	}
}

static void write_text(const char *rel, const char *text)
{
	write_file(rel, text, strlen(text));
}

static void use_home(void)
{
	char home[PATH_MAX];

	snprintf(home, sizeof home, "%s/home", tmp);
	setenv("HOME", home, 1);
	unsetenv("XDG_CONFIG_HOME");
}

static void test_user_themes_come_first(void)
{
	char err[1024] = "";
	struct theme t;

	use_home();
	write_text("home/.config/qsptop/themes/custom.theme", "hot = blue\n");
	CHECK_U64(theme_load(&t, "custom", collect, NULL, err, sizeof err), 0);
	CHECK_STR(t.name, "custom");
	CHECK_STYLE(t.slot[SLOT_HOT], style(4, D, 0), "custom hot");
	CHECK_STYLE(t.slot[SLOT_WARM], style(3, D, 0), "custom warm default");

	CHECK_U64(theme_load(&t, "default", collect, NULL, err, sizeof err), 0);
	CHECK_STYLE(t.slot[SLOT_HOT], style(1, D, B), "built-in default hot");
	write_text("home/.config/qsptop/themes/default.theme", "hot = magenta\n");
	CHECK_U64(theme_load(&t, "default", collect, NULL, err, sizeof err), 0);
	CHECK_STR(t.name, "default");
	CHECK_STYLE(t.slot[SLOT_HOT], style(5, D, 0), "user default.theme");

	CHECK_U64(theme_load(&t, "light", collect, NULL, err, sizeof err), 0);
	CHECK_STYLE(t.slot[SLOT_WARM], style(5, D, 0), "light from source tree");
}

static void test_xdg_config_home_replaces_home(void)
{
	char xdg[PATH_MAX], err[1024] = "";
	struct theme t;

	use_home();
	write_text("home/.config/qsptop/themes/homeonly.theme", "hot = blue\n");
	write_text("xdg/qsptop/themes/custom.theme", "hot = green\n");
	snprintf(xdg, sizeof xdg, "%s/xdg", tmp);
	setenv("XDG_CONFIG_HOME", xdg, 1);
	CHECK_U64(theme_load(&t, "custom", collect, NULL, err, sizeof err), 0);
	CHECK_STYLE(t.slot[SLOT_HOT], style(2, D, 0), "custom from XDG");
	CHECK_U64(theme_load(&t, "homeonly", collect, NULL, err, sizeof err),
		  (uint64_t)-1);
	setenv("XDG_CONFIG_HOME", "relative/dir", 1);
	CHECK_U64(theme_load(&t, "custom", collect, NULL, err, sizeof err), 0);
	CHECK_STYLE(t.slot[SLOT_HOT], style(4, D, 0), "relative XDG ignored");
	unsetenv("XDG_CONFIG_HOME");
}

static void test_bad_names_and_missing_themes(void)
{
	static const char *const invalid[] = {
		".hidden", "a b", "", "..", "x\ny", "tab\t",
		"a123456789012345678901234567890123456789012345678901234567890123",
	};
	char err[2048], want[PATH_MAX + 64], cwd[PATH_MAX];
	struct theme t, d;

	use_home();
	theme_defaults(&d);
	for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
		err[0] = '\0';
		CHECK_U64(theme_load(&t, invalid[i], collect, NULL, err,
				     sizeof err), (uint64_t)-1);
		CHECK(strncmp(err, "invalid theme name", 18) == 0,
		      "name \"%s\": got \"%s\"", invalid[i], err);
	}
	/* A path is a file, taken from where we are: a directory of ours. */
	snprintf(want, sizeof want, "%s/cwd", tmp);
	CHECK(getcwd(cwd, sizeof cwd) != NULL && mkdir(want, 0700) == 0 &&
	      chdir(want) == 0, "cd %s", want);
	CHECK_U64(theme_load(&t, "../x", collect, NULL, err, sizeof err),
		  (uint64_t)-1);
	CHECK_STR(err, "../x: No such file or directory");
	CHECK(chdir(cwd) == 0, "cd back to %s", cwd);

	CHECK_U64(theme_load(&t, "nosuch", collect, NULL, err, sizeof err),
		  (uint64_t)-1);
	/* The themes there are, and only the directories that exist. */
	CHECK(strncmp(err, "no theme named 'nosuch'; themes: custom, default, ", 50) == 0 &&
	      strstr(err, " light, mono (in "),
	      "expected the themes listed, the user's too, got \"%s\"", err);
	CHECK(strstr(err, QSPTOP_SOURCE_THEMES ")") != NULL,
	      "the source tree's themes named: \"%s\"", err);
	CHECK((access(QSPTOP_PREFIX "/share/qsptop/themes", F_OK) == 0) ==
	      (strstr(err, QSPTOP_PREFIX "/share/qsptop/themes") != NULL),
	      "the installed themes' directory named only if it exists: \"%s\"", err);
	snprintf(want, sizeof want, "%s/nohome", tmp);
	setenv("HOME", want, 1);
	CHECK_U64(theme_load(&t, "nosuch", collect, NULL, err, sizeof err),
		  (uint64_t)-1);
	CHECK(strstr(err, "nohome") == NULL, "a missing home is not named: \"%s\"", err);
	use_home();
	CHECK(same_slots(&t, &d), "failed load left non-default slots");

	CHECK_U64(theme_load(&t, tmp, collect, NULL, err, sizeof err),
		  (uint64_t)-1);
	CHECK(strstr(err, "Is a directory") != NULL, "got \"%s\"", err);
	CHECK_U64(theme_load(&t, "nosuch", collect, NULL, err, 8), (uint64_t)-1);
	CHECK_STR(err, "no them");
	CHECK_U64(theme_load(&t, "nosuch", collect, NULL, NULL, 0), (uint64_t)-1);
}

/* Over 64 KiB: the line crossing the limit and the rest are ignored. */
static void test_file_limits(void)
{
	size_t lines = 1000, len = 70;		/* 70000 bytes of comments */
	size_t size = len * (lines + 1) + 32;
	char *text = malloc(size), path[PATH_MAX];
	struct theme t;
	char err[256];

	strcpy(text, "warm = blue\n");
	for (size_t i = 0; i < lines; i++) {
		memset(text + 12 + i * len, '#', len - 1);
		text[12 + i * len + len - 1] = '\n';
	}
	strcpy(text + 12 + lines * len, "hot = blue\n");
	write_text("big.theme", text);
	snprintf(path, sizeof path, "%s/big.theme", tmp);
	forget_warnings();
	CHECK_U64(theme_load(&t, path, collect, NULL, err, sizeof err), 0);
	CHECK_U64(warned.n, 1);
	snprintf(text, size, "%s:938: file larger than 64 KiB; ignoring this "
		 "line and the rest", path);
	CHECK_STR(warned.first, text);
	CHECK_STYLE(t.slot[SLOT_WARM], style(4, D, 0), "warm before the cut");
	CHECK_STYLE(t.slot[SLOT_HOT], style(1, D, B), "hot after the cut");

	write_file("nul.theme", "warm = blue\n\0hot = blue\n", 24);
	snprintf(path, sizeof path, "%s/nul.theme", tmp);
	forget_warnings();
	CHECK_U64(theme_load(&t, path, collect, NULL, err, sizeof err), 0);
	snprintf(text, size, "%s:2: NUL byte; ignoring the rest of the file",
		 path);
	CHECK_STR(warned.first, text);
	CHECK_STYLE(t.slot[SLOT_WARM], style(4, D, 0), "warm before the NUL");
	CHECK_STYLE(t.slot[SLOT_HOT], style(1, D, B), "hot after the NUL");
	free(text);
}

static void test_theme_list(void)
{
	static const char *const want[] = { "custom", "default", "light", "mono" };
	static const char *const unwanted[] = { ".hidden", "bad name", "notes",
						"dir" };
	char names[64][64], few[2][64];
	size_t n, k;
	struct check_tally clean = { 0 }, sorted = { 0 };

	use_home();
	write_text("home/.config/qsptop/themes/.hidden.theme", "");
	write_text("home/.config/qsptop/themes/bad name.theme", "");
	write_text("home/.config/qsptop/themes/notes.txt", "");
	write_text("home/.config/qsptop/themes/dir.theme/x", "");
	n = theme_list(names, 64);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		for (k = 0; k < n && strcmp(names[k], want[i]) != 0; k++)
			;
		CHECK(k < n, "theme_list lacks \"%s\"", want[i]);
	}
	for (size_t i = 0; i < sizeof unwanted / sizeof unwanted[0]; i++)
		for (k = 0; k < n; k++)
			TALLY(&clean, strcmp(names[k], unwanted[i]) != 0,
			      "theme_list has \"%s\"", unwanted[i]);
	CHECK_TALLY(&clean, "theme_list lists no file that is not a theme");
	for (k = 1; k < n; k++)
		TALLY(&sorted, strcmp(names[k - 1], names[k]) < 0,
		      "\"%s\" then \"%s\"", names[k - 1], names[k]);
	CHECK_TALLY(&sorted, "theme_list sorted and unique");
	CHECK_U64(theme_list(few, 2), 2);
	CHECK_STR(few[0], names[0]);
	CHECK_STR(few[1], names[1]);
	CHECK_U64(theme_list(NULL, 0), 0);
}

static int remove_entry(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int main(void)
{
	snprintf(tmp, sizeof tmp, "/tmp/test_theme-XXXXXX");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	test_defaults_cover_every_slot();
	test_every_slot_name_parses();
	test_colour_and_attribute_words();
	test_layout_comments_and_case();
	test_partial_file_keeps_defaults();
	test_bad_lines_warn_and_are_skipped();
	test_good_lines_around_bad_ones_apply();
	test_very_long_lines();
	test_random_input_never_crashes();
	test_shipped_themes();
	test_shipped_themes_keep_their_promises();
	test_monochrome();
	test_user_themes_come_first();
	test_xdg_config_home_replaces_home();
	test_bad_names_and_missing_themes();
	test_file_limits();
	test_theme_list();
	nftw(tmp, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	return check_summary();
}
