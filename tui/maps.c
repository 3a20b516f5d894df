/* Reading /proc/PID/maps (maps.h). */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "maps.h"

/* Parse one line into m (its path points into line); false if malformed. */
static bool parse_line(char *line, struct maps_line *m)
{
	unsigned maj, min;
	const char *slash;
	int at = 0;

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64
		   " %n", &m->start, &m->end, m->perms, &m->offset, &maj, &min,
		   &m->ino, &at) < 7)
		return false;
	m->dev = (uint64_t)maj << 32 | min;
	line[strcspn(line, "\n")] = '\0';
	m->path = at ? line + at : "";
	slash = strrchr(m->path, '/');
	m->name = slash ? slash + 1 : m->path;
	return true;
}

int maps_each(pid_t pid, void (*fn)(const struct maps_line *, void *),
	      void *ctx)
{
	char path[64], line[PATH_MAX + 256];
	struct maps_line m;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (parse_line(line, &m))
			fn(&m, ctx);
	}
	fclose(f);
	return 0;
}

const void *maps_span_find(const void *array, size_t n, size_t stride,
			   uint64_t address)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct maps_span *s =
			(const void *)((const char *)array + mid * stride);

		if (address < s->start)
			hi = mid;
		else if (address >= s->end)
			lo = mid + 1;
		else
			return s;
	}
	return NULL;
}
