/*
 * Unit tests of outfile: a new file is only ever new, a replacement goes
 * through a temporary of its own; neither writes through a planted link,
 * and a failed write (a file size limit, as a full disk) leaves things as
 * they were.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../tui/outfile.h"
#include "check.h"

static char dir[64];		/* this run's scratch directory */

/* dir/name, in one of 4 buffers used in turn. */
static const char *at(const char *name)
{
	static char paths[4][PATH_MAX];
	static int next;
	char *p = paths[next++ % 4];

	snprintf(p, PATH_MAX, "%s/%s", dir, name);
	return p;
}

static void put(const char *name, const char *text)
{
	FILE *f = fopen(at(name), "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* The file's text, or "(missing)"; in one of 4 buffers used in turn. */
static const char *text_of(const char *name)
{
	static char bufs[4][256];
	static int next;
	char *b = bufs[next++ % 4];
	FILE *f = fopen(at(name), "r");
	size_t n;

	if (!f)
		return "(missing)";
	n = fread(b, 1, sizeof(bufs[0]) - 1, f);
	b[n] = '\0';
	fclose(f);
	return b;
}

static void plant_link(const char *name, const char *target)
{
	unlink(at(name));
	if (symlink(target, at(name)) < 0)
		CHECK(0, "symlink %s: %s", at(name), strerror(errno));
}

static bool is_link(const char *name)
{
	struct stat st;

	return lstat(at(name), &st) == 0 && S_ISLNK(st.st_mode);
}

static int entries(void)
{
	DIR *d = opendir(dir);
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n - 2;
}

/* Limit the size of files this process writes (0: no limit). */
static void limit_file_size(rlim_t bytes)
{
	struct rlimit rl;

	getrlimit(RLIMIT_FSIZE, &rl);
	rl.rlim_cur = bytes ? bytes : rl.rlim_max;
	setrlimit(RLIMIT_FSIZE, &rl);
}

static void test_create(void)
{
	char err[512] = "";
	struct stat st;

	CHECK(outfile_create(at("new.json"), "{}\n", 3, err, sizeof(err)) == 0,
	      "create a new file: %s", err);
	CHECK_STR(text_of("new.json"), "{}\n");
	CHECK(stat(at("new.json"), &st) == 0 && (st.st_mode & 0777) == 0644,
	      "a new file's mode follows the umask (022): 0%o", st.st_mode & 0777);
}

/* The second export of one second finds the first: it stays as it was. */
static void test_create_twice(void)
{
	char err[512] = "";

	put("twice.json", "first\n");
	CHECK(outfile_create(at("twice.json"), "second\n", 7, err, sizeof(err)) < 0,
	      "creating over an existing file fails");
	CHECK(strstr(err, "twice.json already exists: not overwritten") != NULL,
	      "says it exists: %s", err);
	CHECK_STR(text_of("twice.json"), "first\n");
}

static void test_create_planted_link(void)
{
	char err[512] = "";

	put("victim", "precious\n");
	plant_link("planted.json", at("victim"));
	CHECK(outfile_create(at("planted.json"), "x\n", 2, err, sizeof(err)) < 0,
	      "creating over a link fails");
	CHECK(strstr(err, "planted.json is a symbolic link: not followed, nothing written"),
	      "says it is a link: %s", err);
	CHECK(strchr(err, '\n') == NULL, "the error is one line: %s", err);
	CHECK_STR(text_of("victim"), "precious\n");
	CHECK(is_link("planted.json"), "the link stays a link");
	/* A dangling link: its target is not created either. */
	plant_link("dangling.json", at("would-be-created"));
	CHECK(outfile_create(at("dangling.json"), "x\n", 2, err, sizeof(err)) < 0,
	      "creating over a dangling link fails");
	CHECK_STR(text_of("would-be-created"), "(missing)");
}

static void test_create_full(void)
{
	char err[512] = "", big[4096];
	int before = entries();
	int rc;

	memset(big, 'x', sizeof(big));
	limit_file_size(1000);
	rc = outfile_create(at("full.json"), big, sizeof(big), err, sizeof(err));
	limit_file_size(0);
	CHECK(rc < 0, "a write past the file size limit fails");
	CHECK(strstr(err, "full.json: File too large") != NULL, "says why: %s", err);
	CHECK_STR(text_of("full.json"), "(missing)");
	CHECK(entries() == before, "nothing is left behind: %d entries, were %d",
	      entries(), before);
}

static void test_replace(void)
{
	char err[512] = "";
	struct stat st;
	int before;

	put("snap.json", "old\n");
	chmod(at("snap.json"), 0600);
	before = entries();
	CHECK(outfile_replace(at("snap.json"), "new\n", 4, err, sizeof(err)) == 0,
	      "replace a file: %s", err);
	CHECK_STR(text_of("snap.json"), "new\n");
	CHECK(stat(at("snap.json"), &st) == 0 && (st.st_mode & 0777) == 0600,
	      "the replacement keeps the file's mode 0600: 0%o", st.st_mode & 0777);
	CHECK(entries() == before, "no temporary is left: %d entries, were %d",
	      entries(), before);
}

/* A link the user named is replaced itself; its target is not written. */
static void test_replace_link(void)
{
	char err[512] = "";

	put("target", "target text\n");
	plant_link("link.json", at("target"));
	CHECK(outfile_replace(at("link.json"), "new\n", 4, err, sizeof(err)) == 0,
	      "replace a link: %s", err);
	CHECK(!is_link("link.json"), "the link is replaced by a file");
	CHECK_STR(text_of("link.json"), "new\n");
	CHECK_STR(text_of("target"), "target text\n");
}

/* Links at the names a temporary could predictably have are not followed. */
static void test_replace_planted_temporaries(void)
{
	static const char *const names[] = {
		"out.json.XXXXXX", "out.json.tmp", "out.json~", ".out.json.swp",
		"out.json.new", "out.json.000000", ".out.json",
	};
	char err[512] = "";
	int before;

	put("victim2", "precious\n");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		plant_link(names[i], at("victim2"));
	before = entries();
	CHECK(outfile_replace(at("out.json"), "new\n", 4, err, sizeof(err)) == 0,
	      "replace beside planted links: %s", err);
	CHECK_STR(text_of("out.json"), "new\n");
	CHECK_STR(text_of("victim2"), "precious\n");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		CHECK(is_link(names[i]), "%s is still the link planted", names[i]);
	CHECK(entries() == before + 1, "only out.json is added: %d entries, were %d",
	      entries(), before);
}

static void test_replace_full(void)
{
	char err[512] = "", big[4096];
	int before, rc;

	memset(big, 'x', sizeof(big));
	put("keep.json", "previous\n");
	before = entries();
	limit_file_size(1000);
	rc = outfile_replace(at("keep.json"), big, sizeof(big), err, sizeof(err));
	limit_file_size(0);
	CHECK(rc < 0, "a replacement past the file size limit fails");
	CHECK(strstr(err, "keep.json: File too large") != NULL, "says why: %s", err);
	CHECK_STR(text_of("keep.json"), "previous\n");
	CHECK(entries() == before, "no temporary is left: %d entries, were %d",
	      entries(), before);
}

static void test_replace_missing_dir(void)
{
	char err[512] = "";

	CHECK(outfile_replace(at("no/such/dir.json"), "x", 1, err, sizeof(err)) < 0,
	      "a missing directory fails");
	CHECK(strstr(err, "no/such/dir.json: directory ") &&
	      strstr(err, "no/such: No such file or directory"),
	      "says why, naming the directory: %s", err);
}

int main(void)
{
	char cmd[128];

	signal(SIGXFSZ, SIG_IGN);
	umask(022);
	snprintf(dir, sizeof(dir), "/tmp/qsptop-outfile-XXXXXX");
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	test_create();
	test_create_twice();
	test_create_planted_link();
	test_create_full();
	test_replace();
	test_replace_link();
	test_replace_planted_temporaries();
	test_replace_full();
	test_replace_missing_dir();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return check_summary();
}
