/* Shortening C++ names from the inside (tui/cxxname.c). */
#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include "../../tui/cxxname.h"
#include "../../tui/format.h"
#include "check.h"

#define POOL "storage::engine::connection_pool<std::pair<int, double>, " \
	"std::vector<std::__cxx11::basic_string<char, std::char_traits<char>, " \
	"std::allocator<char> >, std::allocator<std::__cxx11::basic_string<" \
	"char, std::char_traits<char>, std::allocator<char> > > > >::" \
	"checkout_connection_for_request(std::vector<std::pair<int, double>, " \
	"std::allocator<std::pair<int, double> > >&, std::pair<int, double> const*)"

struct fit_case {
	const char *name;
	const char *tail;
	int width;
	const char *want;
	bool fits;
};

static const struct fit_case cases[] = {
	/* The name: parameters and template arguments go first. */
	{ POOL, "", 0, POOL, true },
	{ POOL, "", 400, POOL, true },
	{ POOL, "+0x12", 90, "storage::engine::connection_pool<\u2026>::"
	  "checkout_connection_for_request(\u2026)+0x12", true },
	{ POOL, "+0x12", 70, "engine::connection_pool<\u2026>::"
	  "checkout_connection_for_request(\u2026)+0x12", true },
	{ POOL, " (cxxname.cc:14)", 70, "connection_pool<\u2026>::"
	  "checkout_connection_for_request(\u2026) (cxxname.cc:14)", true },
	{ POOL, "", 34, "checkout_connection_for_request(\u2026)", true },
	{ POOL, "", 31, "checkout_connection_for_request", true },
	{ POOL, "+0x12", 31, "checkout_connection_for_request", false },
	{ POOL, "", 16, "checkout_connec\u2026", false },
	/* C names are their own shortest form. */
	{ "worker", "+0x23 (demo.c:57)", 40, "worker+0x23 (demo.c:57)", true },
	{ "worker", "+0x23 (demo.c:57)", 20, "worker", false },
	{ "queue_take_with_a_long_name", "", 10, "queue_tak\u2026", false },
	/* Operators keep their own names whole. */
	{ "ns::Matrix<double>::operator()(unsigned long, unsigned long) const", "", 40,
	  "ns::Matrix<double>::operator()(\u2026)", true },
	{ "ns::Matrix<double>::operator()(unsigned long, unsigned long) const", "", 20,
	  "operator()(\u2026)", true },
	{ "ns::Matrix<double>::operator()(unsigned long, unsigned long) const", "", 12,
	  "operator()", true },
	{ "bool ns::operator< <ns::Key>(ns::Key const&, ns::Key const&)", "", 30,
	  "ns::operator< <ns::Key>(\u2026)", true },
	{ "bool ns::operator< <ns::Key>(ns::Key const&, ns::Key const&)", "", 16,
	  "operator< <\u2026>(\u2026)", true },
	{ "bool ns::operator< <ns::Key>(ns::Key const&, ns::Key const&)", "", 15,
	  "operator<", true },
	{ "std::ostream& ns::operator<<(std::ostream&, ns::Key const&)", "", 30,
	  "ns::operator<<(\u2026)", true },
	{ "std::ostream& ns::operator<<(std::ostream&, ns::Key const&)", "", 11,
	  "operator<<", true },
	{ "ns::Key::operator<(ns::Key const&) const", "", 18, "Key::operator<(\u2026)", true },
	{ "ns::Key::operator<(ns::Key const&) const", "", 16, "operator<(\u2026)", true },
	{ "ns::Key::operator->() const", "", 16, "operator->()", true },
	{ "operator new[](unsigned long)", "", 17, "operator new[](\u2026)", true },
	{ "ns::Handle::operator bool() const", "", 20, "operator bool()", true },
	/* Lambdas, anonymous namespaces, local entities. */
	{ "worker_pool::start(int)::{lambda(int)#1}::operator()(int) const", "", 60,
	  "worker_pool::start(\u2026)::{lambda(\u2026)#1}::operator()(\u2026)", true },
	{ "worker_pool::start(int)::{lambda(int)#1}::operator()(int) const", "", 32,
	  "{lambda(\u2026)#1}::operator()(\u2026)", true },
	{ "(anonymous namespace)::drain_queue(std::deque<int, std::allocator<int> >&)",
	  "", 40, "(anonymous namespace)::drain_queue(\u2026)", true },
	{ "(anonymous namespace)::drain_queue(std::deque<int, std::allocator<int> >&)",
	  "", 30, "drain_queue(\u2026)", true },
	/* Nested templates and function pointers in the parameters. */
	{ "void sched::run_each<std::map<int, std::vector<int> > >(void (*)(int, "
	  "std::map<int, std::vector<int> >&), std::map<int, std::vector<int> >&)",
	  "", 40, "sched::run_each<\u2026>(\u2026)", true },
	{ "void sched::run_each<std::map<int, std::vector<int> > >(void (*)(int, "
	  "std::map<int, std::vector<int> >&), std::map<int, std::vector<int> >&)",
	  "", 14, "run_each<\u2026>(\u2026)", true },
	/* Clones, ABI tags and qualifiers go with the parameter lists. */
	{ "cache::lookup(int) [clone .cold]", "+0x4", 40,
	  "cache::lookup(int) [clone .cold]+0x4", true },
	{ "cache::lookup(int) [clone .cold]", "+0x4", 24, "cache::lookup(\u2026)+0x4", true },
	{ "cache::name[abi:cxx11]() const", "", 30, "cache::name[abi:cxx11]() const", true },
	{ "cache::name[abi:cxx11]() const", "", 14, "cache::name()", true },
	{ "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > "
	  "cache::label[abi:cxx11]<int>(int) &&", "", 24, "cache::label<int>(\u2026)", true },
	{ "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > "
	  "cache::label[abi:cxx11]<int>(int) &&", "", 19, "cache::label<\u2026>(\u2026)", true },
};

static void test_cases(void)
{
	char buf[1024];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct fit_case *c = &cases[i];
		bool fits = cxxname_fit(buf, sizeof(buf), c->name, c->tail, c->width);

		CHECK(strcmp(buf, c->want) == 0 && fits == c->fits,
		      "case %zu, width %d: expected \"%s\" (%s), got \"%s\" (%s)", i,
		      c->width, c->want, c->fits ? "fits" : "cut", buf,
		      fits ? "fits" : "cut");
	}
}

static int columns_of(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/*
 * At every width, the result fits; the function's name shows whole
 * whenever it could; the tail is whole or absent.
 */
static void test_every_width(void)
{
	static const char *const names[] = {
		POOL, "worker", "ns::Key::operator<(ns::Key const&) const",
		"worker_pool::start(int)::{lambda(int)#1}::operator()(int) const",
		"void (*signal_handler_of<int>(int))(int)", "a::b::", "::", "(", "<<<", "",
		"operator", "x [clone", "f(int) const [clone .cold] [clone .part.0]",
	};
	const char *bare[] = { "checkout_connection_for_request", "worker",
			       "operator<", "operator()" };
	char buf[2048];
	int bad = 0;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		for (int w = 1; w <= 420 && bad < 5; w++) {
			bool fits = cxxname_fit(buf, sizeof(buf), names[i], "+0x1f", w);
			size_t len = strlen(buf);
			bool tail = len >= 5 && strcmp(buf + len - 5, "+0x1f") == 0;

			if (columns_of(buf) > w || fits != tail ||
			    (i < 4 && w >= (int)strlen(bare[i]) && !strstr(buf, bare[i]))) {
				CHECK(0, "\"%s\" at %d: got \"%s\" (%s)", names[i], w, buf,
				      fits ? "fits" : "cut");
				bad++;
			}
		}
	}
	CHECK(bad == 0, "every width fits, names whole when they can be");
}

static void test_ascii(void)
{
	char buf[256];

	format_set_utf8(false);
	cxxname_fit(buf, sizeof(buf), "pool<int, int>::take(int)", "", 20);
	CHECK_STR(buf, "pool<...>::take(...)");
	cxxname_fit(buf, sizeof(buf), "pool<int, int>::take(int)", "", 3);
	CHECK_STR(buf, "ta~");
	format_set_utf8(true);
}

int main(void)
{
	if (setlocale(LC_ALL, "C.UTF-8") == NULL)
		setlocale(LC_ALL, "en_US.UTF-8");
	test_cases();
	test_every_width();
	test_ascii();
	return check_summary();
}
