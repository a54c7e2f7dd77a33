/*
 * The waits-for graph between the ranks of a job: rank A waits for B when A is blocked on a
 * socket whose other end B holds (or A's data sits unread in B's socket...). The culprit is
 * the node the others wait on, transitively, that itself waits on no rank. Pure logic on
 * integer node ids chosen by the caller; tests/unit/test_waitsfor.c.
 */
#ifndef FTBPF_WAITSFOR_H
#define FTBPF_WAITSFOR_H

/* Node ids: a rank is its rank number (>= 0). WF_OUTSIDE: an endpoint that is no rank's (a
 * data server, a store outside the job): a rank waiting only on it waits on no rank. An
 * endpoint not resolved to a rank, on host h (an index of the caller's): WF_HOST(h). */
#define WF_OUTSIDE    (-1)
#define WF_HOST(h)    (-2 - (h))
#define WF_IS_HOST(n) ((n) <= -2)
#define WF_HOST_OF(n) (-2 - (n))

#define WF_MAX_EDGES 8192

struct wf_edge {
	int from, to;
};

struct wf_result {
	int n; /* culprit nodes (ranks, or WF_HOST(h)) */
	int nodes[8];
	int waiters; /* ranks that wait on them, directly or through others */
	int cycle;   /* the waiting ranks form a cycle with no way out (a deadlock) */
	int cycle_nodes[8];
	int ncycle;
};

/*
 * The nodes every waiting rank leads to: of the nodes that wait on no rank (no edge, or edges
 * only to WF_OUTSIDE) and that some rank waits on, the one(s) reached from the most ranks.
 * 0 with out->n culprits (0 when the graph names none), or -EINVAL (too many edges).
 */
int waitsfor_eval(const struct wf_edge *e, int nedges, struct wf_result *out);

#endif
