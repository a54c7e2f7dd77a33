/*
 * Control socket server. Non-blocking; each client has a bounded read buffer (one line of at
 * most CTL_MAX_LINE bytes) and a bounded write buffer; a client that overflows either is told
 * why and disconnected. The socket is 0666: access control is per request, by SO_PEERCRED.
 */
#include "ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "eventlog.h"
#include "log.h"

#define MAX_CLIENTS 256
#define MAX_WBUF    (8u << 20)

struct ctl_client {
	int fd;
	struct ctl_peer peer;
	char *rbuf; /* owned, CTL_MAX_LINE + 1 */
	size_t rlen;
	char *wbuf; /* owned */
	size_t wlen, wcap;
	int follow;
	int closing;
};

struct ctl_server {
	int lfd;
	int epfd;
	char path[108];
	ctl_handler_fn fn;
	void *ctx;
	struct eventlog *el;			 /* borrowed */
	struct ctl_client *clients[MAX_CLIENTS]; /* owned */
	struct ctl_counters cnt;
	int reply_fd; /* borrowed: passed with the current reply, -1 none */
};

static uint64_t tag(int slot)
{
	return ((uint64_t)CTL_EPOLL_TAG << 32) | (uint32_t)slot;
}

#define LISTEN_SLOT 0xffffu

static int mkdir_parent(const char *path)
{
	char dir[108], *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = 0;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

struct ctl_server *ctl_new(const char *path, int epfd, ctl_handler_fn fn, void *ctx,
			   struct eventlog *el)
{
	struct ctl_server *s = calloc(1, sizeof(*s));
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct epoll_event ev = {.events = EPOLLIN};
	int r;

	if (!s)
		return NULL;
	s->lfd = -1;
	s->reply_fd = -1;
	s->epfd = epfd;
	s->fn = fn;
	s->ctx = ctx;
	s->el = el;
	if (strlen(path) >= sizeof(addr.sun_path)) {
		errno = ENAMETOOLONG;
		goto fail;
	}
	snprintf(s->path, sizeof(s->path), "%s", path);
	memcpy(addr.sun_path, path, strlen(path) + 1);
	if ((r = mkdir_parent(path)) < 0) {
		errno = -r;
		goto fail;
	}
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lfd < 0)
		goto fail;
	/* A stale socket from a killed agent: remove it only if nobody answers on it. */
	if (connect(s->lfd, (struct sockaddr *)&addr, sizeof(addr)) == 0) {
		errno = EADDRINUSE;
		goto fail;
	}
	close(s->lfd);
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lfd < 0)
		goto fail;
	unlink(path);
	if (bind(s->lfd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || chmod(path, 0666) < 0 ||
	    listen(s->lfd, 64) < 0)
		goto fail;
	ev.data.u64 = tag(LISTEN_SLOT);
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, s->lfd, &ev) < 0)
		goto fail;
	return s;
fail:
	r = errno;
	if (s->lfd >= 0)
		close(s->lfd);
	free(s);
	errno = r;
	return NULL;
}

static void client_free(struct ctl_server *s, int slot)
{
	struct ctl_client *c = s->clients[slot];

	if (!c)
		return;
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->rbuf);
	free(c->wbuf);
	free(c);
	s->clients[slot] = NULL;
}

void ctl_free(struct ctl_server *s)
{
	if (!s)
		return;
	for (int i = 0; i < MAX_CLIENTS; i++)
		client_free(s, i);
	if (s->lfd >= 0) {
		close(s->lfd);
		unlink(s->path);
	}
	free(s);
}

const struct ctl_counters *ctl_counters(const struct ctl_server *s)
{
	return &s->cnt;
}

void ctl_count_denied(struct ctl_server *s)
{
	s->cnt.denied++;
}

void ctl_reply_fd(struct ctl_server *s, int fd)
{
	s->reply_fd = fd;
}

static int flush(struct ctl_server *s, int slot);

/* Send one reply line carrying fd (SCM_RIGHTS) after whatever is queued before it. */
static int send_with_fd(struct ctl_server *s, int slot, struct json_object *o, int fd)
{
	struct ctl_client *c = s->clients[slot];
	char cbuf[CMSG_SPACE(sizeof(int))] = {};
	const char *line;
	struct iovec iov[2];
	struct msghdr mh = {
	    .msg_iov = iov, .msg_iovlen = 2, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	ssize_t n;

	if (flush(s, slot) < 0 || c->wlen) {
		json_object_put(o);
		return -EAGAIN;
	}
	json_object_object_add(o, "v", json_object_new_int(CTL_VERSION));
	line = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	iov[0].iov_base = (void *)line;
	iov[0].iov_len = strlen(line);
	iov[1].iov_base = "\n";
	iov[1].iov_len = 1;
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	json_object_put(o);
	return n == (ssize_t)(iov[0].iov_len + 1) ? 0 : -EIO;
}

static void update_epoll(struct ctl_server *s, int slot)
{
	struct ctl_client *c = s->clients[slot];
	struct epoll_event ev = {.events = EPOLLIN | (c->wlen ? EPOLLOUT : 0),
				 .data.u64 = tag(slot)};

	epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Flush what we can; returns -1 when the client is gone. */
static int flush(struct ctl_server *s, int slot)
{
	struct ctl_client *c = s->clients[slot];

	while (c->wlen) {
		ssize_t n = send(c->fd, c->wbuf, c->wlen, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			return -1;
		}
		memmove(c->wbuf, c->wbuf + n, c->wlen - n);
		c->wlen -= n;
	}
	if (!c->wlen && c->closing)
		return -1;
	update_epoll(s, slot);
	return 0;
}

static int queue(struct ctl_server *s, int slot, const char *line)
{
	struct ctl_client *c = s->clients[slot];
	size_t n = strlen(line);

	if (c->wlen + n + 1 > MAX_WBUF)
		return -ENOBUFS;
	if (c->wlen + n + 1 > c->wcap) {
		size_t cap = c->wcap ? c->wcap : 4096;
		char *nb;

		while (cap < c->wlen + n + 1)
			cap *= 2;
		nb = realloc(c->wbuf, cap);
		if (!nb)
			return -ENOMEM;
		c->wbuf = nb;
		c->wcap = cap;
	}
	memcpy(c->wbuf + c->wlen, line, n);
	c->wbuf[c->wlen + n] = '\n';
	c->wlen += n + 1;
	return 0;
}

static void queue_obj(struct ctl_server *s, int slot, struct json_object *o)
{
	if (!json_object_object_get_ex(o, "v", NULL))
		json_object_object_add(o, "v", json_object_new_int(CTL_VERSION));
	if (queue(s, slot,
		  json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
							JSON_C_TO_STRING_NOSLASHESCAPE)) < 0)
		s->clients[slot]->closing = 1;
	json_object_put(o);
}

static struct json_object *error_obj(const char *code, const char *msg)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "ok", json_object_new_boolean(0));
	json_object_object_add(o, "error", json_object_new_string(msg));
	json_object_object_add(o, "code", json_object_new_string(code));
	return o;
}

static int visible(const struct ctl_peer *p, int64_t uid)
{
	return p->uid == 0 || uid < 0 || (uid_t)uid == p->uid;
}

struct each_ctx {
	struct ctl_server *s;
	int slot;
	int count;
	int limit;
};

static int send_event(void *ctx, const char *line, int64_t uid, uint64_t seq)
{
	struct each_ctx *e = ctx;
	struct ctl_client *c = e->s->clients[e->slot];
	char *buf;
	size_t n;

	(void)seq;
	if (!visible(&c->peer, uid))
		return 0;
	n = strlen(line) + 32;
	buf = malloc(n);
	if (!buf)
		return -ENOMEM;
	snprintf(buf, n, "{\"v\":%d,\"event\":%s}", CTL_VERSION, line);
	if (queue(e->s, e->slot, buf) < 0)
		c->closing = 1;
	free(buf);
	e->count++;
	return 0;
}

static void handle_events(struct ctl_server *s, int slot, const struct ctl_request *req)
{
	struct each_ctx e = {s, slot, 0, req->limit};
	struct json_object *o;
	uint64_t after = req->after;

	if (req->limit > 0 && eventlog_count(s->el) > (uint64_t)req->limit &&
	    eventlog_count(s->el) - req->limit > after)
		after = eventlog_count(s->el) - req->limit;
	eventlog_foreach(s->el, after, send_event, &e);
	o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "end", json_object_new_boolean(!req->follow));
	json_object_object_add(o, "count", json_object_new_int(e.count));
	json_object_object_add(o, "last_seq", json_object_new_uint64(eventlog_count(s->el)));
	queue_obj(s, slot, o);
	s->clients[slot]->follow = req->follow;
}

void ctl_broadcast(void *sp, const char *line, uint32_t uid, uint64_t seq)
{
	struct ctl_server *s = sp;

	if (!s)
		return;
	for (int i = 0; i < MAX_CLIENTS; i++) {
		struct ctl_client *c = s->clients[i];
		struct each_ctx e = {s, i, 0, 0};

		if (!c || !c->follow)
			continue;
		send_event(&e, line, uid == (uint32_t)-1 ? -1 : (int64_t)uid, seq);
		if (c->closing) {
			s->cnt.dropped_slow++;
			client_free(s, i);
			continue;
		}
		if (flush(s, i) < 0)
			client_free(s, i);
	}
}

static void handle_line(struct ctl_server *s, int slot, const char *line, size_t len)
{
	struct ctl_client *c = s->clients[slot];
	struct json_object *resp;
	struct ctl_request req;
	char err[256];
	int r;

	s->cnt.requests++;
	r = ctl_parse_request(line, len, &req, err, sizeof(err));
	if (r < 0) {
		s->cnt.bad_requests++;
		log_debug("ctl: bad request from pid %d uid %u: %s", c->peer.pid, c->peer.uid, err);
		queue_obj(s, slot,
			  error_obj(r == -EPROTO       ? "version"
				    : r == -EOPNOTSUPP ? "unknown_command"
						       : "bad_request",
				    err));
		return;
	}
	if (req.cmd == CTL_CMD_EVENTS) {
		handle_events(s, slot, &req);
		return;
	}
	s->reply_fd = -1;
	resp = s->fn(s->ctx, &req, &c->peer);
	if (s->reply_fd >= 0) {
		if (send_with_fd(s, slot, resp, s->reply_fd) < 0)
			c->closing = 1;
		s->reply_fd = -1;
		return;
	}
	queue_obj(s, slot, resp);
}

static void do_accept(struct ctl_server *s)
{
	for (;;) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), slot = -1;
		struct epoll_event ev = {.events = EPOLLIN};
		struct ucred cred;
		socklen_t cl = sizeof(cred);
		struct ctl_client *c;

		if (fd < 0)
			return;
		for (int i = 0; i < MAX_CLIENTS && slot < 0; i++)
			if (!s->clients[i])
				slot = i;
		if (slot < 0 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
			s->cnt.refused_full++;
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c || !(c->rbuf = malloc(CTL_MAX_LINE + 1))) {
			free(c);
			close(fd);
			continue;
		}
		c->fd = fd;
		c->peer.pid = cred.pid;
		c->peer.uid = cred.uid;
		c->peer.gid = cred.gid;
		s->clients[slot] = c;
		ev.data.u64 = tag(slot);
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			client_free(s, slot);
			continue;
		}
		s->cnt.accepted++;
	}
}

static void do_read(struct ctl_server *s, int slot)
{
	struct ctl_client *c = s->clients[slot];

	for (;;) {
		ssize_t n =
		    recv(c->fd, c->rbuf + c->rlen, CTL_MAX_LINE + 1 - c->rlen, MSG_DONTWAIT);
		size_t start = 0;

		if (n == 0) {
			if (c->rlen)
				s->cnt.truncated++;
			client_free(s, slot);
			return;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			client_free(s, slot);
			return;
		}
		c->rlen += n;
		for (size_t i = 0; i < c->rlen; i++) {
			if (c->rbuf[i] != '\n')
				continue;
			handle_line(s, slot, c->rbuf + start, i - start);
			start = i + 1;
		}
		memmove(c->rbuf, c->rbuf + start, c->rlen - start);
		c->rlen -= start;
		if (c->rlen > CTL_MAX_LINE) {
			char msg[64];

			s->cnt.oversized++;
			snprintf(msg, sizeof(msg), "request longer than %d bytes", CTL_MAX_LINE);
			queue_obj(s, slot, error_obj("too_long", msg));
			c->closing = 1;
			c->rlen = 0;
			break;
		}
	}
	if (flush(s, slot) < 0)
		client_free(s, slot);
}

void ctl_handle(struct ctl_server *s, uint64_t data, uint32_t events)
{
	unsigned slot = (uint32_t)data;

	if (slot == LISTEN_SLOT) {
		do_accept(s);
		return;
	}
	if (slot >= MAX_CLIENTS || !s->clients[slot])
		return;
	if (events & (EPOLLERR | EPOLLHUP) && !(events & EPOLLIN)) {
		client_free(s, slot);
		return;
	}
	if (events & EPOLLOUT && flush(s, slot) < 0) {
		client_free(s, slot);
		return;
	}
	if (events & EPOLLIN)
		do_read(s, slot);
}
