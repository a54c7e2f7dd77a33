/*
 * Coordinated checkpoint and restart decisions. For every job whose ranks use the client
 * library (they have a slot), the decider
 *   - turns a preemption (a signal in preempt_signals sent to a rank by another process),
 *     `ftbpf checkpoint JOB` or a control request into a claim for an agreed checkpoint step
 *     (the highest step reported + margin), re-targets when a rank is already past it, reports
 *     this node's saves, and declares the checkpoint complete when every member node's ranks
 *     saved it; then the ranks exit with the restart code (after preempt_grace, with a last
 *     save before it ends);
 *   - turns a failure (a rank died abnormally, the hard timeout, a member node lost) into a
 *     claim for generation g+1 (cause, nodes left out, the step to resume from), or a stop when
 *     the restart budget is spent; ends its ranks of older generations, and stops its launcher
 *     when this node is left out (after a failed health check too);
 *   - fences: a node that cannot reach the shared store for fence_after stops its ranks of
 *     multi-node jobs;
 *   - writes what was decided into every local rank's slot (libftbpf reads it).
 * Agreement is the store's (agent/store.h): the first claim of a key wins, everywhere.
 */
#ifndef FTBPF_DECIDE_H
#define FTBPF_DECIDE_H

#include <stdint.h>
#include <sys/types.h>

struct ftbpf_config;
struct ranks;
struct rank;
struct job;
struct eventlog;
struct actions;
struct store;
struct json_object;
struct decider;

struct decide_opts {
	const struct ftbpf_config *cfg; /* borrowed (all of these) */
	struct ranks *ranks;
	struct eventlog *el;
	struct actions *ac; /* SIGKILLs after the grace */
	struct store *st;
	const char *node; /* this node's name */
};

/* Is the mesh address addr a member's of job's current run (a members/ record naming it, in a
 * shared store)? 1, 0, or -1 when that is not known (no shared store, the run not followed
 * here, or no member names its mesh address yet). ctx: the decider (jobparts_opts.member). */
int decide_part_member(void *ctx, uint32_t uid, const char *job, const char *addr);
/* NULL on ENOMEM. */
struct decider *decider_new(const struct decide_opts *o);
void decider_free(struct decider *d);
/* A signal was generated for rank k (sender: sender_pid, the agent is never one). */
void decide_on_signal(struct decider *d, struct rank *k, int sig, uint32_t sender_pid);
/* A checkpoint asked for by an operator or a client; *ret_step: the step proposed (another
 * node's claim may win). 0, -ENOENT (the job does not use the client library), -EBUSY (one
 * is in progress), -EAGAIN (the store is unreachable), or -errno. */
int decide_checkpoint(struct decider *d, struct job *j, const char *why, int64_t *ret_step);
/* Forget every decision of job (uid's): all its runs (`ftbpf decisions reset JOB`). 0 or -errno. */
int decide_reset(struct decider *d, uid_t uid, const char *job);
/* This node's mesh address (written into its member records: how the others tell the mesh's
 * peers and the job verdict's hosts as members). */
void decide_set_mesh(struct decider *d, const char *addr);
/* A peer of the mesh was declared dead (its name as the mesh knows it). */
void decide_peer_dead(struct decider *d, const char *node);
/* The mesh sees node alive again (a refuted death): it is not lost. */
void decide_peer_alive(struct decider *d, const char *node);
/* Rank k got its slot: it learns what was decided for its job. */
void decide_rank_registered(struct decider *d, struct rank *k);
/* Look at every job again (each scan, and when the store changed). */
void decide_tick(struct decider *d);
/* Look at job j now: all of its ranks here ended and a relaunch is about to begin a new run,
 * which forgets them; their ends (a failure, saves) are decided on first. */
void decide_job(struct decider *d, struct job *j);
/* The job's generation and checkpoint, for status ("generation", "checkpoint"). */
void decide_job_json(struct decider *d, const struct job *j, struct json_object *o);
/* Every decision the store holds for the jobs uid may see (0: all), oldest first. */
struct json_object *decide_history_json(struct decider *d, uid_t uid);
/* The decider's own state for status: node, store, counters. */
struct json_object *decide_json(struct decider *d);

#endif
