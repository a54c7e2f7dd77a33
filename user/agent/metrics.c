/* The Prometheus endpoint: see metrics.h. */
#include "agent/metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "lib/metrics_text.h"
#include "os/log.h"
#include "os/loop.h"
#include "proto/mesh_proto.h"

struct metrics {
	struct loop *l;
	struct MHD_Daemon *d; /* owned */
	metrics_status_fn fn;
	void *ctx;
	int port;
	uint64_t scrapes, errors;
};

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **con_cls)
{
	struct metrics *m = cls;
	struct MHD_Response *resp;
	struct json_object *st;
	const char *msg = "not found: the metrics are at /metrics\n";
	unsigned code = MHD_HTTP_NOT_FOUND;
	enum MHD_Result r;
	char *text = NULL;
	size_t len = 0;

	(void)version, (void)upload, (void)con_cls;
	if (*upload_len) /* a body is not expected: drop it */
		*upload_len = 0;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD)) {
		msg = "only GET\n";
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (!strcmp(url, "/metrics")) {
		st = m->fn(m->ctx);
		if (st && metrics_format(st, &text, &len) == 0) {
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
		json_object_put(st);
		m->errors++;
		msg = "the status could not be formatted\n";
		code = MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
	resp = MHD_create_response_from_buffer(strlen(msg), (void *)msg, MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return MHD_NO;
	r = MHD_queue_response(c, code, resp);
	MHD_destroy_response(resp);
	return r;
}

static void on_ready(void *ctx, uint32_t arg, uint32_t events)
{
	struct metrics *m = ctx;

	(void)arg, (void)events;
	MHD_run(m->d);
}

struct metrics *metrics_open(struct loop *l, const char *listen, metrics_status_fn fn, void *ctx,
			     char *err, size_t errlen)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	const union MHD_DaemonInfo *info;
	struct mesh_addr a;
	struct metrics *m;
	int h;

	if (mesh_parse_addr(listen, &a) < 0) {
		snprintf(err, errlen, "metrics_listen '%s': not an IPv4 ADDR:PORT", listen);
		return NULL;
	}
	sa.sin_addr.s_addr = htonl(a.ip);
	sa.sin_port = htons(a.port);
	m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "metrics: out of memory");
		return NULL;
	}
	m->l = l;
	m->fn = fn;
	m->ctx = ctx;
	m->d = MHD_start_daemon(MHD_USE_EPOLL, 0, NULL, NULL, answer, m, MHD_OPTION_SOCK_ADDR,
				(struct sockaddr *)&sa, MHD_OPTION_CONNECTION_LIMIT, 16,
				MHD_OPTION_CONNECTION_TIMEOUT, 10, MHD_OPTION_END);
	if (!m->d) {
		snprintf(err, errlen, "metrics: cannot listen on %s (%s)", listen, strerror(errno));
		free(m);
		return NULL;
	}
	info = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_BIND_PORT);
	m->port = info ? info->port : ntohs(sa.sin_port);
	info = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_EPOLL_FD);
	h = loop_handler(l, on_ready, m, 0);
	if (!info || h < 0 || loop_add(l, info->epoll_fd, EPOLLIN, h, 0) < 0) {
		snprintf(err, errlen, "metrics: cannot watch the server's descriptor");
		MHD_stop_daemon(m->d);
		free(m);
		return NULL;
	}
	log_info("metrics at http://%s/metrics", listen);
	return m;
}

void metrics_tick(struct metrics *m)
{
	if (m)
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

void metrics_close(struct metrics *m)
{
	const union MHD_DaemonInfo *info;

	if (!m)
		return;
	info = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_EPOLL_FD);
	if (info)
		loop_del(m->l, info->epoll_fd);
	MHD_stop_daemon(m->d);
	free(m);
}
