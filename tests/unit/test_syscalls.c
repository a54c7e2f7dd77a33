/* The syscall tables (user/lib/syscalls.c): names, numbers and progress classes. */
#include <CUnit/Basic.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/syscalls.h"

static void test_syscalls(void)
{
	char b[32];

	CU_ASSERT_STRING_EQUAL(syscalls_name(SYS_futex), "futex");
	CU_ASSERT_STRING_EQUAL(syscalls_format(100000, b, sizeof(b)), "syscall_100000");
	CU_ASSERT_EQUAL(syscalls_class(SYS_futex), 3u);
	CU_ASSERT_EQUAL(syscalls_class(SYS_clock_nanosleep), 2u);
	CU_ASSERT_EQUAL(syscalls_class(SYS_epoll_wait), 1u);
	CU_ASSERT_EQUAL(syscalls_class(SYS_write), 0u);
	CU_ASSERT_TRUE(syscalls_is_comm_wait(SYS_recvfrom));
	CU_ASSERT_FALSE(syscalls_is_comm_wait(SYS_clock_nanosleep));
	CU_ASSERT_TRUE(syscalls_is_sleep(SYS_nanosleep));
#if defined(__x86_64__)
	/* the syscall a return probe makes (x86-64, Linux 6.11+) is never progress */
	CU_ASSERT_EQUAL(syscalls_class(335), 2u);
	CU_ASSERT_STRING_EQUAL(syscalls_name(335), "uretprobe");
#endif
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("syscalls", NULL, NULL);
	CU_add_test(s, "syscall tables", test_syscalls);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
