/* The Prometheus endpoint: see metrics.h. */
#include "agent/metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "lib/metrics_text.h"
#include "os/log.h"
#include "os/loop.h"
#include "os/peeruid.h"
#include "os/safefs.h"
#include "proto/mesh_proto.h"

#define MAX_CONNS	    64
#define PER_USER_CONNS	    4	 /* connections one local user (not root) may hold */
#define PER_REMOTE_CONNS    8	 /* connections one remote address may hold */
#define REQUEST_DEADLINE_MS 3000 /* from connecting (or the last answer) to a whole request */
#define TOKEN_MAX	    256

/* A connection as we follow it (libmicrohttpd's socket context points here). */
struct mconn {
	int used;
	int fd;
	int local;	 /* uid is known: a process of this host */
	uid_t uid;	 /* ... its owner */
	uint32_t ip;	 /* a remote peer's address (host order) */
	uint64_t due_ms; /* a request must be whole by then */
	int shut;	 /* we ended it */
};

struct metrics {
	struct loop *l;
	struct MHD_Daemon *d; /* owned */
	metrics_status_fn fn;
	void *ctx;
	int port;
	int unix_fd; /* owned: the Unix socket we listen on, -1 none */
	char unix_path[108];
	char token[TOKEN_MAX]; /* "" none */
	struct mconn conns[MAX_CONNS];
	uint64_t scrapes, errors, refused, timed_out, unauthorized;
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void end_conn(struct mconn *c, uint64_t *counter)
{
	if (c->shut)
		return;
	c->shut = 1;
	(*counter)++;
	shutdown(c->fd, SHUT_RDWR); /* libmicrohttpd sees it end and closes it */
}

/* A new connection: its owner counted against their share; over it, it is ended at once. */
static void on_conn(void *cls, struct MHD_Connection *c, void **socket_context,
		    enum MHD_ConnectionNotificationCode code)
{
	struct metrics *m = cls;
	const union MHD_ConnectionInfo *ci;
	struct mconn *mc = *socket_context, *slot = NULL;
	int same = 0;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (mc)
			mc->used = 0;
		return;
	}
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	for (int i = 0; i < MAX_CONNS && !slot; i++)
		if (!m->conns[i].used)
			slot = &m->conns[i];
	if (!ci || !slot)
		return; /* libmicrohttpd's own limit (MAX_CONNS) keeps this from happening */
	*slot = (struct mconn){.used = 1, .fd = ci->connect_fd};
	slot->due_ms = mono_ms() + REQUEST_DEADLINE_MS;
	*socket_context = slot;
	if (peeruid_of(slot->fd, &slot->uid) == 0) {
		slot->local = 1;
	} else {
		struct sockaddr_in sa;
		socklen_t sl = sizeof(sa);

		if (getpeername(slot->fd, (struct sockaddr *)&sa, &sl) == 0 &&
		    sa.sin_family == AF_INET)
			slot->ip = ntohl(sa.sin_addr.s_addr);
	}
	for (int i = 0; i < MAX_CONNS; i++) {
		const struct mconn *o = &m->conns[i];

		if (o == slot || !o->used || o->shut)
			continue;
		same +=
		    slot->local ? o->local && o->uid == slot->uid : !o->local && o->ip == slot->ip;
	}
	if (slot->local ? slot->uid != 0 && same >= PER_USER_CONNS : same >= PER_REMOTE_CONNS)
		end_conn(slot, &m->refused);
}

static struct mconn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* Does the request carry the token ("Authorization: Bearer TOKEN")? */
static int authorized(const struct metrics *m, struct MHD_Connection *c)
{
	const char *h;
	size_t n = strlen(m->token);

	if (!*m->token)
		return 1;
	h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (!h || strncmp(h, "Bearer ", 7))
		return 0;
	h += 7;
	return strlen(h) == n && sodium_memcmp(h, m->token, n) == 0;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *msg)
{
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(strlen(msg), (void *)msg, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result r;

	if (!resp)
		return MHD_NO;
	if (code == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Bearer realm=\"ftbpf\"");
	r = MHD_queue_response(c, code, resp);
	MHD_destroy_response(resp);
	return r;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **con_cls)
{
	struct metrics *m = cls;
	struct mconn *mc = conn_of(c);
	struct MHD_Response *resp;
	struct json_object *st;
	enum MHD_Result r;
	char *text = NULL;
	size_t len = 0;

	(void)version, (void)upload, (void)con_cls;
	if (*upload_len) /* a body is not expected: drop it */
		*upload_len = 0;
	if (mc) /* the request is whole: the next one has its own deadline */
		mc->due_ms = mono_ms() + REQUEST_DEADLINE_MS;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n");
	if (strcmp(url, "/metrics"))
		return reply(c, MHD_HTTP_NOT_FOUND, "not found: the metrics are at /metrics\n");
	if (!authorized(m, c)) {
		m->unauthorized++;
		return reply(c, MHD_HTTP_UNAUTHORIZED,
			     "this endpoint needs its token: Authorization: Bearer TOKEN\n");
	}
	st = m->fn(m->ctx);
	if (!st || metrics_text_format(st, &text, &len) < 0) {
		json_object_put(st);
		m->errors++;
		return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
			     "the status could not be formatted\n");
	}
	json_object_put(st);
	m->scrapes++;
	resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/plain; version=0.0.4; charset=utf-8");
	r = MHD_queue_response(c, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return r;
}

/* Connections that did not send a whole request in time are ended (a client that sends a
 * header line every few seconds would otherwise hold its connection for good). */
static void reap(struct metrics *m)
{
	uint64_t now = mono_ms();

	for (int i = 0; i < MAX_CONNS; i++)
		if (m->conns[i].used && !m->conns[i].shut && now > m->conns[i].due_ms)
			end_conn(&m->conns[i], &m->timed_out);
}

static void on_ready(void *ctx, uint32_t arg, uint32_t events)
{
	struct metrics *m = ctx;

	(void)arg, (void)events;
	MHD_run(m->d);
	reap(m);
}

/* The token, from a file only root can change and read. 0 or -1 with err. */
static int load_token(const char *path, char *out, char *err, size_t errlen)
{
	char e[200];

	if (safefs_read_secret(path, out, TOKEN_MAX, e, sizeof(e)) < 0) {
		snprintf(err, errlen, "metrics_token_file: %s", e);
		return -1;
	}
	if (strlen(out) < 16) {
		snprintf(err, errlen,
			 "metrics_token_file %s: needs a token of 16 characters or more", path);
		return -1;
	}
	return 0;
}

/* A listening Unix socket at path (a stale socket there is replaced), mode 0666: who may
 * connect is bounded per user and, with a token, who may read. */
static int unix_listen(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path) || *path != '/') {
		snprintf(err, errlen, "metrics_listen unix:%s: not an absolute path of < %zu bytes",
			 path, sizeof(sa.sun_path));
		return -1;
	}
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "metrics_listen unix:%s: exists and is not a socket",
				 path);
			return -1;
		}
		unlink(path);
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0 ||
	    chmod(path, 0666) < 0) {
		snprintf(err, errlen, "metrics_listen unix:%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

struct metrics *metrics_open(struct loop *l, const struct metrics_opts *o, char *err, size_t errlen)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	const union MHD_DaemonInfo *info;
	struct metrics *m = calloc(1, sizeof(*m));
	struct mesh_addr a;
	int h;

	if (!m) {
		snprintf(err, errlen, "metrics: out of memory");
		return NULL;
	}
	m->l = l;
	m->fn = o->fn;
	m->ctx = o->ctx;
	m->unix_fd = -1;
	if (o->token_file && *o->token_file && load_token(o->token_file, m->token, err, errlen) < 0)
		goto fail;
	if (!strncmp(o->listen, "unix:", 5)) {
		m->unix_fd = unix_listen(o->listen + 5, err, errlen);
		if (m->unix_fd < 0)
			goto fail;
		snprintf(m->unix_path, sizeof(m->unix_path), "%s", o->listen + 5);
		m->d = MHD_start_daemon(
		    MHD_USE_EPOLL, 0, NULL, NULL, answer, m, MHD_OPTION_LISTEN_SOCKET, m->unix_fd,
		    MHD_OPTION_CONNECTION_LIMIT, MAX_CONNS, MHD_OPTION_CONNECTION_TIMEOUT, 10,
		    MHD_OPTION_NOTIFY_CONNECTION, on_conn, m, MHD_OPTION_END);
	} else {
		if (meshaddr_parse(o->listen, &a) < 0) {
			snprintf(err, errlen,
				 "metrics_listen '%s': not an IPv4 ADDR:PORT or unix:/PATH",
				 o->listen);
			goto fail;
		}
		sa.sin_addr.s_addr = htonl(a.ip);
		sa.sin_port = htons(a.port);
		m->d =
		    MHD_start_daemon(MHD_USE_EPOLL, 0, NULL, NULL, answer, m, MHD_OPTION_SOCK_ADDR,
				     (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_LIMIT, MAX_CONNS,
				     MHD_OPTION_CONNECTION_TIMEOUT, 10,
				     MHD_OPTION_NOTIFY_CONNECTION, on_conn, m, MHD_OPTION_END);
	}
	if (!m->d) {
		snprintf(err, errlen, "metrics: cannot listen on %s (%s)", o->listen,
			 strerror(errno));
		goto fail;
	}
	info = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_BIND_PORT);
	m->port = m->unix_fd >= 0 ? 0 : info ? info->port : ntohs(sa.sin_port);
	info = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_EPOLL_FD);
	h = loop_handler(l, on_ready, m, 0);
	if (!info || h < 0 || loop_add(l, info->epoll_fd, EPOLLIN, h, 0) < 0) {
		snprintf(err, errlen, "metrics: cannot watch the server's descriptor");
		goto fail;
	}
	if (m->unix_fd >= 0)
		log_info("metrics at unix:%s (GET /metrics)%s", m->unix_path,
			 *m->token ? ", with a token" : "");
	else
		log_info("metrics at http://%s/metrics%s", o->listen,
			 *m->token ? " (with a token)" : "");
	if (!*m->token)
		log_info("metrics: no metrics_token_file: every user who reaches it sees every "
			 "user's jobs");
	return m;
fail:
	if (m->d)
		MHD_stop_daemon(m->d);
	if (m->unix_fd >= 0) {
		close(m->unix_fd);
		unlink(m->unix_path);
	}
	sodium_memzero(m->token, sizeof(m->token));
	free(m);
	return NULL;
}

void metrics_tick(struct metrics *m)
{
	if (!m)
		return;
	reap(m);
	MHD_run(m->d);
}

int metrics_port(const struct metrics *m)
{
	return m ? m->port : 0;
}

uint64_t metrics_scrapes(const struct metrics *m)
{
	return m ? m->scrapes : 0;
}

void metrics_counters(const struct metrics *m, uint64_t *ret_refused, uint64_t *ret_timed_out,
		      uint64_t *ret_unauthorized)
{
	*ret_refused = m ? m->refused : 0;
	*ret_timed_out = m ? m->timed_out : 0;
	*ret_unauthorized = m ? m->unauthorized : 0;
}

void metrics_close(struct metrics *m)
{
	const union MHD_DaemonInfo *info;

	if (!m)
		return;
	info = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_EPOLL_FD);
	if (info)
		loop_del(m->l, info->epoll_fd);
	MHD_stop_daemon(m->d);
	if (m->unix_fd >= 0) {
		close(m->unix_fd);
		unlink(m->unix_path);
	}
	sodium_memzero(m->token, sizeof(m->token));
	free(m);
}
