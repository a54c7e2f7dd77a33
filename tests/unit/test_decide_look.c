/*
 * One look of one job as one pure function (lib/decide_look.c, issue 32: "the one decision
 * pass becomes one pure function, so the simulator and the agent run the same code"): the rules
 * in their order over records, ranks and memory given, the store's lease reads an input.
 */
#include "decide_fixture.h"
#include "lib/decide_look.h"

struct leases {
	int64_t left_s; /* what every suspect's lease has left; -2: nothing read yet */
	int asked;
};

static int lease_left(void *ctx, const struct dp_node_member *m, struct dp_lease *ret)
{
	struct leases *l = ctx;

	(void)m;
	l->asked++;
	if (l->left_s == -2)
		return -ENOENT;
	ret->left_s = l->left_s;
	ret->at_mono = now.mono_ms;
	return 0;
}

static int look(struct leases *l, const struct dp_hang *hang, struct dp_look_res *res)
{
	struct dp_look_in in = {.now = now, .own_lease = 7, .hang = hang, .ctx = l};

	in.lease_left = l ? lease_left : NULL;
	memset(&out, 0, sizeof(out));
	return dp_look(&cfg, &rec, &mem, rk, 2, &in, &out, res);
}

static int put(const char *prefix)
{
	for (int i = 0; i < out.nwrites; i++)
		if (!out.writes[i].claim && !strncmp(out.writes[i].rel, prefix, strlen(prefix)))
			return 1;
	return 0;
}

/* a healthy look: this node's member record, nothing claimed, no fence */
static void test_healthy(void)
{
	struct dp_look_res res;

	reset();
	rec.run = 1;
	rec.run_known = 1;
	rec.lease = 7;
	member("n1", 2, 0);
	member("n2", 2, 0);
	CU_ASSERT_EQUAL(look(NULL, NULL, &res), 0);
	CU_ASSERT_FALSE(res.fenced);
	CU_ASSERT_TRUE(put("members/n1"));
	CU_ASSERT_FALSE(claimed("gen/"));
	CU_ASSERT_FALSE(claimed("ckpt/"));
}

/* cut off for longer than hold_after + fence_after: the look holds, then fences, and decides
 * nothing else (no member record put, no claim) */
static void test_cut_off(void)
{
	struct dp_look_res res;

	reset();
	rec.run = 1;
	rec.run_known = 1;
	member("n1", 2, 0);
	member("n2", 2, 0);
	rec.reachable = 0;
	rec.unreachable_ms = 2000; /* past hold_after (1.5 s) */
	CU_ASSERT_EQUAL(look(NULL, NULL, &res), 0);
	CU_ASSERT_TRUE(res.fenced);
	CU_ASSERT_TRUE(mem.held);
	CU_ASSERT_FALSE(put("members/"));
	CU_ASSERT_EQUAL(out.nwrites, 0);
}

/* A world of 4 ranks on n1 (here, both saved step 12) and n2, which reports n2_saved of 2. */
static void bound_and_saved_here(int n2_saved)
{
	reset();
	rec.run = 1;
	rec.run_known = 1;
	member("n1", 2, 0);
	member("n2", 2, 0);
	bound_request(1, 12);
	rk[0].world_size = rk[1].world_size = 4;
	rk[0].saved = rk[1].saved = 12;
	report("n2", 2, n2_saved);
}

/* every rank of the world saved the bound step: the look completes the request */
static void test_completes(void)
{
	struct dp_look_res res;

	bound_and_saved_here(2);
	CU_ASSERT_EQUAL(look(NULL, NULL, &res), 0);
	CU_ASSERT_TRUE(claimed("done/"));
	/* one rank of the other node not saved: not complete */
	bound_and_saved_here(1);
	CU_ASSERT_EQUAL(look(NULL, NULL, &res), 0);
	CU_ASSERT_FALSE(claimed("done/"));
}

/* a member the mesh called dead is lost only when the lease read through the look's input says
 * it expired (I6), and only then begins a generation */
static void test_suspect_lease_input(void)
{
	struct leases l = {.left_s = -2};
	struct dp_look_res res;

	reset();
	rec.run = 1;
	rec.run_known = 1;
	rec.lease = 7;
	mem.own_lease = 7;
	mem.looked = 1;
	member("n1", 2, 0);
	member("n2", 2, 0);
	dp_peer_dead(&mem, &rec, "n2", &now);
	CU_ASSERT_EQUAL(mem.nsuspect, 1);
	CU_ASSERT_EQUAL(look(&l, NULL, &res), 0); /* nothing read yet */
	CU_ASSERT_TRUE(l.asked > 0);
	CU_ASSERT_EQUAL(mem.nlost, 0);
	l.left_s = 2; /* renewed: alive */
	CU_ASSERT_EQUAL(look(&l, NULL, &res), 0);
	CU_ASSERT_EQUAL(mem.nlost, 0);
	CU_ASSERT_FALSE(claimed("gen/"));
	l.left_s = -1; /* expired */
	CU_ASSERT_EQUAL(look(&l, NULL, &res), 0);
	CU_ASSERT_EQUAL(mem.nlost, 1);
}

/* the hard timeout handed in as the job's verdict makes a failure: the next generation */
static void test_hang_input(void)
{
	struct dp_hang hang = {.why = "rank 1 hung", .node = NULL, .stalled_ms = 600000};
	struct dp_look_res res;
	struct dec_gen g;

	reset();
	rec.run = 1;
	rec.run_known = 1;
	member("n1", 2, 0);
	CU_ASSERT_EQUAL(look(NULL, NULL, &res), 0);
	CU_ASSERT_FALSE(claimed("gen/"));
	CU_ASSERT_EQUAL(look(NULL, &hang, &res), 0);
	CU_ASSERT_EQUAL(claimed_gen(&g), 0);
	CU_ASSERT_EQUAL(g.cause, DEC_CAUSE_HANG);
}

/* The looks of an agent restarted just as a launcher restarts its ranks for a new generation
 * (issue 32, the fault suite's agent_kill): a rank that registered with the dying agent, which
 * died before writing its slot, is of no generation the slot names (nothing was written: no
 * fencing token), not of generation 0. It has read no decision: it waits for its first, and
 * is of the generation the run is in (1), never told to exit as a rank of the one before; a rank
 * the earlier agent gave generation 0 (its token) is older, and is told to exit. */
static void test_restarted_agent_generation(void)
{
	struct dp_look_in in = {.now = now, .own_lease = 7};
	struct ftbpf_slot_decision x;
	struct dp_look_res res;
	uint64_t g = 99;

	CU_ASSERT_EQUAL(dp_slot_generation(0, 0, &g), 0); /* nothing written: none */
	CU_ASSERT_EQUAL(g, 99);
	CU_ASSERT_EQUAL(dp_slot_generation(dp_fence_token(3, 0), 0, &g), 1);
	CU_ASSERT_EQUAL(g, 0);
	CU_ASSERT_EQUAL(dp_slot_generation(dp_fence_token(3, 2), 1, &g), 1); /* the token's */
	CU_ASSERT_EQUAL(g, 2);
	CU_ASSERT_EQUAL(dp_slot_generation(0, 4, &g), 1); /* an agent older than the token */
	CU_ASSERT_EQUAL(g, 4);
	reset(); /* the restarted agent's memory: nothing seen */
	rec.run = 1;
	rec.run_known = 1;
	rec.gen = 1;
	rec.g.generation = 1;
	rec.g.cause = DEC_CAUSE_PREEMPTION;
	rec.g.resume_step = 32;
	rec.last_complete = 32;
	member("n1", 2, 1);
	rk[0].gen_unknown = !dp_slot_generation(0, 0, &rk[0].generation);
	rk[0].start_ms = now.mono_ms - 1000; /* restarted by its launcher a second ago */
	CU_ASSERT_EQUAL(dp_slot_generation(dp_fence_token(1, 0), 0, &rk[1].generation), 1);
	CU_ASSERT_EQUAL(dp_look(&cfg, &rec, &mem, rk, 2, &in, &out, &res), 0);
	CU_ASSERT_EQUAL(rk[0].generation, 1);
	CU_ASSERT_FALSE(rk[0].gen_unknown);
	CU_ASSERT_EQUAL(dp_told_to_exit(&cfg, &rec, &mem, &rk[0]), FTBPF_ACT_NONE);
	dp_slot(&cfg, &rec, &mem, &rk[0], &x);
	CU_ASSERT_EQUAL(x.generation, 1);
	CU_ASSERT_EQUAL(x.resume_step, 32);
	CU_ASSERT_EQUAL(x.action, FTBPF_ACT_NONE);
	CU_ASSERT_EQUAL(rk[1].generation, 0);
	CU_ASSERT_EQUAL(dp_told_to_exit(&cfg, &rec, &mem, &rk[1]), FTBPF_ACT_RESTART);
	/* no run known yet (the store not read): the generation stays unknown */
	reset();
	rec.gen = 1;
	rk[0].gen_unknown = 1;
	dp_first_generation(&rec, rk, 1);
	CU_ASSERT_TRUE(rk[0].gen_unknown);
}

/* Run 1, n1's two ranks in generation 0, a preemption's request bound at 32 and complete. */
static void preemption_complete(void)
{
	reset();
	rec.run = 1;
	rec.run_known = 1;
	member("n1", 2, 0);
	bound_request(1, 32);
	rec.ck.cause = DEC_CAUSE_PREEMPTION;
	rec.ck_done = 1;
}

/* The same without a restart: a preemption's checkpoint is complete here, its ranks exit, their
 * launcher restarts them, and they register before the new generation reaches this node (they
 * wait, settling, for it): started after the checkpoint they exited for was complete here, they
 * are of the new generation, not told to exit as ranks of the one before. */
static void test_preempted_restart_generation(void)
{
	struct dp_look_in in = {.now = now, .own_lease = 7};
	struct dp_look_res res;
	uint64_t t0 = now.mono_ms;

	preemption_complete();
	CU_ASSERT_EQUAL(dp_look(&cfg, &rec, &mem, rk, 2, &in, &out, &res), 0);
	CU_ASSERT_EQUAL(mem.done_ms, t0);
	CU_ASSERT_EQUAL(dp_told_to_exit(&cfg, &rec, &mem, &rk[0]), FTBPF_ACT_RESTART);
	CU_ASSERT_EQUAL(claimed_gen(&(struct dec_gen){0}), 0);
	for (int i = 0; i < 2; i++) { /* they exit as told; their launcher starts 2 and 3 */
		rk[i].exited = 1;
		rk[i].wait_status = 42 << 8;
		rk[i].exit_ms = t0 + 30;
		rk[i + 2].start_ms = t0 + 60;
	}
	CU_ASSERT_EQUAL(dp_settling(&cfg, &rec, &mem, rk, 4), 1); /* they wait */
	rec.gen = 1; /* the generation reaches this node */
	rec.g.generation = 1;
	rec.g.cause = DEC_CAUSE_PREEMPTION;
	rec.g.resume_step = rec.last_complete = 32;
	rec.ck_n = 0;
	rec.ck_done = rec.bound = 0;
	in.now.mono_ms = t0 + 200;
	memset(&out, 0, sizeof(out));
	CU_ASSERT_EQUAL(dp_look(&cfg, &rec, &mem, rk, 4, &in, &out, &res), 0);
	CU_ASSERT_EQUAL(count(DP_ACT_SIGNAL), 0);
	for (int i = 2; i < 4; i++) {
		CU_ASSERT_EQUAL(rk[i].generation, 1);
		CU_ASSERT_EQUAL(dp_told_to_exit(&cfg, &rec, &mem, &rk[i]), FTBPF_ACT_NONE);
	}
	/* a rank that started before that checkpoint was complete is of the one before */
	preemption_complete();
	in.now.mono_ms = t0;
	memset(&out, 0, sizeof(out));
	CU_ASSERT_EQUAL(dp_look(&cfg, &rec, &mem, rk, 2, &in, &out, &res), 0);
	rec.gen = 1;
	rec.g.generation = 1;
	rec.g.cause = DEC_CAUSE_PREEMPTION;
	rec.ck_n = 0;
	rec.ck_done = rec.bound = 0;
	in.now.mono_ms = t0 + 200;
	CU_ASSERT_EQUAL(dp_look(&cfg, &rec, &mem, rk, 2, &in, &out, &res), 0);
	CU_ASSERT_EQUAL(rk[0].generation, 0);
	CU_ASSERT_EQUAL(dp_told_to_exit(&cfg, &rec, &mem, &rk[0]), FTBPF_ACT_RESTART);
}

int main(void)
{
	CU_pSuite s;
	unsigned f;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 2;
	s = CU_add_suite("decide_look", NULL, NULL);
	CU_add_test(s, "a healthy look: the member record only", test_healthy);
	CU_add_test(s, "cut off: held, then fenced, nothing else", test_cut_off);
	CU_add_test(s, "every rank saved: complete; one missing: not", test_completes);
	CU_add_test(s, "a suspect is lost by the lease read given", test_suspect_lease_input);
	CU_add_test(s, "the hard timeout given: a new generation", test_hang_input);
	CU_add_test(s, "an agent restarted: a rank given no generation is of the run's",
		    test_restarted_agent_generation);
	CU_add_test(s, "ranks restarted after a preemption's checkpoint are of the next",
		    test_preempted_restart_generation);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	f = CU_get_number_of_failures();
	CU_cleanup_registry();
	return f ? 1 : 0;
}
