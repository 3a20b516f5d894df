/*
 * Futex locks through the real programs: a lock that sleeps with
 * syscall(SYS_futex) (tests/workloads/futex.c) shows its waits as futex
 * rows, at the call site or, with --wrapper, at the waiter's caller, when
 * launched and when injected with -p (GOT patching); its uncontended
 * acquisitions add nothing; and syscall() with any other call returns
 * exactly what it returns without the collector. A futex wait of the
 * program's own syscall instruction, which no hook sees, is named in the
 * header. With rustc at hand, a Rust program's std::sync::Mutex
 * contention shows as futex rows too, at the caller of lock().
 */
#include <cJSON.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../unit/check.h"
#include "harness.h"

enum { RUN_TIMEOUT_MS = 60000, READY_MS = 5000, RUST_BUILD_MS = 120000 };

#define HOLDS_MS 500.0		/* ten holds of 50 ms */
#define MIN_WAIT_MS 450.0

/*
 * Run qsptop -b -j JSON [--wrapper flag] -- target...; the snapshot, or
 * NULL. Its tables go to *out when out is not NULL (the caller frees).
 */
static cJSON *run_qsptop(const char *label, const char *flag,
			 char *const target[], char **out)
{
	char *json = tmp_path("futex.json"), *argv[32];
	struct run r;
	int n = 0;

	argv[n++] = qsptop;
	argv[n++] = "-b";
	argv[n++] = "-d";
	argv[n++] = "0.2";
	argv[n++] = "-j";
	argv[n++] = json;
	if (flag) {
		argv[n++] = "--wrapper";
		argv[n++] = (char *)flag;
	}
	argv[n++] = "--";
	for (int i = 0; target[i] && n < 31; i++)
		argv[n++] = target[i];
	argv[n] = NULL;
	unlink(json);
	r = run_capture(argv, RUN_TIMEOUT_MS, 0);
	CHECK(r.status == 0, "%s: qsptop exits 0, got %d: %s", label, r.status,
	      r.err);
	if (out) {
		*out = r.out;
		r.out = NULL;
	}
	run_free(&r);
	return load_json(json);
}

/*
 * The first row of a type whose site is function fn (NULL: any site):
 * its symbol with or without arguments or a Rust hash (fn::h0123...).
 */
static const cJSON *row_at(const cJSON *snap, const char *type, const char *fn)
{
	const cJSON *row;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const char *sym = str_field(cJSON_GetObjectItem(row, "site"), "symbol");
		size_t len = fn ? strlen(fn) : 0;

		if (strcmp(str_field(row, "type"), type) == 0 &&
		    (fn == NULL || (sym && strncmp(sym, fn, len) == 0 &&
				    (sym[len] == '\0' || sym[len] == '(' ||
				     strncmp(sym + len, "::h", 3) == 0))))
			return row;
	}
	return NULL;
}

static double site_line(const cJSON *row)
{
	return num_field(cJSON_GetObjectItem(row, "site"), "line");
}

/* The address the contend run wrote for a lock ("busy", "quiet"), as "0x..". */
static const char *lock_address(const char *result, const char *name)
{
	static char addr[2][32];
	static int next;
	char *text = slurp_file(result, ""), key[16], *a = addr[next++ % 2];
	const char *at;

	snprintf(key, sizeof(key), "%s ", name);
	at = strstr(text, key);
	if (at == NULL || sscanf(at + strlen(key), "%31s", a) != 1)
		strcpy(a, "(none)");
	free(text);
	return a;
}

/* Whether the row is about the lock at address a ("0x.."). */
static bool on_lock(const cJSON *row, const char *a)
{
	const char *object = str_field(row, "object");

	return object && strcmp(object, a) == 0;
}

/* Whether any row is about the lock at address a. */
static bool any_row_on(const cJSON *snap, const char *a)
{
	const cJSON *row;

	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows"))
		if (on_lock(row, a))
			return true;
	return false;
}

/* The ten 50 ms holds: waits at the wait's site, wakes at the wake's. */
static void test_contended(void)
{
	char *result = tmp_path("contend.res"), *tables = NULL;
	cJSON *snap = run_qsptop("contend", NULL,
				 (char *[]){ workload, "contend", result, NULL },
				 &tables);
	const cJSON *wait = snap ? row_at(snap, "futex", "fl_lock") : NULL;
	const cJSON *wake = snap ? row_at(snap, "futex-wake", "fl_unlock") : NULL;
	double ms = wait ? num_field(wait, "wait_ns") / 1e6 : -1;
	double waits = wait ? num_field(wait, "contended") : -1;
	double wakes = wake ? num_field(wake, "acquisitions") : -1;

	printf("contend: %.1f ms of futex wait over %.0f waits at fl_lock "
	       "(line %.0f), %.0f wakes at fl_unlock\n", ms, waits,
	       wait ? site_line(wait) : -1, wakes);
	/* At least the holds' time less their edges; how much more is the scheduler's. */
	CHECK(ms >= MIN_WAIT_MS,
	      "contend: expected at least %.0f ms waited at fl_lock, got %.1f ms",
	      MIN_WAIT_MS, ms);
	CHECK(waits >= 10 && num_field(wait, "acquisitions") == waits,
	      "contend: %.0f waits, each an acquisition (ACQ counts waits)", waits);
	CHECK(wait && site_line(wait) == marker_line("futex.c", "fl_wait"),
	      "contend: the row's line is the syscall's");
	CHECK(wait && cJSON_GetArraySize(cJSON_GetObjectItem(wait, "stacks")) > 0,
	      "contend: the waits have stacks");
	CHECK(wait && on_lock(wait, lock_address(result, "busy")),
	      "contend: the object is the futex word");
	CHECK(wakes >= 5 && wakes <= 10,
	      "contend: the holder's wakes that woke someone: %.0f", wakes);
	CHECK(snap && !any_row_on(snap, lock_address(result, "quiet")),
	      "contend: 200,000 uncontended acquisitions leave no row");
	CHECK(snap && sum_all(snap, "acquisitions") <= 2 * 10 + 2,
	      "contend: nothing else was counted (%.0f acquisitions)",
	      snap ? sum_all(snap, "acquisitions") : -1);
	CHECK(tables && strstr(tables, " - threads ") && !strstr(tables, "unseen waits"),
	      "contend: every futex wait was seen, and the header says nothing");
	free(tables);
	cJSON_Delete(snap);
}

/* With the lock functions as wrappers, the waits are the waiter's caller's. */
static void test_wrapped(void)
{
	char *result = tmp_path("wrapped.res");
	cJSON *snap = run_qsptop("wrapped", "fl_*",
				 (char *[]){ workload, "contend", result, NULL }, NULL);
	const cJSON *wait = snap ? row_at(snap, "futex", "waiter_main") : NULL;
	double ms = wait ? num_field(wait, "wait_ns") / 1e6 : -1;
	double waits = wait ? num_field(wait, "contended") : -1;

	printf("wrapped: %.1f ms of futex wait over %.0f waits at waiter_main "
	       "(line %.0f)\n", ms, waits, wait ? site_line(wait) : -1);
	CHECK(ms >= MIN_WAIT_MS && waits >= 10,
	      "wrapped: waiter_main waited %.1f ms over %.0f waits", ms, waits);
	CHECK(wait && site_line(wait) == marker_line("futex.c", "waiter_lock"),
	      "wrapped: the row's line is the call of fl_lock");
	CHECK(snap && row_at(snap, "futex", "fl_lock") == NULL,
	      "wrapped: the wrapper has no futex row");
	CHECK(snap && row_at(snap, "futex-wake", "holder_round") != NULL,
	      "wrapped: the wakes count on the holder's caller");
	cJSON_Delete(snap);
}

/* The workload's text symbols, from nm: their offsets and names. */
static struct {
	int n;
	unsigned long long at[256];
	char name[256][48];
} syms;

static void read_symbols(void)
{
	char cmd[PATH_MAX + 16], line[256];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm %s", workload);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p) && syms.n < 256) {
		char kind;

		if (sscanf(line, "%llx %c %47s", &syms.at[syms.n], &kind,
			   syms.name[syms.n]) == 3 && (kind == 't' || kind == 'T'))
			syms.n++;
	}
	if (p)
		pclose(p);
}

/* The function holding module offset a: the nearest symbol below it. */
static const char *function_at(unsigned long long a)
{
	int best = -1;

	for (int i = 0; i < syms.n; i++)
		if (syms.at[i] < a && (best < 0 || syms.at[i] > syms.at[best]))
			best = i;
	return best < 0 ? "?" : syms.name[best];
}

static unsigned long long address_of(const char *name)
{
	for (int i = 0; i < syms.n; i++)
		if (strcmp(syms.name[i], name) == 0)
			return syms.at[i];
	return 0;
}

/*
 * A stripped twin with its wrapper named by address (MODULE+0xOFFSET, as
 * nm prints it for the unstripped one): the waits go to the caller too.
 */
static void test_wrapped_stripped(void)
{
	char *exe = tmp_path("wl_futex_stripped"), *result = tmp_path("stripped.res");
	char cmd[3 * PATH_MAX], form[96];
	unsigned long long lock = 0;
	double ms = 0, waits = 0;
	int in_lock = 0;
	const cJSON *row;
	cJSON *snap;

	snprintf(cmd, sizeof(cmd), "strip --strip-all -o %s %s", exe, workload);
	CHECK(system(cmd) == 0, "stripped: strip makes the twin");
	read_symbols();
	lock = address_of("fl_lock");
	snprintf(form, sizeof(form), "wl_futex_stripped+0x%llx", lock);
	snap = run_qsptop("stripped", form, (char *[]){ exe, "contend", result, NULL },
			  NULL);
	cJSON_ArrayForEach(row, cJSON_GetObjectItem(snap, "rows")) {
		const cJSON *site = cJSON_GetObjectItem(row, "site");
		const char *fn = function_at((unsigned long long)num_field(site, "offset"));

		if (strcmp(str_field(row, "type"), "futex") != 0)
			continue;
		in_lock += strcmp(fn, "fl_lock") == 0;
		if (strcmp(fn, "waiter_main") == 0) {
			ms += num_field(row, "wait_ns") / 1e6;
			waits += num_field(row, "contended");
		}
	}
	printf("stripped, --wrapper %s: %.1f ms over %.0f waits in waiter_main\n",
	       form, ms, waits);
	CHECK(lock != 0 && ms >= MIN_WAIT_MS && waits >= 10 && in_lock == 0,
	      "stripped: the waits are waiter_main's, none is fl_lock's");
	cJSON_Delete(snap);
}

/* Other numbers, failing futex calls: the same results and errno. */
static void test_passthrough(void)
{
	char *bare = tmp_path("bare.res"), *watched = tmp_path("watched.res");
	int status = wait_status(start((char *[]){ workload, "passthrough", bare,
						   NULL }, NULL, NULL), RUN_TIMEOUT_MS);
	cJSON *snap = run_qsptop("passthrough", NULL,
				 (char *[]){ workload, "passthrough", watched, NULL },
				 NULL);
	char *a = slurp_file(bare, "(none)"), *b = slurp_file(watched, "(none)");
	const cJSON *timeout = snap ? row_at(snap, "futex", "probe_futex_timeout") : NULL;
	const cJSON *again = snap ? row_at(snap, "futex", "probe_futex_again") : NULL;

	printf("passthrough, without and with the collector:\n%s", a);
	CHECK(status == 0 && strcmp(a, b) == 0 && strlen(a) > 100,
	      "passthrough: the same results and errno; bare:\n%s\nwatched:\n%s",
	      a, b);
	CHECK(timeout && num_field(timeout, "failed") == 1 &&
	      num_field(timeout, "contended") == 0 &&
	      num_field(timeout, "wait_ns") >= 2e6,
	      "passthrough: a timed-out wait counts as failed, its 2 ms waited");
	CHECK(again && num_field(again, "contended") == 1,
	      "passthrough: a wait the word's change cut short (EAGAIN) is a wait");
	free(a);
	free(b);
	cJSON_Delete(snap);
}

/* Injected with -p into a running lock user: its GOT slot of syscall. */
static void test_injected(void)
{
	char *out = tmp_path("serve.out"), *json = tmp_path("inject.json");
	char *err = tmp_path("inject.err"), pidstr[16], *text;
	pid_t pid = start((char *[]){ workload, "serve", NULL }, out, out);
	long deadline = monotonic_ms() + READY_MS;
	const cJSON *wait;
	cJSON *snap;
	int status;

	while ((text = slurp_file(out, ""), strstr(text, "ready") == NULL) &&
	       monotonic_ms() < deadline) {
		free(text);
		usleep(10000);
	}
	free(text);
	snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	status = wait_status(start((char *[]){ qsptop, "-b", "-d", "0.2", "-n",
					       "6", "-j", json, "-p", pidstr, NULL },
				   tmp_path("inject.out"), err), RUN_TIMEOUT_MS);
	text = slurp_file(err, "");
	CHECK(status == 0, "inject: qsptop -p exits 0, got %d: %s", status, text);
	free(text);
	snap = load_json(json);
	wait = snap ? row_at(snap, "futex", "fl_lock") : NULL;
	printf("inject: %.1f ms of futex wait over %.0f waits at fl_lock\n",
	       wait ? num_field(wait, "wait_ns") / 1e6 : -1,
	       wait ? num_field(wait, "contended") : -1);
	CHECK(wait && num_field(wait, "contended") >= 3 &&
	      num_field(wait, "wait_ns") >= 100e6,
	      "inject: the injected collector times the futex waits");
	kill(pid, SIGTERM);
	CHECK(wait_status(pid, 10000) == 0, "inject: the workload ends cleanly");
	cJSON_Delete(snap);
}

/* A wait of a syscall instruction of the program's own: the header says so. */
static void test_raw(void)
{
	char *tables = NULL;
	cJSON *snap = run_qsptop("raw", NULL, (char *[]){ workload, "raw", NULL },
				 &tables);

	CHECK(tables && strstr(tables, " - unseen waits: 1 thread in raw futex\n"),
	      "raw: the header names the thread in a futex wait no hook sees:\n%s",
	      tables ? tables : "");
	CHECK(snap && row_at(snap, "futex", NULL) == NULL,
	      "raw: and there is no futex row");
	free(tables);
	cJSON_Delete(snap);
}

/* A Rust program whose threads contend on a std::sync::Mutex. */
static const char rust_source[] =
	"use std::sync::{Arc, Mutex};\n"
	"use std::{thread, time::Duration};\n"
	"#[inline(never)]\n"
	"fn hold(m: &Mutex<u64>) { let mut g = m.lock().unwrap(); *g += 1;\n"
	"    thread::sleep(Duration::from_millis(50)); }\n"
	"#[inline(never)]\n"
	"fn take(m: &Mutex<u64>) { *m.lock().unwrap() += 1; }\n"
	"fn main() {\n"
	"    let m = Arc::new(Mutex::new(0u64));\n"
	"    let m2 = m.clone();\n"
	"    let t = thread::spawn(move || for _ in 0..10 {\n"
	"        thread::sleep(Duration::from_millis(10)); take(&m2); });\n"
	"    for _ in 0..10 { hold(&m); thread::sleep(Duration::from_millis(2)); }\n"
	"    t.join().unwrap();\n"
	"}\n";

/* rustc compiles it, if there is a rustc; false otherwise. */
static bool build_rust(const char *exe)
{
	char *src = tmp_path("contend.rs");
	FILE *f = fopen(src, "w");
	int status;

	if (f == NULL || fputs(rust_source, f) < 0 || fclose(f) != 0)
		return false;
	status = wait_status(start((char *[]){ "rustc", "-O", "-g", "-o",
					       (char *)exe, src, NULL },
				   tmp_path("rustc.out"), tmp_path("rustc.out")),
			     RUST_BUILD_MS);
	return status == 0;
}

static void test_rust(void)
{
	char *exe = tmp_path("rust_contend");
	const cJSON *wait;
	cJSON *snap;

	if (system("command -v rustc >/dev/null 2>&1") != 0) {
		printf("rust: no rustc here, skipped\n");
		return;
	}
	CHECK(build_rust(exe), "rust: rustc builds the program");
	snap = run_qsptop("rust", NULL, (char *[]){ exe, NULL }, NULL);
	wait = snap ? row_at(snap, "futex", "contend::take") : NULL;
	printf("rust: %.1f ms of futex wait over %.0f waits at %s\n",
	       wait ? num_field(wait, "wait_ns") / 1e6 : -1,
	       wait ? num_field(wait, "contended") : -1,
	       wait ? str_field(cJSON_GetObjectItem(wait, "site"), "symbol") : "-");
	CHECK(wait && num_field(wait, "contended") >= 5 &&
	      num_field(wait, "wait_ns") >= 100e6,
	      "rust: std::sync::Mutex waits count as futex waits of the caller");
	cJSON_Delete(snap);
}

int main(void)
{
	find_paths("/tmp/qsptop-futex-XXXXXX", "wl_futex");
	signal(SIGPIPE, SIG_IGN);
	test_contended();
	test_wrapped();
	test_wrapped_stripped();
	test_passthrough();
	test_injected();
	test_raw();
	test_rust();
	remove_tmp();
	return check_summary();
}
