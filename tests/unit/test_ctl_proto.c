/* The control protocol's parser and command table (user/proto/ctl_proto.c). */
#include <CUnit/Basic.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "proto/ctl_proto.h"

static void test_ctl_proto(void)
{
	struct ctl_request r;
	char err[256];
	const char *ok = "{\"v\":1,\"cmd\":\"signal\",\"pid\":42,\"signal\":\"TERM\"}";

	CU_ASSERT_EQUAL(ctl_parse_request(ok, strlen(ok), &r, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(r.cmd, CTL_CMD_SIGNAL);
	CU_ASSERT_EQUAL(r.pid, 42);
	CU_ASSERT_EQUAL(r.sig, 15);
	CU_ASSERT_EQUAL(ctl_parse_request("{\"v\":2,\"cmd\":\"status\"}",
					  strlen("{\"v\":2,\"cmd\":\"status\"}"), &r, err,
					  sizeof(err)),
			-EPROTO);
	CU_ASSERT_EQUAL(ctl_parse_request("{\"v\":1,\"cmd\":\"nope\"}",
					  strlen("{\"v\":1,\"cmd\":\"nope\"}"), &r, err,
					  sizeof(err)),
			-EOPNOTSUPP);
	CU_ASSERT_EQUAL(ctl_parse_request("{\"v\":1}", strlen("{\"v\":1}"), &r, err, sizeof(err)),
			-EINVAL);
	CU_ASSERT_EQUAL(ctl_parse_request("{\"v\":1,\"cmd\":\"explain\"}",
					  strlen("{\"v\":1,\"cmd\":\"explain\"}"), &r, err,
					  sizeof(err)),
			-EINVAL);
	CU_ASSERT_EQUAL(ctl_parse_request("{\"v\":1,\"cmd\":\"status\"} x",
					  strlen("{\"v\":1,\"cmd\":\"status\"} x"), &r, err,
					  sizeof(err)),
			-EINVAL);
	CU_ASSERT_EQUAL(ctl_parse_request("{\"v\":1,\"cmd\":\"events\",\"follow\":1}",
					  strlen("{\"v\":1,\"cmd\":\"events\",\"follow\":1}"), &r,
					  err, sizeof(err)),
			-EINVAL);
	CU_ASSERT_EQUAL(ctl_parse_request("{\"v\":1,\"cmd\":\"status\"",
					  strlen("{\"v\":1,\"cmd\":\"status\""), &r, err,
					  sizeof(err)),
			-EINVAL);
	CU_ASSERT_EQUAL(ctl_parse_request("x", CTL_MAX_LINE + 1, &r, err, sizeof(err)), -E2BIG);
}

/* stacks: a job or a pid, exactly one of them. */
static void test_stacks_request(void)
{
	static const struct {
		const char *line;
		int rc, pid;
		const char *job;
	} cases[] = {
	    {"{\"v\":1,\"cmd\":\"stacks\",\"job\":\"torch:1.2.3.4:29500\"}", 0, -1,
	     "torch:1.2.3.4:29500"},
	    {"{\"v\":1,\"cmd\":\"stacks\",\"pid\":4242}", 0, 4242, ""},
	    {"{\"v\":1,\"cmd\":\"stacks\"}", -EINVAL, 0, NULL},
	    {"{\"v\":1,\"cmd\":\"stacks\",\"pid\":1,\"job\":\"j\"}", -EINVAL, 0, NULL},
	    {"{\"v\":1,\"cmd\":\"stacks\",\"job\":\"\"}", -EINVAL, 0, NULL},
	    {"{\"v\":1,\"cmd\":\"stacks\",\"job\":7}", -EINVAL, 0, NULL},
	    {"{\"v\":1,\"cmd\":\"stacks\",\"pid\":0}", -EINVAL, 0, NULL},
	};
	struct ctl_request r;
	char err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc =
		    ctl_parse_request(cases[i].line, strlen(cases[i].line), &r, err, sizeof(err));

		CU_ASSERT_EQUAL(rc, cases[i].rc);
		if (rc == 0) {
			CU_ASSERT_EQUAL(r.cmd, CTL_CMD_STACKS);
			CU_ASSERT_EQUAL(r.pid, cases[i].pid);
			CU_ASSERT_STRING_EQUAL(r.job, cases[i].job);
		}
	}
	CU_ASSERT_PTR_NOT_NULL(ctl_cmd_find("stacks"));
	CU_ASSERT_PTR_NOT_NULL(ctl_cmd_find("stacks")->synopsis);
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("ctl_proto", NULL, NULL);
	CU_add_test(s, "control requests", test_ctl_proto);
	CU_add_test(s, "stacks: a job or a pid", test_stacks_request);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
