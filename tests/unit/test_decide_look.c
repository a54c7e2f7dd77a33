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
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	f = CU_get_number_of_failures();
	CU_cleanup_registry();
	return f ? 1 : 0;
}
