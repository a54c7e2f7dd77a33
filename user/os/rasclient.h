/*
 * A client of NCCL's RAS service (proto/ras_proto.h), as a rank sees it: in the rank's network
 * namespace (a container's localhost is its own), at the address its environment gives. The
 * answer is trusted only from a process of the job: every NCCL process of a user listens on the
 * same port (SO_REUSEPORT), so a connection may reach another job's rank, or a stopped one, and
 * any process of that namespace could have taken the port first. The server end of each
 * connection is looked up (sock_diag) and must be held by one of the job's ranks; otherwise the
 * client connects again, a bounded number of times. Blocking: run it off the event loop (the
 * inspector's worker). Linux 5.8+ (setns on a pidfd).
 */
#ifndef FTBPF_RASCLIENT_H
#define FTBPF_RASCLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "proto/ras_proto.h"

#define RAS_TRIES	     16	  /* connections tried for one query */
#define RAS_HELLO_TIMEOUT_MS 1000 /* a server that does not greet within it is stuck (stopped) */

struct rasclient_query {
	int pid, pidfd;	     /* the rank whose namespace and environment are used */
	const int *job_pids; /* the job's live ranks on this host: one must be the server */
	int njob;
	uint64_t deadline_ns; /* CLOCK_MONOTONIC */
};

struct ras_answer {
	struct ras_env env; /* what the rank's environment said */
	int server_pid;	    /* the job's rank that answered */
	int json;	    /* the reply is JSON (NCCL 2.28.7+), else text */
	int tries;	    /* connections made */
	int wrong_server;   /* ... that reached a process not of the job */
	char *text;	    /* the reply, NUL-terminated (the caller frees) */
	size_t len;
};

/*
 * Ask RAS for its STATUS. 0 and *ret; -ENOTSUP (NCCL_RAS_ENABLE=0), -ECONNREFUSED (nothing
 * listens), -EPERM (only processes not of the job answered), -ETIMEDOUT, -ESRCH (the rank
 * ended), or -errno; why says what happened. *ret's env and counts are filled on failure too.
 */
int rasclient_query(const struct rasclient_query *q, struct ras_answer *ret, char *why,
		    size_t whylen);

#endif
