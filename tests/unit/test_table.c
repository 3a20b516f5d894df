/*
 * The per-thread tables and the collector's scan, without a target: keys
 * found again, tables that grow and keep their counts, retired copies
 * freed, memory-cap folding and dropping, exited threads seen by the
 * kernel's robust-mutex marking, their tables folded into the totals and
 * recycled.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../collector/arena.h"
#include "../../collector/hooks.h"
#include "../../collector/modules.h"
#include "../../collector/rows.h"
#include "../../collector/table.h"
#include "check.h"

/* What table.c needs from hooks.c: libc's trylock. */
struct real_functions real;

static struct thread_table *claim_here(void)
{
	struct thread_table *t = table_claim(real.libc_mutex_trylock);

	tls_self.table = t;
	return t;
}

/* The slot of (site, object) in t, as a hook would find it. */
static struct obj_slot *slot(struct thread_table *t, uint64_t site,
			     uint64_t object)
{
	uint64_t key = KEY(site, LOCK_MUTEX);

	return table_slot(t, &key, object, 0);
}

static void test_claim(void)
{
	struct thread_table *t = claim_here();

	CHECK(t != NULL, "a thread claims a table");
	CHECK_U64(t->tid, (uint64_t)gettid());
	CHECK_U64(t->state, TABLE_LIVE);
	CHECK(!table_thread_gone(t), "a live thread's table is not gone");
	CHECK(table_first() == t, "the table is on the list of all tables");
}

static void test_keys_found_again(void)
{
	struct thread_table *t = tls_self.table;
	struct obj_slot *a = slot(t, 0x401000, 0x1000), *b = slot(t, 0x401000, 0x2000);
	struct obj_slot *c = slot(t, 0x402000, 0x1000);

	CHECK(a && b && c && a != b && a != c && b != c, "three keys, three slots");
	CHECK(slot(t, 0x401000, 0x1000) == a, "a key finds its slot again");
	CHECK(table_slot_of(t, KEY(0x401000, LOCK_SPIN), 0x1000) != a,
	      "the same site and object with another type is another key");
	table_add(&a->acquisitions, 5);
	CHECK_U64(slot(t, 0x401000, 0x1000)->acquisitions, 5);
	CHECK(table_entry(t, KEY(0x401000, LOCK_MUTEX), 0x1000) != NULL,
	      "a key gets an entry at its first wait");
	CHECK(table_entry(t, KEY(0x401000, LOCK_MUTEX), 0x1000) ==
	      table_entry(t, KEY(0x401000, LOCK_MUTEX), 0x1000),
	      "and keeps it");
}

/* Growth: thousands of objects at one site and sites in one thread. */
static void test_growth_keeps_counts(void)
{
	struct thread_table *t = tls_self.table;
	struct entry *e = table_entry(t, KEY(0x401000, LOCK_MUTEX), 0x1000);
	uint32_t mask_before = t->sites->mask;
	int bad = 0;

	for (uint64_t i = 1; i <= 20000; i++)
		table_add(&slot(t, 0x403000, i * 64)->acquisitions, i);
	for (uint64_t i = 1; i <= 300; i++)
		table_add(&slot(t, 0x500000 + i * 16, 0x9000)->acquisitions, 1);
	for (uint64_t i = 1; i <= 20000; i++)
		bad += slot(t, 0x403000, i * 64)->acquisitions != i;
	CHECK(bad == 0, "20000 objects keep their counts through growth (%d bad)", bad);
	CHECK(t->sites->mask > mask_before, "the site index grew (%u slots)",
	      t->sites->mask + 1);
	CHECK(slot(t, 0x401000, 0x1000)->acquisitions == 5, "an early key survives");
	CHECK(table_entry(t, KEY(0x401000, LOCK_MUTEX), 0x1000) == e,
	      "entries move with their slots");
	table_free_retired();
}

/* Past the cap new objects fold into their site's slot, then drop. */
static void test_cap_folds_then_drops(void)
{
	struct thread_table *t = tls_self.table;
	struct obj_slot *x, *folded = NULL;
	int folds = 0, drops = 0;

	arena_set_cap(arena_used());
	for (uint64_t i = 1; i <= 5000; i++) {
		x = slot(t, 0x403000, (i + 100000) * 64);
		if (x && x->object == OBJECT_FOLDED) {
			folds++;
			folded = folded ? folded : x;
			table_add(&x->acquisitions, 1);
		}
		drops += x == NULL;
	}
	CHECK(folds == 5000, "at the cap every new object folds (%d of 5000, %d dropped)",
	      folds, drops);
	CHECK(slot(t, 0x403000, 64) && slot(t, 0x403000, 64)->object == 64,
	      "known objects keep their own slots");
	x = slot(t, 0x77700000, 0x1000);
	CHECK(x == NULL || x->object == OBJECT_FOLDED,
	      "a new site at the cap folds or drops its objects");
	arena_set_cap(0);
	x = slot(t, 0x403000, 999999 * 64);
	CHECK(x && x->object == 999999 * 64, "with memory again, new objects get slots");
	CHECK(folded == NULL || folded->object == OBJECT_FOLDED, "the folded slot stays");
}

/* The collector's scan sums threads exactly; an exited thread is retired. */
static void *thread_work(void *arg)
{
	struct thread_table *t = table_claim(real.libc_mutex_trylock);
	long n = (long)arg;

	tls_self.table = t;
	for (long i = 0; i < n; i++)
		table_add(&slot(t, 0x600000, 0x7000)->acquisitions, 1);
	return t;
}

static uint64_t row_acq(const struct rows *rs, uint64_t site, uint64_t object)
{
	for (uint32_t r = 0; r < rs->n; r++) {
		if (rs->v[r].site == site && rs->v[r].object == object)
			return rs->v[r].acq_now;
	}
	return 0;
}

static struct rows rs;

static void test_scan_retires_and_recycles(void)
{
	struct thread_table *dead;
	pthread_t th;
	size_t used;

	pthread_create(&th, NULL, thread_work, (void *)1000);
	pthread_join(th, (void **)&dead);
	CHECK(table_thread_gone(dead), "the kernel marks an exited thread's table");
	table_add(&slot(tls_self.table, 0x600000, 0x7000)->acquisitions, 7);
	rows_scan(&rs);
	CHECK_U64(row_acq(&rs, 0x600000, 0x7000), 1007);
	CHECK_U64(dead->state, TABLE_FREE);
	CHECK_U64(rs.threads_live, 1);
	used = arena_used();
	rows_scan(&rs);
	CHECK_U64(row_acq(&rs, 0x600000, 0x7000), 1007);
	pthread_create(&th, NULL, thread_work, (void *)500);
	pthread_join(th, (void **)&dead);
	CHECK(arena_used() <= used, "a new thread reuses a recycled table's memory");
	rows_scan(&rs);
	CHECK_U64(row_acq(&rs, 0x600000, 0x7000), 1507);
	CHECK(rs.v[0].changed_seq == rs.seq || rs.n > 1, "changed rows are marked");
	CHECK_U64(rs.dropped, 0);
}

/* Folded counts reach the row of several objects, and are totalled. */
static void test_scan_folded(void)
{
	rows_scan(&rs);
	CHECK(rs.folded >= 5000, "folded events are counted (%llu)",
	      (unsigned long long)rs.folded);
	CHECK_U64(row_acq(&rs, 0x403000, 0), 5000);
}

/* A walk of the module list that takes its time in its callback. */
static int slow_visit(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	(void)arg;
	usleep(300000);
	return 1;
}

static void *slow_walk(void *arg)
{
	modules_iterate(slow_visit, NULL);
	return arg;
}

/*
 * A fork during one of the collector's walks waits for it: glibc 2.36
 * would leave the walk's loader lock held in the child, whose dlopen then
 * hangs forever.
 */
static void test_fork_waits_for_walk(void)
{
	pthread_t walker;
	pid_t child;
	int status = -1;

	modules_fence_fork();
	pthread_create(&walker, NULL, slow_walk, NULL);
	usleep(100000);
	child = fork();
	if (child == 0) {
		void *h = dlopen("libm.so.6", RTLD_NOW);

		_exit(h ? 0 : 3);
	}
	for (int i = 0; i < 300 && waitpid(child, &status, WNOHANG) == 0; i++)
		usleep(10000);
	if (waitpid(child, &status, WNOHANG) == 0) {
		kill(child, SIGKILL);
		waitpid(child, &status, 0);
		status = -1;
	}
	pthread_join(walker, NULL);
	CHECK(status == 0, "a child forked during a walk can dlopen (status %d)",
	      status);
}

/* An ELF note: header, name padded to 4, descriptor padded to 4. */
static size_t put_note(uint8_t *p, uint32_t namesz, uint32_t descsz,
		       uint32_t type, const char *name, const uint8_t *desc)
{
	size_t n = 12;

	memcpy(p, &namesz, 4);
	memcpy(p + 4, &descsz, 4);
	memcpy(p + 8, &type, 4);
	memcpy(p + n, name, strlen(name) + 1);
	n += (namesz + 3) & ~3u;
	memcpy(p + n, desc, descsz < 64 ? descsz : 0);
	return n + ((descsz + 3) & ~3u);
}

/* Build ids are read from notes, and hostile note sizes read nothing. */
static void test_build_id_notes(void)
{
	static const uint8_t id[20] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
					13, 14, 15, 16, 17, 18, 19, 20 };
	uint8_t buf[256];
	struct proto_module m;
	size_t n;

	memset(&m, 0, sizeof(m));
	n = put_note(buf, 4, 8, 1, "ABC", id);
	n += put_note(buf + n, 4, 20, NT_GNU_BUILD_ID, "GNU", id);
	modules_note_build_id(buf, n, &m);
	CHECK(m.build_id_len == 20 && memcmp(m.build_id, id, 20) == 0,
	      "the build id is found after another note");
	for (size_t cut = 0; cut < n; cut++) {
		uint8_t *exact = malloc(cut ? cut : 1);

		memcpy(exact, buf, cut);
		memset(&m, 0, sizeof(m));
		modules_note_build_id(exact, cut, &m);	/* ASan: no over-read */
		CHECK(m.build_id_len == 0 || cut >= n - 4,
		      "notes cut at %zu bytes give no build id", cut);
		free(exact);
	}
	/* Headers that claim names or descriptors far past the notes. */
	for (int i = 0; i < 2; i++) {
		uint32_t hdr[3] = { i ? 4 : 0xfffffff0u, i ? 0xfffffffcu : 20,
				    NT_GNU_BUILD_ID };

		memset(buf, 0, sizeof(buf));
		memcpy(buf, hdr, sizeof(hdr));
		memcpy(buf + 12, "GNU", 4);
		memset(&m, 0, sizeof(m));
		modules_note_build_id(buf, 64, &m);
		CHECK_U64(m.build_id_len, 0);
	}
}

int main(void)
{
	real.libc_mutex_trylock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT,
								   "pthread_mutex_trylock");
	real.mutex_lock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT,
							     "pthread_mutex_lock");
	real.mutex_clocklock = (int (*)(pthread_mutex_t *, clockid_t,
					const struct timespec *))
		dlsym(RTLD_NEXT, "pthread_mutex_clocklock");
	test_claim();
	test_keys_found_again();
	test_growth_keeps_counts();
	test_cap_folds_then_drops();
	test_scan_retires_and_recycles();
	test_scan_folded();
	test_fork_waits_for_walk();
	test_build_id_notes();
	return check_summary();
}
