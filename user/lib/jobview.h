/*
 * A job across hosts: each agent's part of a job (its ranks, their states and progress, NCCL
 * sequence numbers, what each waiting rank waits on) and the one verdict assembled from every
 * part: hung or not, the culprit rank(s) and the host that runs them, and why. The verdict is
 * the detector's hang rule (lib/detector.c) over the union of the parts, refined by the
 * waits-for graph (lib/waitsfor.c). Pure logic; tests/unit/test_jobview.c.
 */
#ifndef FTBPF_JOBVIEW_H
#define FTBPF_JOBVIEW_H

#include <stdint.h>

#include "ftbpf/abi.h"
#include "lib/cadence.h"
#include "lib/detector.h"

#define JV_MAX_RANKS 12 /* ranks of one job in one part (a host with more sends chunks) */
#define JV_MAX_EDGES 12
#define JV_MAX_RES   8
#define JV_MAX_ADDRS 4
#define JV_NODE_LEN  32
#define JV_TEXT_LEN  96
#define JV_MAX_PARTS 64 /* parts one verdict reads at most: beyond, ranks count as missing */

struct jv_endpoint {
	uint32_t ip; /* IPv4, host byte order */
	uint16_t port;
};

/* How an edge (rank A waits on the socket's other end) was seen. */
enum jv_edge_how {
	JV_EDGE_RECV = 1,  /* A's main thread is blocked reading that socket */
	JV_EDGE_SENDQ = 2, /* A's data sits unacknowledged in that socket: the peer does not read */
	JV_EDGE_REPLY = 3, /* A sent on it after it last heard from it (A awaits an answer) */
};

struct jv_edge {
	int32_t from_rank;
	int32_t to_rank; /* -1: not resolved by the part's host */
	struct jv_endpoint local, peer;
	uint8_t how; /* enum jv_edge_how */
};

/* An endpoint of the part's host that another part's edge names, and the rank holding it. */
struct jv_res {
	struct jv_endpoint ep;
	int32_t rank;
};

#define JV_R_EXITED  0x1
#define JV_R_KILLED  0x2  /* ended by its agent's action, or a hung run: never a failure */
#define JV_R_CULPRIT 0x4  /* its host's own verdict named it */
#define JV_R_COMM    0x8  /* comm_id/comm_seq are set */
#define JV_R_MPI     0x10 /* ... of an MPI communicator */
#define JV_R_GRAPH   0x20 /* ... its CUDA graph launches */

struct jv_rank {
	int32_t rank;
	uint32_t pid;
	uint8_t state; /* enum rank_state */
	uint8_t flags; /* JV_R_* */
	int16_t syscall;
	uint8_t score;
	int32_t exit_code;
	uint32_t
	    progress_age_ms; /* since its last progress (or adoption), when the part was made */
	uint32_t state_age_ms;
	uint32_t exit_age_ms;
	uint64_t comm_id, comm_seq; /* its latest NCCL communicator, collectives issued on it */
	uint64_t comm_count;	    /* its latest collective there: elements, data type, call */
	uint8_t comm_dtype, comm_api;
	char reason[JV_TEXT_LEN]; /* its host's words; "" when the part did not carry them */
};

struct jv_part {
	char node[JV_NODE_LEN]; /* the host: its mesh address "IP:PORT" */
	uint32_t uid;
	char job[FTBPF_JOB_LEN];
	int32_t world_size; /* -1 unknown */
	uint8_t chunk, nchunks;
	uint32_t addrs[JV_MAX_ADDRS]; /* the host's IPv4 addresses (where its ranks' sockets are) */
	int naddrs;
	int nranks, nedges, nres;
	struct jv_rank ranks[JV_MAX_RANKS];
	struct jv_edge edges[JV_MAX_EDGES];
	struct jv_res res[JV_MAX_RES];
	/* step cadence of its ranks (a cadence part: ranks, edges and resolutions are empty) */
	int ncad;
	struct cad_summary cad[JV_MAX_RANKS];
	/* a cadence part's collective arrivals: the host's first arrival of each of a run of the
	 * job's collectives, in the sender's clock (its err_s unused) */
	struct arr_first first;
	/* receiver's side */
	uint64_t at_ns; /* when it was made (this host's part) or arrived (CLOCK_MONOTONIC) */
	int stale;	/* expired: its ranks count as missing, its host is where they were */
};

/* A host of the cluster, for endpoints no part resolves (its agent may be down). */
struct jv_host {
	char node[JV_NODE_LEN];
	uint32_t ip;
	int down; /* the mesh holds it dead or gone */
};

struct jv_verdict {
	int valid; /* made from more than this host's part, or refined by the graph */
	int hosts; /* parts (hosts) it was made from, this one included */
	int ranks; /* ranks known */
	int world; /* the job's world size, -1 unknown */
	int hung, hard, failed, live;
	uint64_t no_progress_ns;
	enum det_rule rule; /* the detector's evidence; JV_RULE_GRAPH when the graph named it */
	int graph;	    /* the waits-for graph named the culprit */
	int edges;	    /* edges in the graph */
	int n_culprits;
	int culprit_ranks[DET_MAX_CULPRITS];
	char culprit_node[JV_NODE_LEN]; /* "" none */
	char culprit_state[16];
	int culprit_here; /* the culprit runs on this host */
	char why[512];
	char missing[160]; /* ranks no fresh part covers, and where they were last seen */
	int nmissing;
	int pending; /* the graph leads to an endpoint of a host whose part did not say whose */
	int hold;    /* (the agent's) hung, but parts are missing for a moment yet: report later */
	struct det_job det; /* the detector's verdict on the union (culprits: union indices) */
};

/*
 * The job's verdict from its parts: parts[self] is this host's own (made at now), the others
 * arrived at their at_ns. hosts: the cluster's hosts (for endpoints on a host without a part),
 * may be NULL. pace: the job's pace as this host measures it (soft_timeout = auto; NULL none):
 * its collective rule applies over every host's ranks, its step rule when they are all known. Ranks claimed by two parts are taken from the first (the caller orders its own
 * first and rejected the rest already). Returns 0, or -ENOMEM.
 */
int jobview_eval(const struct jv_part *parts, int nparts, int self, const struct jv_host *hosts,
		 int nhosts, uint64_t now, const struct det_params *p, const struct det_pace *pace,
		 struct jv_verdict *out);

/* "ranks 4-5, 7" into buf from a sorted list. */
void jobview_ranges(const int *ranks, int n, char *buf, int len);

/* The 0-based rank index of a part's rank, -1 when it has none. */
int jobview_part_rank(const struct jv_part *pt, int rank);

#endif
