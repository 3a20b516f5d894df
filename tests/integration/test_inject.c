/*
 * Loading the collector into running processes (tui/inject*.c, linked
 * in): it loads into a workload that never preloaded it, through a thread
 * parked in each kind of call, and the workload's threads keep working
 * and its results stay exact; every refusal says why and leaves the target
 * running; a copy is loaded where the target cannot see ours. The
 * borrowed thread itself: test_inject_borrow.c.
 */
#include "inject_targets.h"

/* Mappings of PID whose path ends with name. */
static int count_mapped(pid_t pid, const char *name)
{
	char path[64], line[PATH_MAX + 256];
	size_t n = strlen(name);
	int count = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		size_t m = strcspn(line, "\n");

		count += m >= n && strncmp(line + m - n, name, n) == 0;
	}
	if (f != NULL)
		fclose(f);
	return count;
}

static void on_hello(void *ctx, const struct proto_hello *m)
{
	*(struct proto_hello *)ctx = *m;
}

/* Connect to the collector of pid (retrying 2 s) and read its HELLO. */
static bool collector_says_hello_as(pid_t pid, uid_t uid)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	static struct proto_hello hello;
	struct proto_visitor v = { .hello = on_hello };
	int64_t deadline = clock_now_ms() + 2000;
	static uint8_t buf[1 << 16];
	struct proto_frame f;
	size_t len = 0;
	char err[128];
	long used = 0;
	int fd;

	sockpath_target(addr.sun_path, sizeof(addr.sun_path), uid, pid);
	for (;;) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0)
			break;
		close(fd);
		if (clock_now_ms() >= deadline)
			return false;
		usleep(10000);
	}
	while (used == 0 && len < sizeof(buf)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, (int)(deadline + 1000 - clock_now_ms())) <= 0 ||
		    (n = read(fd, buf + len, sizeof(buf) - len)) <= 0)
			break;
		len += (size_t)n;
		used = proto_split(buf, len, &f, err, sizeof(err));
	}
	close(fd);
	memset(&hello, 0, sizeof(hello));
	return used > 0 && f.type == MSG_HELLO &&
	       proto_decode(&f, &v, &hello, err, sizeof(err)) == 0 &&
	       hello.magic == PROTO_MAGIC && hello.pid == (uint32_t)pid;
}

static bool collector_says_hello(pid_t pid)
{
	return collector_says_hello_as(pid, geteuid());
}

static void test_loads_into_running_target(void)
{
	char msg[512], junk[PATH_MAX + 32], want[64];
	struct proc p;
	double ms;
	int rc, fd, maps;

	if (!start_target(&p)) {
		CHECK(0, "workload did not start: %s", read_text(p.out));
		kill_proc(&p);
		return;
	}
	CHECK(count_mapped(p.pid, "/libqsptop.so") == 0,
	      "the workload should start without the collector");

	/* A failing dlopen reports dlerror's text and changes nothing. */
	snprintf(junk, sizeof(junk), "%s/not_a_library.so", tmp);
	fd = open(junk, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	for (int i = 0; i < 64; i++)
		CHECK(write(fd, "this is not an ELF file at all\n", 31) == 31,
		      "write");
	close(fd);
	rc = inject_collector(p.pid, junk, false, msg, sizeof(msg));
	snprintf(want, sizeof(want), "dlopen failed in PID %d: ", (int)p.pid);
	CHECK(rc == INJECT_FAILED && starts_with(msg, want) &&
	      strstr(msg, "invalid ELF header") != NULL,
	      "expected \"%s... invalid ELF header\", got %d \"%s\"", want, rc,
	      msg);
	CHECK(all_threads_progress(&p), "threads stalled after a failed dlopen");

	rc = timed_inject(p.pid, library, msg, sizeof(msg), &ms);
	CHECK(rc == INJECT_LOADED && msg[0] == '\0',
	      "inject: expected INJECT_LOADED and no message, got %d \"%s\"",
	      rc, msg);
	printf("injected in %.2f ms through thread %d parked in syscall %ld\n",
	       ms, (int)inject_last_tid, inject_last_syscall);
	maps = count_mapped(p.pid, "/libqsptop.so");
	CHECK(maps > 0, "libqsptop.so is not in /proc/%d/maps", (int)p.pid);
	CHECK(collector_says_hello(p.pid),
	      "no HELLO from the injected collector's socket");
	CHECK(all_threads_progress(&p), "threads stalled after the injection");

	/* Twice: the library is there, nothing is loaded again. */
	rc = inject_collector(p.pid, library, false, msg, sizeof(msg));
	CHECK(rc == INJECT_ALREADY, "second inject: expected INJECT_ALREADY, "
	      "got %d \"%s\"", rc, msg);
	CHECK(count_mapped(p.pid, "/libqsptop.so") == maps,
	      "the second inject changed the mappings");
	CHECK(collector_says_hello(p.pid), "no HELLO after the second inject");

	rc = stop_target(&p);
	CHECK(rc == 0 && strstr(read_text(p.out), "\nok ") != NULL,
	      "workload: expected exit 0 and \"ok\", got %d:\n%s", rc,
	      read_text(p.out));
}

/* Expect inject to fail with a message starting with want. */
static void expect_refusal(pid_t pid, const char *lib, const char *want)
{
	char msg[512];
	int rc = inject_collector(pid, lib, false, msg, sizeof(msg));

	CHECK(rc == INJECT_FAILED && starts_with(msg, want),
	      "PID %d: expected \"%s...\", got %d \"%s\"", (int)pid, want, rc,
	      msg);
}

static void start_sleep(struct proc *p)
{
	char *argv[] = { "/bin/sleep", "60", NULL };

	spawn(p, argv, "sleep");
	wait_state(p->pid, 'S');
}

static void test_refuses_missing_and_stopped(void)
{
	char want[128];
	struct proc p;
	pid_t gone = fork();

	if (gone == 0)
		_exit(0);
	waitpid(gone, NULL, 0);
	snprintf(want, sizeof(want), "no process with PID %d", (int)gone);
	expect_refusal(gone, library, want);
	snprintf(want, sizeof(want), "cannot attach qsptop to itself");
	expect_refusal(getpid(), library, want);

	start_sleep(&p);
	kill(p.pid, SIGSTOP);
	CHECK(wait_state(p.pid, 'T'), "sleep did not stop");
	snprintf(want, sizeof(want), "PID %d is stopped (state T", (int)p.pid);
	expect_refusal(p.pid, library, want);
	CHECK(state_of(p.pid) == 'T', "the stopped process changed state");
	kill(p.pid, SIGCONT);
	CHECK(wait_state(p.pid, 'S'), "sleep did not continue after SIGCONT");
	kill_proc(&p);
}

static void test_refuses_traced(void)
{
	char want[128];
	struct proc p;

	start_sleep(&p);
	CHECK(ptrace(PTRACE_SEIZE, p.pid, 0, 0) == 0, "seize: %s",
	      strerror(errno));
	snprintf(want, sizeof(want), "PID %d is already traced by PID %d "
		 "(a debugger?)", (int)p.pid, (int)getpid());
	expect_refusal(p.pid, library, want);
	kill_proc(&p);
}

static void test_refuses_static(void)
{
	char src[PATH_MAX + 32], bin[PATH_MAX + 32], cmd[3 * PATH_MAX];
	char want[128];
	struct proc p;
	FILE *f;

	snprintf(src, sizeof(src), "%s/static.c", tmp);
	snprintf(bin, sizeof(bin), "%s/static", tmp);
	f = fopen(src, "w");
	fputs("#include <unistd.h>\nint main(void) { pause(); return 0; }\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -static -o %s %s 2>/dev/null", bin, src);
	if (system(cmd) != 0) {
		printf("note: cc -static failed; static binary test skipped\n");
		return;
	}
	char *argv[] = { bin, NULL };
	spawn(&p, argv, "static");
	wait_state(p.pid, 'S');
	snprintf(want, sizeof(want), "PID %d is a static binary: start it "
		 "with qsptop -- CMD", (int)p.pid);
	expect_refusal(p.pid, library, want);
	kill_proc(&p);
}

/* Another user may not trace our target: the injection runs as nobody. */
static void test_refuses_other_user(void)
{
	char msg[512] = "", want[128];
	struct proc p;
	int fds[2];
	pid_t child;

	if (geteuid() != 0) {
		printf("note: not root; other-user test skipped\n");
		return;
	}
	if (!start_target(&p)) {
		CHECK(0, "workload did not start");
		kill_proc(&p);
		return;
	}
	CHECK(pipe(fds) == 0, "pipe");
	child = fork();
	if (child == 0) {
		int rc = -9;

		close(fds[0]);
		if (setgroups(0, NULL) == 0 && setresgid(65534, 65534, 65534) == 0 &&
		    setresuid(65534, 65534, 65534) == 0)
			rc = inject_collector(p.pid, library, false, msg,
					      sizeof(msg));
		if (write(fds[1], &rc, sizeof(rc)) < 0 ||
		    write(fds[1], msg, strlen(msg) + 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	{
		int rc = 0;
		ssize_t n = read(fds[0], &rc, sizeof(rc));

		n = read(fds[0], msg, sizeof(msg) - 1);
		msg[n > 0 ? n : 0] = '\0';
		snprintf(want, sizeof(want), "not permitted to trace PID %d",
			 (int)p.pid);
		CHECK(rc == INJECT_FAILED && starts_with(msg, want),
		      "as nobody: expected \"%s...\", got %d \"%s\"", want, rc,
		      msg);
	}
	close(fds[0]);
	waitpid(child, NULL, 0);
	CHECK(all_threads_progress(&p), "target stalled after refusal");
	CHECK(stop_target(&p) == 0, "target failed after refusal: %s",
	      read_text(p.out));
}

/* Root attaches to a service running as another user (nobody). */
static void test_root_loads_into_other_user(void)
{
	char *argv[] = { "/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
			 "--clear-groups", workload, NULL };
	char msg[512];
	struct proc p;
	int rc;

	if (geteuid() != 0) {
		printf("note: not root; root-to-nobody test skipped\n");
		return;
	}
	spawn(&p, argv, "nobody");
	if (!wait_output(&p, "ready\n", READY_MS)) {
		CHECK(0, "workload as nobody did not start: %s", read_text(p.out));
		kill_proc(&p);
		return;
	}
	rc = inject_collector(p.pid, library, false, msg, sizeof(msg));
	CHECK(rc == INJECT_LOADED, "expected INJECT_LOADED, got %d \"%s\"", rc,
	      msg);
	CHECK(collector_says_hello_as(p.pid, 65534),
	      "no HELLO on nobody's socket");
	CHECK(all_threads_progress(&p), "threads stalled");
	rc = stop_target(&p);
	CHECK(rc == 0, "workload as nobody: exit %d:\n%s", rc, read_text(p.out));
}

/*
 * The copy of the collector lib in a directory of the target's /tmp: the
 * target maps it, the copy and its directory are gone, and the collector
 * is found there again.
 */
static void expect_copy_loaded(pid_t pid, const char *lib)
{
	char msg[512], path[64], line[PATH_MAX + 256], *at = NULL, *end = NULL;
	int rc = inject_collector(pid, lib, false, msg, sizeof(msg));
	FILE *f;

	CHECK(rc == INJECT_LOADED, "hidden library: expected INJECT_LOADED, "
	      "got %d \"%s\"", rc, msg);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	while (f != NULL && end == NULL && fgets(line, sizeof(line), f)) {
		at = strstr(line, " /tmp/qsptop-lib-");
		end = at ? strstr(at, "/libqsptop.so (deleted)\n") : NULL;
	}
	if (f != NULL)
		fclose(f);
	CHECK(end != NULL, "hidden library: no removed copy mapped in PID %d",
	      (int)pid);
	if (end != NULL) {
		*end = '\0';
		CHECK(access(at + 1, F_OK) < 0 && errno == ENOENT,
		      "hidden library: %s is left behind", at + 1);
	}
	rc = inject_collector(pid, lib, false, msg, sizeof(msg));
	CHECK(rc == INJECT_ALREADY, "hidden library: expected INJECT_ALREADY "
	      "the second time, got %d \"%s\"", rc, msg);
}

/*
 * A copy whose dlopen is given up on (its constructor outlasts the call's
 * deadline) stays where the borrowed thread will open it: once its
 * directory is removed, any user could put a library of theirs under
 * that name in /tmp before the dlopen gets to it. Through the real
 * qsptop -p: a copy of it beside a slow libqsptop.so, in dir, which the
 * target (argv: a workload with a tmpfs over dir) does not see.
 */
static void test_pending_copy_stays(const char *dir, char *const argv[])
{
	char slow[PATH_MAX + 32], done[PATH_MAX + 32], bin[PATH_MAX + 64];
	char cmd[8 * PATH_MAX], copy[PATH_MAX + 64], pidstr[16];
	char *qargv[] = { bin, "-b", "-n", "1", "-p", pidstr, NULL };
	const char *at;
	struct proc p, q;
	int rc;

	/* Longer than qsptop waits for a dlopen (5 s). */
	build_slow_library("slowcollector", 6500, slow, done, sizeof(slow));
	snprintf(bin, sizeof(bin), "%s/slow/qsptop", dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/slow && cp %s %s && "
		 "cp %s %s/slow/libqsptop.so", dir, qsptop, bin, slow, dir);
	CHECK(system(cmd) == 0, "cannot set up %s", bin);
	spawn(&p, argv, "unshared");
	if (!wait_output(&p, "ready\n", READY_MS)) {
		CHECK(0, "unshared workload did not start: %s", read_text(p.out));
		kill_proc(&p);
		return;
	}
	snprintf(pidstr, sizeof(pidstr), "%d", (int)p.pid);
	spawn(&q, qargv, "slow-qsptop");
	rc = wait_status(q.pid, EXIT_MS);
	at = strstr(read_text(q.out), "stays in /tmp/qsptop-lib-");
	CHECK(rc == 1 && at != NULL, "slow copy: expected a timeout that keeps "
	      "the copy, got exit %d: %s", rc, read_text(q.out));
	if (at != NULL) {
		snprintf(copy, sizeof(copy), "/proc/%d/root%.*s", (int)p.pid,
			 (int)strcspn(at + 9, " \n"), at + 9);
		CHECK(access(copy, F_OK) == 0, "slow copy: %s was removed while "
		      "its dlopen was pending", copy);
	}
	for (int64_t end = clock_now_ms() + 10000;
	     access(done, F_OK) != 0 && clock_now_ms() < end;)
		usleep(10000);
	CHECK(access(done, F_OK) == 0, "slow copy: its constructor never ran");
	CHECK(all_threads_progress(&p), "slow copy: threads stalled: %s",
	      thread_states(p.pid));
	CHECK(stop_target(&p) == 0, "slow copy: target failed: %s",
	      read_text(p.out));
}

/* A thread id, and a library the target cannot see (a mount namespace). */
static void test_refuses_thread_and_hidden_library(void)
{
	char want[PATH_MAX + 128], dir[PATH_MAX + 32], lib[PATH_MAX + 64];
	char cmd[4 * PATH_MAX], path[64];
	struct proc p;
	struct dirent *e;
	pid_t tid = 0;
	DIR *d;

	if (!start_target(&p)) {
		CHECK(0, "workload did not start");
		kill_proc(&p);
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/task", (int)p.pid);
	d = opendir(path);
	while (d != NULL && (e = readdir(d)) != NULL)
		if (atoi(e->d_name) > 0 && atoi(e->d_name) != p.pid)
			tid = atoi(e->d_name);
	if (d != NULL)
		closedir(d);
	snprintf(want, sizeof(want), "PID %d is a thread of process %d",
		 (int)tid, (int)p.pid);
	expect_refusal(tid, library, want);
	expect_refusal(p.pid, "/nonexistent/libqsptop.so",
		       "cannot find the collector library");
	CHECK(stop_target(&p) == 0, "target failed: %s", read_text(p.out));

	/* The target runs with a tmpfs over the directory of the library. */
	snprintf(dir, sizeof(dir), "%s/hidden", tmp);
	snprintf(lib, sizeof(lib), "%s/libqsptop.so", dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s && cp %s %s", dir, library, lib);
	if (geteuid() != 0 || system(cmd) != 0) {
		printf("note: mount namespace test skipped\n");
		return;
	}
	snprintf(cmd, sizeof(cmd), "mount -t tmpfs none %s && exec %s", dir,
		 workload);
	char *argv[] = { "/usr/bin/unshare", "-m", "--propagation", "private",
			 "/bin/sh", "-c", cmd, NULL };
	spawn(&p, argv, "unshared");
	if (!wait_output(&p, "ready\n", READY_MS)) {
		printf("note: unshare failed; mount namespace test skipped\n");
		kill_proc(&p);
		return;
	}
	expect_copy_loaded(p.pid, lib);
	CHECK(stop_target(&p) == 0, "target failed: %s", read_text(p.out));
	test_pending_copy_stays(dir, argv);
}

/* Start the workload under a seccomp filter that allows everything. */
static bool start_filtered_target(struct proc *p)
{
	static struct sock_filter allow[] = {
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { 1, allow };

	snprintf(p->out, sizeof(p->out), "%s/filtered.out", tmp);
	p->pid = fork();
	if (p->pid == 0) {
		int fd = open(p->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(fd, 1);
		dup2(fd, 2);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0)
			execl(workload, workload, (char *)NULL);
		_exit(126);
	}
	return wait_output(p, "ready\n", READY_MS);
}

/* Under a seccomp filter -p refuses in one line, unless --force is given. */
static void test_seccomp_needs_force(void)
{
	char want[128], *err;
	struct proc p, q;
	int rc;

	if (!start_filtered_target(&p)) {
		CHECK(0, "filtered workload did not start: %s", read_text(p.out));
		kill_proc(&p);
		return;
	}
	rc = qsptop_with(NULL, p.pid, &q);
	snprintf(want, sizeof(want), "qsptop: PID %d runs under a seccomp "
		 "filter", (int)p.pid);
	err = read_text(q.out);
	CHECK(rc == 1 && starts_with(err, want) &&
	      strstr(err, "--force") != NULL &&
	      strchr(err, '\n') == strrchr(err, '\n'),
	      "qsptop -p on a filtered process: expected exit 1 and one line "
	      "\"%s...--force...\", got %d: %s", want, rc, err);
	CHECK(count_mapped(p.pid, "/libqsptop.so") == 0,
	      "the refusal loaded the collector anyway");
	{
		char *argv[] = { qsptop, "--help", NULL };

		spawn(&q, argv, "help");
		rc = wait_status(q.pid, EXIT_MS);
		CHECK(rc == 0 && strstr(read_text(q.out), "--force") != NULL,
		      "--help documents --force: %s", read_text(q.out));
	}
	rc = qsptop_with("--force", p.pid, &q);
	CHECK(rc == 0 && strstr(read_text(q.out), "(injected)") != NULL,
	      "qsptop --force -p on a filtered process: exit %d: %s", rc,
	      read_text(q.out));
	CHECK(all_threads_progress(&p), "threads stalled after --force");
	rc = stop_target(&p);
	CHECK(rc == 0, "filtered workload after --force: exit %d:\n%s", rc,
	      read_text(p.out));
}

/* Become uid (and gid uid) for good; false if not permitted. */
static bool become(uid_t uid)
{
	return setgroups(0, NULL) == 0 && setresgid(uid, uid, uid) == 0 &&
	       setresuid(uid, uid, uid) == 0;
}

/* Start /bin/sleep as uid; its pid. */
static pid_t sleep_as(uid_t uid)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (become(uid))
			execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(126);
	}
	return pid;
}

/*
 * A process of uid (0: stay root) that serves path as a fake collector:
 * it binds and listens there (making the directory first when mkdir),
 * says so on ready, sends one HELLO to whoever connects, and exits.
 */
static pid_t fake_collector(uid_t uid, const char *path, bool mkdir_first,
			    int ready)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	alarm(20);
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	if (uid == 0 || become(uid)) {
		struct proto_hello h = { .magic = PROTO_MAGIC,
					 .version = PROTO_VERSION };
		int fd = socket(AF_UNIX, SOCK_STREAM, 0), c;
		struct wbuf b = { 0 };
		char dir[sizeof(addr.sun_path)];

		snprintf(dir, sizeof(dir), "%s", path);
		if (mkdir_first)
			mkdir(dirname(dir), 0700);
		unlink(path);	/* left by a killed process of that PID */
		if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0 &&
		    listen(fd, 1) == 0 && write(ready, "r", 1) == 1 &&
		    (c = accept(fd, NULL, NULL)) >= 0) {
			proto_put_hello(&b, &h);
			if (write(c, b.data, b.len) < 0)
				_exit(1);
			usleep(100000);
		}
	}
	_exit(0);
}

/* Start a fake collector at path and wait until it listens. */
static pid_t fake_collector_ready(uid_t uid, const char *path, bool mkdir_first)
{
	int fds[2];
	char c = 0;
	pid_t pid;

	if (pipe(fds) < 0)
		return -1;
	pid = fake_collector(uid, path, mkdir_first, fds[1]);
	close(fds[1]);
	{
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };

		if (poll(&pfd, 1, READY_MS) != 1 || read(fds[0], &c, 1) != 1)
			c = 0;
	}
	close(fds[0]);
	CHECK(c == 'r', "the fake collector at %s did not start", path);
	return pid;
}

/* qsptop -p pid must refuse in one line that names path and says why. */
static void expect_socket_refused(pid_t pid, const char *path, const char *why)
{
	struct proc q;
	const char *err;
	int rc = qsptop_with(NULL, pid, &q);

	err = read_text(q.out);
	CHECK(rc == 1 && starts_with(err, "qsptop: refusing ") &&
	      strstr(err, path) != NULL && strstr(err, why) != NULL &&
	      strchr(err, '\n') == strrchr(err, '\n'),
	      "expected one line refusing %s (%s...), got %d: %s", path, why,
	      rc, err);
}

static void end_pid(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/*
 * Another local user made /tmp/qsptop-UID of the target's user (or it is
 * a symlink, or open to others) and listens where the collector would:
 * qsptop -p must not talk to it.
 */
static void test_refuses_foreign_socket_directory(void)
{
	/* Users no one has, distinct for each run of this test. */
	uid_t victim = 2000000000u + (uid_t)(getpid() % 100000) * 2;
	uid_t other = victim + 1;
	char dir[108], path[108], cmd[256], why[128], elsewhere[PATH_MAX + 16];
	pid_t target, fake;

	if (geteuid() != 0) {
		printf("note: not root; socket directory test skipped\n");
		return;
	}
	target = sleep_as(victim);
	wait_state(target, 'S');
	sockpath_dir(dir, sizeof(dir), victim);
	sockpath_target(path, sizeof(path), victim, target);

	fake = fake_collector_ready(other, path, true);	/* other's dir */
	snprintf(why, sizeof(why), "belongs to uid %u", (unsigned)other);
	expect_socket_refused(target, path, why);
	end_pid(fake);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0, "%s", cmd);

	mkdir(dir, 0777);		/* the right owner, open to all */
	CHECK(chown(dir, victim, victim) == 0 && chmod(dir, 0777) == 0,
	      "chown/chmod %s", dir);
	fake = fake_collector_ready(other, path, false);
	expect_socket_refused(target, path, "open to other users");
	end_pid(fake);
	CHECK(system(cmd) == 0, "%s", cmd);

	snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", tmp);
	mkdir(elsewhere, 0700);		/* a symlink to a good-looking dir */
	CHECK(chown(elsewhere, victim, victim) == 0 &&
	      symlink(elsewhere, dir) == 0, "symlink %s", dir);
	fake = fake_collector_ready(0, path, false);
	expect_socket_refused(target, path, "symbolic link");
	end_pid(fake);
	unlink(dir);
	end_pid(target);
}

/* A process other than the target listens at its socket path. */
static void test_refuses_listener_not_target(void)
{
	char path[108], why[128];
	pid_t target = sleep_as(geteuid()), fake;

	wait_state(target, 'S');
	sockpath_target(path, sizeof(path), geteuid(), target);
	fake = fake_collector_ready(0, path, false);
	snprintf(why, sizeof(why), "served by PID %d", (int)fake);
	expect_socket_refused(target, path, why);
	CHECK(count_mapped(target, "/libqsptop.so") == 0,
	      "the refusal loaded the collector");
	end_pid(fake);
	unlink(path);
	end_pid(target);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void test_repeated_fresh_targets(void)
{
	double ms[REPEATS];
	char msg[512];

	for (int i = 0; i < REPEATS; i++) {
		struct proc p;
		int rc;

		ms[i] = -1;
		if (!start_target(&p)) {
			CHECK(0, "round %d: workload did not start", i);
			kill_proc(&p);
			continue;
		}
		rc = forced_inject(p.pid, parked[i % 4], library, msg, sizeof(msg),
				   &ms[i]);
		CHECK(rc == INJECT_LOADED, "round %d: got %d \"%s\"", i, rc, msg);
		CHECK(collector_says_hello(p.pid), "round %d: no HELLO", i);
		CHECK(all_threads_progress(&p), "round %d: threads stalled", i);
		rc = stop_target(&p);
		CHECK(rc == 0, "round %d: workload exit %d:\n%s", i, rc,
		      read_text(p.out));
		printf("round %d: injected in %.2f ms (syscall %ld)\n", i, ms[i],
		       inject_last_syscall);
		CHECK(inject_last_syscall == parked[i % 4], "round %d: borrowed "
		      "syscall %ld", i, inject_last_syscall);
	}
	qsort(ms, REPEATS, sizeof(ms[0]), cmp_double);
	printf("injection time over %d fresh targets: min %.2f ms, median "
	       "%.2f ms, max %.2f ms\n", REPEATS, ms[0], ms[REPEATS / 2],
	       ms[REPEATS - 1]);
}

int main(void)
{
	find_paths("/tmp/qsptop-inject-XXXXXX", "wl_inject_target");
	chmod(tmp, 0755);
	copy_library();
	signal(SIGPIPE, SIG_IGN);
	test_loads_into_running_target();
	test_refuses_missing_and_stopped();
	test_refuses_traced();
	test_refuses_static();
	test_refuses_other_user();
	test_root_loads_into_other_user();
	test_refuses_thread_and_hidden_library();
	test_seccomp_needs_force();
	test_refuses_foreign_socket_directory();
	test_refuses_listener_not_target();
	test_repeated_fresh_targets();
	remove_tmp();
	return check_summary();
}
