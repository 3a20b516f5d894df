/* Lock wrappers: glob patterns over demangled names, cached per address. */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "wrappers.h"
#include "xalloc.h"

#define CACHE_MIN 256
#define NAME_MAX_LEN 1024

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
	NULL,
};

struct cache_entry {
	uint64_t address;
	bool used;
	bool is_wrapper;
};

struct wrappers {
	struct symbols *symbols;
	char **globs;
	size_t nglobs;
	struct cache_entry *cache;
	size_t cache_cap, cache_used;	/* cache_cap is a power of two */
};

struct wrappers *wrappers_new(struct symbols *s)
{
	struct wrappers *w = xcalloc(1, sizeof *w);

	w->symbols = s;
	w->cache_cap = CACHE_MIN;
	w->cache = xcalloc(w->cache_cap, sizeof *w->cache);
	return w;
}

void wrappers_free(struct wrappers *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nglobs; i++)
		free(w->globs[i]);
	free(w->globs);
	free(w->cache);
	free(w);
}

/* Forget every cached answer: the patterns changed. */
static void cache_clear(struct wrappers *w)
{
	memset(w->cache, 0, w->cache_cap * sizeof *w->cache);
	w->cache_used = 0;
}

void wrappers_add(struct wrappers *w, const char *glob)
{
	w->globs = xrealloc(w->globs, (w->nglobs + 1) * sizeof *w->globs);
	w->globs[w->nglobs++] = xstrdup(glob);
	cache_clear(w);
}

void wrappers_builtin(struct wrappers *w)
{
	for (size_t i = 0; wrappers_builtin_globs[i]; i++)
		wrappers_add(w, wrappers_builtin_globs[i]);
}

size_t wrappers_count(const struct wrappers *w)
{
	return w->nglobs;
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

	if (name == NULL || w->nglobs == 0)
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

/* Mix the bits of an address (splitmix64's finalizer). */
static uint64_t hash(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The slot holding address, or the empty slot where it belongs. */
static struct cache_entry *cache_slot(struct cache_entry *cache, size_t cap,
				      uint64_t address)
{
	size_t i = hash(address) & (cap - 1);

	while (cache[i].used && cache[i].address != address)
		i = (i + 1) & (cap - 1);
	return &cache[i];
}

/* Double the cache when it is half full. */
static void cache_grow(struct wrappers *w)
{
	struct cache_entry *old = w->cache;
	size_t old_cap = w->cache_cap;

	if (2 * w->cache_used < w->cache_cap)
		return;
	w->cache_cap *= 2;
	w->cache = xcalloc(w->cache_cap, sizeof *w->cache);
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].used)
			*cache_slot(w->cache, w->cache_cap, old[i].address) = old[i];
	free(old);
}

/*
 * Only addresses inside a known module are cached: one outside every
 * module may still fall into a module reported later.
 */
bool wrappers_match(void *ctx, uint64_t address)
{
	struct wrappers *w = ctx;
	struct cache_entry *e;
	struct frame_info fi;
	bool hit;

	if (w == NULL || w->nglobs == 0 || address == 0)
		return false;
	e = cache_slot(w->cache, w->cache_cap, address);
	if (e->used)
		return e->is_wrapper;
	symbols_resolve(w->symbols, address, 1, &fi);
	hit = wrappers_name_matches(w, fi.symbol);
	if (fi.module == NULL)
		return hit;
	*e = (struct cache_entry){ address, true, hit };
	w->cache_used++;
	cache_grow(w);
	return hit;
}
