/* A client of NCCL's RAS service, in a rank's network namespace (see rasclient.h). */
#include "os/rasclient.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "os/clock.h"
#include "os/pidfd.h"
#include "os/procfs.h"
#include "os/sockdiag.h"

#define ENV_MAX	  (256 * 1024)
#define FDS_MAX	  65536
#define LINE_MAX_ 256

struct ctx {
	const struct rasclient_query *q;
	struct ras_answer *a;
	char *why;
	size_t whylen;
	int rc;
};

static int ms_left(uint64_t deadline, int cap)
{
	uint64_t now = clock_mono_ns();
	uint64_t ms = deadline > now ? (deadline - now) / 1000000 : 0;

	return ms > (uint64_t)cap ? cap : (int)ms;
}

/* Connect within ms (non-blocking socket). 0 or -errno. */
static int connect_within(int fd, const struct addrinfo *ai, int ms)
{
	struct pollfd p = {fd, POLLOUT, 0};
	int err = 0;
	socklen_t l = sizeof(err);

	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return -errno;
	if (poll(&p, 1, ms) <= 0)
		return -ETIMEDOUT;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
		return -errno;
	return -err;
}

static int send_all(int fd, const char *s, int ms)
{
	size_t n = strlen(s);

	while (n) {
		struct pollfd p = {fd, POLLOUT, 0};
		ssize_t w;

		if (poll(&p, 1, ms) <= 0)
			return -ETIMEDOUT;
		w = send(fd, s, n, MSG_NOSIGNAL);
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (w > 0) {
			s += w;
			n -= (size_t)w;
		}
	}
	return 0;
}

/* One line (without its newline) within ms. 0 or -errno (-ECONNRESET: closed first). */
static int recv_line(int fd, char *buf, size_t len, int ms)
{
	size_t n = 0;
	uint64_t deadline = clock_mono_ns() + (uint64_t)ms * 1000000ull;

	while (n + 1 < len) {
		struct pollfd p = {fd, POLLIN, 0};
		ssize_t r;

		if (poll(&p, 1, ms_left(deadline, ms)) <= 0)
			return -ETIMEDOUT;
		r = recv(fd, buf + n, 1, 0); /* a byte at a time: what follows is not ours yet */
		if (r == 0)
			return -ECONNRESET;
		if (r < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -errno;
		}
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = '\0';
	if (n && buf[n - 1] == '\r')
		buf[n - 1] = '\0';
	return 0;
}

/* Read to the end (the server closes after STATUS). 0 or -errno. */
static int recv_all(int fd, struct ras_answer *a, uint64_t deadline)
{
	size_t cap = 65536;

	a->text = malloc(cap);
	if (!a->text)
		return -ENOMEM;
	a->len = 0;
	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		ssize_t r;

		if (a->len + 1 == cap) {
			char *t;

			if (cap > RAS_REPLY_MAX)
				return -E2BIG;
			t = realloc(a->text, cap * 2);
			if (!t)
				return -ENOMEM;
			a->text = t;
			cap *= 2;
		}
		if (poll(&p, 1, ms_left(deadline, 60000)) <= 0)
			return -ETIMEDOUT;
		r = recv(fd, a->text + a->len, cap - 1 - a->len, 0);
		if (r == 0)
			break;
		if (r < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -errno;
		}
		a->len += (size_t)r;
	}
	a->text[a->len] = '\0';
	return 0;
}

/* Host pid of the job's rank that holds the server end of fd's connection; -EPERM if none. */
static int server_of_job(int fd, const struct rasclient_query *q)
{
	struct sockaddr_storage ls, ps;
	socklen_t ll = sizeof(ls), pl = sizeof(ps);
	struct sockaddr_in *l4 = (struct sockaddr_in *)&ls, *p4 = (struct sockaddr_in *)&ps;
	struct sd_sock *v = NULL;
	uint32_t ino = 0, *fds;
	int n = 0, r, found = -EPERM;

	if (getsockname(fd, (struct sockaddr *)&ls, &ll) < 0 ||
	    getpeername(fd, (struct sockaddr *)&ps, &pl) < 0)
		return -errno;
	if (ls.ss_family != AF_INET) /* sock_diag is read for IPv4 (see sockdiag.h) */
		return -EAFNOSUPPORT;
	r = sockdiag_dump(&v, &n);
	if (r < 0)
		return r;
	for (int i = 0; i < n; i++)
		if (v[i].local.port == ntohs(p4->sin_port) &&
		    v[i].local.ip == ntohl(p4->sin_addr.s_addr) &&
		    v[i].peer.port == ntohs(l4->sin_port) &&
		    v[i].peer.ip == ntohl(l4->sin_addr.s_addr))
			ino = v[i].ino;
	free(v);
	if (!ino)
		return -EPERM;
	fds = malloc(FDS_MAX * sizeof(*fds));
	if (!fds)
		return -ENOMEM;
	for (int j = 0; j < q->njob && found < 0; j++) {
		int nf = 0;

		if (sockdiag_proc_inodes(q->job_pids[j], fds, FDS_MAX, &nf) < 0)
			continue;
		for (int k = 0; k < nf; k++)
			if (fds[k] == ino)
				found = q->job_pids[j];
	}
	free(fds);
	return found;
}

/* One connection: greeting, the server's identity, format, STATUS. 0 or -errno. */
static int one_try(struct ctx *c, const struct addrinfo *ai)
{
	const struct rasclient_query *q = c->q;
	struct ras_answer *a = c->a;
	char line[LINE_MAX_];
	int fd, r, ms = ms_left(q->deadline_ns, RAS_HELLO_TIMEOUT_MS);

	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	a->tries++;
	r = connect_within(fd, ai, ms);
	if (!r)
		r = send_all(fd, "CLIENT PROTOCOL 2\n", ms);
	if (!r)
		r = recv_line(fd, line, sizeof(line), ms);
	if (!r && !ras_is_server_hello(line))
		r = -EPROTO;
	if (!r) {
		r = server_of_job(fd, q);
		if (r == -EPERM)
			a->wrong_server++;
		if (r > 0) {
			a->server_pid = r;
			r = 0;
		}
	}
	if (!r)
		r = send_all(fd, "SET FORMAT json\n", ms);
	if (!r)
		r = recv_line(fd, line, sizeof(line), ms_left(q->deadline_ns, 5000));
	if (!r) {
		a->json = ras_json_accepted(line);
		r = send_all(fd, "STATUS\n", ms);
	}
	if (!r)
		r = recv_all(fd, a, q->deadline_ns);
	close(fd);
	return r;
}

static void *query_thread(void *arg)
{
	struct ctx *c = arg;
	const struct rasclient_query *q = c->q;
	struct ras_answer *a = c->a;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV},
			*res = NULL;
	uint64_t ours = 0, theirs = 0;
	char host[128], port[16];
	int r, last = -ECONNREFUSED;

	/* this thread only: a network namespace is per thread, and the thread ends here */
	if (procfs_netns(0, &ours) == 0 && procfs_netns(q->pid, &theirs) == 0 && ours != theirs &&
	    setns(q->pidfd, CLONE_NEWNET) < 0) {
		c->rc = -errno;
		snprintf(c->why, c->whylen, "cannot enter the rank's network namespace: %s",
			 strerror(errno));
		return NULL;
	}
	if (ras_addr_split(a->env.addr, host, sizeof(host), port, sizeof(port)) < 0) {
		c->rc = -EINVAL;
		snprintf(c->why, c->whylen, "NCCL_RAS_ADDR %s is not host:port", a->env.addr);
		return NULL;
	}
	r = getaddrinfo(host, port, &hints, &res);
	if (r) {
		c->rc = -EHOSTUNREACH;
		snprintf(c->why, c->whylen, "%s: %s", a->env.addr, gai_strerror(r));
		return NULL;
	}
	/* IPv4 first: the server's identity is checked through sock_diag's IPv4 table */
	for (int pass = 0; pass < 2 && a->tries < RAS_TRIES; pass++)
		for (struct addrinfo *ai = res; ai && a->tries < RAS_TRIES; ai = ai->ai_next) {
			if ((ai->ai_family == AF_INET) != (pass == 0))
				continue;
			/* another listener of the port (another job's rank, a stopped one) may
			 * answer: try again, each time from a new source port */
			for (int t = 0; t < RAS_TRIES && a->tries < RAS_TRIES; t++) {
				if (ms_left(q->deadline_ns, 1) <= 0) {
					last = -ETIMEDOUT;
					break;
				}
				free(a->text);
				a->text = NULL;
				a->len = 0;
				last = one_try(c, ai);
				if (!last || last == -ECONNREFUSED || last == -EAFNOSUPPORT ||
				    last == -E2BIG)
					break;
			}
			if (!last)
				goto done;
		}
done:
	freeaddrinfo(res);
	c->rc = last;
	if (last == -EPERM)
		snprintf(c->why, c->whylen,
			 "%s answered %d time%s, never from a rank of the job: not trusted",
			 a->env.addr, a->wrong_server, a->wrong_server == 1 ? "" : "s");
	else if (last == -EAFNOSUPPORT)
		snprintf(c->why, c->whylen,
			 "%s is an IPv6 address: its server's identity cannot be checked",
			 a->env.addr);
	else if (last)
		snprintf(c->why, c->whylen, "%s: %s (%d connection%s)", a->env.addr,
			 last == -ETIMEDOUT ? "no answer in time" : strerror(-last), a->tries,
			 a->tries == 1 ? "" : "s");
	return NULL;
}

int rasclient_query(const struct rasclient_query *q, struct ras_answer *ret, char *why,
		    size_t whylen)
{
	struct ctx c = {q, ret, why, whylen, 0};
	char *env = malloc(ENV_MAX);
	ssize_t n;
	pthread_t th;
	int r;

	memset(ret, 0, sizeof(*ret));
	why[0] = '\0';
	if (!env)
		return -ENOMEM;
	n = procfs_environ(q->pid, env, ENV_MAX);
	if (n < 0 || pidfd_is(q->pidfd, q->pid) < 0) {
		free(env);
		snprintf(why, whylen, "the rank ended");
		return -ESRCH;
	}
	(void)ras_env_parse(env, (size_t)n, &ret->env); /* a bad address: the default */
	free(env);
	if (!ret->env.enabled) {
		snprintf(why, whylen, "NCCL_RAS_ENABLE=0 in the ranks' environment");
		return -ENOTSUP;
	}
	r = pthread_create(&th, NULL, query_thread, &c);
	if (r) {
		snprintf(why, whylen, "no thread: %s", strerror(r));
		return -r;
	}
	pthread_join(th, NULL);
	if (c.rc) {
		free(ret->text);
		ret->text = NULL;
		ret->len = 0;
	}
	return c.rc;
}
