/*
 * A connection qsptop refuses (a socket directory another user could have
 * made, a socket that is no socket) is an error of that try only: qsptop
 * goes on, watching the other processes of a tree. Each refusal must close
 * every descriptor the try opened, or a qsptop watching a tree with a
 * refused child would leak descriptors on every try.
 */
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/sockpath.h"
#include "../../tui/attach.h"
#include "check.h"

/* The descriptors this process has open. */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* the directory's own */
}

/* /bin/sleep as uid, a user no one has; its PID. */
static pid_t sleep_as(uid_t uid)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (setgroups(0, NULL) == 0 && setresgid(uid, uid, uid) == 0 &&
		    setresuid(uid, uid, uid) == 0)
			execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(126);
	}
	return pid;
}

/* Wait (5 s at most) until pid runs /bin/sleep: its user is uid then. */
static bool wait_exec(pid_t pid)
{
	char link[64], exe[256];

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	for (int i = 0; i < 500; i++) {
		ssize_t n = readlink(link, exe, sizeof(exe) - 1);

		if (n > 0 && (exe[n] = '\0', strstr(exe, "sleep") != NULL))
			return true;
		usleep(10000);
	}
	return false;
}

/* Try to connect to pid n times: each must be refused with why. */
static void expect_refusals(pid_t pid, const char *why, const char *what)
{
	int before = open_fds(), refused = 0;
	char err[512] = "";

	for (int i = 0; i < 20; i++) {
		struct attach a = { 0 };

		refused += attach_try_connect(&a, pid, 1000, false, err,
					      sizeof(err)) < 0 &&
			   strstr(err, why) != NULL;
	}
	CHECK(refused == 20, "%s: expected 20 refusals saying \"%s\", got %d "
	      "(last: %s)", what, why, refused, err);
	CHECK(open_fds() == before, "%s: %d descriptors open before 20 "
	      "refused tries, %d after", what, before, open_fds());
}

int main(void)
{
	uid_t victim = 2000000001u + (uid_t)(getpid() % 100000) * 2;
	char dir[108], path[108];
	pid_t target;
	int fd;

	if (geteuid() != 0) {
		SKIP("not root: cannot run a target as another user");
		return check_summary();
	}
	target = sleep_as(victim);
	CHECK(wait_exec(target), "PID %d did not run /bin/sleep", (int)target);
	sockpath_dir(dir, sizeof(dir), victim);
	sockpath_target(path, sizeof(path), victim, target);

	/* The right owner, but open to all. */
	CHECK(mkdir(dir, 0777) == 0 && chown(dir, victim, victim) == 0 &&
	      chmod(dir, 0777) == 0, "make %s: %s", dir, strerror(errno));
	expect_refusals(target, "open to other users", "a directory open to all");

	/* A private directory, where the socket is a plain file. */
	CHECK(chmod(dir, 0700) == 0, "chmod %s", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	CHECK(fd >= 0 && fchown(fd, victim, victim) == 0, "make %s", path);
	if (fd >= 0)
		close(fd);
	expect_refusals(target, "is not a socket", "a file for the socket");

	unlink(path);
	rmdir(dir);
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
	return check_summary();
}
