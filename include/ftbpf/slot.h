/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A process's slot: one page shared by the process (libftbpf), the agent and the BPF tracker,
 * holding its countdown timers and progress counters. Every registered process has a slot of
 * its own (a separate BPF map), so it can write only its own timers. Fixed-width types only.
 */
#ifndef FTBPF_SLOT_H
#define FTBPF_SLOT_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define FTBPF_SLOT_MAGIC     0x66746270u /* "ftbp" */
#define FTBPF_SLOT_VERSION   1u
#define FTBPF_SLOT_TIMERS    16
#define FTBPF_SLOT_SCOPE_LEN 40

/* ftbpf_slot_timer.state */
#define FTBPF_TS_FREE  0u
#define FTBPF_TS_ARMED 1u
#define FTBPF_TS_FIRED 2u /* expired and acted on (by the kernel or the agent) */
#define FTBPF_TS_BUSY  3u /* being written by its owner */

struct ftbpf_slot_timer {
	__u64 deadline_ns; /* CLOCK_MONOTONIC */
	__u64 state;	   /* FTBPF_TS_*; 64-bit for compare-and-swap on every BPF ISA */
	__u32 sig;
	__u32 pad;
	char scope[FTBPF_SLOT_SCOPE_LEN];
};

/*
 * What the agents decided for the process's job (written by the agent, read by the process):
 * the checkpoint step every rank saves at, and how the job restarts. The agent writes it under a
 * sequence lock (seq odd while writing); a reader retries while seq is odd or changed.
 */
#define FTBPF_NODE_LEN	   32
#define FTBPF_MAX_EXCLUDED 4

/* ftbpf_slot_decision.ckpt_state */
#define FTBPF_CK_NONE	   0u
#define FTBPF_CK_REQUESTED 1u /* save at ckpt_step */
#define FTBPF_CK_COMPLETE  2u /* every rank of the job saved ckpt_step */
#define FTBPF_CK_PENDING                                                                           \
	3u /* requested, the step not yet bound: every rank acknowledges it at
				 its next step boundary (ack_id, ack_step) and waits at the one
				 after until the agents bind the step (ckpt_step) */
#define FTBPF_CK_FAILED                                                                            \
	4u /* a rank's save of ckpt_step failed or was refused: this request ends
			      without a checkpoint (a preemption asks for another one) */

/* ftbpf_slot_decision.action: what the process should do now */
#define FTBPF_ACT_NONE	  0u
#define FTBPF_ACT_RESTART 1u /* exit with exit_code (42): the job restarts (requeue) */
#define FTBPF_ACT_STOP	  2u /* exit with exit_code (93): do not requeue (restart budget spent) */

/* ftbpf_slot_decision.cause: why the current generation began */
#define FTBPF_CAUSE_NONE       0u
#define FTBPF_CAUSE_PREEMPTION 1u
#define FTBPF_CAUSE_RANK_DIED  2u
#define FTBPF_CAUSE_HANG       3u
#define FTBPF_CAUSE_NODE_DEAD  4u
#define FTBPF_CAUSE_OPERATOR   5u

struct ftbpf_slot_decision {
	__u64 seq;	   /* odd while the agent writes */
	__u64 generation;  /* restart generation of the job (0: the first run) */
	__s64 ckpt_step;   /* the agreed checkpoint step, -1 none */
	__u64 ckpt_id;	   /* which request (a new one when the step is re-targeted) */
	__u32 ckpt_state;  /* FTBPF_CK_* */
	__u32 action;	   /* FTBPF_ACT_* */
	__s64 resume_step; /* the last complete agreed checkpoint, -1 none */
	__u32 cause;	   /* FTBPF_CAUSE_* of the current generation */
	__u32 exit_code;   /* what the process exits with for the action (42, 93) */
	__u32 nexcluded;
	__u32 pad;
	char excluded[FTBPF_MAX_EXCLUDED][FTBPF_NODE_LEN]; /* nodes left out of this generation */
};

struct ftbpf_slot {
	__u32 magic;
	__u32 version;
	__u64 earliest_ns; /* earliest armed deadline, 0 none: the one value the kernel checks */
	__u64 progress;	   /* ftbpf_ping() count */
	__u64 ping_ns;
	__u64 step;
	__u64 step_ns;
	__u64 fired;	      /* timers fired by the kernel at syscall entry */
	__u64 owner_start_ns; /* start time (since boot) of the process the slot is for: a later
				 process at its pid is never signalled through it */
	struct ftbpf_slot_timer timers[FTBPF_SLOT_TIMERS];
	/* appended (the layout above is unchanged: an older library still works) */
	struct ftbpf_slot_decision dec;
	__s64 saved_step; /* written by the process: the last checkpoint step it saved, -1 none */
	__u64 saved_ns;
	/* appended (version 2; an older library leaves them 0) */
	__u64 ack_id;	   /* process: the pending request (ckpt_id) it has seen ... */
	__s64 ack_step;	   /* ... at this step boundary first */
	__s64 saving_step; /* process: should_save answered 1 for this step (-1 none) */
	__u64
	    saved_generation; /* process: the generation saved_step was saved in, + 1 (0 unknown) */
	__u64 own_generation; /* agent: the generation this process runs in */
	__u32 hold;	      /* agent: wait at the next step boundary (the store is unreachable:
				   nothing may be agreed, and other nodes may soon act without us) */
	__u32 settling;	      /* agent: a generation is being decided here (a rank failed): what the
			   slot says may change in a moment (restart_info waits for it) */
	/* appended (an older agent leaves it 0: no token) */
	__u64 fence_token; /* agent: the fencing token of own_generation (run << 32 | generation:
			      it grows across runs of the job; docs/decisions.md) */
	/* appended (an older library leaves it 0) */
	__u64 failed_step; /* process: its save of step failed_step - 1 failed or was refused
			      (0 none): the request ends failed, not stuck waiting for it */
};

#endif
