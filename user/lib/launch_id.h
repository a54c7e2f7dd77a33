/*
 * A job's launch identity (docs/decisions.md, "Job and run"): what the launcher says about one
 * launch of the job, the same on every host of that launch and another for the next one, and
 * the rule that maps it to the job's run in the store (launches/<key>, claimed once).
 */
#ifndef FTBPF_LAUNCH_ID_H
#define FTBPF_LAUNCH_ID_H

#include <stddef.h>
#include <stdint.h>

#define LAUNCH_ID_MAX  128 /* an id's bytes at most (printable ASCII, no space) */
#define LAUNCH_ID_LEN  (LAUNCH_ID_MAX + 1)
#define LAUNCH_KEY_LEN 33 /* 32 hex digits: the id's BLAKE2b-128, a key component */

/*
 * The launch id from an environment block (NUL-separated "K=V", as /proc/PID/environ), first
 * match wins: FTBPF_LAUNCH_ID ("ftbpf:V"); Slurm: SLURM_JOB_ID with SLURM_STEP_ID
 * ("slurm:JOB.STEP"; an mpirun or torchrun inside a step is that step's launch); Open MPI /
 * PMIx: PMIX_NAMESPACE ("pmix:V"), OMPI_MCA_ess_base_jobid or OMPI_MCA_orte_ess_jobid
 * ("ompi:V"). A Slurm requeue (SLURM_RESTART_COUNT) is the same launch: the restart the agents
 * decided (exit 42, requeued), in the same run, whose restart budget spans the requeues.
 * torchrun alone says nothing job-wide (TORCHELASTIC_RESTART_COUNT is its agent's own).
 * Returns 0 with the id in out (LAUNCH_ID_LEN bytes), "" when the launcher says nothing usable
 * (a launcher's value that is not a valid id is passed over); -EINVAL when FTBPF_LAUNCH_ID is
 * set but not valid (out ""): the rank has no launch id.
 */
int launch_id_from_environ(const char *env, size_t len, char out[LAUNCH_ID_LEN]);
/* 1..LAUNCH_ID_MAX bytes of printable ASCII but the space: 1 valid, 0 not. */
int launch_id_valid(const char *id);
/* The id's key component in the store: 32 lowercase hex digits. 0, or -EINVAL (not valid). */
int launch_id_key(const char *id, char out[LAUNCH_KEY_LEN]);

/* What the store says, for the run choice of a rank with a launch id. */
struct launch_id_view {
	int have;	    /* launches/<key> is there (and well formed) */
	uint64_t rec_run;   /* ... its run */
	uint64_t cur;	    /* the job's latest run (0 none) */
	uint64_t cur_other; /* the latest run not claimed for this launch (0 none) */
};
enum launch_id_choice {
	LAUNCH_ID_JOIN = 0,  /* the launch's run: *ret_run */
	LAUNCH_ID_NEW = 1,   /* none yet: claim run *ret_run (cur + 1) and launches/<key> */
	LAUNCH_ID_STALE = 2, /* a newer launch began since: refused, no run (*ret_run: its own) */
};
/*
 * The run of a rank of a launch: the launch's run when it has one (whatever this host's own
 * heuristics would say: a host relaunching alone with the launch's id joins it), unless a run
 * of another launch began after it (stale: refused); a new run when it has none. A run claimed
 * for this launch by a host that lost the launches/<key> race (so the latest run, of no other
 * launch) does not make the launch stale: its hosts join the run that won.
 */
enum launch_id_choice launch_id_run_choose(const struct launch_id_view *v, uint64_t *ret_run);

#endif
