/* Who may speak about a job (lib/partclaim.c). */
#include <CUnit/Basic.h>
#include <string.h>

#include "lib/partclaim.h"

static struct jv_part pt;

static void claims(int n, const int *ranks)
{
	memset(&pt, 0, sizeof(pt));
	pt.nranks = n;
	for (int i = 0; i < n; i++)
		pt.ranks[i].rank = ranks[i];
}

static void test_members_known(void)
{
	static const int r[] = {2, 3};
	struct pc_job j = {.world = 4, .member = 1};

	claims(2, r);
	CU_ASSERT_EQUAL(partclaim_judge(&j, &pt), PC_OK);
	/* a host with a valid key, in no member record of the run: whatever ranks it claims */
	j.member = 0;
	CU_ASSERT_EQUAL(partclaim_judge(&j, &pt), PC_NOT_MEMBER);
	claims(0, NULL); /* even "my ranks are gone" */
	CU_ASSERT_EQUAL(partclaim_judge(&j, &pt), PC_NOT_MEMBER);
	CU_ASSERT_STRING_NOT_EQUAL(partclaim_why(PC_NOT_MEMBER), "");
}

static void test_members_unknown(void)
{
	static const int in[] = {0, 3}, out[] = {1, 4}, neg[] = {-1};
	struct pc_job j = {.world = 4, .member = -1};

	/* no shared store: ranks of the world are believable (collisions are judged after) */
	claims(2, in);
	CU_ASSERT_EQUAL(partclaim_judge(&j, &pt), PC_OK);
	claims(2, out);
	CU_ASSERT_EQUAL(partclaim_judge(&j, &pt), PC_OUT_OF_WORLD);
	claims(1, neg);
	CU_ASSERT_EQUAL(partclaim_judge(&j, &pt), PC_OUT_OF_WORLD);
	/* the world not known here: any rank not negative */
	j.world = 0;
	claims(2, out);
	CU_ASSERT_EQUAL(partclaim_judge(&j, &pt), PC_OK);
	/* a member still claims inside the world only */
	j = (struct pc_job){.world = 4, .member = 1};
	CU_ASSERT_EQUAL(partclaim_judge(&j, &pt), PC_OUT_OF_WORLD);
	CU_ASSERT_STRING_EQUAL(partclaim_why(PC_OK), "");
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("partclaim", NULL, NULL);
	CU_add_test(s, "a run's members known: others refused", test_members_known);
	CU_add_test(s, "members not known: ranks of the world", test_members_unknown);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
