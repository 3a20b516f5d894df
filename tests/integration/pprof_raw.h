/*
 * What go tool pprof -raw makes of a profile, for the tests that check
 * qsptop's profiles with it: the sums of its samples' three values
 * (contentions, delay, acquisitions) and their count.
 */
#ifndef QSPTOP_TEST_PPROF_RAW_H
#define QSPTOP_TEST_PPROF_RAW_H

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

struct pprof_sums {
	double contentions, delay, acquisitions, caused;
	int samples;
};

/* The values of a sample line "  V V V ...: locs", into v; how many (0: none). */
static inline int pprof_raw_values(const char *p, double v[4])
{
	int n = 0;
	char *end;

	while (n < 4) {
		v[n] = strtod(p, &end);
		if (end == p)
			break;
		n++;
		p = end;
	}
	return *p == ':' ? n : 0;
}

/* The samples of -raw output: "  C  D  A  X: loc loc ..." after "Samples:". */
static inline struct pprof_sums pprof_raw_sums(const char *raw)
{
	struct pprof_sums s = { 0 };
	const char *p = strstr(raw, "\nSamples:\n");
	double v[4] = { 0 };

	p = p ? strchr(p + 10, '\n') : NULL;	/* past the header line */
	while (p && *++p) {
		int n = pprof_raw_values(p, v);

		if (n >= 3) {
			s.contentions += v[0];
			s.delay += v[1];
			s.acquisitions += v[2];
			s.caused += n == 4 ? v[3] : 0;
			s.samples++;
		} else if (!isspace((unsigned char)*p)) {
			break;		/* "Locations" */
		}
		p = strchr(p, '\n');
	}
	return s;
}

/*
 * go tool pprof -raw ARGS... (NULL-terminated, at most 4), its state kept
 * in the test's tmp: the sums in *s, or false when it failed.
 */
static inline bool pprof_raw(struct pprof_sums *s, long timeout_ms, ...)
{
	static char home[PATH_MAX + 8];
	char *argv[8] = { "go", "tool", "pprof", "-raw" }, *text;
	const char *out;
	struct start_opts so = { .out = tmp_path("raw.out"),
				 .err = tmp_path("raw.err"), .env = home };
	va_list ap;
	int n = 4;

	snprintf(home, sizeof(home), "HOME=%s", tmp);
	va_start(ap, timeout_ms);
	while (n < 7 && (argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	memset(s, 0, sizeof(*s));
	out = so.out;
	if (wait_status(start_with(argv, &so), timeout_ms) != 0)
		return false;
	text = slurp_file(out, "");
	*s = pprof_raw_sums(text);
	free(text);
	return true;
}

/*
 * The same sums from a JSON snapshot: its stacks' counts and waits, its
 * rows' acquisitions; *contended (may be NULL) gets the rows' contended.
 */
static inline struct pprof_sums snapshot_sums(const cJSON *snap,
					      double *contended)
{
	const cJSON *row, *st;
	struct pprof_sums s = { 0 };
	double c = 0;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		s.acquisitions += num_field(row, "acquisitions");
		c += num_field(row, "contended");
		cJSON_ArrayForEach(st, cJSON_GetObjectItem(row, "stacks")) {
			s.contentions += num_field(st, "count");
			s.delay += num_field(st, "wait_ns");
		}
	}
	if (contended)
		*contended = c;
	return s;
}

#endif
