/* The decision policy's tests' fixture (tests/unit/test_decide_*.c): one job's records, this
 * node's memory and ranks as the store and the slots would give them, and what a look claims. */
#ifndef DECIDE_FIXTURE_H
#define DECIDE_FIXTURE_H

#include <CUnit/Basic.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/decide_policy.h"
#include "lib/decide_records.h"

static struct dp_config cfg;
static struct dp_records rec;
static struct dp_memory mem;
static struct dp_out out;
static struct dp_rank rk[4];
static struct dp_now now = {.mono_ms = 100000, .wall_ms = 1700000000000ull};

static inline void reset(void)
{
	memset(&cfg, 0, sizeof(cfg));
	strcpy(cfg.node, "n1");
	cfg.shared = 1;
	cfg.preempt_mask = 1ull << SIGTERM;
	cfg.margin = 2;
	cfg.restart_exit_code = 42;
	cfg.stop_exit_code = 93;
	cfg.max_restarts = 3;
	cfg.restart_window_s = 3600;
	cfg.node_fault_limit = 2;
	cfg.recovery_wait_s = 0;
	cfg.fence_after_s = 3;
	cfg.hold_after_s = 1.5;
	cfg.lease_ttl_s = 3;
	dr_clear(&rec); /* the node tables freed */
	rec.reachable = 1;
	rec.last_complete = -1;
	rec.g.resume_step = -1;
	dp_memory_clear(&mem);
	memset(&out, 0, sizeof(out));
	memset(rk, 0, sizeof(rk));
	for (int i = 0; i < 4; i++) {
		rk[i].pid = 1000 + i;
		rk[i].rank = i;
		rk[i].has_slot = rk[i].registered = 1;
		rk[i].step = 10;
		rk[i].saved = rk[i].saving = rk[i].ack = rk[i].failed = -1;
		rk[i].saved_here = 1;
		rk[i].started_known = 1;
		rk[i].start_ms = now.mono_ms - 60000;
	}
}

/* Request n of the current generation, bound at step. */
static inline void bound_request(uint64_t n, int64_t step)
{
	rec.ck_n = n;
	rec.ck.id = n;
	rec.ck.target = step;
	rec.bound = 1;
	rec.bind_target = step;
}

/* Node's member record, to change (NULL: none). */
static inline struct dp_node_member *member_of(const char *node)
{
	return (struct dp_node_member *)dp_member(&rec, node);
}

/* Node's member record (added in node order: the table is sorted), to change further. */
static inline struct dp_node_member *member(const char *node, int ranks, uint64_t gen)
{
	struct dec_member m = {.ranks = ranks, .generation = gen, .lease = 7, .lease_ttl_s = 3};

	CU_ASSERT_EQUAL_FATAL(dr_add_member(&rec, node, &m), 0);
	return member_of(node);
}

/* Node's report on the current request (in node order), to change further. */
static inline struct dec_report *report(const char *node, int ranks, int saved)
{
	struct dec_report x = {.ranks = ranks, .saved = saved, .max_step = 10};

	CU_ASSERT_EQUAL_FATAL(dr_add_report(&rec, node, &x), 0);
	return (struct dec_report *)dp_report(&rec, node);
}

/* Node left out of the current generation with its ranks (out/G/NODE); its record refused. */
static inline void left_out(const char *node, int ranks)
{
	CU_ASSERT_EQUAL_FATAL(dr_add_out(&rec, node, ranks), 0);
}

static inline void out_refused(const char *node)
{
	CU_ASSERT_EQUAL_FATAL(dr_add_out_refused(&rec, node), 0);
}

static inline int count(enum dp_act_kind kind)
{
	int n = 0;

	for (int i = 0; i < out.nacts; i++)
		n += out.acts[i].kind == kind;
	return n;
}

/* The gen/ claim made by the last look, parsed (0), or -ENOENT. */
static inline int claimed_gen(struct dec_gen *g)
{
	for (int i = 0; i < out.nwrites; i++)
		if (out.writes[i].claim && !strncmp(out.writes[i].rel, "gen/", 4))
			return dec_gen_parse(out.writes[i].value, g);
	return -ENOENT;
}

static inline int claimed_ckpt(struct dec_ckpt *c)
{
	for (int i = 0; i < out.nwrites; i++)
		if (out.writes[i].claim && !strncmp(out.writes[i].rel, "ckpt/", 5))
			return dec_ckpt_parse(out.writes[i].value, c);
	return -ENOENT;
}

static inline int claimed(const char *kind)
{
	for (int i = 0; i < out.nwrites; i++)
		if (out.writes[i].claim && !strncmp(out.writes[i].rel, kind, strlen(kind)))
			return 1;
	return 0;
}

#endif
