/*
 * The gate a job part passes before it is believed: its sender must plausibly be one of the
 * job's hosts (lib/partclaim.h: a member of the job's current run when a shared store says who
 * those are; ranks of the job's world always). A refusal is counted (parts_not_member,
 * parts_outside_world) and said to root at most once a minute (part_refused).
 */
#ifndef FTBPF_PARTGATE_H
#define FTBPF_PARTGATE_H

#include <stdint.h>

#include "lib/ratelimit.h"

struct job;
struct eventlog;
struct part_packet;
struct json_object;

struct partgate {
	/* is addr a member of the job's current run: 1, 0, -1 not known (decide_part_member;
	 * NULL: never known) */
	int (*member)(void *ctx, uint32_t uid, const char *job, const char *addr);
	void *member_ctx;
	struct eventlog *el; /* NULL: no events */
	uint64_t not_member, outside_world;
	struct ratelimit rl;
};

/* 1: p (about job j, NULL when the job is not here) may be believed as to who sent it; 0:
 * refused, counted and said. */
int partgate_pass(struct partgate *g, const struct job *j, const struct part_packet *p,
		  uint64_t now);
/* parts_not_member, parts_outside_world into c. */
void partgate_counters(const struct partgate *g, struct json_object *c);

#endif
