/*
 * The decision policy (user/lib/decide_policy.c), one test per rule of docs/decisions.md: no
 * store, no agent, no clock but the one given. Records are built as the store would hold them,
 * ranks as their slots and the kernel show them.
 */
#include <CUnit/Basic.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "lib/decide_policy.h"

static struct dp_config cfg;
static struct dp_records rec;
static struct dp_memory mem;
static struct dp_out out;
static struct dp_rank rk[4];
static struct dp_now now = {.mono_ms = 100000, .wall_ms = 1700000000000ull};

static void reset(void)
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
	memset(&rec, 0, sizeof(rec));
	rec.reachable = 1;
	rec.last_complete = -1;
	rec.g.resume_step = -1;
	memset(&mem, 0, sizeof(mem));
	memset(&out, 0, sizeof(out));
	memset(rk, 0, sizeof(rk));
	for (int i = 0; i < 4; i++) {
		rk[i].pid = 1000 + i;
		rk[i].rank = i;
		rk[i].has_slot = rk[i].registered = 1;
		rk[i].step = 10;
		rk[i].saved = rk[i].saving = rk[i].ack = -1;
		rk[i].saved_here = 1;
		rk[i].started_known = 1;
		rk[i].start_ms = now.mono_ms - 60000;
	}
}

static void member(const char *node, int ranks, uint64_t gen)
{
	struct dp_node_member *m = &rec.mem[rec.nmem++];

	snprintf(m->node, sizeof(m->node), "%s", node);
	m->m.ranks = ranks;
	m->m.generation = gen;
	m->m.lease = 7;
	m->m.lease_ttl_s = 3;
}

static void report(const char *node, int ranks, int saved)
{
	struct dp_node_report *x = &rec.rep[rec.nrep++];

	snprintf(x->node, sizeof(x->node), "%s", node);
	x->r.ranks = ranks;
	x->r.saved = saved;
	x->r.max_step = 10;
}

static int count(enum dp_act_kind kind)
{
	int n = 0;

	for (int i = 0; i < out.nacts; i++)
		n += out.acts[i].kind == kind;
	return n;
}

/* The gen/ claim made by the last look, parsed (0), or -ENOENT. */
static int claimed_gen(struct dec_gen *g)
{
	for (int i = 0; i < out.nwrites; i++)
		if (out.writes[i].claim && !strncmp(out.writes[i].rel, "gen/", 4))
			return dec_gen_parse(out.writes[i].value, g);
	return -ENOENT;
}

static int claimed_ckpt(struct dec_ckpt *c)
{
	for (int i = 0; i < out.nwrites; i++)
		if (out.writes[i].claim && !strncmp(out.writes[i].rel, "ckpt/", 5))
			return dec_ckpt_parse(out.writes[i].value, c);
	return -ENOENT;
}

static int claimed(const char *kind)
{
	for (int i = 0; i < out.nwrites; i++)
		if (out.writes[i].claim && !strncmp(out.writes[i].rel, kind, strlen(kind)))
			return 1;
	return 0;
}

/* rule: a failure is a rank's abnormal end, on its own */
static void test_abnormal_exit(void)
{
	reset();
	CU_ASSERT_FALSE(dp_abnormal_exit(&cfg, &rk[0])); /* alive */
	rk[0].exited = 1;
	rk[0].wait_status = 1 << 8;
	CU_ASSERT_TRUE(dp_abnormal_exit(&cfg, &rk[0])); /* exit 1 */
	rk[0].wait_status = 42 << 8;
	CU_ASSERT_FALSE(dp_abnormal_exit(&cfg, &rk[0])); /* the restart code */
	rk[0].wait_status = 93 << 8;
	CU_ASSERT_FALSE(dp_abnormal_exit(&cfg, &rk[0])); /* the stop code */
	rk[0].wait_status = 0;
	CU_ASSERT_FALSE(dp_abnormal_exit(&cfg, &rk[0])); /* done */
	rk[0].wait_status = SIGKILL;
	CU_ASSERT_TRUE(dp_abnormal_exit(&cfg, &rk[0])); /* killed from outside */
	rk[0].wait_status = SIGTERM;
	rk[0].preempted = 1;
	CU_ASSERT_FALSE(dp_abnormal_exit(&cfg, &rk[0])); /* a preemption that killed it */
	rk[0].wait_status = SIGKILL;
	rk[0].killed_by_agent = 1;
	CU_ASSERT_FALSE(dp_abnormal_exit(&cfg, &rk[0])); /* our own action */
}

/* rule: ranks whose process started after a fault are of the new generation */
static void test_started_since(void)
{
	reset();
	rk[0].start_ms = now.mono_ms;
	CU_ASSERT_TRUE(dp_started_since(&rk[0], now.mono_ms - 1000));
	CU_ASSERT_TRUE(dp_started_since(&rk[0], now.mono_ms + 5)); /* clock ticks: 10 ms */
	CU_ASSERT_FALSE(dp_started_since(&rk[0], now.mono_ms + 1000));
	rk[0].started_known = 0;
	CU_ASSERT_FALSE(dp_started_since(&rk[0], 0));
}

/* rule: what a rank is told - stop, restart (older generation, fenced, preemption complete) */
static void test_told_to_exit(void)
{
	struct ftbpf_slot_decision x;

	reset();
	CU_ASSERT_EQUAL(dp_told_to_exit(&cfg, &rec, &mem, &rk[0]), FTBPF_ACT_NONE);
	rec.gen = 1;
	rec.g.generation = 1;
	CU_ASSERT_EQUAL(dp_told_to_exit(&cfg, &rec, &mem, &rk[0]), FTBPF_ACT_RESTART);
	rk[0].generation = 1;
	CU_ASSERT_EQUAL(dp_told_to_exit(&cfg, &rec, &mem, &rk[0]), FTBPF_ACT_NONE);
	rec.g.stop = 1;
	CU_ASSERT_EQUAL(dp_told_to_exit(&cfg, &rec, &mem, &rk[0]), FTBPF_ACT_STOP);
	dp_slot(&cfg, &rec, &mem, &rk[0], &x);
	CU_ASSERT_EQUAL(x.exit_code, 93);
	rec.g.stop = 0;
	mem.fenced = 1;
	CU_ASSERT_EQUAL(dp_told_to_exit(&cfg, &rec, &mem, &rk[0]), FTBPF_ACT_RESTART);
	mem.fenced = 0;
	/* a completed preemption: the ranks that were asked exit, later ones do not */
	rec.ck_n = 1;
	rec.ck.cause = DEC_CAUSE_PREEMPTION;
	rec.ck_done = 1;
	mem.done_ms = now.mono_ms - 1000; /* seen complete here then */
	CU_ASSERT_EQUAL(dp_told_to_exit(&cfg, &rec, &mem, &rk[0]), FTBPF_ACT_RESTART);
	rk[1].generation = 1;
	rk[1].start_ms = now.mono_ms;
	CU_ASSERT_EQUAL(dp_told_to_exit(&cfg, &rec, &mem, &rk[1]), FTBPF_ACT_NONE);
	/* an operator's checkpoint: nobody exits */
	rec.ck.cause = DEC_CAUSE_OPERATOR;
	CU_ASSERT_EQUAL(dp_told_to_exit(&cfg, &rec, &mem, &rk[0]), FTBPF_ACT_NONE);
	dp_slot(&cfg, &rec, &mem, &rk[0], &x);
	CU_ASSERT_EQUAL(x.ckpt_state, FTBPF_CK_COMPLETE);
	CU_ASSERT_EQUAL(x.exit_code, 42);
}

/* rule: the checkpoint target is the highest step + a margin from the step rate */
static void test_target_margin(void)
{
	struct dp_local l;
	int64_t step = -1;

	reset();
	rk[1].step = 17;
	dp_local(rk, 2, -1, &l);
	CU_ASSERT_EQUAL(l.max_step, 17);
	CU_ASSERT_EQUAL(dp_margin(&cfg, &mem), 2);
	mem.steps_per_s = 50; /* 20 ms steps: one second of store latency is 50 steps */
	CU_ASSERT_EQUAL(dp_margin(&cfg, &mem), 51);
	mem.retargets = 1;
	CU_ASSERT_EQUAL(dp_margin(&cfg, &mem), 101);
	mem.steps_per_s = 0;
	mem.retargets = 0;
	CU_ASSERT_EQUAL(dp_request_checkpoint(&cfg, &rec, &mem, &l, DEC_CAUSE_OPERATOR, "op", &now,
					      &step, &out),
			0);
	CU_ASSERT_EQUAL(step, 19);
	{
		struct dec_ckpt c;

		CU_ASSERT_EQUAL(claimed_ckpt(&c), 0);
		CU_ASSERT_EQUAL(c.target, 19);
		CU_ASSERT_EQUAL(c.id, 1);
		CU_ASSERT_EQUAL(c.cause, DEC_CAUSE_OPERATOR);
	}
}

/* rule: the step rate follows the highest step over time */
static void test_step_rate(void)
{
	struct dp_local l = {.max_step = 100};
	struct dp_now t = now;

	reset();
	dp_step_rate(&mem, &l, &t);
	t.mono_ms += 1000;
	l.max_step = 150;
	dp_step_rate(&mem, &l, &t);
	CU_ASSERT_DOUBLE_EQUAL(mem.steps_per_s, 50.0, 0.01);
}

/* rule: a request in progress is joined; nothing is claimed while the store is unreachable */
static void test_request_busy_unavailable(void)
{
	struct dp_local l = {.max_step = 5};
	int64_t step;

	reset();
	rec.ck_n = 1;
	CU_ASSERT_EQUAL(dp_request_checkpoint(&cfg, &rec, &mem, &l, DEC_CAUSE_PREEMPTION, "sig",
					      &now, &step, &out),
			-EBUSY);
	CU_ASSERT_EQUAL(out.nwrites, 0);
	rec.ck_done = 1;
	rec.reachable = 0;
	CU_ASSERT_EQUAL(dp_request_checkpoint(&cfg, &rec, &mem, &l, DEC_CAUSE_PREEMPTION, "sig",
					      &now, &step, &out),
			-EAGAIN);
	CU_ASSERT_EQUAL(out.nwrites, 0);
	CU_ASSERT_EQUAL(count(DP_ACT_UNAVAILABLE), 1);
}

/* rule: a claim not seen in the store is made again after a second, not before */
static void test_claim_retry(void)
{
	struct dp_now t = now;

	reset();
	dp_claim_ckpt(&cfg, &rec, &mem, 12, DEC_CAUSE_OPERATOR, "x", &t, &out);
	CU_ASSERT_EQUAL(out.nwrites, 1);
	t.mono_ms += 500;
	dp_claim_ckpt(&cfg, &rec, &mem, 12, DEC_CAUSE_OPERATOR, "x", &t, &out);
	CU_ASSERT_EQUAL(out.nwrites, 1);
	t.mono_ms += 600;
	dp_claim_ckpt(&cfg, &rec, &mem, 12, DEC_CAUSE_OPERATOR, "x", &t, &out);
	CU_ASSERT_EQUAL(out.nwrites, 2);
}

/* rule: re-target when a rank is past the bound step and was never told to save it (it waited
 * too long at a boundary); a rank told to save (an asynchronous save) is not one */
static void test_retarget(void)
{
	struct dp_local l;
	struct dec_ckpt c;

	reset();
	rec.ck_n = 1;
	rec.ck.generation = 0;
	rec.ck.id = 1;
	rec.ck.target = 8;
	rec.ck.cause = DEC_CAUSE_PREEMPTION;
	rec.bound = 1;
	rec.bind_target = 8;
	member("n1", 2, 0);
	rk[0].saving = rk[1].saving = 8; /* told, saving asynchronously: no re-target */
	CU_ASSERT_EQUAL(dp_request_target(&rec), 8);
	dp_local(rk, 2, 8, &l);
	CU_ASSERT_EQUAL(l.missed, 0);
	dp_checkpoint_progress(&cfg, &rec, &mem, &l, &now, &out);
	CU_ASSERT_EQUAL(claimed_ckpt(&c), -ENOENT);
	rk[0].saving = rk[1].saving = -1;
	out.nwrites = 0;
	dp_local(rk, 2, 8, &l); /* both at step 10, none saved 8 */
	dp_checkpoint_progress(&cfg, &rec, &mem, &l, &now, &out);
	CU_ASSERT_EQUAL(claimed_ckpt(&c), 0);
	CU_ASSERT_EQUAL(c.id, 2);
	CU_ASSERT_EQUAL(c.target, 12);
	CU_ASSERT_EQUAL(c.cause, DEC_CAUSE_PREEMPTION);
	CU_ASSERT_EQUAL(mem.retargets, 1);
}

/* rule: complete when every member node's ranks saved the target */
static void test_complete(void)
{
	struct dp_local l;

	reset();
	rec.ck_n = 1;
	rec.ck.id = 1;
	rec.ck.target = 12;
	rec.bound = 1;
	rec.bind_target = 12;
	member("n1", 2, 0);
	member("n2", 2, 0);
	rk[0].saved = rk[1].saved = 12;
	rk[0].step = rk[1].step = 12;
	dp_local(rk, 2, 12, &l);
	CU_ASSERT_EQUAL(l.saved, 2);
	report("n2", 2, 1);
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, &l));
	rec.rep[0].r.saved = 2;
	CU_ASSERT_TRUE(dp_complete(&cfg, &rec, &l));
	dp_checkpoint_progress(&cfg, &rec, &mem, &l, &now, &out);
	CU_ASSERT_TRUE(claimed("done/"));
	/* a node the generation leaves out does not count */
	rec.rep[0].r.saved = 0;
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, &l));
	rec.gen = 1;
	rec.g.nexcluded = 1;
	strcpy(rec.g.excluded[0], "n2");
	CU_ASSERT_TRUE(dp_complete(&cfg, &rec, &l));
}

/* rule I2: complete only when every rank of the job's world (WORLD_SIZE, all nodes) saved the
 * bound step: a node lost mid-checkpoint does not drop out of the count; a rank that saved and
 * then ended still counts; a save of an older generation does not */
static void test_complete_world(void)
{
	struct dp_local l;

	reset();
	rec.ck_n = 1;
	rec.ck.id = 1;
	rec.bound = 1;
	rec.bind_target = 12;
	member("n1", 2, 0); /* n2's member key is gone: its agent died */
	for (int i = 0; i < 2; i++) {
		rk[i].world_size = 4;
		rk[i].saved = rk[i].step = 12;
	}
	dp_local(rk, 2, 12, &l);
	CU_ASSERT_EQUAL(l.world, 4);
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, &l)); /* 2 of 4: n2's ranks never saved */
	report("n2", 2, 2);			      /* n2 reported its saves before it died */
	CU_ASSERT_TRUE(dp_complete(&cfg, &rec, &l));
	rk[1].exited = 1; /* saved, then ended */
	dp_local(rk, 2, 12, &l);
	CU_ASSERT_EQUAL(l.saved, 2);
	CU_ASSERT_TRUE(dp_complete(&cfg, &rec, &l));
	rk[0].saved_here = 0; /* saved in an older generation (a fencing token that is stale) */
	dp_local(rk, 2, 12, &l);
	CU_ASSERT_EQUAL(l.saved, 1);
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, &l));
	rec.bound = 0; /* never before the step is bound */
	rk[0].saved_here = 1;
	dp_local(rk, 2, 12, &l);
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, &l));
}

/* rule: a generation that leaves nodes out runs with a smaller world (their ranks taken away),
 * whatever WORLD_SIZE its launchers kept: its checkpoints can complete */
static void test_generation_world(void)
{
	struct dp_local l;
	struct dec_gen g;

	reset();
	member("n1", 2, 0);
	member("n2", 2, 0);
	member("n3", 2, 0);
	for (int i = 0; i < 2; i++)
		rk[i].world_size = 6;
	dp_local(rk, 2, -1, &l);
	dp_step_rate(&mem, &l, &now);
	dp_vanished(&cfg, &rec, &mem, &now);
	rec.nmem = 2; /* n3 is gone */
	dp_vanished(&cfg, &rec, &mem, &now);
	dp_failures(&cfg, &rec, &mem, rk, 2, 0, "", &now, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	CU_ASSERT_EQUAL(g.world, 4);
	/* generation 1: the 4 ranks of n1 and n2 save: complete */
	rec.gen = 1;
	rec.g = g;
	rec.ck_n = 1;
	rec.bound = 1;
	rec.bind_target = 20;
	for (int i = 0; i < 2; i++) {
		rk[i].generation = 1;
		rk[i].saved = rk[i].step = 20;
	}
	dp_local(rk, 2, 20, &l);
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, &l));
	report("n2", 2, 2);
	CU_ASSERT_TRUE(dp_complete(&cfg, &rec, &l));
}

/* rule: acknowledged targets (seed 002): the step binds only once every rank of the world saw
 * the request (its own acknowledgement at a step boundary, or the boundary by which it must
 * have, read by its agent right after writing it), at the highest such boundary + 1 */
static void test_bind(void)
{
	struct dp_local l;
	int64_t t = -1;

	reset();
	rec.ck_n = 1;
	rec.ck.id = 1;
	rec.ck.cause = DEC_CAUSE_PREEMPTION;
	member("n1", 2, 0);
	member("n3", 2, 0);
	for (int i = 0; i < 2; i++)
		rk[i].world_size = 4;
	rk[0].ack = 40;
	dp_local(rk, 2, -1, &l);
	CU_ASSERT_FALSE(dp_all_acked(&cfg, &rec, &l, &t));
	rk[1].ack = 41;
	dp_local(rk, 2, -1, &l);
	CU_ASSERT_EQUAL(l.acked, 2);
	CU_ASSERT_EQUAL(l.max_ack, 41);
	CU_ASSERT_FALSE(dp_all_acked(&cfg, &rec, &l, &t)); /* n3's agent is paused: no report */
	dp_checkpoint_progress(&cfg, &rec, &mem, &l, &now, &out);
	CU_ASSERT_FALSE(claimed("bind/"));
	report("n3", 2, 0);
	rec.rep[0].r.acked = 2;
	rec.rep[0].r.max_ack = 44; /* it was late: its ranks ran on to step 43 */
	CU_ASSERT_TRUE(dp_all_acked(&cfg, &rec, &l, &t));
	CU_ASSERT_EQUAL(t, 45);
	out.nwrites = 0;
	dp_checkpoint_progress(&cfg, &rec, &mem, &l, &now, &out);
	CU_ASSERT_TRUE(claimed("bind/00000000000000000000/00000000000000000001"));
	/* ranks past the proposal (the request's own target) are not missing it: nothing is
	 * counted against a step that is not bound */
	rec.ck.target = 30;
	CU_ASSERT_EQUAL(dp_request_target(&rec), -1);
	/* the slot: pending (no step) until bound */
	{
		struct ftbpf_slot_decision x;

		dp_slot(&cfg, &rec, &mem, &rk[0], &x);
		CU_ASSERT_EQUAL(x.ckpt_state, FTBPF_CK_PENDING);
		CU_ASSERT_EQUAL(x.ckpt_step, -1);
		rec.bound = 1;
		rec.bind_target = 45;
		dp_slot(&cfg, &rec, &mem, &rk[0], &x);
		CU_ASSERT_EQUAL(x.ckpt_state, FTBPF_CK_REQUESTED);
		CU_ASSERT_EQUAL(x.ckpt_step, 45);
	}
}

/* rule I3: every rank of a generation resumes from the step it began with, even when a later
 * checkpoint completes in it */
static void test_resume_per_generation(void)
{
	struct ftbpf_slot_decision x;

	reset();
	rec.run_resume = 7;
	dp_slot(&cfg, &rec, &mem, &rk[0], &x);
	CU_ASSERT_EQUAL(x.resume_step, 7); /* generation 0: where the run began */
	rec.gen = 2;
	rec.g.generation = 2;
	rec.g.resume_step = 30;
	rec.last_complete = 60; /* an operator's checkpoint completed in generation 2 */
	rk[0].generation = 2;
	dp_slot(&cfg, &rec, &mem, &rk[0], &x);
	CU_ASSERT_EQUAL(x.resume_step, 30);
}

/* rule: a completed preemption begins the next generation (not charged to the budget): its
 * ranks exit by themselves (not signalled), the requeued ones resume from the saved step */
static void test_preemption_generation(void)
{
	struct dp_local l = {.ranks = 2, .max_step = 51};
	struct dec_gen g;

	reset();
	cfg.max_restarts = 0;
	rec.ck_n = 1;
	rec.ck.id = 1;
	rec.ck.cause = DEC_CAUSE_PREEMPTION;
	rec.bound = 1;
	rec.bind_target = 50;
	rec.ck_done = 1;
	rec.done_at_ms = now.wall_ms - 5;
	dp_checkpoint_progress(&cfg, &rec, &mem, &l, &now, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	CU_ASSERT_EQUAL(g.cause, DEC_CAUSE_PREEMPTION);
	CU_ASSERT_EQUAL(g.resume_step, 50);
	CU_ASSERT_FALSE(g.stop);
	rec.gen = 1;
	rec.g = g;
	out.nacts = 0;
	dp_observe(&mem, &rec, &now, &out);
	dp_apply_generation(&cfg, &rec, &mem, rk, 2, &out);
	CU_ASSERT_EQUAL(count(DP_ACT_SIGNAL), 0);
	CU_ASSERT_EQUAL(dp_told_to_exit(&cfg, &rec, &mem, &rk[0]), FTBPF_ACT_RESTART);
}

/* rule I5: no preemption is lost - one during an operator's checkpoint is that checkpoint; one
 * while the store is unreachable is claimed when it is back; one overtaken by a failure is said */
static void test_preemption_pending(void)
{
	struct dp_local l = {.ranks = 2, .max_step = 20};
	struct dp_now t = now;
	struct dec_gen g;
	int64_t step;

	reset();
	rec.ck_n = 1; /* an operator's checkpoint in progress */
	rec.ck.id = 1;
	rec.ck.cause = DEC_CAUSE_OPERATOR;
	CU_ASSERT_EQUAL(dp_request_checkpoint(&cfg, &rec, &mem, &l, DEC_CAUSE_PREEMPTION, "sig", &t,
					      &step, &out),
			-EBUSY);
	CU_ASSERT_NOT_EQUAL(mem.preempt_ms, 0);
	rec.bound = 1;
	rec.bind_target = 22;
	rec.ck_done = 1;
	dp_preemption_pending(&cfg, &rec, &mem, &l, &t, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	CU_ASSERT_EQUAL(g.cause, DEC_CAUSE_PREEMPTION);
	CU_ASSERT_EQUAL(g.resume_step, 22);
	CU_ASSERT_EQUAL(mem.preempt_ms, 0);
	/* unreachable: an event now, a claim when it is back */
	reset();
	rec.reachable = 0;
	CU_ASSERT_EQUAL(dp_request_checkpoint(&cfg, &rec, &mem, &l, DEC_CAUSE_PREEMPTION, "sig", &t,
					      &step, &out),
			-EAGAIN);
	CU_ASSERT_EQUAL(count(DP_ACT_UNAVAILABLE), 1);
	rec.reachable = 1;
	dp_preemption_pending(&cfg, &rec, &mem, &l, &t, &out);
	CU_ASSERT_TRUE(claimed("ckpt/"));
	/* a failure generation first: said why */
	reset();
	dp_request_checkpoint(&cfg, &rec, &mem, &l, DEC_CAUSE_PREEMPTION, "sig", &t, &step, &out);
	rec.gen = 1;
	rec.g.generation = 1;
	rec.g.cause = DEC_CAUSE_RANK_DIED;
	out.nacts = 0;
	dp_preemption_pending(&cfg, &rec, &mem, &l, &t, &out);
	CU_ASSERT_EQUAL(count(DP_ACT_PREEMPTION_LOST), 1);
	CU_ASSERT_EQUAL(mem.preempt_ms, 0);
	/* the store away for longer than any grace: said, not claimed late */
	reset();
	rec.reachable = 0;
	dp_request_checkpoint(&cfg, &rec, &mem, &l, DEC_CAUSE_PREEMPTION, "sig", &t, &step, &out);
	rec.reachable = 1;
	t.mono_ms += 121000;
	out.nacts = 0;
	dp_preemption_pending(&cfg, &rec, &mem, &l, &t, &out);
	CU_ASSERT_EQUAL(count(DP_ACT_PREEMPTION_LOST), 1);
	CU_ASSERT_FALSE(claimed("ckpt/"));
}

/* rule: one fault, one generation - a node lost with ranks of an older generation (a host
 * dying: its ranks' peers failed first and began the generation) is not a new fault */
static void test_one_fault_one_generation(void)
{
	reset();
	rec.gen = 1;
	rec.g.generation = 1;
	rec.g.cause = DEC_CAUSE_RANK_DIED;
	member("n1", 2, 1);
	member("n3", 2, 0); /* its agent died before it saw generation 1 */
	dp_vanished(&cfg, &rec, &mem, &now);
	rec.nmem = 1;
	dp_vanished(&cfg, &rec, &mem, &now);
	dp_failures(&cfg, &rec, &mem, rk, 2, 0, "", &now, &out);
	CU_ASSERT_EQUAL(claimed_gen(&(struct dec_gen){0}), -ENOENT); /* no second generation */
	CU_ASSERT_TRUE(claimed("out/00000000000000000001/n3"));	     /* left out of generation 1 */
	CU_ASSERT_STRING_EQUAL(out.writes[0].value, "{\"ranks\":2}");
	/* generation 1 runs without n3's 2 ranks: a world of 6 is 4 */
	{
		struct dp_local l;

		strcpy(rec.out[0], "n3");
		rec.out_ranks[0] = 2;
		rec.nout = 1;
		rec.ck_n = 1;
		rec.bound = 1;
		rec.bind_target = 9;
		for (int i = 0; i < 2; i++) {
			rk[i].world_size = 6;
			rk[i].generation = 1;
			rk[i].saved = rk[i].step = 9;
		}
		dp_local(rk, 2, 9, &l);
		report("n2", 2, 2);
		CU_ASSERT_TRUE(dp_complete(&cfg, &rec, &l));
		rec.nout = rec.nrep = rec.ck_n = 0;
		out.nwrites = 0;
		dp_failures(&cfg, &rec, &mem, rk, 2, 0, "", &now, &out); /* not in the store yet */
		CU_ASSERT_EQUAL(out.nwrites, 1);			 /* claimed again */
		rec.nout = 1;
		dp_failures(&cfg, &rec, &mem, rk, 2, 0, "", &now, &out); /* in it: nothing more */
		CU_ASSERT_EQUAL(out.nwrites, 1);
	}
	/* a node in the current generation that is lost is a new fault */
	reset();
	rec.gen = 1;
	rec.g.generation = 1;
	member("n1", 2, 1);
	member("n3", 2, 1);
	dp_vanished(&cfg, &rec, &mem, &now);
	dp_vanished(&cfg, &rec, &mem, &now);
	rec.nmem = 1;
	dp_vanished(&cfg, &rec, &mem, &now);
	CU_ASSERT_EQUAL(mem.nlost, 1);
}

/* rule: a run - a relaunch is a new run (its budget, history, stop), the restarts its launcher
 * makes (the same launcher, or a restart count) stay in it; a node joins the latest run */
static void test_run_choose(void)
{
	struct dec_launch mine = {.run = 3, .nlaunchers = 1};
	int fresh;

	strcpy(mine.launchers[0], "100:5");
	CU_ASSERT_EQUAL(dp_run_choose(NULL, 0, "100:5", -1, &fresh), 1); /* the first launch */
	CU_ASSERT_TRUE(fresh);
	CU_ASSERT_EQUAL(dp_run_choose(NULL, 3, "100:5", -1, &fresh), 3); /* joins the run */
	CU_ASSERT_FALSE(fresh);
	CU_ASSERT_EQUAL(dp_run_choose(&mine, 3, "100:5", -1, &fresh), 3); /* its launcher */
	CU_ASSERT_FALSE(fresh);
	CU_ASSERT_EQUAL(dp_run_choose(&mine, 3, "200:9", -1, &fresh), 4); /* a relaunch */
	CU_ASSERT_TRUE(fresh);
	CU_ASSERT_EQUAL(dp_run_choose(&mine, 3, "200:9", 1, &fresh), 3); /* a requeue */
	CU_ASSERT_FALSE(fresh);
	CU_ASSERT_EQUAL(dp_run_choose(&mine, 4, "200:9", -1, &fresh),
			4); /* another node began it */
	CU_ASSERT_FALSE(fresh);
}

/* rule: the restart budget: max_restarts failures within the window, then stop */
static void test_budget_stop(void)
{
	struct dec_gen g;

	reset();
	cfg.max_restarts = 1;
	rk[0].exited = 1;
	rk[0].wait_status = 1 << 8;
	dp_failures(&cfg, &rec, &mem, rk, 2, 0, "", &now, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	CU_ASSERT_EQUAL(g.generation, 1);
	CU_ASSERT_EQUAL(g.cause, DEC_CAUSE_RANK_DIED);
	CU_ASSERT_FALSE(g.stop);
	CU_ASSERT_TRUE(rk[0].fail_seen);
	/* generation 1 decided: the next failure spends the budget */
	rec.gen = 1;
	rec.g = g;
	rec.fail_at[rec.nfail++] = g.at_ms;
	out.nwrites = 0;
	mem.claimed_gen_ms = 0;
	rk[1].generation = 1;
	rk[1].exited = 1;
	rk[1].wait_status = SIGSEGV;
	dp_failures(&cfg, &rec, &mem, rk, 2, 0, "", &now, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	CU_ASSERT_EQUAL(g.generation, 2);
	CU_ASSERT_TRUE(g.stop);
	/* a preemption never spends it */
	CU_ASSERT_FALSE(dec_budget_spent(rec.fail_at, rec.nfail, now.wall_ms, 2, 3600));
}

/* rule: a failure is claimed (again, while its claim is not in the store: not one-shot) until a
 * generation deals with it, and only in its own generation */
static void test_failure_once(void)
{
	struct dec_gen g;
	struct dp_now t = now;

	reset();
	rk[0].exited = 1;
	rk[0].wait_status = 1 << 8;
	dp_failures(&cfg, &rec, &mem, rk, 2, 0, "", &t, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	out.nwrites = 0;
	dp_failures(&cfg, &rec, &mem, rk, 2, 0, "", &t, &out); /* within a second: not again */
	CU_ASSERT_EQUAL(out.nwrites, 0);
	t.mono_ms += 6000; /* the claim expired (the store was away): made again */
	dp_failures(&cfg, &rec, &mem, rk, 2, 0, "", &t, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	out.nwrites = 0;
	rec.gen = 1; /* it died in generation 0, generation 1 is decided */
	rec.g.generation = 1;
	dp_failures(&cfg, &rec, &mem, rk, 2, 0, "", &now, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), -ENOENT);
}

/* rule: the hard timeout is a failure, claimed until a generation deals with it */
static void test_hang(void)
{
	struct dec_gen g;
	struct dp_now t = now;

	reset();
	dp_failures(&cfg, &rec, &mem, rk, 2, 1, "rank 1 stuck", &t, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	CU_ASSERT_EQUAL(g.cause, DEC_CAUSE_HANG);
	out.nwrites = 0;
	dp_failures(&cfg, &rec, &mem, rk, 2, 1, "rank 1 stuck", &t, &out);
	CU_ASSERT_EQUAL(out.nwrites, 0);
	t.mono_ms += 1500;
	dp_failures(&cfg, &rec, &mem, rk, 2, 1, "rank 1 stuck", &t, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	out.nwrites = 0;
	rec.gen = 1; /* decided: its ranks are of the older generation, not applied here yet */
	rec.g.generation = 1;
	dp_failures(&cfg, &rec, &mem, rk, 2, 1, "rank 1 stuck", &t, &out);
	CU_ASSERT_EQUAL(out.nwrites, 0);
}

/* rule: who is left out - a lost node, a failed health check, a node at its fault limit */
static void test_leave_out(void)
{
	struct dec_gen g = {.generation = 1, .cause = DEC_CAUSE_NODE_DEAD};

	reset();
	strcpy(g.node, "n3");
	member("n2", 2, 0);
	rec.mem[0].m.excluded = 1; /* failed its health check */
	dp_leave_out(&cfg, &rec, &mem, &now, &g);
	CU_ASSERT_EQUAL(g.nexcluded, 2);
	CU_ASSERT_STRING_EQUAL(g.excluded[0], "n3");
	CU_ASSERT_STRING_EQUAL(g.excluded[1], "n2");
	/* a rank died on n4, which caused a fault before: node_fault_limit 2 leaves it out */
	memset(&g, 0, sizeof(g));
	g.cause = DEC_CAUSE_RANK_DIED;
	strcpy(g.node, "n4");
	rec.nmem = 0;
	strcpy(rec.fault_node[rec.nfault++], "n4");
	dp_leave_out(&cfg, &rec, &mem, &now, &g);
	CU_ASSERT_EQUAL(g.nexcluded, 1);
	CU_ASSERT_STRING_EQUAL(g.excluded[0], "n4");
	/* alone (no shared store) a node never leaves itself out */
	memset(&g, 0, sizeof(g));
	g.cause = DEC_CAUSE_RANK_DIED;
	strcpy(g.node, "n4");
	cfg.shared = 0;
	dp_leave_out(&cfg, &rec, &mem, &now, &g);
	CU_ASSERT_EQUAL(g.nexcluded, 0);
}

/* rule: a preemption is a preempting signal from another process, not one a launcher sends to
 * ranks told to exit */
static void test_is_preemption(void)
{
	reset();
	CU_ASSERT_EQUAL(dp_is_preemption(&cfg, &rec, &mem, rk, 2, 0, SIGTERM, 555, 777), 1);
	CU_ASSERT_EQUAL(dp_is_preemption(&cfg, &rec, &mem, rk, 2, 0, SIGINT, 555, 777), 0);
	CU_ASSERT_EQUAL(dp_is_preemption(&cfg, &rec, &mem, rk, 2, 0, SIGTERM, 777, 777), 0);
	CU_ASSERT_EQUAL(dp_is_preemption(&cfg, &rec, &mem, rk, 2, 0, SIGTERM, 1000, 777), 0);
	CU_ASSERT_EQUAL(dp_is_preemption(&cfg, &rec, &mem, rk, 2, 0, SIGTERM, 0, 777), 0);
	/* the launcher the agent stopped (a failed health check) passes its SIGTERM on: not a
	 * job-wide preemption */
	mem.stopped_launcher = 555;
	CU_ASSERT_EQUAL(dp_is_preemption(&cfg, &rec, &mem, rk, 2, 0, SIGTERM, 555, 777), -1);
	mem.stopped_launcher = 0;
	rec.gen = 1; /* the ranks were told to exit: their launcher ends them */
	CU_ASSERT_EQUAL(dp_is_preemption(&cfg, &rec, &mem, rk, 2, 0, SIGTERM, 555, 777), -1);
	rec.gen = 0;
	rk[1].exited = 1; /* a rank failed: the launcher stops the others */
	rk[1].wait_status = 1 << 8;
	CU_ASSERT_EQUAL(dp_is_preemption(&cfg, &rec, &mem, rk, 2, 0, SIGTERM, 555, 777), -1);
}

/* rule: a node cut off from the shared store fences its ranks after fence_after */
static void test_fence(void)
{
	reset();
	member("n1", 2, 0);
	member("n2", 2, 0);
	rec.reachable = 0;
	rec.unreachable_ms = 1000;
	CU_ASSERT_FALSE(dp_fence(&cfg, &rec, &mem, rk, 2, &out));
	rec.unreachable_ms = 2000; /* I6: hold before the lease (3 s) may run out */
	CU_ASSERT_TRUE(dp_fence(&cfg, &rec, &mem, rk, 2, &out));
	CU_ASSERT_TRUE(mem.held);
	CU_ASSERT_EQUAL(count(DP_ACT_HOLD), 1);
	CU_ASSERT_EQUAL(count(DP_ACT_SIGNAL), 0);
	rec.unreachable_ms = 3000;
	CU_ASSERT_TRUE(dp_fence(&cfg, &rec, &mem, rk, 2, &out));
	CU_ASSERT_EQUAL(count(DP_ACT_SIGNAL), 2);
	CU_ASSERT_EQUAL(count(DP_ACT_FENCED), 1);
	CU_ASSERT_TRUE(dp_fence(&cfg, &rec, &mem, rk, 2, &out)); /* once */
	CU_ASSERT_EQUAL(count(DP_ACT_SIGNAL), 2);
	rec.reachable = 1;
	CU_ASSERT_FALSE(dp_fence(&cfg, &rec, &mem, rk, 2, &out));
	CU_ASSERT_FALSE(mem.fenced);
	CU_ASSERT_FALSE(mem.held);
	CU_ASSERT_EQUAL(count(DP_ACT_HOLD), 2); /* and its end */
	/* a job with no other node is not fenced */
	reset();
	member("n1", 2, 0);
	rec.reachable = 0;
	rec.unreachable_ms = 60000;
	CU_ASSERT_FALSE(dp_fence(&cfg, &rec, &mem, rk, 2, &out));
}

/* rule: a member whose key vanished (its lease expired) is lost; back, it is not */
static void test_vanished(void)
{
	struct dec_gen g;

	reset();
	member("n1", 2, 0);
	member("n3", 2, 0);
	dp_vanished(&cfg, &rec, &mem, &now);
	CU_ASSERT_EQUAL(mem.nlost, 0);
	rec.nmem = 1; /* n3's key is gone */
	dp_vanished(&cfg, &rec, &mem, &now);
	CU_ASSERT_EQUAL(mem.nlost, 1);
	dp_failures(&cfg, &rec, &mem, rk, 2, 0, "", &now, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	CU_ASSERT_EQUAL(g.cause, DEC_CAUSE_NODE_DEAD);
	CU_ASSERT_STRING_EQUAL(g.node, "n3");
	CU_ASSERT_EQUAL(g.nexcluded, 1);
	member("n3", 2, 0); /* back */
	dp_vanished(&cfg, &rec, &mem, &now);
	CU_ASSERT_EQUAL(mem.nlost, 0);
}

/* rule: the mesh's word alone never makes a node lost: its lease confirms it */
static void test_suspects(void)
{
	struct dp_lease l[DP_MAX_NODES] = {{0}};
	struct dp_now t = now;

	reset();
	member("n1", 2, 0);
	member("n2", 2, 0);
	dp_peer_dead(&mem, &rec, "n2", &t);
	CU_ASSERT_EQUAL(mem.nsuspect, 1);
	dp_confirm_suspects(&mem, &rec, l, &t); /* nothing read yet */
	CU_ASSERT_EQUAL(mem.nlost, 0);
	t.mono_ms += 600;
	l[0] = (struct dp_lease){.known = 1, .left_s = 2, .at_mono = t.mono_ms};
	dp_confirm_suspects(&mem, &rec, l, &t); /* renewed: alive */
	CU_ASSERT_EQUAL(mem.nlost, 0);
	CU_ASSERT_EQUAL(mem.nsuspect, 1);
	l[0].left_s = 0;
	dp_confirm_suspects(&mem, &rec, l, &t); /* I6: paused, not lost before its lease ends */
	CU_ASSERT_EQUAL(mem.nlost, 0);
	l[0].left_s = -1;
	dp_confirm_suspects(&mem, &rec, l, &t); /* expired */
	CU_ASSERT_EQUAL(mem.nlost, 1);
	CU_ASSERT_EQUAL(mem.nsuspect, 0);
	dp_peer_alive(&mem, "n2");
	CU_ASSERT_EQUAL(mem.nlost, 0);
	/* a node without a lease (a local store) is never suspected */
	rec.mem[1].m.lease = 0;
	dp_peer_dead(&mem, &rec, "n2", &t);
	CU_ASSERT_EQUAL(mem.nsuspect, 0);
}

/* rule: a new generation ends older ranks; ranks started after the fault join it; left out or
 * stopped, the launcher is stopped */
static void test_apply_generation(void)
{
	reset();
	cfg.health_check = 1;
	rec.gen = 1;
	rec.g.generation = 1;
	mem.gen_seen_ms = now.mono_ms - 1000; /* seen here a second ago */
	rk[1].start_ms = now.mono_ms;	      /* restarted after the fault */
	dp_apply_generation(&cfg, &rec, &mem, rk, 2, &out);
	CU_ASSERT_EQUAL(count(DP_ACT_SIGNAL), 1);
	CU_ASSERT_EQUAL(out.acts[0].rank, 0);
	CU_ASSERT_TRUE(rk[0].killed_by_agent);
	CU_ASSERT_EQUAL(rk[1].generation, 1);
	CU_ASSERT_EQUAL(count(DP_ACT_STOP_LAUNCHER), 0);
	CU_ASSERT_EQUAL(count(DP_ACT_HEALTH_CHECK), 1);
	out.nacts = 0;
	dp_apply_generation(&cfg, &rec, &mem, rk, 2, &out); /* once */
	CU_ASSERT_EQUAL(out.nacts, 0);
	/* I7: a rank that failed here before the decision arrived: its launcher's restart of the
	 * others, started after that failure but before we saw the decision, is of it */
	reset();
	rec.gen = 1;
	rec.g.generation = 1;
	mem.gen_seen_ms = now.mono_ms;
	rk[0].exited = 1;
	rk[0].wait_status = 1 << 8;
	rk[0].exit_ms = now.mono_ms - 3000;
	rk[1].start_ms = now.mono_ms - 2000; /* restarted after rank 0's failure */
	rk[2].start_ms = now.mono_ms - 5000; /* an old one */
	dp_apply_generation(&cfg, &rec, &mem, rk, 3, &out);
	CU_ASSERT_EQUAL(rk[1].generation, 1);
	CU_ASSERT_EQUAL(rk[2].generation, 0);
	CU_ASSERT_EQUAL(count(DP_ACT_SIGNAL), 1);
	/* left out: the launcher is stopped */
	reset();
	rec.gen = 1;
	rec.g.generation = 1;
	rec.g.nexcluded = 1;
	mem.gen_seen_ms = now.mono_ms;
	strcpy(rec.g.excluded[0], "n1");
	dp_apply_generation(&cfg, &rec, &mem, rk, 2, &out);
	CU_ASSERT_EQUAL(count(DP_ACT_SIGNAL), 2);
	CU_ASSERT_EQUAL(count(DP_ACT_STOP_LAUNCHER), 1);
}

/* rule: a decision is logged once; a claim in flight settles when its record shows */
static void test_observe(void)
{
	reset();
	mem.claimed_gen_ms = now.mono_ms;
	rec.gen = 1;
	rec.g.generation = 1;
	rec.ck_n = 1;
	dp_observe(&mem, &rec, &now, &out);
	CU_ASSERT_EQUAL(count(DP_ACT_LOG_DECISION), 2);
	CU_ASSERT_EQUAL(mem.claimed_gen_ms, 0);
	dp_observe(&mem, &rec, &now, &out);
	CU_ASSERT_EQUAL(count(DP_ACT_LOG_DECISION), 2);
	rec.ck_done = 1;
	dp_observe(&mem, &rec, &now, &out);
	CU_ASSERT_EQUAL(count(DP_ACT_LOG_DECISION), 3);
}

/* rule: with a grace period, a last save before it ends, then the exit */
static void test_final_save(void)
{
	struct dp_local l = {.ranks = 2, .max_step = 30};
	struct dp_now t = now;
	struct dec_ckpt c;

	reset();
	cfg.preempt_grace_s = 10;
	rec.ck_n = 1;
	rec.ck.id = 1;
	rec.ck.cause = DEC_CAUSE_PREEMPTION;
	rec.ck_done = 1;
	mem.req_ms = t.mono_ms;
	mem.done_ms = t.mono_ms + 1000; /* it took 1 s */
	t.mono_ms += 5000;
	dp_checkpoint_progress(&cfg, &rec, &mem, &l, &t, &out);
	CU_ASSERT_EQUAL(out.nwrites, 0);
	CU_ASSERT_EQUAL(dp_told_to_exit(&cfg, &rec, &mem, &rk[0]), FTBPF_ACT_NONE);
	t.mono_ms = now.mono_ms + 8000; /* grace 10 s - 2 x 1 s */
	dp_checkpoint_progress(&cfg, &rec, &mem, &l, &t, &out);
	CU_ASSERT_EQUAL(claimed_ckpt(&c), 0);
	CU_ASSERT_EQUAL(c.id, 2);
	CU_ASSERT_EQUAL(c.target, 32);
	CU_ASSERT_TRUE(mem.final_claimed);
	CU_ASSERT_EQUAL(dp_told_to_exit(&cfg, &rec, &mem, &rk[0]), FTBPF_ACT_RESTART);
}

/* rule: this node's member record carries its ranks, generation, lease; none without ranks */
static void test_member_record(void)
{
	struct dp_local l = {.ranks = 0};
	struct dec_member m;

	reset();
	dp_member_record(&cfg, &rec, &mem, &l, 9, &out);
	CU_ASSERT_EQUAL(out.nwrites, 0);
	l.ranks = 2;
	dp_member_record(&cfg, &rec, &mem, &l, 9, &out);
	CU_ASSERT_EQUAL(out.nwrites, 1);
	CU_ASSERT_TRUE(out.writes[0].leased);
	CU_ASSERT_STRING_EQUAL(out.writes[0].rel, "members/n1");
	CU_ASSERT_EQUAL(dec_member_parse(out.writes[0].value, &m), 0);
	CU_ASSERT_EQUAL(m.ranks, 2);
	CU_ASSERT_EQUAL(m.lease, 9);
}

/* rule I1: a job local to its host (torchrun's defaults: master 127.0.0.1:29500 on every
 * host) never shares decisions with another host's */
static void test_job_key(void)
{
	char k[128];

	dp_job_key("torch:127.0.0.1:29500", "10.0.0.1:7946", k, sizeof(k));
	CU_ASSERT_STRING_EQUAL(k, "torch:127.0.0.1:29500@10.0.0.1:7946");
	dp_job_key("torch:localhost:29500", "h2", k, sizeof(k));
	CU_ASSERT_STRING_EQUAL(k, "torch:localhost:29500@h2");
	dp_job_key("torch::29500", "h2", k, sizeof(k)); /* no MASTER_ADDR */
	CU_ASSERT_STRING_EQUAL(k, "torch::29500@h2");
	dp_job_key("torch:10.1.2.3:29500", "h2", k, sizeof(k)); /* a real master: shared */
	CU_ASSERT_STRING_EQUAL(k, "torch:10.1.2.3:29500");
	dp_job_key("torch:myrun", "h2", k, sizeof(k)); /* a run id */
	CU_ASSERT_STRING_EQUAL(k, "torch:myrun");
	dp_job_key("torch:127.0.0.1:29500@h1", "h2", k, sizeof(k)); /* scoped already */
	CU_ASSERT_STRING_EQUAL(k, "torch:127.0.0.1:29500@h1");
	dp_job_key("slurm:77:0", "h2", k, sizeof(k));
	CU_ASSERT_STRING_EQUAL(k, "slurm:77:0");
}

int main(void)
{
	CU_pSuite s;
	unsigned failures;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("decide_policy", NULL, NULL);
	CU_add_test(s, "a failure is a rank's abnormal end", test_abnormal_exit);
	CU_add_test(s, "ranks started after a fault", test_started_since);
	CU_add_test(s, "what a rank is told", test_told_to_exit);
	CU_add_test(s, "target and margin", test_target_margin);
	CU_add_test(s, "step rate", test_step_rate);
	CU_add_test(s, "a request joins one in progress; none while unreachable",
		    test_request_busy_unavailable);
	CU_add_test(s, "claims retried after a second", test_claim_retry);
	CU_add_test(s, "re-target", test_retarget);
	CU_add_test(s, "complete", test_complete);
	CU_add_test(s, "I2: complete by the world size", test_complete_world);
	CU_add_test(s, "a generation's world", test_generation_world);
	CU_add_test(s, "acknowledged targets", test_bind);
	CU_add_test(s, "I3: resume per generation", test_resume_per_generation);
	CU_add_test(s, "a completed preemption begins a generation", test_preemption_generation);
	CU_add_test(s, "I5: preemptions not lost", test_preemption_pending);
	CU_add_test(s, "one fault, one generation", test_one_fault_one_generation);
	CU_add_test(s, "runs", test_run_choose);
	CU_add_test(s, "I1: host-local jobs", test_job_key);
	CU_add_test(s, "restart budget, then stop", test_budget_stop);
	CU_add_test(s, "a failure counts once, in its generation", test_failure_once);
	CU_add_test(s, "hard timeout", test_hang);
	CU_add_test(s, "left out", test_leave_out);
	CU_add_test(s, "preemption or a launcher's signal", test_is_preemption);
	CU_add_test(s, "fencing", test_fence);
	CU_add_test(s, "a vanished member is lost", test_vanished);
	CU_add_test(s, "the mesh's suspicion, confirmed by the lease", test_suspects);
	CU_add_test(s, "applying a generation", test_apply_generation);
	CU_add_test(s, "decisions logged once", test_observe);
	CU_add_test(s, "final save in the grace period", test_final_save);
	CU_add_test(s, "member record", test_member_record);
	CU_basic_set_mode(CU_BRM_NORMAL);
	CU_basic_run_tests();
	failures = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)failures;
}
