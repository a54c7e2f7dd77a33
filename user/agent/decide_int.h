/*
 * The decider's parts (agent/decide.h is its interface), shared by decide.c (jobs, triggers,
 * failures, checkpoints), decide_store.c (what the store holds for a job, claims and puts),
 * decide_act.c (what is carried out on this node: signals, launcher, health check, slots,
 * fencing) and decide_view.c (events and JSON). Not for other modules.
 */
#ifndef FTBPF_DECIDE_INT_H
#define FTBPF_DECIDE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/decide.h"
#include "ftbpf/abi.h"
#include "lib/decisions.h"
#include "os/clock.h"

struct rank;
struct job;

#define MAX_JOBS 1024
/* One user's share of the table (root's jobs are limited by MAX_JOBS only): a user who
 * registers many jobs cannot keep another's from being followed. */
#define MAX_JOBS_PER_USER 64
#define MAX_NODES	  64
#define MAX_GENS	  256

struct node_report {
	char node[DEC_NODE_LEN];
	struct dec_report r;
};

struct node_member {
	char node[DEC_NODE_LEN];
	struct dec_member m;
};

/* One job as the decider follows it. */
struct djob {
	uid_t uid;
	char id[FTBPF_JOB_LEN];
	char prefix[DEC_KEY_LEN]; /* "jobs/<uid>/<id, '/' and '%' escaped>/" */
	/* what the store holds (load) */
	uint64_t gen; /* the current generation */
	struct dec_gen g;
	uint64_t fail_at[MAX_GENS]; /* when each failure generation was decided */
	int nfail;
	char fault_node[MAX_GENS][DEC_NODE_LEN];
	int nfault;
	uint64_t ck_n; /* the current generation's latest checkpoint request, 0 none */
	struct dec_ckpt ck;
	int ck_done;
	int64_t last_complete;
	struct node_report rep[MAX_NODES];
	int nrep;
	struct node_member mem[MAX_NODES];
	int nmem;
	/* this node's part */
	uint64_t applied_gen; /* generation whose consequences were carried out here */
	uint64_t seen_gen, seen_ck, seen_done;	/* decisions already logged */
	uint64_t claimed_gen_ms, claimed_ck_ms; /* a claim in flight (not yet in the store) */
	uint64_t req_ms, done_ms;		/* the current request: seen, completed (grace) */
	int final_claimed;
	uint64_t step_prev, step_prev_ms; /* the job's step rate */
	double steps_per_s;
	int retargets;
	int fenced;
	uint64_t idle_ms; /* since when no rank of the job lives here (0: some does) */
	char prev_mem[MAX_NODES][DEC_NODE_LEN]; /* members at the last look, with ranks */
	uint64_t prev_gen[MAX_NODES];		/* ... and the generation they were in */
	int nprev;
	char lost[MAX_NODES][DEC_NODE_LEN]; /* members lost (mesh, or their lease) */
	uint64_t lost_ms[MAX_NODES];
	uint64_t lost_gen[MAX_NODES]; /* the generation the lost node's ranks were in */
	int nlost;
	char suspect[MAX_NODES][DEC_NODE_LEN]; /* dead to the mesh, their lease being read */
	uint64_t suspect_ms[MAX_NODES];
	int nsuspect;
	pid_t health_pid;
	uint64_t health_ms;
	int health_failed;
	int launcher_stopped;
	uint64_t hang_claimed; /* the generation a hard timeout was claimed for */
	uint64_t done_at_ms;   /* when the current request was complete (wall clock: ranks started
			      * later are of a new run, not asked to exit) */
};

struct decider {
	const struct ftbpf_config *cfg;
	struct ranks *ranks;
	struct eventlog *el;
	struct timersvc *ts;
	struct store *st;
	char node[DEC_NODE_LEN];
	uint64_t preempt_mask;
	struct djob *jobs[MAX_JOBS]; /* owned */
	int njobs;
	uint64_t claims, retargets, fences, preemptions, ignored_signals, health_failures,
	    unavailable, jobs_refused;
};

/* ---- what the local ranks do ---- */
struct local {
	int ranks, saved, live;
	int64_t max_step;
};

static inline uint64_t dc_now_ms(void)
{
	return clock_real_ns() / 1000000;
}

/* decide.c (jobs, triggers, failures, checkpoints, ticks) */
/* Did rank k's process start at or after wall_ms (a launcher's restarted worker)? */
int dc_started_since(const struct rank *k, uint64_t wall_ms);
/* The job as the decider follows it; create: add it when new (NULL: none, or no room). */
struct djob *dc_find(struct decider *d, uid_t uid, const char *id, int create);
/* What the job's ranks on this node do (target >= 0: how many saved it). */
void dc_local_view(const struct job *j, int64_t target, struct local *l);

/* decide_store.c (reading and writing the store) */
/* The job's key prefix in the store: "jobs/<uid>/<id, '/' and '%' escaped>/". */
void dc_job_prefix(char *buf, size_t len, uid_t uid, const char *id);
/* Read what the store holds for the job (generation, checkpoint, reports, members). */
void dc_load(struct decider *d, struct djob *dj);
/* The member record of node, NULL when it has none. */
const struct node_member *dc_member(const struct djob *dj, const char *node);
/* Does the current generation leave node out? */
int dc_excluded(const struct djob *dj, const char *node);
/* May this node decide now (the store is reachable)? */
int dc_can_decide(struct decider *d);
/* Claim rel (relative to the job's prefix) with value: the first claimer wins. */
int dc_claim(struct decider *d, struct djob *dj, const char *rel, const char *value);
/* Put rel with value (leased: it goes when this agent's lease does). */
void dc_put(struct decider *d, struct djob *dj, const char *rel, const char *value, int leased);

/* decide_act.c (carrying decisions out here) */
/* The health check's outcome, when it ended: a failed node leaves. */
void dc_health_check_poll(struct decider *d, struct djob *dj, struct job *j);
/* A new generation here: end the older ranks, leave when left out. */
void dc_apply_generation(struct decider *d, struct djob *dj, struct job *j);
/* Write what rank k is told into its slot (only what changed). */
void dc_write_slot(struct decider *d, struct djob *dj, struct rank *k);
void dc_write_slots(struct decider *d, struct djob *dj, struct job *j);
/* Fence the job's ranks here when the store was unreachable for fence_after: 1 fenced. */
int dc_fence(struct decider *d, struct djob *dj, struct job *j);
/* What rank k is told to do: go on (FTBPF_ACT_NONE), exit for a restart, or stop. */
uint32_t dc_told_to_exit(const struct decider *d, const struct djob *dj, const struct rank *k);

/* decide_view.c (events and JSON) */
/* Log the job's current decision of this kind as an event. */
void dc_log_decision(struct decider *d, struct djob *dj, const char *kind);

#endif
