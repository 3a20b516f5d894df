/* Names of the shared types. */
#include <string.h>

#include "types.h"

static const char *const lock_type_names[LOCK_TYPE_COUNT] = {
	[LOCK_MUTEX] = "mutex",
	[LOCK_RWLOCK_READ] = "rwlock-read",
	[LOCK_RWLOCK_WRITE] = "rwlock-write",
	[LOCK_SPIN] = "spinlock",
	[LOCK_CONDVAR] = "condvar",
	[LOCK_FUTEX] = "futex",
	[LOCK_FUTEX_WAKE] = "futex-wake",
	[LOCK_SEMAPHORE] = "semaphore",
};

const char *lock_type_name(enum lock_type type)
{
	if ((unsigned)type >= LOCK_TYPE_COUNT)
		return "unknown";
	return lock_type_names[type];
}

int lock_type_parse(const char *name)
{
	for (int i = 0; i < LOCK_TYPE_COUNT; i++) {
		if (strcmp(name, lock_type_names[i]) == 0)
			return i;
	}
	return -1;
}
