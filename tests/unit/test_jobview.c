/* A job's verdict from its parts on several hosts: the union judged by the hang rule, the
 * waits-for graph, NCCL sequence numbers across hosts, missing parts. */
#include <CUnit/Basic.h>
#include <string.h>
#include <sys/syscall.h>

#include "lib/jobview.h"
#include "lib/waitsfor.h"

#define S   1000000000ull
#define NOW (100 * S)

static struct det_params P;

static struct jv_rank rk(int rank, enum rank_state st, int nr, int score, uint32_t age_ms)
{
	struct jv_rank r = {.rank = rank,
			    .pid = 1000 + rank,
			    .state = st,
			    .syscall = (int16_t)nr,
			    .score = (uint8_t)score,
			    .progress_age_ms = age_ms,
			    .state_age_ms = age_ms};
	return r;
}

static void part(struct jv_part *pt, const char *node, uint32_t ip, int world)
{
	memset(pt, 0, sizeof(*pt));
	snprintf(pt->node, sizeof(pt->node), "%s", node);
	snprintf(pt->job, sizeof(pt->job), "torch:10.0.0.1:29500");
	pt->world_size = world;
	pt->nchunks = 1;
	pt->addrs[0] = ip;
	pt->naddrs = 1;
	pt->at_ns = NOW;
}

static void add(struct jv_part *pt, struct jv_rank r)
{
	pt->ranks[pt->nranks++] = r;
}

static void edge(struct jv_part *pt, int from, int to, uint32_t ip, uint16_t port, int how)
{
	struct jv_edge *e = &pt->edges[pt->nedges++];

	e->from_rank = from;
	e->to_rank = to;
	e->peer.ip = ip;
	e->peer.port = port;
	e->how = (uint8_t)how;
}

/* The case: ranks 0-1 on host 1 (this one), 2-3 on host 2, rank 3 sleeps. */
static void test_culprit_elsewhere(void)
{
	struct jv_part pt[2];
	struct jv_verdict v;

	part(&pt[0], "10.0.0.1:7946", 0x0a000001, 4);
	add(&pt[0], rk(0, RS_BLOCKED, SYS_futex, 10, 6000));
	add(&pt[0], rk(1, RS_BLOCKED, SYS_futex, 10, 6000));
	part(&pt[1], "10.0.0.2:7946", 0x0a000002, 4);
	add(&pt[1], rk(2, RS_BLOCKED, SYS_futex, 10, 6000));
	add(&pt[1], rk(3, RS_BLOCKED, SYS_clock_nanosleep, 60, 6100));
	pt[1].at_ns = NOW - S / 10;
	/* alone, host 1 can only say "elsewhere" */
	CU_ASSERT_EQUAL(jobview_eval(pt, 1, 0, NULL, 0, NOW, &P, NULL, &v), 0);
	CU_ASSERT_EQUAL(v.n_culprits, 0);
	CU_ASSERT_TRUE(v.hung);
	CU_ASSERT_EQUAL(v.nmissing, 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(v.why, "2-3"));
	/* with host 2's part: rank 3 on host 2 */
	CU_ASSERT_EQUAL(jobview_eval(pt, 2, 0, NULL, 0, NOW, &P, NULL, &v), 0);
	CU_ASSERT_TRUE(v.valid);
	CU_ASSERT_TRUE(v.hung);
	CU_ASSERT_EQUAL(v.hosts, 2);
	CU_ASSERT_EQUAL(v.ranks, 4);
	CU_ASSERT_EQUAL(v.n_culprits, 1);
	CU_ASSERT_EQUAL(v.culprit_ranks[0], 3);
	CU_ASSERT_STRING_EQUAL(v.culprit_node, "10.0.0.2:7946");
	CU_ASSERT_STRING_EQUAL(v.culprit_state, "blocked");
	CU_ASSERT_FALSE(v.culprit_here);
	CU_ASSERT_PTR_NOT_NULL(strstr(v.why, "10.0.0.2:7946"));
	/* host 2 judging the same parts (its own first) says the culprit is here */
	{
		struct jv_part q[2] = {pt[1], pt[0]};

		q[0].at_ns = NOW;
		CU_ASSERT_EQUAL(jobview_eval(q, 2, 0, NULL, 0, NOW, &P, NULL, &v), 0);
		CU_ASSERT_EQUAL(v.culprit_ranks[0], 3);
		CU_ASSERT_TRUE(v.culprit_here);
	}
	/* a rank of host 2 progressed 1 s ago: the job is not hung */
	pt[1].ranks[0].progress_age_ms = 1000;
	CU_ASSERT_EQUAL(jobview_eval(pt, 2, 0, NULL, 0, NOW, &P, NULL, &v), 0);
	CU_ASSERT_FALSE(v.hung);
}

/* Two ranks on one host, both blocked reading sockets: the one the other waits on. */
static void test_two_ranks_graph(void)
{
	struct jv_part pt;
	struct jv_verdict v;

	part(&pt, "h1:7946", 0x0a000001, 2);
	add(&pt, rk(0, RS_BLOCKED, SYS_recvfrom, 10, 6000));
	add(&pt, rk(1, RS_BLOCKED, SYS_recvfrom, 10, 6000));
	CU_ASSERT_EQUAL(jobview_eval(&pt, 1, 0, NULL, 0, NOW, &P, NULL, &v), 0);
	CU_ASSERT_EQUAL(v.n_culprits, 0); /* the detector alone: "elsewhere" */
	edge(&pt, 0, 1, 0x7f000001, 4001, JV_EDGE_RECV);
	edge(&pt, 1, -2, 0x7f000001, 4999, JV_EDGE_RECV);
	CU_ASSERT_EQUAL(jobview_eval(&pt, 1, 0, NULL, 0, NOW, &P, NULL, &v), 0);
	CU_ASSERT_TRUE(v.graph);
	CU_ASSERT_EQUAL(v.n_culprits, 1);
	CU_ASSERT_EQUAL(v.culprit_ranks[0], 1);
	CU_ASSERT_TRUE(v.culprit_here);
	CU_ASSERT_PTR_NOT_NULL(strstr(v.why, "wait on rank 1"));
	/* a chain of three, the same posture everywhere: the end of the chain */
	pt.world_size = 3;
	add(&pt, rk(2, RS_BLOCKED, SYS_recvfrom, 10, 6000));
	pt.nedges = 0;
	edge(&pt, 0, 1, 0, 0, JV_EDGE_RECV);
	edge(&pt, 1, 2, 0, 0, JV_EDGE_RECV);
	edge(&pt, 2, -2, 0, 0, JV_EDGE_RECV);
	CU_ASSERT_EQUAL(jobview_eval(&pt, 1, 0, NULL, 0, NOW, &P, NULL, &v), 0);
	CU_ASSERT_EQUAL(v.culprit_ranks[0], 2);
	CU_ASSERT_EQUAL(v.n_culprits, 1);
}

/* Edges across hosts: resolved by the host that owns the endpoint. */
static void test_remote_edges(void)
{
	struct jv_part pt[3];
	struct jv_verdict v;
	struct jv_host hosts[1] = {{"10.0.0.3:7946", 0x0a000003, 1}};

	part(&pt[0], "10.0.0.1:7946", 0x0a000001, 3);
	add(&pt[0], rk(0, RS_BLOCKED, SYS_recvfrom, 10, 6000));
	add(&pt[0], rk(1, RS_BLOCKED, SYS_recvfrom, 10, 6000));
	edge(&pt[0], 0, 1, 0x0a000001, 5001, JV_EDGE_RECV);
	edge(&pt[0], 1, -1, 0x0a000002, 5002, JV_EDGE_RECV);
	part(&pt[1], "10.0.0.2:7946", 0x0a000002, 3);
	add(&pt[1], rk(2, RS_BLOCKED, SYS_recvfrom, 10, 6000));
	edge(&pt[1], 2, -2, 0x0a000002, 5999, JV_EDGE_RECV);
	/* before host 2 resolved 5002: an endpoint on host 2, and rank 2 waits on nothing of
	 * the job: the host is the culprit's */
	CU_ASSERT_EQUAL(jobview_eval(pt, 2, 0, NULL, 0, NOW, &P, NULL, &v), 0);
	CU_ASSERT_TRUE(v.graph);
	CU_ASSERT_STRING_EQUAL(v.culprit_node, "10.0.0.2:7946");
	CU_ASSERT_TRUE(v.pending); /* host 2 may resolve it with its next part */
	pt[1].res[pt[1].nres++] = (struct jv_res){{0x0a000002, 5002}, 2};
	CU_ASSERT_EQUAL(jobview_eval(pt, 2, 0, NULL, 0, NOW, &P, NULL, &v), 0);
	CU_ASSERT_EQUAL(v.n_culprits, 1);
	CU_ASSERT_EQUAL(v.culprit_ranks[0], 2);
	CU_ASSERT_STRING_EQUAL(v.culprit_node, "10.0.0.2:7946");
	CU_ASSERT_EQUAL(v.culprit_ranks[0], 2);
	/* host 2's agent down (its part stale), rank 1 waits on its socket: host 2 is named,
	 * ranks 2 missing, last seen there */
	pt[1].stale = 1;
	CU_ASSERT_EQUAL(jobview_eval(pt, 2, 0, hosts, 1, NOW, &P, NULL, &v), 0);
	CU_ASSERT_EQUAL(v.n_culprits, 0);
	CU_ASSERT_STRING_EQUAL(v.culprit_node, "10.0.0.2:7946");
	CU_ASSERT_EQUAL(v.nmissing, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(v.missing, "last seen on 10.0.0.2:7946"));
	CU_ASSERT_FALSE(v.pending); /* its part is stale: nothing more will come */
	/* an endpoint on a host the mesh knows, without any part */
	pt[0].edges[1].peer.ip = 0x0a000003;
	CU_ASSERT_EQUAL(jobview_eval(pt, 2, 0, hosts, 1, NOW, &P, NULL, &v), 0);
	CU_ASSERT_STRING_EQUAL(v.culprit_node, "10.0.0.3:7946");
	/* an address no host has: outside the job; rank 1 is the one rank 0 waits on */
	pt[0].edges[1].peer.ip = 0x0b000009;
	CU_ASSERT_EQUAL(jobview_eval(pt, 2, 0, hosts, 1, NOW, &P, NULL, &v), 0);
	CU_ASSERT_EQUAL(v.culprit_ranks[0], 1);
}

/* NCCL sequence numbers compared over the whole job. */
static void test_nccl_across_hosts(void)
{
	struct jv_part pt[2];
	struct jv_verdict v;

	part(&pt[0], "a:1", 1, 4);
	part(&pt[1], "b:1", 2, 4);
	for (int r = 0; r < 4; r++) {
		struct jv_rank x = rk(r, RS_NCCL, -1, 15, 6000);

		x.flags = JV_R_COMM;
		x.comm_id = 0xabc;
		x.comm_seq = r == 2 ? 41 : 42;
		if (r == 2) { /* the laggard computes: not in NCCL */
			x.state = RS_RUNNING;
			x.score = 30;
		}
		add(&pt[r / 2], x);
	}
	CU_ASSERT_EQUAL(jobview_eval(pt, 2, 0, NULL, 0, NOW, &P, NULL, &v), 0);
	CU_ASSERT_EQUAL(v.rule, DET_RULE_NCCL);
	CU_ASSERT_EQUAL(v.n_culprits, 1);
	CU_ASSERT_EQUAL(v.culprit_ranks[0], 2);
	CU_ASSERT_STRING_EQUAL(v.culprit_node, "b:1");
	/* host a alone sees no lag */
	CU_ASSERT_EQUAL(jobview_eval(pt, 1, 0, NULL, 0, NOW, &P, NULL, &v), 0);
	CU_ASSERT_NOT_EQUAL(v.rule, DET_RULE_NCCL);
}

/* A rank killed on another host: the first to die, there. */
static void test_dead_elsewhere(void)
{
	struct jv_part pt[2];
	struct jv_verdict v;
	struct jv_rank x = rk(3, RS_EXITED, -1, 100, 3000);

	part(&pt[0], "a:1", 1, 4);
	add(&pt[0], rk(0, RS_BLOCKED, SYS_futex, 10, 3000));
	add(&pt[0], rk(1, RS_BLOCKED, SYS_futex, 10, 3000));
	part(&pt[1], "b:1", 2, 4);
	add(&pt[1], rk(2, RS_BLOCKED, SYS_futex, 10, 3000));
	x.flags = JV_R_EXITED;
	x.exit_code = 9;
	x.exit_age_ms = 2500;
	snprintf(x.reason, sizeof(x.reason), "killed by SIGKILL");
	add(&pt[1], x);
	CU_ASSERT_EQUAL(jobview_eval(pt, 2, 0, NULL, 0, NOW, &P, NULL, &v), 0);
	CU_ASSERT_TRUE(v.failed);
	CU_ASSERT_EQUAL(v.culprit_ranks[0], 3);
	CU_ASSERT_STRING_EQUAL(v.culprit_node, "b:1");
	CU_ASSERT_STRING_EQUAL(v.culprit_state, "exited");
	CU_ASSERT_PTR_NOT_NULL(strstr(v.why, "SIGKILL"));
}

/* Ranks claimed twice: the first part's claim (this host's) holds. */
static void test_claims(void)
{
	struct jv_part pt[2];
	struct jv_verdict v;

	part(&pt[0], "a:1", 1, 2);
	add(&pt[0], rk(0, RS_BLOCKED, SYS_futex, 10, 6000));
	add(&pt[0], rk(1, RS_BLOCKED, SYS_futex, 10, 6000));
	part(&pt[1], "b:1", 2, 2);
	add(&pt[1], rk(1, RS_STOPPED, -1, 95, 6000));
	CU_ASSERT_EQUAL(jobview_eval(pt, 2, 0, NULL, 0, NOW, &P, NULL, &v), 0);
	CU_ASSERT_EQUAL(v.ranks, 2);
	CU_ASSERT_NOT_EQUAL(strcmp(v.culprit_state, "stopped"), 0);
}

static void test_ranges(void)
{
	char b[64];

	jobview_ranges((int[]){1, 2, 3, 5, 7, 8}, 6, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "1-3, 5, 7-8");
	jobview_ranges(NULL, 0, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "");
}

int main(void)
{
	CU_pSuite s;

	det_params_from_seconds(&P, 5, 60, 3);
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("jobview", NULL, NULL);
	CU_add_test(s, "the culprit on another host", test_culprit_elsewhere);
	CU_add_test(s, "two ranks waiting on sockets; a chain", test_two_ranks_graph);
	CU_add_test(s, "edges across hosts; a host without a part", test_remote_edges);
	CU_add_test(s, "NCCL sequence numbers across hosts", test_nccl_across_hosts);
	CU_add_test(s, "a rank killed on another host", test_dead_elsewhere);
	CU_add_test(s, "a rank claimed twice", test_claims);
	CU_add_test(s, "rank ranges", test_ranges);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	{
		int f = (int)CU_get_number_of_failures();

		CU_cleanup_registry();
		return f ? 1 : 0;
	}
}
