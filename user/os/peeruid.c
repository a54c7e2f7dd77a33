/* The uid of a connection's local peer: see peeruid.h. */
#include "os/peeruid.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* The TCP socket with the 4-tuple (peer's end: src = peer, dst = us), looked up by sock_diag. */
static int tcp4_owner(const struct sockaddr_in *us, const struct sockaddr_in *peer, uid_t *ret)
{
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 r;
	} req = {
	    .nh = {.nlmsg_len = sizeof(req),
		   .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		   .nlmsg_flags = NLM_F_REQUEST},
	    .r = {.sdiag_family = AF_INET, .sdiag_protocol = IPPROTO_TCP, .idiag_states = ~0u},
	};
	struct sockaddr_nl nl = {.nl_family = AF_NETLINK};
	char buf[8192];
	ssize_t n;
	int fd, r = -ENOENT;

	req.r.id.idiag_sport = peer->sin_port;
	req.r.id.idiag_dport = us->sin_port;
	req.r.id.idiag_src[0] = peer->sin_addr.s_addr;
	req.r.id.idiag_dst[0] = us->sin_addr.s_addr;
	req.r.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&nl, sizeof(nl)) < 0) {
		r = -errno;
		goto out;
	}
	n = recv(fd, buf, sizeof(buf), 0);
	if (n < 0) {
		r = -errno;
		goto out;
	}
	for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
	     h = NLMSG_NEXT(h, n)) {
		const struct inet_diag_msg *m;

		if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
			break; /* NLMSG_ERROR (not found) or NLMSG_DONE */
		m = NLMSG_DATA(h);
		*ret = m->idiag_uid;
		r = 0;
		break;
	}
out:
	close(fd);
	return r;
}

int peeruid_of(int fd, uid_t *ret)
{
	struct sockaddr_storage us, peer;
	socklen_t ul = sizeof(us), pl = sizeof(peer);

	if (getsockname(fd, (struct sockaddr *)&us, &ul) < 0 ||
	    getpeername(fd, (struct sockaddr *)&peer, &pl) < 0)
		return -errno;
	if (us.ss_family == AF_UNIX) {
		struct ucred c;
		socklen_t cl = sizeof(c);

		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &cl) < 0)
			return -errno;
		*ret = c.uid;
		return 0;
	}
	/* a peer on this host has its socket here (in this network namespace); one on another
	 * host is not found */
	if (us.ss_family == AF_INET)
		return tcp4_owner((struct sockaddr_in *)&us, (struct sockaddr_in *)&peer, ret);
	return -ENOENT; /* a family we do not look up */
}
