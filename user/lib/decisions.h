/*
 * Coordinated decisions, pure logic: the values the agents agree on (a restart generation, a
 * checkpoint step), their key space in the agreement store, and the rules - the checkpoint
 * target, when to re-target, when a checkpoint is complete, whether the restart budget is
 * spent, which nodes to leave out. The store (agent/store.c: local file or etcd) holds the
 * values; agent/decide.c observes the ranks and acts. Every value is JSON; every parser
 * rejects what is malformed (-EINVAL) and is fuzzed.
 *
 * Keys, under the job's prefix ("jobs/<uid>/<job>/"):
 *   run/<r>                 run r of the job began (claimed; docs/decisions.md: a relaunch is
 *                           a new run, a restart a decision asked for is not)
 *   launch/<node>           the node's latest launch of the job: its run, its launchers (put)
 *   launches/<key>          a launch of the job (lib/launch_id.h: its id's key) and its run
 *                           (claimed: the first host of the launch to come)
 * and under the run's prefix ("jobs/<uid>/<job>/runs/<r>/"), each written once (create-only: the
 * first claimer wins) but for the reports and members:
 *   gen/<g>                 the decision that began generation g (g >= 1)
 *   ckpt/<g>/<n>            checkpoint request n of generation g
 *   bind/<g>/<n>            its step, bound once every rank of the job acknowledged the request
 *   done/<g>/<n>            request n is complete: every rank of the job's world saved it
 *   saved/<g>/<n>/<node>    a node's report on request n (rewritten as its ranks ack and save)
 *   members/<node>          a node hosting ranks of the job (under that agent's lease)
 *   out/<g>/<node>          a node lost with ranks of an older generation: the same fault as
 *                           the one that began g, left out of g without a new one ({"ranks"})
 * Numbers are zero-padded to 20 digits so that keys sort as numbers.
 */
#ifndef FTBPF_DECISIONS_H
#define FTBPF_DECISIONS_H

#include <stddef.h>
#include <stdint.h>

#define DEC_NODE_LEN	   32 /* FTBPF_NODE_LEN */
#define DEC_MAX_EXCLUDED   4  /* FTBPF_MAX_EXCLUDED */
#define DEC_WHY_LEN	   128
#define DEC_KEY_LEN	   256
#define DEC_VALUE_MAX	   2048
#define DEC_LAUNCH_KEY_LEN 33  /* LAUNCH_KEY_LEN */
#define DEC_LAUNCH_ID_LEN  129 /* LAUNCH_ID_LEN */

/* the FTBPF_CAUSE_* values of the slot */
enum dec_cause {
	DEC_CAUSE_NONE = 0,
	DEC_CAUSE_PREEMPTION = 1,
	DEC_CAUSE_RANK_DIED = 2,
	DEC_CAUSE_HANG = 3,
	DEC_CAUSE_NODE_DEAD = 4,
	DEC_CAUSE_OPERATOR = 5,
	DEC_CAUSE__N
};

/* gen/<g>: how generation g began */
struct dec_gen {
	uint64_t generation;
	enum dec_cause cause;
	int stop;		 /* the restart budget is spent: end, do not requeue */
	int64_t resume_step;	 /* the last complete agreed checkpoint, -1 none */
	char node[DEC_NODE_LEN]; /* where the fault was ("" unknown) */
	char by[DEC_NODE_LEN];	 /* the node that decided */
	int nexcluded;
	char excluded[DEC_MAX_EXCLUDED][DEC_NODE_LEN];
	/* when the fault happened (wall clock): processes started since then are of the new
	 * generation (a launcher's restarted workers), older ones end */
	uint64_t at_ms;
	char why[DEC_WHY_LEN];
	/* the job's world size in this generation, its left-out nodes' ranks taken away (0:
	 * unknown, as the ranks say) */
	int world;
};

/* ckpt/<g>/<n>: every rank saves at step target */
struct dec_ckpt {
	uint64_t generation, id;
	int64_t target;
	enum dec_cause cause;
	char by[DEC_NODE_LEN];
	uint64_t at_ms;
	char why[DEC_WHY_LEN];
};

/* saved/<g>/<n>/<node>: a node's ranks on request n */
struct dec_report {
	int ranks;	  /* live local ranks of the job */
	int saved;	  /* ranks that saved the target (in this generation) */
	int64_t max_step; /* the highest step a local rank reached */
	int world;	  /* the job's world size as its ranks know it (0 unknown) */
	int acked;	  /* ranks that acknowledged the request */
	int64_t max_ack;  /* the highest step boundary by which one of them saw it (-1) */
	int missed;	  /* ranks past the bound target that were never told to save it */
	int failed;	  /* ranks whose save of the bound target failed: the request ends */
};

/* bind/<g>/<n>: the step of request n */
struct dec_bind {
	int64_t target;
	uint64_t at_ms;
};

/* run/<r> */
struct dec_run {
	uint64_t run;
	int64_t resume_step; /* the job's last complete checkpoint when it began (-1) */
	char by[DEC_NODE_LEN];
	uint64_t at_ms;
	char launch[DEC_LAUNCH_KEY_LEN]; /* the launch (its key) it was claimed for ("" none) */
};

/* launches/<key>: the run of a launch of the job, the launch's id as its launcher said it */
struct dec_launches {
	uint64_t run;
	char id[DEC_LAUNCH_ID_LEN];
	char by[DEC_NODE_LEN]; /* the node that claimed it */
	uint64_t at_ms;
};

/* launch/<node>: what the node launched last, and in which run */
#define DEC_MAX_LAUNCHERS 8
struct dec_launch {
	uint64_t run;
	int nlaunchers;
	char launchers[DEC_MAX_LAUNCHERS][40]; /* "pid:start_ns" of each launcher */
};

/* done/<g>/<n> */
struct dec_done {
	int64_t step;
	uint64_t at_ms;
	char
	    by[DEC_NODE_LEN]; /* who completed it ("" in records of agents before it was written) */
};

/* out/<g>/<node>: node left out of generation g as it runs, by the node that decided it */
struct dec_out {
	int ranks;	       /* the ranks it had (0 .. 2^20) */
	char by[DEC_NODE_LEN]; /* who decided ("" in records of agents before it was written) */
};

/* members/<node> */
struct dec_member {
	int ranks;
	uint64_t generation;
	int excluded;  /* it failed its health check: leave it out */
	int64_t lease; /* its agent's etcd lease (0 none): alive while it is renewed */
	int lease_ttl_s;
	char mesh[DEC_NODE_LEN]; /* its agent's mesh address, as peers know it ("" no mesh): how
				  * the mesh's and the job verdict's hosts are told as members */
};

/* The node a key belongs to, when only that node writes it (launch/<node>, members/<node>,
 * saved/<g>/<n>/<node>, anywhere under a job's prefix): a pointer into key, NULL for a key
 * every node may write (gen, ckpt, bind, done, run; out/<g>/<node>, which the deciding node
 * writes about a lost one). */
const char *dec_key_node(const char *key);
const char *dec_cause_name(enum dec_cause c);
/* -EINVAL when unknown */
int dec_cause_parse(const char *name);

/* Values: to JSON (0, or -ENOSPC) and back (0, or -EINVAL for anything malformed). */
int dec_gen_format(const struct dec_gen *d, char *buf, size_t len);
int dec_gen_parse(const char *json, struct dec_gen *d);
int dec_ckpt_format(const struct dec_ckpt *c, char *buf, size_t len);
int dec_ckpt_parse(const char *json, struct dec_ckpt *c);
int dec_report_format(const struct dec_report *r, char *buf, size_t len);
int dec_report_parse(const char *json, struct dec_report *r);
int dec_done_format(const struct dec_done *d, char *buf, size_t len);
int dec_done_parse(const char *json, struct dec_done *d);
int dec_out_format(const struct dec_out *x, char *buf, size_t len);
int dec_out_parse(const char *json, struct dec_out *x);
int dec_member_format(const struct dec_member *m, char *buf, size_t len);
int dec_member_parse(const char *json, struct dec_member *m);
int dec_bind_format(const struct dec_bind *b, char *buf, size_t len);
int dec_bind_parse(const char *json, struct dec_bind *b);
int dec_run_format(const struct dec_run *r, char *buf, size_t len);
int dec_run_parse(const char *json, struct dec_run *r);
int dec_launch_format(const struct dec_launch *l, char *buf, size_t len);
int dec_launch_parse(const char *json, struct dec_launch *l);
int dec_launches_format(const struct dec_launches *l, char *buf, size_t len);
int dec_launches_parse(const char *json, struct dec_launches *l);

/* Keys relative to a job's prefix. */
void dec_key_gen(char *buf, size_t len, uint64_t g);
void dec_key_ckpt(char *buf, size_t len, uint64_t g, uint64_t n);
void dec_key_done(char *buf, size_t len, uint64_t g, uint64_t n);
void dec_key_report(char *buf, size_t len, uint64_t g, uint64_t n, const char *node);
void dec_key_member(char *buf, size_t len, const char *node);
void dec_key_bind(char *buf, size_t len, uint64_t g, uint64_t n);
/* out/<g>/<node>: a node lost with ranks of an older generation, left out of g as it runs */
void dec_key_out(char *buf, size_t len, uint64_t g, const char *node);
void dec_key_run(char *buf, size_t len, uint64_t r);
void dec_key_launch(char *buf, size_t len, const char *node);
/* launches/<key>: key, a launch id's (32 hex digits, launch_id_key) */
void dec_key_launches(char *buf, size_t len, const char *key);
/* The numbers of a key "gen/<g>", "run/<r>" (n NULL) or "ckpt/<g>/<n>", "bind/<g>/<n>",
 * "done/<g>/<n>": 0, or -EINVAL when the key is not of that shape. */
int dec_key_numbers(const char *key, const char *kind, uint64_t *g, uint64_t *n);
/* A node name usable in a key: [A-Za-z0-9._:-], 1..31 bytes. */
int dec_node_valid(const char *node);

/*
 * The checkpoint target when a rank reached max_step: max_step + margin (the ranks of a
 * synchronous job are at most a step apart, so every rank can still reach it), at least
 * margin when no rank reported a step.
 */
int64_t dec_target(int64_t max_step, int margin);
/* Must request ck be re-targeted? When some rank is past its target without having saved it
 * (max_step > target and not every rank saved), it can no longer save at that step. */
int dec_retarget(const struct dec_ckpt *ck, const struct dec_report *local);
/*
 * Is the restart budget spent? at_ms: the times of the restarts decided so far (failure
 * generations), n of them. max_restarts restarts are allowed within window_s; a new one at
 * now_ms would exceed it.
 */
int dec_budget_spent(const uint64_t *at_ms, int n, uint64_t now_ms, int max_restarts,
		     double window_s);

/* ---- the shared store's timing (I6: a node cut off holds, then fences, its ranks before the
 * others may act without it) ---- */
/* How often an agent renews its lease of ttl_s seconds (as granted: whole seconds): every third
 * of it, and at least every 0.5 s, so that a pause up to the TTL - 0.5 s keeps it. */
uint64_t dec_lease_renew_ms(int ttl_s);
/* Cut off from the shared store this long, a node holds its ranks: half its lease's TTL (before
 * the lease can run out), no later than fence_after_s (when it ends them). */
double dec_hold_after_s(int ttl_s, double fence_after_s);
/* The store is unreachable once its last answer is this old: no longer than the hold threshold
 * (dec_hold_after_s: a node must see it is cut off before it is to hold), 4 s at most, and never
 * shorter than two renewals of the lease (one late keep-alive is no outage). */
uint64_t dec_reachable_ms(int ttl_s, double fence_after_s);
/* For how long the store has been silent at now_ms (all CLOCK_MONOTONIC ms): since its last
 * answer (last_ok_ms), or since it was opened (opened_ms) when it never answered (an agent
 * started while cut off); 0 while it is reachable. */
uint64_t dec_unreachable_ms(int reachable, uint64_t last_ok_ms, uint64_t opened_ms,
			    uint64_t now_ms);

#endif
