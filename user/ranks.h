/* The agent's table of ranks and the jobs they form. Owns every struct rank and struct job. */
#ifndef FTBPF_RANKS_H
#define FTBPF_RANKS_H

#include <stdint.h>
#include <sys/types.h>

#include "detector.h"
#include "ident.h"

struct ftbpf_slot;

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
	int pidfd; /* owned; -1 when the process could not be opened */
	uid_t uid;
	struct rank_ident id;
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
	int maps_scanned;	 /* its libraries were looked at for CUDA/NCCL probes */
	uint64_t api_calls;	 /* probed CUDA/NCCL calls of its main thread */
	int slot_fd;		 /* registered process's slot map (owned), -1 none */
	struct ftbpf_slot *slot; /* the agent's mapping of it (owned) */
};

struct job {
	char id[FTBPF_JOB_LEN];
	struct det_job res;
	int reported; /* hang report emitted for the current stall */
	int soft_signalled;
	int action_done;
	int failed_reported;
	uint64_t hung_seen_ns;
};

struct ranks {
	struct rank **v; /* owned */
	int n, cap;
	struct job *jobs; /* owned; rebuilt by ranks_jobs_refresh */
	int njobs, jcap;
};

void ranks_init(struct ranks *r);
void ranks_fini(struct ranks *r);
struct rank *ranks_find(const struct ranks *r, int pid);
/* Adds a zeroed rank for pid (replacing an old entry of a reused pid); NULL on ENOMEM. */
struct rank *ranks_add(struct ranks *r, int pid);
void ranks_remove(struct ranks *r, int pid);
struct job *ranks_job(struct ranks *r, const char *id); /* find or create; NULL on ENOMEM */
/* Drop jobs that have no ranks left. */
void ranks_jobs_prune(struct ranks *r);
void rank_add_signal(struct rank *k, const struct rank_sig *s);

#endif
