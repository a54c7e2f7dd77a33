/*
 * The agent's table of ranks and the jobs they form. Owns every struct rank and struct job.
 * A rank is one process incarnation (pid + start time): a new process at the pid of an exited
 * rank is a new rank, and the exited one stays listed until it is forgotten. A job is
 * (owner uid, id): ranks of different users never share a job. A job lists its members: the
 * ranks of its current run (a relaunch, after all of its ranks here ended, is a new run: the
 * old run's ranks are forgotten, its verdict cleared).
 */
#ifndef FTBPF_RANKS_H
#define FTBPF_RANKS_H

#include <stdint.h>
#include <sys/types.h>

#include "lib/cadence.h"
#include "lib/container.h"
#include "lib/detector.h"
#include "lib/ident.h"
#include "lib/jobend.h"
#include "lib/jobview.h"

struct ftbpf_slot;
struct job;

#define RANK_SIG_HISTORY 8

struct rank_sig {
	uint64_t ts_ns;
	int sig;
	int delivered;
	uint32_t sender_pid;
	char sender_comm[16];
};

struct rank {
	int pid;
	uint64_t start_ns; /* the process's start time since boot: its incarnation */
	int pidfd;	   /* owned; -1 when the process could not be opened */
	uid_t uid;
	struct rank_ident id;
	struct job *job; /* borrowed: the job it is a member of */
	char comm[16];
	uint64_t adopted_ns;
	struct det_sample s;
	struct det_rank d;
	struct rank_sig sigs[RANK_SIG_HISTORY];
	int nsig;
	uint64_t syscalls;
	uint64_t progress;
	int nthreads;
	int exit_reported;
	int exit_judged;     /* a scan judged its job since it exited: its kernel record is freed */
	int killed_by_agent; /* our hard-timeout action sent it SIGTERM/SIGKILL */
	int oom_victim;	     /* the kernel's OOM killer chose it */
	int maps_scanned;    /* its libraries were looked at for CUDA/NCCL probes */
	uint64_t generation; /* the job's restart generation it runs in ... */
	int gen_unknown;     /* ... none given yet with its run known (dp_first_generation) */
	uint64_t dec_written;	 /* the decision version last written into its slot */
	uint64_t dec_ack_id;	 /* the pending request written into its slot ... */
	int64_t dec_ack_step;	 /* ... and the step boundary by which it sees it */
	int preempted;		 /* it got a preemption signal from another process */
	int fail_seen;		 /* its abnormal exit was taken into account */
	uint64_t api_calls;	 /* probed CUDA/NCCL calls of its main thread */
	uint64_t folded_seen;	 /* events the kernel folded, as last reported */
	uint64_t folded_ns;	 /* when */
	struct container_id ctr; /* its container and pod, from its cgroup ("" none) */
	int slot_fd;		 /* registered process's slot map (owned), -1 none */
	struct ftbpf_slot *slot; /* the agent's mapping of it (owned) */
	int launcher_pid;	 /* what launched it (the parent of its outermost wrapper) */
	uint64_t launcher_start_ns;
	int wrapper_pid; /* the wrapper it took the rank over from (timeout, sh), 0 none */
	uint64_t wrapper_start_ns;
	char wrapper_comm[16];
	int timers_only; /* registered for countdown timers only: no job, never judged */
	int heir_pid;	 /* a wrapper: the child that exec'd with its rank, to take it over */
	uint64_t heir_start_ns, heir_ns;
	struct cad_rank cad; /* its step cadence (agent/cadwatch.c) */
	struct arr_rank arr; /* when it issued its job's collectives (agent/cadwatch.c) */
};

struct job {
	uid_t uid; /* owner: every member runs as this user */
	char id[FTBPF_JOB_LEN];
	struct rank **members; /* owned array of borrowed pointers */
	int nmembers, cap;
	struct det_job res;
	int reported; /* hang report emitted for the current stall */
	int soft_signalled;
	int action_done;
	int failed_reported;
	uint64_t hung_seen_ns;
	uint64_t watched_ns; /* first evaluated by this agent (a hard action waits a grace) */
	int restored;	     /* the saved state of an earlier agent was applied */
	/* A run: the ranks since the job's ranks here last all ended (a relaunch is a new run,
	 * with its own verdict, job_failed and end). */
	uint32_t run;			     /* 1 for the first run this agent saw */
	uint64_t run_start_ns;		     /* when it began (CLOCK_MONOTONIC) */
	char prev_state[16];		     /* how the previous run ended ("" none) */
	enum det_job_state state;	     /* what happened (det_job_state), each scan */
	int hard_killed;		     /* the hard-timeout action signalled its ranks */
	int end_reported;		     /* job_end emitted for this run */
	uint64_t judged_ns;		     /* when res was judged */
	struct jobend hang_end;		     /* it was hung as it began to end: who ended it */
	char hang_why[512];		     /* ... the hang's verdict then */
	int hang_culprits[DET_MAX_CULPRITS]; /* ... its culprits' ranks */
	int nhang_culprits;
	int timers_only;      /* its one member registered for timers only */
	struct jv_verdict xv; /* the verdict over every host's part (agent/jobparts.c) */
	struct cad_job cad;   /* its step cadence (agent/cadwatch.c) */
	struct arr_job arr;   /* its collectives' pace and arrivals (agent/cadwatch.c) */
};

struct ranks {
	struct rank **v; /* owned */
	int n, cap;
	struct job **jobs; /* owned */
	int njobs, jcap;
	/* Called for each rank before it is freed, to release what the owner put in it (its
	 * pidfd, its slot mapping): this table does no I/O. NULL: nothing to release. */
	void (*release)(struct rank *k);
};

void ranks_init(struct ranks *r);
void ranks_fini(struct ranks *r);
/* The live rank at pid, else the newest exited one; NULL when none. */
struct rank *ranks_find(const struct ranks *r, int pid);
/* The live rank at pid; NULL when none. */
struct rank *ranks_find_live(const struct ranks *r, int pid);
/* A zeroed rank for the incarnation (pid, start_ns), member of job (uid, job_id) (created when
 * new). NULL on ENOMEM. */
struct rank *ranks_add(struct ranks *r, int pid, uint64_t start_ns, uid_t uid, const char *job_id);
/* Forget a rank (and its job once it has no member left). */
void ranks_remove(struct ranks *r, struct rank *k);
struct job *ranks_job_find(const struct ranks *r, uid_t uid, const char *id);
/* A user's share of the table (lib/shares.c's "ranks"): what uid holds, live and exited; of
 * them, those ended whose exit was judged. */
int ranks_user_count(const struct ranks *r, uid_t uid);
int ranks_user_ended(const struct ranks *r, uid_t uid);
/* The exited rank of uid to forget first when its share is full: one whose exit was judged,
 * of a job with no live rank before one of a live job, the earliest ended first; NULL none. */
struct rank *ranks_user_oldest_ended(const struct ranks *r, uid_t uid);
void rank_add_signal(struct rank *k, const struct rank_sig *s);
/* Does job j have a live member? */
int job_has_live(const struct job *j);
/* Does a live member of j have rank `rank`? */
int job_holds_live(const struct job *j, int rank);
/*
 * The rank of a process that registers into job j (NULL: a job not in the table yet): told,
 * the rank it named (>= 0), as it is; else env_rank, its launcher's variable (>= 0; -1 none),
 * when no live member of j holds it; both with source IDENT_CLIENT. Else the lowest rank no
 * live member of j holds, source IDENT_ASSIGNED: processes that name no rank get distinct
 * ranks, each its own for its life (an ended rank's number is given again, as to a rank
 * restarted). Sets ret_id's rank and source; 0, or -ENOMEM (ret_id untouched).
 */
int job_pick_rank(const struct job *j, int told, int env_rank, struct rank_ident *ret_id);
/* The largest world size its members say, -1 none. */
int job_world_size(const struct job *j);
/* A new run of job j: its exited members are forgotten (after `drop` was called for each, to
 * release what the caller holds for them), the per-run verdict is cleared, run is counted. */
void ranks_job_new_run(struct ranks *r, struct job *j, uint64_t now,
		       void (*drop)(void *ctx, struct rank *k), void *ctx);
/* Is k a stray of its job: it ended while a member that started before it, with the same
 * rank, still lives? (A process that inherited a rank's variables: a wrapper script's `date`,
 * a helper the launcher ran; not the rank's incarnation, which came first.) Its end says
 * nothing of the job: the verdict leaves it out. */
int rank_is_stray(const struct job *j, const struct rank *k);
/* Rank k replaces its ended incarnations in its job (a rank restarted alone): all but the
 * latest are forgotten (drop called for each first), so that a job's rows stay bounded by
 * twice its size. Returns how many. */
int ranks_job_drop_replaced(struct ranks *r, struct rank *k,
			    void (*drop)(void *ctx, struct rank *k), void *ctx);
/* The run of j was hung as e began to end it: its verdict (j->res: why, culprits) is kept from
 * now on; the first end only. */
void job_keep_hang(struct job *j, const struct jobend *e);
/* DET_HANG_END_* of j, for det_job_state. */
int job_hang_end(const struct job *j);
/* What a decision asks of the rank now (its slot): DET_ASKED_*, 0 nothing or no slot. */
int rank_asked(const struct rank *k);
/* A rank resumed with its slot (an agent restarted): the generation the earlier agent gave it
 * (dp_slot_generation), or none (gen_unknown: it waits for its first decision). */
void rank_slot_generation(struct rank *k);

#endif
