/*
 * The decision policy's rules for the invariants of docs/decisions.md (I1-I7), job and run
 * identity and acknowledged targets (user/lib/decide_policy.c), as test_decide_policy.c tests
 * the others: pure, with the clock given.
 */
#include <errno.h>
#include "decide_fixture.h"

/* rule I2: complete only when every rank of the job's world (WORLD_SIZE, all nodes) saved the
 * bound step: a node lost mid-checkpoint does not drop out of the count; a rank that saved and
 * then ended still counts; a save of an older generation does not */
static void test_complete_world(void)
{
	struct dp_local l;

	reset();
	bound_request(1, 12);
	member("n1", 2, 0); /* n2's member key is gone: its agent died */
	for (int i = 0; i < 2; i++) {
		rk[i].world_size = 4;
		rk[i].saved = rk[i].step = 12;
	}
	dp_local(rk, 2, 12, &l);
	CU_ASSERT_EQUAL(l.world, 4);
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, &mem, &l)); /* 2 of 4: n2's ranks never saved */
	report("n2", 2, 2); /* n2 reported its saves before it died */
	CU_ASSERT_TRUE(dp_complete(&cfg, &rec, &mem, &l));
	rk[1].exited = 1; /* saved, then ended */
	dp_local(rk, 2, 12, &l);
	CU_ASSERT_EQUAL(l.saved, 2);
	CU_ASSERT_TRUE(dp_complete(&cfg, &rec, &mem, &l));
	rk[0].saved_here = 0; /* saved in an older generation (a fencing token that is stale) */
	dp_local(rk, 2, 12, &l);
	CU_ASSERT_EQUAL(l.saved, 1);
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, &mem, &l));
	rec.bound = 0; /* never before the step is bound */
	rk[0].saved_here = 1;
	dp_local(rk, 2, 12, &l);
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, &mem, &l));
}

/* Generation 1 left x out, its world (the ranks' count left) world; request 1 bound at 12. */
static void x_left_out_of_gen1(int world)
{
	reset();
	rec.gen = 1;
	rec.g.generation = 1;
	rec.g.world = world;
	rec.g.nexcluded = 1;
	strcpy(rec.g.excluded[0], "x");
	bound_request(1, 12);
}

/* I2, issue 32 ("a node left out of a generation can rejoin it while that generation's world
 * stays reduced: a checkpoint is complete without every rank's save"): generation 1 left x
 * (2 ranks) out, its world 2; x's agent came back (paused past its lease) and its ranks run and
 * save in generation 1 again. Its saves must not stand in for a rank here that did not save. */
static void test_complete_rejoined(void)
{
	struct dp_local l;

	x_left_out_of_gen1(2);
	member("n1", 2, 1);
	member("x", 2, 1); /* back, with ranks */
	for (int i = 0; i < 2; i++) {
		rk[i].world_size = 4;
		rk[i].generation = 1;
		rk[i].step = 12;
	}
	rk[0].saved = 12; /* rank 1 here has not saved */
	dp_local(rk, 2, 12, &l);
	report("x", 2, 2);
	rec.rep[0].r.world = 4;
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, &mem, &l)); /* 1 + 2 >= 2, but rank 1 never saved */
	rk[1].saved = 12;
	dp_local(rk, 2, 12, &l);
	CU_ASSERT_TRUE(dp_complete(&cfg, &rec, &mem, &l));
	/* the rejoined node's ranks save too before it is complete */
	rec.rep[0].r.saved = 1;
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, &mem, &l));
	/* a node whose member key is gone (dead) is not waited for: its report is history */
	rec.nmem = 1;
	CU_ASSERT_TRUE(dp_complete(&cfg, &rec, &mem, &l));
	/* a member with ranks that reported nothing (cut off) is waited for, whatever the sum */
	rec.rep[0].r.saved = 2;
	member("y", 1, 1);
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, &mem, &l));
	report("y", 1, 1);
	CU_ASSERT_TRUE(dp_complete(&cfg, &rec, &mem, &l));
}

/* I2, found by the simulator (node_fault_limit, seed 30): generation 1 left x (2 ranks) out,
 * its world 4 (n1's 2, y's 2); x's ranks came back and saved; y's second rank is still being
 * restarted (1 live, saved). x's saves must not stand in for it in the sum. */
static void test_complete_left_out_sum(void)
{
	struct dec_report *y;
	struct dp_local l;

	x_left_out_of_gen1(4);
	member("n1", 2, 1);
	member("x", 2, 1);
	member("y", 2, 1);
	for (int i = 0; i < 2; i++) {
		rk[i].world_size = 6;
		rk[i].generation = 1;
		rk[i].saved = rk[i].step = 12;
	}
	dp_local(rk, 2, 12, &l);
	report("x", 2, 2);
	y = report("y", 1, 1);
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, &mem, &l)); /* 2 + 1 of 4: x's 2 count for none */
	y->ranks = y->saved = 2;
	CU_ASSERT_TRUE(dp_complete(&cfg, &rec, &mem, &l));
}

/* I2 with the node keys (issue 32: "a non-member's report adds to the save sum"): any key
 * holder may write a report under its own name; a node of no member record, never seen as one
 * here, must not complete a request that a dead member's ranks never saved. A member seen here
 * and lost since counts (its saves before it died are history), and so does anyone's report
 * with the cluster key alone. */
static void test_complete_non_member(void)
{
	struct dp_local l;

	reset();
	rec.members_only = 1;
	bound_request(1, 12);
	member("n1", 2, 0);
	member("n2", 2, 0);
	dp_vanished(&cfg, &rec, &mem, &now); /* both seen as members here */
	for (int i = 0; i < 2; i++) {
		rk[i].world_size = 4;
		rk[i].saved = rk[i].step = 12;
	}
	dp_local(rk, 2, 12, &l);
	rec.nmem = 1; /* n2's member key is gone, its ranks never saved */
	report("x", 2, 2)->world = 4;
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, &mem, &l)); /* x is nobody of this run */
	dp_vanished(&cfg, &rec, &mem, &now);		    /* n2 is lost here */
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, &mem, &l));
	report("n2", 2, 2); /* it reported its saves before it died */
	CU_ASSERT_TRUE(dp_complete(&cfg, &rec, &mem, &l));
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, NULL, &l)); /* not seen lost: waited for */
	/* the cluster key alone: every report is the cluster's word */
	rec.members_only = 0;
	CU_ASSERT_TRUE(dp_complete(&cfg, &rec, NULL, &l));
}

/* issue 32: after a preemption (both ranks saved 124, exited, generation 1) and the relaunch, an
 * operator's request bound at 130 was complete at once: a damaged completion record of that
 * request (refused, {"step":-4}) was taken for its completion by its mere presence */
static void test_complete_after_relaunch(void)
{
	struct dp_local l;
	uint64_t at = 7;

	reset();
	rec.gen = 1;
	rec.g.generation = 1;
	rec.g.resume_step = 124;
	rec.ck_n = 1;
	rec.ck.id = 1;
	rec.ck.generation = 1;
	rec.bound = 1;
	rec.bind_target = 130;
	member("n1", 2, 1);
	for (int i = 0; i < 4; i++) {
		rk[i].world_size = 2;
		rk[i].has_slot = 1;
		rk[i].saved_here = 1;
		rk[i].rank = i % 2;
	}
	for (int i = 0; i < 2; i++) { /* generation 0's ranks: saved 124, exited 42 */
		rk[i].exited = 1;
		rk[i].generation = 0;
		rk[i].saved = rk[i].step = 124;
	}
	for (int i = 2; i < 4; i++) { /* relaunched, at 128: nothing saved yet */
		rk[i].generation = 1;
		rk[i].step = 128;
		rk[i].saved = -1;
	}
	dp_local(rk, 4, 130, &l);
	CU_ASSERT_EQUAL(l.saved, 0);
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, &mem, &l));
	CU_ASSERT_FALSE(dp_request_done(&rec, "{\"step\":-4}", &at)); /* malformed */
	CU_ASSERT_FALSE(dp_request_done(&rec, "{not json", &at));
	CU_ASSERT_FALSE(dp_request_done(&rec, "{\"step\":124,\"at_ms\":5}", &at)); /* stale */
	CU_ASSERT_FALSE(dp_request_done(&rec, NULL, &at));
	CU_ASSERT_EQUAL(at, 7);
	rec.ck_done = dp_request_done(&rec, "{\"step\":-4}", &rec.done_at_ms);
	mem.looked = 1;
	mem.seen_gen = 1;
	mem.seen_ck = 1000001;
	dp_observe(&mem, &rec, &now, &out);
	CU_ASSERT_EQUAL(mem.seen_done, 0); /* no checkpoint_complete logged */
	dp_checkpoint_progress(&cfg, &rec, &mem, &l, &now, &out);
	CU_ASSERT_FALSE(claimed("done/"));
	/* both relaunched ranks saved 130: complete, and its own record counts */
	rk[2].saved = rk[3].saved = 130;
	dp_local(rk, 4, 130, &l);
	CU_ASSERT_EQUAL(l.saved, 2);
	CU_ASSERT_TRUE(dp_complete(&cfg, &rec, &mem, &l));
	rec.done_refused = 1; /* the damaged record is no claim: put over it */
	out.nwrites = 0;
	dp_checkpoint_progress(&cfg, &rec, &mem, &l, &now, &out);
	CU_ASSERT_TRUE(out.nwrites > 0 && strstr(out.writes[out.nwrites - 1].rel, "done/") &&
		       !out.writes[out.nwrites - 1].claim);
	/* it names its writer: with the node keys, a completion counts only by a member */
	CU_ASSERT_PTR_NOT_NULL(strstr(out.writes[out.nwrites - 1].value, "\"by\":\"n1\""));
	CU_ASSERT_TRUE(dp_request_done(&rec, "{\"step\":130,\"at_ms\":5}", &at));
	CU_ASSERT_EQUAL(at, 5);
	rec.bound = 0; /* never before the step is bound */
	CU_ASSERT_FALSE(dp_request_done(&rec, "{\"step\":130,\"at_ms\":5}", &at));
}

/* rule (I3): a completion record raises the resume step only by the step its own request was
 * bound to: not a well-formed record of another step, not one of a request bound to nothing */
static void test_done_step(void)
{
	struct dec_bind b = {.target = 130};
	struct dec_done d = {.step = -1};

	CU_ASSERT_EQUAL(dp_done_step(&rec, &b, "{\"step\":130,\"at_ms\":5}", &d), 0);
	CU_ASSERT_EQUAL(d.step, 130);
	CU_ASSERT_EQUAL(d.at_ms, 5);
	d.step = -1;
	CU_ASSERT_EQUAL(dp_done_step(&rec, &b, "{\"step\":500,\"at_ms\":5}", &d), -ESTALE);
	CU_ASSERT_EQUAL(dp_done_step(&rec, &b, "{\"step\":124,\"at_ms\":5}", &d), -ESTALE);
	CU_ASSERT_EQUAL(dp_done_step(&rec, NULL, "{\"step\":130,\"at_ms\":5}", &d), -ESTALE);
	CU_ASSERT_EQUAL(dp_done_step(&rec, &b, "{\"step\":-4}", &d), -EINVAL);
	CU_ASSERT_EQUAL(dp_done_step(&rec, &b, "{not json", &d), -EINVAL);
	CU_ASSERT_EQUAL(dp_done_step(&rec, &b, NULL, &d), -EINVAL);
	CU_ASSERT_EQUAL(d.step, -1); /* untouched unless it completes */
	/* with the node keys and a shared store, only a member of the run completes a request */
	reset();
	member("n1", 2, 0);
	rec.members_only = 1;
	CU_ASSERT_EQUAL(dp_done_step(&rec, &b, "{\"step\":130,\"at_ms\":5,\"by\":\"n1\"}", &d), 0);
	CU_ASSERT_EQUAL(dp_done_step(&rec, &b, "{\"step\":130,\"at_ms\":5,\"by\":\"n9\"}", &d),
			-EPERM);
	CU_ASSERT_EQUAL(dp_done_step(&rec, &b, "{\"step\":130,\"at_ms\":5}", &d), -EPERM);
	CU_ASSERT_EQUAL(dp_done_step(&rec, &b, "{\"step\":130,\"by\":\"a b\"}", &d), -EINVAL);
	rec.members_only = 0; /* no node keys: any agent with the cluster key */
	CU_ASSERT_EQUAL(dp_done_step(&rec, &b, "{\"step\":130,\"at_ms\":5,\"by\":\"n9\"}", &d), 0);
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
	dp_failures(&cfg, &rec, &mem, rk, 2, NULL, &now, &out);
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
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, &mem, &l));
	report("n2", 2, 2);
	CU_ASSERT_TRUE(dp_complete(&cfg, &rec, &mem, &l));
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
 * checkpoint completes in it; a rank starting while a decision is being made waits for it */
static void test_resume_per_generation(void)
{
	struct ftbpf_slot_decision x;

	reset();
	rec.run = 0; /* no run chosen yet (the store not read): a live rank waits, none to wait */
	CU_ASSERT_TRUE(dp_settling(&cfg, &rec, &mem, rk, 2));
	CU_ASSERT_FALSE(dp_settling(&cfg, &rec, &mem, rk, 0));
	rec.run = 2;
	CU_ASSERT_TRUE(dp_settling(&cfg, &rec, &mem, rk, 2)); /* the run's record not seen yet */
	rec.run_known = 1;
	CU_ASSERT_FALSE(dp_settling(&cfg, &rec, &mem, rk, 2));
	rk[1].exited = 1; /* a local failure not yet decided */
	rk[1].wait_status = 1 << 8;
	CU_ASSERT_TRUE(dp_settling(&cfg, &rec, &mem, rk, 2));
	rk[1].exited = 0;
	mem.claimed_gen_ms = now.mono_ms; /* a generation claimed */
	CU_ASSERT_TRUE(dp_settling(&cfg, &rec, &mem, rk, 2));
	mem.claimed_gen_ms = 0;
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
	dp_failures(&cfg, &rec, &mem, rk, 2, NULL, &now, &out);
	CU_ASSERT_EQUAL(claimed_gen(&(struct dec_gen){0}), -ENOENT); /* no second generation */
	CU_ASSERT_TRUE(claimed("out/00000000000000000001/n3"));	     /* left out of generation 1 */
	/* signed by n1, who decided it: a member of the run (dp_out_believed) */
	CU_ASSERT_STRING_EQUAL(out.writes[0].value, "{\"ranks\":2,\"by\":\"n1\"}");
	{
		struct dec_out x;

		CU_ASSERT_EQUAL(dec_out_parse(out.writes[0].value, &x), 0);
		CU_ASSERT_TRUE(dp_out_believed(&rec, &x, 1));
		strcpy(x.by, "n9"); /* a key holder of no member of the run */
		CU_ASSERT_FALSE(dp_out_believed(&rec, &x, 1));
		CU_ASSERT_TRUE(dp_out_believed(&rec, &x, 0)); /* the cluster key alone */
		x.by[0] = 0;				      /* an older agent's record */
		CU_ASSERT_FALSE(dp_out_believed(&rec, &x, 1));
		CU_ASSERT_TRUE(dp_out_believed(&rec, &x, 0));
	}
	/* a refused record (an older agent's, malformed, a stranger's) holds the create-only key:
	 * ours is put over it, not claimed beside it */
	out_refused("n3");
	CU_ASSERT_TRUE(dp_out_refused(&rec, "n3") && !dp_out_refused(&rec, "n2"));
	out.nwrites = 0;
	dp_failures(&cfg, &rec, &mem, rk, 2, NULL, &now, &out);
	CU_ASSERT_FALSE(claimed("out/"));
	CU_ASSERT_TRUE(out.nwrites == 1 &&
		       !strcmp(out.writes[0].rel, "out/00000000000000000001/n3") &&
		       !out.writes[0].claim);
	rec.nout_refused = 0;
	/* generation 1 runs without n3's 2 ranks: a world of 6 is 4 */
	{
		struct dp_local l;

		left_out("n3", 2);
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
		CU_ASSERT_TRUE(dp_complete(&cfg, &rec, &mem, &l));
		rec.nout = rec.nrep = rec.ck_n = 0;
		out.nwrites = 0;
		dp_failures(&cfg, &rec, &mem, rk, 2, NULL, &now, &out); /* not in the store yet */
		CU_ASSERT_EQUAL(out.nwrites, 1);			/* claimed again */
		rec.nout = 1;
		dp_failures(&cfg, &rec, &mem, rk, 2, NULL, &now, &out); /* in it: nothing more */
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
/* The fencing token grows with the generation and across runs (a relaunch's generation 0 is
 * newer than every generation of the run before). */
static void test_fence_token(void)
{
	CU_ASSERT_EQUAL(dp_fence_token(0, 5), 0); /* no run chosen: no token */
	CU_ASSERT_EQUAL(dp_fence_token(1, 0), 1ull << 32);
	CU_ASSERT(dp_fence_token(1, 1) > dp_fence_token(1, 0));
	CU_ASSERT(dp_fence_token(2, 0) > dp_fence_token(1, 1000000));
	CU_ASSERT(dp_fence_token(2, 0) > dp_fence_token(1, UINT64_MAX));
	CU_ASSERT_EQUAL(dp_fence_token(1, UINT64_MAX), (1ull << 32) | UINT32_MAX);
	CU_ASSERT_EQUAL(dp_fence_token(UINT64_MAX, 0), (uint64_t)UINT32_MAX << 32);
}

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

/* A live rank of this node's job, launched by launcher L (pid, start), rank number n. */
static struct dp_launch_rank lr(int n, int lpid, int written)
{
	struct dp_launch_rank x = {.rank = n,
				   .launcher_pid = lpid,
				   .launcher_start_ns = (uint64_t)lpid * 1000000000ull,
				   .dec_written = written,
				   .alive = 1,
				   .launcher_alive = lpid > 0};
	return x;
}

/* rule: the run choice - does a rank of the job's current launch live here, so that a newly
 * seen rank k joins the current run (dp_other_live)? Each case a scenario the integration
 * suite hit once (docs/decisions.md, "Job and run"). */
static void test_other_live(void)
{
	struct dp_launch_rank o[3] = {{0}}, k = lr(1, 100, 0);

	/* alone on the node: a choice from the store's records, not from here */
	CU_ASSERT_FALSE(dp_other_live(o, 0, &k));
	/* a rank of k's own launcher, of the run (a decision in its slot): the same run */
	o[0] = lr(0, 100, 1);
	CU_ASSERT_TRUE(dp_other_live(o, 1, &k));
	/* not of the run yet (no decision written): it says nothing */
	o[0].dec_written = 0;
	CU_ASSERT_FALSE(dp_other_live(o, 1, &k));
	/* its exit seen, or dead in fact though its exit is not seen yet (a launcher relaunched
	 * at once, before the old ranks' exits were read): not the current launch */
	o[0] = lr(0, 100, 1);
	o[0].exited = 1;
	o[0].alive = 0;
	CU_ASSERT_FALSE(dp_other_live(o, 1, &k));
	o[0].exited = 0;
	CU_ASSERT_FALSE(dp_other_live(o, 1, &k));
	/* a rank of another launcher that is gone (the old launch's orphan): k is a relaunch */
	o[0] = lr(0, 200, 1);
	o[0].launcher_alive = 0;
	CU_ASSERT_FALSE(dp_other_live(o, 1, &k));
	/* another launcher still alive, k under a number of its own: a rank started by hand beside
	 * a live launch joins its run */
	o[0].launcher_alive = 1;
	CU_ASSERT_TRUE(dp_other_live(o, 1, &k));
	/* ... but k takes the place of a live rank of that launcher (the same number): a relaunch
	 * while the launch it replaces winds down, a new run */
	o[1] = lr(1, 200, 1);
	CU_ASSERT_FALSE(dp_other_live(o, 2, &k));
	/* a rank of k's own launcher among them still makes it the same run */
	o[2] = lr(2, 100, 1);
	CU_ASSERT_TRUE(dp_other_live(o, 3, &k));
	/* the same launcher pid at another start time is another launcher (pid reuse) */
	o[2].launcher_start_ns += 1000000000ull;
	CU_ASSERT_FALSE(dp_other_live(o, 3, &k));
	/* within /proc's clock tick it is the same */
	o[2].launcher_start_ns = k.launcher_start_ns + 10000000ull;
	CU_ASSERT_TRUE(dp_other_live(o, 3, &k));
	/* k with no launcher known (an agent restarted, a rank adopted late): any live rank of
	 * the run keeps it in the run */
	k.launcher_pid = 0;
	o[0] = lr(5, 300, 1);
	o[0].launcher_alive = 0;
	CU_ASSERT_TRUE(dp_other_live(o, 1, &k));
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

/* A bound preemption request with 2 local ranks at step 12 (its step), on a job of n1 and n2. */
static void stuck_request(void)
{
	reset();
	member("n1", 2, 0);
	member("n2", 2, 0);
	bound_request(1, 12);
	rec.ck.cause = DEC_CAUSE_PREEMPTION;
	rk[0].step = rk[1].step = 13;
	rk[0].saving = rk[1].saving = 12;
}

/* I5 (issue 32: "a save refused as stale leaves the request stuck"): a request a rank's save
 * of which was refused or failed ends without a checkpoint, never waits for that save; the
 * preemption it was for asks for another, and a later preemption is not lost behind it */
static void test_failed_save(void)
{
	struct dp_local l;
	struct dec_ckpt c;
	struct ftbpf_slot_decision x;
	char why[DEC_WHY_LEN];
	int64_t step;

	/* before: a told rank past the step without its save (an asynchronous save) waits */
	stuck_request();
	rk[0].saved = 12;
	dp_local(rk, 2, 12, &l);
	CU_ASSERT_EQUAL(l.failed, 0);
	CU_ASSERT_FALSE(dp_request_failed(&cfg, &rec, &l, why, sizeof(why)));
	/* rank 1's save was refused (ftbpf_saved -ESTALE: held while it saved) */
	rk[1].failed = 12;
	dp_local(rk, 2, 12, &l);
	CU_ASSERT_EQUAL(l.failed, 1);
	CU_ASSERT_TRUE(dp_request_failed(&cfg, &rec, &l, why, sizeof(why)));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "step 12"));
	dp_request_checkpoint(&cfg, &rec, &mem, &l, DEC_CAUSE_PREEMPTION, "sig", &now, &step, &out);
	CU_ASSERT_EQUAL(mem.preempt_ck, 1); /* it joined the request in progress */
	out.nwrites = out.nacts = 0;
	dp_checkpoint_progress(&cfg, &rec, &mem, &l, &now, &out);
	CU_ASSERT_FALSE(claimed("done/"));
	CU_ASSERT_EQUAL(count(DP_ACT_CKPT_FAILED), 1);
	CU_ASSERT_EQUAL(out.nwrites, 1); /* the report, which says it */
	CU_ASSERT_PTR_NOT_NULL(strstr(out.writes[0].value, "\"failed\":1"));
	dp_slot(&cfg, &rec, &mem, &rk[0], &x);
	CU_ASSERT_EQUAL(x.ckpt_state, FTBPF_CK_FAILED); /* await_checkpoint returns */
	/* the preemption asks for another request at once */
	dp_preemption_pending(&cfg, &rec, &mem, &l, &now, &out);
	CU_ASSERT_EQUAL(claimed_ckpt(&c), 0);
	CU_ASSERT_EQUAL(c.id, 2);
	CU_ASSERT_EQUAL(c.cause, DEC_CAUSE_PREEMPTION);
	CU_ASSERT_EQUAL(mem.preempt_ck, 2);
	/* logged once per request */
	out.nwrites = out.nacts = 0;
	dp_checkpoint_progress(&cfg, &rec, &mem, &l, &now, &out);
	CU_ASSERT_EQUAL(count(DP_ACT_CKPT_FAILED), 0);
	/* its successor completes: the preemption ends with it */
	rec.ck_n = 2;
	rec.ck.id = 2;
	rec.bind_target = 14;
	rec.ck_done = 1;
	out.nwrites = out.nacts = 0;
	dp_preemption_pending(&cfg, &rec, &mem, &l, &now, &out);
	CU_ASSERT_EQUAL(mem.preempt_ms, 0);

	/* seen failed on another node (its report): the same here, and a later signal claims */
	stuck_request();
	rk[0].saved = rk[1].saved = 12;
	report("n2", 2, 1);
	rec.rep[0].r.failed = 1;
	dp_local(rk, 2, 12, &l);
	dp_checkpoint_progress(&cfg, &rec, &mem, &l, &now, &out);
	CU_ASSERT_FALSE(claimed("done/"));
	CU_ASSERT_EQUAL(count(DP_ACT_CKPT_FAILED), 1);
	out.nwrites = out.nacts = 0;
	CU_ASSERT_EQUAL(dp_request_checkpoint(&cfg, &rec, &mem, &l, DEC_CAUSE_PREEMPTION, "sig",
					      &now, &step, &out),
			0);
	CU_ASSERT_EQUAL(claimed_ckpt(&c), 0);
	CU_ASSERT_EQUAL(c.id, 2);
	/* with node keys, a failure reported by a node that is no member of the run (another
	 * job's key holder) ends nothing; n2's own (a member) does */
	stuck_request();
	rk[0].saved = rk[1].saved = 12;
	rec.members_only = 1;
	report("stranger", 2, 0)->failed = 2;
	dp_local(rk, 2, 12, &l);
	CU_ASSERT_FALSE(dp_request_failed(&cfg, &rec, &l, why, sizeof(why)));
	report("n2", 2, 1)->failed = 1;
	CU_ASSERT_TRUE(dp_request_failed(&cfg, &rec, &l, why, sizeof(why)));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "on n2"));

	/* a failure of another step is none; one said after the save was reported (its commit
	 * failed) wins over it (the library clears it when a save is made good: saved again) */
	stuck_request();
	rk[1].failed = 8;
	dp_local(rk, 2, 12, &l);
	CU_ASSERT_EQUAL(l.failed, 0);
	rk[1].failed = 12;
	rk[1].saved = 12;
	rk[0].saved = 12;
	dp_local(rk, 2, 12, &l);
	CU_ASSERT_EQUAL(l.failed, 1);
	CU_ASSERT_EQUAL(l.saved, 1);
	/* with preempt_grace, the last save failed after the first one completed: the preemption
	 * ends with that one (a generation resuming from it), not with another try */
	stuck_request();
	cfg.preempt_grace_s = 30;
	rk[1].failed = 12;
	dp_local(rk, 2, 12, &l);
	mem.preempt_ms = now.mono_ms - 10000;
	mem.preempt_ck = 1;
	mem.preempt_saved = 1;
	rec.last_complete = 9;
	dp_checkpoint_progress(&cfg, &rec, &mem, &l, &now, &out);
	out.nwrites = 0;
	dp_preemption_pending(&cfg, &rec, &mem, &l, &now, &out);
	{
		struct dec_gen g;

		CU_ASSERT_EQUAL(claimed_gen(&g), 0);
		CU_ASSERT_EQUAL(g.cause, DEC_CAUSE_PREEMPTION);
		CU_ASSERT_EQUAL(g.resume_step, 9);
	}
	CU_ASSERT_FALSE(claimed("ckpt/"));
	CU_ASSERT_EQUAL(mem.preempt_ms, 0);
	/* an operator's request that failed is not retried: nothing pending claims */
	stuck_request();
	rec.ck.cause = DEC_CAUSE_OPERATOR;
	rk[1].failed = 12;
	dp_local(rk, 2, 12, &l);
	dp_checkpoint_progress(&cfg, &rec, &mem, &l, &now, &out);
	dp_preemption_pending(&cfg, &rec, &mem, &l, &now, &out);
	CU_ASSERT_FALSE(claimed("ckpt/"));
	CU_ASSERT_EQUAL(count(DP_ACT_CKPT_FAILED), 1);
}

/* A node cut off from the store at mono ms last (its last answer; 0: it never answered since
 * the store was opened at opened), looked at every 100 ms with the store's timing for a lease
 * of ttl_s: when its ranks are held and fenced, relative to since (0: not within 10 s). */
static void cut_off(int ttl_s, uint64_t last, uint64_t opened, int n, uint64_t *ret_held,
		    uint64_t *ret_fenced)
{
	uint64_t since = last ? last : opened, window = dec_reachable_ms(ttl_s, cfg.fence_after_s);

	cfg.lease_ttl_s = ttl_s;
	cfg.hold_after_s = dec_hold_after_s(ttl_s, cfg.fence_after_s);
	*ret_held = *ret_fenced = 0;
	for (uint64_t t = since + 100; t <= since + 10000; t += 100) {
		rec.reachable = last && t - last < window;
		rec.unreachable_ms = dec_unreachable_ms(rec.reachable, last, opened, t);
		dp_fence(&cfg, &rec, &mem, rk, n, &out);
		if (mem.held && !*ret_held)
			*ret_held = t - since;
		if (mem.fenced && !*ret_fenced)
			*ret_fenced = t - since;
	}
}

/* rule I6: with a lease TTL of 2 s, a node cut off holds its ranks before its lease can run out
 * (the store was taken for reachable for 4 s whatever the TTL: the hold came after it), and
 * fences them at fence_after */
static void test_hold_before_lease(void)
{
	uint64_t held, fenced;

	reset();
	cfg.fence_after_s = 5;
	member("n1", 2, 0);
	member("n2", 2, 0);
	cut_off(2, 50000, 1000, 2, &held, &fenced);
	CU_ASSERT(held > 0 && held <= 1000); /* half the TTL */
	CU_ASSERT_EQUAL(fenced, 5000);
	CU_ASSERT_EQUAL(count(DP_ACT_HOLD), 1);
	CU_ASSERT_EQUAL(count(DP_ACT_SIGNAL), 2);
	reset(); /* the default TTL: half of it too */
	cfg.fence_after_s = 60;
	member("n1", 2, 0);
	member("n2", 2, 0);
	cut_off(5, 50000, 1000, 2, &held, &fenced);
	CU_ASSERT(held > 0 && held <= 2500);
}

/* rule I6: an agent (re)started while cut off from the store - it never answered, no run is
 * known, no member record read - holds, then fences, ranks whose world is larger than this
 * host's ranks (the others run elsewhere); a job all of whose ranks are here is left alone */
static void test_cut_off_at_start(void)
{
	uint64_t held, fenced;

	reset();
	cfg.fence_after_s = 5;
	rk[0].world_size = rk[1].world_size = 4;
	cut_off(3, 0, 50000, 2, &held, &fenced);
	CU_ASSERT(held > 0 && held <= 1500);
	CU_ASSERT(fenced >= 5000 && fenced <= 5200); /* fence_after since the guess first held */
	CU_ASSERT_EQUAL(count(DP_ACT_HOLD), 1);
	CU_ASSERT_EQUAL(count(DP_ACT_SIGNAL), 2);
	CU_ASSERT_TRUE(rk[0].killed_by_agent);
	/* every rank of the world here, one of them ended: no other node to act without us */
	reset();
	cfg.fence_after_s = 5;
	rk[0].world_size = rk[1].world_size = rk[2].world_size = 3;
	rk[2].exited = 1;
	cut_off(3, 0, 50000, 3, &held, &fenced);
	CU_ASSERT_EQUAL(held, 0);
	CU_ASSERT_EQUAL(fenced, 0);
	/* a rank restarted here (two incarnations of rank 1) does not hide rank 3 elsewhere */
	reset();
	cfg.fence_after_s = 5;
	for (int i = 0; i < 4; i++)
		rk[i].world_size = 4;
	rk[2].rank = 1;
	rk[2].exited = 1;
	cut_off(3, 0, 50000, 4, &held, &fenced);
	CU_ASSERT(held > 0 && held <= 1500);
	CU_ASSERT(fenced >= 5000 && fenced <= 5200);
	/* a single-node job of 4 whose ranks register one by one while the store has long been
	 * away: the first looks see fewer than its world (a guess of ranks elsewhere): held, then
	 * released once all 4 are here, never ended */
	reset();
	cfg.fence_after_s = 5;
	cfg.hold_after_s = 1.5;
	for (int i = 0; i < 4; i++)
		rk[i].world_size = 4;
	rec.reachable = 0;
	for (int n = 1; n <= 4; n++) {
		rec.unreachable_ms = 60000 + (uint64_t)n * 1000;
		dp_fence(&cfg, &rec, &mem, rk, n, &out);
		CU_ASSERT_EQUAL(mem.fenced, 0);
	}
	CU_ASSERT_EQUAL(mem.held, 0);
	CU_ASSERT_EQUAL(count(DP_ACT_HOLD), 2); /* held, then released */
	CU_ASSERT_EQUAL(count(DP_ACT_SIGNAL), 0);
}

int main(void)
{
	CU_pSuite s;
	unsigned failures;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("decide_policy: invariants", NULL, NULL);
	CU_add_test(s, "I2: complete by the world size", test_complete_world);
	CU_add_test(s, "I2: complete after a relaunch (issue 32)", test_complete_after_relaunch);
	CU_add_test(s, "I2: a left-out node's saves stand in for no other (simulator)",
		    test_complete_left_out_sum);
	CU_add_test(s, "I2: a non-member's report completes nothing (issue 32)",
		    test_complete_non_member);
	CU_add_test(s, "I2: a rejoined node's saves stand in for no other (issue 32)",
		    test_complete_rejoined);
	CU_add_test(s, "I3: a completion raises the resume step by its bound step only",
		    test_done_step);
	CU_add_test(s, "a generation's world", test_generation_world);
	CU_add_test(s, "acknowledged targets", test_bind);
	CU_add_test(s, "I3: resume per generation", test_resume_per_generation);
	CU_add_test(s, "a completed preemption begins a generation", test_preemption_generation);
	CU_add_test(s, "I5: preemptions not lost", test_preemption_pending);
	CU_add_test(s, "I5: a failed save ends its request (issue 32)", test_failed_save);
	CU_add_test(s, "one fault, one generation", test_one_fault_one_generation);
	CU_add_test(s, "runs", test_run_choose);
	CU_add_test(s, "runs: a live rank of the current launch here", test_other_live);
	CU_add_test(s, "the fencing token grows across runs", test_fence_token);
	CU_add_test(s, "I1: host-local jobs", test_job_key);
	CU_add_test(s, "I6: hold before the lease runs out", test_hold_before_lease);
	CU_add_test(s, "I6: cut off at the start, no run known", test_cut_off_at_start);
	CU_basic_set_mode(CU_BRM_NORMAL);
	CU_basic_run_tests();
	failures = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)failures;
}
