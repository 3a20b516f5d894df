/* Lock wrappers: glob patterns over demangled names, cached per address. */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "addrcache.h"
#include "wrappers.h"
#include "xalloc.h"

#define NAME_MAX_LEN 1024
#define PATH_MAX_LEN 4096

const char *const wrappers_builtin_globs[] = {
	/* libstdc++'s out-of-line lock functions (and their -O0 helpers). */
	"std::mutex::lock*", "std::mutex::try_lock*",
	"std::recursive_mutex::lock*", "std::recursive_mutex::try_lock*",
	"std::timed_mutex::*lock*", "std::recursive_timed_mutex::*lock*",
	"std::__timed_mutex_impl<*>::*lock*",
	"std::shared_mutex::lock*", "std::shared_mutex::lock_shared*",
	"std::shared_mutex::try_lock*",
	"std::shared_timed_mutex::*lock*", "std::__shared_mutex_pthread::*lock*",
	"std::__shared_mutex_cv::*lock*",
	"std::unique_lock<*>::lock*", "std::unique_lock<*>::unique_lock*",
	"std::shared_lock<*>::lock*", "std::shared_lock<*>::shared_lock*",
	"std::lock_guard<*>::lock_guard*", "std::scoped_lock<*>::scoped_lock*",
	"std::condition_variable::*wait*", "std::condition_variable_any::*wait*",
	"std::_V2::condition_variable_any::*wait*", "std::__condvar::wait*",
	"__gthread_*", "__gthrw_*",
	/* QEMU's lock functions, and QSP's profiling wrappers around them. */
	"qemu_mutex_lock_impl", "qemu_rec_mutex_lock_impl",
	"qemu_mutex_trylock_impl", "qemu_rec_mutex_trylock_impl",
	"qemu_cond_wait_impl", "qemu_cond_timedwait_impl",
	"qemu_rwlock_rdlock*", "qemu_rwlock_wrlock*", "qemu_sem_wait*",
	"qemu_sem_timedwait*", "qemu_event_wait*", "bql_lock_impl",
	"qemu_mutex_lock_iothread_impl", "qsp_mutex_lock", "qsp_rec_mutex_lock",
	"qsp_bql_mutex_lock", "qsp_cond_wait", "qsp_cond_timedwait",
	/*
	 * Futex locks: InnoDB's, Rust's std (futex mutexes, rwlocks, condvars,
	 * Once, the thread parker; recent toolchains build std with v0 names,
	 * matched as they are), absl's Mutex slow paths and its futex.
	 */
	"srw_mutex_impl<*>::*", "ssux_lock_impl<*>::*", "srw_lock_impl<*>::*",
	"std::sys::*futex*", "_R*3std3sys*futex*", "std::sync::*Mutex<*>::lock*",
	"std::sync::*RwLock<*>::read*", "std::sync::*RwLock<*>::write*",
	"std::sync::*Condvar::wait*",
	"absl::*Mutex::Lock*", "absl::*Mutex::ReaderLock*",
	"absl::*Mutex::WriterLock*", "absl::*Mutex::*Slow*",
	"absl::*Mutex::Block*", "absl::*CondVar::Wait*",
	"absl::*synchronization_internal::*Wait*",
	"absl::*base_internal::SpinLock*", "AbslInternalPerThreadSemWait*",
	"AbslInternalSpinLockDelay*",
	/* PostgreSQL's LWLocks and the semaphore their waits sleep on. */
	"PGSemaphoreLock", "LWLockAcquire", "LWLockAcquireOrWait",
	"LWLockWaitForVar",
	/* Varnish's lock functions (exported by varnishd). */
	"Lck__Lock", "Lck__Trylock", "Lck_CondWait*",
	/* RocksDB's mutexes and condition variables. */
	"rocksdb::port::Mutex::*", "rocksdb::port::RWMutex::*",
	"rocksdb::port::CondVar::*", "rocksdb::InstrumentedMutex::*",
	"rocksdb::InstrumentedCondVar::*",
	/* APR's (apache2's) locks. */
	"apr_thread_mutex_*lock", "apr_thread_rwlock_*lock",
	"apr_thread_cond_*wait", "apr_proc_mutex_*lock", "apr_global_mutex_*lock",
	/*
	 * glib's: GRWLock and GRecMutex are pthread's; GMutex and GCond sleep
	 * in futex(2) themselves, g_mutex_lock in a slow path it jumps to
	 * (g_mutex_lock_slowpath, named only with debuginfo).
	 */
	"g_mutex_lock*", "g_rec_mutex_lock", "g_rw_lock_writer_lock",
	"g_rw_lock_reader_lock", "g_cond_wait*",
	NULL,
};

struct wrappers {
	struct symbols *symbols;
	char **globs;
	char **needles;		/* each glob's longest run of plain characters */
	size_t nglobs;
	char **addresses;	/* "0xADDR" and "MODULE+0xOFFSET" patterns */
	size_t naddresses;
	struct addrcache *cache;	/* whether an address is in a wrapper */
	uint64_t *found;	/* functions found from evidence: lo, hi, ... */
	size_t nfound;
	uint64_t *ranges;	/* the code of the named wrappers: lo, hi, ... */
	size_t nranges, ranges_cap;
	size_t modules_done;	/* modules whose functions were matched */
	unsigned generation;	/* of the symbols all that was worked out from */
};

struct wrappers *wrappers_new(struct symbols *s)
{
	struct wrappers *w = xcalloc(1, sizeof *w);

	w->symbols = s;
	w->cache = addrcache_new(sizeof(bool));
	return w;
}

void wrappers_free(struct wrappers *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nglobs; i++) {
		free(w->globs[i]);
		free(w->needles[i]);
	}
	for (size_t i = 0; i < w->naddresses; i++)
		free(w->addresses[i]);
	free(w->globs);
	free(w->needles);
	free(w->addresses);
	free(w->found);
	addrcache_free(w->cache, NULL);
	free(w->ranges);
	free(w);
}

/* The longest run of a glob without a wildcard, which any match contains. */
static char *needle_of(const char *glob)
{
	size_t best = 0, best_len = 0, run = 0;

	for (size_t i = 0;; i++) {
		bool plain = glob[i] && !strchr("*?[]\\", glob[i]);

		if (plain) {
			run++;
			continue;
		}
		if (run > best_len) {
			best_len = run;
			best = i - run;
		}
		run = 0;
		if (glob[i] == '\0')
			break;
	}
	return xstrndup(glob + best, best_len);
}

/* Whether a pattern names an address: "0xADDR" or "MODULE+0xOFFSET". */
static bool is_address(const char *pattern)
{
	const char *hex = strncmp(pattern, "0x", 2) == 0 ? pattern :
			  strstr(pattern, "+0x");

	if (hex == NULL)
		return false;
	hex += hex == pattern ? 2 : 3;
	return *hex && strspn(hex, "0123456789abcdefABCDEF") == strlen(hex);
}

/* Forget what was worked out from the patterns: they changed. */
static void patterns_changed(struct wrappers *w)
{
	addrcache_clear(w->cache, NULL);
	w->nranges = 0;
	w->modules_done = 0;
}

/* Forget what was worked out from names that have changed since. */
static void follow_symbols(struct wrappers *w)
{
	unsigned generation = symbols_generation(w->symbols);

	if (generation != w->generation) {
		patterns_changed(w);
		w->generation = generation;
	}
}

void wrappers_add(struct wrappers *w, const char *glob)
{
	if (is_address(glob)) {
		w->addresses = xreallocarray(w->addresses, w->naddresses + 1,
					     sizeof *w->addresses);
		w->addresses[w->naddresses++] = xstrdup(glob);
	} else {
		w->globs = xreallocarray(w->globs, w->nglobs + 1, sizeof *w->globs);
		w->needles = xreallocarray(w->needles, w->nglobs + 1,
					   sizeof *w->needles);
		w->globs[w->nglobs] = xstrdup(glob);
		w->needles[w->nglobs++] = needle_of(glob);
	}
	patterns_changed(w);
}

void wrappers_builtin(struct wrappers *w)
{
	for (size_t i = 0; wrappers_builtin_globs[i]; i++)
		wrappers_add(w, wrappers_builtin_globs[i]);
}

size_t wrappers_count(const struct wrappers *w)
{
	return w->nglobs + w->naddresses + w->nfound;
}

void wrappers_add_function(struct wrappers *w, uint64_t lo, uint64_t hi)
{
	w->found = xreallocarray(w->found, w->nfound + 1, 2 * sizeof *w->found);
	w->found[2 * w->nfound] = lo;
	w->found[2 * w->nfound + 1] = hi;
	w->nfound++;
	/* Only verdicts change: the ranges matched by name stay as they are. */
	addrcache_clear(w->cache, NULL);
}

size_t wrappers_found(const struct wrappers *w)
{
	return w->nfound;
}

/* Whether pc lies in a function found from evidence. */
static bool in_found(const struct wrappers *w, uint64_t pc)
{
	for (size_t i = 0; i < w->nfound; i++)
		if (pc >= w->found[2 * i] && pc < w->found[2 * i + 1])
			return true;
	return false;
}

/* Cut "(args)" (and a trailing " const") off a demangled name in place. */
static void cut_args(char *name)
{
	size_t len = strlen(name);
	int depth = 0;

	if (len > 6 && strcmp(name + len - 6, " const") == 0)
		name[len -= 6] = '\0';
	if (len == 0 || name[len - 1] != ')')
		return;
	for (size_t i = len; i-- > 0;) {
		depth += name[i] == ')' ? 1 : name[i] == '(' ? -1 : 0;
		if (depth == 0) {
			if (i > 0)
				name[i] = '\0';
			return;
		}
	}
}

/* The name after a template function's return type ("void f<T>" -> "f<T>"). */
static const char *skip_return_type(const char *name)
{
	const char *after = name;
	int depth = 0;

	for (const char *p = name; *p; p++) {
		if (*p == '<' || *p == '(')
			depth++;
		else if ((*p == '>' || *p == ')') && depth > 0)
			depth--;
		else if (*p == ' ' && depth == 0)
			after = p + 1;
	}
	return after;
}

/* Whether some glob's plain part occurs in name: a match needs one. */
static bool any_needle(const struct wrappers *w, const char *name)
{
	for (size_t i = 0; i < w->nglobs; i++)
		if (strstr(name, w->needles[i]) != NULL)
			return true;
	return false;
}

static bool any_glob(const struct wrappers *w, const char *name)
{
	for (size_t i = 0; i < w->nglobs; i++)
		if (fnmatch(w->globs[i], name, 0) == 0)
			return true;
	return false;
}

/*
 * Tried in turn: the name as given, without its arguments and return type,
 * and without a GCC clone suffix (".constprop.0", ".isra.0", ".cold").
 */
bool wrappers_name_matches(const struct wrappers *w, const char *name)
{
	char bare[NAME_MAX_LEN];
	char *dot;

	if (name == NULL || w->nglobs == 0 || !any_needle(w, name))
		return false;
	if (any_glob(w, name))
		return true;
	if (strlen(name) >= sizeof(bare))
		return false;
	strcpy(bare, name);
	cut_args(bare);
	memmove(bare, skip_return_type(bare), strlen(skip_return_type(bare)) + 1);
	if (any_glob(w, bare))
		return true;
	dot = strchr(bare, '.');
	if (dot == NULL || dot == bare)
		return false;
	*dot = '\0';
	return any_glob(w, bare);
}

/* The address a "0xADDR" or "MODULE+0xOFFSET" pattern names; 0 if unknown. */
static uint64_t pattern_address(const struct wrappers *w, const char *pattern)
{
	const char *plus = strstr(pattern, "+0x");
	char module[PATH_MAX_LEN];
	uint64_t base;

	if (plus == NULL)
		return strtoull(pattern, NULL, 16);
	if ((size_t)(plus - pattern) >= sizeof(module))
		return 0;
	memcpy(module, pattern, (size_t)(plus - pattern));
	module[plus - pattern] = '\0';
	base = symbols_module_base(w->symbols, module);
	return base ? base + strtoull(plus + 1, NULL, 16) : 0;
}

/* Whether pc lies in a function that an address pattern names. */
static bool in_named_address(const struct wrappers *w, uint64_t pc)
{
	for (size_t i = 0; i < w->naddresses; i++) {
		uint64_t a = pattern_address(w, w->addresses[i]), lo, hi;

		if (a && symbols_function_at(w->symbols, a, &lo, &hi) &&
		    pc >= lo && pc < hi)
			return true;
	}
	return false;
}

/*
 * Only addresses inside a known module are cached, and only when their
 * names are known: one outside every module may still fall into a module
 * reported later, a name may come on a later refresh.
 */
bool wrappers_match(void *ctx, uint64_t address)
{
	struct wrappers *w = ctx;
	struct frame_info fi;
	bool hit, named, *known;

	if (w == NULL || wrappers_count(w) == 0 || address == 0)
		return false;
	follow_symbols(w);
	if ((known = addrcache_find(w->cache, address)))
		return *known;
	named = symbols_resolve(w->symbols, address, 1, &fi);
	hit = wrappers_name_matches(w, fi.symbol) ||
	      in_named_address(w, address - 1) || in_found(w, address - 1);
	if (fi.module == NULL || !named)
		return hit;
	*(bool *)addrcache_add(w->cache, address) = hit;
	return hit;
}

/* Append [lo, hi) to the ranges. */
static void add_range(struct wrappers *w, uint64_t lo, uint64_t hi)
{
	if (hi <= lo)
		return;
	w->ranges = xgrow(w->ranges, &w->ranges_cap, w->nranges + 1, 64,
			  2 * sizeof *w->ranges);
	w->ranges[2 * w->nranges] = lo;
	w->ranges[2 * w->nranges + 1] = hi;
	w->nranges++;
}

static void match_function(void *ctx, const char *name, uint64_t start,
			   uint64_t end)
{
	struct wrappers *w = ctx;

	if (wrappers_name_matches(w, name))
		add_range(w, start, end);
}

size_t wrappers_ranges(struct wrappers *w, uint64_t **ranges)
{
	size_t named, total;

	follow_symbols(w);
	for (; w->modules_done < symbols_modules(w->symbols); w->modules_done++)
		symbols_each_function(w->symbols, w->modules_done, match_function, w);
	named = w->nranges;
	for (size_t i = 0; i < w->naddresses; i++) {
		uint64_t a = pattern_address(w, w->addresses[i]), lo, hi;

		if (a && symbols_function_at(w->symbols, a, &lo, &hi))
			add_range(w, lo, hi);
	}
	for (size_t i = 0; i < w->nfound; i++)
		add_range(w, w->found[2 * i], w->found[2 * i + 1]);
	total = w->nranges;
	*ranges = xreallocarray(NULL, total ? total : 1, 2 * sizeof **ranges);
	if (total)
		memcpy(*ranges, w->ranges, total * 2 * sizeof **ranges);
	w->nranges = named;	/* the others: worked out afresh each time */
	return total;
}
