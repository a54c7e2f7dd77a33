/* The TCP sockets of ranks: see sockdiag.h. */
#include "os/sockdiag.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_SOCKS 262144

struct table {
	struct sd_sock *v;
	int n, cap;
};

static int v4(const __be32 *addr, int family, uint32_t *ret)
{
	if (family == AF_INET) {
		*ret = ntohl(addr[0]);
		return 1;
	}
	/* IPv6: only IPv4-mapped ::ffff:a.b.c.d (a dual-stack listener's IPv4 peers) */
	if (!addr[0] && !addr[1] && addr[2] == htonl(0xffff)) {
		*ret = ntohl(addr[3]);
		return 1;
	}
	return 0;
}

static int add(struct table *t, const struct inet_diag_msg *m, int len)
{
	struct sd_sock s = {0};
	struct rtattr *a;
	int rem = len - (int)NLMSG_ALIGN(sizeof(*m));

	if (!v4(m->id.idiag_src, m->idiag_family, &s.local.ip) ||
	    !v4(m->id.idiag_dst, m->idiag_family, &s.peer.ip))
		return 0;
	s.ino = m->idiag_inode;
	s.state = m->idiag_state;
	s.local.port = ntohs(m->id.idiag_sport);
	s.peer.port = ntohs(m->id.idiag_dport);
	s.rqueue = m->idiag_rqueue;
	s.wqueue = m->idiag_wqueue;
	for (a = (struct rtattr *)((char *)m + NLMSG_ALIGN(sizeof(*m))); RTA_OK(a, rem);
	     a = RTA_NEXT(a, rem))
		if (a->rta_type == INET_DIAG_INFO &&
		    (size_t)RTA_PAYLOAD(a) >= offsetof(struct tcp_info, tcpi_last_ack_recv)) {
			struct tcp_info ti = {0};

			memcpy(&ti, RTA_DATA(a),
			       (size_t)RTA_PAYLOAD(a) < sizeof(ti) ? (size_t)RTA_PAYLOAD(a)
								   : sizeof(ti));
			s.last_sent_ms = ti.tcpi_last_data_sent;
			s.last_recv_ms = ti.tcpi_last_data_recv;
		}
	if (!s.ino)
		return 0;
	if (t->n == t->cap) {
		int cap = t->cap ? t->cap * 2 : 256;
		struct sd_sock *nv;

		if (cap > MAX_SOCKS)
			return -E2BIG;
		nv = realloc(t->v, (size_t)cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		t->v = nv;
		t->cap = cap;
	}
	t->v[t->n++] = s;
	return 0;
}

static int dump_family(int fd, int family, struct table *t)
{
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 r;
	} req = {.nh = {.nlmsg_len = sizeof(req),
			.nlmsg_type = SOCK_DIAG_BY_FAMILY,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
		 .r = {.sdiag_family = (uint8_t)family,
		       .sdiag_protocol = IPPROTO_TCP,
		       .idiag_ext = 1 << (INET_DIAG_INFO - 1),
		       .idiag_states = ~0u}};
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	static char buf[65536];

	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *h;

		if (n < 0)
			return errno == EINTR ? 0 : -errno;
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			int r;

			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				return e->error ? e->error : -EIO;
			}
			if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
				continue;
			r = add(t, NLMSG_DATA(h), (int)(h->nlmsg_len - NLMSG_LENGTH(0)));
			if (r < 0)
				return r;
		}
	}
}

static int by_ino(const void *a, const void *b)
{
	uint32_t x = ((const struct sd_sock *)a)->ino, y = ((const struct sd_sock *)b)->ino;

	return x < y ? -1 : x > y;
}

int sockdiag_dump(struct sd_sock **ret, int *ret_n)
{
	struct table t = {0};
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG), r;

	if (fd < 0)
		return -errno;
	r = dump_family(fd, AF_INET, &t);
	if (r == 0)
		r = dump_family(fd, AF_INET6, &t);
	close(fd);
	if (r < 0) {
		free(t.v);
		return r;
	}
	if (t.n)
		qsort(t.v, (size_t)t.n, sizeof(*t.v), by_ino);
	*ret = t.v;
	*ret_n = t.n;
	return 0;
}

const struct sd_sock *sockdiag_find(const struct sd_sock *v, int n, uint32_t ino)
{
	struct sd_sock key = {.ino = ino};

	return n ? bsearch(&key, v, (size_t)n, sizeof(*v), by_ino) : NULL;
}

static int link_inode(const char *path, uint32_t *ret)
{
	char l[64];
	ssize_t n = readlink(path, l, sizeof(l) - 1);
	unsigned long ino;

	if (n < 0)
		return -errno;
	l[n] = 0;
	if (sscanf(l, "socket:[%lu]", &ino) != 1)
		return -ENOTSOCK;
	*ret = (uint32_t)ino;
	return 0;
}

int sockdiag_proc_inodes(int pid, uint32_t *ino, int max, int *ret_n)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((e = readdir(d)) && n < max) {
		char p[300];

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(p, sizeof(p), "/proc/%d/fd/%s", pid, e->d_name);
		if (link_inode(p, &ino[n]) == 0)
			n++;
	}
	closedir(d);
	*ret_n = n;
	return 0;
}

int sockdiag_fd_inode(int pid, int fd, uint32_t *ret_ino)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/%d/fd/%d", pid, fd);
	return link_inode(p, ret_ino);
}

int sockdiag_blocked_call(int pid, int *ret_nr, long *ret_arg0)
{
	char p[64], buf[256];
	ssize_t n;
	int fd, nr;
	unsigned long a0;

	snprintf(p, sizeof(p), "/proc/%d/syscall", pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = 0;
	if (!strncmp(buf, "running", 7))
		return -EAGAIN;
	if (sscanf(buf, "%d %lx", &nr, &a0) != 2)
		return -EIO;
	*ret_nr = nr;
	*ret_arg0 = (long)a0;
	return 0;
}
