/* The collector's process-wide flags. */
#include "state.h"

int state_recording_flag;
static bool injected;

void state_set_recording(bool on)
{
	__atomic_store_n(&state_recording_flag, on, __ATOMIC_RELEASE);
}

bool state_injected(void)
{
	return injected;
}

void state_set_injected(bool on)
{
	injected = on;
}
