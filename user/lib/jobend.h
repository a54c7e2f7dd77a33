/*
 * How a run of a job ended, when it was hung as it began to end: who ended its first rank (the
 * agent's hard action, the launcher, an operator, the rank itself) and the hang verdict kept,
 * so that a hung job ended by hand stays a hang with its culprit, never a failure. Pure logic,
 * tested by tests/unit/test_jobend.c.
 */
#ifndef FTBPF_JOBEND_H
#define FTBPF_JOBEND_H

#include <stddef.h>
#include <stdint.h>

#include "lib/detector.h"

/* Who ended a rank. */
enum jobend_by {
	JOBEND_NONE = 0,
	JOBEND_AGENT,	 /* the agent's own action (the hard timeout, a decision) */
	JOBEND_LAUNCHER, /* what launched it: torchrun, mpirun, slurmstepd, its wrapper */
	JOBEND_OPERATOR, /* another process: a person's kill, a script, a terminal's Ctrl-C */
	JOBEND_ITSELF,	 /* it exited, or died of its own fault (SIGSEGV, abort, the OOM killer) */
	JOBEND__N
};

/* The end that began a hung run's end. */
struct jobend {
	enum jobend_by by;
	int pid, rank;
	int status; /* raw wait status */
	uint32_t sender_pid;
	char sender_comm[16];
};

/* "agent", "launcher", "operator", "itself" ("" for none). */
const char *jobend_by_name(enum jobend_by by);
/* enum from a name; JOBEND_NONE when it is none of them */
enum jobend_by jobend_by_parse(const char *name);

/*
 * Who ended the exited rank s: the agent when s->killed; else whoever sent its fatal signal:
 * one of the launcher pids (its launcher, its wrapper) is the launcher, the rank itself or
 * nobody (a fault, an exit code) is the rank, anyone else is an operator. oom: the kernel's
 * OOM killer chose it (its SIGKILL is sent from whatever process ran out of memory).
 */
enum jobend_by jobend_cause(const struct det_sample *s, const int *launchers, int nlaunchers,
			    int oom);

/*
 * Does a run whose previous verdict was prev now begin to end while hung? A hang stands when
 * the previous verdict was hung and not failed (a rank that died on its own first is the
 * cause), and a rank has exited since prev_ns (the previous verdict's time). Returns the index
 * of the rank whose exit came first since then, -1 when the hang does not stand.
 */
int jobend_of_hang(const struct det_job *prev, const struct det_sample *s, int n, uint64_t prev_ns);

/*
 * In words: "hung, then ended by the operator: SIGKILL to rank 1 (pid 42) from kill (pid 7)";
 * buf is always terminated.
 */
const char *jobend_text(const struct jobend *e, char *buf, size_t len);

#endif
