/*
 * One decision look of one job, as one pure function: the order of the rules of
 * lib/decide_policy.h (observe, fence, member record, vanished and suspect members, the
 * generation, failures, the checkpoint in progress, a pending preemption). The agent
 * (agent/decide.c) gathers the records, the ranks and the clocks, calls dp_look and carries out
 * what it returns; a simulator or a test can run the same pass over records of its own.
 */
#ifndef FTBPF_DECIDE_LOOK_H
#define FTBPF_DECIDE_LOOK_H

#include "lib/decide_policy.h"

/* What a look reads besides the records, the ranks and the memory. */
struct dp_look_in {
	struct dp_now now;
	int64_t own_lease;	    /* this agent's lease in the store (0 none) */
	const struct dp_hang *hang; /* the job is past its hard timeout (the verdict), NULL not */
	/* what a suspect member's lease has left, as the store last read it: 0 and *ret, or
	 * -errno (nothing recent: a read was asked for). NULL: never known */
	int (*lease_left)(void *ctx, const struct dp_node_member *m, struct dp_lease *ret);
	void *ctx;
};

/* The look's outcome besides out and the memory. */
struct dp_look_res {
	int fenced; /* the job is held or fenced here: nothing else was decided */
	int retargets;
};

/* One look: the rules in their order, over records r (read-only), ranks (the agent copies back
 * generation, fail_seen, killed_by_agent, preempted) and m; what to do in out (appended).
 * 0, or -ENOMEM (the suspects' leases could not be held: they wait for the next look; the rest
 * was looked at). */
int dp_look(const struct dp_config *c, const struct dp_records *r, struct dp_memory *m,
	    struct dp_rank *ranks, int n, const struct dp_look_in *in, struct dp_out *out,
	    struct dp_look_res *res);

#endif
