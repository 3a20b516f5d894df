/*
 * The endpoint: libmicrohttpd's own thread accepts and parses requests;
 * each GET is suspended and queued, the main loop builds its answer and
 * resumes it. The queue and a stopping flag are all the threads share.
 */
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "serve.h"
#include "xalloc.h"

/* A client idle this long is closed: one that never reads costs nothing after. */
#define IDLE_TIMEOUT_S 10
#define BACKLOG 64

/* A request waiting for the main loop, then its answer. */
struct request {
	struct MHD_Connection *conn;
	char path[256];
	struct request *next;
	bool answered;
	int status;
	uint8_t *body;
	size_t len;
	const char *type;
};

struct serve {
	struct MHD_Daemon *daemon;
	pthread_mutex_t lock;
	struct request *queue;		/* waiting, newest first */
	bool stopping;
	char address[300];
};

/* Queue resp for conn and drop our reference. */
static enum MHD_Result respond(struct MHD_Connection *conn, int status,
			       void *body, size_t len, const char *type)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
		len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result rc;

	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	rc = MHD_queue_response(conn, (unsigned)status, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result respond_text(struct MHD_Connection *conn, int status,
				    const char *text)
{
	return respond(conn, status, xstrdup(text), strlen(text),
		       "text/plain; charset=utf-8");
}

/* Queue req for the main loop and suspend its connection; false when stopping. */
static bool enqueue(struct serve *s, struct request *req)
{
	bool ok;

	pthread_mutex_lock(&s->lock);
	ok = !s->stopping;
	if (ok) {
		req->next = s->queue;
		s->queue = req;
		MHD_suspend_connection(req->conn);
	}
	pthread_mutex_unlock(&s->lock);
	return ok;
}

/* A marker for a POST whose body is being skipped. */
static char skipping_body;

/*
 * POST /debug/pprof/symbol: pprof asks there for the names of addresses
 * a profile left without (Go's symbolz protocol). qsptop put every name
 * it had in the profile: it answers with none, and the profiler keeps
 * the addresses, or symbolizes them by build ID.
 */
static enum MHD_Result no_symbols(struct MHD_Connection *conn,
				  size_t *upload_size, void **con_cls)
{
	if (*con_cls == NULL) {
		*con_cls = &skipping_body;
		return MHD_YES;
	}
	if (*upload_size) {
		*upload_size = 0;
		return MHD_YES;
	}
	*con_cls = NULL;
	return respond_text(conn, MHD_HTTP_OK, "");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct serve *s = cls;
	struct request *req = *con_cls;

	bool answered;

	(void)version;
	(void)upload;
	if (strcmp(method, "POST") == 0 &&
	    strcmp(url, "/debug/pprof/symbol") == 0)
		return no_symbols(conn, upload_size, con_cls);
	pthread_mutex_lock(&s->lock);
	answered = req && req->answered;
	pthread_mutex_unlock(&s->lock);
	if (answered) {
		enum MHD_Result rc = respond(conn, req->status, req->body,
					     req->len, req->type);

		req->body = NULL;
		return rc;
	}
	if (req)
		return MHD_YES;
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return respond_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
				    "only GET\n");
	req = xcalloc(1, sizeof(*req));
	req->conn = conn;
	snprintf(req->path, sizeof(req->path), "%s", url);
	*con_cls = req;
	if (!enqueue(s, req))
		return respond_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				    "qsptop is stopping\n");
	return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn,
			 void **con_cls, enum MHD_RequestTerminationCode why)
{
	struct request *req = *con_cls;

	(void)cls;
	(void)conn;
	(void)why;
	if (req) {
		free(req->body);
		free(req);
		*con_cls = NULL;
	}
}

/* The queue, oldest first, taken from s. */
static struct request *take_queue(struct serve *s, bool stopping)
{
	struct request *req, *old = NULL;

	pthread_mutex_lock(&s->lock);
	req = s->queue;
	s->queue = NULL;
	s->stopping |= stopping;
	pthread_mutex_unlock(&s->lock);
	while (req) {
		struct request *next = req->next;

		req->next = old;
		old = req;
		req = next;
	}
	return old;
}

/* Hand req back to the server thread: it is no longer ours to touch. */
static void resume(struct serve *s, struct request *req)
{
	pthread_mutex_lock(&s->lock);
	req->answered = true;
	pthread_mutex_unlock(&s->lock);
	MHD_resume_connection(req->conn);
}

void serve_answer(struct serve *s, serve_fn fn, void *ctx)
{
	struct request *req = s ? take_queue(s, false) : NULL;

	while (req) {
		struct request *next = req->next;

		req->status = fn(ctx, req->path, &req->body, &req->len,
				 &req->type);
		resume(s, req);
		req = next;
	}
}

/* Split [HOST:]PORT; host "127.0.0.1" when not given; [v6]:PORT too. */
static bool split_address(const char *listen, char *host, size_t hsize,
			  char *port, size_t psize)
{
	const char *colon = strrchr(listen, ':');

	if (!colon) {
		snprintf(host, hsize, "127.0.0.1");
		snprintf(port, psize, "%s", listen);
	} else if (listen[0] == '[' && colon > listen && colon[-1] == ']') {
		snprintf(host, hsize, "%.*s", (int)(colon - listen - 2), listen + 1);
		snprintf(port, psize, "%s", colon + 1);
	} else {
		snprintf(host, hsize, "%.*s", (int)(colon - listen), listen);
		snprintf(port, psize, "%s", colon + 1);
	}
	return *host && *port && strspn(port, "0123456789") == strlen(port) &&
	       strlen(port) <= 5 && atoi(port) <= 65535;
}

/* A socket listening on the first address of host:port that binds; -1 with err. */
static int listen_on(const char *where, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	char host[256], port[16];
	int fd = -1, e = 0, one = 1;

	if (!split_address(where, host, sizeof(host), port, sizeof(port))) {
		snprintf(err, errlen, "--listen: expected [HOST:]PORT, got '%s'",
			 where);
		return -1;
	}
	if ((e = getaddrinfo(host, port, &hints, &ai)) != 0) {
		snprintf(err, errlen, "--listen %s: %s", where, gai_strerror(e));
		return -1;
	}
	for (struct addrinfo *p = ai; p && fd < 0; p = p->ai_next) {
		fd = socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, p->ai_addr, p->ai_addrlen) == 0 &&
		    listen(fd, BACKLOG) == 0)
			break;
		e = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd < 0)
		snprintf(err, errlen, "--listen %s: %s", where, strerror(e));
	return fd;
}

/* "host:port" of the socket fd. */
static void name_address(int fd, char *buf, size_t size)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char host[256], port[16];

	if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0 ||
	    getnameinfo((struct sockaddr *)&ss, len, host, sizeof(host), port,
			sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
		snprintf(buf, size, "?");
		return;
	}
	snprintf(buf, size, strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, port);
}

struct serve *serve_start(const char *listen, char *err, size_t errlen)
{
	int fd = listen_on(listen, err, errlen);
	struct serve *s;

	if (fd < 0)
		return NULL;
	s = xcalloc(1, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	name_address(fd, s->address, sizeof(s->address));
	s->daemon = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
			MHD_ALLOW_SUSPEND_RESUME,
		0, NULL, NULL, on_request, s,
		MHD_OPTION_LISTEN_SOCKET, fd,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
		MHD_OPTION_END);
	if (!s->daemon) {
		snprintf(err, errlen, "--listen %s: cannot start the HTTP server",
			 listen);
		close(fd);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return NULL;
	}
	return s;
}

const char *serve_address(const struct serve *s)
{
	return s->address;
}

void serve_stop(struct serve *s)
{
	struct request *req;

	if (!s)
		return;
	req = take_queue(s, true);
	while (req) {
		struct request *next = req->next;

		req->status = MHD_HTTP_SERVICE_UNAVAILABLE;
		req->body = (uint8_t *)xstrdup("qsptop is stopping\n");
		req->len = strlen((char *)req->body);
		req->type = "text/plain; charset=utf-8";
		resume(s, req);
		req = next;
	}
	MHD_stop_daemon(s->daemon);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
