/*
 * The inspector: three worker threads (Python stacks, CUDA/NCCL probe scans, NCCL RAS queries:
 * none waits behind another's long job) that do, off the event loop, everything that
 * reads what a rank names — the files it maps (ELF symbol tables: CUDA/NCCL probe sites, the CPython
 * interpreter) and its memory (Python stacks). The loop never waits for it: it submits a job
 * and gets the answer later through a callback run on its own thread by inspector_poll (when
 * inspector_fd is readable, or at its next scan), or the answer -ETIMEDOUT once the job's time
 * limit passed, whatever the worker is doing. Pending jobs are bounded in all and per user.
 */
#ifndef FTBPF_INSPECTOR_H
#define FTBPF_INSPECTOR_H

#include <stdint.h>
#include <sys/types.h>

struct inspector;
struct gpuprobe;
struct py_stack;
struct ras_answer;
struct ras_report;

/* Called on the thread that calls inspector_poll, exactly once per accepted job. s is the
 * result (valid during the call only) when err is 0; why says what went wrong otherwise. */
typedef void (*inspector_py_fn)(void *ctx, int pid, int err, const struct py_stack *s,
				const char *why);

/* Called like inspector_py_fn for an NCCL RAS query: a (the connection: who answered, the
 * reply's format) and rep (what concerns the job; NULL for a text reply) when err is 0. */
typedef void (*inspector_ras_fn)(void *ctx, int err, const struct ras_answer *a,
				 const struct ras_report *rep, const char *why);

/* gp (borrowed, may be NULL): CUDA/NCCL probes are attached by the worker. NULL with errno. */
struct inspector *inspector_new(struct gpuprobe *gp);
/* Stops the worker (after its current job) and answers every job still waiting -ECANCELED. */
void inspector_free(struct inspector *in);
/* An eventfd, readable when answers wait: call inspector_poll. */
int inspector_fd(const struct inspector *in);
/* Run the callbacks of answered jobs and of jobs past their time limit. */
void inspector_poll(struct inspector *in);

/*
 * Read pid's Python stacks within timeout_s. pidfd (borrowed; duplicated) names the process.
 * 0 when queued (fn will be called), -EAGAIN when too many jobs wait (in all, or of uid).
 */
int inspector_pystack(struct inspector *in, int pid, int pidfd, uid_t uid, double timeout_s,
		      inspector_py_fn fn, void *ctx);
/* The same, waiting for the answer (ftbpf-ci): 0 and *out, or -errno with why. */
int inspector_pystack_wait(struct inspector *in, int pid, int pidfd, double timeout_s,
			   struct py_stack *out, char *why, size_t whylen);
/* Probe the CUDA/NCCL libraries pid maps (one job per pid at a time; no answer). */
int inspector_gpuprobe(struct inspector *in, int pid, int pidfd, uid_t uid);

/*
 * Ask NCCL's RAS (os/rasclient.h) in pid's network namespace, at the address of its
 * environment, for the job whose live ranks here are job_pids (the server must be one of them;
 * at most INSPECTOR_RAS_PIDS are kept). 0 when queued, -EAGAIN when too many jobs wait.
 */
#define INSPECTOR_RAS_PIDS 64
int inspector_ras(struct inspector *in, int pid, int pidfd, uid_t uid, const int *job_pids,
		  int njob, double timeout_s, inspector_ras_fn fn, void *ctx);

struct inspector_counters {
	uint64_t jobs, timed_out, refused;
};
void inspector_counters(const struct inspector *in, struct inspector_counters *ret);

#endif
