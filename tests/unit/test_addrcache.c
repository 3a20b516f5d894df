/*
 * The address cache: values come back under their keys (0 and the top
 * bit included) across growth, new values are zeroed, clear and free call
 * drop on each value exactly once.
 */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "../../tui/addrcache.h"

#define KEYS 5000

struct value {
	uint64_t twice;
	char tag[13];		/* an odd size: slots are padded */
};

static int dropped;

static void count_drop(void *v)
{
	(void)v;
	dropped++;
}

/* The i-th key: spread over the address space, 0 first. */
static uint64_t key(int i)
{
	return (uint64_t)i * 0x10001ull + ((uint64_t)(i & 1) << 63);
}

static void test_find_after_growth(void)
{
	struct addrcache *c = addrcache_new(sizeof(struct value));
	int wrong = 0, zeroed = 0;

	for (int i = 0; i < KEYS; i++) {
		struct value *v = addrcache_add(c, key(i));

		zeroed += v->twice == 0 && v->tag[12] == 0;
		v->twice = 2 * key(i);
		v->tag[12] = 'x';
	}
	for (int i = 0; i < KEYS; i++) {
		struct value *v = addrcache_find(c, key(i));

		wrong += !v || v->twice != 2 * key(i) || v->tag[12] != 'x';
	}
	CHECK_U64(zeroed, KEYS);
	CHECK_U64(wrong, 0);
	CHECK_U64(addrcache_count(c), KEYS);
	CHECK(addrcache_find(c, key(KEYS)) == NULL, "a key never added is absent");
	dropped = 0;
	addrcache_clear(c, count_drop);
	CHECK_U64(dropped, KEYS);
	CHECK_U64(addrcache_count(c), 0);
	CHECK(addrcache_find(c, key(1)) == NULL, "cleared keys are gone");
	addrcache_add(c, key(7));
	addrcache_add(c, key(8));
	dropped = 0;
	addrcache_free(c, count_drop);
	CHECK_U64(dropped, 2);
}

int main(void)
{
	test_find_after_growth();
	return check_summary();
}
