/*
 * A thread parked in pause() inside a signal handler that runs on a small
 * alternate stack malloc'ed from the heap, like a crash handler waiting
 * for a dump server, for the injection tests. The heap block just below
 * the alternate stack is filled with a pattern. On SIGTERM the handler
 * returns, the pattern is checked: "canary ok" (exit 0) or "canary
 * changed N" (exit 1).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ALT_SIZE (16 * 1024)
#define CANARY_SIZE (64 * 1024)
#define SAFETY_EXIT_S 60

static unsigned char *canary, *alt;
static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

/* Wait on the alternate stack until SIGTERM. */
static void on_usr1(int sig)
{
	(void)sig;
	printf("in handler\n");
	fflush(stdout);
	while (!stop)
		pause();
}

static void *waiter(void *arg)
{
	stack_t ss = { .ss_sp = alt, .ss_size = ALT_SIZE };
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_ONSTACK };

	(void)arg;
	if (sigaltstack(&ss, NULL) != 0 || sigaction(SIGUSR1, &sa, NULL) != 0)
		exit(2);
	pthread_kill(pthread_self(), SIGUSR1);
	return NULL;
}

int main(void)
{
	struct sigaction st = { .sa_handler = on_term };
	size_t changed = 0;
	pthread_t th;

	setvbuf(stdout, NULL, _IOLBF, 0);
	canary = malloc(CANARY_SIZE);
	alt = malloc(ALT_SIZE);
	if (canary == NULL || alt == NULL || canary + CANARY_SIZE > alt) {
		printf("heap layout not as expected\n");
		return 2;
	}
	memset(canary, 0xa5, CANARY_SIZE);
	sigaction(SIGTERM, &st, NULL);
	if (pthread_create(&th, NULL, waiter, NULL) != 0)
		return 2;
	for (int i = 0; i < SAFETY_EXIT_S * 10 && !stop; i++)
		usleep(100000);
	stop = 1;
	pthread_kill(th, SIGTERM);
	pthread_join(th, NULL);
	for (size_t i = 0; i < CANARY_SIZE; i++)
		changed += canary[i] != 0xa5;
	printf(changed ? "canary changed %zu\n" : "canary ok\n", changed);
	return changed ? 1 : 0;
}
