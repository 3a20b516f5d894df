/*
 * The holders on the live screen (issue 24), on `wl_blame live` under
 * tmux: holders are not tracked until c is first pressed (no "holders
 * on", no holders' columns, the program's unlock GOT slot with libc); c
 * turns them on (the slot then points at the collector) and flips the table to the culprit view, which the header names,
 * sorted by CAUSED/s with the holders' columns shown and the holder's
 * row first; its details list the waiter sites it made wait (blocking);
 * c again brings the victims back, whose details list the holder sites
 * their waits were spent behind (blocked by).
 */
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>

#include "../unit/check.h"
#include "tmux.h"

/* The load address of pid's executable (its first mapping), or 0. */
static uint64_t exe_base(pid_t pid, const char *exe)
{
	char path[64], line[PATH_MAX + 128];
	unsigned long lo = 0, off = 1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *name = strchr(line, '/');

		if (name && strncmp(name, exe, strlen(exe)) == 0 &&
		    sscanf(line, "%lx-%*x %*s %lx", &lo, &off) == 2)
			break;
	}
	if (f)
		fclose(f);
	return off == 0 ? lo : 0;
}

/* Whether addr is in a mapping of libqsptop.so in pid. */
static bool in_collector(pid_t pid, uint64_t addr)
{
	char path[64], line[PATH_MAX + 128];
	unsigned long lo, hi;
	bool in = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	while (f && !in && fgets(line, sizeof(line), f))
		in = strstr(line, "/libqsptop.so") &&
		     sscanf(line, "%lx-%lx", &lo, &hi) == 2 &&
		     addr >= lo && addr < hi;
	if (f)
		fclose(f);
	return in;
}

/* The GOT slot offsets of name in an ELF file's relocations; how many. */
static int slots_of(const char *file, const char *name, uint64_t *out, int max)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC), n = 0;
	Elf *e;

	elf_version(EV_CURRENT);
	e = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	for (Elf_Scn *scn = NULL; e && (scn = elf_nextscn(e, scn)) != NULL; ) {
		GElf_Shdr sh, symsh;
		Elf_Data *d, *syms;
		Elf_Scn *symscn;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA ||
		    !(symscn = elf_getscn(e, sh.sh_link)) ||
		    !gelf_getshdr(symscn, &symsh) ||
		    !(d = elf_getdata(scn, NULL)) ||
		    !(syms = elf_getdata(symscn, NULL)))
			continue;
		for (size_t i = 0; n < max && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Rela r;
			GElf_Sym sym;
			const char *s;

			if (gelf_getrela(d, (int)i, &r) &&
			    gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &sym) &&
			    (s = elf_strptr(e, symsh.sh_link, sym.st_name)) &&
			    strcmp(s, name) == 0)
				out[n++] = r.r_offset;
		}
	}
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	return n;
}

/*
 * Whether pid's executable (the file exe) has a pthread_mutex_unlock
 * GOT slot, every one pointing into the collector; -1 if none is found.
 */
static int unlock_hooked(pid_t pid, const char *exe)
{
	uint64_t slots[8], base = exe_base(pid, exe), v;
	int n = slots_of(exe, "pthread_mutex_unlock", slots, 8), fd, hooked = 0;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	for (int i = 0; fd >= 0 && base && i < n; i++)
		hooked += pread(fd, &v, sizeof(v), (off_t)(base + slots[i])) ==
			  sizeof(v) && in_collector(pid, v);
	if (fd >= 0)
		close(fd);
	return n == 0 || base == 0 || fd < 0 ? -1 : hooked == n;
}

static const char *unlock_exe;	/* for unlock_hooked_pred() */

static bool unlock_hooked_pred(const void *pid)
{
	return unlock_hooked(*(const pid_t *)pid, unlock_exe) == 1;
}

/* The launched program's PID, from the header's "pid N". */
static pid_t header_pid(void)
{
	const char *p;

	capture();
	p = screen ? strstr(screen, "pid ") : NULL;
	return p ? (pid_t)atoi(p + 4) : 0;
}

/* The first row of the table (the line after CALL SITE's) holds text. */
static bool first_row_has(const void *text)
{
	char line[4096];
	int titles = line_with("CALL SITE", 0);

	if (titles < 0)
		return false;
	screen_line(titles + 1, line, sizeof(line));
	return strstr(line, text) != NULL;
}

#define FIRST_ROW(context, text)                                           \
	CHECK_SCREEN(wait_until(first_row_has, text, TIMEOUT_MS),          \
		     "%s: expected the first row to be %s's", context, text)

static void test_culprits(void)
{
	char wl[PATH_MAX], program[PATH_MAX + 16];
	pid_t pid;

	join(wl, build, "/tests/wl_blame");
	quoted(program, sizeof(program), wl);
	strcat(program, " live");
	if (!start_sized("culprits", WIDTH, HEIGHT, "", "-d 0.3", program))
		return;
	SEE("the victims", "split_wait");
	FIRST_ROW("victims", "split_wait");
	CHECK_SCREEN(line_with("holders on", 0) < 0 &&
		     line_with("CAUSED/s", 0) < 0,
		     "before c: expected no \"holders on\" and no CAUSED/s");
	pid = header_pid();
	unlock_exe = wl;
	CHECK(unlock_hooked(pid, wl) == 0, "before c: expected wl_blame's "
	      "pthread_mutex_unlock slot to stay with libc, got %d (-1: not "
	      "found)", unlock_hooked(pid, wl));
	keys("c", NULL);
	SEE("c: holders tracked from now", "holders on");
	CHECK(wait_until(unlock_hooked_pred, &pid, TIMEOUT_MS),
	      "after c: expected wl_blame's pthread_mutex_unlock slot to point "
	      "at the collector, got %d", unlock_hooked(pid, wl));
	SEE("c: the header", "culprits view, sort caused");
	SEE("c: the holders' columns", "CAUSED/s");
	SEE("c: the holders' columns", "HOLD");
	FIRST_ROW("culprits", "hold_long");
	keys("Enter", NULL);
	SEE("hold_long's details", "blocking");
	SEE("hold_long's details: the waiter", "WAITER SITE");
	CHECK_SCREEN(line_with("split_wait", line_with("WAITER SITE", 0)) > 0,
		     "hold_long's details: split_wait under WAITER SITE");
	SEE("hold_long's details: its holder stacks",
	    "released while others waited");
	CHECK_SCREEN(line_with("hold_long <- split_holder",
			       line_with("RELEASES", 0)) > 0,
		     "hold_long's details: its stack hold_long <- split_holder "
		     "under RELEASES");
	keys("Escape", NULL);
	SEE("back to the table", "CALL SITE");
	keys("c", NULL);
	STATUS("c again", "victims");
	FIRST_ROW("victims again", "split_wait");
	keys("Enter", NULL);
	SEE("split_wait's details", "blocked by");
	SEE("split_wait's details: the holders", "HOLDER SITE");
	SEE("split_wait's details: the short holds", "hold_short");
	CHECK_SCREEN(line_with("hold_long", line_with("HOLDER SITE", 0)) > 0 &&
		     line_with("hold_short", line_with("HOLDER SITE", 0)) > 0,
		     "split_wait's details: hold_long and hold_short under "
		     "HOLDER SITE");
	SEE("split_wait's details: hold_long's stack",
	    "released at hold_long <- split_holder");
	keys("Escape", NULL);
	quit_session("culprits");
}

int main(void)
{
	if (!tmux_begin("blame"))
		return check_summary();
	test_culprits();
	return tmux_end("test_blame_tui");
}
