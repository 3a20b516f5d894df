/*
 * libFuzzer target: arbitrary bytes as a theme file, through theme_parse()
 * and through theme_load() of the same bytes as a file (which also cuts at
 * a NUL byte). Both must agree, every style must be one a terminal can
 * show, and every warning must be one printable line of the form
 * "SOURCE:LINE: message" counted in the return value.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../tui/theme.h"

#define SOURCE "fuzz"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The warnings of one parse or load. */
struct warnings {
	int n;
	unsigned max_line;	/* no warning may name a later line */
	const char *source;
};

static void warned(void *ctx, const char *message)
{
	struct warnings *w = ctx;
	size_t len = strlen(w->source);
	unsigned line = 0;
	int used = 0;

	for (const unsigned char *p = (const unsigned char *)message; *p; p++)
		if (*p < 0x20 || *p >= 0x7f)
			abort();
	if (strncmp(message, w->source, len) != 0 ||
	    sscanf(message + len, ":%u: %n", &line, &used) != 1 || used == 0 ||
	    line == 0 || line > w->max_line || message[len + (size_t)used] == '\0')
		abort();
	w->n++;
}

static void check_styles(const struct theme *t)
{
	for (int i = 0; i < SLOT_COUNT; i++) {
		const struct theme_style *s = &t->slot[i];

		if (s->fg < COLOR_DEFAULT || s->fg > 255 ||
		    s->bg < COLOR_DEFAULT || s->bg > 255 ||
		    (s->attrs & ~(ATTR_BOLD | ATTR_DIM | ATTR_UNDERLINE |
				  ATTR_REVERSE)))
			abort();
	}
}

static bool same_slots(const struct theme *a, const struct theme *b)
{
	for (int i = 0; i < SLOT_COUNT; i++)
		if (a->slot[i].fg != b->slot[i].fg ||
		    a->slot[i].bg != b->slot[i].bg ||
		    a->slot[i].attrs != b->slot[i].attrs)
			return false;
	return true;
}

static unsigned count_lines(const char *text, size_t n)
{
	unsigned lines = 1;

	for (size_t i = 0; i < n; i++)
		lines += text[i] == '\n';
	return lines;
}

/* Parse the bytes up to the first NUL over the defaults. */
static int parse_text(struct theme *t, const uint8_t *data, size_t size,
		      struct warnings *w)
{
	char *text = malloc(size + 1);
	int problems;

	if (text == NULL)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';
	*w = (struct warnings){ 0, count_lines(text, strlen(text)), SOURCE };
	theme_defaults(t);
	problems = theme_parse(t, text, SOURCE, warned, w);
	free(text);
	if (problems != w->n)
		abort();
	check_styles(t);
	return problems;
}

/* Load the bytes as a theme file, from a memfd reached by a path. */
static void load_file(struct theme *t, const uint8_t *data, size_t size,
		      struct warnings *w)
{
	static int fd = -1;
	static char path[64];
	char err[512];

	if (fd < 0) {
		fd = memfd_create("fuzz_theme", 0);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	*w = (struct warnings){ 0, count_lines((const char *)data, size), path };
	if (theme_load(t, path, warned, w, err, sizeof(err)) < 0)
		abort();
	check_styles(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct warnings parsed, loaded;
	struct theme a, b;
	bool has_nul = memchr(data, '\0', size) != NULL;

	/* Past 64 KiB the loader cuts the text; libFuzzer rarely goes there. */
	if (size > 64 * 1024)
		return 0;
	parse_text(&a, data, size, &parsed);
	load_file(&b, data, size, &loaded);
	if (!same_slots(&a, &b) || loaded.n != parsed.n + (has_nul ? 1 : 0))
		abort();
	theme_monochrome(&a);
	for (int i = 0; i < SLOT_COUNT; i++)
		if (a.slot[i].fg != COLOR_DEFAULT || a.slot[i].bg != COLOR_DEFAULT)
			abort();
	return 0;
}
