/* Sets of lock types: parsing --type, naming a set. */
#include <stdio.h>
#include <string.h>

#include "lockset.h"
#include "role.h"

/* The names that stand for several types. */
static const struct {
	const char *name;
	unsigned set;
} aliases[] = {
	{ .name = "rwlock",
	  .set = 1u << LOCK_RWLOCK_READ | 1u << LOCK_RWLOCK_WRITE },
	{ .name = "locks", .set = LOCKSET_LOCKS },
	{ .name = "idle", .set = LOCKSET_IDLE },
};
#define ALIAS_COUNT (sizeof(aliases) / sizeof(aliases[0]))

bool lockset_shows(unsigned set, unsigned type, unsigned role)
{
	return (set >> type & 1) ||
	       (set & (role == ROLE_IDLE ? LOCKSET_IDLE : LOCKSET_LOCKS));
}

bool lockset_both_roles(unsigned set)
{
	unsigned types = set & LOCKSET_ALL;

	if ((set & LOCKSET_LOCKS) && (set & LOCKSET_IDLE))
		return true;
	if (set & (LOCKSET_LOCKS | LOCKSET_IDLE))
		return types != 0;
	return (types & LOCKSET_IDLE_TYPES) && (types & ~LOCKSET_IDLE_TYPES);
}

/* The set one name stands for, or 0. */
static unsigned name_set(const char *name)
{
	int t = lock_type_parse(name);

	if (t >= 0)
		return 1u << t;
	for (size_t i = 0; i < ALIAS_COUNT; i++) {
		if (strcmp(name, aliases[i].name) == 0)
			return aliases[i].set;
	}
	return 0;
}

unsigned lockset_parse(const char *list, char *bad, size_t size)
{
	unsigned set = 0;
	const char *p = list;

	do {
		size_t len = strcspn(p, ",");
		char name[32];
		unsigned one;

		snprintf(name, sizeof(name), "%.*s", (int)len, p);
		one = len < sizeof(name) ? name_set(name) : 0;
		if (one == 0) {
			snprintf(bad, size, "%.*s", (int)len, p);
			return 0;
		}
		set |= one;
		p += len;
	} while (*p++ == ',');
	return set;
}

void lockset_name(unsigned set, char *buf, size_t size)
{
	size_t len = 0;

	if (set == LOCKSET_ALL || set == LOCKSET_LOCKS || set == LOCKSET_IDLE) {
		snprintf(buf, size, "%s", set == LOCKSET_ALL ? "all" :
			 set == LOCKSET_LOCKS ? "locks" : "idle");
		return;
	}
	buf[0] = '\0';
	for (unsigned t = 0; t < LOCK_TYPE_COUNT + 2 && len < size; t++) {
		unsigned bit = t < LOCK_TYPE_COUNT ? 1u << t :
			       t == LOCK_TYPE_COUNT ? LOCKSET_LOCKS : LOCKSET_IDLE;
		const char *name = t < LOCK_TYPE_COUNT ?
			lock_type_name((enum lock_type)t) :
			t == LOCK_TYPE_COUNT ? "locks" : "idle";
		int n;

		if (!(set & bit))
			continue;
		n = snprintf(buf + len, size - len, "%s%s", len ? "," : "",
			     name);
		len += n > 0 ? (size_t)n : 0;
	}
}

void lockset_names(char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < LOCK_TYPE_COUNT + ALIAS_COUNT && len < size; i++) {
		const char *name = i < LOCK_TYPE_COUNT ?
			lock_type_name((enum lock_type)i) :
			aliases[i - LOCK_TYPE_COUNT].name;
		int n = snprintf(buf + len, size - len, "%s%s", len ? ", " : "",
				 name);

		len += n > 0 ? (size_t)n : 0;
	}
}
