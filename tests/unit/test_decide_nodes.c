/* The decision records' node tables (lib/decide_records.c) and the policy over many hosts: no
 * fixed cap on a job's members, reports or left-out nodes (issue 32). */
#include "decide_fixture.h"

static char *node_name(int i)
{
	static char buf[4][DEC_NODE_LEN];
	static int next;
	char *b = buf[next++ % 4];

	snprintf(b, DEC_NODE_LEN, "h%05d", i);
	return b;
}

/* rule: members and reports stay in node order whatever order they come in, once each; the
 * tables keep their memory across looks */
static void test_tables(void)
{
	struct dec_member m = {.ranks = 1};
	struct dec_report x = {.ranks = 1};
	struct dp_node_member *before;
	int cap;

	reset();
	CU_ASSERT_PTR_NULL(dp_member(&rec, "a"));
	CU_ASSERT_PTR_NULL(dp_report(&rec, "a"));
	CU_ASSERT_EQUAL(dr_add_member(&rec, "c", &m), 0);
	CU_ASSERT_EQUAL(dr_add_member(&rec, "a", &m), 0);
	CU_ASSERT_EQUAL(dr_add_member(&rec, "b", &m), 0);
	CU_ASSERT_EQUAL(dr_add_member(&rec, "b", &m), -EEXIST);
	CU_ASSERT_EQUAL(rec.nmem, 3);
	CU_ASSERT_STRING_EQUAL(rec.mem[0].node, "a");
	CU_ASSERT_STRING_EQUAL(rec.mem[1].node, "b");
	CU_ASSERT_STRING_EQUAL(rec.mem[2].node, "c");
	CU_ASSERT_PTR_NULL(dp_member(&rec, "bb"));
	CU_ASSERT_EQUAL(dr_add_report(&rec, "z", &x), 0);
	CU_ASSERT_EQUAL(dr_add_report(&rec, "y", &x), 0);
	CU_ASSERT_EQUAL(dr_add_report(&rec, "z", &x), -EEXIST);
	CU_ASSERT_STRING_EQUAL(rec.rep[0].node, "y");
	CU_ASSERT_PTR_NOT_NULL(dp_report(&rec, "z"));
	/* past the old cap of 64, in reverse order (each goes first) */
	for (int i = 999; i >= 0; i--) {
		m.ranks = i + 1;
		CU_ASSERT_EQUAL(dr_add_member(&rec, node_name(i), &m), 0);
		x.ranks = i + 1;
		CU_ASSERT_EQUAL(dr_add_report(&rec, node_name(i), &x), 0);
		CU_ASSERT_EQUAL(dr_add_out(&rec, node_name(i), i), 0);
		CU_ASSERT_EQUAL(dr_add_out_refused(&rec, node_name(i)), 0);
	}
	CU_ASSERT_EQUAL(rec.nmem, 1003);
	for (int i = 1; i < rec.nmem; i++)
		CU_ASSERT_TRUE(strcmp(rec.mem[i - 1].node, rec.mem[i].node) < 0);
	for (int i = 1; i < rec.nrep; i++)
		CU_ASSERT_TRUE(strcmp(rec.rep[i - 1].node, rec.rep[i].node) < 0);
	CU_ASSERT_EQUAL(dp_member(&rec, node_name(700))->m.ranks, 701);
	CU_ASSERT_EQUAL(dp_report(&rec, node_name(999))->ranks, 1000);
	CU_ASSERT_TRUE(dp_left_out(&rec, node_name(999)) && dp_out_refused(&rec, node_name(999)));
	CU_ASSERT_EQUAL(rec.nout, 1000);
	CU_ASSERT_EQUAL(rec.out_ranks[0], 999);
	/* the next look: emptied, the memory kept (no allocation to read the same job again) */
	before = rec.mem;
	cap = rec.mem_cap;
	dr_reset(&rec);
	CU_ASSERT_TRUE(rec.nmem == 0 && rec.nrep == 0 && rec.nout == 0 && rec.nout_refused == 0);
	CU_ASSERT_PTR_NULL(dp_member(&rec, node_name(1)));
	for (int i = 0; i < 1003; i++)
		CU_ASSERT_EQUAL(dr_add_member(&rec, node_name(i), &m), 0);
	CU_ASSERT_TRUE(rec.mem == before && rec.mem_cap == cap);
	dr_clear(&rec);
	CU_ASSERT_TRUE(rec.mem == NULL && rec.nmem == 0 && rec.mem_cap == 0);
}

static struct dec_report *report_at(int i)
{
	return (struct dec_report *)dp_report(&rec, node_name(i));
}

/* A job on n hosts, 2 ranks each, this node the first: every member, and every report but the
 * one of node `missing` (-1 none), read in a shuffled order. world: the ranks know their world
 * size (2 n). Each report acknowledged at step 40 and saved saved ranks. */
static void job(int n, int missing, int world, int saved)
{
	reset();
	strcpy(cfg.node, node_name(0));
	for (int i = 0; i < 2; i++) {
		rk[i].world_size = world ? 2 * n : 0;
		rk[i].ack = 40;
	}
	for (int k = 0; k < n; k++) {
		int i = (int)((long)k * 37 % n); /* 37 is prime to 65, 1000 and 4000 */
		struct dec_report *x;

		member(node_name(i), 2, 0);
		if (i == 0 || i == missing)
			continue;
		x = report(node_name(i), 2, saved);
		x->acked = 2;
		x->max_ack = 40;
	}
}

/* rule: at n hosts every member counts: all saved is complete, one report missing is not, all
 * acknowledged binds, no member present is lost, one beyond the 64th that vanishes is, and so
 * are 100 at once, vanished or dead to the mesh with their leases expired */
static void nodes(int n, int world)
{
	static struct dp_lease leases[100];
	int gone = n > 100 ? 100 : n - 1; /* hosts lost at once: 64 at 65 hosts, else 100 */
	struct dp_local l;
	int64_t t = -1;

	/* acknowledgement: the bind */
	job(n, n - 1, world, 0);
	rec.ck_n = 1;
	rec.ck.id = 1;
	rec.ck.cause = DEC_CAUSE_OPERATOR;
	dp_local(rk, 2, -1, &l);
	CU_ASSERT_FALSE(dp_all_acked(&cfg, &rec, &l, &t)); /* the last host has not */
	dp_checkpoint_progress(&cfg, &rec, &mem, &l, &now, &out);
	CU_ASSERT_FALSE(claimed("bind/"));
	job(n, -1, world, 0);
	rec.ck_n = 1;
	rec.ck.id = 1;
	rec.ck.cause = DEC_CAUSE_OPERATOR;
	CU_ASSERT_EQUAL(rec.nmem, n);
	CU_ASSERT_EQUAL(rec.nrep, n - 1);
	CU_ASSERT_TRUE(dp_all_acked(&cfg, &rec, &l, &t));
	CU_ASSERT_EQUAL(t, 41);
	dp_checkpoint_progress(&cfg, &rec, &mem, &l, &now, &out);
	CU_ASSERT_TRUE(claimed("bind/00000000000000000000/00000000000000000001"));
	/* the saves of the bound step */
	job(n, n - 1, world, 2);
	bound_request(1, 41);
	for (int i = 0; i < 2; i++)
		rk[i].saved = rk[i].step = 41;
	dp_local(rk, 2, 41, &l);
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, &mem, &l)); /* one host's report is missing */
	job(n, -1, world, 2);
	bound_request(1, 41);
	for (int i = 0; i < 2; i++)
		rk[i].saved = rk[i].step = 41;
	dp_local(rk, 2, 41, &l);
	report_at(n - 1)->saved = 1;
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, &mem, &l)); /* one of its ranks has not saved */
	report_at(n - 1)->saved = 2;
	CU_ASSERT_TRUE(dp_complete(&cfg, &rec, &mem, &l));
	/* a member table short of memory completes nothing */
	rec.mem_short = 1;
	CU_ASSERT_FALSE(dp_complete(&cfg, &rec, &mem, &l));
	CU_ASSERT_FALSE(dp_all_acked(&cfg, &rec, &l, &t));
	rec.mem_short = 0;
	/* looks with every member there: none lost, all followed */
	dp_vanished(&cfg, &rec, &mem, &now);
	dp_vanished(&cfg, &rec, &mem, &now);
	CU_ASSERT_EQUAL(mem.nlost, 0);
	CU_ASSERT_EQUAL(mem.nprev, n);
	/* a look short of memory loses none of the members it could not read */
	rec.nmem = n / 2;
	rec.mem_short = 1;
	dp_vanished(&cfg, &rec, &mem, &now);
	CU_ASSERT_EQUAL(mem.nlost, 0);
	/* the last host (in node order: past the 64th) vanishes: lost */
	rec.mem_short = 0;
	rec.nmem = n - 1;
	dp_vanished(&cfg, &rec, &mem, &now);
	CU_ASSERT_EQUAL(mem.nlost, 1);
	CU_ASSERT_STRING_EQUAL(mem.lost[0], node_name(n - 1));
	/* more than 64 vanish at once (a rack, an etcd outage's expired leases): all followed */
	rec.nmem = n - gone;
	dp_vanished(&cfg, &rec, &mem, &now);
	CU_ASSERT_EQUAL(mem.nlost, gone);
	rec.nmem = n; /* back: none lost */
	dp_vanished(&cfg, &rec, &mem, &now);
	CU_ASSERT_EQUAL(mem.nlost, 0);
	/* as many dead to the mesh at once, their leases expired: all suspected, then lost */
	job(n, -1, world, 2);
	for (int i = 1; i <= gone; i++)
		dp_peer_dead(&mem, &rec, node_name(n - i), &now);
	CU_ASSERT_EQUAL(mem.nsuspect, gone);
	for (int i = 0; i < gone; i++)
		leases[i] = (struct dp_lease){.known = 1, .left_s = -1, .at_mono = now.mono_ms};
	dp_confirm_suspects(&mem, &rec, leases, &now);
	CU_ASSERT_EQUAL(mem.nlost, gone);
	CU_ASSERT_EQUAL(mem.nsuspect, 0);
}

static void test_65_nodes(void)
{
	nodes(65, 0);
	nodes(65, 1);
}

static void test_1000_nodes(void)
{
	nodes(1000, 0);
	nodes(1000, 1);
}

static void test_4000_nodes(void)
{
	nodes(4000, 0);
	nodes(4000, 1);
}

int main(void)
{
	CU_pSuite s;
	unsigned failures;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("decide_records: no fixed host cap", NULL, NULL);
	CU_add_test(s, "node tables: sorted, grown, kept across looks", test_tables);
	CU_add_test(s, "65 hosts", test_65_nodes);
	CU_add_test(s, "1,000 hosts", test_1000_nodes);
	CU_add_test(s, "4,000 hosts", test_4000_nodes);
	CU_basic_set_mode(CU_BRM_NORMAL);
	CU_basic_run_tests();
	failures = CU_get_number_of_failures();
	CU_cleanup_registry();
	dr_clear(&rec);
	dp_memory_clear(&mem);
	return (int)failures;
}
