/*
 * The HTTP endpoint's threads: requests from clients in other threads
 * are answered by the thread calling serve_answer(), with bodies it
 * built, each request once and whole; what waits when the endpoint
 * stops gets 503. Under ThreadSanitizer too (build/tsan/test_serve).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../../tui/serve.h"
#include "check.h"

#define CLIENTS 4
#define REQUESTS 25
#define DEADLINE_S 30

static int port;

/* GET path: the status, the body's first bytes in body. */
static int get(const char *path, char *body, size_t size)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = DEADLINE_S };
	char buf[4096], req[300], *end;
	int fd = socket(AF_INET, SOCK_STREAM, 0), status = -1;
	size_t n = 0;
	ssize_t got;

	body[0] = '\0';
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\n\r\n", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    write(fd, req, strlen(req)) == (ssize_t)strlen(req))
		while (n < sizeof(buf) - 1 &&
		       (got = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
			n += (size_t)got;
	close(fd);
	buf[n] = '\0';
	if (sscanf(buf, "HTTP/1.%*d %d", &status) == 1 &&
	    (end = strstr(buf, "\r\n\r\n")) != NULL)
		snprintf(body, size, "%s", end + 4);
	return status;
}

/* What the answering thread has built, and what it was asked. */
static int answered;
static pthread_t answering_thread;
static bool other_thread;

static int answer(void *ctx, const char *path, uint8_t **body, size_t *len,
		  const char **type)
{
	char text[300];

	(void)ctx;
	other_thread |= !pthread_equal(pthread_self(), answering_thread);
	snprintf(text, sizeof(text), "answer %d to %s", ++answered, path);
	*body = (uint8_t *)strdup(text);
	*len = strlen(text);
	*type = "text/plain";
	return strcmp(path, "/missing") == 0 ? 404 : 200;
}

static int ok_replies, bad_replies;
static pthread_mutex_t replies_lock = PTHREAD_MUTEX_INITIALIZER;

static void *client(void *arg)
{
	char body[512];

	for (int i = 0; i < REQUESTS; i++) {
		int status = get("/page", body, sizeof(body));
		bool ok = status == 200 && strncmp(body, "answer ", 7) == 0 &&
			  strstr(body, " to /page");

		pthread_mutex_lock(&replies_lock);
		ok_replies += ok;
		bad_replies += !ok;
		pthread_mutex_unlock(&replies_lock);
	}
	return arg;
}

static bool clients_done(void)
{
	bool done;

	pthread_mutex_lock(&replies_lock);
	done = ok_replies + bad_replies == CLIENTS * REQUESTS;
	pthread_mutex_unlock(&replies_lock);
	return done;
}

/* Clients in threads of their own; every answer built here. */
static void test_answers_from_main_loop(struct serve *s)
{
	pthread_t t[CLIENTS];
	time_t deadline = time(NULL) + DEADLINE_S;

	answering_thread = pthread_self();
	for (int i = 0; i < CLIENTS; i++)
		pthread_create(&t[i], NULL, client, NULL);
	while (!clients_done() && time(NULL) < deadline) {
		serve_answer(s, answer, NULL);
		usleep(1000);
	}
	for (int i = 0; i < CLIENTS; i++)
		pthread_join(t[i], NULL);
	CHECK(ok_replies == CLIENTS * REQUESTS && bad_replies == 0,
	      "expected %d answers of the main loop, got %d (%d bad)",
	      CLIENTS * REQUESTS, ok_replies, bad_replies);
	CHECK(answered == CLIENTS * REQUESTS,
	      "expected each request answered once: %d built", answered);
	CHECK(!other_thread, "expected every answer built by the answering thread");
}

static void *get_missing(void *status)
{
	char body[512];

	*(int *)status = get("/missing", body, sizeof(body));
	return NULL;
}

/* A request still waiting when the endpoint stops gets 503. */
static void *get_waiting(void *status)
{
	char body[512];

	*(int *)status = get("/late", body, sizeof(body));
	return NULL;
}

static void test_status_and_stop(struct serve *s)
{
	int missing = 0, late = 0, before = answered;
	pthread_t t;

	pthread_create(&t, NULL, get_missing, &missing);
	for (time_t end = time(NULL) + DEADLINE_S; answered == before &&
	     time(NULL) < end; usleep(1000))
		serve_answer(s, answer, NULL);
	pthread_join(t, NULL);
	CHECK(missing == 404, "expected the answer's status 404, got %d", missing);
	pthread_create(&t, NULL, get_waiting, &late);
	usleep(200000);		/* time to be queued; 503 either way */
	serve_stop(s);
	pthread_join(t, NULL);
	CHECK(late == 503 || late == -1,
	      "expected 503 (or a refused connection) once stopped, got %d", late);
}

int main(void)
{
	char err[512];
	struct serve *s = serve_start("127.0.0.1:0", err, sizeof(err));
	const char *colon;

	CHECK(s != NULL, "serve_start: %s", err);
	if (!s)
		return check_summary();
	colon = strrchr(serve_address(s), ':');
	port = colon ? atoi(colon + 1) : 0;
	CHECK(strncmp(serve_address(s), "127.0.0.1:", 10) == 0 && port > 0,
	      "expected 127.0.0.1:PORT, got %s", serve_address(s));
	CHECK(serve_start("127.0.0.1:notaport", err, sizeof(err)) == NULL &&
	      strstr(err, "expected [HOST:]PORT"),
	      "expected a bad address refused, got \"%s\"", err);
	CHECK(serve_start("99999", err, sizeof(err)) == NULL &&
	      strstr(err, "expected [HOST:]PORT"),
	      "expected port 99999 refused, got \"%s\"", err);
	test_answers_from_main_loop(s);
	test_status_and_stop(s);
	return check_summary();
}
