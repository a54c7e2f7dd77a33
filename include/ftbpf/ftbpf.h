/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libftbpf: the client library of the ftbpf node agent, for training code.
 *
 * Countdown timers with torch.distributed.elastic semantics, enforced from the kernel: if a
 * scope is not released before its expiry, the process gets the timer's signal (SIGKILL by
 * default) the moment it enters a syscall, or from the agent within one scan interval when it
 * makes none. Acquire, release, ping and step are plain stores into the process's own slot,
 * a page shared with the agent and the kernel: no syscall, no lock, thread-safe.
 *
 * Link with -lftbpf (shared or static). Functions return 0 (or a timer id >= 0) on success and
 * a negative errno on failure; none of them prints or exits.
 */
#ifndef FTBPF_CLIENT_H
#define FTBPF_CLIENT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ftbpf;

/*
 * ftbpf_open - connect to ftbpfd and map this process's slot.
 * @socket_path: control socket; NULL for $FTBPF_SOCKET, else /run/ftbpf/ftbpfd.sock.
 * @job, @rank: identity to use if the process is not already adopted as a rank from its
 *              environment (RANK/WORLD_SIZE, OMPI_*, FTBPF_*); job NULL: $FTBPF_JOB, else
 *              the agent names one ("client:PID"); rank -1: the agent gives one, the lowest
 *              no live rank of that job on this host holds (status: source "assigned").
 * @ret: the handle, owned by the caller until ftbpf_close().
 * Registers the calling process (the agent checks it by SO_PEERCRED). Returns 0, -ECONNREFUSED
 * or -ENOENT when no agent listens, -EPROTO on an unexpected answer. With FTBPF_AGENT_WAIT=S
 * in the environment, a process whose agent does not listen (being restarted) waits for it S
 * seconds at most (once per process) rather than train on without coordinated decisions.
 */
int ftbpf_open(const char *socket_path, const char *job, int rank, struct ftbpf **ret);

/* ftbpf_close - release every timer still armed and drop the mapping. Accepts NULL. */
void ftbpf_close(struct ftbpf *h);

/*
 * ftbpf_timer_acquire - arm a countdown timer for @scope.
 * @expires_in: seconds from now (>= 0).
 * @sig: signal sent at expiry; 0 for SIGKILL (torch's default).
 * Returns a timer id (>= 0) for ftbpf_timer_release(), or a negative errno. Up to 16 timers
 * live in the slot (a few ns each); beyond that they are kept by the agent through the control
 * socket (a round trip each), never dropped. Scopes may nest and threads may acquire
 * concurrently. A @scope longer than 39 bytes is kept in the slot as "~" and its last 38
 * bytes ("~ng/path/train.py#123"); through the socket, up to 100 bytes.
 */
int ftbpf_timer_acquire(struct ftbpf *h, const char *scope, double expires_in, int sig);

/*
 * ftbpf_timer_release - disarm a timer. Releasing a timer that already expired is a no-op
 * (as in torch): returns 0. -EINVAL for an unknown id.
 */
int ftbpf_timer_release(struct ftbpf *h, int id);

/* ftbpf_ping - record progress (the agent's hang detector counts it). */
void ftbpf_ping(struct ftbpf *h);

/* ftbpf_step - record the training step reached (also progress). */
void ftbpf_step(struct ftbpf *h, uint64_t step);

/* ftbpf_slot_timers_in_use - timers armed in the slot now (for tests and diagnostics). */
int ftbpf_slot_timers_in_use(const struct ftbpf *h);

/*
 * Coordinated checkpoints and restarts. The agents of the job's hosts agree on one step at
 * which every rank saves (after a preemption signal, `ftbpf checkpoint JOB`, ...) and on how the
 * job restarts after a failure (a new generation, the nodes left out, the step to resume from).
 * The training loop asks at each step; every call reads the process's slot (no syscall, no
 * lock). With no agent (h NULL: ftbpf_open failed) they answer "nothing requested".
 *
 *	for (step = resume; ; step++) {
 *		uint64_t gen, token;
 *
 *		train_one_step();
 *		if (ftbpf_should_save_gen(h, step, &gen) == 1) {
 *			ftbpf_save_ticket(h, step, NULL, &token);
 *			save_checkpoint(step);                  // into step-N.tmp/
 *			if (ftbpf_saved_gen(h, step, gen) == 0)
 *				commit_checkpoint(step, token); // rename + COMMIT marker
 *				// with the token, refused if the storage has a newer one
 *		}
 *		if (ftbpf_action(h) != FTBPF_ACTION_NONE)
 *			exit(ftbpf_exit_code(h));   // 42: restart (requeue), 93: do not requeue
 *	}
 */
#define FTBPF_ACTION_NONE    0 /* keep training */
#define FTBPF_ACTION_RESTART 1 /* exit with ftbpf_exit_code() (42): the job restarts */
#define FTBPF_ACTION_STOP    2 /* exit with ftbpf_exit_code() (93): do not requeue */

/* ftbpf_checkpoint_requested - 1 when a checkpoint (or an exit) was requested and not yet
 * done (or its step is being agreed), else 0. */
int ftbpf_checkpoint_requested(const struct ftbpf *h);

/*
 * ftbpf_should_save - record that this rank reached @step (a step boundary; a new step is
 * progress, as ftbpf_ping) and say whether to save now: 1 when @step is the agreed checkpoint
 * step and this rank has not saved it yet, 0 otherwise, -EINVAL for a negative step. While the step is being agreed, the first boundary
 * acknowledges the request and the next one waits (at most FTBPF_ACK_TIMEOUT seconds, 60 by
 * default) until it is agreed: no rank runs past the step every rank will save.
 */
int ftbpf_should_save(struct ftbpf *h, int64_t step);
/* ftbpf_should_save_gen - the same; on 1, *@ret_generation is the generation the save belongs
 * to (pass it to ftbpf_saved_gen); its fencing token, for the storage: ftbpf_save_ticket. */
int ftbpf_should_save_gen(struct ftbpf *h, int64_t step, uint64_t *ret_generation);

/*
 * ftbpf_save_ticket - the save ticket should_save last handed out, if it was for @step: its
 * generation and its fencing token (*@ret_token: run << 32 | generation, growing across the
 * job's runs; write it into the checkpoint's metadata, and let the storage refuse a commit whose
 * token is older than the newest it holds). 0, -ENOENT when no ticket of @step (or no agent),
 * -EINVAL for a negative step.
 */
int ftbpf_save_ticket(const struct ftbpf *h, int64_t step, uint64_t *ret_generation,
		      uint64_t *ret_token);

/* ftbpf_fence_token - the fencing token of the generation this process runs in (0: no agent,
 * or an agent that does not give one). A checkpoint to resume from has a token no newer. */
uint64_t ftbpf_fence_token(const struct ftbpf *h);

/*
 * ftbpf_saved - this rank saved its checkpoint of @step: fenced with the ticket should_save gave
 * for @step, as ftbpf_saved_gen. 0 (also with no agent), -ESTALE (do not commit), -ENOENT when
 * should_save handed out no ticket for @step (nothing is counted), -EINVAL for a negative step.
 */
int ftbpf_saved(struct ftbpf *h, int64_t step);
/*
 * ftbpf_saved_gen - this rank saved @step in @generation (the token should_save_gen gave). 0:
 * counted, commit it (write the storage's commit marker with the generation); -ESTALE: a newer
 * generation was decided or this node is cut off from the others: do not commit it.
 */
int ftbpf_saved_gen(struct ftbpf *h, int64_t step, uint64_t generation);
/*
 * ftbpf_save_failed - this rank's save of @step failed (its storage refused the commit: a newer
 * fencing token is there; an I/O error): the agents end the request without a checkpoint instead
 * of waiting for this save forever, and a preemption asks for another one. ftbpf_saved and
 * ftbpf_saved_gen say it themselves when they answer -ESTALE. 0 (also with no agent), -EINVAL
 * for a negative step.
 */
int ftbpf_save_failed(struct ftbpf *h, int64_t step);

/* ftbpf_generation - the job's restart generation: 0 for the first run, +1 per restart. */
uint64_t ftbpf_generation(const struct ftbpf *h);

/* ftbpf_action - what to do now: FTBPF_ACTION_NONE, _RESTART or _STOP. */
int ftbpf_action(const struct ftbpf *h);

/* ftbpf_exit_code - the exit status for the action: 42 (restart) unless the agents decided to
 * stop (93: do not requeue). */
int ftbpf_exit_code(const struct ftbpf *h);

struct ftbpf_restart_info {
	uint64_t generation;
	int64_t resume_step; /* the last complete agreed checkpoint, -1 none */
	int64_t ckpt_step;   /* the agreed checkpoint step in progress or done, -1 none */
	int ckpt_state; /* 0 none, 1 requested, 2 complete, 3 pending (being agreed), 4 failed */
	int action;	/* FTBPF_ACTION_* */
	int exit_code;
	char cause[24]; /* "", "preemption", "rank_died", "hang", "node_dead", "operator" */
	int nexcluded;
	char excluded[4][32]; /* nodes left out of this generation */
};

/* ftbpf_restart_info - a consistent copy of the decisions. 0, or -EINVAL for a NULL @ri. With
 * no agent: generation 0, nothing to resume from. While a generation is being decided for the
 * job on this node (a rank restarted right after a failure), or the job's run is not known yet
 * (the agent cannot read the store: cut off, just started), it (and ftbpf_generation) waits
 * for the decision, 10 s at most; -EAGAIN when it is still not made: @ri then holds what the
 * agent said so far, which is no decision to resume from (ask again). */
int ftbpf_restart_info(const struct ftbpf *h, struct ftbpf_restart_info *ri);

#ifdef __cplusplus
}
#endif
#endif
