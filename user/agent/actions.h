/*
 * What the agent does about a job's verdict: the hang report (with every rank's state and the
 * culprit's threads and stacks), job_failed, recovered, the soft-timeout signal (only to ranks
 * it cannot kill), and the hard-timeout action (report, terminate the culprit, terminate or
 * kill the job), SIGTERM first with SIGKILL after the grace.
 */
#ifndef FTBPF_ACTIONS_H
#define FTBPF_ACTIONS_H

#include <stdint.h>

#include "agent/views.h"

struct ftbpf_config;
struct eventlog;
struct timersvc;
struct jobstate;
struct job;

struct actions {
	const struct ftbpf_config *cfg; /* borrowed (all of these) */
	struct eventlog *el;
	struct timersvc *ts;
	struct jobstate *js;
	struct view_src vs; /* for the hang report */
	uint64_t hangs, sent;
};

/* Act on job j's verdict (j->res, its members' hung/culprit), once per stall. */
void actions_job(struct actions *ac, struct job *j, uint64_t now);

#endif
