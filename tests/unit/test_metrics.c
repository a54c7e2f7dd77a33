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
    "\"features\":{\"programs\":\"tp_btf\"},\"counters\":{\"hangs\":2,\"ringbuf_drops\":0,\"ctl_"
    "clients\":3,\"timers_active\":4,\"brand_new\":5},"
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
	/* levels are gauges without _total; every counter has its own HELP */
	CU_ASSERT_PTR_NOT_NULL(
	    strstr(t, "# TYPE ftbpf_agent_ctl_clients gauge\nftbpf_agent_ctl_clients 3\n"));
	CU_ASSERT_PTR_NOT_NULL(
	    strstr(t, "# TYPE ftbpf_agent_timers_active gauge\nftbpf_agent_timers_active 4\n"));
	CU_ASSERT_PTR_NULL(strstr(t, "ftbpf_agent_ctl_clients_total"));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "# HELP ftbpf_agent_hangs_total hangs reported"));
	CU_ASSERT_PTR_NOT_NULL(
	    strstr(t, "# HELP ftbpf_agent_ringbuf_drops_total kernel events lost"));
	/* a counter the table lacks is still exported, and says it has no description */
	CU_ASSERT_PTR_NOT_NULL(strstr(t,
				      "# HELP ftbpf_agent_brand_new_total agent.counters.brand_new "
				      "of ftbpf status (no description yet)\n# TYPE "
				      "ftbpf_agent_brand_new_total counter\n"));
	/* the training job is never the label "job" (Prometheus' target label) */
	CU_ASSERT_PTR_NULL(strstr(t, "{job="));
	CU_ASSERT_PTR_NULL(strstr(t, ",job="));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "ftbpf_jobs{state=\"hung\"} 1\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "ftbpf_jobs{state=\"ok\"} 0\n"));
	CU_ASSERT_PTR_NOT_NULL(
	    strstr(t, "ftbpf_job_hung{training_job=\"a\\\"b\\\\c\\nd\",uid=\"1000\"} 1\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(
	    t,
	    "ftbpf_job_no_progress_seconds{training_job=\"a\\\"b\\\\c\\nd\",uid=\"1000\"} 65.5\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(
	    t, "ftbpf_job_culprit{training_job=\"a\\\"b\\\\c\\nd\",uid=\"1000\",rank=\"1\"} 1\n"));
	CU_ASSERT_PTR_NOT_NULL(
	    strstr(t, "ftbpf_job_generation{training_job=\"a\\\"b\\\\c\\nd\",uid=\"1000\"} 3\n"));
	CU_ASSERT_PTR_NOT_NULL(
	    strstr(t, "ftbpf_rank_state{training_job=\"j\",uid=\"1000\",rank=\"0\",pid="
		      "\"10\",state=\"blocked\"} 1\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(
	    t, "ftbpf_rank_timers{training_job=\"j\",uid=\"1000\",rank=\"0\",pid=\"10\"} 1\n"));
	CU_ASSERT_PTR_NULL(strstr(t, "pid=\"11\"")); /* exited: not a live series */
	CU_ASSERT_PTR_NULL(strstr(t, "=\"\""));	     /* no empty label */
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "ftbpf_mesh_peers{state=\"alive\"} 2\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "ftbpf_decisions_store_reachable 1\n"));
	free(t);
}

/* The culprit's host: its state a label only when known, never an empty one. */
static void test_culprit_node(void)
{
	char *t = format(
	    "{\"ok\":true,\"agent\":{\"version\":\"0.1.0\",\"features\":{\"programs\":\"tp_btf\"}},"
	    "\"jobs\":[{\"job\":\"x\",\"uid\":0,\"culprit_ranks\":[3],"
	    "\"culprit_node\":\"10.0.0.2:7946\"},{\"job\":\"y\",\"uid\":0,"
	    "\"culprit_ranks\":[1],\"culprit_node\":\"10.0.0.3:7946\","
	    "\"culprit_state\":\"stopped\"}],\"ranks\":[]}");

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "ftbpf_job_culprit_node{training_job=\"x\",uid=\"0\","
					 "rank=\"3\",node=\"10.0.0.2:7946\"} 1\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(t,
				      "ftbpf_job_culprit_node{training_job=\"y\",uid=\"0\","
				      "rank=\"1\",node=\"10.0.0.3:7946\",state=\"stopped\"} 1\n"));
	CU_ASSERT_PTR_NULL(strstr(t, "=\"\""));
	free(t);
}

/* Every HELP line says something of its own (the counters of a real agent's status). */
static void test_help_distinct(void)
{
	static const char *const names[] = {"events",
					    "adopted",
					    "adopt_errors",
					    "proc_rescans",
					    "hangs",
					    "actions",
					    "scans",
					    "ringbuf_drops",
					    "thread_map_full",
					    "proc_map_full",
					    "gpu_api_calls",
					    "nccl_comm_map_full",
					    "events_folded",
					    "exec_events_folded",
					    "signals_ignored",
					    "children_untracked",
					    "threads_untracked",
					    "children_tracked",
					    "ctl_accepted",
					    "ctl_requests",
					    "ctl_bad_requests",
					    "ctl_oversized",
					    "ctl_truncated",
					    "ctl_denied",
					    "ctl_dropped_slow",
					    "ctl_refused_full",
					    "ctl_refused_user",
					    "ctl_refused_fds",
					    "ctl_idle_closed",
					    "ctl_over_budget",
					    "ctl_clients",
					    "eventlog_write_errors",
					    "timers_active",
					    "timers_acquired",
					    "timers_released",
					    "timers_expired",
					    "timers_rejected_full",
					    "timers_rejected_user",
					    "fifo_requests",
					    "fifo_bad",
					    "fifo_denied",
					    "fifo_oversized",
					    "metrics_scrapes",
					    NULL};
	struct json_object *st = json_tokener_parse(status_json), *agent, *c;
	char *text = NULL, *helps[128], *save = NULL;
	size_t len = 0;
	int n = 0;

	CU_ASSERT_FATAL(json_object_object_get_ex(st, "agent", &agent));
	c = json_object_new_object();
	for (int i = 0; names[i]; i++)
		json_object_object_add(c, names[i], json_object_new_int(i));
	json_object_object_add(agent, "counters", c);
	CU_ASSERT_EQUAL_FATAL(metrics_format(st, &text, &len), 0);
	for (char *l = strtok_r(text, "\n", &save); l && n < 128; l = strtok_r(NULL, "\n", &save))
		if (!strncmp(l, "# HELP ", 7)) {
			const char *desc = strchr(l + 7, ' ');

			CU_ASSERT_PTR_NULL(strstr(l, "no description"));
			for (int i = 0; desc && i < n; i++)
				CU_ASSERT_STRING_NOT_EQUAL(strchr(helps[i] + 7, ' '), desc);
			helps[n++] = l;
		}
	CU_ASSERT(n > 55);
	free(text);
	json_object_put(st);
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
	CU_add_test(s, "every HELP line is distinct", test_help_distinct);
	CU_add_test(s, "the culprit's host, no empty state label", test_culprit_node);
	CU_add_test(s, "not a status: an error", test_not_a_status);
	CU_add_test(s, "odd shapes: no crash", test_odd_shapes);
	CU_add_test(s, "a job name that is not UTF-8: the scrape stays UTF-8", test_not_utf8);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails ? 1 : 0;
}
