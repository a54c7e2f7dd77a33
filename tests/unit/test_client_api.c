/*
 * The training loop's side of decisions (include/ftbpf/ftbpf.h) with no agent: every call
 * answers "nothing requested" (the loop trains on), bad arguments get -EINVAL, and opening a
 * connection where no agent listens fails with an error instead of blocking. Linked against
 * libftbpf.a, as a user's program is.
 */
#include <CUnit/Basic.h>
#include <errno.h>
#include <ftbpf/ftbpf.h>
#include <stdlib.h>

static void test_no_agent(void)
{
	struct ftbpf *h = (struct ftbpf *)0x1;
	int r = ftbpf_open("/nonexistent/ftbpfd.sock", "job", 0, &h);

	CU_ASSERT(r == -ENOENT || r == -ECONNREFUSED);
}

static void test_null_handle(void)
{
	struct ftbpf_restart_info ri;

	CU_ASSERT_EQUAL(ftbpf_checkpoint_requested(NULL), 0);
	CU_ASSERT_EQUAL(ftbpf_should_save(NULL, 10), 0);
	CU_ASSERT_EQUAL(ftbpf_saved(NULL, 10), 0);
	CU_ASSERT_EQUAL(ftbpf_should_save_gen(NULL, 10, NULL), 0);
	CU_ASSERT_EQUAL(ftbpf_saved_gen(NULL, 10, 0), 0);
	CU_ASSERT_EQUAL(ftbpf_generation(NULL), 0);
	CU_ASSERT_EQUAL(ftbpf_action(NULL), FTBPF_ACTION_NONE);
	CU_ASSERT_EQUAL(ftbpf_exit_code(NULL), 42);
	CU_ASSERT_EQUAL(ftbpf_restart_info(NULL, &ri), 0);
	CU_ASSERT_EQUAL(ri.generation, 0);
	CU_ASSERT_EQUAL(ri.resume_step, -1);
	CU_ASSERT_EQUAL(ri.ckpt_step, -1);
	CU_ASSERT_EQUAL(ri.action, FTBPF_ACTION_NONE);
}

static void test_bad_arguments(void)
{
	CU_ASSERT_EQUAL(ftbpf_should_save(NULL, -1), -EINVAL);
	CU_ASSERT_EQUAL(ftbpf_should_save_gen(NULL, -1, NULL), -EINVAL);
	CU_ASSERT_EQUAL(ftbpf_saved_gen(NULL, -1, 0), -EINVAL);
	CU_ASSERT_EQUAL(ftbpf_should_save(NULL, INT64_MIN), -EINVAL);
	CU_ASSERT_EQUAL(ftbpf_saved(NULL, -1), -EINVAL);
	CU_ASSERT_EQUAL(ftbpf_restart_info(NULL, NULL), -EINVAL);
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("client_api", NULL, NULL);
	CU_add_test(s, "no agent: open fails with an error", test_no_agent);
	CU_add_test(s, "no handle: nothing requested", test_null_handle);
	CU_add_test(s, "bad arguments: -EINVAL", test_bad_arguments);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails ? 1 : 0;
}
