/* The waits-for graph: chains, the two-rank case, rings of waiters, deadlocks, hosts. */
#include <CUnit/Basic.h>

#include <errno.h>

#include "lib/waitsfor.h"

static struct wf_result run(const struct wf_edge *e, int n)
{
	struct wf_result r;

	CU_ASSERT_EQUAL(waitsfor_eval(e, n, &r), 0);
	return r;
}

static void test_chain(void)
{
	/* 0 waits on 1, 1 on 2, 2 on nobody: 2, with two waiters */
	struct wf_edge e[] = {{0, 1}, {1, 2}};
	struct wf_result r = run(e, 2);

	CU_ASSERT_EQUAL(r.n, 1);
	CU_ASSERT_EQUAL(r.nodes[0], 2);
	CU_ASSERT_EQUAL(r.waiters, 2);
	CU_ASSERT_FALSE(r.cycle);
}

static void test_two_ranks(void)
{
	/* both wait on communication: 0 on 1, 1 on a server outside the job: 1 */
	struct wf_edge e[] = {{0, 1}, {1, WF_OUTSIDE}};
	struct wf_result r = run(e, 2);

	CU_ASSERT_EQUAL(r.n, 1);
	CU_ASSERT_EQUAL(r.nodes[0], 1);
	CU_ASSERT_EQUAL(r.waiters, 1);
	/* only an outside wait: nobody waits on the rank, no culprit */
	r = run((struct wf_edge[]){{1, WF_OUTSIDE}}, 1);
	CU_ASSERT_EQUAL(r.n, 0);
}

static void test_gloo_like(void)
{
	/* ranks 0 and 2 await rank 3's answer, rank 1 waits on nobody and nobody on it */
	struct wf_edge e[] = {{0, 3}, {2, 3}, {5, 6}};
	struct wf_result r = run(e, 3);

	CU_ASSERT_EQUAL(r.n, 1);
	CU_ASSERT_EQUAL(r.nodes[0], 3);
	CU_ASSERT_EQUAL(r.waiters, 2);
	/* the most waited-on wins over a second, smaller tree; a fan-in through a chain counts */
	r = run((struct wf_edge[]){{0, 1}, {2, 1}, {1, 4}, {7, 8}}, 4);
	CU_ASSERT_EQUAL(r.n, 1);
	CU_ASSERT_EQUAL(r.nodes[0], 4);
	CU_ASSERT_EQUAL(r.waiters, 3);
}

static void test_ties_and_cycles(void)
{
	struct wf_result r = run((struct wf_edge[]){{0, 1}, {2, 3}}, 2);

	CU_ASSERT_EQUAL(r.n, 2); /* two separate stalls: both named */
	r = run((struct wf_edge[]){{0, 1}, {1, 0}}, 2);
	CU_ASSERT_EQUAL(r.n, 0);
	CU_ASSERT_TRUE(r.cycle);
	CU_ASSERT_EQUAL(r.ncycle, 2);
	/* a rank waiting on itself (a socket to itself) is no edge; a cycle feeding a sink is
	 * not a deadlock */
	r = run((struct wf_edge[]){{0, 0}, {1, 2}, {2, 1}, {2, 3}}, 4);
	CU_ASSERT_EQUAL(r.n, 1);
	CU_ASSERT_EQUAL(r.nodes[0], 3);
}

static void test_hosts(void)
{
	/* ranks wait on an endpoint of host 1 no part resolves: the host is named */
	struct wf_result r = run((struct wf_edge[]){{0, WF_HOST(1)}, {1, 0}}, 2);

	CU_ASSERT_EQUAL(r.n, 1);
	CU_ASSERT_TRUE(WF_IS_HOST(r.nodes[0]));
	CU_ASSERT_EQUAL(WF_HOST_OF(r.nodes[0]), 1);
	CU_ASSERT_EQUAL(r.waiters, 2);
}

static void test_limits(void)
{
	struct wf_result r;
	static struct wf_edge big[WF_MAX_EDGES + 1];

	CU_ASSERT_EQUAL(waitsfor_eval(big, WF_MAX_EDGES + 1, &r), -EINVAL);
	CU_ASSERT_EQUAL(waitsfor_eval(big, 0, &r), 0);
	CU_ASSERT_EQUAL(r.n, 0);
	/* a long chain of 2000 ranks: the last one */
	for (int i = 0; i < 2000; i++)
		big[i] = (struct wf_edge){i, i + 1};
	CU_ASSERT_EQUAL(waitsfor_eval(big, 2000, &r), 0);
	CU_ASSERT_EQUAL(r.nodes[0], 2000);
	CU_ASSERT_EQUAL(r.waiters, 2000);
}

int main(void)
{
	CU_pSuite s;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("waitsfor", NULL, NULL);
	CU_add_test(s, "a chain", test_chain);
	CU_add_test(s, "two ranks both waiting on communication", test_two_ranks);
	CU_add_test(s, "fan-in, separate trees", test_gloo_like);
	CU_add_test(s, "ties and cycles", test_ties_and_cycles);
	CU_add_test(s, "endpoints on a host without a part", test_hosts);
	CU_add_test(s, "limits", test_limits);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	{
		int f = (int)CU_get_number_of_failures();

		CU_cleanup_registry();
		return f ? 1 : 0;
	}
}
