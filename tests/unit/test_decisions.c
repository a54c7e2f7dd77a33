/*
 * The pure parts of decisions (user/lib/decisions.c, user/lib/kvmap.c): records survive a
 * round trip and malformed ones are rejected, keys parse only in their shape, the checkpoint
 * target and re-targeting, the restart budget, and the store's in-memory map.
 */
#include <CUnit/Basic.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/decisions.h"
#include "lib/kvmap.h"

static void test_gen_roundtrip(void)
{
	struct dec_gen g = {.generation = 3,
			    .cause = DEC_CAUSE_NODE_DEAD,
			    .stop = 1,
			    .resume_step = 41,
			    .nexcluded = 2,
			    .at_ms = 1700000000123ull,
			    .world = 4};
	struct dec_gen x;
	char buf[DEC_VALUE_MAX];

	strcpy(g.node, "n3");
	strcpy(g.by, "n1");
	strcpy(g.excluded[0], "n3");
	strcpy(g.excluded[1], "n4");
	strcpy(g.why, "node \"n3\" was lost");
	CU_ASSERT_EQUAL(dec_gen_format(&g, buf, sizeof(buf)), 0);
	CU_ASSERT_EQUAL(dec_gen_parse(buf, &x), 0);
	CU_ASSERT_EQUAL(x.generation, 3);
	CU_ASSERT_EQUAL(x.cause, DEC_CAUSE_NODE_DEAD);
	CU_ASSERT_EQUAL(x.stop, 1);
	CU_ASSERT_EQUAL(x.resume_step, 41);
	CU_ASSERT_EQUAL(x.nexcluded, 2);
	CU_ASSERT_STRING_EQUAL(x.excluded[1], "n4");
	CU_ASSERT_STRING_EQUAL(x.why, g.why);
	CU_ASSERT_EQUAL(x.at_ms, g.at_ms);
	CU_ASSERT_EQUAL(x.world, 4);
}

static void test_member_lease(void)
{
	struct dec_member m = {
	    .ranks = 2, .generation = 1, .lease = 7587865543211234567ll, .lease_ttl_s = 3};
	struct dec_member x;
	char buf[DEC_VALUE_MAX];

	CU_ASSERT_EQUAL(dec_member_format(&m, buf, sizeof(buf)), 0);
	CU_ASSERT_EQUAL(dec_member_parse(buf, &x), 0);
	CU_ASSERT_EQUAL(x.lease, m.lease);
	CU_ASSERT_EQUAL(x.lease_ttl_s, 3);
	/* an older agent's record, without a lease: accepted, no lease */
	CU_ASSERT_EQUAL(dec_member_parse("{\"ranks\":1,\"generation\":0}", &x), 0);
	CU_ASSERT_EQUAL(x.lease, 0);
	CU_ASSERT(dec_member_parse("{\"ranks\":1,\"generation\":0,\"lease\":-3}", &x) < 0);
	CU_ASSERT(dec_member_parse("{\"ranks\":1,\"generation\":0,\"lease\":5,\"lease_ttl_s\":0}",
				   &x) < 0);
}

/* a member's mesh address: optional (none from an older agent, or without a mesh), a node
 * name's characters only */
static void test_member_mesh(void)
{
	struct dec_member m = {.ranks = 2, .generation = 1, .mesh = "10.0.0.3:7946"};
	struct dec_member x;
	char buf[DEC_VALUE_MAX];

	CU_ASSERT_EQUAL(dec_member_format(&m, buf, sizeof(buf)), 0);
	CU_ASSERT_EQUAL(dec_member_parse(buf, &x), 0);
	CU_ASSERT_STRING_EQUAL(x.mesh, "10.0.0.3:7946");
	m.mesh[0] = 0;
	CU_ASSERT_EQUAL(dec_member_format(&m, buf, sizeof(buf)), 0);
	CU_ASSERT_PTR_NULL(strstr(buf, "mesh"));
	CU_ASSERT_EQUAL(dec_member_parse(buf, &x), 0);
	CU_ASSERT_STRING_EQUAL(x.mesh, "");
	CU_ASSERT(dec_member_parse("{\"ranks\":1,\"generation\":0,\"mesh\":\"a b\"}", &x) < 0);
	CU_ASSERT(dec_member_parse("{\"ranks\":1,\"generation\":0,\"mesh\":7}", &x) < 0);
	CU_ASSERT(dec_member_parse("{\"ranks\":1,\"generation\":0,\"mesh\":"
				   "\"0123456789012345678901234567890123456789\"}",
				   &x) < 0);
}

static void test_out_record(void)
{
	struct dec_out x = {.ranks = 3}, y;
	char buf[DEC_VALUE_MAX];

	strcpy(x.by, "n2");
	CU_ASSERT_EQUAL(dec_out_format(&x, buf, sizeof(buf)), 0);
	CU_ASSERT_EQUAL(dec_out_parse(buf, &y), 0);
	CU_ASSERT_EQUAL(y.ranks, 3);
	CU_ASSERT_STRING_EQUAL(y.by, "n2");
	/* an older agent's record: no signer named */
	CU_ASSERT_EQUAL(dec_out_parse("{\"ranks\":2}", &y), 0);
	CU_ASSERT_STRING_EQUAL(y.by, "");
	CU_ASSERT(dec_out_parse("{\"ranks\":-1}", &y) < 0);
	CU_ASSERT(dec_out_parse("{\"ranks\":2000000}", &y) < 0);
	CU_ASSERT(dec_out_parse("{\"ranks\":1,\"by\":\"a b\"}", &y) < 0);
	CU_ASSERT(dec_out_parse("{\"ranks\":1,\"by\":7}", &y) < 0);
	CU_ASSERT(dec_out_parse("{\"by\":\"n2\"}", &y) < 0);
	CU_ASSERT(dec_out_parse("[1]", &y) < 0);
}

static void test_malformed(void)
{
	static const char *const bad[] = {
	    "",
	    "{",
	    "[]",
	    "null",
	    "{\"generation\":\"x\"}",
	    "{\"generation\":-1,\"cause\":\"rank_died\"}",
	    "{\"generation\":1,\"cause\":\"no such cause\"}",
	    "{\"generation\":1,\"cause\":\"rank_died\",\"excluded\":[1,2]}",
	    "{\"generation\":1,\"cause\":\"rank_died\",\"excluded\":\"n1\"}",
	};
	struct dec_gen g;
	struct dec_ckpt c;
	struct dec_report r;
	struct dec_done d;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT(dec_gen_parse(bad[i], &g) < 0);
	CU_ASSERT(dec_ckpt_parse("{\"generation\":0,\"id\":1}", &c) < 0); /* no target */
	CU_ASSERT(dec_report_parse("{\"ranks\":2,\"saved\":-1,\"max_step\":1}", &r) < 0);
	CU_ASSERT(dec_report_parse("{\"ranks\":2,\"saved\":1,\"max_step\":1,\"failed\":-1}", &r) <
		  0);
	/* "failed" is optional (an older agent's report has none), kept when given */
	CU_ASSERT(dec_report_parse("{\"ranks\":2,\"saved\":1,\"max_step\":1}", &r) == 0 &&
		  r.failed == 0);
	CU_ASSERT(dec_report_parse("{\"ranks\":2,\"saved\":1,\"max_step\":1,\"failed\":2}", &r) ==
		      0 &&
		  r.failed == 2);
	CU_ASSERT(dec_done_parse("{\"step\":\"5\"}", &d) < 0);
}

static void test_keys(void)
{
	char k[DEC_KEY_LEN];
	uint64_t g = 0, n = 0;

	dec_key_ckpt(k, sizeof(k), 2, 7);
	CU_ASSERT_EQUAL(dec_key_numbers(k, "ckpt", &g, &n), 0);
	CU_ASSERT_EQUAL(g, 2);
	CU_ASSERT_EQUAL(n, 7);
	dec_key_gen(k, sizeof(k), 5);
	CU_ASSERT_EQUAL(dec_key_numbers(k, "gen", &g, NULL), 0);
	CU_ASSERT_EQUAL(g, 5);
	CU_ASSERT(dec_key_numbers(k, "ckpt", &g, &n) < 0);
	CU_ASSERT(dec_key_numbers("gen/", "gen", &g, NULL) < 0);
	CU_ASSERT(dec_key_numbers("gen/12x", "gen", &g, NULL) < 0);
	CU_ASSERT(dec_key_numbers("gen/99999999999999999999999", "gen", &g, NULL) < 0);
	CU_ASSERT(dec_node_valid("10.0.0.1:7946"));
	CU_ASSERT(!dec_node_valid(""));
	CU_ASSERT(!dec_node_valid("a/b"));
	CU_ASSERT(!dec_node_valid("0123456789012345678901234567890123"));
}

static void test_targets(void)
{
	struct dec_ckpt ck = {.target = 10};
	struct dec_report past = {.ranks = 2, .saved = 1, .max_step = 11};
	struct dec_report done = {.ranks = 2, .saved = 2, .max_step = 11};
	struct dec_report behind = {.ranks = 2, .saved = 0, .max_step = 9};

	CU_ASSERT_EQUAL(dec_target(9, 1), 10);
	CU_ASSERT_EQUAL(dec_target(-1, 1), 1);
	CU_ASSERT(dec_retarget(&ck, &past));
	CU_ASSERT(!dec_retarget(&ck, &done));
	CU_ASSERT(!dec_retarget(&ck, &behind));
}

static void test_budget(void)
{
	uint64_t at[3] = {1000, 2000, 3000};

	CU_ASSERT(!dec_budget_spent(at, 2, 4000, 3, 3600));
	CU_ASSERT(dec_budget_spent(at, 3, 4000, 3, 3600));
	/* restarts older than the window do not count */
	CU_ASSERT(!dec_budget_spent(at, 3, 3600 * 1000 + 2500, 3, 3600));
	CU_ASSERT(dec_budget_spent(at, 0, 4000, 0, 3600));
}

static int count(void *ctx, const char *key, const char *value)
{
	(void)key, (void)value;
	(*(int *)ctx)++;
	return 0;
}

static void test_kvmap(void)
{
	struct kvmap m;
	int n = 0;

	kvmap_init(&m);
	CU_ASSERT_EQUAL(kvmap_set(&m, "jobs/0/a/gen/1", "x"), 0);
	CU_ASSERT_EQUAL(kvmap_set(&m, "jobs/0/a/gen/2", "y"), 0);
	CU_ASSERT_EQUAL(kvmap_set(&m, "jobs/0/b/gen/1", "z"), 0);
	CU_ASSERT_EQUAL(kvmap_set(&m, "jobs/0/a/gen/1", "x2"), 0);
	CU_ASSERT_STRING_EQUAL(kvmap_get(&m, "jobs/0/a/gen/1"), "x2");
	kvmap_foreach(&m, "jobs/0/a/", count, &n);
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_EQUAL(kvmap_del(&m, "jobs/0/a/gen/2"), 0);
	CU_ASSERT_PTR_NULL(kvmap_get(&m, "jobs/0/a/gen/2"));
	kvmap_clear(&m, "jobs/0/a/");
	CU_ASSERT_PTR_NULL(kvmap_get(&m, "jobs/0/a/gen/1"));
	CU_ASSERT_STRING_EQUAL(kvmap_get(&m, "jobs/0/b/gen/1"), "z");
	kvmap_fini(&m);
}

/* I6: the store's timing follows the lease's TTL: a node sees it is cut off no later than it is
 * to hold its ranks (half the TTL, or fence_after), 4 s at most, never within two renewals */
static void test_store_timing(void)
{
	static const double fences[] = {1, 2, 3, 6, 30, 60, 86400};

	CU_ASSERT_EQUAL(dec_lease_renew_ms(1), 333);
	CU_ASSERT_EQUAL(dec_lease_renew_ms(2), 500);
	CU_ASSERT_EQUAL(dec_lease_renew_ms(300), 500);
	CU_ASSERT_DOUBLE_EQUAL(dec_hold_after_s(2, 60), 1.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(dec_hold_after_s(10, 3), 3.0, 1e-9);
	CU_ASSERT_EQUAL(dec_reachable_ms(2, 60), 1000); /* was 4 s: past the 2 s lease */
	CU_ASSERT_EQUAL(dec_reachable_ms(3, 3), 1500);
	CU_ASSERT_EQUAL(dec_reachable_ms(5, 6), 2500);
	CU_ASSERT_EQUAL(dec_reachable_ms(10, 60), 4000);
	CU_ASSERT_EQUAL(dec_reachable_ms(300, 60), 4000);
	CU_ASSERT_EQUAL(dec_reachable_ms(10, 1), 1000); /* fence_after before half the TTL */
	CU_ASSERT_EQUAL(dec_reachable_ms(1, 60), 666);	/* no shorter than two renewals */
	for (int ttl = 2; ttl <= 300; ttl++)		/* etcd_lease_ttl's range */
		for (size_t i = 0; i < sizeof(fences) / sizeof(fences[0]); i++) {
			uint64_t w = dec_reachable_ms(ttl, fences[i]);

			CU_ASSERT(w <= (uint64_t)(dec_hold_after_s(ttl, fences[i]) * 1000));
			CU_ASSERT(w < (uint64_t)ttl * 1000);
			CU_ASSERT(w <= 4000);
			CU_ASSERT(w >= 2 * dec_lease_renew_ms(ttl));
		}
	/* the silence: since the last answer, or since the store was opened if none came */
	CU_ASSERT_EQUAL(dec_unreachable_ms(1, 5000, 1000, 7000), 0);
	CU_ASSERT_EQUAL(dec_unreachable_ms(0, 5000, 1000, 7000), 2000);
	CU_ASSERT_EQUAL(dec_unreachable_ms(0, 0, 1000, 7000), 6000);
	CU_ASSERT_EQUAL(dec_unreachable_ms(0, 0, 0, 7000), 0);
	CU_ASSERT_EQUAL(dec_unreachable_ms(0, 8000, 1000, 7000), 0);
	CU_ASSERT_EQUAL(dec_unreachable_ms(0, 0, 8000, 7000), 0);
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("decisions", NULL, NULL);
	CU_add_test(s, "generation record round trip", test_gen_roundtrip);
	CU_add_test(s, "a member's lease round trip", test_member_lease);
	CU_add_test(s, "member record: its mesh address", test_member_mesh);
	CU_add_test(s, "left-out record: who decided it", test_out_record);
	CU_add_test(s, "malformed records are rejected", test_malformed);
	CU_add_test(s, "keys parse only in their shape", test_keys);
	CU_add_test(s, "checkpoint target and re-targeting", test_targets);
	CU_add_test(s, "restart budget over the window", test_budget);
	CU_add_test(s, "the store's map", test_kvmap);
	CU_add_test(s, "I6: the store's timing follows the lease", test_store_timing);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails ? 1 : 0;
}
