/* The collector's process-wide flags. */
#include "../common/clock.h"
#include "state.h"

int state_recording_flag;
int state_holders_flag;
static uint64_t holders_since;
static bool injected;

void state_set_recording(bool on)
{
	__atomic_store_n(&state_recording_flag, on, __ATOMIC_RELEASE);
}

void state_set_holders(bool on)
{
	if (on)
		__atomic_store_n(&holders_since, clock_now_ns(), __ATOMIC_RELAXED);
	__atomic_store_n(&state_holders_flag, on, __ATOMIC_RELEASE);
}

uint64_t state_holders_since(void)
{
	return __atomic_load_n(&holders_since, __ATOMIC_RELAXED);
}

bool state_injected(void)
{
	return injected;
}

void state_set_injected(bool on)
{
	injected = on;
}
