/* Warnings at most once per interval, with the count held back (lib/ratelimit.c). */
#include <CUnit/Basic.h>

#include "lib/ratelimit.h"

#define S 1000000000ull

static void test_once_per_interval(void)
{
	struct ratelimit rl = {.interval_ns = 60 * S};
	uint64_t held = 99;
	int said = 0;

	CU_ASSERT_TRUE(ratelimit_pass(&rl, 5 * S, &held));
	CU_ASSERT_EQUAL(held, 0);
	/* 29,051 refusals in 25 minutes: 25 lines, each with the count it stands for */
	for (uint64_t t = 0; t < 29051; t++) {
		uint64_t now = 5 * S + 1 + t * (25 * 60 * S / 29051);

		said += ratelimit_pass(&rl, now, &held);
	}
	CU_ASSERT(said >= 24 && said <= 26);
	CU_ASSERT(held > 1000);
	/* a clock at 0 still counts as said */
	rl = (struct ratelimit){.interval_ns = S};
	CU_ASSERT_TRUE(ratelimit_pass(&rl, 0, &held));
	CU_ASSERT_FALSE(ratelimit_pass(&rl, 1, &held));
	CU_ASSERT_TRUE(ratelimit_pass(&rl, 2 * S, &held));
	CU_ASSERT_EQUAL(held, 1);
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("ratelimit", NULL, NULL);
	CU_add_test(s, "once per interval, with the count held back", test_once_per_interval);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
