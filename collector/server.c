/*
 * The collector thread: it listens on the target's socket, scans the thread
 * tables every interval, feeds each connected qsptop, and on process exit
 * delivers the final counts before the process is gone.
 *
 * Injected (dlopen'ed by qsptop -p), the collector is active only while it
 * is watched: it patches the GOT when it starts and whenever a qsptop
 * greets a dormant collector; the DETACH of the last qsptop, or its
 * silent disappearance after a grace period, restores the GOT and leaves
 * the thread listening, dormant, for the next one.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/proto.h"
#include "../common/sockpath.h"
#include "arena.h"
#include "frames.h"
#include "got.h"
#include "heldby.h"
#include "hooks.h"
#include "modules.h"
#include "ownfd.h"
#include "rows.h"
#include "server.h"
#include "session.h"
#include "state.h"
#include "table.h"

#define DEFAULT_INTERVAL_MS 1000
/* Scan at least this often, to recycle tables of exited threads. */
#define IDLE_SCAN_NS (1000ull * 1000000)
/* While threads come and go, scan this often, so that their tables are
 * recycled before many pile up; never more than 1/CHURN_SHARE of the time. */
#define CHURN_SCAN_NS (20ull * 1000000)
#define CHURN_SHARE 10
#define FINAL_WRITE_MS 3000
/* How long an injected collector stays active with no qsptop connected. */
#define GRACE_NS (5ull * 1000000000)

static struct server {
	struct own_fd listen;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct own_fd wake_in, wake_out;
	struct own_fd launch;		/* qsptop's socket, until adopted */
	/* The host's table's copy of it, once the thread has its own. */
	struct own_fd launch_shared;
	int private_fds;		/* the thread's table is its own */
	int finishing;
	sem_t finished;
	sem_t wrappers_ready;		/* posted once wrappers are known */
	bool wrappers_posted;
	struct proto_hello hello;
	struct session *sessions[SESSIONS_MAX];
	struct rows rows;
	struct modules modules;
	uint64_t seq;
	uint64_t last_scan_ns;
	uint64_t scan_cost_ns;		/* how long the last scan took */
	uint32_t threads_at_scan;	/* threads seen at the last scan */
	uint64_t grace_ns;		/* injected: go dormant then; 0: never */
	uint64_t heldby_ns;		/* next look at holders; 0: none */
} srv = { .listen = OWN_FD_NONE, .wake_in = OWN_FD_NONE,
	   .wake_out = OWN_FD_NONE, .launch = OWN_FD_NONE,
	   .launch_shared = OWN_FD_NONE };

/* The target's command line, arguments joined by spaces. */
static void read_command(char *out, size_t size)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, out, size - 1);

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		n = 0;
	out[n] = '\0';
	for (ssize_t i = 0; n > 0 && i < n - 1; i++) {
		if (out[i] == '\0')
			out[i] = ' ';
	}
}

static void fill_hello(int launched)
{
	struct proto_hello *h = &srv.hello;

	memset(h, 0, sizeof(*h));
	h->magic = PROTO_MAGIC;
	h->version = PROTO_VERSION;
	h->mode = state_injected() ? MODE_INJECTED
		  : launched ? MODE_LAUNCH : MODE_PRELOAD;
	h->pid = (uint32_t)getpid();
	h->interval_ms = DEFAULT_INTERVAL_MS;
	h->start_realtime_ns = clock_realtime_ns();
	h->start_monotonic_ns = clock_now_ns();
	read_command(h->command, sizeof(h->command));
	snprintf(h->collector_version, sizeof(h->collector_version), "%s",
		 QSPTOP_VERSION);
}

/*
 * Listen on the per-user socket. The directory must be ours and private,
 * or we do not listen at all: someone else's directory could hand our
 * counts, or our clients, to them. A live socket of our name (after exec,
 * our old PID's) is never replaced; a stale one is.
 */
static void open_listener(void)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char dir[sizeof(addr.sun_path)];
	int fd, state;

	if (sockpath_dir(dir, sizeof(dir), geteuid()) < 0 ||
	    sockpath_make_private(dir) < 0 ||
	    sockpath_self(srv.path, sizeof(srv.path)) < 0)
		return;
	state = sockpath_state(srv.path);
	fd = state == SOCKPATH_LIVE ? -1 :
	     socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		srv.path[0] = '\0';
		return;
	}
	strcpy(addr.sun_path, srv.path);
	if (state == SOCKPATH_STALE)
		unlink(srv.path);
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    chmod(srv.path, 0600) < 0 || listen(fd, 8) < 0) {
		close(fd);
		srv.path[0] = '\0';
		return;
	}
	own_fd_take(&srv.listen, fd);
}

/* Injected: record again and send the process's calls to the hooks. */
static void activate(void)
{
	srv.grace_ns = 0;
	if (!state_injected() || got_active())
		return;
	state_set_recording(true);
	got_patch_all();
}

/*
 * Injected: stop recording first, so that calls already on their way to
 * a hook pass straight through, then give every GOT slot back. The
 * library stays mapped: threads may be parked inside a hook.
 */
static void deactivate(void)
{
	srv.grace_ns = 0;
	if (!got_active())
		return;
	state_set_recording(false);
	state_set_holders(false);
	got_restore_all();
}

static bool dormant(void)
{
	return state_injected() && !got_active();
}

/* Whether a greeted session asks for holders. */
static bool holders_wanted(void)
{
	for (int i = 0; i < SESSIONS_MAX; i++) {
		if (srv.sessions[i] && srv.sessions[i]->greeted &&
		    srv.sessions[i]->holders)
			return true;
	}
	return false;
}

/*
 * Track holders while a session asks, not otherwise: on, the unlock slots
 * are patched before the hooks start noting holds, so that every timed
 * hold ends in the hook; off, the hooks stop first. An unlock of a lock
 * taken before finds no hold in the hook and only calls libc.
 */
static void sync_holders(void)
{
	bool want = holders_wanted() && !dormant() && state_recording();

	if (want == state_holders())
		return;
	if (want) {
		got_set_holders(true);
		state_set_holders(true);
	} else {
		state_set_holders(false);
		got_set_holders(false);
	}
}

/* Sessions of a qsptop that said hello: a stray connection watches nothing. */
static bool watched(void)
{
	for (int i = 0; i < SESSIONS_MAX; i++) {
		if (srv.sessions[i] && srv.sessions[i]->greeted)
			return true;
	}
	return false;
}

/*
 * A session in a free slot. A preloaded collector records from the start
 * of the program, and every session sees it all. An injected one records
 * only while watched, and lies dormant in between: each session gets a
 * baseline when it greets us, and sees only what happens while it watches.
 */
static void add_session(struct own_fd *fd)
{
	for (int i = 0; i < SESSIONS_MAX; i++) {
		struct session *s;

		if (srv.sessions[i] != NULL)
			continue;
		s = srv.sessions[i] = session_new(fd, (unsigned)i, &srv.hello,
						  state_injected(),
						  clock_now_ns());
		if (s == NULL) {
			own_fd_close(fd);
			return;
		}
		rows_session_start(&srv.rows, (unsigned)i, !s->baseline_sent);
		session_write(s);
		return;
	}
	own_fd_close(fd);
}

/* Accept a connection from the same user or root; drop anyone else. */
static void accept_one(void)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd = accept4(srv.listen.fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	struct own_fd own;

	if (fd < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
	    (cred.uid != geteuid() && cred.uid != 0)) {
		close(fd);
		return;
	}
	own_fd_take(&own, fd);
	add_session(&own);
}

/*
 * With the last qsptop gone, an injected collector goes dormant: at once
 * after a DETACH (a session that was closing), after the grace period if
 * the peer just vanished (it may be a qsptop restarting).
 */
static void end_session(int i)
{
	bool detached = srv.sessions[i]->closing;

	session_free(srv.sessions[i]);
	srv.sessions[i] = NULL;
	rows_session_end(&srv.rows, (unsigned)i);
	/* The wrappers were that qsptop's: the next one sends its own. */
	if (!watched())
		frames_set_wrappers(NULL, 0);
	if (!state_injected() || srv.finishing || watched())
		return;
	if (detached)
		deactivate();
	else if (got_active())
		srv.grace_ns = clock_now_ns() + GRACE_NS;
}

static struct proto_tick make_tick(uint64_t now)
{
	struct proto_tick t = {
		.seq = ++srv.seq,
		.monotonic_ns = now,
		.threads_seen = table_threads_seen(),
		.threads_live = srv.rows.threads_live,
		.dropped = srv.rows.dropped,
		.folded = srv.rows.folded,
		.memory_used = arena_used(),
		.memory_cap = arena_cap(),
	};
	return t;
}

/* The earliest time of one reader inside a capture (frames_reclaim()). */
static uint64_t oldest_reader(void *ctx)
{
	uint64_t oldest = UINT64_MAX;

	(void)ctx;
	for (struct thread_table *t = table_first(); t; t = t->all_next) {
		uint64_t e = __atomic_load_n(&t->reader.epoch, __ATOMIC_ACQUIRE);

		if (e && e < oldest)
			oldest = e;
	}
	return oldest;
}

/* Sum the tables; keep the module list, frame tables and GOT current. */
static void scan(uint64_t now)
{
	rows_scan(&srv.rows);
	modules_refresh(&srv.modules);
	frames_sync();
	frames_reclaim(oldest_reader, NULL);
	got_refresh();
	srv.last_scan_ns = now;
	srv.threads_at_scan = table_threads_seen();
	srv.scan_cost_ns = clock_now_ns() - now;
}

/* Queue updates for the sessions that are due, or all when force. */
/* Queue an update (when due, or forced) for every session. */
static void queue_updates(uint64_t now, bool force)
{
	struct proto_tick tick = make_tick(now);

	for (int i = 0; i < SESSIONS_MAX; i++) {
		if (srv.sessions[i])
			session_update(srv.sessions[i], &srv.rows, &srv.modules,
				       &tick, force);
	}
}

static void update_sessions(uint64_t now, bool force)
{
	queue_updates(now, force);
	for (int i = 0; i < SESSIONS_MAX; i++) {
		if (srv.sessions[i] && !session_write(srv.sessions[i]))
			end_session(i);
	}
}

/*
 * The memory cap s asked for in its hello, from now on. The unwind tables
 * follow it at once: injected, this builds them, before the wrappers
 * arrive, whose skipping needs them.
 */
static void apply_cap(const struct session *s)
{
	if (s->memory_cap_mb)
		arena_set_cap((size_t)s->memory_cap_mb << 20);
	frames_sync();
}

/*
 * Sessions that just greeted get their baseline at once: a fresh scan,
 * and everything up to it.
 */
static void send_baselines(void)
{
	uint64_t now = clock_now_ns();
	struct proto_tick tick;
	bool scanned = false;

	for (int i = 0; i < SESSIONS_MAX; i++) {
		struct session *s = srv.sessions[i];

		if (s == NULL)
			continue;
		if (session_awaits_wrappers(s, now)) {
			/* It needs the modules to name its wrappers. */
			apply_cap(s);
			modules_refresh(&srv.modules);
			session_send_modules(s, &srv.modules);
			if (!session_write(s))
				end_session(i);
			continue;
		}
		if (!session_wants_baseline(s, now))
			continue;
		apply_cap(s);
		if (!scanned) {
			scan(clock_now_ns());
			tick = make_tick(srv.last_scan_ns);
			scanned = true;
		}
		session_update(s, &srv.rows, &srv.modules, &tick, true);
		if (!session_write(s))
			end_session(i);
	}
}

/*
 * When the next scan is due without a session asking: after IDLE_SCAN_NS,
 * or sooner while new threads appear (their tables will need recycling).
 */
static uint64_t next_idle_scan(void)
{
	uint64_t churn = srv.scan_cost_ns * CHURN_SHARE;

	if (table_threads_seen() == srv.threads_at_scan)
		return srv.last_scan_ns + IDLE_SCAN_NS;
	return srv.last_scan_ns + (churn > CHURN_SCAN_NS ? churn : CHURN_SCAN_NS);
}

/* Between looks at holders while no wait with a holder is known. */
#define HELDBY_IDLE_NS (20ull * 1000000)

/* While holders are tracked, look at what they do (heldby.h) when due. */
static void sample_holders(uint64_t now)
{
	if (!state_holders() || dormant()) {
		srv.heldby_ns = 0;
		return;
	}
	if (now < srv.heldby_ns)
		return;
	srv.heldby_ns = now + (heldby_sample(&srv.rows, now) ?
			       HELDBY_PERIOD_NS : HELDBY_IDLE_NS);
}

/* When the next scan is due: the earliest session, or the idle rescan. */
static int poll_timeout_ms(uint64_t now)
{
	uint64_t next = next_idle_scan();

	if (dormant())
		next = now + IDLE_SCAN_NS;
	if (srv.grace_ns && srv.grace_ns < next)
		next = srv.grace_ns;
	if (srv.heldby_ns && srv.heldby_ns < next)
		next = srv.heldby_ns;

	for (int i = 0; i < SESSIONS_MAX; i++) {
		const struct session *s = srv.sessions[i];

		if (s && s->greeted && s->out.len == 0 && s->due_ns < next)
			next = s->due_ns;
	}
	return next <= now ? 0 : (int)((next - now + 999999) / 1000000);
}

static bool scan_due(uint64_t now)
{
	if (dormant())
		return false;
	if (now >= next_idle_scan())
		return true;
	for (int i = 0; i < SESSIONS_MAX; i++) {
		const struct session *s = srv.sessions[i];

		if (s && s->greeted && s->out.len == 0 && now >= s->due_ns)
			return true;
	}
	return false;
}

/*
 * Let a launched program go once the launching qsptop said which code is
 * lock wrappers, or said nothing and left: its first lock call then
 * counts where it belongs (collector_init() waits for this).
 */
static void post_wrappers_known(void)
{
	if (srv.wrappers_posted)
		return;
	for (int i = 0; i < SESSIONS_MAX; i++) {
		const struct session *s = srv.sessions[i];

		if (s && (s->wrappers_known || s->closing || s->dead)) {
			srv.wrappers_posted = true;
			sem_post(&srv.wrappers_ready);
			return;
		}
	}
}

/* Read, write and expire sessions after poll(). */
static void service_sessions(const struct pollfd *pfd, int first)
{
	uint64_t now = clock_now_ns();

	for (int i = 0; i < SESSIONS_MAX; i++) {
		struct session *s = srv.sessions[i];
		short ev;

		if (s == NULL)
			continue;
		ev = pfd[first + i].fd == s->fd.fd ? pfd[first + i].revents : 0;
		if (((ev & (POLLIN | POLLHUP | POLLERR)) || !s->greeted) &&
		    !session_read(s, now)) {
			end_session(i);
			continue;
		}
		if (!session_write(s))
			end_session(i);
	}
}

/*
 * Forget descriptors the host closed or replaced. Without its wake pipe the
 * thread still runs on timeouts; the exit flush then waits out the poll.
 */
static void check_fds(void)
{
	own_fd_valid(&srv.wake_in);
	own_fd_valid(&srv.listen);
	for (int i = 0; i < SESSIONS_MAX; i++) {
		if (srv.sessions[i] && !own_fd_valid(&srv.sessions[i]->fd))
			end_session(i);
	}
}

/* One round of the loop: wait, then accept, read, write and scan. */
static void serve_once(void)
{
	struct pollfd pfd[2 + SESSIONS_MAX];
	uint64_t now = clock_now_ns();
	char drain[64];

	check_fds();
	pfd[0] = (struct pollfd){ .fd = srv.wake_in.fd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = srv.listen.fd, .events = POLLIN };
	for (int i = 0; i < SESSIONS_MAX; i++) {
		const struct session *s = srv.sessions[i];

		pfd[2 + i] = (struct pollfd){ .fd = s ? s->fd.fd : -1,
			.events = (short)(POLLIN | (s && s->out.len ? POLLOUT : 0)) };
	}
	if (poll(pfd, 2 + SESSIONS_MAX, poll_timeout_ms(now)) < 0)
		return;
	while ((pfd[0].revents & POLLIN) && own_fd_valid(&srv.wake_in) &&
	       read(srv.wake_in.fd, drain, sizeof(drain)) > 0)
		;
	if ((pfd[1].revents & POLLIN) && own_fd_valid(&srv.listen))
		accept_one();
	service_sessions(pfd, 2);
	now = clock_now_ns();
	if (watched())
		activate();
	else if (srv.grace_ns && now >= srv.grace_ns)
		deactivate();
	sync_holders();
	post_wrappers_known();
	send_baselines();
	if (scan_due(now)) {
		scan(now);
		update_sessions(now, false);
	}
	sample_holders(clock_now_ns());
}

/* Write everything queued, blocking up to a deadline. */
static void drain_sessions(uint64_t deadline)
{
	for (;;) {
		struct pollfd pfd[SESSIONS_MAX];
		int n = 0;
		uint64_t now = clock_now_ns();

		for (int i = 0; i < SESSIONS_MAX; i++) {
			struct session *s = srv.sessions[i];

			if (s && s->out.len > 0)
				pfd[n++] = (struct pollfd){ .fd = s->fd.fd, .events = POLLOUT };
		}
		if (n == 0 || now >= deadline)
			return;
		poll(pfd, (nfds_t)n, (int)((deadline - now) / 1000000) + 1);
		for (int i = 0; i < SESSIONS_MAX; i++) {
			if (srv.sessions[i])
				session_write(srv.sessions[i]);
		}
	}
}

/* The process is exiting: final counts and goodbye to every session. */
static void finish(void)
{
	uint64_t now = clock_now_ns();

	check_fds();
	for (int i = 0; i < SESSIONS_MAX; i++) {
		if (srv.sessions[i] && !session_read(srv.sessions[i], now))
			end_session(i);
	}
	scan(now);
	/* The last counts and the goodbye in one write: shown together. */
	queue_updates(now, true);
	for (int i = 0; i < SESSIONS_MAX; i++) {
		if (srv.sessions[i])
			session_goodbye(srv.sessions[i], GOODBYE_EXIT);
	}
	drain_sessions(now + FINAL_WRITE_MS * 1000000ull);
	for (int i = 0; i < SESSIONS_MAX; i++) {
		if (srv.sessions[i])
			end_session(i);
	}
	if (own_fd_valid(&srv.listen))
		unlink(srv.path);
	own_fd_close(&srv.listen);
}

/*
 * Move into a descriptor table of our own, taking the wake pipe and the
 * launching qsptop's socket along: the host's threads cannot close or
 * reuse what we open from now on (see ownfd.c). The pipe's writing end
 * comes too, unused, so that its number names the same file in both
 * tables (tools that track descriptors by number, ThreadSanitizer among
 * them, would see one descriptor closed under another thread's use).
 */
static void leave_host_table(void)
{
	struct own_fd *const keep[] = { &srv.wake_in, &srv.wake_out,
					&srv.launch };

	if (own_fd_private_table(keep, 3))
		__atomic_store_n(&srv.private_fds, 1, __ATOMIC_RELEASE);
}

/* Greet the world: the socket, and the qsptop that launched us. */
static void start_serving(void)
{
	bool launched;

	leave_host_table();
	launched = own_fd_valid(&srv.launch);

	fill_hello(launched);
	/*
	 * Tables ready before the first waits. Injected, they are built once
	 * the qsptop that injected us has said its memory cap (apply_cap()):
	 * built under the default cap, they could pass it at once.
	 */
	if (!state_injected())
		frames_sync();
	open_listener();
	if (launched)
		add_session(&srv.launch);
	srv.launch.fd = -1;
}

void *server_main(void *arg)
{
	(void)arg;
	tls_self.never = true;
	start_serving();
	srv.last_scan_ns = clock_now_ns();
	if (state_injected()) {
		/* qsptop injected us and is about to connect. */
		activate();
		srv.grace_ns = srv.last_scan_ns + GRACE_NS;
	}
	while (!__atomic_load_n(&srv.finishing, __ATOMIC_ACQUIRE))
		serve_once();
	finish();
	sem_post(&srv.finished);
	return NULL;
}

int server_prepare(int launch_fd, bool early)
{
	void (*take)(struct own_fd *, int) = early ? own_fd_take : own_fd_adopt;
	int wake[2];

	if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	take(&srv.wake_in, wake[0]);
	take(&srv.wake_out, wake[1]);
	sem_init(&srv.finished, 0, 0);
	sem_init(&srv.wrappers_ready, 0, 0);
	/*
	 * Adopt qsptop's socket now, before main() runs: by the time the
	 * collector thread gets to it the host may have closed the number.
	 */
	if (launch_fd >= 0) {
		fcntl(launch_fd, F_SETFL, fcntl(launch_fd, F_GETFL) | O_NONBLOCK);
		own_fd_take(&srv.launch, launch_fd);
		srv.launch_shared = srv.launch;
	}
	return 0;
}

void server_release_launch(void)
{
	if (__atomic_load_n(&srv.private_fds, __ATOMIC_ACQUIRE))
		own_fd_close(&srv.launch_shared);
	srv.launch_shared.fd = -1;
}

/* A CLOCK_MONOTONIC deadline timeout_ms from now. */
static struct timespec deadline_in(int timeout_ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

void server_wait_wrappers(int timeout_ms)
{
	struct timespec ts = deadline_in(timeout_ms);

	while (hooks_own_sem_clockwait(&srv.wrappers_ready, CLOCK_MONOTONIC, &ts) < 0 &&
	       errno == EINTR)
		;
}

void server_finish(int timeout_ms)
{
	struct timespec ts;

	__atomic_store_n(&srv.finishing, 1, __ATOMIC_RELEASE);
	if (own_fd_valid(&srv.wake_out) && write(srv.wake_out.fd, "x", 1) < 0) {
		/* The pipe is full: the thread is awake already. */
	}
	ts = deadline_in(timeout_ms);
	while (hooks_own_sem_clockwait(&srv.finished, CLOCK_MONOTONIC, &ts) < 0 &&
	       errno == EINTR)
		;
}

/*
 * The child side of fork(): the parent's sessions and socket are not ours.
 * Their memory may be mid-update (another thread was running it), so it is
 * abandoned, not freed; the descriptors are closed so the parent's clients
 * do not see a second writer.
 */
void server_forget(void)
{
	for (int i = 0; i < SESSIONS_MAX; i++) {
		if (srv.sessions[i])
			own_fd_close(&srv.sessions[i]->fd);
		srv.sessions[i] = NULL;
	}
	own_fd_close(&srv.listen);
	own_fd_close(&srv.wake_in);
	own_fd_close(&srv.wake_out);
	own_fd_close(&srv.launch_shared);
	srv.private_fds = 0;
	memset(&srv.rows, 0, sizeof(srv.rows));
	memset(&srv.modules, 0, sizeof(srv.modules));
	srv.path[0] = '\0';
	srv.finishing = 0;
	srv.seq = 0;
	srv.grace_ns = 0;
}
