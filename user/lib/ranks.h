/*
 * The agent's table of ranks and the jobs they form. Owns every struct rank and struct job.
 * A rank is one process incarnation (pid + start time): a new process at the pid of an exited
 * rank is a new rank, and the exited one stays listed until it is forgotten. A job is
 * (owner uid, id): ranks of different users never share a job. A job lists its members.
 */
#ifndef FTBPF_RANKS_H
#define FTBPF_RANKS_H

#include <stdint.h>
#include <sys/types.h>

#include "lib/cadence.h"
#include "lib/container.h"
#include "lib/detector.h"
#include "lib/ident.h"

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
	int killed_by_agent;	 /* our hard-timeout action sent it SIGTERM/SIGKILL */
	int maps_scanned;	 /* its libraries were looked at for CUDA/NCCL probes */
	uint64_t generation;	 /* the job's restart generation when it was adopted */
	uint64_t dec_written;	 /* the decision version last written into its slot */
	int preempted;		 /* it got a preemption signal from another process */
	int fail_seen;		 /* its abnormal exit was taken into account */
	uint64_t api_calls;	 /* probed CUDA/NCCL calls of its main thread */
	uint64_t folded_seen;	 /* events the kernel folded, as last reported */
	uint64_t folded_ns;	 /* when */
	struct container_id ctr; /* its container and pod, from its cgroup ("" none) */
	int slot_fd;		 /* registered process's slot map (owned), -1 none */
	struct ftbpf_slot *slot; /* the agent's mapping of it (owned) */
	struct cad_rank cad;	 /* its step cadence (agent/cadwatch.c) */
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
	struct cad_job cad;  /* its step cadence (agent/cadwatch.c) */
};

struct ranks {
	struct rank **v; /* owned */
	int n, cap;
	struct job **jobs; /* owned */
	int njobs, jcap;
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
/* A user's share of the table: live ranks of uid (root's are not limited by the agent). */
#define RANKS_PER_USER_MAX 8192
int ranks_user_live(const struct ranks *r, uid_t uid);
void rank_add_signal(struct rank *k, const struct rank_sig *s);

#endif
