/* The PIDs of the processes of one table, by index. */
#include <stdlib.h>
#include <string.h>

#include "procs.h"
#include "xalloc.h"

static pid_t *pids;
static size_t n, cap;

void procs_set_pid(unsigned proc, pid_t pid)
{
	if (proc >= PROCS_MAX)
		return;
	if (proc >= n) {
		pids = xgrow(pids, &cap, proc + 1, 16, sizeof(*pids));
		memset(pids + n, 0, (proc + 1 - n) * sizeof(*pids));
		n = proc + 1;
	}
	pids[proc] = pid;
}

pid_t procs_pid(unsigned proc)
{
	return proc < n ? pids[proc] : 0;
}

pid_t procs_filter(const char *filter)
{
	char *end;
	long pid;

	if (filter == NULL || strncmp(filter, "pid:", 4) != 0)
		return 0;
	pid = strtol(filter + 4, &end, 10);
	return end != filter + 4 && *end == '\0' && pid > 0 && pid < (1L << 22) ?
	       (pid_t)pid : 0;
}
