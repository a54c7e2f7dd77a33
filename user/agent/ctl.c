/*
 * Control socket server. Non-blocking. A client's requests are handled one at a time: the next
 * line is read only once the previous reply has been sent, so a client that does not read holds
 * at most one reply (plus the events it follows). Connections, unsent bytes and idle time are
 * bounded per user, with connections kept in reserve for root, so that no user can starve
 * another. A client is never freed while one of its requests is being handled: it is marked
 * dead and freed at the end of the turn (events emitted by a handler reach followers, the
 * handler's own client among them). The socket is 0666: access control is per request.
 * Over 800 lines on purpose: the connection state machine, the per-user accounting and the
 * deferred frees are one thing, whose invariants (what a client holds, when it may be freed)
 * every function here keeps; tests/unit/test_ctl_server.c checks them under ASan.
 */
#include "agent/ctl.h"

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
#include <time.h>
#include <unistd.h>

#include "agent/eventlog.h"
#include "lib/growbuf.h"
#include "os/clock.h"
#include "os/log.h"
#include "os/loop.h"
#include "os/pidfd.h"
#include "os/procfs.h"
#include "os/safefs.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif

#define WBUF_MAX	(8u << 20) /* one client's unsent output, root included */
#define RBUF_START	4096
#define LISTEN_SLOT	0xffffffu
#define DEF_MAX_CLIENTS 1024
#define DEF_RESERVE	32
#define DEF_PER_UID	64
#define DEF_UID_OUT	(8u << 20)
#define DEF_IDLE_S	60.0

struct ctl_client {
	int fd;
	struct ctl_peer peer; /* peer.pidfd owned */
	char *rbuf;	      /* owned, grows to CTL_MAX_LINE + 1 */
	size_t rlen, rcap;
	char *wbuf; /* owned */
	size_t wlen, wcap;
	int closing; /* send what is queued, then close */
	int dead;    /* free at the end of the turn */
	int eof;     /* the peer will send nothing more */
	uint64_t last_ns;
	struct uacct *acct; /* borrowed from the server's table */
};

/* Per-user accounting; root is counted but not limited. */
struct uacct {
	uid_t uid;
	int nconn;
	size_t out;
};

struct ctl_server {
	int lfd;
	struct loop *loop; /* borrowed */
	int hid;	   /* our handler in it */
	int reserve_fd;	   /* spare fd: lets us refuse a connection when out of descriptors */
	char path[108];
	struct ctl_limits lim;
	ctl_handler_fn fn;
	void *ctx;
	struct eventlog *el;	     /* borrowed */
	struct ctl_client **clients; /* owned, lim.max_clients slots */
	int nclients;
	struct uacct **acct; /* owned, and each account */
	int nacct, acap;
	struct ctl_counters cnt;
	int reply_fd;	/* borrowed: passed with the current reply, -1 none */
	int in_handler; /* a request is being handled: defer frees */
	int peerpidfd;	/* the kernel has SO_PEERPIDFD */
	int ndead;
};

static struct uacct *acct_get(struct ctl_server *s, uid_t uid)
{
	for (int i = 0; i < s->nacct; i++)
		if (s->acct[i]->uid == uid)
			return s->acct[i];
	return NULL;
}

/* Accounts are allocated one by one: a client's pointer stays valid until its account goes. */
static struct uacct *acct_add(struct ctl_server *s, uid_t uid)
{
	struct uacct *a = acct_get(s, uid);

	if (a)
		return a;
	if (s->nacct == s->acap) {
		int cap = s->acap ? s->acap * 2 : 16;
		struct uacct **na = realloc(s->acct, cap * sizeof(*na));

		if (!na)
			return NULL;
		s->acct = na;
		s->acap = cap;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->uid = uid;
	s->acct[s->nacct++] = a;
	return a;
}

static void acct_release(struct ctl_server *s, struct uacct *a)
{
	if (a->nconn > 0)
		return;
	for (int i = 0; i < s->nacct; i++)
		if (s->acct[i] == a) {
			s->acct[i] = s->acct[--s->nacct];
			break;
		}
	free(a);
}

static int listen_on(struct ctl_server *s, const char *path, char *err, size_t errlen)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	char dir[108];
	int r, fd;

	if (strlen(path) >= sizeof(addr.sun_path)) {
		snprintf(err, errlen, "socket path %s is too long", path);
		return -ENAMETOOLONG;
	}
	memcpy(addr.sun_path, path, strlen(path) + 1);
	if (safefs_parent(path, dir, sizeof(dir)) < 0) {
		snprintf(err, errlen, "socket path %s is too long", path);
		return -ENAMETOOLONG;
	}
	r = safefs_mkdir(dir, 0755, err, errlen);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A stale socket from a killed agent: replaced only if nobody answers on it. */
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0) {
		close(fd);
		snprintf(err, errlen, "another agent answers on %s", path);
		return -EADDRINUSE;
	}
	close(fd);
	r = safefs_unlink_socket(path, err, errlen);
	if (r < 0)
		return r;
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lfd < 0)
		return -errno;
	if (bind(s->lfd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || chmod(path, 0666) < 0 ||
	    listen(s->lfd, 128) < 0) {
		r = -errno;
		snprintf(err, errlen, "listen on %s: %s", path, strerror(-r));
		return r;
	}
	return 0;
}

/* Does getsockopt(SO_PEERPIDFD) work here (Linux 6.5+)? */
static int probe_peerpidfd(void)
{
	int sv[2], pidfd = -1, ok;
	socklen_t cl = sizeof(pidfd);

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return 0;
	ok = getsockopt(sv[0], SOL_SOCKET, SO_PEERPIDFD, &pidfd, &cl) == 0 && pidfd >= 0;
	if (pidfd >= 0)
		close(pidfd);
	close(sv[0]);
	close(sv[1]);
	return ok;
}

static void on_loop(void *ctx, uint32_t slot, uint32_t events);

struct ctl_server *ctl_new(const char *path, struct loop *loop, const struct ctl_limits *lim,
			   ctl_handler_fn fn, void *ctx, struct eventlog *el, char *err,
			   size_t errlen)
{
	struct ctl_server *s = calloc(1, sizeof(*s));
	int r;

	if (!s) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	s->lfd = s->reserve_fd = s->reply_fd = -1;
	s->loop = loop;
	s->fn = fn;
	s->ctx = ctx;
	s->el = el;
	if (lim)
		s->lim = *lim;
	if (s->lim.max_clients <= 0)
		s->lim.max_clients = DEF_MAX_CLIENTS;
	if (s->lim.root_reserve <= 0)
		s->lim.root_reserve = DEF_RESERVE;
	if (s->lim.root_reserve >= s->lim.max_clients)
		s->lim.root_reserve = s->lim.max_clients / 2;
	if (s->lim.per_uid <= 0)
		s->lim.per_uid = DEF_PER_UID;
	if (!s->lim.uid_out_bytes)
		s->lim.uid_out_bytes = DEF_UID_OUT;
	if (s->lim.idle_s <= 0)
		s->lim.idle_s = DEF_IDLE_S;
	snprintf(s->path, sizeof(s->path), "%s", path);
	s->clients = calloc(s->lim.max_clients, sizeof(*s->clients));
	if (!s->clients) {
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
		goto fail;
	}
	r = listen_on(s, path, err, errlen);
	if (r < 0)
		goto fail;
	s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	s->peerpidfd = probe_peerpidfd();
	s->hid = loop_handler(loop, on_loop, s, 0);
	r = s->hid < 0 ? s->hid : loop_add(loop, s->lfd, EPOLLIN, s->hid, LISTEN_SLOT);
	if (r < 0) {
		snprintf(err, errlen, "event loop: %s", strerror(-r));
		goto fail;
	}
	return s;
fail:
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->reserve_fd >= 0)
		close(s->reserve_fd);
	free(s->clients);
	free(s);
	errno = -r;
	return NULL;
}

static void client_free(struct ctl_server *s, int slot)
{
	struct ctl_client *c = s->clients[slot];

	if (!c)
		return;
	(void)loop_del(s->loop,
		       c->fd); /* may be out already (kill_client); close drops it anyway */
	close(c->fd);
	if (c->peer.pidfd >= 0)
		close(c->peer.pidfd);
	if (c->acct) {
		c->acct->nconn--;
		c->acct->out -= c->wlen;
	}
	s->clients[slot] = NULL;
	s->nclients--;
	if (c->acct)
		acct_release(s, c->acct);
	free(c->rbuf);
	free(c->wbuf);
	free(c);
}

/* Mark a client for freeing at the end of the turn; it gets no more events or requests. */
static void kill_client(struct ctl_server *s, struct ctl_client *c)
{
	if (c->dead)
		return;
	c->dead = 1;
	s->ndead++;
	(void)loop_del(s->loop, c->fd); /* failing only if it is not watched: then no events */
}

static void reap(struct ctl_server *s)
{
	if (s->in_handler || !s->ndead)
		return;
	for (int i = 0; i < s->lim.max_clients; i++)
		if (s->clients[i] && s->clients[i]->dead)
			client_free(s, i);
	s->ndead = 0;
}

void ctl_free(struct ctl_server *s)
{
	char err[160];

	if (!s)
		return;
	for (int i = 0; i < s->lim.max_clients; i++)
		client_free(s, i);
	if (s->lfd >= 0) {
		close(s->lfd);
		safefs_unlink_socket(s->path, err, sizeof(err));
	}
	if (s->reserve_fd >= 0)
		close(s->reserve_fd);
	free(s->clients);
	for (int i = 0; i < s->nacct; i++)
		free(s->acct[i]);
	free(s->acct);
	free(s);
}

const struct ctl_counters *ctl_counters(const struct ctl_server *s)
{
	return &s->cnt;
}

int ctl_clients(const struct ctl_server *s)
{
	return s->nclients;
}

void ctl_count_denied(struct ctl_server *s)
{
	s->cnt.denied++;
}

void ctl_reply_fd(struct ctl_server *s, int fd)
{
	s->reply_fd = fd;
}

int ctl_peer_current(const struct ctl_peer *p)
{
	struct proc_stat st;
	struct proc_creds cr;

	if (p->pidfd >= 0)
		return pidfd_is(p->pidfd, p->pid);
	/* SO_PEERCRED gave the effective uid at connect time */
	if (!p->start_ns || procfs_stat(p->pid, -1, &st) < 0 || procfs_creds(p->pid, &cr) < 0 ||
	    st.start_ns != p->start_ns || cr.euid != p->uid)
		return -ESRCH;
	return 0;
}

static int has_line(const struct ctl_client *c)
{
	return c->rlen && memchr(c->rbuf, '\n', c->rlen) != NULL;
}

static void update_epoll(struct ctl_server *s, struct ctl_client *c, int slot)
{
	uint32_t events = 0;

	if (c->dead)
		return;
	/* read only when the last reply is out and no complete request waits */
	if (!c->closing && !c->eof && !c->wlen && !has_line(c))
		events |= EPOLLIN;
	if (c->wlen)
		events |= EPOLLOUT;
	if (loop_mod(s->loop, c->fd, events, s->hid, (uint32_t)slot) < 0)
		kill_client(s, c); /* it would get no more events: better closed than stuck */
}

/* Send what we can; -1 when the client is gone or done. */
static int flush(struct ctl_server *s, struct ctl_client *c)
{
	(void)s;
	while (c->wlen) {
		ssize_t n = send(c->fd, c->wbuf, c->wlen, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			return -1;
		}
		memmove(c->wbuf, c->wbuf + n, c->wlen - (size_t)n);
		c->wlen -= (size_t)n;
		c->acct->out -= (size_t)n;
	}
	if (!c->wlen && c->closing)
		return -1;
	return 0;
}

/* Queue a line; -ENOBUFS past the client's or its user's limit. */
static int queue(struct ctl_server *s, struct ctl_client *c, const char *line, size_t n)
{
	size_t cap_client = WBUF_MAX;

	if (c->peer.uid != 0 && c->peer.following && cap_client > s->lim.uid_out_bytes / 4)
		cap_client = s->lim.uid_out_bytes / 4; /* a follower that does not read */
	if (c->wlen + n + 1 > cap_client)
		return -ENOBUFS;
	if (c->peer.uid != 0 && c->acct->out + n + 1 > s->lim.uid_out_bytes) {
		s->cnt.over_budget++;
		return -ENOBUFS;
	}
	if (growbuf_reserve(&c->wbuf, &c->wcap, c->wlen + n + 1) < 0)
		return -ENOMEM;
	memcpy(c->wbuf + c->wlen, line, n);
	c->wbuf[c->wlen + n] = '\n';
	c->wlen += n + 1;
	c->acct->out += n + 1;
	return 0;
}

static void queue_obj(struct ctl_server *s, struct ctl_client *c, struct json_object *o)
{
	const char *line;

	if (!json_object_object_get_ex(o, "v", NULL))
		json_object_object_add(o, "v", json_object_new_int(CTL_VERSION));
	line = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
						     JSON_C_TO_STRING_NOSLASHESCAPE);
	if (queue(s, c, line, strlen(line)) < 0)
		kill_client(s, c);
	json_object_put(o);
}

/* Send one reply line carrying fd (SCM_RIGHTS); nothing may be queued before it. */
static int send_with_fd(struct ctl_client *c, struct json_object *o, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {};
	const char *line;
	struct iovec iov[2];
	struct msghdr mh = {
	    .msg_iov = iov, .msg_iovlen = 2, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	ssize_t n;

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
	struct ctl_client *c;
	int count;
};

static int send_event(void *ctx, const char *line, int64_t uid, uint64_t seq)
{
	struct each_ctx *e = ctx;
	char head[32];
	size_t hn, ln;
	char *buf;

	(void)seq;
	if (e->c->dead || !visible(&e->c->peer, uid))
		return 0;
	hn = (size_t)snprintf(head, sizeof(head), "{\"v\":%d,\"event\":", CTL_VERSION);
	ln = strlen(line);
	buf = malloc(hn + ln + 2);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, head, hn);
	memcpy(buf + hn, line, ln);
	buf[hn + ln] = '}';
	if (queue(e->s, e->c, buf, hn + ln + 1) < 0) {
		e->s->cnt.dropped_slow++;
		kill_client(e->s, e->c);
	}
	free(buf);
	e->count++;
	return 0;
}

static void handle_events(struct ctl_server *s, struct ctl_client *c, const struct ctl_request *req)
{
	struct each_ctx e = {s, c, 0};
	struct json_object *o;
	uint64_t after = req->after;

	if (req->limit > 0 && eventlog_count(s->el) > (uint64_t)req->limit &&
	    eventlog_count(s->el) - req->limit > after)
		after = eventlog_count(s->el) - req->limit;
	eventlog_foreach(s->el, after, send_event, &e);
	if (c->dead)
		return;
	o = json_object_new_object();
	json_object_object_add(o, "ok", json_object_new_boolean(1));
	json_object_object_add(o, "end", json_object_new_boolean(!req->follow));
	json_object_object_add(o, "count", json_object_new_int(e.count));
	json_object_object_add(o, "last_seq", json_object_new_uint64(eventlog_count(s->el)));
	queue_obj(s, c, o);
	c->peer.following = req->follow;
}

void ctl_broadcast(void *sp, const char *line, uint32_t uid, uint64_t seq)
{
	struct ctl_server *s = sp;

	if (!s)
		return;
	for (int i = 0; i < s->lim.max_clients; i++) {
		struct ctl_client *c = s->clients[i];
		struct each_ctx e = {s, c, 0};

		if (!c || c->dead || !c->peer.following)
			continue;
		send_event(&e, line, uid == (uint32_t)-1 ? -1 : (int64_t)uid, seq);
		if (!c->dead && flush(s, c) < 0)
			kill_client(s, c);
		else
			update_epoll(s, c, i);
	}
	reap(s);
}

/* Printable ASCII only: a client's bytes echoed in an error message stay valid UTF-8 JSON. */
static void sanitize(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			*s = '?';
}

static void handle_line(struct ctl_server *s, struct ctl_client *c, const char *line, size_t len)
{
	struct json_object *resp;
	struct ctl_request req;
	struct ctl_peer peer = c->peer; /* the handler's copy: c may die under it */
	char err[256];
	int r;

	s->cnt.requests++;
	c->last_ns = clock_mono_ns();
	r = ctl_parse_request(line, len, &req, err, sizeof(err));
	if (r < 0) {
		s->cnt.bad_requests++;
		sanitize(err);
		log_debug("ctl: bad request from pid %d uid %u: %s", c->peer.pid, c->peer.uid, err);
		queue_obj(s, c,
			  error_obj(r == -EPROTO       ? "version"
				    : r == -EOPNOTSUPP ? "unknown_command"
						       : "bad_request",
				    err));
		return;
	}
	if (req.cmd == CTL_CMD_EVENTS) {
		handle_events(s, c, &req);
		return;
	}
	s->reply_fd = -1;
	s->in_handler = 1;
	resp = s->fn(s->ctx, &req, &peer);
	s->in_handler = 0;
	if (c->dead) {
		json_object_put(resp);
		s->reply_fd = -1;
		return;
	}
	if (s->reply_fd >= 0) {
		if (c->wlen) { /* events it follows were queued meanwhile: the fd cannot go first */
			json_object_put(resp);
			queue_obj(s, c,
				  error_obj("busy", "this connection streams events; register on a "
						    "connection of its own"));
		} else if (send_with_fd(c, resp, s->reply_fd) < 0) {
			kill_client(s, c);
		}
		s->reply_fd = -1;
		return;
	}
	queue_obj(s, c, resp);
}

/* Handle complete lines while the previous reply is out. */
static void process(struct ctl_server *s, struct ctl_client *c)
{
	while (!c->dead && !c->closing && !c->wlen) {
		char *nl = c->rlen ? memchr(c->rbuf, '\n', c->rlen) : NULL;
		size_t n;

		if (!nl)
			break;
		n = (size_t)(nl - c->rbuf);
		handle_line(s, c, c->rbuf, n);
		if (c->dead)
			return;
		memmove(c->rbuf, nl + 1, c->rlen - n - 1);
		c->rlen -= n + 1;
	}
	if (c->dead)
		return;
	if (!has_line(c) && c->rlen > CTL_MAX_LINE) {
		char msg[64];

		s->cnt.oversized++;
		snprintf(msg, sizeof(msg), "request longer than %d bytes", CTL_MAX_LINE);
		queue_obj(s, c, error_obj("too_long", msg));
		c->closing = 1;
		c->rlen = 0;
	}
	if (c->eof && !has_line(c) && !c->closing) {
		if (c->rlen)
			s->cnt.truncated++;
		c->closing = 1; /* what is queued still goes out */
	}
}

static void refuse(struct ctl_server *s, int fd, const char *why)
{
	/* best effort: one line, then close */
	char line[160];
	int n = snprintf(line, sizeof(line),
			 "{\"ok\":false,\"code\":\"busy\",\"error\":\"%s\",\"v\":%d}\n", why,
			 CTL_VERSION);

	if (send(fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		(void)0; /* the refusal is only a courtesy */
	close(fd);
	(void)s;
}

static void accept_one(struct ctl_server *s, int fd)
{
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	struct ctl_client *c;
	struct uacct *a;
	int slot = -1, pidfd = -1;
	struct proc_stat st;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
		close(fd);
		return;
	}
	a = acct_get(s, cred.uid);
	if (cred.uid != 0 && a && a->nconn >= s->lim.per_uid) {
		s->cnt.refused_user++;
		refuse(s, fd, "too many connections of this user");
		return;
	}
	if (s->nclients >= s->lim.max_clients ||
	    (cred.uid != 0 && s->nclients >= s->lim.max_clients - s->lim.root_reserve)) {
		s->cnt.refused_full++;
		refuse(s, fd, "too many connections");
		return;
	}
	for (int i = 0; i < s->lim.max_clients && slot < 0; i++)
		if (!s->clients[i])
			slot = i;
	cl = sizeof(pidfd);
	if (s->peerpidfd && getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &cl) < 0)
		pidfd = -1; /* the peer has exited already: it is nobody (start_ns stays 0) */
	c = calloc(1, sizeof(*c));
	a = c ? acct_add(s, cred.uid) : NULL;
	if (!a || !(c->rbuf = malloc(RBUF_START))) {
		if (a)
			acct_release(s, a);
		free(c);
		if (pidfd >= 0)
			close(pidfd);
		close(fd);
		return;
	}
	c->rcap = RBUF_START;
	c->fd = fd;
	c->peer.pid = cred.pid;
	c->peer.uid = cred.uid;
	c->peer.gid = cred.gid;
	c->peer.pidfd = pidfd;
	if (!s->peerpidfd && procfs_stat(cred.pid, -1, &st) == 0)
		c->peer.start_ns = st.start_ns; /* older kernels: identity by start time */
	c->last_ns = clock_mono_ns();
	c->acct = a;
	a->nconn++;
	s->clients[slot] = c;
	s->nclients++;
	if (loop_add(s->loop, fd, EPOLLIN, s->hid, (uint32_t)slot) < 0) {
		client_free(s, slot);
		return;
	}
	s->cnt.accepted++;
}

static void do_accept(struct ctl_server *s)
{
	for (int k = 0; k < 64; k++) { /* bounded: other work waits behind us */
		int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if ((errno == EMFILE || errno == ENFILE) && s->reserve_fd >= 0) {
				/* out of descriptors: take the connection with the spare one and
				 * close it, or the listen socket stays readable and we spin */
				close(s->reserve_fd);
				fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
				if (fd >= 0) {
					s->cnt.refused_fds++;
					refuse(s, fd, "the agent is out of file descriptors");
				}
				s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
				continue;
			}
			return;
		}
		accept_one(s, fd);
	}
}

static void do_read(struct ctl_server *s, struct ctl_client *c)
{
	while (!c->eof && c->rlen <= CTL_MAX_LINE && !has_line(c)) {
		ssize_t n;

		if (c->rlen == c->rcap) {
			size_t cap =
			    c->rcap * 2 > CTL_MAX_LINE + 1 ? CTL_MAX_LINE + 1 : c->rcap * 2;
			char *nb = realloc(c->rbuf, cap);

			if (!nb) {
				kill_client(s, c);
				return;
			}
			c->rbuf = nb;
			c->rcap = cap;
		}
		n = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen, MSG_DONTWAIT);
		if (n == 0) {
			c->eof = 1;
			break;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			kill_client(s, c);
			return;
		}
		c->rlen += (size_t)n;
	}
	process(s, c);
}

static void on_loop(void *ctx, uint32_t slot, uint32_t events)
{
	struct ctl_server *s = ctx;
	struct ctl_client *c;

	if (slot == LISTEN_SLOT) {
		do_accept(s);
		return;
	}
	if (slot >= (uint32_t)s->lim.max_clients || !(c = s->clients[slot]) || c->dead)
		return;
	if ((events & (EPOLLERR | EPOLLHUP)) && !(events & EPOLLIN)) {
		kill_client(s, c);
	} else {
		if ((events & EPOLLOUT) && flush(s, c) < 0)
			kill_client(s, c);
		else if (events & EPOLLOUT)
			process(s, c); /* the reply went out: the next request may go */
		if (!c->dead && (events & EPOLLIN))
			do_read(s, c);
		if (!c->dead && flush(s, c) < 0)
			kill_client(s, c);
		update_epoll(s, c, (int)slot);
	}
	reap(s);
}

void ctl_tick(struct ctl_server *s, uint64_t now)
{
	uint64_t idle = (uint64_t)(s->lim.idle_s * 1e9);

	for (int i = 0; i < s->lim.max_clients; i++) {
		struct ctl_client *c = s->clients[i];

		if (c && !c->dead && !c->peer.following && now > c->last_ns &&
		    now - c->last_ns > idle) {
			s->cnt.idle_closed++;
			kill_client(s, c);
		}
	}
	reap(s);
}
