// C++ standard locks reach pthread through libstdc++: std::mutex,
// std::shared_mutex, std::condition_variable::wait_for (cond_clockwait) and
// std::timed_mutex::try_lock_for (mutex_clocklock).
//   wl_cxx EXPECT_FILE
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

static std::mutex plain;
static std::shared_mutex shared;
static std::timed_mutex timed;
static std::condition_variable cv;
static long counter;

constexpr int kThreads = 4;
constexpr int kIters = 20000;

__attribute__((noinline)) static void use_mutex()
{
	std::lock_guard<std::mutex> g(plain); // site:cxx_mutex
	counter++;
}

__attribute__((noinline)) static void use_shared(bool write)
{
	if (write) {
		std::unique_lock<std::shared_mutex> g(shared);
		counter++;
	} else {
		std::shared_lock<std::shared_mutex> g(shared);
	}
}

__attribute__((noinline)) static void use_timed()
{
	if (timed.try_lock_for(std::chrono::seconds(5)))
		timed.unlock();
}

__attribute__((noinline)) static void use_cv_wait_for()
{
	std::unique_lock<std::mutex> g(plain);
	cv.wait_for(g, std::chrono::milliseconds(1));
}

int main(int argc, char **argv)
{
	std::vector<std::thread> threads;
	FILE *expect;

	if (argc != 2 || !(expect = std::fopen(argv[1], "w")))
		return 2;
	for (int t = 0; t < kThreads; t++)
		threads.emplace_back([t] {
			for (int i = 0; i < kIters; i++) {
				use_mutex();
				use_shared(t == 0 && i % 4 == 0);
				use_timed();
			}
		});
	for (auto &th : threads)
		th.join();
	for (int i = 0; i < 10; i++)
		use_cv_wait_for();
	std::fprintf(expect, "use_mutex mutex %d 0 0\n", kThreads * kIters);
	std::fprintf(expect, "use_shared rwlock-write %d 0 0\n", kIters / 4);
	std::fprintf(expect, "use_shared rwlock-read %d 0 0\n",
		     kThreads * kIters - kIters / 4);
	std::fprintf(expect, "use_timed mutex %d 0 0\n", kThreads * kIters);
	std::fprintf(expect, "use_cv_wait_for condvar 0 10 5000000\n");
	std::fprintf(expect, "use_cv_wait_for mutex 10 0 0\n");
	std::fclose(expect);
	return 0;
}
