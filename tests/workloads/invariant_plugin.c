/*
 * The plugin of the invariance workload (wl_invariant plugin_ctor): its
 * constructor runs under the loader lock and sleeps there for
 * $INVARIANT_PLUGIN_MS, long enough for qsptop to attach meanwhile.
 * Built as libwl_invariant_plugin.so, not as a program.
 */
#include <stdlib.h>
#include <time.h>

/* Whether the constructor's sleep lasted its whole time. */
int invariant_plugin_slept;

__attribute__((constructor)) static void hold_the_loader(void)
{
	const char *ms_text = getenv("INVARIANT_PLUGIN_MS");
	int ms = ms_text ? atoi(ms_text) : 3000;
	struct timespec t = { ms / 1000, ms % 1000 * 1000000L };

	invariant_plugin_slept = nanosleep(&t, NULL) == 0;
}
