/*
 * Wrappers: glob patterns match demangled names with or without their
 * arguments, return type and clone suffix; the built-in list catches
 * libstdc++'s and QEMU's lock functions and nothing else; a return address
 * into one of this test's own functions is matched through the symbols.
 */
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "../../tui/symbols.h"
#include "../../tui/wrappers.h"

#define NOINLINE __attribute__((noinline, noclone))

static volatile uint64_t sink;

struct name_case {
	const char *name;
	bool builtin;		/* matched by the built-in list */
	bool app_lock;		/* matched by the single pattern "app_lock" */
};

static const struct name_case names[] = {
	{ "app_lock", false, true },
	{ "app_lock(int)", false, true },
	{ "app_lock(pthread_mutex_t*)", false, true },
	{ "app_lock.constprop.0", false, true },
	{ "app_lock.cold", false, true },
	{ "app_locker", false, false },
	{ "my_app_lock", false, false },
	{ "path_a", false, false },
	{ "std::mutex::lock()", true, false },
	{ "std::mutex::unlock()", false, false },
	{ "std::recursive_mutex::lock()", true, false },
	{ "std::timed_mutex::try_lock_for<long, std::ratio<1l, 1000l> >("
	  "std::chrono::duration<long, std::ratio<1l, 1000l> > const&)", true, false },
	{ "std::shared_mutex::lock_shared()", true, false },
	{ "std::__shared_mutex_pthread::lock()", true, false },
	{ "std::unique_lock<std::mutex>::lock()", true, false },
	{ "std::unique_lock<std::mutex>::unique_lock(std::mutex&)", true, false },
	{ "std::lock_guard<std::mutex>::lock_guard(std::mutex&)", true, false },
	{ "std::condition_variable::wait(std::unique_lock<std::mutex>&)", true, false },
	{ "void std::condition_variable::wait<main::{lambda()#1}>("
	  "std::unique_lock<std::mutex>&, main::{lambda()#1})", true, false },
	{ "std::condition_variable::__wait_until_impl<std::chrono::duration<long, "
	  "std::ratio<1l, 1000000000l> > >(std::unique_lock<std::mutex>&, "
	  "std::chrono::time_point<std::chrono::_V2::steady_clock, "
	  "std::chrono::duration<long, std::ratio<1l, 1000000000l> > > const&)",
	  true, false },
	{ "__gthread_mutex_lock(pthread_mutex_t*)", true, false },
	{ "__gthrw_pthread_mutex_lock", true, false },
	{ "std::vector<int, std::allocator<int> >::push_back(int const&)", false, false },
	{ "qemu_mutex_lock_impl", true, false },
	{ "qemu_rec_mutex_lock_impl", true, false },
	{ "qemu_cond_wait_impl", true, false },
	{ "qemu_cond_timedwait_impl", true, false },
	{ "qemu_mutex_lock_impl_x", false, false },
	{ "qemu_mutex_unlock_impl", false, false },
	{ "pthread_mutex_lock", false, false },
	{ "main", false, false },
	{ "(anonymous namespace)::worker(int)", false, false },
};

/* The built-in list, and a single user pattern, over names[]. */
static void test_names(struct symbols *s)
{
	struct wrappers *builtin = wrappers_new(s), *user = wrappers_new(s);

	wrappers_builtin(builtin);
	wrappers_add(user, "app_lock");
	CHECK(wrappers_count(builtin) > 20, "built-in patterns: got %zu",
	      wrappers_count(builtin));
	CHECK_U64(wrappers_count(user), 1);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		bool b = wrappers_name_matches(builtin, names[i].name);
		bool u = wrappers_name_matches(user, names[i].name);

		CHECK(b == names[i].builtin, "built-in list on \"%s\": expected %s",
		      names[i].name, names[i].builtin ? "a wrapper" : "no wrapper");
		CHECK(u == names[i].app_lock, "\"app_lock\" on \"%s\": expected %s",
		      names[i].name, names[i].app_lock ? "a match" : "no match");
	}
	CHECK(!wrappers_name_matches(user, NULL), "an unknown name is no wrapper");
	wrappers_free(builtin);
	wrappers_free(user);
}

/* Globs with wildcards and classes behave like fnmatch(3). */
static void test_globs(struct symbols *s)
{
	struct wrappers *w = wrappers_new(s);

	wrappers_add(w, "my_*lock");
	wrappers_add(w, "ns::Lock<*>::get");
	CHECK(wrappers_name_matches(w, "my_lock"), "my_*lock matches my_lock");
	CHECK(wrappers_name_matches(w, "my_spin_lock(int)"), "my_*lock matches with args");
	CHECK(!wrappers_name_matches(w, "my_lock_all"), "my_*lock is anchored");
	CHECK(wrappers_name_matches(w, "ns::Lock<int, long>::get() const"),
	      "a template with spaces and a const method");
	wrappers_free(w);
}

static NOINLINE uint64_t return_address(void)
{
	uint64_t ra = (uint64_t)__builtin_return_address(0);

	sink += ra;
	return ra;
}

/* Stands for a program's lock wrapper: returns a return address into it. */
static NOINLINE uint64_t test_lock_wrapper(void)
{
	uint64_t ra = return_address();

	sink += ra;
	return ra;
}

/* Unlike test_lock_wrapper(), lest the two be folded into one. */
static NOINLINE uint64_t test_caller(void)
{
	uint64_t ra = return_address();

	sink ^= ra;
	return ra;
}

/* Each module as the collector names it (the executable by its path). */
static int add_module(struct dl_phdr_info *info, size_t size, void *data)
{
	static char exe[4096];
	const char *path = info->dlpi_name;

	if (!path[0]) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

		exe[n > 0 ? n : 0] = '\0';
		path = exe;
	}

	(void)size;
	if (info->dlpi_name[0] == '\0' || strstr(path, "/libc.so"))
		symbols_add_module(data, path, info->dlpi_addr, NULL, 0);
	return 0;
}

/* Return addresses resolve to functions; the answers stay the same cached. */
static void test_addresses(struct symbols *s)
{
	struct wrappers *w = wrappers_new(s);
	uint64_t in_wrapper = test_lock_wrapper(), in_caller = test_caller();

	CHECK(!wrappers_match(w, in_wrapper), "no patterns: nothing is a wrapper");
	wrappers_add(w, "test_*_wrapper");
	for (int round = 0; round < 2; round++) {
		CHECK(wrappers_match(w, in_wrapper), "round %d: an address in "
		      "test_lock_wrapper is in a wrapper", round);
		CHECK(!wrappers_match(w, in_caller), "round %d: an address in "
		      "test_caller is not", round);
		CHECK(!wrappers_match(w, 0), "round %d: address 0 is not", round);
	}
	for (uint64_t i = 0; i < 5000; i++)
		wrappers_match(w, 0x1000 + i * 64);	/* the cache grows */
	CHECK(wrappers_match(w, in_wrapper), "after the cache grew");
	wrappers_add(w, "test_caller");
	CHECK(wrappers_match(w, in_caller), "a new pattern clears the cache");
	CHECK(!wrappers_match(NULL, in_caller), "no wrapper list: no wrapper");
	wrappers_free(w);
}

int main(void)
{
	struct symbols *s = symbols_new();

	dl_iterate_phdr(add_module, s);
	test_names(s);
	test_globs(s);
	test_addresses(s);
	symbols_free(s);
	return check_summary();
}
