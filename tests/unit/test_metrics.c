/*
 * The status -> Prometheus text formatter (user/lib/metrics_text.c): every series a status
 * yields, label values escaped, exited ranks left out, and no output for what is not a status.
 */
#include <CUnit/Basic.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "lib/metrics_text.h"

static const char *status_json =
    "{\"ok\":true,\"agent\":{\"version\":\"0.1.0\",\"uptime_s\":7.5,"
    "\"features\":{\"programs\":\"tp_btf\"},\"counters\":{\"hangs\":2,\"ringbuf_drops\":0},"
    "\"decisions\":{\"store\":{\"reachable\":true}}},"
    "\"jobs\":[{\"job\":\"a\\\"b\\\\c\\nd\",\"uid\":1000,\"ranks\":2,\"live\":2,\"state\":\"hung\","
    "\"hung\":true,\"failed\":false,\"no_progress_s\":65.5,\"culprit_ranks\":[1],\"generation\":3}]"
    ","
    "\"ranks\":[{\"pid\":10,\"rank\":0,\"job\":\"j\",\"uid\":1000,\"state\":\"blocked\",\"hung\":"
    "true,"
    "\"culprit\":false,\"no_progress_s\":65.5,\"timers\":1,\"exited\":false},"
    "{\"pid\":11,\"rank\":1,\"job\":\"j\",\"uid\":1000,\"state\":\"exited\",\"exited\":true}],"
    "\"cluster\":{\"peers\":[{\"state\":\"alive\"},{\"state\":\"dead\"},{\"state\":\"alive\"}]}}";

static char *format(const char *json)
{
	struct json_object *o = json_tokener_parse(json);
	char *text = NULL;
	size_t len = 0;
	int r = metrics_format(o, &text, &len);

	json_object_put(o);
	if (r < 0)
		return NULL;
	CU_ASSERT_EQUAL(strlen(text), len);
	return text;
}

static void test_series(void)
{
	char *t = format(status_json);

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_PTR_NOT_NULL(
	    strstr(t, "ftbpf_agent_info{version=\"0.1.0\",programs=\"tp_btf\"} 1\n"));
	CU_ASSERT_PTR_NOT_NULL(
	    strstr(t, "# TYPE ftbpf_agent_hangs_total counter\nftbpf_agent_hangs_total 2\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "ftbpf_jobs{state=\"hung\"} 1\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "ftbpf_jobs{state=\"ok\"} 0\n"));
	CU_ASSERT_PTR_NOT_NULL(
	    strstr(t, "ftbpf_job_hung{job=\"a\\\"b\\\\c\\nd\",uid=\"1000\"} 1\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(
	    t, "ftbpf_job_no_progress_seconds{job=\"a\\\"b\\\\c\\nd\",uid=\"1000\"} 65.5\n"));
	CU_ASSERT_PTR_NOT_NULL(
	    strstr(t, "ftbpf_job_culprit{job=\"a\\\"b\\\\c\\nd\",uid=\"1000\",rank=\"1\"} 1\n"));
	CU_ASSERT_PTR_NOT_NULL(
	    strstr(t, "ftbpf_job_generation{job=\"a\\\"b\\\\c\\nd\",uid=\"1000\"} 3\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "ftbpf_rank_state{job=\"j\",uid=\"1000\",rank=\"0\",pid="
					 "\"10\",state=\"blocked\"} 1\n"));
	CU_ASSERT_PTR_NOT_NULL(
	    strstr(t, "ftbpf_rank_timers{job=\"j\",uid=\"1000\",rank=\"0\",pid=\"10\"} 1\n"));
	CU_ASSERT_PTR_NULL(strstr(t, "pid=\"11\"")); /* exited: not a live series */
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "ftbpf_mesh_peers{state=\"alive\"} 2\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "ftbpf_decisions_store_reachable 1\n"));
	free(t);
}

static void test_not_a_status(void)
{
	CU_ASSERT_PTR_NULL(format("[1,2]"));
	CU_ASSERT_PTR_NULL(format("{\"jobs\":[]}"));
	CU_ASSERT_EQUAL(metrics_format(NULL, NULL, NULL), -22);
}

static void test_odd_shapes(void)
{
	/* wrong types where arrays and objects belong: formatted without them, never a crash */
	char *t = format("{\"agent\":{\"counters\":[1],\"features\":5},\"jobs\":{\"x\":1},"
			 "\"ranks\":\"no\",\"cluster\":{\"peers\":7}}");

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "ftbpf_jobs{state=\"ok\"} 0\n"));
	free(t);
}

static void test_not_utf8(void)
{
	/* a job name with a byte that is not UTF-8 (registered by a user): the scrape stays
	 * UTF-8, the byte shown as U+FFFD; valid UTF-8 and DEL/control bytes as documented */
	char *t = format(
	    "{\"agent\":{},\"jobs\":[{\"job\":\"a\\u00ff\\u007f\\u0001\",\"uid\":1,\"ranks\":1,"
	    "\"live\":1,\"state\":\"ok\"}],\"ranks\":[]}");
	struct json_object *o = json_object_new_object();
	char *u = NULL;
	size_t len = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "\"a\xc3\xbf\""));
	free(t);
	/* raw 0xff (json-c keeps bytes as they are) */
	json_object_object_add(o, "agent", json_object_new_object());
	json_object_object_add(o, "jobs", json_object_new_array());
	json_object_array_add(json_object_object_get(o, "jobs"), json_object_new_object());
	json_object_object_add(json_object_array_get_idx(json_object_object_get(o, "jobs"), 0),
			       "job",
			       json_object_new_string("b\xff"
						      "c"));
	json_object_object_add(o, "ranks", json_object_new_array());
	CU_ASSERT_EQUAL_FATAL(metrics_format(o, &u, &len), 0);
	CU_ASSERT_PTR_NULL(memchr(u, 0xff, len));
	CU_ASSERT_PTR_NOT_NULL(strstr(u, "\"b\xef\xbf\xbd"
					 "c\""));
	free(u);
	json_object_put(o);
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("metrics", NULL, NULL);
	CU_add_test(s, "every series, labels escaped, exited ranks left out", test_series);
	CU_add_test(s, "not a status: an error", test_not_a_status);
	CU_add_test(s, "odd shapes: no crash", test_odd_shapes);
	CU_add_test(s, "a job name that is not UTF-8: the scrape stays UTF-8", test_not_utf8);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails ? 1 : 0;
}
