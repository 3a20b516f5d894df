/*
 * Reading /proc/PID/maps: this process's own lines come back in address
 * order, with the executable's text (offset 0, executable, named by its
 * file), the stack, and an anonymous mapping of our own with an empty
 * path; an absent process is -1 with ENOENT.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "../../tui/maps.h"

struct seen {
	uint64_t last_start, anon;
	int lines, in_order, own_text, stack, anon_found;
};

static void note(const struct maps_line *l, void *ctx)
{
	struct seen *s = ctx;
	uint64_t here = (uint64_t)(uintptr_t)&note;

	s->in_order += s->lines == 0 || l->start > s->last_start;
	s->last_start = l->start;
	s->lines++;
	if (here >= l->start && here < l->end && maps_exec(l) &&
	    strcmp(l->name, "test_maps") == 0 && l->path[0] == '/' &&
	    l->ino != 0)
		s->own_text++;
	s->stack += strcmp(l->path, "[stack]") == 0;
	if (l->start == s->anon && l->path[0] == '\0' && l->ino == 0 &&
	    !maps_shared(l) && !maps_exec(l))
		s->anon_found++;
}

/* An element that begins with its span, and more after it. */
struct tagged {
	struct maps_span span;
	int tag;
};

/* maps_span_find() over spans with gaps: inside, edges, gaps, outside. */
static void test_span_find(void)
{
	static const struct tagged t[] = {
		{ { 0x1000, 0x2000 }, 1 },
		{ { 0x2000, 0x3000 }, 2 },
		{ { 0x5000, 0x6000 }, 3 },
		{ { 0x9000, 0xa000 }, 4 },
	};
	static const struct { uint64_t a; int tag; } cases[] = {
		{ 0, 0 }, { 0xfff, 0 }, { 0x1000, 1 }, { 0x1fff, 1 },
		{ 0x2000, 2 }, { 0x3000, 0 }, { 0x4fff, 0 }, { 0x5800, 3 },
		{ 0x9fff, 4 }, { 0xa000, 0 }, { UINT64_MAX, 0 },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct tagged *got = maps_span_find(t, 4, sizeof t[0],
							  cases[i].a);

		CHECK((got ? got->tag : 0) == cases[i].tag,
		      "address %#llx: expected span %d, got %d",
		      (unsigned long long)cases[i].a, cases[i].tag,
		      got ? got->tag : 0);
	}
	CHECK(maps_span_find(t, 0, sizeof t[0], 0x1000) == NULL,
	      "no spans: nothing found");
}

int main(void)
{
	test_span_find();
	void *anon = mmap(NULL, 3 * 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	struct seen s = { .anon = (uint64_t)(uintptr_t)anon };

	CHECK(anon != MAP_FAILED, "an anonymous mapping to find");
	CHECK(maps_each(getpid(), note, &s) == 0, "maps_each(self) reads");
	CHECK(s.lines > 5, "expected several mappings, got %d", s.lines);
	CHECK(s.in_order == s.lines, "mappings in address order: %d of %d",
	      s.in_order, s.lines);
	CHECK(s.own_text == 1, "our text: executable, named test_maps, got %d",
	      s.own_text);
	CHECK(s.stack == 1, "one [stack] line, got %d", s.stack);
	CHECK(s.anon_found == 1, "our anonymous mapping, path \"\", got %d",
	      s.anon_found);
	errno = 0;
	CHECK(maps_each(999999999, note, &s) == -1 && errno == ENOENT,
	      "an absent process: -1, ENOENT (errno %d)", errno);
	return check_summary();
}
