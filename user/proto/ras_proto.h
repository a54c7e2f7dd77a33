/*
 * NCCL's RAS (Reliability, Availability, Serviceability) service, as a client reads it: every
 * NCCL 2.24+ process listens on NCCL_RAS_ADDR (default localhost:28028) and answers STATUS with
 * what its RAS network knows of every communicator: the ranks that answered (host, pid, their
 * collective counts, errors) and the missing ones (unresponsive, considered dead). JSON since
 * 2.28.7 ("SET FORMAT json"); text before. This module is the pure side: the ranks'
 * environment, the JSON reply (parsed defensively, every field checked for its type and range;
 * fuzzed in tests/fuzz/fuzz_ras.c), and what of it concerns one job. The transport is
 * os/rasclient.c.
 */
#ifndef FTBPF_RAS_PROTO_H
#define FTBPF_RAS_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define RAS_DEFAULT_ADDR "localhost:28028"
#define RAS_REPLY_MAX	 (8u << 20) /* a STATUS reply read at most (thousands of ranks) */
#define RAS_COMMS_MAX	 8	    /* communicators of the job kept from one reply */
#define RAS_LIST_MAX	 16	    /* ranks kept per list (missing, behind, in error) */
#define RAS_HOST_LEN	 64

/* What a process's environment says of RAS: enabled (NCCL_RAS_ENABLE not 0) and where it
 * listens (NCCL_RAS_ADDR, else RAS_DEFAULT_ADDR). */
struct ras_env {
	int enabled;
	char addr[128];
};
/* env: NUL-separated "K=V" strings (/proc/PID/environ). 0, or -EINVAL (an address too long or
 * with bytes no host name has: *ret keeps the default). */
int ras_env_parse(const char *env, size_t len, struct ras_env *ret);
/* Split "host:port", "[v6]:port" or "host" (port 28028) into host and port. 0 or -EINVAL. */
int ras_addr_split(const char *addr, char *host, size_t hostlen, char *port, size_t portlen);

/* A rank as RAS saw it (fields a list does not use stay 0). */
struct ras_rank {
	int rank;
	int pid; /* in its own pid namespace; -1 unknown */
	char host[RAS_HOST_LEN];
	int unresponsive, dead;	    /* a missing rank: no answer / considered dead */
	int async_error, abort;	    /* an answering rank in error */
	uint64_t collectives, most; /* a rank behind: its collectives, the most of any rank */
};

struct ras_comm {
	char hash[24]; /* "0x..." as NCCL prints it */
	int size, ranks_count, missing_count;
	int local; /* its ranks whose pid is one the caller gave (the job's, on this host) */
	int nmissing, nbehind, nerror;
	struct ras_rank missing[RAS_LIST_MAX], behind[RAS_LIST_MAX], error[RAS_LIST_MAX];
};

struct ras_report {
	char nccl_version[24];
	int comms_total; /* communicators in the reply */
	int ncomms;	 /* ... of them the job's, kept (at most RAS_COMMS_MAX) */
	int repaired;	 /* the reply needed NCCL 2.28.7-2.28.9's missing comma put back */
	double collection_s;
	int timeouts;
	struct ras_comm comms[RAS_COMMS_MAX];
};

/*
 * Parse a JSON STATUS reply of len bytes (need not be NUL-terminated). Communicators are kept
 * when one of their ranks' pids is in pids[0..npids) (the job's ranks on this host, as their
 * own pid namespace numbers them); npids 0 keeps all. 0 and *ret; -EINVAL (not JSON, or not
 * what NCCL sends) or -E2BIG (longer than RAS_REPLY_MAX) with what was wrong in why.
 */
int ras_json_parse(const char *text, size_t len, const int *pids, int npids, struct ras_report *ret,
		   char *why, size_t whylen);

/* Does this first line of a reply say the server speaks our protocol ("SERVER PROTOCOL n")? */
int ras_is_server_hello(const char *line);
/* Does the answer to "SET FORMAT json" accept it ("OK")? 1 yes, 0 no (an older NCCL's
 * "ERROR: Unknown command": text only). */
int ras_json_accepted(const char *line);

#endif
