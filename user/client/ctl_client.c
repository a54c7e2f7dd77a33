#include "client/ctl_client.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/ctl_proto.h"

#define READ_START (64 * 1024)
/* The longest reply line: the status of a node with thousands of ranks is megabytes. */
#define READ_MAX (256u << 20)

struct ctl_conn {
	int fd;
	int timeout_ms;
	char *buf; /* owned: cap bytes, grown up to READ_MAX */
	size_t len, cap;
};

int ctl_conn_open(const char *path, int timeout_ms, struct ctl_conn **ret_conn)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct ctl_conn *c;
	int fd, err;

	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	c = calloc(1, sizeof(*c));
	if (c)
		c->buf = malloc(READ_START);
	if (!c || !c->buf) {
		free(c);
		close(fd);
		return -ENOMEM;
	}
	c->fd = fd;
	c->cap = READ_START;
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : -1;
	*ret_conn = c;
	return 0;
}

void ctl_conn_close(struct ctl_conn *c)
{
	if (!c)
		return;
	close(c->fd);
	free(c->buf);
	free(c);
}

static int wait_fd(struct ctl_conn *c, short ev)
{
	struct pollfd p = {.fd = c->fd, .events = ev};
	int n;

	do
		n = poll(&p, 1, c->timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n ? 0 : -ETIMEDOUT;
}

static int write_all(struct ctl_conn *c, const char *s, size_t n)
{
	while (n) {
		ssize_t w;
		int r = wait_fd(c, POLLOUT);

		if (r < 0)
			return r;
		w = send(c->fd, s, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

int ctl_conn_send(struct ctl_conn *c, struct json_object *req)
{
	const char *s;
	int r;

	json_object_object_add(req, "v", json_object_new_int(CTL_VERSION));
	s = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	r = write_all(c, s, strlen(s));
	return r < 0 ? r : write_all(c, "\n", 1);
}

int ctl_conn_read(struct ctl_conn *c, struct json_object **ret_obj)
{
	for (;;) {
		char *nl = memchr(c->buf, '\n', c->len);
		ssize_t n;
		int r;

		if (nl) {
			struct json_object *o;

			*nl = 0;
			o = json_tokener_parse(c->buf);
			c->len -= (size_t)(nl + 1 - c->buf);
			memmove(c->buf, nl + 1, c->len);
			if (!o)
				continue;
			*ret_obj = o;
			return 0;
		}
		if (c->len == c->cap) {
			char *nb = c->cap < READ_MAX ? realloc(c->buf, c->cap * 2) : NULL;

			if (!nb)
				return c->cap < READ_MAX ? -ENOMEM : -E2BIG;
			c->buf = nb;
			c->cap *= 2;
		}
		r = wait_fd(c, POLLIN);
		if (r < 0)
			return r;
		n = read(c->fd, c->buf + c->len, c->cap - c->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		c->len += (size_t)n;
	}
}

int ctl_call(const char *path, struct json_object *req, int timeout_ms,
	     struct json_object **ret_obj)
{
	struct ctl_conn *c;
	int r = ctl_conn_open(path, timeout_ms, &c);

	if (r < 0)
		return r;
	r = ctl_conn_send(c, req);
	if (r == 0)
		r = ctl_conn_read(c, ret_obj);
	ctl_conn_close(c);
	return r;
}

const char *ctl_get_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !v)
		return NULL;
	return json_object_get_string(v);
}

const char *ctl_get_str_or(struct json_object *o, const char *key, const char *def)
{
	const char *s = ctl_get_str(o, key);

	return s ? s : def;
}

double ctl_get_dbl(struct json_object *o, const char *key, double def)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, key, &v) && v ? json_object_get_double(v) : def;
}

int64_t ctl_get_int(struct json_object *o, const char *key, int64_t def)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, key, &v) && v ? json_object_get_int64(v) : def;
}

int ctl_get_bool(struct json_object *o, const char *key)
{
	struct json_object *v;

	return o && json_object_object_get_ex(o, key, &v) && v && json_object_get_boolean(v);
}
