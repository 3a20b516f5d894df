/*
 * End-to-end tests of where the real qsptop writes -j and --folded: the
 * file named is replaced, a link there included, without writing through
 * it; links planted at names a temporary might have are not followed; a
 * write that fails (a file size limit, as a full disk) keeps the old files
 * and leaves no temporary behind; one that cannot even start, in a missing
 * or closed directory, names that directory. (The live screen's e and f:
 * test_tui.)
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "../unit/check.h"
#include "harness.h"

#define RUN_TIMEOUT_MS 60000

/* Make tmp/name, a scratch directory for one test; its path in dir. */
static void subdir(char dir[PATH_MAX], const char *name)
{
	strcpy(dir, tmp_path(name));
	if (mkdir(dir, 0755) < 0)
		CHECK(0, "mkdir %s: %s", dir, strerror(errno));
}

/* dir/name, in one of 8 buffers used in turn. */
static char *in(const char *dir, const char *name)
{
	static char paths[8][PATH_MAX];
	static int next;
	char *p = paths[next++ % 8];
	char base[PATH_MAX];

	join(base, dir, "/");
	join(p, base, name);
	return p;
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static bool is_link(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n - 2;
}

/* The file's text is text: it was not written. */
static void check_untouched(const char *path, const char *text)
{
	char *got = slurp_file(path, "(missing)");

	CHECK(strcmp(got, text) == 0, "%s: expected it untouched (\"%s\"), got \"%.80s\"",
	      path, text, got);
	free(got);
}

/* -j and --folded onto links the user named: the links are replaced. */
static void test_user_links_replaced(void)
{
	char dir[PATH_MAX], json[PATH_MAX], folded[PATH_MAX], victim[PATH_MAX];
	char *argv[] = { qsptop, "-b", "-j", json, "--folded", folded, "--",
			 workload, "mutex", "/dev/null", NULL };
	struct run r;
	cJSON *snap;

	subdir(dir, "links");
	strcpy(json, in(dir, "snap.json"));
	strcpy(folded, in(dir, "snap.folded"));
	strcpy(victim, in(dir, "victim"));
	put(victim, "precious\n");
	if (symlink(victim, json) < 0 || symlink(victim, folded) < 0)
		CHECK(0, "symlink: %s", strerror(errno));
	r = run_capture(argv, RUN_TIMEOUT_MS, 0);
	CHECK(r.status == 0, "-j and --folded onto links: expected exit 0, got %d: %s",
	      r.status, r.err);
	CHECK(!is_link(json) && !is_link(folded), "the links are replaced by files");
	snap = load_json(json);
	CHECK(snap && num_field(snap, "schema") == 1, "%s holds the snapshot", json);
	cJSON_Delete(snap);
	check_untouched(victim, "precious\n");
	CHECK(entries(dir) == 3, "%s: expected 3 entries (no temporary left), got %d",
	      dir, entries(dir));
	run_free(&r);
}

/* Links at the names a temporary could predictably have are left alone. */
static void test_planted_temporaries(void)
{
	static const char *const names[] = {
		"out.json.XXXXXX", "out.json.tmp", "out.json~", ".out.json.swp",
		"out.json.new", ".out.json", "out.json.000000", "out.folded.XXXXXX",
		"out.folded.tmp", "out.folded~",
	};
	char dir[PATH_MAX], json[PATH_MAX], folded[PATH_MAX], victim[PATH_MAX];
	char *argv[] = { qsptop, "-b", "-j", json, "--folded", folded, "--",
			 workload, "mutex", "/dev/null", NULL };
	size_t n = sizeof(names) / sizeof(names[0]);
	struct run r;
	cJSON *snap;

	subdir(dir, "planted");
	/* in() reuses its buffers, and the loops below call it often. */
	strcpy(json, in(dir, "out.json"));
	strcpy(folded, in(dir, "out.folded"));
	strcpy(victim, in(dir, "victim"));
	put(victim, "precious\n");
	for (size_t i = 0; i < n; i++)
		if (symlink(victim, in(dir, names[i])) < 0)
			CHECK(0, "symlink %s: %s", names[i], strerror(errno));
	r = run_capture(argv, RUN_TIMEOUT_MS, 0);
	CHECK(r.status == 0, "beside planted links: expected exit 0, got %d: %s",
	      r.status, r.err);
	snap = load_json(json);
	CHECK(snap != NULL, "%s holds the snapshot", json);
	cJSON_Delete(snap);
	check_untouched(victim, "precious\n");
	for (size_t i = 0; i < n; i++)
		CHECK(is_link(in(dir, names[i])), "%s is still the link planted", names[i]);
	CHECK(entries(dir) == (int)n + 3, "%s: expected %zu entries, got %d", dir,
	      n + 3, entries(dir));
	run_free(&r);
}

/*
 * Run argv with files limited to limit bytes, stdout to /dev/null and
 * stderr through a pipe (which no file size limit cuts); returns stderr.
 */
static char *run_limited(char *const argv[], rlim_t limit, int *status)
{
	char *err = calloc(1, 65536);
	size_t len = 0;
	int fds[2];
	ssize_t n;
	pid_t pid;

	*status = -1;
	if (pipe(fds) < 0)
		return err;
	pid = fork();
	if (pid == 0) {
		struct rlimit rl = { limit, limit };
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(null, 1);
		dup2(fds[1], 2);
		close(fds[0]);
		setrlimit(RLIMIT_FSIZE, &rl);
		execv(argv[0], argv);
		_exit(126);
	}
	close(fds[1]);
	while (len < 65535 && (n = read(fds[0], err + len, 65535 - len)) > 0)
		len += (size_t)n;
	close(fds[0]);
	*status = wait_status(pid, RUN_TIMEOUT_MS);
	return err;
}

/* Both writes fail (as on a full disk): both old files stay, exit 1. */
static void test_full_disk_keeps_files(void)
{
	char dir[PATH_MAX], json[PATH_MAX], folded[PATH_MAX];
	/* block: one wait of 150 ms or more, so one folded line at least. */
	char *argv[] = { qsptop, "-b", "-j", json, "--folded", folded, "--",
			 workload, "block", "/dev/null", NULL };
	int status;
	char *err;

	subdir(dir, "full");
	strcpy(json, in(dir, "keep.json"));
	strcpy(folded, in(dir, "keep.folded"));
	put(json, "previous snapshot\n");
	put(folded, "previous stacks\n");
	/* Smaller than either file (the folded line is some 100 bytes). */
	err = run_limited(argv, 40, &status);
	CHECK(status == 1, "writes past the file size limit: expected exit 1, got %d",
	      status);
	CHECK(strstr(err, "cannot write the JSON snapshot: ") &&
	      strstr(err, "keep.json: File too large"), "says why for -j: %s", err);
	CHECK(strstr(err, "cannot write the folded stacks: ") &&
	      strstr(err, "keep.folded: File too large"), "says why for --folded: %s",
	      err);
	check_untouched(json, "previous snapshot\n");
	check_untouched(folded, "previous stacks\n");
	CHECK(entries(dir) == 2, "%s: expected 2 entries (no temporary left), got %d",
	      dir, entries(dir));
	free(err);
}

/*
 * Run qsptop -b -n 1 with -j json and --folded folded on `true`, as uid
 * (0: ourselves); its exit status, stderr in err (malloc'ed).
 */
static int run_export_as(uid_t uid, const char *json, const char *folded,
			 char **err)
{
	char *argv[] = { qsptop, "-b", "-n", "1", "-j", (char *)json,
			 "--folded", (char *)folded, "--", "true", NULL };
	char *out = tmp_path("as.out"), *errp = tmp_path("as.err");
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(o, 1);
		dup2(e, 2);
		if (uid && (setgid(uid) < 0 || setuid(uid) < 0))
			_exit(125);
		execv(argv[0], argv);
		_exit(126);
	}
	status = wait_status(pid, RUN_TIMEOUT_MS);
	*err = slurp_file(errp, "");
	return status;
}

/* Whether text is one line. */
static bool one_line(const char *text)
{
	const char *nl = strchr(text, '\n');

	return nl && nl[1] == '\0';
}

/* An export into a missing directory: one line that names that directory. */
static void test_missing_directory_named(void)
{
	char dir[PATH_MAX], want[PATH_MAX + 64];
	char *err;
	int status;

	strcpy(dir, tmp_path("missing"));
	snprintf(want, sizeof(want), "directory %s: No such file or directory", dir);
	status = run_export_as(0, in(dir, "snap.json"), tmp_path("ok.folded"), &err);
	CHECK(status == 1 && one_line(err) &&
	      strstr(err, "cannot write the JSON snapshot") && strstr(err, want),
	      "-j into a missing directory: expected exit 1 and one line with "
	      "\"%s\", got %d: %s", want, status, err);
	free(err);
	status = run_export_as(0, tmp_path("ok.json"), in(dir, "snap.folded"), &err);
	CHECK(status == 1 && one_line(err) &&
	      strstr(err, "cannot write the folded stacks") && strstr(err, want),
	      "--folded into a missing directory: expected exit 1 and one line "
	      "with \"%s\", got %d: %s", want, status, err);
	free(err);
}

/* An export into a directory closed to the user: its name and why. */
static void test_unwritable_directory_named(void)
{
	const uid_t nobody = 65534;
	char dir[PATH_MAX], want[PATH_MAX + 64];
	char *err;
	int status;

	if (getuid() != 0) {
		SKIP("not root: cannot run qsptop as another user");
		return;
	}
	subdir(dir, "closed");
	chmod(tmp, 0755);
	chmod(dir, 0555);
	snprintf(want, sizeof(want), "directory %s: Permission denied", dir);
	status = run_export_as(nobody, in(dir, "snap.json"), "/dev/null", &err);
	CHECK(status == 1 && one_line(err) && strstr(err, want),
	      "-j into a directory closed to the user: expected exit 1 and one "
	      "line with \"%s\", got %d: %s", want, status, err);
	free(err);
	chmod(tmp, 0700);
}

int main(void)
{
	find_paths("/tmp/qsptop-export-XXXXXX", "wl_locks");
	signal(SIGPIPE, SIG_IGN);
	test_user_links_replaced();
	test_planted_temporaries();
	test_full_disk_keeps_files();
	test_missing_directory_named();
	test_unwritable_directory_named();
	remove_tmp();
	return check_summary();
}
