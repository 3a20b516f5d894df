/*
 * End-to-end tests of --listen with real consumers: /metrics passes
 * promtool's parser and is scraped by a real Prometheus server, whose
 * answers equal qsptop's counts; /debug/pprof/mutex is read by go tool
 * pprof, each profile holding the waits since the previous one, and the
 * profiles add up to the JSON snapshot exactly. Counters never go down,
 * a reset (r) included; --top keeps totals exact; a port in use, the
 * default binding and clients that never read are checked too.
 *
 * The workload, wl_locks phases, contends on two mutexes (200,000 and
 * 100,000 acquisitions) and then makes no lock call until SIGUSR1, when
 * it does the same again: between phases the counts stand still, so
 * what qsptop serves can be compared exactly with what it writes.
 */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "../unit/check.h"
#include "tmux.h"
#include "pprof_raw.h"

#define WAIT_MS 30000
#define PHASE_A 200000.0	/* site_mutex_a's acquisitions a phase */
#define PHASE_ALL 300000.0	/* with site_mutex_b's */
#define IDLE_CLIENTS 100

/* A socket connected to 127.0.0.1:port, reads timing out; -1 if not. */
static int connect_to(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 20 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * GET path from 127.0.0.1:port: the HTTP status (-1 without an answer),
 * the body in *body (malloc'ed, NUL-terminated), its length in *len.
 */
static int http_get(int port, const char *path, char **body, size_t *len)
{
	char req[512], *buf = NULL, *end;
	size_t n = 0, cap = 0;
	int fd = connect_to(port), status = -1;
	ssize_t got;

	*body = NULL;
	*len = 0;
	if (fd < 0)
		return -1;
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n",
		 path);
	if (write(fd, req, strlen(req)) == (ssize_t)strlen(req)) {
		do {
			if (n + 4096 + 1 > cap)
				buf = realloc(buf, cap = (n + 4096 + 1) * 2);
			got = read(fd, buf + n, 4096);
			n += got > 0 ? (size_t)got : 0;
		} while (got > 0);
	}
	close(fd);
	if (buf && (buf[n] = '\0', sscanf(buf, "HTTP/1.%*d %d", &status) == 1) &&
	    (end = strstr(buf, "\r\n\r\n")) != NULL) {
		*len = n - (size_t)(end + 4 - buf);
		*body = malloc(*len + 1);
		memcpy(*body, end + 4, *len);
		(*body)[*len] = '\0';
	}
	free(buf);
	return *body ? status : -1;
}

/* /metrics, or "" when it does not answer 200. */
static char *metrics(int port)
{
	char *body;
	size_t len;

	if (http_get(port, "/metrics", &body, &len) != 200) {
		free(body);
		return strdup("");
	}
	return body;
}

/*
 * The sum of the samples of metric name (exactly: not name_bucket) whose
 * labels contain filter (NULL: all); how many in *count.
 */
static double metric_sum(const char *text, const char *name,
			 const char *filter, int *count)
{
	size_t len = strlen(name);
	double sum = 0;
	int n = 0;

	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l) {
		const char *eol = strchr(l, '\n'), *space;
		char line[2048];

		snprintf(line, sizeof(line), "%.*s",
			 (int)(eol ? eol - l : (long)strlen(l)), l);
		if (strncmp(line, name, len) != 0 || (line[len] != '{' &&
						      line[len] != ' '))
			continue;
		if (filter && !strstr(line, filter))
			continue;
		if ((space = strrchr(line, ' ')) == NULL)
			continue;
		sum += strtod(space + 1, NULL);
		n++;
	}
	if (count)
		*count = n;
	return sum;
}

/* Fetch /metrics until name{filter} sums to want; the last text. */
static char *metrics_until(int port, const char *name, const char *filter,
			   double want)
{
	long deadline = monotonic_ms() + WAIT_MS;
	char *text = metrics(port);

	while (metric_sum(text, name, filter, NULL) != want &&
	       monotonic_ms() < deadline) {
		free(text);
		usleep(100000);
		text = metrics(port);
	}
	return text;
}

/* promtool check metrics reads text without a complaint; false to skip. */
static bool promtool_accepts(const char *text, char *why, size_t size)
{
	char *file = tmp_path("metrics.txt"), cmd[PATH_MAX + 64];
	FILE *f = fopen(file, "w");
	struct run r;

	if (f) {
		fputs(text, f);
		fclose(f);
	}
	snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s'", file);
	r = run_capture((char *[]){ "sh", "-c", cmd, NULL }, WAIT_MS, 0);
	snprintf(why, size, "exit %d: %.300s%.300s", r.status, r.out, r.err);
	run_free(&r);
	return r.status == 0;
}

static bool have(const char *program)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "command -v %s", program);
	return run_quietly((char *[]){ "sh", "-c", cmd, NULL }) == 0;
}

/*
 * Every series of the wait histogram: buckets that never go down, +Inf
 * equal to _count; and the counts sum to want (contended, no timeouts).
 */
static void check_histogram(const char *context, const char *text,
			    double want)
{
	const char *name = "qsptop_lock_wait_seconds_bucket{";
	double last = -1, count;
	bool ordered = true;
	int buckets = 0;

	for (const char *l = strstr(text, name); l; l = strstr(l + 1, name)) {
		const char *eol = strchr(l, '\n'), *space = l;

		for (const char *c = l; c < eol; c++)
			space = *c == ' ' ? c : space;
		if (strncmp(strstr(l, "le=\""), "le=\"2e-09\"", 10) == 0)
			last = -1;	/* a series' first bucket */
		ordered &= strtod(space + 1, NULL) >= last;
		last = strtod(space + 1, NULL);
		buckets++;
	}
	count = metric_sum(text, "qsptop_lock_wait_seconds_count", NULL, NULL);
	CHECK(buckets > 0 && ordered,
	      "%s: expected cumulative buckets (%d seen)", context, buckets);
	CHECK(metric_sum(text, "qsptop_lock_wait_seconds_bucket", "le=\"+Inf\"",
			 NULL) == count && count == want,
	      "%s: expected _count %.0f = +Inf bucket = contended %.0f", context,
	      count, want);
}

/* --- a port in use, the default address --- */

static void test_port_in_use(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	char where[64], *expect = tmp_path("expect-busy");
	struct run r;

	bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	listen(fd, 1);
	getsockname(fd, (struct sockaddr *)&sa, &len);
	snprintf(where, sizeof(where), "127.0.0.1:%d", ntohs(sa.sin_port));
	r = run_capture((char *[]){ qsptop, "-b", "--listen", where, "--",
				    workload, "mutex", expect, NULL }, WAIT_MS, 0);
	close(fd);
	CHECK(r.status == 1 && strstr(r.err, "Address already in use") &&
	      strchr(r.err, '\n') == r.err + strlen(r.err) - 1,
	      "port in use: expected exit 1 and one line \"… Address already in "
	      "use\", got %d and \"%s\"", r.status, r.err);
	CHECK(access(expect, F_OK) != 0,
	      "port in use: expected the workload not started");
	run_free(&r);
}

/* /proc/net/tcp lists port listening on 127.0.0.1 (0100007F) alone. */
static bool listens_on_loopback(int port)
{
	FILE *f = fopen("/proc/net/tcp", "r");
	char line[512], want[32], any[32];
	int loopback = 0, others = 0;

	snprintf(want, sizeof(want), "0100007F:%04X 00000000:0000 0A", port);
	snprintf(any, sizeof(any), ":%04X 00000000:0000 0A", port);
	while (f && fgets(line, sizeof(line), f)) {
		loopback += strstr(line, want) != NULL;
		others += strstr(line, any) != NULL && !strstr(line, want);
	}
	if (f)
		fclose(f);
	return loopback == 1 && others == 0;
}

/* --- the live screen: r changes the screen, never the counters --- */

/* Sums of the samples of a profile, read by go tool pprof -raw. */
static bool raw_sums(const char *profile, struct pprof_sums *s)
{
	return pprof_raw(s, WAIT_MS, (char *)profile, NULL);
}

/*
 * P writes the shown rows' profile to a new file, says so in one line,
 * and go tool pprof reads it: acquisitions want.
 */
static void check_pprof_key(double want)
{
	char line[4096], path[2 * PATH_MAX];
	struct pprof_sums s = { 0 };

	keys("P", NULL);
	STATUS("P", "wrote qsptop-");
	last_line(line, sizeof(line));
	snprintf(path, sizeof(path), "%s/%s", tmp, line + 6);
	CHECK_SCREEN(strstr(line, ".pb.gz") != NULL,
		     "P: expected \"wrote qsptop-PID-DATE.pb.gz\", got \"%s\"", line);
	if (have("go"))
		CHECK(raw_sums(path, &s) && s.acquisitions == want,
		      "P: expected go tool pprof to read %s with %.0f acquisitions, "
		      "got %.0f", path, want, s.acquisitions);
}

/* P on a full disk (a file size limit): one line, and qsptop goes on. */
static void test_pprof_key_full_disk(void)
{
	if (!start_mode("full", "phases", "prlimit --fsize=64 --", ""))
		return;
	CHECK(file_has_text(tmp_path("expect"), "phase 1", WAIT_MS),
	      "full: no phase 1");
	CHECK_SCREEN(wait_until(has_text, "site_mutex_b", TIMEOUT_MS),
		     "full: expected the rows");
	keys("P", NULL);
	STATUS("P on a full disk", "export failed: qsptop-");
	keys("r", NULL);
	STATUS("full: after the failed P, qsptop goes on", "reset");
	quit_session("full");
}

static bool table_zeroed(const void *arg)
{
	(void)arg;
	return acq_total() == 0;
}

static void test_reset_keeps_counters(void)
{
	int port = free_port();
	char args[64], *text, expect[PATH_MAX];
	double acq, contended, wait;
	pid_t wl;

	strcpy(expect, tmp_path("expect"));
	snprintf(args, sizeof(args), "--listen %d", port);
	if (!start_mode("live", "phases", "", args))
		return;
	CHECK(file_has_text(expect, "phase 1", WAIT_MS), "live: no phase 1");
	text = metrics_until(port, "qsptop_lock_acquisitions_total",
			     "site_mutex_a", PHASE_A);
	CHECK(listens_on_loopback(port),
	      "--listen PORT: expected a socket on 127.0.0.1:%d only", port);
	acq = metric_sum(text, "qsptop_lock_acquisitions_total", NULL, NULL);
	contended = metric_sum(text, "qsptop_lock_contended_total", NULL, NULL);
	wait = metric_sum(text, "qsptop_lock_wait_seconds_total", NULL, NULL);
	CHECK(acq == PHASE_ALL, "live: expected %.0f acquisitions, got %.0f",
	      PHASE_ALL, acq);
	wl = (pid_t)atoi(strstr(text, "pid=\"") ? strstr(text, "pid=\"") + 5 : "0");
	free(text);
	check_pprof_key(PHASE_ALL);
	keys("r", NULL);
	CHECK_SCREEN(wait_until(table_zeroed, NULL, TIMEOUT_MS),
		     "live: expected r to zero the table's ACQ");
	text = metrics(port);
	CHECK(metric_sum(text, "qsptop_lock_acquisitions_total", NULL, NULL) == acq &&
	      metric_sum(text, "qsptop_lock_contended_total", NULL, NULL) == contended &&
	      metric_sum(text, "qsptop_lock_wait_seconds_total", NULL, NULL) == wait,
	      "after r: expected the counters unchanged (%.0f, %.0f, %.9f), got:\n%.600s",
	      acq, contended, wait, text);
	free(text);
	kill(wl, SIGUSR1);
	CHECK(file_has_text(expect, "phase 2", WAIT_MS), "live: no phase 2");
	text = metrics_until(port, "qsptop_lock_acquisitions_total", NULL,
			     2 * PHASE_ALL);
	CHECK(metric_sum(text, "qsptop_lock_acquisitions_total", NULL, NULL) ==
	      2 * PHASE_ALL, "after r and a second phase: expected %.0f "
	      "acquisitions (both phases), got %.0f", 2 * PHASE_ALL,
	      metric_sum(text, "qsptop_lock_acquisitions_total", NULL, NULL));
	check_histogram("live", text, metric_sum(text,
		"qsptop_lock_contended_total", NULL, NULL));
	free(text);
	quit_session("live");
}

/* --- headless: --top, idle clients, pprof deltas, Prometheus --- */

/* Fetch /debug/pprof/mutex into tmp/name and read its sums. */
static bool fetch_profile(int port, const char *name, struct pprof_sums *s)
{
	char *body, *path = tmp_path(name);
	size_t len;
	int status = http_get(port, "/debug/pprof/mutex", &body, &len);
	FILE *f = fopen(path, "w");

	if (f) {
		fwrite(body ? body : "", 1, len, f);
		fclose(f);
	}
	free(body);
	CHECK(status == 200, "/debug/pprof/mutex: expected 200, got %d", status);
	return status == 200 && raw_sums(path, s);
}

/* go tool pprof fetches the endpoint itself (and asks it for symbols). */
static void check_pprof_url(int port)
{
	char url[64], home[PATH_MAX + 8];
	char *argv[] = { "go", "tool", "pprof", "-top", url, NULL };
	struct start_opts so = { .out = tmp_path("url.out"),
				 .err = tmp_path("url.err"), .env = home };
	int status;
	char *err;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/debug/pprof/mutex", port);
	snprintf(home, sizeof(home), "HOME=%s", tmp);
	status = wait_status(start_with(argv, &so), WAIT_MS);
	err = slurp_file(tmp_path("url.err"), "");
	CHECK(status == 0, "go tool pprof -top %s: expected exit 0, got %d: %.400s",
	      url, status, err);
	free(err);
}

/* A query to Prometheus's HTTP API: the first result's value, or -1. */
static double prom_query(int port, const char *query)
{
	char path[1024], *body, *o = path;
	const cJSON *v;
	double value = -1;
	cJSON *j;
	size_t len;

	o += sprintf(o, "/api/v1/query?query=");
	for (const char *q = query; *q; q++)
		o += isalnum((unsigned char)*q) || strchr("_.", *q) ?
		     sprintf(o, "%c", *q) : sprintf(o, "%%%02X", (unsigned char)*q);
	if (http_get(port, path, &body, &len) != 200) {
		free(body);
		return -1;
	}
	j = cJSON_Parse(body);
	v = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(j, "data"), "result"), 0),
		"value"), 1);
	if (cJSON_IsString(v))
		value = strtod(v->valuestring, NULL);
	cJSON_Delete(j);
	free(body);
	return value;
}

static double prom_until(int port, const char *query, double want)
{
	long deadline = monotonic_ms() + WAIT_MS;
	double v;

	while ((v = prom_query(port, query)) != want && monotonic_ms() < deadline)
		usleep(200000);
	return v;
}

/* A Prometheus server scraping 127.0.0.1:target every second; its PID. */
static pid_t start_prometheus(int port, int target)
{
	char config[PATH_MAX], flag[PATH_MAX + 32], data[PATH_MAX + 32];
	char web[64];
	FILE *f;

	strcpy(config, tmp_path("prometheus.yml"));
	f = fopen(config, "w");
	if (!f)
		return -1;
	fprintf(f, "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
		"scrape_configs:\n  - job_name: qsptop\n    static_configs:\n"
		"      - targets: ['127.0.0.1:%d']\n", target);
	fclose(f);
	snprintf(flag, sizeof(flag), "--config.file=%s", config);
	snprintf(data, sizeof(data), "--storage.tsdb.path=%s", tmp_path("tsdb"));
	snprintf(web, sizeof(web), "--web.listen-address=127.0.0.1:%d", port);
	return start((char *[]){ "prometheus", flag, data, web, NULL },
		     tmp_path("prometheus.out"), tmp_path("prometheus.out"));
}

/* 100 clients that send a request and never read: the endpoint still answers. */
static void check_idle_clients(int port, pid_t wl)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	int fds[IDLE_CLIENTS], open_ = 0;
	char *text;

	for (int i = 0; i < IDLE_CLIENTS; i++) {
		fds[i] = connect_to(port);
		if (fds[i] >= 0 && write(fds[i], req, sizeof(req) - 1) ==
				   (ssize_t)sizeof(req) - 1)
			open_++;
	}
	text = metrics(port);
	CHECK(open_ == IDLE_CLIENTS && metric_sum(text,
		"qsptop_lock_acquisitions_total", NULL, NULL) == PHASE_ALL,
	      "with %d clients that never read (%d connected): expected /metrics "
	      "to answer as before, got:\n%.300s", IDLE_CLIENTS, open_, text);
	CHECK(kill(wl, 0) == 0, "the workload must be unaffected by idle clients");
	free(text);
	for (int i = 0; i < IDLE_CLIENTS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* --top 1: one named series, the rest in site="other", totals exact. */
static void check_top(const char *text)
{
	int named, other;

	metric_sum(text, "qsptop_lock_acquisitions_total", NULL, &named);
	metric_sum(text, "qsptop_lock_acquisitions_total", "site=\"other\"", &other);
	CHECK(named == 2 && other == 1 &&
	      metric_sum(text, "qsptop_lock_acquisitions_total", NULL, NULL) ==
		      PHASE_ALL,
	      "--top 1: expected a named series and one \"other\" summing to "
	      "%.0f, got %d series (%d other):\n%.800s", PHASE_ALL, named, other, text);
}

/* The sum of the rows' caused_wait_ns in a snapshot. */
static double snapshot_caused_ns(const cJSON *snap)
{
	const cJSON *row;
	double sum = 0;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows"))
		sum += num_field(row, "caused_wait_ns");
	return sum;
}

/*
 * The holders' counters (--holders) against the snapshot of the same
 * stop: holds timed and the caused wait exactly, the timed hold time as
 * each row's average hold times its holds timed (the snapshot gives no
 * more), to the nanosecond per row.
 */
static void check_hold_counters(const char *text, const cJSON *snap)
{
	double timed = 0, hold_ns = 0, caused = 0;
	int rows = 0;
	const cJSON *row;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		timed += num_field(row, "holds_timed");
		hold_ns += num_field(row, "avg_hold_ns") * num_field(row, "holds_timed");
		caused += num_field(row, "caused_wait_ns");
		rows++;
	}
	/* The phases' few waits may all be behind holders not named: caused may be 0. */
	CHECK(timed > 0, "--holders: expected timed holds in the snapshot, got "
	      "none (%d rows)", rows);
	CHECK(metric_sum(text, "qsptop_lock_holds_timed_total", NULL, NULL) == timed,
	      "/metrics: expected qsptop_lock_holds_timed_total %.0f (the "
	      "snapshot's holds_timed), got %.0f", timed,
	      metric_sum(text, "qsptop_lock_holds_timed_total", NULL, NULL));
	CHECK(fabs(metric_sum(text, "qsptop_lock_caused_wait_seconds_total", NULL,
			      NULL) * 1e9 - caused) < 1,
	      "/metrics: expected qsptop_lock_caused_wait_seconds_total %.9f s "
	      "(the snapshot's caused_wait_ns), got %.9f", caused / 1e9,
	      metric_sum(text, "qsptop_lock_caused_wait_seconds_total", NULL, NULL));
	CHECK(fabs(metric_sum(text, "qsptop_lock_hold_seconds_total", NULL,
			      NULL) * 1e9 - hold_ns) <= rows,
	      "/metrics: expected qsptop_lock_hold_seconds_total %.9f s (the "
	      "snapshot's timed holds), got %.9f", hold_ns / 1e9,
	      metric_sum(text, "qsptop_lock_hold_seconds_total", NULL, NULL));
}

/* Prometheus reads what qsptop serves: counts, rate(), the histogram. */
static void check_prometheus(int prom, double want)
{
	double v = prom_until(prom, "sum(qsptop_lock_acquisitions_total)", want);

	CHECK(v == want, "Prometheus: expected sum(qsptop_lock_acquisitions_total) "
	      "%.0f, got %.0f", want, v);
}

static void test_headless(void)
{
	int port = free_port(), prom_port = free_port();
	char where[32], json[PATH_MAX], expect[PATH_MAX], *text;
	struct pprof_sums p1, p2, snap_sums;
	bool prom = have("prometheus"), go = have("go");
	pid_t q, wl, prom_pid = -1;
	cJSON *snap;

	strcpy(json, tmp_path("snap.json"));
	strcpy(expect, tmp_path("expect-headless"));
	snprintf(where, sizeof(where), "%d", port);
	q = start((char *[]){ qsptop, "-b", "-n", "0", "-d", "0.2", "--top", "1",
			      "--holders", "--listen", where, "-j", json, "--", workload,
			      "phases", expect, NULL },
		  tmp_path("headless.out"), tmp_path("headless.err"));
	CHECK(file_has_text(expect, "phase 1", WAIT_MS), "headless: no phase 1");
	text = metrics_until(port, "qsptop_lock_acquisitions_total", NULL, PHASE_ALL);
	wl = (pid_t)atoi(strstr(text, "pid=\"") ? strstr(text, "pid=\"") + 5 : "0");
	check_top(text);
	{
		char why[700];

		if (have("promtool"))
			CHECK(promtool_accepts(text, why, sizeof(why)),
			      "promtool check metrics: %s", why);
		else
			SKIP("promtool not found (install prometheus; make check as root does)");
	}
	check_histogram("headless", text,
			metric_sum(text, "qsptop_lock_contended_total", NULL, NULL));
	free(text);
	check_idle_clients(port, wl);
	if (go)
		CHECK(fetch_profile(port, "p1.pb.gz", &p1),
		      "go tool pprof -raw: expected it to read the first profile");
	if (prom) {
		prom_pid = start_prometheus(prom_port, port);
		check_prometheus(prom_port, PHASE_ALL);
	} else {
		SKIP("prometheus not found (install prometheus; make check as root does)");
	}
	kill(wl, SIGUSR1);
	CHECK(file_has_text(expect, "phase 2", WAIT_MS), "headless: no phase 2");
	text = metrics_until(port, "qsptop_lock_acquisitions_total", NULL,
			     2 * PHASE_ALL);
	if (prom) {
		check_prometheus(prom_port, 2 * PHASE_ALL);
		CHECK(prom_query(prom_port, "sum(rate(qsptop_lock_acquisitions_total[5s]))") >= 0,
		      "Prometheus: expected rate() over qsptop's counters to answer");
		CHECK(prom_until(prom_port, "sum(qsptop_lock_wait_seconds_count)",
				 metric_sum(text, "qsptop_lock_contended_total", NULL, NULL)) ==
		      metric_sum(text, "qsptop_lock_contended_total", NULL, NULL),
		      "Prometheus: expected the histogram's _count to be contended (%.0f)",
		      metric_sum(text, "qsptop_lock_contended_total", NULL, NULL));
		kill(prom_pid, SIGTERM);
		wait_status(prom_pid, WAIT_MS);
	}
	if (go)
		CHECK(fetch_profile(port, "p2.pb.gz", &p2),
		      "go tool pprof -raw: expected it to read the second profile");
	if (go)
		check_pprof_url(port);
	kill(q, SIGTERM);
	CHECK(wait_status(q, WAIT_MS) == 0, "headless: expected qsptop to exit 0");
	snap = load_json(json);
	snap_sums = snapshot_sums(snap, NULL);
	CHECK(snap && snap_sums.acquisitions == 2 * PHASE_ALL &&
	      metric_sum(text, "qsptop_lock_contended_total", NULL, NULL) ==
		      snap_sums.contentions,
	      "/metrics: expected the snapshot's counts (%.0f acquisitions, %.0f "
	      "contended), got %.0f, %.0f", snap_sums.acquisitions,
	      snap_sums.contentions,
	      metric_sum(text, "qsptop_lock_acquisitions_total", NULL, NULL),
	      metric_sum(text, "qsptop_lock_contended_total", NULL, NULL));
	if (snap)
		check_hold_counters(text, snap);
	if (go && snap)
		CHECK(p1.caused + p2.caused == snapshot_caused_ns(snap),
		      "the two profiles: expected caused/nanoseconds to sum to "
		      "the snapshot's caused_wait_ns %.0f, got %.0f",
		      snapshot_caused_ns(snap), p1.caused + p2.caused);
	if (go) {
		CHECK(p2.acquisitions == PHASE_ALL,
		      "second profile: expected the second phase alone (%.0f "
		      "acquisitions), got %.0f", PHASE_ALL, p2.acquisitions);
		CHECK(p1.delay + p2.delay == snap_sums.delay &&
		      p1.contentions + p2.contentions == snap_sums.contentions &&
		      p1.acquisitions + p2.acquisitions == snap_sums.acquisitions,
		      "the two profiles: expected the snapshot's %.0f ns, %.0f "
		      "contentions, %.0f acquisitions, got %.0f, %.0f, %.0f",
		      snap_sums.delay, snap_sums.contentions, snap_sums.acquisitions,
		      p1.delay + p2.delay, p1.contentions + p2.contentions,
		      p1.acquisitions + p2.acquisitions);
	} else {
		SKIP("go tool pprof not found (install golang-go; make check as root does)");
	}
	cJSON_Delete(snap);
	free(text);
}

int main(void)
{
	if (!tmux_begin("metrics"))
		return check_summary();
	test_port_in_use();
	test_headless();
	test_reset_keeps_counters();
	test_pprof_key_full_disk();
	return tmux_end("test_metrics");
}
