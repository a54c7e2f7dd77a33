/* This host's part of a job: see partlocal.h. */
#include "agent/partlocal.h"

#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "lib/ranks.h"
#include "os/sockdiag.h"

#define MS		1000000ull
#define MAX_INODES	4096 /* sockets of one rank looked at */
#define EDGES_PER_RANK	3
#define SENDQ_STUCK_MS	1000  /* unacknowledged data this old: the peer does not read */
#define REPLY_WINDOW_MS 10000 /* a socket heard from this long before the stall still counts */

void partlocal_fini(struct partlocal *pl)
{
	free(pl->socks);
	free(pl->eps);
	memset(pl, 0, sizeof(*pl));
}

static void host_addrs(struct partlocal *pl)
{
	struct ifaddrs *ifa, *i;

	pl->naddrs = 0;
	if (getifaddrs(&ifa) < 0)
		return;
	for (i = ifa; i && pl->naddrs < JV_MAX_ADDRS; i = i->ifa_next) {
		uint32_t ip;

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		ip = ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);
		if ((ip >> 24) != 127)
			pl->addrs[pl->naddrs++] = ip;
	}
	freeifaddrs(ifa);
}

void partlocal_refresh(struct partlocal *pl, uint64_t now)
{
	if (pl->dump_ns == now)
		return;
	free(pl->socks);
	pl->socks = NULL;
	pl->nsocks = 0;
	pl->dump_err = sockdiag_dump(&pl->socks, &pl->nsocks);
	pl->dump_ns = now;
	pl->dumps++;
	host_addrs(pl);
}

int partlocal_is_local_ip(const struct partlocal *pl, uint32_t ip)
{
	if ((ip >> 24) == 127)
		return 1;
	for (int i = 0; i < pl->naddrs; i++)
		if (pl->addrs[i] == ip)
			return 1;
	return 0;
}

static uint32_t ms_since(uint64_t now, uint64_t t)
{
	uint64_t d = now > t ? (now - t) / MS : 0;

	return d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
}

/* rank k ended: its job was hung as it began to end (lib/jobend.h), or the agent ended it */
static int ended_not_failed(const struct job *j, const struct rank *k)
{
	return k->s.exited && (k->s.killed || j->hang_end.by);
}

static void rank_of(const struct job *j, const struct rank *k, uint64_t now, struct jv_rank *r)
{
	const struct det_sample *s = &k->s;
	uint64_t base = s->progress_ns > s->adopted_ns ? s->progress_ns : s->adopted_ns;
	const struct det_comm *c = NULL;

	memset(r, 0, sizeof(*r));
	r->rank = k->id.rank;
	r->pid = (uint32_t)k->pid;
	r->state = (uint8_t)k->d.state;
	r->flags = (s->exited ? JV_R_EXITED : 0) | (ended_not_failed(j, k) ? JV_R_KILLED : 0) |
		   (k->d.culprit ? JV_R_CULPRIT : 0);
	r->syscall = (int16_t)(k->d.syscall >= -1 && k->d.syscall <= 1023 ? k->d.syscall : -1);
	r->score = (uint8_t)(k->d.score < 0 ? 0 : k->d.score > 100 ? 100 : k->d.score);
	r->exit_code = s->exit_code;
	r->progress_age_ms = ms_since(now, base);
	r->state_age_ms = ms_since(now, k->d.state_since_ns);
	r->exit_age_ms = s->exited ? ms_since(now, s->exit_ns) : 0;
	/* the job's communicator, the one its collectives are followed on; else the latest */
	for (int i = 0; i < s->ncomm && k->job && k->job->arr.comm; i++)
		if (!(s->comm[i].flags & DET_COMM_DEVICE) &&
		    (s->comm[i].id ? s->comm[i].id : 1) == k->job->arr.comm)
			c = &s->comm[i];
	for (int i = 0; i < s->ncomm && !c; i++)
		if (s->comm[i].seq && !(s->comm[i].flags & DET_COMM_DEVICE) &&
		    (!c || s->comm[i].last_ns > c->last_ns))
			c = &s->comm[i];
	if (c && c->seq && c->seq < (1ull << 48)) {
		r->flags |= JV_R_COMM | (c->flags & DET_COMM_MPI ? JV_R_MPI : 0) |
			    (c->flags & DET_COMM_GRAPH ? JV_R_GRAPH : 0);
		r->comm_id = c->id;
		r->comm_seq = c->seq;
		r->comm_count = c->count;
		r->comm_api = (uint8_t)(c->api < 256 ? c->api : 0);
		r->comm_dtype = (uint8_t)(c->dtype < 256 ? c->dtype : 0);
	}
	snprintf(r->reason, sizeof(r->reason), "%.*s", (int)sizeof(r->reason) - 1, k->d.reason);
}

/* The job's ranks' endpoints (every socket of every live member). */
static void collect_eps(struct partlocal *pl, const struct job *j)
{
	static uint32_t ino[MAX_INODES];

	pl->neps = 0;
	for (int m = 0; m < j->nmembers; m++) {
		const struct rank *k = j->members[m];
		int n = 0;

		if (k->s.exited || sockdiag_proc_inodes(k->pid, ino, MAX_INODES, &n) < 0)
			continue;
		for (int i = 0; i < n; i++) {
			const struct sd_sock *s = sockdiag_find(pl->socks, pl->nsocks, ino[i]);

			if (!s || !s->local.port)
				continue;
			if (pl->neps == pl->epcap) {
				int cap = pl->epcap ? pl->epcap * 2 : 256;
				struct pl_ep *ne = realloc(pl->eps, (size_t)cap * sizeof(*ne));

				if (!ne)
					return;
				pl->eps = ne;
				pl->epcap = cap;
			}
			pl->eps[pl->neps].ep.ip = s->local.ip;
			pl->eps[pl->neps].ep.port = s->local.port;
			pl->eps[pl->neps].rank = k->id.rank;
			pl->neps++;
		}
	}
}

/* The rank here holding endpoint ep; -2 when it is an address of this host but no rank's,
 * -1 when it is another host's. */
static int who_holds(const struct partlocal *pl, struct jv_endpoint ep)
{
	for (int i = 0; i < pl->neps; i++)
		if (pl->eps[i].ep.port == ep.port &&
		    (pl->eps[i].ep.ip == ep.ip || (!pl->eps[i].ep.ip && ep.ip)))
			return pl->eps[i].rank;
	return partlocal_is_local_ip(pl, ep.ip) ? -2 : -1;
}

static int is_read(int nr)
{
	return nr == SYS_read || nr == SYS_readv || nr == SYS_recvfrom || nr == SYS_recvmsg ||
	       nr == SYS_recvmmsg || nr == SYS_pread64;
}

static int is_write(int nr)
{
	return nr == SYS_write || nr == SYS_writev || nr == SYS_sendto || nr == SYS_sendmsg ||
	       nr == SYS_sendmmsg;
}

static int add_edge(struct partlocal *pl, struct jv_part *pt, const struct rank *k,
		    const struct sd_sock *s, int how)
{
	struct jv_edge *e;

	if (pt->nedges == JV_MAX_EDGES || s->state != TCP_ESTABLISHED || !s->peer.port)
		return 0;
	e = &pt->edges[pt->nedges];
	e->from_rank = k->id.rank;
	e->local = (struct jv_endpoint){s->local.ip, s->local.port};
	e->peer = (struct jv_endpoint){s->peer.ip, s->peer.port};
	e->how = (uint8_t)how;
	e->to_rank = who_holds(pl, e->peer);
	if (e->to_rank == k->id.rank)
		return 0; /* a socket to itself */
	pt->nedges++;
	return 1;
}

/* What a waiting rank waits on. */
static void rank_edges(struct partlocal *pl, struct jv_part *pt, const struct rank *k, uint64_t now)
{
	static uint32_t ino[MAX_INODES];
	uint32_t stall_ms =
	    ms_since(now, k->s.progress_ns > k->s.adopted_ns ? k->s.progress_ns : k->s.adopted_ns);
	int n = 0, nr, found = 0;
	long fd;

	if (k->d.state == RS_BLOCKED && sockdiag_blocked_call(k->pid, &nr, &fd) == 0 &&
	    (is_read(nr) || is_write(nr))) {
		uint32_t i;
		const struct sd_sock *s;

		if (sockdiag_fd_inode(k->pid, (int)fd, &i) == 0 &&
		    (s = sockdiag_find(pl->socks, pl->nsocks, i)))
			found = add_edge(pl, pt, k, s, is_read(nr) ? JV_EDGE_RECV : JV_EDGE_SENDQ);
	}
	if (found || sockdiag_proc_inodes(k->pid, ino, MAX_INODES, &n) < 0)
		return;
	/* no single socket named by the syscall (a futex, an event loop's epoll): data the
	 * peer does not take, else sockets that await an answer */
	for (int pass = 0; pass < 2 && !found; pass++)
		for (int i = 0; i < n && found < EDGES_PER_RANK; i++) {
			const struct sd_sock *s = sockdiag_find(pl->socks, pl->nsocks, ino[i]);

			if (!s)
				continue;
			if (pass == 0 && s->wqueue && s->last_sent_ms >= SENDQ_STUCK_MS)
				found += add_edge(pl, pt, k, s, JV_EDGE_SENDQ);
			else if (pass == 1 && s->last_sent_ms + 1 < s->last_recv_ms &&
				 s->last_recv_ms < stall_ms + REPLY_WINDOW_MS && !s->rqueue)
				found += add_edge(pl, pt, k, s, JV_EDGE_REPLY);
		}
}

static int waits(const struct rank *k)
{
	return !k->s.exited && k->d.state != RS_RUNNING && k->d.state != RS_SPINNING &&
	       k->d.state != RS_STOPPED && k->d.state != RS_ZOMBIE;
}

int partlocal_build(struct partlocal *pl, const struct job *j, const char *node, uint64_t now,
		    int with_edges, struct jv_part *chunks, int max)
{
	int nc = 0, world = -1;

	for (int m = 0; m < j->nmembers; m++)
		if (j->members[m]->id.world_size > world)
			world = j->members[m]->id.world_size;
	if (with_edges && !pl->dump_err)
		collect_eps(pl, j);
	for (int m = 0; m < j->nmembers; m++) {
		const struct rank *k = j->members[m];
		struct jv_part *pt;
		int dup = 0;

		/* an exited incarnation of a rank that lives again: the live one speaks */
		for (int o = 0; o < j->nmembers && k->s.exited; o++)
			dup |= o != m && j->members[o]->id.rank == k->id.rank &&
			       !j->members[o]->s.exited;
		if (dup || k->id.rank < 0)
			continue;
		if (!nc || chunks[nc - 1].nranks == JV_MAX_RANKS) {
			if (nc == max)
				break;
			pt = &chunks[nc++];
			memset(pt, 0, sizeof(*pt));
			snprintf(pt->node, sizeof(pt->node), "%s", node);
			pt->uid = (uint32_t)j->uid;
			snprintf(pt->job, sizeof(pt->job), "%s", j->id);
			pt->world_size = world;
			pt->at_ns = now;
			memcpy(pt->addrs, pl->addrs, sizeof(pt->addrs));
			pt->naddrs = pl->naddrs;
		}
		pt = &chunks[nc - 1];
		rank_of(j, k, now, &pt->ranks[pt->nranks++]);
		if (with_edges && !pl->dump_err && waits(k) && pt->nedges < JV_MAX_EDGES)
			rank_edges(pl, pt, k, now);
	}
	for (int i = 0; i < nc; i++) {
		chunks[i].chunk = (uint8_t)i;
		chunks[i].nchunks = (uint8_t)nc;
	}
	return nc;
}

void partlocal_resolve(struct partlocal *pl, const struct jv_part *others, int n,
		       struct jv_part *part)
{
	for (int i = 0; i < n; i++)
		for (int k = 0; k < others[i].nedges && part->nres < JV_MAX_RES; k++) {
			const struct jv_edge *e = &others[i].edges[k];
			int dup = 0, who;

			if (e->to_rank != -1 || others[i].stale ||
			    !partlocal_is_local_ip(pl, e->peer.ip) || (e->peer.ip >> 24) == 127)
				continue;
			for (int r = 0; r < part->nres; r++)
				dup |= part->res[r].ep.ip == e->peer.ip &&
				       part->res[r].ep.port == e->peer.port;
			if (dup)
				continue;
			who = who_holds(pl, e->peer);
			/* a rank of ours (in this part), or no rank's */
			if (who >= 0 && jobview_part_rank(part, who) < 0)
				continue;
			part->res[part->nres].ep = e->peer;
			part->res[part->nres].rank = who >= 0 ? who : -2;
			part->nres++;
		}
}
