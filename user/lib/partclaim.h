/*
 * Whether a host may speak about a job: a part from another host is believed only when its
 * sender is plausibly one of the job's hosts (docs/security.md, "what a key holder can and
 * cannot do"). Pure: the caller says what it knows (tests/unit/test_partclaim.c).
 */
#ifndef FTBPF_PARTCLAIM_H
#define FTBPF_PARTCLAIM_H

#include "lib/jobview.h"

enum pc_verdict {
	PC_OK = 0,
	PC_NOT_MEMBER,	 /* the run's members are known, and the sender is none of them */
	PC_OUT_OF_WORLD, /* a rank it claims is not a rank of the job's world */
};

/* What the receiver knows of the job's membership. */
struct pc_job {
	int world; /* the job's world size as its ranks here say (0 unknown) */
	/* 1: the sender's address is a member's (a members/ record of the job's current run in a
	 * shared store), 0: the run's members are known and it is none of them, -1: not known
	 * (no shared store, or no member there names its mesh address yet) */
	int member;
};

/*
 * May the part pt be believed, as to who may send it? PC_OK, or why not. Which ranks another
 * host already holds is judged afterwards (first claim, a live mesh member before a stranger).
 */
enum pc_verdict partclaim_judge(const struct pc_job *j, const struct jv_part *pt);
/* The verdict in a few words ("" for PC_OK). */
const char *partclaim_why(enum pc_verdict v);

#endif
