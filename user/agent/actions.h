/*
 * What the agent does about a job's verdict: the hang report (with every rank's state and the
 * culprit's threads and stacks), job_failed, recovered, the soft-timeout signal (only to ranks
 * it cannot kill), and the hard-timeout action (report, terminate the culprit, terminate or
 * kill the job), SIGTERM first with SIGKILL after the grace.
 *
 * The agent's one queue of SIGKILLs after a grace is here too: the hard action's, the timer
 * service's escalated expiries (agent/timersvc.c) and the decider's ends of old ranks and
 * launchers (agent/decide_act.c). Each kill goes through a copy of the process's pidfd, so a
 * pid reused meanwhile is never signalled; its timerfd is an urgent handler of the loop.
 */
#ifndef FTBPF_ACTIONS_H
#define FTBPF_ACTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/views.h"
#include "lib/ratelimit.h"

struct ftbpf_config;
struct eventlog;
struct jobstate;
struct ranks;
struct job;
struct loop;
struct pending_kill;

struct actions {
	const struct ftbpf_config *cfg; /* borrowed (all of these) */
	struct eventlog *el;
	struct jobstate *js;
	struct ranks *ranks; /* a killed process's rank, for its event */
	struct view_src vs;  /* for the hang report */
	uint64_t hangs, sent;
	uint64_t kills; /* SIGKILLs sent after a grace */
	/* the SIGKILLs waiting for their grace (actions_open) */
	struct pending_kill *pk; /* owned */
	int npk;
	int kfd;		  /* timerfd armed at the earliest (owned) */
	struct ratelimit rl_full; /* the queue-full warning */
};

/* Open the kill queue (the fields above are set). 0, or -errno with a message in err. */
int actions_open(struct actions *ac, struct loop *loop, char *err, size_t errlen);
/* Close it; pending kills are dropped. Safe on a zeroed struct and twice. */
void actions_close(struct actions *ac);
/* Act on job j's verdict (j->res, its members' hung/culprit), once per stall. */
void actions_job(struct actions *ac, struct job *j, uint64_t now);
/* SIGKILL the process (through a copy of pidfd) after cfg->grace_s unless it is gone. rank: a
 * rank terminated by a job action (else a timer's process, or a launcher). */
void actions_kill_after_grace(struct actions *ac, int pid, int pidfd, uid_t uid, int rank);
/* Send the SIGKILLs that are due; re-arm the timerfd (its handler calls this; so does the
 * scan, in case it failed). */
void actions_kills_due(struct actions *ac);

#endif
