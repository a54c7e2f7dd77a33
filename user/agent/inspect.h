/*
 * Python stacks in the agent's answers, read off the event loop by the inspector
 * (watch/inspector.h): an explain reply waits for them (ctl_defer), a hang report is emitted
 * once they are in — or once their time limit passed, with "python_stack_error" saying so. The
 * loop never waits.
 */
#ifndef FTBPF_INSPECT_H
#define FTBPF_INSPECT_H

struct inspector;
struct ctl_server;
struct eventlog;
struct rank;
struct job;
struct json_object;

#define PYSTACKS_TIMEOUT_S 2.0
/* A hang report reads every rank's Python stacks in a job of at most this many ranks, only the
 * culprits' in a larger one. */
#define PY_STACK_ALL_RANKS 16

/* From explain's handler: read k's stacks into the reply o. 1: deferred (o is owned here and
 * goes out with the stacks); 0: nothing to wait for (o may have "python_stack_error"). */
int inspect_explain(struct inspector *ins, struct ctl_server *ctl, const struct rank *k,
		    struct json_object *o);
/* A process of `ftbpf stacks`: its Python stacks go into o (an object of the reply). */
struct inspect_target {
	int pid;
	int pidfd; /* owned (closed once read) */
	unsigned uid;
	struct json_object *o;
};
/* STACKS_MAX processes at most in one reply; their Python stacks are read PYSTACKS_PARALLEL at
 * a time (a user has 16 inspections waiting at most). */
#define STACKS_MAX	  64
#define PYSTACKS_PARALLEL 8
/* From stacks' handler: read the targets' Python stacks (t is copied; every pidfd is owned
 * here from now), then send reply o. 1: deferred; 0: o is to be sent now. */
int inspect_many(struct inspector *ins, struct ctl_server *ctl, struct json_object *o,
		 const struct inspect_target *t, int n);
/* The hang event ev of job j (owned here from now): its ranks' stacks (the culprits', every
 * rank's in a small job) are added, then it is emitted into el. */
void inspect_hang(struct inspector *ins, struct eventlog *el, const struct job *j,
		  struct json_object *ev);

#endif
