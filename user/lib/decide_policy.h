/*
 * The decision policy, pure: no I/O, no clock of its own, no process. The agent
 * (agent/decide*.c) gathers the inputs - what the store holds for a job (struct dp_records),
 * what the job's local ranks do (struct dp_rank, read from their slots and the kernel's
 * events), the clocks (struct dp_now) - calls the rules below, and carries out what they
 * return (struct dp_out: records to claim or put, signals, the launcher, events). What the
 * decider remembers of a job between two looks is struct dp_memory; only these rules change
 * it. Every rule named in docs/decisions.md is one function here with a unit test
 * (tests/unit/test_decide_policy.c).
 */
#ifndef FTBPF_DECIDE_POLICY_H
#define FTBPF_DECIDE_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "ftbpf/slot.h"
#include "lib/decisions.h"

#define DP_MAX_GENS 256
#define DP_MAX_ACTS 512
#define DP_MAX_PUTS 8

/* The clocks of one look: intervals use mono (I7); wall only stamps records that other hosts
 * read (when a fault happened). */
struct dp_now {
	uint64_t mono_ms;
	uint64_t wall_ms;
};

struct dp_config {
	char node[DEC_NODE_LEN]; /* this node */
	char mesh[DEC_NODE_LEN]; /* its mesh address, as peers know it ("" no mesh) */
	int shared;		 /* the store is shared with other nodes (etcd) */
	uint64_t preempt_mask;	 /* signals that mean preemption (bit n: signal n) */
	int margin;		 /* checkpoint_margin */
	int restart_exit_code, stop_exit_code;
	double preempt_grace_s;
	int max_restarts; /* per restart_window_s; -1 no limit */
	double restart_window_s;
	int node_fault_limit;
	double recovery_wait_s;
	double fence_after_s;
	int lease_ttl_s;
	int health_check; /* a health check is configured */
	/* cut off from the shared store this long, a node holds its ranks (I6: before the others
	 * may act without it, when its lease runs out); fence_after_s later it ends them */
	double hold_after_s;
};

struct dp_node_report {
	char node[DEC_NODE_LEN];
	struct dec_report r;
};

struct dp_node_member {
	char node[DEC_NODE_LEN];
	struct dec_member m;
};

/* What another agent's lease had left, as read from the store (lease_left). */
struct dp_lease {
	int known;	  /* 0: nothing recent (a read was asked for) */
	int64_t left_s;	  /* -1: expired */
	uint64_t at_mono; /* when it was read */
};

/* What the store holds for the job (read each look). */
struct dp_records {
	int reachable;		   /* the store answered recently */
	int64_t lease;		   /* this agent's lease in the store now (0 none) */
	uint64_t lease_renewed_ms; /* when it was last granted or renewed (mono, 0 never) */
	uint64_t unreachable_ms;   /* for how long it has not (mono), 0 reachable */
	uint64_t run;		   /* the run these records are of (0: none yet) */
	int members_only; /* node keys and a shared store: records count only by the run's members */
	int64_t run_resume; /* where the run began: the job's last complete checkpoint */
	int run_known;	    /* the run's record is in the store (else run_resume is not) */
	uint64_t gen;	    /* the current generation (0: the first) */
	struct dec_gen g;   /* how it began (when gen > 0) */
	uint64_t fail_at[DP_MAX_GENS]; /* when each failure generation was decided (wall) */
	int nfail;
	char fault_node[DP_MAX_GENS][DEC_NODE_LEN];
	int nfault;
	uint64_t ck_n; /* the current generation's latest checkpoint request, 0 none */
	struct dec_ckpt ck;
	int bound;	     /* its step is bound (bind/G/N) */
	int64_t bind_target; /* ... at this step */
	int ck_done;
	int done_refused;      /* its completion record is there but is not one (malformed, another
			   * step): replaced (a put) when the request completes */
	uint64_t done_at_ms;   /* when it was complete (wall) */
	int64_t last_complete; /* the generation's resume step, or a later complete one in it */
	/* The node tables, of any size: each has its count and its capacity, grows by doubling
	 * and is kept across looks (lib/decide_records.h adds to them, empties and frees them).
	 * rep and mem are sorted by node name (strcmp), as dr_add_report and dr_add_member keep
	 * them: a node is found by binary search (dp_member, dp_report). */
	struct dp_node_report *rep; /* reports on request ck_n */
	int nrep, rep_cap;
	struct dp_node_member *mem;
	int nmem, mem_cap;
	/* nodes left out of the current generation as it runs (out/G/NODE), and their ranks */
	char (*out)[DEC_NODE_LEN];
	int *out_ranks;
	int nout, out_cap;
	/* nodes whose out/G/NODE record of the current generation was refused (malformed, or by
	 * no member): a member's own goes over it, not beside it (the key is create-only) */
	char (*out_refused)[DEC_NODE_LEN];
	int nout_refused, out_refused_cap;
	/* a member record was not followed for want of memory (dr_add_member): members missing
	 * from mem this look may be alive, none is taken for lost (dp_vanished) */
	int mem_short;
};

/* One local rank of the job (the agent copies back generation, fail_seen, killed_by_agent,
 * preempted). */
struct dp_rank {
	int pid, rank;
	int exited;
	int wait_status;       /* as waitpid's */
	uint64_t exit_wall_ms; /* when it ended (wall), 0 unknown */
	int has_slot, registered;
	int world_size;	     /* as its launcher said (WORLD_SIZE), <= 0 unknown */
	int64_t step, saved; /* from its slot: the step reached, the last step saved (-1) */
	int saved_here;	     /* saved was saved in the generation it runs in (or unknown) */
	int64_t saving;	     /* from its slot: should_save said 1 for this step (-1) */
	int64_t failed;	     /* from its slot: its save of this step failed or was refused (-1) */
	int64_t ack;	     /* the step boundary by which it saw the pending request (-1 not) */
	int started_known;
	uint64_t start_ms;   /* when its process started (mono, I7) */
	uint64_t exit_ms;    /* when it ended (mono), 0 unknown */
	uint64_t generation; /* the generation it runs in */
	/* no agent gave it a generation with its run known (it registered while none was, or
	 * with an agent killed before it wrote its slot): it has read no decision yet, and waits
	 * (settling) for its first; generation is not its own until dp_first_generation */
	int gen_unknown;
	int preempted, killed_by_agent, fail_seen;
};

/* The local ranks as one report. */
struct dp_local {
	int ranks, saved, live;
	int64_t max_step;
	int world;	 /* the job's world size (0 unknown) */
	int acked;	 /* ranks that acknowledged the pending request */
	int64_t max_ack; /* the highest boundary by which one saw it (-1) */
	int missed;	 /* ranks past the bound target never told to save it */
	int failed;	 /* ranks whose save of the bound target failed (and did not save it) */
};

/* A member at the last look (dp_vanished): its generation and ranks. */
struct dp_prev_member {
	char node[DEC_NODE_LEN];
	uint64_t gen;
	int ranks;
};

/* What the decider remembers of one job between looks. */
struct dp_memory {
	uint64_t applied_gen;			/* whose consequences were carried out here */
	uint64_t seen_gen, seen_ck, seen_done;	/* decisions already logged */
	uint64_t claimed_gen_ms, claimed_ck_ms; /* a claim in flight (mono) */
	uint64_t req_ms, done_ms;		/* the current request: seen, completed (mono) */
	int final_claimed; /* with preempt_grace: the last save is claimed (here or by another) */
	uint64_t final_ck; /* its gen * 1000000 + id: the ranks exit once it is complete */
	int preempt_saved; /* the last completed checkpoint of the generation was a preemption's */
	uint64_t step_prev, step_prev_ms;
	int world; /* the job's world size as the local ranks last said it (0 unknown) */
	double steps_per_s;
	int retargets;
	int fenced;
	/* The members at the last look, the lost and the suspected nodes: tables of any size
	 * that grow by doubling as the rules add to them (dp_vanished, dp_peer_dead...), freed by
	 * dp_memory_clear. Without the memory to grow, a node is not added (not followed). */
	struct dp_prev_member *prev; /* members at the last look, with ranks */
	int nprev, prev_cap;
	char (*lost)[DEC_NODE_LEN]; /* members lost (their lease, confirmed) */
	uint64_t *lost_ms;	    /* since (mono) */
	uint64_t *lost_wall;	    /* since (wall: the fault's time in gen/) */
	uint64_t *lost_gen;
	int *lost_ranks; /* the ranks it had */
	int nlost, lost_cap;
	char (*suspect)[DEC_NODE_LEN]; /* dead to the mesh, their lease being read */
	uint64_t *suspect_ms;
	int nsuspect, suspect_cap;
	int health_failed;
	int launcher_stopped;
	uint32_t stopped_launcher; /* the pid of the launcher the agent stopped here (0 none) */
	int held; /* the ranks wait at a step boundary (the store is unreachable) */
	/* no member record read (no run known): the unreachable time (+ 1) at which the ranks'
	 * world first said ranks run elsewhere (0: it does not) */
	uint64_t guess_ms;
	/* I6: the store was unreachable here (store_down), and when it answered again (mono, 0
	 * never): every lease may have run out meanwhile (etcd stopped for everyone), and the
	 * agents put their members again under new leases within a lease's TTL */
	int store_down;
	uint64_t store_back_ms;
	int64_t own_lease; /* this agent's lease as last seen: another one means it ran out */
	uint64_t lease_renewed_ms; /* ... when it was last granted or renewed (mono, 0 never) */
	int looked;		   /* observed the records once (dp_observe) */
	uint64_t gen_began_ms;	   /* the current generation was decided while this agent
				    * watched, at (mono); 0 not seen begin */
	uint64_t gen_seen_ms;	   /* when the current generation was first seen here (mono) */
	/* the first failure here of a rank of generation fail_gen (mono, 0 none): a launcher
	 * restarts the others after it, and a relaunch forgets the ranks that failed (a new run
	 * of the job's ranks here) before the decision arrives */
	uint64_t fail_ms;
	uint64_t fail_gen;
	uint64_t fail_wall_ms;	    /* the same failure: when (wall), */
	char fail_why[DEC_WHY_LEN]; /* and what, claimed again until a generation deals with it */
	/* I5: a preemption not yet in a request (the store unreachable, an operator's request
	 * in progress, a claim that expired): claimed when it can be, or said why not */
	uint64_t preempt_ms; /* since (mono), 0 none */
	uint64_t preempt_gen;
	uint64_t preempt_ck; /* the first request that can be its checkpoint */
	uint64_t failed_ck;  /* a request (gen * 1000000 + id) seen failed: it ended, unsaved */
};

/* ---- what a look asks the agent to do ---- */
enum dp_act_kind {
	DP_ACT_SIGNAL,		/* signal ranks[rank] (SIGTERM: SIGKILL after the grace) */
	DP_ACT_STOP_LAUNCHER,	/* stop the launcher of the job's ranks here */
	DP_ACT_HEALTH_CHECK,	/* start the health check */
	DP_ACT_LOG_DECISION,	/* log the current decision of kind why ("generation", ...) */
	DP_ACT_FENCED,		/* log: the job is fenced here */
	DP_ACT_UNAVAILABLE,	/* log: a trigger found the store unreachable (why) */
	DP_ACT_HOLD,		/* log: the ranks wait (sig 1) or go on (sig 0) */
	DP_ACT_PREEMPTION_LOST, /* log: a preemption ends in no checkpoint (why) */
	DP_ACT_CKPT_FAILED,	/* log: the request ends without a checkpoint (why) */
};

struct dp_act {
	enum dp_act_kind kind;
	int rank; /* index into the ranks given */
	int sig;
	char why[DEC_WHY_LEN];
};

struct dp_write {
	int claim;  /* create-only (first claimer wins); else a put */
	int leased; /* a put that vanishes with this agent */
	char rel[DEC_KEY_LEN];
	char value[DEC_VALUE_MAX];
};

struct dp_out {
	struct dp_act acts[DP_MAX_ACTS];
	int nacts;
	struct dp_write writes[DP_MAX_PUTS];
	int nwrites;
};

/* ---- rules (each tested on its own) ---- */
/* The job's name in the store: its id, and for a job local to its host (torchrun's master on a
 * loopback address, the same on every host) "@node" after it, so that it never shares
 * decisions with another host's job of the same id (I1). An id already scoped (with '@') is
 * kept. */
void dp_job_key(const char *id, const char *node, char *buf, size_t len);
/* A rank's abnormal end, on its own: not by our action, not a preemption that killed it, not
 * the exit codes the decisions asked for. */
int dp_abnormal_exit(const struct dp_config *c, const struct dp_rank *k);
/* Did the rank's process start at or after mono_ms (a launcher's restarted worker)? Start times
 * are in clock ticks (10 ms). */
int dp_started_since(const struct dp_rank *k, uint64_t mono_ms);
/* What rank k is told to do: FTBPF_ACT_NONE, _RESTART or _STOP. */
uint32_t dp_told_to_exit(const struct dp_config *c, const struct dp_records *r,
			 const struct dp_memory *m, const struct dp_rank *k);
/* Is a decision being made here that a rank starting now must wait for (settling in its slot):
 * a generation claimed, a failure of a local rank not yet decided, the run's record not seen,
 * no run chosen yet for a live registered rank (the store not read)? */
int dp_settling(const struct dp_config *c, const struct dp_records *r, const struct dp_memory *m,
		const struct dp_rank *ranks, int n);
/* The decision as the rank's slot holds it (seq not set). */
void dp_slot(const struct dp_config *c, const struct dp_records *r, const struct dp_memory *m,
	     const struct dp_rank *k, struct ftbpf_slot_decision *ret);
/* The step the ranks' saves and misses are counted against: the bound step of the request in
 * progress, else -1 (nothing is saved against a proposal). */
int64_t dp_request_target(const struct dp_records *r);
/* I2: the request in progress (r: its bound step) is complete by its completion record value
 * (NULL: none): only a well-formed one of the bound step, never a malformed or a stale one
 * (another step); *ret_at_ms when it was completed (untouched unless it is). 1 or 0. */
int dp_request_done(const struct dp_records *r, const char *value, uint64_t *ret_at_ms);
/* I3: the step a completion record (value) of a request completes, given the request's bind
 * record (NULL: none, or malformed): the bound step when the record is well-formed and names it
 * (0, the record in *ret, its step the bound one; *ret untouched otherwise); -EINVAL when it is malformed; -ESTALE when the request was bound to no step or
 * to another one (a record merely present is no completion, and raises no resume step);
 * -EPERM when r->members_only and its writer ("by") is no member of the run. */
int dp_done_step(const struct dp_records *r, const struct dec_bind *bind, const char *value,
		 struct dec_done *ret);
/* The local ranks' report on a request at target (target < 0: none). */
void dp_local(const struct dp_rank *ranks, int n, int64_t target, struct dp_local *ret);
/* The job's step rate, updated from the highest step reached (and its world size). */
void dp_step_rate(struct dp_memory *m, const struct dp_local *l, const struct dp_now *now);
/* How many steps past the highest a target must be: the step rate times the store's latency,
 * doubled at every re-target, at least the configured margin. */
int dp_margin(const struct dp_config *c, const struct dp_memory *m);
/* Does the generation leave node out? */
int dp_excluded(const struct dec_gen *g, const char *node);
/* Is node left out of the current generation (by its record, or since: out/G/NODE)? */
int dp_left_out(const struct dp_records *r, const char *node);
/* Node's member record, its report on the current request (NULL: none); by binary search (r's
 * tables are sorted by node). dp_node_cmp compares a node name (key) with a table entry whose
 * first field is its node name: the order of the tables. */
const struct dp_node_member *dp_member(const struct dp_records *r, const char *node);
const struct dec_report *dp_report(const struct dp_records *r, const char *node);
int dp_node_cmp(const void *key, const void *entry);
/* Free what the memory holds (its tables of members, lost and suspected nodes) and forget
 * everything. */
void dp_memory_clear(struct dp_memory *m);
/* May a left-out record be followed? Always with the cluster key alone; with the node keys
 * (members_only: its "by" is then its signer, store_etcd.c) only when a member of the run
 * decided it: a key holder cannot leave a node of another job's run out. */
int dp_out_believed(const struct dp_records *r, const struct dec_out *x, int members_only);
/* Was node's out/ record of the current generation refused (so ours is put over it)? */
int dp_out_refused(const struct dp_records *r, const char *node);
/* The member a host is, by its mesh address (how the mesh and the job's verdict over every
 * host name it: a member's node name may be another, node_name): the member whose agent gave
 * that address, else the one so named; NULL when none is. */
const char *dp_node_by_mesh(const struct dp_records *r, const char *addr);
/* Forget the i-th lost node (it is back, or its loss was dealt with). */
void dp_forget_lost(struct dp_memory *m, int i);
/* Is the checkpoint request complete (I2): every rank of the job's world saved its bound step
 * (its world size known), else every member node (not left out) reported all of its ranks
 * saved (l: this node's own ranks, fresher than its report)? Never with r->mem_short. With the
 * node keys (r->members_only) a report counts only from a member, or from a node m holds as
 * lost (a member once, seen here). */
int dp_complete(const struct dp_config *c, const struct dp_records *r, const struct dp_memory *m,
		const struct dp_local *l);
/* Did the bound request in progress fail (a rank's save of its step was refused or failed,
 * here, l, or on another node, by its report: with members_only, a member's)? It can never
 * complete: 1, and why; else 0. */
int dp_request_failed(const struct dp_config *c, const struct dp_records *r,
		      const struct dp_local *l, char *why, size_t len);
/* Has every rank acknowledged the pending request (by its world size, or every member node's
 * ranks; never with r->mem_short)? 1, and *ret_target: the step to bind (the highest
 * acknowledged boundary + 1). With the node keys, only members' reports count. */
int dp_all_acked(const struct dp_config *c, const struct dp_records *r, const struct dp_local *l,
		 int64_t *ret_target);
/* Which run a new launch of the job on this node belongs to (docs/decisions.md, "Job and run"):
 * mine: this node's last launch (NULL none), cur: the job's latest run (0 none), launcher: the
 * new ranks' launcher ("pid:start"), restart_count: TORCHELASTIC_RESTART_COUNT or
 * SLURM_RESTART_COUNT (-1 unknown). Returns the run; *ret_new 1 when it is a new one to claim. */
uint64_t dp_run_choose(const struct dec_launch *mine, uint64_t cur, const char *launcher,
		       int restart_count, int *ret_new);
/* A rank of the job on this node as the run choice sees it: the agent's view and, read from
 * /proc just before the choice, whether it and its launcher are alive in fact. */
struct dp_launch_rank {
	int rank;	  /* its rank number */
	int launcher_pid; /* 0: none known */
	uint64_t launcher_start_ns;
	int exited;	    /* as far as the agent knows */
	int dec_written;    /* a decision was written into its slot: a rank of the run */
	int alive;	    /* its process, at its start time, alive and not a zombie */
	int launcher_alive; /* the same for its launcher */
};
/*
 * Does a rank of the job's current launch live here, so that k (a newly seen rank of the job)
 * joins the current run? others: the job's other ranks on this node. A rank counts when it is
 * alive in fact, not only as far as the agent knows (a launcher relaunched at once after its
 * ranks ended, before their exits were seen, must not join the ended run), and is of k's own
 * launcher, or of another launcher still alive unless k takes the place of one of that
 * launcher's live ranks (the same rank number: a relaunch while the launch it replaces still
 * winds down). A rank started by hand beside a live launch, under a number of its own, joins
 * that launch's run. 1 yes, 0 no.
 */
int dp_other_live(const struct dp_launch_rank *others, int n, const struct dp_launch_rank *k);
/* The fencing token of a save in generation gen of run run (docs/decisions.md, "The fencing
 * token"): run in the high 32 bits, the generation in the low 32. Both are claimed in the store
 * and never go back, so the token grows across the runs of a job, not only within one. A
 * generation past 2^32 - 1 stays there (the run still orders it); run 0 (none chosen) gives 0. */
uint64_t dp_fence_token(uint64_t run, uint64_t gen);
/* The generation an earlier agent gave a process, from its slot (a restarted agent's): the
 * one its fencing token names, written with its run known (an agent older than the token:
 * own_generation, if not 0). 1 with *ret_gen, 0 none was given (both 0: it registered while
 * no run was known, or its agent died before writing the slot): dp_first_generation. */
int dp_slot_generation(uint64_t token, uint64_t own_generation, uint64_t *ret_gen);
/* Who a new generation leaves out (into g): the lost node, other lost nodes after
 * recovery_wait, nodes that failed their health check, a node at node_fault_limit faults. */
void dp_leave_out(const struct dp_config *c, const struct dp_records *r, const struct dp_memory *m,
		  const struct dp_now *now, struct dec_gen *g);
/* Is a signal to rank k a preemption? 1 yes, 0 not one (not preempting, from the agent or the
 * process itself), -1 a signal a launcher sends to ranks told to exit (counted). */
int dp_is_preemption(const struct dp_config *c, const struct dp_records *r,
		     const struct dp_memory *m, const struct dp_rank *ranks, int n, int k, int sig,
		     uint32_t sender_pid, uint32_t agent_pid);

/* ---- one look at a job, in order ---- */
/* New decisions in the store: logged once; claims in flight settled. */
void dp_observe(struct dp_memory *m, const struct dp_records *r, const struct dp_now *now,
		struct dp_out *out);
/* Hold, then fence the job here (I6): the shared store unreachable for hold_after (the ranks
 * wait at a step boundary: m->held), then for fence_after (its ranks are signalled once), while
 * other nodes have ranks of the job: their member records say so, or, with none read (no run
 * known yet), the ranks' world size beyond the ranks here. 1 held or fenced, 0 not. */
int dp_fence(const struct dp_config *c, const struct dp_records *r, struct dp_memory *m,
	     struct dp_rank *ranks, int n, struct dp_out *out);
/* This node's member record. */
void dp_member_record(const struct dp_config *c, const struct dp_records *r,
		      const struct dp_memory *m, const struct dp_local *l, int64_t lease,
		      struct dp_out *out);
/* Members that vanished (their lease expired) are lost (not in a look that could not read
 * them all: r->mem_short); a lost node whose member is back is not. A loss is acted on (a generation, left out) only after recovery_wait, and not within
 * two lease TTLs of this node's store answering again after an outage (dp_loss_settled). */
void dp_vanished(const struct dp_config *c, const struct dp_records *r, struct dp_memory *m,
		 const struct dp_now *now);
/* May lost node i be acted on now (I6)? */
int dp_loss_settled(const struct dp_config *c, const struct dp_memory *m, int i,
		    const struct dp_now *now);
/* The mesh declared node dead: suspect it (its lease has the last word). */
void dp_peer_dead(struct dp_memory *m, const struct dp_records *r, const char *node,
		  const struct dp_now *now);
/* The mesh sees node alive again. */
void dp_peer_alive(struct dp_memory *m, const char *node);
/* Suspects whose lease (leases[i] for suspect i) shows they stopped renewing are lost. */
void dp_confirm_suspects(struct dp_memory *m, const struct dp_records *r,
			 const struct dp_lease *leases, const struct dp_now *now);
/* Ranks of no known generation (gen_unknown) are of the run's current one: they have read no
 * decision yet, so the first one they read, this one, is the generation they start in (never
 * the one before: they would be told to exit as its ranks). Only with a run (r->run). */
void dp_first_generation(const struct dp_records *r, struct dp_rank *ranks, int n);
/* A new generation here: older ranks end, the launcher stops when left out or stopped, else
 * the health check runs. Ranks started since it was decided here are of it: since this
 * node saw it, since a failure here it deals with, since the preemption checkpoint it
 * follows was complete here (I7: this host's monotonic clock). */
void dp_apply_generation(const struct dp_config *c, const struct dp_records *r, struct dp_memory *m,
			 struct dp_rank *ranks, int n, struct dp_out *out);
/* The job is past its hard timeout: the verdict's why and the host its culprit runs on, by its
 * mesh address (a job that spans hosts is judged over every host's part: the culprit may run
 * elsewhere; dp_node_by_mesh names it as a member); node "" or NULL: this node. */
struct dp_hang {
	const char *why;
	const char *node;
	uint64_t stalled_ms; /* no progress for this long (the verdict's) */
};
/* Failures into a claim for the next generation: a rank's abnormal end, the hard timeout
 * (hang: the job is past it, NULL not), a lost node. The fault is charged to the node it is on
 * (node_fault_limit): the failed rank's, the hung culprit's, the lost one. */
void dp_failures(const struct dp_config *c, const struct dp_records *r, struct dp_memory *m,
		 struct dp_rank *ranks, int n, const struct dp_hang *hang, const struct dp_now *now,
		 struct dp_out *out);
/* The checkpoint in progress: report, bind, re-target, complete; the final save of a grace; a
 * completed preemption begins the next generation (its ranks exit, resume from that step). */
void dp_checkpoint_progress(const struct dp_config *c, const struct dp_records *r,
			    struct dp_memory *m, const struct dp_local *l, const struct dp_now *now,
			    struct dp_out *out);
/* A preemption signal or an operator's request: claim a checkpoint. 0 claimed (or joined),
 * -EBUSY one is in progress, -EAGAIN the store is unreachable. */
int dp_request_checkpoint(const struct dp_config *c, const struct dp_records *r,
			  struct dp_memory *m, const struct dp_local *l, enum dec_cause cause,
			  const char *why, const struct dp_now *now, int64_t *ret_step,
			  struct dp_out *out);

/* A preemption waiting for a request (I5): claimed now if it can be; an event says why not when
 * the job restarts without it. */
void dp_preemption_pending(const struct dp_config *c, const struct dp_records *r,
			   struct dp_memory *m, const struct dp_local *l, const struct dp_now *now,
			   struct dp_out *out);

/* The claims a rule makes (exposed for the tests). */
void dp_claim_ckpt(const struct dp_config *c, const struct dp_records *r, struct dp_memory *m,
		   int64_t target, enum dec_cause cause, const char *why, const struct dp_now *now,
		   struct dp_out *out);
void dp_claim_gen(const struct dp_config *c, const struct dp_records *r, struct dp_memory *m,
		  enum dec_cause cause, const char *node, uint64_t fault_wall_ms, const char *why,
		  const struct dp_now *now, struct dp_out *out);

#endif
