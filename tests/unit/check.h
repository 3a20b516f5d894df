/* A minimal test harness: CHECK counts, the summary line ends the run. */
#ifndef QSPTOP_CHECK_H
#define QSPTOP_CHECK_H

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

static int check_passed, check_failed, check_skipped;

/*
 * A test signals one process it started or was told of. A PID it did not
 * get (-1 from a failed start or a note never written, 0) would make
 * kill() signal every process, or the test's own group: it fails with
 * ESRCH instead. Every kill() of a test goes through here.
 */
static inline int check_kill(pid_t pid, int sig)
{
	if (pid <= 0) {
		errno = ESRCH;
		return -1;
	}
	return (kill)(pid, sig);
}
#define kill(pid, sig) check_kill(pid, sig)

#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (cond) {                                                \
			check_passed++;                                    \
		} else {                                                   \
			check_failed++;                                    \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                      \
			fputc('\n', stderr);                               \
		}                                                          \
	} while (0)

#define CHECK_U64(got, want)                                               \
	CHECK((uint64_t)(got) == (uint64_t)(want),                         \
	      "%s: expected %" PRIu64 ", got %" PRIu64, #got,             \
	      (uint64_t)(want), (uint64_t)(got))

/*
 * One behaviour checked over many generated cases counts as one check: TALLY
 * counts the cases and keeps the first failure's description, CHECK_TALLY
 * then passes or fails once, saying how many cases failed and the first.
 * No case at all fails too: a sweep over nothing proves nothing.
 */
struct check_tally {
	size_t cases, failed;
	char first[240];
};

/* Keep the first failure's description (cut to fit). */
__attribute__((format(printf, 2, 3)))
static inline void check_tally_note(struct check_tally *t, const char *fmt,
				    ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->first, sizeof t->first, fmt, ap);
	va_end(ap);
}

#define TALLY(t, cond, ...)                                                \
	do {                                                               \
		(t)->cases++;                                              \
		if (!(cond) && (t)->failed++ == 0)                         \
			check_tally_note((t), __VA_ARGS__);                \
	} while (0)

#define CHECK_TALLY(t, what)                                               \
	CHECK((t)->cases > 0 && (t)->failed == 0,                          \
	      "%s: %zu of %zu cases failed, the first: %s", (what),       \
	      (t)->failed, (t)->cases,                                     \
	      (t)->cases ? (t)->first : "no case ran")

/* The whole file, malloc'ed and NUL-terminated; NULL if it cannot be read. */
static inline char *check_file_text(const char *path)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	long n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0) {
		rewind(f);
		text = calloc(1, (size_t)n + 1);
		if (text && fread(text, 1, (size_t)n, f) != (size_t)n)
			text[0] = '\0';
	}
	fclose(f);
	return text;
}

/* Equal strings, NULL never equal to anything. */
static inline int check_streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static inline const char *check_show(const char *s)
{
	return s ? s : "(null)";
}

#define CHECK_STR(got, want)                                               \
	CHECK(check_streq((got), (want)),                                  \
	      "%s: expected \"%s\", got \"%s\"", #got, check_show(want),   \
	      check_show(got))

/* A check that cannot run here: counted, and its reason printed. */
#define SKIP(...)                                                          \
	do {                                                               \
		check_skipped++;                                           \
		printf("SKIP %s:%d: ", __FILE__, __LINE__);               \
		printf(__VA_ARGS__);                                       \
		putchar('\n');                                             \
	} while (0)

/* Print the summary line (", N skipped" when some were) and return the exit status. */
static inline int check_summary(void)
{
	printf("%d passed, %d failed", check_passed, check_failed);
	if (check_skipped)
		printf(", %d skipped", check_skipped);
	putchar('\n');
	return check_failed != 0;
}

#endif
