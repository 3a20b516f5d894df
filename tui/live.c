/*
 * The interactive screen's loop: wait for the collector or a key, update
 * the state, draw it. It goes on after the target has exited, showing the
 * last data, until the user quits.
 */
#include <errno.h>
#include <poll.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <unistd.h>

#include "live.h"
#include "scrape.h"
#include "roles.h"
#include "term.h"
#include "view.h"
#include "xalloc.h"

#define WAKE_MS 500

/* Note the launched command's end, for the header; whether it just ended. */
static bool reap(struct app *a)
{
	int status;

	if (a->attach.child && !a->child_reaped &&
	    waitpid(a->attach.child, &status, WNOHANG) == a->attach.child) {
		a->child_reaped = true;
		a->child_status = status;
		return true;
	}
	return false;
}

/*
 * Wait for the collector or the keyboard, at most WAKE_MS; not at all
 * while what was read holds another interval. Whether nothing came.
 */
static bool wait_input(const struct app *a)
{
	size_t max = app_processes(a) + 1;
	struct pollfd *pfd = xreallocarray(NULL, max, sizeof(*pfd));
	size_t k = app_pollfds(a, pfd, max - 1);
	int n;

	pfd[k++] = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
	n = poll(pfd, k, app_buffered(a) ? 0 : WAKE_MS);
	free(pfd);
	return n == 0 || (n < 0 && errno == EINTR);
}

/* Act on the keys typed; whether there were any. */
static bool read_keys(struct ui *ui, struct screen *s)
{
	bool any = false;
	int key, w, h;

	while ((key = term_key()) != KEY_NONE) {
		if (key == K_RESIZE) {
			term_size(&w, &h);
			screen_resize(s, w, h);
		}
		ui_key(ui, key);
		any = true;
	}
	return any;
}

/* Say once, on the status line, that debuginfod is no longer asked. */
static void tell_fetch_failure(struct ui *ui, bool *told)
{
	const char *why = symbols_fetch_failure(ui->app->symbols);

	if (why && !*told)
		ui_message(ui, true, "%s", why);
	*told |= why != NULL;
}

/* A malformed roles file, on the status line. */
static void tell_roles_error(struct ui *ui)
{
	const char *e = roles_take_error(ui->app);

	if (e)
		ui_message(ui, true, "%s", e);
}

/* What a refresh does with a collector: its children, wrappers, names, roles. */
static void watch_collector(struct app *a, int *rc, bool ended)
{
	app_find_children(a, true);
	if (*rc < 0 && !ended && app_follow_exec(a))
		*rc = 0;
	app_sync_wrappers(a);
	app_probe_futex(a);
	app_watch_stuck(a);
	app_name_threads(a);
	roles_update(a);
}

int live_run(struct app *a, const char *theme, volatile sig_atomic_t *stop)
{
	struct screen *s;
	struct ui ui;
	bool ended = false, dirty = true, idle, names, told = false;
	long shown = 0;
	int w, h, rc;

	term_begin();
	ui_init(&ui, a, theme);
	if (!term_has_colors() && !ui.monochrome) {
		ui.monochrome = true;
		theme_monochrome(&ui.theme);
	}
	term_size(&w, &h);
	s = screen_new(w, h);
	ui_refresh(&ui);
	/*
	 * Data arrives in many reads an interval: the screen is drawn when
	 * something changed, and while idle every WAKE_MS (the target's state).
	 */
	while (!ui.quit && !*stop) {
		if (ui.theme_changed) {
			term_apply_theme(&ui.theme);
			ui.theme_changed = false;
		}
		if (dirty) {
			view_draw(s, &ui);
			term_show(s);
		}
		idle = wait_input(a);
		names = symbols_refresh(a->symbols);
		tell_fetch_failure(&ui, &told);
		rc = a->outside[0] ? 0 : app_poll(a, 0);
		if (ui_sample_threads(&ui, false)) {
			names = true;
			rc = a->outside[0] ? 1 : rc;
		}
		if (!a->outside[0])
			watch_collector(a, &rc, ended);
		scrape_serve(a);
		tell_roles_error(&ui);
		dirty = rc == 1 || (rc < 0 && !ended) || names;
		if (dirty)
			ui_refresh(&ui);
		dirty |= idle;
		ended = rc < 0;
		if (rc == 1 && a->opt.iterations && ++shown >= a->opt.iterations)
			break;
		dirty |= reap(a);
		dirty |= read_keys(&ui, s);
	}
	term_end();
	ui_free(&ui);
	screen_free(s);
	return 0;
}
