/*
 * Roles (role.h, lockset.h, the model's part): built-in and user rules
 * by function name, the heuristic's verdicts on the numbers of a GIL, a
 * thread pool, a parking mutex and an ordinary lock; a role change moves
 * a row's waits between the header's totals without changing their sum,
 * and the view sorts and filters by role.
 */
#include "../../tui/lockset.h"
#include "../../tui/role.h"
#include "model_fixture.h"

/* Check what decides a name's role, "none" when nothing does. */
static void check_name(const struct role_rules *r, const char *name,
		       const char *want)
{
	enum role role;
	enum role_from from;
	char got[64] = "none";

	if (role_by_name(r, name, &role, &from))
		snprintf(got, sizeof(got), "%s/%s", role_name(role),
			 role_from_name(from));
	CHECK(strcmp(got, want) == 0, "%s: expected %s, got %s", name, want,
	      got);
}

static void test_rules(void)
{
	struct role_rules *r = role_rules_new();

	check_name(NULL, "take_gil", "lock/rule");
	check_name(NULL, "take_gil.constprop.0", "lock/rule");
	check_name(NULL, "IOThreadMain", "idle/rule");
	check_name(NULL, "thread_pool_get_task", "idle/rule");
	check_name(NULL, "my_lock", "none");
	role_rules_add(r, "my_*", ROLE_IDLE);
	role_rules_add(r, "take_gil", ROLE_IDLE);
	role_rules_add(r, "my_lock", ROLE_LOCK);
	check_name(r, "my_lock", "lock/user");
	check_name(r, "my_wait", "idle/user");
	check_name(r, "take_gil", "idle/user");
	check_name(r, "Pool::get_task(int)", "idle/rule");
	role_rules_free(r);
}

/* The heuristic's verdict: "lock", "idle" or "none". */
static const char *guess(unsigned type, uint64_t contended, uint64_t timeouts,
			 uint64_t wait_ns, uint32_t threads, double elapsed_s)
{
	struct role_evidence e = { .type = type, .threads = threads,
				   .elapsed_s = elapsed_s,
				   .c = { .contended = contended,
					  .timeouts = timeouts,
					  .wait_ns = wait_ns } };
	enum role role;

	return role_guess(&e, &role) ? role_name(role) : "none";
}

/* The numbers are wl_roles' after 3 s (README, "Roles"). */
static void test_heuristic(void)
{
	CHECK_STR(guess(LOCK_CONDVAR, 595, 1423, 9187968649ull, 4, 3.0), "lock");
	CHECK_STR(guess(LOCK_CONDVAR, 62, 0, 6112026186ull, 2, 3.0), "none");
	CHECK_STR(guess(LOCK_CONDVAR, 0, 5, 1500000000ull, 1, 3.0), "none");
	CHECK_STR(guess(LOCK_CONDVAR, 10, 40, 40 * 300000000ull, 4, 3.0), "none");
	CHECK_STR(guess(LOCK_MUTEX, 20, 0, 6089474902ull, 2, 3.4), "idle");
	CHECK_STR(guess(LOCK_MUTEX, 20, 0, 3000000000ull, 2, 3.4), "none");
	CHECK_STR(guess(LOCK_MUTEX, 500, 0, 6000000000ull, 2, 3.4), "none");
	CHECK_STR(guess(LOCK_SPIN, 20, 0, 6089474902ull, 2, 3.4), "none");
}

/* Threads are counted only for rows whose other numbers could pass. */
static void test_possible(void)
{
	struct role_evidence gil = { .type = LOCK_CONDVAR,
				     .c = { .contended = 595, .timeouts = 1423,
					    .wait_ns = 9187968649ull } };
	struct role_evidence pool = { .type = LOCK_CONDVAR,
				      .c = { .contended = 62,
					     .wait_ns = 6112026186ull } };
	struct role_evidence park = { .type = LOCK_MUTEX,
				      .c = { .contended = 20,
					     .wait_ns = 6089474902ull } };
	struct role_evidence busy = { .type = LOCK_MUTEX,
				      .c = { .contended = 5000,
					     .wait_ns = 6000000000ull } };

	CHECK(role_guess_possible(&gil) && role_guess_possible(&park),
	      "the token's and the parking's numbers may pass");
	CHECK(!role_guess_possible(&pool) && !role_guess_possible(&busy),
	      "the pool's and a busy mutex's numbers cannot");
}

/* "locks" and "idle" are roles; type names stay types. */
static void test_lockset(void)
{
	char bad[32], name[64];
	unsigned locks = lockset_parse("locks", bad, sizeof(bad));
	unsigned mixed = lockset_parse("mutex,idle", bad, sizeof(bad));

	CHECK(lockset_shows(locks, LOCK_CONDVAR, ROLE_LOCK) &&
	      !lockset_shows(locks, LOCK_MUTEX, ROLE_IDLE),
	      "locks: a condvar lock shown, an idle mutex hidden");
	CHECK(lockset_shows(mixed, LOCK_MUTEX, ROLE_LOCK) &&
	      lockset_shows(mixed, LOCK_CONDVAR, ROLE_IDLE) &&
	      !lockset_shows(mixed, LOCK_CONDVAR, ROLE_LOCK),
	      "mutex,idle: every mutex and every idle row");
	lockset_name(mixed, name, sizeof(name));
	CHECK_STR(name, "mutex,idle");
	CHECK(!lockset_both_roles(locks) && lockset_both_roles(LOCKSET_ALL) &&
	      lockset_both_roles(mixed), "which sets hold both roles");
}

/* A role change moves waits between the totals; their sum stays. */
static void test_model_roles(void)
{
	struct model *m = model_new();
	struct model_query q = query(COALESCE_NONE, false);
	struct model_stats before, after;
	struct view_row *rows;
	size_t n;

	def(m, 0, LOCK_CONDVAR, 0x100, 0xa);
	def(m, 1, LOCK_MUTEX, 0x200, 0xb);
	tick(m, 1000000000);
	add(m, 0, 10, 10, 9000, 900);
	add(m, 1, 10, 5, 1000, 300);
	tick(m, 2000000000);
	model_stats(m, &before);
	CHECK_U64(before.cond_wait_ns, 9000);
	n = model_view(m, &q, &rows);
	CHECK(n == 2 && rows[0].site == 0x200 && rows[0].role == ROLE_LOCK &&
	      rows[1].role == ROLE_IDLE, "the condvar, idle by type, sorts last");
	free(rows);

	model_set_role(m, 0, ROLE_LOCK, ROLE_FROM_HEURISTIC, 1);
	model_set_role(m, 1, ROLE_IDLE, ROLE_FROM_USER, 1);
	model_stats(m, &after);
	CHECK_U64(after.lock_wait_ns, 9000);
	CHECK_U64(after.cond_wait_ns, 1000);
	CHECK_U64(after.lock_wait_ns + after.cond_wait_ns,
		  before.lock_wait_ns + before.cond_wait_ns);
	CHECK_DBL(after.lock_wait_per_s + after.cond_wait_per_s,
		  before.lock_wait_per_s + before.cond_wait_per_s);
	CHECK_DBL(after.cond_wait_per_s, 1000);
	n = model_view(m, &q, &rows);
	CHECK(n == 2 && rows[0].site == 0x100 &&
	      rows[0].role_from == ROLE_FROM_HEURISTIC,
	      "the condvar turned lock sorts first");
	free(rows);
	q.types = LOCKSET_LOCKS;
	n = model_view(m, &q, &rows);
	CHECK(n == 1 && rows[0].site == 0x100, "locks: only the condvar's row");
	free(rows);
	add(m, 0, 1, 1, 500, 500);
	add(m, 1, 1, 1, 70, 70);
	model_stats(m, &after);
	CHECK_U64(after.lock_wait_ns, 9500);
	CHECK_U64(after.cond_wait_ns, 1070);
	model_free(m);
}

int main(void)
{
	test_rules();
	test_heuristic();
	test_possible();
	test_lockset();
	test_model_roles();
	return fixture_summary();
}
