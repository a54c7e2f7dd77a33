/* The decision simulator's model of etcd (tests/sim/sim_store.c): revisions, create-only
 * claims, reads at an older revision (a lagging mirror), leases that expire with their keys. */
#include <CUnit/Basic.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "sim_store.h"

static int count(void *ctx, const char *key, const char *value)
{
	(void)key;
	(void)value;
	(*(int *)ctx)++;
	return 0;
}

static void test_claim_put_revisions(void)
{
	struct sim_store s;
	uint64_t r1;

	ss_init(&s);
	CU_ASSERT_EQUAL(ss_claim(&s, 10, "a/x", "1", 0), 1);
	CU_ASSERT_EQUAL(ss_claim(&s, 20, "a/x", "2", 0), 0); /* first claimer wins */
	CU_ASSERT_STRING_EQUAL(ss_get_at(&s, "a/x", UINT64_MAX), "1");
	r1 = s.rev;
	ss_put(&s, 30, "a/x", "3", 0);
	CU_ASSERT_EQUAL(s.rev, r1 + 1);
	ss_put(&s, 31, "a/x", "3", 0); /* the same value: no new revision */
	CU_ASSERT_EQUAL(s.rev, r1 + 1);
	/* a mirror at an older revision reads what was there then */
	CU_ASSERT_STRING_EQUAL(ss_get_at(&s, "a/x", r1), "1");
	CU_ASSERT_PTR_NULL(ss_get_at(&s, "a/x", 1));
	CU_ASSERT_EQUAL(ss_rev_at_time(&s, 25), r1);
	CU_ASSERT_EQUAL(ss_rev_at_time(&s, 5), 1);
	CU_ASSERT_EQUAL(ss_created_at(&s, "a/x", UINT64_MAX), r1);
	ss_delete(&s, 40, "a/x");
	CU_ASSERT_PTR_NULL(ss_get_at(&s, "a/x", UINT64_MAX));
	CU_ASSERT_EQUAL(ss_claim(&s, 50, "a/x", "4", 0), 1); /* claimed again once deleted */
	CU_ASSERT_EQUAL(ss_created_at(&s, "a/x", UINT64_MAX), s.rev);
	ss_free(&s);
}

static void test_list_prefix(void)
{
	struct sim_store s;
	int n = 0;

	ss_init(&s);
	ss_put(&s, 1, "b/2", "x", 0);
	ss_put(&s, 1, "a/1", "x", 0);
	ss_put(&s, 1, "a/2", "x", 0);
	ss_put(&s, 1, "ab", "x", 0);
	ss_list_at(&s, "a/", UINT64_MAX, count, &n);
	CU_ASSERT_EQUAL(n, 2);
	n = 0;
	ss_list_at(&s, "a/", 3, count, &n); /* b/2 and a/1 only then */
	CU_ASSERT_EQUAL(n, 1);
	ss_free(&s);
}

static void test_leases(void)
{
	struct sim_store s;
	int64_t l;

	ss_init(&s);
	l = ss_grant(&s, 0, 5000);
	ss_put(&s, 0, "m/h1", "alive", l);
	ss_put(&s, 0, "kept", "v", 0);
	CU_ASSERT_EQUAL(ss_keepalive(&s, 4000, l), 0);
	CU_ASSERT_EQUAL(ss_expire(&s, 8000), 0); /* renewed at 4 s: runs to 9 s */
	CU_ASSERT_EQUAL(ss_lease_left(&s, 8000, l), 1000);
	CU_ASSERT_EQUAL(ss_expire(&s, 9000), 1);
	CU_ASSERT_PTR_NULL(ss_get_at(&s, "m/h1", UINT64_MAX));
	CU_ASSERT_STRING_EQUAL(ss_get_at(&s, "kept", UINT64_MAX), "v");
	CU_ASSERT_EQUAL(ss_keepalive(&s, 9001, l), -ENOENT);
	CU_ASSERT_EQUAL(ss_lease_left(&s, 9001, l), -1);
	ss_free(&s);
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("sim_store", NULL, NULL);
	CU_add_test(s, "claims, puts, revisions, reads at a revision", test_claim_put_revisions);
	CU_add_test(s, "a prefix listed at a revision", test_list_prefix);
	CU_add_test(s, "leases expire with their keys", test_leases);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
