/*
 * The decider's parts (agent/decide.h is its interface). The policy is pure
 * (lib/decide_policy.c); the agent's side only gathers its inputs and carries out its outputs:
 *   decide.c        the triggers and one look per job: gather, call the rules, carry out
 *   decide_store.c  the inputs: the job table, what the store holds for a job, the local
 *                   ranks as the policy sees them
 *   decide_act.c    the outputs: writes to the store, signals, the launcher, the health check,
 *                   the ranks' slots
 *   decide_view.c   decisions as events and JSON
 * decide.c calls the other three; they call nothing of each other but decide_store.c's
 * lookups. Not for other modules.
 */
#ifndef FTBPF_DECIDE_INT_H
#define FTBPF_DECIDE_INT_H

#include <stdint.h>
#include <sys/types.h>

#include "agent/decide.h"
#include "ftbpf/abi.h"
#include "lib/decide_policy.h"

struct rank;
struct job;

#define MAX_JOBS 1024
/* One user's share of the table (root's jobs are limited by MAX_JOBS only): a user who
 * registers many jobs cannot keep another's from being followed. */
#define MAX_JOBS_PER_USER 64

#define MAX_REFUSED 8

/* One job as the decider follows it. */
struct djob {
	uid_t uid;
	char id[FTBPF_JOB_LEN];
	char jprefix[DEC_KEY_LEN]; /* "jobs/<uid>/<id, '/' and '%' escaped>/" */
	uint64_t run;		   /* the run this node's ranks are in (0: not known yet) */
	uint64_t run_ms; /* since when (mono): ranks that ended before are of an older run */
	char prefix[DEC_KEY_LEN + 32];		 /* the run's: "<jprefix>runs/<run>/" */
	struct dec_launch launch;		 /* this node's launch in it */
	char launch_key[DEC_LAUNCH_KEY_LEN];	 /* the launch id's key its run is of ("" none) */
	char launch_id[DEC_LAUNCH_ID_LEN];	 /* ... and the launch id */
	char refused_launch[DEC_LAUNCH_KEY_LEN]; /* the stale launch last refused (logged once) */
	/* records refused at the last read (bad input: logged once each) */
	char refused[MAX_REFUSED][DEC_KEY_LEN];
	char refused_why[MAX_REFUSED][64];
	int nrefused;
	uint64_t refused_hash[64]; /* what was refused already (not logged again) */
	int nrefused_hash;
	struct dp_records rec; /* what the store holds (dc_load) */
	struct dp_memory mem;  /* what the policy remembers */
	pid_t health_pid;
	uint64_t health_ms; /* mono */
	uint64_t idle_ms;   /* since when no rank of the job lives here (mono; 0: some does) */
};

struct decider {
	const struct ftbpf_config *cfg;
	struct ranks *ranks;
	struct eventlog *el;
	struct actions *ac;
	struct store *st;
	struct dp_config pc;
	struct djob *jobs[MAX_JOBS]; /* owned */
	int njobs;
	struct dp_out out;   /* one look's outputs (reused) */
	struct dp_rank *rk;  /* one job's local ranks as the policy sees them (owned) */
	struct rank **rk_of; /* ... and the ranks they are (owned array) */
	int nrk, rk_cap;
	int again; /* the last look changed what the next one reads: look again now */
	uint64_t claims, retargets, fences, preemptions, ignored_signals, health_failures,
	    unavailable, refused, holds, preemptions_lost, ckpts_failed, jobs_refused;
};

/* decide_store.c: the inputs */
/* The clocks now. */
void dc_now(struct dp_now *now);
/* How many jobs of uid the decider follows. */
int dc_user_jobs(const struct decider *d, uid_t uid);
/* The job as the decider follows it; create: add it when new (NULL: none, no room, or the
 * user's share of the table is full). */
struct djob *dc_find(struct decider *d, uid_t uid, const char *id, int create);
/* Free a job dc_find made, with what its records and memory hold. */
void dc_free_job(struct djob *dj);
/* Read what the store holds for the job's run into dj->rec (refused records into dj->refused). */
void dc_load(struct decider *d, struct djob *dj);
/* The run a newly registered rank k of job j is in (chosen, claimed and recorded when this
 * node has no other live rank of the job in a run). */
void dc_choose_run(struct decider *d, struct djob *dj, const struct job *j, const struct rank *k);
/* A node that lost the claim of its launch's record (launches/<key>) joins the run that won. */
void dc_follow_launch(struct decider *d, struct djob *dj);
/* Forget the job's decisions (an operator's reset): everything under its prefix. */
int dc_reset(struct decider *d, struct djob *dj);
/* The local ranks of j into d->rk (d->nrk of them); 0 or -ENOMEM. */
int dc_gather(struct decider *d, const struct djob *dj, const struct job *j);
/* What the policy changed of the ranks, back into them. */
void dc_scatter(struct decider *d);

/* decide_act.c: the outputs */
/* Carry out d->out for job j (writes, signals, the launcher, the health check, events). */
void dc_carry_out(struct decider *d, struct djob *dj, struct job *j);
/* The health check's outcome, when it ended (a failed node leaves). */
void dc_health_check_poll(struct decider *d, struct djob *dj, struct job *j);
/* Write what rank i of d->rk is told into its slot (only what changed). */
void dc_write_slot(struct decider *d, struct djob *dj, int i);
/* Write only whether rank i of d->rk holds at its step boundaries (no run known: no decision). */
void dc_write_hold(struct decider *d, struct djob *dj, int i);

/* decide_view.c: events */
/* Log the job's current decision of this kind as an event. */
void dc_log_decision(struct decider *d, const struct djob *dj, const char *kind);
/* Log a trigger the store could not take (decision_unavailable). */
void dc_log_unavailable(struct decider *d, const struct djob *dj, int pid, const char *trigger,
			const char *why);
/* Log the records dc_load refused (once each). */
void dc_log_refused(struct decider *d, struct djob *dj);
/* Log a hold (on) or its end. */
void dc_log_hold(struct decider *d, const struct djob *dj, int on, const char *why);
/* Log a preemption that ends in no checkpoint, or a signal not taken for one (why). */
void dc_log_preemption(struct decider *d, const struct djob *dj, int pid, const char *what,
		       const char *why);
/* Log a rank of a stale launch (launch_id, whose run is launch_run) refused: the job's run
 * is run, of a later launch; the rank is given no run of its own. */
void dc_log_launch_refused(struct decider *d, const struct djob *dj, int pid, const char *launch_id,
			   uint64_t launch_run, uint64_t run);
/* Log that the job is fenced here. */
void dc_log_fenced(struct decider *d, const struct djob *dj);
/* Log the health check's outcome. */
void dc_log_health(struct decider *d, const struct djob *dj, int failed);

#endif
