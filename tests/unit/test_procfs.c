/* /proc readers (user/os/procfs.c): /proc/PID/stat of real and odd processes. */
#include <CUnit/Basic.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "os/procfs.h"

static void test_proc_stat(void)
{
	struct proc_stat st;
	const char *s =
	    "1234 (a (weird) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 "
	    "1 0 5000 1000 100";

	CU_ASSERT_EQUAL(procfs_parse_stat(s, strlen(s), &st), 0);
	CU_ASSERT_EQUAL(st.state, 'S');
	CU_ASSERT_EQUAL(st.ppid, 1);
	CU_ASSERT_STRING_EQUAL(st.comm, "a (weird) name");
	CU_ASSERT_EQUAL(st.utime_ns, 250ull * (1000000000ull / sysconf(_SC_CLK_TCK)));
	CU_ASSERT_EQUAL(procfs_parse_stat("garbage", 7, &st), -EINVAL);
	CU_ASSERT_EQUAL(procfs_stat(getpid(), -1, &st), 0);
	CU_ASSERT_EQUAL(st.state, 'R');
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("procfs", NULL, NULL);
	CU_add_test(s, "/proc/PID/stat", test_proc_stat);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
