/*
 * A workload that loads the collector itself, as qsptop -p's injection
 * would: dlopen at run time, no LD_PRELOAD. Driven line by line on stdin,
 * one reply per command on stdout:
 *
 *   load PATH     dlopen(PATH, RTLD_NOW)                   ok | error TEXT
 *   plugin PATH   dlopen a plugin built from this file     ok | error TEXT
 *   unplug        dlclose it                               ok | error TEXT
 *   work N        4 threads, N rounds of every site        ok TOTAL | bad
 *   view          the GOT slots of pthread_* and sem_* functions, one line each:
 *                 MODULE plt|got NAME@VERSION VALUE LIBRARY, then "end"
 *   bench N       ns per lock+unlock pair, N pairs         ns NUMBER
 *   resolve NAME  write libc's NAME into our slots of NAME, as the lazy
 *                 binding resolver racing the collector would   ok N
 *   own NAME      write our own NAME wrapper into them, as a program
 *                 installing its own hook would                 ok N
 *   quit          exit 0 if every work round was right
 *
 * Built with -DGOT_PLUGIN -shared -fPIC, this file is the plugin instead.
 * Every call site carries a "site:NAME" comment.
 */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef GOT_PLUGIN

static pthread_mutex_t plugin_mutex = PTHREAD_MUTEX_INITIALIZER;
static long plugin_count;

static void __attribute__((noinline)) plugin_site(void)
{
	pthread_mutex_lock(&plugin_mutex); /* site:plugin */
	plugin_count++;
	pthread_mutex_unlock(&plugin_mutex);
}

/* N rounds of the plugin's site; returns the plugin's running total. */
long plugin_work(long n)
{
	for (long i = 0; i < n; i++)
		plugin_site();
	return plugin_count;
}

#else

#define THREADS 4

/*
 * An old-ABI condvar reference, called never: its PLT slot keeps the lazy
 * stub, which only the symbol version tells apart from a slot to patch.
 */
extern int old_cond_timedwait(pthread_cond_t *, pthread_mutex_t *,
			      const struct timespec *);
__asm__(".symver old_cond_timedwait,pthread_cond_timedwait@GLIBC_2.2.5");

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static sem_t sem;	/* holds THREADS: never waited for */
static long shared, shared_rw;	/* under mutex, under rwlock */
static long (*plugin_work)(long);
static void *plugin_handle;
static int all_ok = 1;

static void __attribute__((noinline)) site_mutex(void)
{
	pthread_mutex_lock(&mutex); /* site:mutex */
	shared++;
	pthread_mutex_unlock(&mutex);
}

/* The address read from the GOT on every call: a GLOB_DAT slot. */
static void __attribute__((noinline)) site_fnptr(void)
{
	int (*volatile lock)(pthread_mutex_t *) = pthread_mutex_lock;

	lock(&mutex); /* site:fnptr */
	shared++;
	pthread_mutex_unlock(&mutex);
}

static void __attribute__((noinline)) site_trylock(pthread_mutex_t *own)
{
	if (pthread_mutex_trylock(own) == 0) /* site:trylock */
		pthread_mutex_unlock(own);
}

static void __attribute__((noinline)) site_wrlock(void)
{
	pthread_rwlock_wrlock(&rwlock); /* site:wrlock */
	shared_rw++;
	pthread_rwlock_unlock(&rwlock);
}

static void __attribute__((noinline)) site_rdlock(void)
{
	pthread_rwlock_rdlock(&rwlock); /* site:rdlock */
	pthread_rwlock_unlock(&rwlock);
}

/* A wait whose deadline has passed: ETIMEDOUT at once, every time. */
static void __attribute__((noinline)) site_condwait(pthread_mutex_t *own)
{
	struct timespec past = { 0, 0 };

	pthread_mutex_lock(own);
	pthread_cond_timedwait(&cond, own, &past); /* site:condwait */
	pthread_mutex_unlock(own);
}

static void __attribute__((noinline)) site_semwait(void)
{
	if (sem_wait(&sem) == 0) /* site:semwait */
		sem_post(&sem);
	else
		all_ok = 0;
}

static void *worker(void *arg)
{
	long n = (long)arg;
	pthread_mutex_t own = PTHREAD_MUTEX_INITIALIZER;

	for (long i = 0; i < n; i++) {
		site_mutex();
		site_fnptr();
		site_trylock(&own);
		site_wrlock();
		site_rdlock();
		site_semwait();
		if (i % 10 == 0)
			site_condwait(&own);
		if (plugin_work)
			plugin_work(1);
	}
	return NULL;
}

static void work(long n)
{
	pthread_t t[THREADS];
	long before = shared, before_rw = shared_rw;
	long plugin_before = plugin_work ? plugin_work(0) : 0;
	long plugin_after;

	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)n);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	plugin_after = plugin_work ? plugin_work(0) : 0;
	if (shared - before == 2 * THREADS * n &&
	    shared_rw - before_rw == THREADS * n &&
	    (plugin_work == NULL || plugin_after - plugin_before == THREADS * n)) {
		printf("ok %ld\n", shared + shared_rw);
	} else {
		all_ok = 0;
		printf("bad %ld %ld\n", shared - before, shared_rw - before_rw);
	}
}

/* What a GOT slot points into: a library's file name, or "?". */
static const char *owner(void *p)
{
	Dl_info info;
	const char *slash;

	if (!dladdr(p, &info) || info.dli_fname == NULL)
		return "?";
	slash = strrchr(info.dli_fname, '/');
	return slash ? slash + 1 : info.dli_fname;
}

/* The version name of symbol idx's reference, or "". */
static const char *version(const ElfW(Half) *versym, const ElfW(Verneed) *vn,
			   const char *str, size_t idx)
{
	unsigned want = versym ? versym[idx] & 0x7fff : 0;

	for (; vn && want >= 2; vn = vn->vn_next ? (const void *)((const char *)vn + vn->vn_next) : NULL) {
		const ElfW(Vernaux) *a = (const void *)((const char *)vn + vn->vn_aux);

		for (unsigned j = 0; j < vn->vn_cnt; j++) {
			if (a->vna_other == want)
				return str + a->vna_name;
			a = (const void *)((const char *)a + a->vna_next);
		}
	}
	return "";
}

/* glibc relocates most dynamic entries in place, but not DT_VERNEED. */
static const void *dyn(ElfW(Addr) base, ElfW(Addr) v)
{
	return (const void *)(v < base ? v + base : v);
}

struct view_arg {
	void *plugin_base;
	const char *poke_name;	/* write poke_value into this name's slots */
	void *poke_value;
	int poked;
};

/* Write a slot through /proc/self/mem: page protections stay as they are. */
static int poke(void **slot, void *value)
{
	int fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : pwrite(fd, &value, sizeof(value), (off_t)(uintptr_t)slot);

	if (fd >= 0)
		close(fd);
	return n == sizeof(value) ? 0 : -1;
}

static void print_relocs(struct view_arg *va, const char *module,
			 ElfW(Addr) base, const ElfW(Rela) *r, size_t n,
			 const ElfW(Sym) *sym, const char *str,
			 const ElfW(Half) *versym, const ElfW(Verneed) *vn)
{
	for (size_t i = 0; i < n; i++) {
		unsigned type = ELF64_R_TYPE(r[i].r_info);
		size_t idx = ELF64_R_SYM(r[i].r_info);
		const char *name = str + sym[idx].st_name;
		void *value;

		if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
		    (strncmp(name, "pthread_", 8) != 0 &&
		     strncmp(name, "sem_", 4) != 0))
			continue;
		if (va->poke_name) {
			if (strcmp(name, va->poke_name) == 0 &&
			    poke((void **)(base + r[i].r_offset), va->poke_value) == 0)
				va->poked++;
			continue;
		}
		value = *(void **)(base + r[i].r_offset);
		printf("%s %s %s@%s %p %s\n", module,
		       type == R_X86_64_JUMP_SLOT ? "plt" : "got", name,
		       version(versym, vn, str, idx), value, owner(value));
	}
}

static int view_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct view_arg *va = arg;
	const char *module = info->dlpi_name[0] == '\0' ? "main"
		: va->poke_name == NULL && (void *)info->dlpi_addr == va->plugin_base
		? "plugin" : NULL;
	const ElfW(Rela) *jmprel = NULL, *rela = NULL;
	size_t pltrelsz = 0, relasz = 0;
	const ElfW(Sym) *sym = NULL;
	const char *str = NULL;
	const ElfW(Half) *versym = NULL;
	const ElfW(Verneed) *vn = NULL;
	ElfW(Addr) b = info->dlpi_addr;

	(void)size;
	for (int i = 0; module && i < info->dlpi_phnum; i++) {
		const ElfW(Dyn) *d = (const void *)(b + info->dlpi_phdr[i].p_vaddr);

		if (info->dlpi_phdr[i].p_type != PT_DYNAMIC)
			continue;
		for (; d->d_tag != DT_NULL; d++) {
			switch (d->d_tag) {
			case DT_JMPREL: jmprel = dyn(b, d->d_un.d_ptr); break;
			case DT_PLTRELSZ: pltrelsz = d->d_un.d_val; break;
			case DT_RELA: rela = dyn(b, d->d_un.d_ptr); break;
			case DT_RELASZ: relasz = d->d_un.d_val; break;
			case DT_SYMTAB: sym = dyn(b, d->d_un.d_ptr); break;
			case DT_STRTAB: str = dyn(b, d->d_un.d_ptr); break;
			case DT_VERSYM: versym = dyn(b, d->d_un.d_ptr); break;
			case DT_VERNEED: vn = dyn(b, d->d_un.d_ptr); break;
			}
		}
		print_relocs(va, module, b, jmprel, pltrelsz / sizeof(*jmprel),
			     sym, str, versym, vn);
		print_relocs(va, module, b, rela, relasz / sizeof(*rela), sym,
			     str, versym, vn);
	}
	return 0;
}

static void view(void)
{
	struct view_arg va = { NULL };
	Dl_info info;

	if (plugin_work && dladdr((void *)plugin_work, &info))
		va.plugin_base = info.dli_fbase;
	dl_iterate_phdr(view_one, &va);
	printf("end\n");
}

static int (*libc_rdlock)(pthread_rwlock_t *);

/* The program's own hook, installed over the collector's by "own". */
static int my_rdlock(pthread_rwlock_t *l)
{
	return libc_rdlock(l);
}

/* Overwrite the main program's slots of name with value. */
static void overwrite(const char *name, void *value)
{
	struct view_arg va = { .poke_name = name, .poke_value = value };

	if (value == NULL) {
		printf("error no %s\n", name);
		return;
	}
	dl_iterate_phdr(view_one, &va);
	printf("ok %d\n", va.poked);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void __attribute__((noinline)) bench_pair(void)
{
	pthread_mutex_lock(&mutex); /* site:bench */
	pthread_mutex_unlock(&mutex);
}

static void bench(long n)
{
	double t0 = now_ns();

	for (long i = 0; i < n; i++)
		bench_pair();
	printf("ns %.2f\n", (now_ns() - t0) / (double)n);
}

static void load(const char *path, int is_plugin)
{
	void *h = dlopen(path, RTLD_NOW);

	if (h == NULL) {
		printf("error %s\n", dlerror());
		return;
	}
	if (is_plugin) {
		plugin_handle = h;
		plugin_work = (long (*)(long))dlsym(h, "plugin_work");
	}
	printf(is_plugin && plugin_work == NULL ? "error no plugin_work\n" : "ok\n");
}

static void unplug(void)
{
	plugin_work = NULL;
	if (plugin_handle == NULL || dlclose(plugin_handle) != 0) {
		printf("error %s\n", plugin_handle ? dlerror() : "no plugin");
		return;
	}
	plugin_handle = NULL;
	printf("ok\n");
}

/* Keeps the process multi-threaded from the start, as servers are. */
static void *idle(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	char line[4096];
	pthread_t t;

	setvbuf(stdout, NULL, _IOLBF, 0);
	sem_init(&sem, 0, THREADS);
	if (argc > 1 && strcmp(argv[1], "old-abi") == 0)
		return old_cond_timedwait(&cond, &mutex, NULL);
	libc_rdlock = (int (*)(pthread_rwlock_t *))dlsym(RTLD_DEFAULT,
							"pthread_rwlock_rdlock");
	pthread_create(&t, NULL, idle, NULL);
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "load ", 5) == 0)
			load(line + 5, 0);
		else if (strncmp(line, "plugin ", 7) == 0)
			load(line + 7, 1);
		else if (strcmp(line, "unplug") == 0)
			unplug();
		else if (strncmp(line, "work ", 5) == 0)
			work(atol(line + 5));
		else if (strcmp(line, "view") == 0)
			view();
		else if (strncmp(line, "bench ", 6) == 0)
			bench(atol(line + 6));
		else if (strncmp(line, "resolve ", 8) == 0)
			overwrite(line + 8, dlsym(RTLD_DEFAULT, line + 8));
		else if (strcmp(line, "own pthread_rwlock_rdlock") == 0)
			overwrite(line + 4, (void *)my_rdlock);
		else if (strcmp(line, "quit") == 0)
			break;
		else
			printf("error unknown command\n");
	}
	return all_ok ? 0 : 1;
}

#endif
