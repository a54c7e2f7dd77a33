/*
 * The decision policy (user/lib/decide_policy.c), one test per rule of docs/decisions.md: no
 * store, no agent, no clock but the one given. Records are built as the store would hold them,
 * ranks as their slots and the kernel show them. The invariants' rules (I1-I7, runs,
 * acknowledged targets) are in test_decide_invariants.c.
 */
#include "decide_fixture.h"

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
	bound_request(1, 8);
	rec.ck.cause = DEC_CAUSE_PREEMPTION;
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
	bound_request(1, 12);
	member("n1", 2, 0);
	member("n2", 2, 0);
	rk[0].saved = rk[1].saved = 12;
	rk[0].step = rk[1].step = 12;
	dp_local(rk, 2, 12, &l);
	CU_ASSERT_EQUAL(l.saved, 2);
	report("n2", 2, 1);
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, &mem, &l));
	rec.rep[0].r.saved = 2;
	CU_ASSERT_TRUE(dp_complete(&cfg, &rec, &mem, &l));
	dp_checkpoint_progress(&cfg, &rec, &mem, &l, &now, &out);
	CU_ASSERT_TRUE(claimed("done/"));
	/* a node the generation leaves out does not count */
	rec.rep[0].r.saved = 0;
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, &mem, &l));
	rec.gen = 1;
	rec.g.nexcluded = 1;
	strcpy(rec.g.excluded[0], "n2");
	CU_ASSERT_TRUE(dp_complete(&cfg, &rec, &mem, &l));
}

/* rule: the restart budget: max_restarts failures within the window, then stop */
static void test_budget_stop(void)
{
	struct dec_gen g;

	reset();
	cfg.max_restarts = 1;
	rk[0].exited = 1;
	rk[0].wait_status = 1 << 8;
	dp_failures(&cfg, &rec, &mem, rk, 2, NULL, &now, &out);
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
	dp_failures(&cfg, &rec, &mem, rk, 2, NULL, &now, &out);
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
	dp_failures(&cfg, &rec, &mem, rk, 2, NULL, &t, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	out.nwrites = 0;
	dp_failures(&cfg, &rec, &mem, rk, 2, NULL, &t, &out); /* within a second: not again */
	CU_ASSERT_EQUAL(out.nwrites, 0);
	t.mono_ms += 6000; /* the claim expired (the store was away): made again */
	dp_failures(&cfg, &rec, &mem, rk, 2, NULL, &t, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	out.nwrites = 0;
	rec.gen = 1; /* it died in generation 0, generation 1 is decided */
	rec.g.generation = 1;
	dp_failures(&cfg, &rec, &mem, rk, 2, NULL, &now, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), -ENOENT);
}

/* rule: the hard timeout is a failure, claimed until a generation deals with it */
static void test_hang(void)
{
	const struct dp_hang stuck = {"rank 1 stuck", NULL};
	struct dec_gen g;
	struct dp_now t = now;

	reset();
	dp_failures(&cfg, &rec, &mem, rk, 2, &stuck, &t, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	CU_ASSERT_EQUAL(g.cause, DEC_CAUSE_HANG);
	out.nwrites = 0;
	dp_failures(&cfg, &rec, &mem, rk, 2, &stuck, &t, &out);
	CU_ASSERT_EQUAL(out.nwrites, 0);
	t.mono_ms += 1500;
	dp_failures(&cfg, &rec, &mem, rk, 2, &stuck, &t, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	out.nwrites = 0;
	rec.gen = 1; /* decided: its ranks are of the older generation, not applied here yet */
	rec.g.generation = 1;
	dp_failures(&cfg, &rec, &mem, rk, 2, &stuck, &t, &out);
	CU_ASSERT_EQUAL(out.nwrites, 0);
}

/* rule: a hang is charged to the node its culprit runs on (the job's verdict over every host's
 * part), not to the node that claimed first: at node_fault_limit that node is left out */
static void test_hang_culprit_node(void)
{
	const struct dp_hang there = {"rank 5 (n3) is stopped", "n3"};
	struct dec_gen g;

	reset();
	cfg.node_fault_limit = 1;
	member("n1", 2, 0);
	member("n3", 2, 0);
	dp_failures(&cfg, &rec, &mem, rk, 2, &there, &now, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	CU_ASSERT_EQUAL(g.cause, DEC_CAUSE_HANG);
	CU_ASSERT_STRING_EQUAL(g.node, "n3");
	CU_ASSERT_PTR_NOT_NULL(strstr(g.why, "rank 5 (n3) is stopped"));
	CU_ASSERT_TRUE(dp_excluded(&g, "n3"));
	CU_ASSERT_FALSE(dp_excluded(&g, cfg.node));
}

/* rule: a hang is decided on once: a stall that began before the current generation did is
 * the one it deals with (its ranks, still hung, are being ended: the restart budget was spent
 * in 100 ms, generation after generation, before they were gone); a stall that began since is
 * a new hang, even of ranks that did not register yet (their generation still reads 0) */
static void test_hang_claimed_once(void)
{
	struct dp_hang here = {"rank 1 is stopped", NULL, 60000};
	struct dec_gen g;
	struct dp_now t = now;

	reset();
	member("n1", 2, 0);
	rec.reachable = 1;
	dp_observe(&mem, &rec, &t, &out);
	dp_failures(&cfg, &rec, &mem, rk, 2, &here, &t, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	CU_ASSERT_EQUAL(g.generation, 1);
	/* generation 1 decided and applied; ranks 0-1 (generation 0) still live, still hung */
	out.nwrites = 0;
	t.mono_ms += 50;
	rec.gen = 1;
	rec.g = g;
	dp_observe(&mem, &rec, &t, &out);
	mem.applied_gen = 1;
	out.nwrites = 0;
	here.stalled_ms += 50;
	dp_failures(&cfg, &rec, &mem, rk, 2, &here, &t, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), -ENOENT);
	t.mono_ms += 3000; /* still hung, 3 s on: the same stall */
	here.stalled_ms += 3000;
	dp_failures(&cfg, &rec, &mem, rk, 2, &here, &t, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), -ENOENT);
	/* the launcher started generation 1's ranks; they hang before registering (generation
	 * still 0 here): a stall that began after the generation did, a new hang */
	t.mono_ms += 20000;
	here.stalled_ms = 15000;
	dp_failures(&cfg, &rec, &mem, rk, 2, &here, &t, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	CU_ASSERT_EQUAL(g.generation, 2);
	/* an agent that saw generation 1 already decided at its first look cannot tell when it
	 * began: any hang counts */
	reset();
	member("n1", 2, 0);
	rec.reachable = 1;
	rec.gen = 1;
	rec.g.generation = 1;
	rec.g.cause = DEC_CAUSE_HANG;
	dp_observe(&mem, &rec, &now, &out);
	CU_ASSERT_EQUAL(mem.gen_began_ms, 0);
	mem.applied_gen = 1;
	out.nwrites = 0;
	here.stalled_ms = 600000;
	dp_failures(&cfg, &rec, &mem, rk, 2, &here, &now, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
}

/* rule: the verdict names the culprit's host by its mesh address; members may be named
 * otherwise (node_name): the member that gave that address is charged, and a host that is no
 * member is not (this node is, and the why says where the culprit runs) */
static void test_hang_culprit_mesh(void)
{
	const struct dp_hang there = {"rank 5 is stopped", "10.0.0.3:7946"};
	struct dec_gen g;

	reset();
	strcpy(cfg.mesh, "10.0.0.1:7946");
	member("n1", 2, 0);
	strcpy(member("gpu-host-3", 2, 0)->m.mesh, "10.0.0.3:7946");
	CU_ASSERT_STRING_EQUAL(dp_node_by_mesh(&rec, "10.0.0.3:7946"), "gpu-host-3");
	CU_ASSERT_STRING_EQUAL(dp_node_by_mesh(&rec, "n1"), "n1"); /* named by its address */
	CU_ASSERT_PTR_NULL(dp_node_by_mesh(&rec, "10.0.0.9:7946"));
	dp_failures(&cfg, &rec, &mem, rk, 2, &there, &now, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	CU_ASSERT_STRING_EQUAL(g.node, "gpu-host-3");
	CU_ASSERT_PTR_NOT_NULL(strstr(g.why, "hard timeout on gpu-host-3"));
	/* a host no member gave: never charged, named in the why */
	reset();
	strcpy(cfg.mesh, "10.0.0.1:7946");
	member("n1", 2, 0);
	{
		const struct dp_hang stranger = {"rank 5 is stopped", "10.0.0.9:7946"};

		dp_failures(&cfg, &rec, &mem, rk, 2, &stranger, &now, &out);
	}
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	CU_ASSERT_STRING_EQUAL(g.node, "n1");
	CU_ASSERT_PTR_NOT_NULL(strstr(g.why, "10.0.0.9:7946 (no member)"));
	/* the mesh's dead peer, by its address, is the member it is */
	reset();
	strcpy(member("gpu-host-3", 2, 0)->m.mesh, "10.0.0.3:7946");
	dp_peer_dead(&mem, &rec, dp_node_by_mesh(&rec, "10.0.0.3:7946"), &now);
	CU_ASSERT_EQUAL(mem.nsuspect, 1);
	CU_ASSERT_STRING_EQUAL(mem.suspect[0], "gpu-host-3");
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
	dp_failures(&cfg, &rec, &mem, rk, 2, NULL, &now, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	CU_ASSERT_EQUAL(g.cause, DEC_CAUSE_NODE_DEAD);
	CU_ASSERT_STRING_EQUAL(g.node, "n3");
	CU_ASSERT_EQUAL(g.nexcluded, 1);
	member("n3", 2, 0); /* back */
	dp_vanished(&cfg, &rec, &mem, &now);
	CU_ASSERT_EQUAL(mem.nlost, 0);
}

/* rule (I6): etcd stopped for everyone lets every lease run out; a member that vanishes when
 * this node's store answers again is not acted on for two lease TTLs (its agent puts it again
 * under a new lease meanwhile); one that stays away is lost after that */
static void test_vanished_after_outage(void)
{
	struct dec_gen g;
	struct dp_now t = now;

	reset();
	cfg.lease_ttl_s = 5;
	member("n1", 2, 0);
	member("n3", 2, 0);
	dp_vanished(&cfg, &rec, &mem, &t);
	rec.reachable = 0; /* the outage */
	dp_observe(&mem, &rec, &t, &out);
	t.mono_ms += 10000;
	rec.reachable = 1; /* back: n3's lease was revoked with the others' */
	rec.nmem = 1;
	dp_observe(&mem, &rec, &t, &out);
	dp_vanished(&cfg, &rec, &mem, &t);
	CU_ASSERT_EQUAL(mem.nlost, 1);
	out.nwrites = 0;
	dp_failures(&cfg, &rec, &mem, rk, 2, NULL, &t, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), -ENOENT);
	t.mono_ms += 2000; /* its agent put its member again */
	member("n3", 2, 0);
	dp_vanished(&cfg, &rec, &mem, &t);
	CU_ASSERT_EQUAL(mem.nlost, 0);
	dp_failures(&cfg, &rec, &mem, rk, 2, NULL, &t, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), -ENOENT);
	/* another outage, and this time n3 is really gone: lost once the grace is over */
	rec.reachable = 0;
	dp_observe(&mem, &rec, &t, &out);
	t.mono_ms += 10000;
	rec.reachable = 1;
	rec.nmem = 1;
	dp_observe(&mem, &rec, &t, &out);
	dp_vanished(&cfg, &rec, &mem, &t);
	t.mono_ms += 9000;
	dp_failures(&cfg, &rec, &mem, rk, 2, NULL, &t, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), -ENOENT);
	t.mono_ms += 1500; /* two TTLs after the store came back */
	dp_failures(&cfg, &rec, &mem, rk, 2, NULL, &t, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
}

/* Members n1 (this node) and n3, this agent's lease 100 last renewed at renewed_ms; after_ms
 * on, n3's member is gone and this agent's lease is lease_after. */
static void n3_vanishes(struct dp_now *t, int ttl_s, uint64_t renewed_ms, uint64_t after_ms,
			int64_t lease_after)
{
	reset();
	cfg.lease_ttl_s = ttl_s;
	member("n1", 2, 0);
	member("n3", 2, 0);
	rec.reachable = 1;
	rec.lease = 100;
	rec.lease_renewed_ms = renewed_ms;
	dp_observe(&mem, &rec, t, &out);
	dp_vanished(&cfg, &rec, &mem, t);
	t->mono_ms += after_ms;
	rec.lease = lease_after;
	rec.nmem = 1;
	dp_observe(&mem, &rec, t, &out);
	dp_vanished(&cfg, &rec, &mem, t);
}

/* rule (I6): this agent's own lease ran out (the store was away longer than a TTL, too briefly
 * to be seen unreachable): a member vanished then is not lost at once either; and a store that
 * keeps coming back defers a loss by two graces at most */
static void test_lease_renewed_outage(void)
{
	struct dec_gen g;
	struct dp_now t = now;

	n3_vanishes(&t, 5, 0, 3000, 101); /* ours expired: a new one, and n3's went with it */
	CU_ASSERT_EQUAL(mem.nlost, 1);
	dp_failures(&cfg, &rec, &mem, rk, 2, NULL, &t, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), -ENOENT);
	/* the store flaps every 5 s from now on: each return would defer the loss again */
	for (int i = 0; i < 3; i++) {
		t.mono_ms += 5000;
		mem.store_back_ms = mem.lease_renewed_ms = t.mono_ms;
		dp_failures(&cfg, &rec, &mem, rk, 2, NULL, &t, &out);
		CU_ASSERT_EQUAL(claimed_gen(&g), -ENOENT); /* 5, 10, 15 s: within 2 x 10 s */
	}
	t.mono_ms += 5000; /* 20 s after the loss: lost, flapping or not */
	mem.store_back_ms = mem.lease_renewed_ms = t.mono_ms;
	dp_failures(&cfg, &rec, &mem, rk, 2, NULL, &t, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	CU_ASSERT_EQUAL(g.cause, DEC_CAUSE_NODE_DEAD);
	CU_ASSERT_STRING_EQUAL(g.node, "n3");
}

/* rule (I6): a member vanished is lost only once this agent's own lease was renewed since:
 * etcd stopped longer than a TTL revokes every lease when it resumes, and the others' members
 * reach us through the watch before our next keepalive finds ours gone */
static void test_loss_waits_own_renewal(void)
{
	struct dec_gen g;
	struct dp_now t = now;

	/* etcd resumed: n3's member deleted, our keepalive (of the same lease) not yet due */
	n3_vanishes(&t, 3, now.mono_ms - 200, 4000, 100);
	CU_ASSERT_EQUAL(mem.nlost, 1);
	dp_failures(&cfg, &rec, &mem, rk, 2, NULL, &t, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), -ENOENT);
	/* our keepalive succeeded (the same lease): no revocation; n3 is lost */
	t.mono_ms += 400;
	rec.lease_renewed_ms = t.mono_ms;
	dp_observe(&mem, &rec, &t, &out);
	dp_failures(&cfg, &rec, &mem, rk, 2, NULL, &t, &out);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	CU_ASSERT_STRING_EQUAL(g.node, "n3");
}

/* rule: the mesh's word alone never makes a node lost: its lease confirms it */
static void test_suspects(void)
{
	struct dp_lease l[4] = {{0}};
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
	member_of("n2")->m.lease = 0;
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
	/* generation 2 (a preemption): rank 0's failure in generation 0 is not this fault: rank 1,
	 * restarted in generation 1, is told to exit, not taken into generation 2 */
	rec.gen = 2;
	rec.g.generation = 2;
	rec.g.cause = DEC_CAUSE_PREEMPTION;
	mem.gen_seen_ms = now.mono_ms;
	dp_apply_generation(&cfg, &rec, &mem, rk, 3, &out);
	CU_ASSERT_EQUAL(rk[1].generation, 1);
	CU_ASSERT_EQUAL(dp_told_to_exit(&cfg, &rec, &mem, &rk[1]), FTBPF_ACT_RESTART);
	/* the same when the failed ranks are gone from the table before the decision arrives (all
	 * of the job's ranks here ended, the launcher's restart is a new run that forgets them):
	 * the failure a look saw is remembered */
	reset();
	rk[0].exited = 1;
	rk[0].wait_status = 1 << 8;
	rk[0].exit_ms = now.mono_ms - 3000;
	dp_failures(&cfg, &rec, &mem, rk, 1, NULL, &now, &out);
	CU_ASSERT_EQUAL(mem.fail_ms, now.mono_ms - 3000);
	{ /* its claim expired (the store was away): claimed again, from memory alone */
		struct dp_now later = now;
		struct dec_gen g;

		later.mono_ms += 6000;
		out.nwrites = 0;
		dp_failures(&cfg, &rec, &mem, rk + 1, 2, NULL, &later, &out);
		CU_ASSERT_EQUAL(claimed_gen(&g), 0);
		CU_ASSERT_EQUAL(g.cause, DEC_CAUSE_RANK_DIED);
		CU_ASSERT_PTR_NOT_NULL(strstr(g.why, "rank 0"));
	}
	rec.gen = 1;
	rec.g.generation = 1;
	mem.gen_seen_ms = now.mono_ms;
	rk[1].start_ms = now.mono_ms - 2000; /* restarted after the failure, alone in the table */
	rk[2].start_ms = now.mono_ms - 5000; /* an old one */
	out.nacts = 0;
	dp_apply_generation(&cfg, &rec, &mem, rk + 1, 2, &out);
	CU_ASSERT_EQUAL(rk[1].generation, 1);
	CU_ASSERT_EQUAL(rk[2].generation, 0);
	CU_ASSERT_EQUAL(count(DP_ACT_SIGNAL), 1);
	CU_ASSERT_EQUAL(mem.fail_ms, 0); /* dealt with */
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
	/* the ranks save that one first: nobody exits at the first save's completion */
	CU_ASSERT_EQUAL(dp_told_to_exit(&cfg, &rec, &mem, &rk[0]), FTBPF_ACT_NONE);
	rec.ck_n = 2;
	rec.ck.id = 2;
	rec.ck_done = 0;
	dp_observe(&mem, &rec, &t, &out);
	CU_ASSERT_EQUAL(dp_told_to_exit(&cfg, &rec, &mem, &rk[0]), FTBPF_ACT_NONE);
	rec.ck_done = 1; /* the last save complete: now they exit, and the generation begins */
	rec.bind_target = 32;
	dp_observe(&mem, &rec, &t, &out);
	CU_ASSERT_EQUAL(dp_told_to_exit(&cfg, &rec, &mem, &rk[0]), FTBPF_ACT_RESTART);
	out.nwrites = 0;
	dp_checkpoint_progress(&cfg, &rec, &mem, &l, &t, &out);
	CU_ASSERT_EQUAL(claimed_gen(&(struct dec_gen){0}), 0);
}

/* rule (preempt_grace): a node that did not claim the last save knows it for the last when it
 * sees it (a preemption's save after its first one completed), claims no third, and its ranks
 * exit when it completes; the signalled node's preemption neither ends at the first save nor
 * is lost while the grace runs */
static void test_final_save_elsewhere(void)
{
	struct dp_local l = {.ranks = 2, .max_step = 30};
	struct dp_now t = now;
	struct dec_ckpt c;

	reset();
	cfg.preempt_grace_s = 300;
	mem.preempt_ms = t.mono_ms; /* this node got the signal, and asked */
	mem.preempt_ck = 1;
	rec.ck_n = 1;
	rec.ck.id = 1;
	rec.ck.cause = DEC_CAUSE_PREEMPTION;
	dp_observe(&mem, &rec, &t, &out);
	rec.ck_done = 1; /* every rank saved it */
	t.mono_ms += 1000;
	dp_observe(&mem, &rec, &t, &out);
	t.mono_ms += 130000; /* past the 120 s a preemption may wait for its first checkpoint */
	out.nwrites = out.nacts = 0;
	dp_preemption_pending(&cfg, &rec, &mem, &l, &t, &out);
	CU_ASSERT_EQUAL(count(DP_ACT_PREEMPTION_LOST), 0);
	CU_ASSERT_EQUAL(claimed_gen(&(struct dec_gen){0}),
			-ENOENT); /* not over at the first save */
	CU_ASSERT_NOT_EQUAL(mem.preempt_ms, 0);
	CU_ASSERT_EQUAL(dp_told_to_exit(&cfg, &rec, &mem, &rk[0]), FTBPF_ACT_NONE);
	/* another node claimed the last save: seen here, none claimed again */
	rec.ck_n = 2;
	rec.ck.id = 2;
	rec.ck_done = 0;
	dp_observe(&mem, &rec, &t, &out);
	CU_ASSERT_TRUE(mem.final_claimed);
	rec.ck_done = 1;
	dp_observe(&mem, &rec, &t, &out);
	t.mono_ms += 200000; /* the grace's end long past */
	out.nwrites = 0;
	dp_checkpoint_progress(&cfg, &rec, &mem, &l, &t, &out);
	CU_ASSERT_EQUAL(claimed_ckpt(&c), -ENOENT);
	CU_ASSERT_EQUAL(claimed_gen(&(struct dec_gen){0}), 0); /* it ends with the last save */
	CU_ASSERT_EQUAL(dp_told_to_exit(&cfg, &rec, &mem, &rk[0]), FTBPF_ACT_RESTART);
	/* an operator's checkpoint before a preemption is not its first save */
	reset();
	cfg.preempt_grace_s = 300;
	rec.ck_n = 1;
	rec.ck.id = 1;
	rec.ck.cause = DEC_CAUSE_OPERATOR;
	rec.ck_done = 1;
	dp_observe(&mem, &rec, &t, &out);
	rec.ck_n = 2;
	rec.ck.id = 2;
	rec.ck.cause = DEC_CAUSE_PREEMPTION;
	rec.ck_done = 0;
	dp_observe(&mem, &rec, &t, &out);
	CU_ASSERT_FALSE(mem.final_claimed);
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
	CU_add_test(s, "restart budget, then stop", test_budget_stop);
	CU_add_test(s, "a failure counts once, in its generation", test_failure_once);
	CU_add_test(s, "hard timeout", test_hang);
	CU_add_test(s, "left out", test_leave_out);
	CU_add_test(s, "preemption or a launcher's signal", test_is_preemption);
	CU_add_test(s, "fencing", test_fence);
	CU_add_test(s, "a vanished member is lost", test_vanished);
	CU_add_test(s, "a hang is charged to its culprit's node", test_hang_culprit_node);
	CU_add_test(s, "the culprit's host by its mesh address", test_hang_culprit_mesh);
	CU_add_test(s, "a hang is decided on once", test_hang_claimed_once);
	CU_add_test(s, "a member vanished when the store answers again (I6)",
		    test_vanished_after_outage);
	CU_add_test(s, "our lease ran out: an outage too (I6); a flapping store",
		    test_lease_renewed_outage);
	CU_add_test(s, "a loss waits for our own lease's renewal (I6)",
		    test_loss_waits_own_renewal);
	CU_add_test(s, "the mesh's suspicion, confirmed by the lease", test_suspects);
	CU_add_test(s, "applying a generation", test_apply_generation);
	CU_add_test(s, "decisions logged once", test_observe);
	CU_add_test(s, "final save in the grace period", test_final_save);
	CU_add_test(s, "final save in the grace period, claimed elsewhere",
		    test_final_save_elsewhere);
	CU_add_test(s, "member record", test_member_record);
	CU_basic_set_mode(CU_BRM_NORMAL);
	CU_basic_run_tests();
	failures = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)failures;
}
