/* How a hung run ended (lib/jobend.c): who ended its first rank, and whether the hang stands. */
#include <CUnit/Basic.h>
#include <string.h>

#include "lib/jobend.h"

#define S 1000000000ull

static struct det_sample ended(int pid, int rank, int status, uint32_t sender, uint64_t at)
{
	struct det_sample s = {.pid = pid, .rank = rank, .exited = 1, .exit_code = status};

	s.sender_pid = sender;
	s.exit_ns = at;
	strcpy(s.sender_comm, sender ? "kill" : "");
	return s;
}

static void test_cause(void)
{
	int launchers[2] = {500, 600}; /* torchrun, a timeout wrapper */
	struct det_sample s = ended(42, 1, 9, 4242, 10 * S);

	CU_ASSERT_EQUAL(jobend_cause(&s, launchers, 2, 0), JOBEND_OPERATOR);
	s.sender_pid = 600;
	CU_ASSERT_EQUAL(jobend_cause(&s, launchers, 2, 0), JOBEND_LAUNCHER);
	s.sender_pid = 500;
	CU_ASSERT_EQUAL(jobend_cause(&s, launchers, 2, 0), JOBEND_LAUNCHER);
	/* the OOM killer's SIGKILL comes from whoever ran out of memory: the rank's own end */
	s.sender_pid = 4242;
	CU_ASSERT_EQUAL(jobend_cause(&s, launchers, 2, 1), JOBEND_ITSELF);
	/* abort(), a fault, an exit code */
	s = ended(42, 1, 6, 42, 10 * S);
	CU_ASSERT_EQUAL(jobend_cause(&s, launchers, 2, 0), JOBEND_ITSELF);
	s = ended(42, 1, 11, 0, 10 * S);
	CU_ASSERT_EQUAL(jobend_cause(&s, launchers, 2, 0), JOBEND_ITSELF);
	s = ended(42, 1, 1 << 8, 4242, 10 * S);
	CU_ASSERT_EQUAL(jobend_cause(&s, launchers, 2, 0), JOBEND_ITSELF);
	/* the agent's own action, whoever the kernel says sent it */
	s = ended(42, 1, 15, 4242, 10 * S);
	s.killed = 1;
	CU_ASSERT_EQUAL(jobend_cause(&s, launchers, 2, 0), JOBEND_AGENT);
	/* no launcher known (0): anyone else is an operator */
	s = ended(42, 1, 15, 777, 10 * S);
	launchers[0] = launchers[1] = 0;
	CU_ASSERT_EQUAL(jobend_cause(&s, launchers, 2, 0), JOBEND_OPERATOR);
}

static void test_names(void)
{
	for (int b = JOBEND_AGENT; b < JOBEND__N; b++)
		CU_ASSERT_EQUAL(jobend_by_parse(jobend_by_name((enum jobend_by)b)), b);
	CU_ASSERT_EQUAL(jobend_by_parse("nobody"), JOBEND_NONE);
	CU_ASSERT_EQUAL(jobend_by_parse(NULL), JOBEND_NONE);
	CU_ASSERT_STRING_EQUAL(jobend_by_name((enum jobend_by)99), "");
}

static void test_of_hang(void)
{
	struct det_job prev = {.hung = 1, .live = 3};
	struct det_sample s[3] = {
	    ended(10, 0, 9, 77, 20 * S), ended(11, 1, 9, 77, 19 * S), {.pid = 12, .rank = 2}};

	/* the first rank to end since the hung verdict (at 18 s) began the end */
	CU_ASSERT_EQUAL(jobend_of_hang(&prev, s, 3, 18 * S), 1);
	/* an exit before the verdict is not the end of a hang (it is its cause) */
	CU_ASSERT_EQUAL(jobend_of_hang(&prev, s, 3, 19 * S + 1), 0);
	CU_ASSERT_EQUAL(jobend_of_hang(&prev, s, 3, 21 * S), -1);
	/* not hung: no hang to keep; failed first: the failure is the cause */
	prev.hung = 0;
	CU_ASSERT_EQUAL(jobend_of_hang(&prev, s, 3, 18 * S), -1);
	prev.hung = 1;
	prev.failed = 1;
	CU_ASSERT_EQUAL(jobend_of_hang(&prev, s, 3, 18 * S), -1);
}

static void test_text(void)
{
	struct jobend e = {.by = JOBEND_OPERATOR, .pid = 11, .rank = 1, .status = 9};
	char buf[160], tiny[8];

	e.sender_pid = 77;
	strcpy(e.sender_comm, "kill");
	CU_ASSERT_STRING_EQUAL(
	    jobend_text(&e, buf, sizeof(buf)),
	    "hung, then ended by the operator: rank 1 (pid 11) killed by SIGKILL "
	    "from kill (pid 77)");
	e.by = JOBEND_ITSELF;
	e.status = 6 | 0x80;
	CU_ASSERT_STRING_EQUAL(
	    jobend_text(&e, buf, sizeof(buf)),
	    "hung, then ended by itself: rank 1 (pid 11) killed by SIGABRT (core "
	    "dumped)");
	e.by = JOBEND_AGENT;
	CU_ASSERT_STRING_EQUAL(jobend_text(&e, buf, sizeof(buf)),
			       "hung, then ended by the agent's action");
	jobend_text(&e, tiny, sizeof(tiny));
	CU_ASSERT_EQUAL(strlen(tiny), sizeof(tiny) - 1);
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("jobend", NULL, NULL);
	CU_add_test(s, "who ended a rank", test_cause);
	CU_add_test(s, "names", test_names);
	CU_add_test(s, "a hang stands while its run ends", test_of_hang);
	CU_add_test(s, "in words", test_text);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
