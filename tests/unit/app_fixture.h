/* The front end's state around an empty model, as main() makes it. */
#ifndef QSPTOP_TEST_APP_FIXTURE_H
#define QSPTOP_TEST_APP_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "../../tui/app.h"

/* a as for `qsptop -- COMMAND` with pid 4242, refreshing every second. */
static inline void app_fixture(struct app *a, const char *command)
{
	memset(a, 0, sizeof *a);
	a->model = model_new();
	a->symbols = symbols_new();
	a->client.fd = -1;
	a->client.have_hello = true;
	snprintf(a->client.hello.command, sizeof a->client.hello.command, "%s",
		 command);
	a->attach.pid = 4242;
	a->attach.mode = "launched";
	a->opt.delay_s = 1;
}

#endif
