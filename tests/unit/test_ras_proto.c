/* NCCL RAS (proto/ras_proto.c): the environment, the protocol's lines, NCCL 2.28's JSON reply
 * (2.28.9's missing comma), the job's communicators picked by pid, and replies that lie. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ras_proto.h"

/* A reply as NCCL 2.28 prints it: one communicator of 4 ranks, rank 2 missing (unresponsive),
 * rank 3 behind (11 collectives, the others 12), rank 1 in error. */
static const char *reply_fmt =
    "{\n  \"nccl_version\": \"%s\",\n  \"cuda_runtime_version\": 12080,\n"
    "  \"cuda_driver_version\": 12080,\n  \"timestamp\": \"2026-11-28 10:00:00\",\n"
    "  \"communicators_count\": 2,\n  \"communicators\": [\n"
    "    {\"hash\": \"0xabc\", \"secondary_hash\": \"0xdef\", \"size\": 4, \"ranks_count\": 3,\n"
    "     \"missing_ranks_count\": 1,\n     \"ranks\": [\n"
    "       {\"rank\": 0, \"host\": \"10.0.0.1\", \"pid\": 100, \"cuda_dev\": 0, \"nvml_dev\": 0,\n"
    "        \"status\": {\"init_state\": 0, \"async_error\": 0, \"finalize_called\": false,\n"
    "                   \"destroy_flag\": false, \"abort_flag\": false},\n"
    "        \"collective_counts\": {\"AllReduce\": 10, \"AllGather\": 2}},\n"
    "       {\"rank\": 1, \"host\": \"10.0.0.1\", \"pid\": 101, \"cuda_dev\": 1, \"nvml_dev\": 1,\n"
    "        \"status\": {\"init_state\": 0, \"async_error\": 5, \"finalize_called\": false,\n"
    "                   \"destroy_flag\": false, \"abort_flag\": true},\n"
    "        \"collective_counts\": {\"AllReduce\": 12}},\n"
    "       {\"rank\": 3, \"host\": \"10.0.0.2\", \"pid\": 200, \"cuda_dev\": 1, \"nvml_dev\": 1,\n"
    "        \"status\": {\"init_state\": 0, \"async_error\": 0, \"finalize_called\": false,\n"
    "                   \"destroy_flag\": false, \"abort_flag\": false},\n"
    "        \"collective_counts\": {\"AllReduce\": 11}}\n     ],\n"
    "     \"missing_ranks\": [\n"
    "       {\"rank\": 2, \"host\": \"10.0.0.2\", \"pid\": 201, \"cuda_dev\": 0, \"nvml_dev\": "
    "0%s\n"
    "        \"status\": {\"unresponsive\": true, \"considered_dead\": false}}\n     ]\n    },\n"
    "    {\"hash\": \"0x999\", \"size\": 2, \"ranks_count\": 2, \"missing_ranks_count\": 0,\n"
    "     \"ranks\": [{\"rank\": 0, \"host\": \"10.0.0.9\", \"pid\": 900},\n"
    "                {\"rank\": 1, \"host\": \"10.0.0.9\", \"pid\": 901}], \"missing_ranks\": []}\n"
    "  ],\n  \"ras\": {\"collection_time_sec\": 0.125, \"timeouts_count\": 2}\n}\n";

static char *reply(const char *version, int comma)
{
	static char buf[8192];

	snprintf(buf, sizeof(buf), reply_fmt, version, comma ? "," : "");
	return buf;
}

static void test_reply_parsed(void)
{
	static struct ras_report r;
	int pids[] = {101, 7};
	char why[256];
	const char *t = reply("2.28.10", 1);

	CU_ASSERT_EQUAL_FATAL(ras_json_parse(t, strlen(t), pids, 2, &r, why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(r.nccl_version, "2.28.10");
	CU_ASSERT_EQUAL(r.comms_total, 2);
	CU_ASSERT_EQUAL(r.ncomms, 1); /* the second communicator has none of our pids */
	CU_ASSERT_EQUAL(r.repaired, 0);
	CU_ASSERT_EQUAL(r.timeouts, 2);
	CU_ASSERT_STRING_EQUAL(r.comms[0].hash, "0xabc");
	CU_ASSERT_EQUAL(r.comms[0].size, 4);
	CU_ASSERT_EQUAL(r.comms[0].local, 1);
	CU_ASSERT_EQUAL_FATAL(r.comms[0].nmissing, 1);
	CU_ASSERT_EQUAL(r.comms[0].missing[0].rank, 2);
	CU_ASSERT_EQUAL(r.comms[0].missing[0].pid, 201);
	CU_ASSERT_STRING_EQUAL(r.comms[0].missing[0].host, "10.0.0.2");
	CU_ASSERT(r.comms[0].missing[0].unresponsive && !r.comms[0].missing[0].dead);
	CU_ASSERT_EQUAL_FATAL(r.comms[0].nbehind, 1);
	CU_ASSERT_EQUAL(r.comms[0].behind[0].rank, 3);
	CU_ASSERT_EQUAL(r.comms[0].behind[0].collectives, 11);
	CU_ASSERT_EQUAL(r.comms[0].behind[0].most, 12);
	CU_ASSERT_EQUAL_FATAL(r.comms[0].nerror, 1);
	CU_ASSERT_EQUAL(r.comms[0].error[0].rank, 1);
	CU_ASSERT_EQUAL(r.comms[0].error[0].async_error, 5);
	CU_ASSERT(r.comms[0].error[0].abort);
	/* no pids given: every communicator */
	CU_ASSERT_EQUAL(ras_json_parse(t, strlen(t), NULL, 0, &r, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(r.ncomms, 2);
}

static void test_missing_comma_repaired(void)
{
	static struct ras_report r;
	int pids[] = {201};
	char why[256];
	const char *t = reply("2.28.9", 0);

	CU_ASSERT_EQUAL_FATAL(ras_json_parse(t, strlen(t), pids, 1, &r, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(r.repaired, 1);
	CU_ASSERT_EQUAL(r.ncomms, 1);
	CU_ASSERT_EQUAL(r.comms[0].nmissing, 1);
	/* only 2.28.x gets repaired: another version's broken JSON is refused */
	t = reply("2.29.1", 0);
	CU_ASSERT_EQUAL(ras_json_parse(t, strlen(t), pids, 1, &r, why, sizeof(why)), -EINVAL);
	CU_ASSERT(strstr(why, "not JSON") != NULL);
}

static void expect_bad(const char *t, const char *what)
{
	static struct ras_report r;
	char why[256];
	int rc = ras_json_parse(t, strlen(t), NULL, 0, &r, why, sizeof(why));

	CU_ASSERT_EQUAL(rc, -EINVAL);
	if (rc == -EINVAL && !strstr(why, what))
		fprintf(stderr, "why: %s (wanted %s)\n", why, what);
	CU_ASSERT(strstr(why, what) != NULL);
}

static void test_lies_refused(void)
{
	static struct ras_report r;
	char why[256], *big;

	expect_bad("", "not JSON");
	expect_bad("[1,2]", "not an object");
	expect_bad("{\"communicators\": 3}", "no \"communicators\"");
	expect_bad("{\"communicators\": [{\"size\": -1}]}", "\"size\"");
	expect_bad("{\"communicators\": [{\"size\": 2, \"ranks\": [{\"rank\": 2}]}]}", "\"rank\"");
	expect_bad(
	    "{\"communicators\": [{\"size\": 2, \"ranks\": [{\"rank\": 0, \"pid\": \"x\"}]}]}",
	    "\"pid\"");
	expect_bad("{\"communicators\": [{\"size\": 2, \"ranks\": [{\"rank\": 0, \"host\": "
		   "\"a\\u001b[2Jb\"}]}]}",
		   "\"host\"");
	expect_bad("{\"communicators\": [{\"size\": 2, \"ranks\": [{\"rank\": 0, "
		   "\"collective_counts\": {\"AllReduce\": -4}}]}]}",
		   "collective count");
	expect_bad("{\"communicators\": [{\"size\": 2, \"missing_ranks\": {}}]}", "not a list");
	expect_bad("{\"communicators\": []} trailing", "not JSON");
	/* deeper than any reply */
	expect_bad("{\"communicators\": [[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]}", "not JSON");
	big = malloc(RAS_REPLY_MAX + 2);
	CU_ASSERT_FATAL(big != NULL);
	memset(big, ' ', RAS_REPLY_MAX + 1);
	big[RAS_REPLY_MAX + 1] = '\0';
	CU_ASSERT_EQUAL(ras_json_parse(big, RAS_REPLY_MAX + 1, NULL, 0, &r, why, sizeof(why)),
			-E2BIG);
	free(big);
}

static void test_many_ranks_bounded(void)
{
	static struct ras_report r;
	size_t cap = 1 << 20, n = 0;
	char *t = malloc(cap), why[256];

	CU_ASSERT_FATAL(t != NULL);
	n += (size_t)snprintf(t + n, cap - n, "{\"communicators\": [{\"size\": 1000, \"ranks\": [");
	for (int i = 0; i < 1000; i++) /* every rank behind the last */
		n += (size_t)snprintf(t + n, cap - n,
				      "%s{\"rank\": %d, \"pid\": %d, \"collective_counts\": "
				      "{\"AllReduce\": %d}}",
				      i ? "," : "", i, 1000 + i, i);
	n += (size_t)snprintf(t + n, cap - n, "]}]}");
	CU_ASSERT_EQUAL_FATAL(ras_json_parse(t, n, NULL, 0, &r, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(r.comms[0].nbehind, RAS_LIST_MAX);
	CU_ASSERT_EQUAL(r.comms[0].behind[0].rank, 0); /* the furthest behind first */
	CU_ASSERT_EQUAL(r.comms[0].behind[0].most, 999);
	free(t);
}

static void test_env(void)
{
	static const char env[] = "PATH=/bin\0NCCL_RAS_ADDR=10.1.2.3:29000\0NCCL_RAS_ENABLE=1\0";
	static const char off[] = "NCCL_RAS_ENABLE=0\0";
	static const char bad[] = "NCCL_RAS_ADDR=a b;rm\0";
	struct ras_env e;
	char host[64], port[8];

	CU_ASSERT_EQUAL(ras_env_parse(env, sizeof(env) - 1, &e), 0);
	CU_ASSERT(e.enabled);
	CU_ASSERT_STRING_EQUAL(e.addr, "10.1.2.3:29000");
	CU_ASSERT_EQUAL(ras_env_parse(off, sizeof(off) - 1, &e), 0);
	CU_ASSERT(!e.enabled);
	CU_ASSERT_STRING_EQUAL(e.addr, RAS_DEFAULT_ADDR);
	CU_ASSERT_EQUAL(ras_env_parse(bad, sizeof(bad) - 1, &e), -EINVAL);
	CU_ASSERT_STRING_EQUAL(e.addr, RAS_DEFAULT_ADDR);
	CU_ASSERT_EQUAL(ras_env_parse("", 0, &e), 0);
	CU_ASSERT(e.enabled);

	CU_ASSERT_EQUAL(ras_addr_split("localhost:28028", host, sizeof(host), port, sizeof(port)),
			0);
	CU_ASSERT_STRING_EQUAL(host, "localhost");
	CU_ASSERT_STRING_EQUAL(port, "28028");
	CU_ASSERT_EQUAL(ras_addr_split("[::1]:123", host, sizeof(host), port, sizeof(port)), 0);
	CU_ASSERT_STRING_EQUAL(host, "::1");
	CU_ASSERT_STRING_EQUAL(port, "123");
	CU_ASSERT_EQUAL(ras_addr_split("10.0.0.1", host, sizeof(host), port, sizeof(port)), 0);
	CU_ASSERT_STRING_EQUAL(port, "28028");
	CU_ASSERT_EQUAL(ras_addr_split("h:0", host, sizeof(host), port, sizeof(port)), -EINVAL);
	CU_ASSERT_EQUAL(ras_addr_split("h:99999", host, sizeof(host), port, sizeof(port)), -EINVAL);
	CU_ASSERT_EQUAL(ras_addr_split(":1", host, sizeof(host), port, sizeof(port)), -EINVAL);
	CU_ASSERT_EQUAL(ras_addr_split("[::1", host, sizeof(host), port, sizeof(port)), -EINVAL);
}

static void test_lines(void)
{
	CU_ASSERT(ras_is_server_hello("SERVER PROTOCOL 2"));
	CU_ASSERT(ras_is_server_hello("server protocol 3"));
	CU_ASSERT(!ras_is_server_hello("SERVER PROTOCOL"));
	CU_ASSERT(!ras_is_server_hello("HTTP/1.1 400"));
	CU_ASSERT(ras_json_accepted("OK"));
	CU_ASSERT(!ras_json_accepted("ERROR: Unknown command SET"));
	CU_ASSERT(!ras_json_accepted("OKAY"));
}

int main(void)
{
	CU_pSuite s;
	int fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("ras_proto", NULL, NULL);
	CU_add_test(s, "NCCL 2.28's reply: missing, behind, in error", test_reply_parsed);
	CU_add_test(s, "2.28.9's missing comma put back", test_missing_comma_repaired);
	CU_add_test(s, "replies that lie are refused with a reason", test_lies_refused);
	CU_add_test(s, "1000 ranks: lists bounded, furthest behind first", test_many_ranks_bounded);
	CU_add_test(s, "the ranks' environment", test_env);
	CU_add_test(s, "protocol lines", test_lines);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = (int)CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails;
}
