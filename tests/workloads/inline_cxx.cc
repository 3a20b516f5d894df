// std::lock_guard, whose lock call lies in libstdc++'s headers, used in a
// helper of the program's own that -O2 inlines into two callers, and used
// directly in a function. The sites must be the program's lines: bump()'s
// lock_guard line, inlined in first() and second(), and direct()'s.
// RESULT gets one "CALLER ACQUISITIONS" line per caller.
//   wl_inline_cxx RESULT
#include <cstdio>
#include <mutex>

static std::mutex mutex;
static volatile long counter;

constexpr long kFirst = 3000, kSecond = 2000, kDirect = 1000;

static inline void bump()
{
	std::lock_guard<std::mutex> g(mutex); // site:bump
	counter = counter + 1;
}

__attribute__((noipa)) static void first(long n)
{
	for (long i = 0; i < n; i++)
		bump(); // site:first
}

__attribute__((noipa)) static void second(long n)
{
	for (long i = 0; i < n; i++)
		bump(); // site:second
}

__attribute__((noipa)) static void direct(long n)
{
	for (long i = 0; i < n; i++) {
		std::lock_guard<std::mutex> g(mutex); // site:direct
		counter = counter + 1;
	}
}

int main(int argc, char **argv)
{
	std::FILE *result;

	if (argc != 2 || !(result = std::fopen(argv[1], "w")))
		return 2;
	first(kFirst);
	second(kSecond);
	direct(kDirect);
	std::fprintf(result, "first %ld\nsecond %ld\ndirect %ld\n", kFirst,
		     kSecond, kDirect);
	return std::fclose(result) != 0;
}
