/*
 * Debuginfo from debuginfod, fetched by a helper process. The helper is
 * forked from qsptop (single-threaded then) at the first request, keeps
 * only its two pipes, and loads libdebuginfod (libdw's own client, as libdw
 * does: with dlopen) with DEBUGINFOD_URLS back in its environment, a short
 * DEBUGINFOD_TIMEOUT unless the user chose one, and no retries. It reads
 * build ids in hex, one a line, and answers each: "found ID" (now in
 * debuginfod's cache), "missing ID" (no server has it) or "error ID ERRNO"
 * (the servers failed); "alive" while a download makes progress. A helper
 * that says nothing for longer than the timeout allows is taken for stuck
 * on a server that does not answer: it is killed and fetching stops.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/clock.h"
#include "fetch.h"
#include "xalloc.h"

#define BUILD_ID_MAX 64
#define DEFAULT_TIMEOUT_S 5
/* Beyond the timeout: libdebuginfod looks at its transfers once a second. */
#define SILENCE_SLACK_MS 2000
#define LINE_MAX_LEN (2 * BUILD_ID_MAX + 32)

struct request {
	uint8_t id[BUILD_ID_MAX];
	size_t len;
	bool answered;
};

struct fetch {
	char *urls;		/* NULL when no server is named */
	unsigned timeout_s;
	pid_t helper;		/* 0 until started, and once killed */
	int to_helper, from_helper;
	char in[4 * LINE_MAX_LEN];
	size_t in_len;
	struct request *reqs;
	size_t nreqs, busy;
	int64_t quiet_since_ms;	/* when the helper last said something */
	bool stopped;
	char failure[512];
};

/* The client of libdebuginfod (elfutils/debuginfod.h), which we dlopen. */
struct debuginfod_client;
struct debuginfod_lib {
	struct debuginfod_client *(*begin)(void);
	int (*find_debuginfo)(struct debuginfod_client *c,
			      const unsigned char *id, int len, char **path);
	void (*set_progressfn)(struct debuginfod_client *c,
			       int (*fn)(struct debuginfod_client *c, long a,
					 long b));
};

static int64_t helper_alive_ms;	/* the helper's last "alive" */

struct fetch *fetch_new(void)
{
	struct fetch *f = xcalloc(1, sizeof *f);
	const char *urls = getenv("DEBUGINFOD_URLS");
	const char *timeout = getenv("DEBUGINFOD_TIMEOUT");

	f->to_helper = f->from_helper = -1;
	if (urls && urls[strspn(urls, " \t")]) {
		f->urls = xstrdup(urls + strspn(urls, " \t"));
		f->urls[strcspn(f->urls, "\n")] = '\0';
	}
	unsetenv("DEBUGINFOD_URLS");
	f->timeout_s = timeout && atoi(timeout) > 0 ? (unsigned)atoi(timeout)
						     : DEFAULT_TIMEOUT_S;
	return f;
}

void fetch_free(struct fetch *f)
{
	if (!f)
		return;
	fetch_stop(f);
	free(f->urls);
	free(f->reqs);
	free(f);
}

static void hex_of(char *out, const uint8_t *id, size_t len)
{
	for (size_t i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
	out[2 * len] = '\0';
}

/* Parse hex into id; its length, 0 if it is no build id. */
static size_t id_of(uint8_t *id, const char *hex)
{
	size_t n = strspn(hex, "0123456789abcdef");

	if (n == 0 || n % 2 || n / 2 > BUILD_ID_MAX)
		return 0;
	for (size_t i = 0; i < n / 2; i++)
		sscanf(hex + 2 * i, "%2hhx", &id[i]);
	return n / 2;
}

/* debuginfod's cache directory, as libdebuginfod finds it. */
static void cache_dir(char *out, size_t size)
{
	const char *env = getenv("DEBUGINFOD_CACHE_PATH");
	const char *home = getenv("HOME") ? getenv("HOME") : "/";
	const char *xdg = getenv("XDG_CACHE_HOME");
	struct stat st;

	if (env && *env) {
		snprintf(out, size, "%s", env);
		return;
	}
	snprintf(out, size, "%s/.debuginfod_client_cache", home);
	if (stat(out, &st) == 0)
		return;
	if (xdg && *xdg)
		snprintf(out, size, "%s/debuginfod_client", xdg);
	else
		snprintf(out, size, "%s/.cache/debuginfod_client", home);
}

int fetch_open_cached(const struct fetch *f, const uint8_t *id, size_t len,
		      char **path)
{
	char dir[4096], hex[2 * BUILD_ID_MAX + 1], file[4096 + sizeof hex + 16];
	struct stat st;
	int fd;

	if (!f->urls || len == 0 || len > BUILD_ID_MAX)
		return -1;
	cache_dir(dir, sizeof dir);
	hex_of(hex, id, len);
	snprintf(file, sizeof file, "%s/%s/debuginfo", dir, hex);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	/* An empty file is debuginfod's note that no server had it. */
	if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_size == 0)) {
		close(fd);
		return -1;
	}
	if (fd >= 0)
		*path = xstrdup(file);
	return fd;
}

/* In the helper: tell qsptop a download is making progress. */
static int helper_progress(struct debuginfod_client *c, long done, long size)
{
	(void)c;
	(void)done;
	if (size > 0 && clock_now_ms() - helper_alive_ms >= 1000) {
		helper_alive_ms = clock_now_ms();
		dprintf(STDOUT_FILENO, "alive\n");
	}
	return 0;
}

/* In the helper: libdebuginfod's functions, or false. */
static bool helper_load(struct debuginfod_lib *lib)
{
	void *so = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!so)
		return false;
	*(void **)&lib->begin = dlsym(so, "debuginfod_begin");
	*(void **)&lib->find_debuginfo = dlsym(so, "debuginfod_find_debuginfo");
	*(void **)&lib->set_progressfn = dlsym(so, "debuginfod_set_progressfn");
	return lib->begin && lib->find_debuginfo && lib->set_progressfn;
}

/* In the helper: answer each build id read from stdin. */
static void helper_serve(const struct fetch *f)
{
	struct debuginfod_lib lib;
	struct debuginfod_client *c;
	char timeout[16], *line = NULL;
	size_t cap = 0;
	FILE *in;

	setenv("DEBUGINFOD_URLS", f->urls, 1);
	snprintf(timeout, sizeof timeout, "%u", f->timeout_s);
	setenv("DEBUGINFOD_TIMEOUT", timeout, 0);
	setenv("DEBUGINFOD_RETRY_LIMIT", "0", 0);
	if (!helper_load(&lib) || !(c = lib.begin()) ||
	    !(in = fdopen(STDIN_FILENO, "r"))) {
		dprintf(STDOUT_FILENO, "nolib\n");
		return;
	}
	lib.set_progressfn(c, helper_progress);
	while (getline(&line, &cap, in) > 0) {
		uint8_t id[BUILD_ID_MAX];
		size_t len = id_of(id, line);
		char *path = NULL;
		int fd;

		line[strcspn(line, "\n")] = '\0';
		if (len == 0)
			continue;
		fd = lib.find_debuginfo(c, id, (int)len, &path);
		free(path);
		if (fd >= 0)
			close(fd);
		if (fd >= 0)
			dprintf(STDOUT_FILENO, "found %s\n", line);
		else if (fd == -ENOENT)
			dprintf(STDOUT_FILENO, "missing %s\n", line);
		else
			dprintf(STDOUT_FILENO, "error %s %d\n", line, -fd);
	}
}

/*
 * In the helper, just forked: keep only the pipes (as stdin and stdout;
 * the socket to the collector must not outlive qsptop here), die with
 * qsptop, and serve.
 */
static void helper_main(const struct fetch *f, int in, int out, pid_t parent)
{
	int null = open("/dev/null", O_WRONLY);

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	dup2(in, STDIN_FILENO);
	dup2(out, STDOUT_FILENO);
	if (null >= 0)
		dup2(null, STDERR_FILENO);
	close_range(3, ~0u, 0);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	helper_serve(f);
	_exit(0);
}

/* Stop fetching, saying why in the words of fmt. */
static void fail(struct fetch *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fail(struct fetch *f, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	if (!f->failure[0]) {
		va_start(ap, fmt);
		vsnprintf(why, sizeof why, fmt, ap);
		va_end(ap);
		snprintf(f->failure, sizeof f->failure,
			 "debuginfod: %s; names from local files only", why);
	}
	fetch_stop(f);
}

static bool helper_start(struct fetch *f)
{
	int down[2], up[2];
	pid_t parent = getpid();

	if (pipe2(down, O_CLOEXEC) < 0)
		return false;
	if (pipe2(up, O_CLOEXEC) < 0) {
		close(down[0]);
		close(down[1]);
		return false;
	}
	f->helper = fork();
	if (f->helper == 0)
		helper_main(f, down[0], up[1], parent);
	close(down[0]);
	close(up[1]);
	f->to_helper = down[1];
	f->from_helper = up[0];
	fcntl(f->to_helper, F_SETFL, O_NONBLOCK);
	fcntl(f->from_helper, F_SETFL, O_NONBLOCK);
	if (f->helper < 0) {
		f->helper = 0;
		return false;
	}
	return true;
}

void fetch_request(struct fetch *f, const uint8_t *id, size_t len)
{
	char line[2 * BUILD_ID_MAX + 2];
	struct request *r;

	if (!f->urls || f->stopped || len == 0 || len > BUILD_ID_MAX)
		return;
	for (size_t i = 0; i < f->nreqs; i++)
		if (f->reqs[i].len == len && memcmp(f->reqs[i].id, id, len) == 0)
			return;
	if (!f->helper && !helper_start(f)) {
		fail(f, "cannot start fetching: %s", strerror(errno));
		return;
	}
	f->reqs = xreallocarray(f->reqs, f->nreqs + 1, sizeof *f->reqs);
	r = &f->reqs[f->nreqs++];
	*r = (struct request){ .len = len };
	memcpy(r->id, id, len);
	hex_of(line, id, len);
	strcat(line, "\n");
	if (write(f->to_helper, line, strlen(line)) != (ssize_t)strlen(line)) {
		r->answered = true;
		return;
	}
	if (f->busy++ == 0)
		f->quiet_since_ms = clock_now_ms();
}

/* Mark the request for hex answered; false if there was none. */
static bool answer(struct fetch *f, const char *hex, uint8_t *id, size_t *len)
{
	*len = id_of(id, hex);
	for (size_t i = 0; *len && i < f->nreqs; i++) {
		struct request *r = &f->reqs[i];

		if (r->len == *len && !r->answered &&
		    memcmp(r->id, id, *len) == 0) {
			r->answered = true;
			f->busy--;
			return true;
		}
	}
	return false;
}

/* Act on one line of the helper's. */
static void heard(struct fetch *f, char *line,
		  void (*landed)(void *ctx, const uint8_t *id, size_t len),
		  void *ctx)
{
	uint8_t id[BUILD_ID_MAX];
	char hex[LINE_MAX_LEN];
	size_t len;
	int err;

	f->quiet_since_ms = clock_now_ms();
	if (strcmp(line, "nolib") == 0)
		fail(f, "cannot load libdebuginfod.so.1 (install libdebuginfod1)");
	else if (sscanf(line, "found %140s", hex) == 1 && answer(f, hex, id, &len))
		landed(ctx, id, len);
	else if (sscanf(line, "missing %140s", hex) == 1)
		answer(f, hex, id, &len);
	else if (sscanf(line, "error %140s %d", hex, &err) == 2 && err == ETIME)
		fail(f, "%s did not answer in %us", f->urls, f->timeout_s);
	else if (sscanf(line, "error %140s %d", hex, &err) == 2)
		fail(f, "%s: %s", f->urls, strerror(err));
}

/* Read what the helper wrote; false when it has gone. */
static bool read_helper(struct fetch *f,
			void (*landed)(void *ctx, const uint8_t *id, size_t len),
			void *ctx)
{
	char *nl;
	ssize_t n;

	while ((n = read(f->from_helper, f->in + f->in_len,
			 sizeof f->in - f->in_len - 1)) > 0) {
		f->in_len += (size_t)n;
		f->in[f->in_len] = '\0';
		while (f->helper && (nl = strchr(f->in, '\n'))) {
			*nl = '\0';
			heard(f, f->in, landed, ctx);
			f->in_len -= (size_t)(nl + 1 - f->in);
			memmove(f->in, nl + 1, f->in_len + 1);
		}
		if (!f->helper)
			return true;
		if (f->in_len == sizeof f->in - 1)
			f->in_len = 0;	/* no line is that long */
	}
	return n < 0 && (errno == EAGAIN || errno == EINTR);
}

void fetch_poll(struct fetch *f, int wait_ms,
		void (*landed)(void *ctx, const uint8_t *id, size_t len),
		void *ctx)
{
	struct pollfd p = { .fd = f->from_helper, .events = POLLIN };

	if (!f->helper)
		return;
	if (wait_ms > 0 && f->busy)
		poll(&p, 1, wait_ms);
	if (!read_helper(f, landed, ctx) && f->helper)
		fail(f, "the fetching process ended");
	if (f->helper && f->busy && clock_now_ms() - f->quiet_since_ms >
	    (int64_t)f->timeout_s * 1000 + SILENCE_SLACK_MS)
		fail(f, "%s did not answer in %us", f->urls, f->timeout_s);
}

size_t fetch_busy(const struct fetch *f)
{
	return f->busy;
}

void fetch_stop(struct fetch *f)
{
	int64_t waited = clock_now_ms() - f->quiet_since_ms;

	if (f->helper) {
		kill(f->helper, SIGKILL);
		waitpid(f->helper, NULL, 0);
		close(f->to_helper);
		close(f->from_helper);
		f->helper = 0;
	}
	if (f->busy && !f->failure[0])
		snprintf(f->failure, sizeof f->failure, "debuginfod: %s did not "
			 "answer in %llds; names from local files only", f->urls,
			 (long long)(waited + 999) / 1000);
	f->busy = 0;
	f->stopped = f->urls != NULL;
}

const char *fetch_failure(const struct fetch *f)
{
	return f->failure[0] ? f->failure : NULL;
}
