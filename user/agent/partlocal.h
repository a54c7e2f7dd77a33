/*
 * This host's part of a job (lib/jobview.h): its ranks as the detector sees them, and, for
 * ranks that wait, what they wait on: the TCP peer of the socket the main thread is blocked
 * reading (or writing), else sockets whose data the peer does not take or that await an
 * answer (sock_diag, os/sockdiag.c), each peer endpoint mapped to the rank here that holds it.
 * Also the answers to other hosts' edges that name an endpoint of ours.
 */
#ifndef FTBPF_PARTLOCAL_H
#define FTBPF_PARTLOCAL_H

#include <stdint.h>

#include "lib/jobview.h"

struct job;
struct sd_sock;

struct partlocal {
	struct sd_sock *socks; /* owned: the last sock_diag dump, sorted by inode */
	int nsocks;
	uint64_t dump_ns;	      /* when (one dump per scan at most) */
	int dump_err;		      /* its -errno, 0 fine */
	uint32_t addrs[JV_MAX_ADDRS]; /* this host's IPv4 addresses (not loopback) */
	int naddrs;
	struct pl_ep { /* endpoints of the job's ranks: local address -> rank */
		struct jv_endpoint ep;
		int rank;
	} * eps; /* owned */
	int neps, epcap;
	uint64_t dumps;
};

void partlocal_fini(struct partlocal *pl);
/* A sock_diag dump and the host's addresses, if none was made at now yet. */
void partlocal_refresh(struct partlocal *pl, uint64_t now);
/* The job's part here at now, in chunks of JV_MAX_RANKS ranks (the first holds the edges):
 * with_edges also looks at the waiting ranks' sockets (after partlocal_refresh). Returns
 * the number of chunks (0: no rank). */
int partlocal_build(struct partlocal *pl, const struct job *j, const char *node, uint64_t now,
		    int with_edges, struct jv_part *chunks, int max);
/* Edges of other hosts' parts that name an endpoint here: which rank of the job holds it
 * (-2: none), added to part (the first chunk). After partlocal_build with edges. */
void partlocal_resolve(struct partlocal *pl, const struct jv_part *others, int n,
		       struct jv_part *part);
/* Is ip one of this host's addresses (or loopback)? */
int partlocal_is_local_ip(const struct partlocal *pl, uint32_t ip);

#endif
