/* Sampling the target's threads for futex waits outside libc. */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

#include "../common/clock.h"
#include "rawfutex.h"
#include "xalloc.h"

#define SAMPLE_MS 1000
#define LIBC_RANGES 8

struct rawfutex {
	pid_t pid;
	long sampled_ms;		/* when the threads were last read */
	uint64_t libc[LIBC_RANGES][2];	/* libc's executable mappings */
	size_t nlibc;
	uint32_t *tids;			/* threads seen waiting so */
	size_t ntids, cap;
};

struct rawfutex *rawfutex_new(pid_t pid)
{
	struct rawfutex *r = xcalloc(1, sizeof *r);

	r->pid = pid;
	r->sampled_ms = -SAMPLE_MS;
	return r;
}

void rawfutex_free(struct rawfutex *r)
{
	if (r == NULL)
		return;
	free(r->tids);
	free(r);
}

/* libc's code, from /proc/PID/maps: its calls are glibc's, seen or not. */
static void read_libc(struct rawfutex *r)
{
	char path[64], line[4096], perms[8];
	unsigned long lo, hi;
	FILE *f;

	r->nlibc = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)r->pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f) && r->nlibc < LIBC_RANGES) {
		const char *name = strrchr(line, '/');

		if (name && strcmp(name, "/libc.so.6\n") == 0 &&
		    sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 &&
		    perms[2] == 'x') {
			r->libc[r->nlibc][0] = lo;
			r->libc[r->nlibc++][1] = hi;
		}
	}
	if (f)
		fclose(f);
}

static bool in_libc(const struct rawfutex *r, uint64_t pc)
{
	for (size_t i = 0; i < r->nlibc; i++)
		if (pc >= r->libc[i][0] && pc < r->libc[i][1])
			return true;
	return false;
}

/*
 * Whether thread tid is blocked in a futex call made outside libc. Its
 * syscall file reads "NR ARG1 ... ARG6 SP PC" while it is in a system
 * call, "running" or "-1 SP PC" otherwise.
 */
static bool waits_raw(const struct rawfutex *r, uint32_t tid)
{
	char path[64], line[512];
	unsigned long long v[9];
	long nr;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/task/%u/syscall", (int)r->pid, tid);
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	n = fgets(line, sizeof(line), f) == NULL ? 0 :
	    sscanf(line, "%ld %llx %llx %llx %llx %llx %llx %llx %llx", &nr,
		   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	return n == 9 && (nr == SYS_futex || nr == SYS_futex_waitv) &&
	       !in_libc(r, v[7]);
}

static void note_tid(struct rawfutex *r, uint32_t tid)
{
	for (size_t i = 0; i < r->ntids; i++)
		if (r->tids[i] == tid)
			return;
	r->tids = xgrow(r->tids, &r->cap, r->ntids + 1, 16, sizeof *r->tids);
	r->tids[r->ntids++] = tid;
}

void rawfutex_sample(struct rawfutex *r)
{
	char path[64];
	struct dirent *d;
	long now = clock_now_ms();
	DIR *dir;

	if (r->pid <= 0 || now - r->sampled_ms < SAMPLE_MS)
		return;
	r->sampled_ms = now;
	read_libc(r);
	if (r->nlibc == 0)
		return;		/* not glibc, or /proc is closed to us */
	snprintf(path, sizeof(path), "/proc/%d/task", (int)r->pid);
	dir = opendir(path);
	while (dir && (d = readdir(dir)) != NULL) {
		char *end;
		unsigned long tid = strtoul(d->d_name, &end, 10);

		if (*end == '\0' && tid > 0 && tid <= UINT32_MAX &&
		    waits_raw(r, (uint32_t)tid))
			note_tid(r, (uint32_t)tid);
	}
	if (dir)
		closedir(dir);
}

uint32_t rawfutex_threads(const struct rawfutex *r)
{
	return r ? (uint32_t)r->ntids : 0;
}
