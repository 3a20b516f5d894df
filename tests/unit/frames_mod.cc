// A C++ module for test_frames: dlopen'ed after the first sync, unwound
// through (templates, std::function, a lambda, a virtual call, frames with
// cleanups and a try block, so its FDEs carry personality and LSDA), then
// dlclosed.
#include <functional>
#include <stdexcept>
#include <vector>

namespace {

template <int N> struct level {
	static __attribute__((noinline)) int run(const std::function<int(int)> &f, int x)
	{
		std::vector<int> v(3, x);
		int r = level<N - 1>::run(f, v[1] + 1);

		asm volatile("");
		return r + static_cast<int>(v.size());
	}
};

template <> struct level<0> {
	static __attribute__((noinline)) int run(const std::function<int(int)> &f, int x)
	{
		int r = f(x);

		asm volatile("");
		return r;
	}
};

struct base {
	virtual int go(void (*cb)(void *), void *arg) = 0;
	virtual ~base() = default;
};

struct impl : base {
	__attribute__((noinline)) int go(void (*cb)(void *), void *arg) override
	{
		try {
			return level<4>::run([=](int x) { cb(arg); return x; }, 1);
		} catch (const std::exception &) {
			return -1;
		}
	}
};

}

// Call cb(arg) from under a few C++ frames of this module.
extern "C" __attribute__((visibility("default"))) int frames_mod_run(void (*cb)(void *), void *arg)
{
	impl i;
	base *volatile b = &i;
	int r = b->go(cb, arg);

	asm volatile("");
	return r;
}
