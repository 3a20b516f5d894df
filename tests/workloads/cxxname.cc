// A method with a long C++ name takes a contended lock, while an idle
// worker waits on a condition variable for work that never comes:
// the screen must show the method's name, and lock waits apart from
// condition variable waits.
//   wl_cxxname SECONDS
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace storage {
namespace engine {

template <typename Key, typename Names>
class connection_pool {
public:
	__attribute__((noinline)) long
	checkout_connection_for_request(
		std::vector<std::pair<int, double> > &queue,
		std::pair<int, double> const *hint)
	{
		std::lock_guard<std::mutex> guard(lock_); // site:checkout
		queue.push_back(*hint);
		std::this_thread::sleep_for(std::chrono::microseconds(50));
		return (long)queue.size();
	}

private:
	std::mutex lock_;
};

} // namespace engine
} // namespace storage

using pool_type = storage::engine::connection_pool<std::pair<int, double>,
						   std::vector<std::string> >;

static pool_type pool;
static std::mutex work_lock;
static std::condition_variable work_ready;

// Waits for work that never comes until the deadline.
static void idle_worker(std::chrono::steady_clock::time_point end)
{
	std::unique_lock<std::mutex> g(work_lock);

	while (std::chrono::steady_clock::now() < end)
		work_ready.wait_until(g, end);
}

static void busy_worker(std::chrono::steady_clock::time_point end)
{
	std::vector<std::pair<int, double> > queue;
	std::pair<int, double> hint(1, 2.0);

	while (std::chrono::steady_clock::now() < end) {
		pool.checkout_connection_for_request(queue, &hint);
		if (queue.size() > 1000)
			queue.clear();
	}
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	auto end = std::chrono::steady_clock::now() +
		   std::chrono::microseconds((long)(seconds * 1e6));
	std::vector<std::thread> threads;

	threads.emplace_back(idle_worker, end);
	for (int i = 0; i < 3; i++)
		threads.emplace_back(busy_worker, end);
	for (auto &t : threads)
		t.join();
	return 0;
}
