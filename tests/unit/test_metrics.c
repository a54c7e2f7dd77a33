/*
 * The status -> Prometheus text formatter (user/lib/metrics_text.c): every series a status
 * yields, label values escaped, exited ranks and long-ended jobs left out, a bounded number of
 * series per rank and per job, and no output for what is not a status.
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
	int r = metrics_text_format(o, &text, &len);

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
	CU_ASSERT_PTR_NOT_NULL(strstr(t,
				      "ftbpf_rank_state{training_job=\"j\",uid=\"1000\",rank=\"0\","
				      "state=\"blocked\"} 1\n"));
	CU_ASSERT_PTR_NOT_NULL(
	    strstr(t, "ftbpf_rank_timers{training_job=\"j\",uid=\"1000\",rank=\"0\"} 1\n"));
	CU_ASSERT_PTR_NULL(strstr(t, "\"j\",uid=\"1000\",rank=\"1\"")); /* exited: no series */
	CU_ASSERT_PTR_NULL(strstr(t, "pid="));	/* a restart is no new series */
	CU_ASSERT_PTR_NULL(strstr(t, "=\"\"")); /* no empty label */
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
	CU_ASSERT_EQUAL_FATAL(metrics_text_format(st, &text, &len), 0);
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

/* The samples of a scrape whose name starts with prefix (comments left out). */
static int count_samples(const char *text, const char *prefix)
{
	size_t pl = strlen(prefix);
	int n = 0;

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		n += !strncmp(l, prefix, pl);
	return n;
}

/* A status of njobs jobs of nranks live ranks each (pids from pid0), one culprit per job; job
 * 0 has one more process: an exited earlier incarnation of its rank 0. */
static char *status_of(int njobs, int nranks, int pid0)
{
	struct json_object *st = json_object_new_object(), *jobs = json_object_new_array(),
			   *ranks = json_object_new_array();
	char *text = NULL, name[32];
	size_t len = 0;

	json_object_object_add(st, "agent", json_object_new_object());
	for (int j = 0; j < njobs; j++) {
		struct json_object *jo = json_object_new_object(), *cr = json_object_new_array();

		snprintf(name, sizeof(name), "job%d", j);
		json_object_object_add(jo, "job", json_object_new_string(name));
		json_object_object_add(jo, "uid", json_object_new_int(1000));
		json_object_object_add(jo, "state", json_object_new_string("hung"));
		json_object_object_add(jo, "live", json_object_new_int(nranks));
		json_object_array_add(cr, json_object_new_int(0));
		json_object_object_add(jo, "culprit_ranks", cr);
		json_object_array_add(jobs, jo);
		for (int r = -(j == 0); r < nranks; r++) {
			struct json_object *ro = json_object_new_object();

			json_object_object_add(ro, "job", json_object_new_string(name));
			json_object_object_add(ro, "uid", json_object_new_int(1000));
			json_object_object_add(ro, "rank", json_object_new_int(r < 0 ? 0 : r));
			json_object_object_add(ro, "pid", json_object_new_int(pid0++));
			json_object_object_add(ro, "state", json_object_new_string("blocked"));
			json_object_object_add(ro, "exited", json_object_new_boolean(r < 0));
			json_object_array_add(ranks, ro);
		}
	}
	json_object_object_add(st, "jobs", jobs);
	json_object_object_add(st, "ranks", ranks);
	if (metrics_text_format(st, &text, &len) < 0)
		text = NULL;
	json_object_put(st);
	return text;
}

/*
 * The series count is bounded: 8 per live rank (its state and 7 gauges) and 8 per job (7
 * gauges and one per culprit rank), whatever the pids; a rank restarted with another pid is the
 * same series.
 */
static void test_series_count(void)
{
	char *a = status_of(3, 4, 100), *b = status_of(3, 4, 5000);

	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_EQUAL(count_samples(a, "ftbpf_rank_"), 3 * 4 * 8);
	CU_ASSERT_EQUAL(count_samples(a, "ftbpf_job_"), 3 * 8);
	CU_ASSERT_EQUAL(count_samples(a, "ftbpf_rank_state{"), 3 * 4);
	CU_ASSERT_STRING_EQUAL(a, b); /* other pids: the very same scrape */
	free(a);
	free(b);
}

/* Two live processes that claim one rank: one series, the newer one's. */
static void test_duplicate_rank(void)
{
	char *t = format("{\"agent\":{},\"jobs\":[],\"ranks\":["
			 "{\"pid\":10,\"rank\":0,\"job\":\"j\",\"uid\":0,\"state\":\"stopped\","
			 "\"adopted_s_ago\":50,\"exited\":false},"
			 "{\"pid\":11,\"rank\":0,\"job\":\"j\",\"uid\":0,\"state\":\"running\","
			 "\"adopted_s_ago\":2,\"exited\":false}]}");

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_EQUAL(count_samples(t, "ftbpf_rank_state{"), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(
	    t, "ftbpf_rank_state{training_job=\"j\",uid=\"0\",rank=\"0\",state=\"running\"}"));
	CU_ASSERT_EQUAL(count_samples(t, "ftbpf_rank_"), 8);
	free(t);
}

/* A job ended a minute ago is in no job series (nor in ftbpf_jobs); one just ended still is. */
static void test_ended_jobs(void)
{
	char *t = format("{\"agent\":{},\"ranks\":[],\"jobs\":["
			 "{\"job\":\"old\",\"uid\":0,\"state\":\"failed\",\"failed\":true,"
			 "\"live\":0,\"ended_s_ago\":61,\"culprit_ranks\":[1]},"
			 "{\"job\":\"new\",\"uid\":0,\"state\":\"failed\",\"failed\":true,"
			 "\"live\":0,\"ended_s_ago\":3,\"culprit_ranks\":[1]},"
			 "{\"job\":\"live\",\"uid\":0,\"state\":\"ok\",\"live\":2,"
			 "\"ended_s_ago\":null}]}");

	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_PTR_NULL(strstr(t, "\"old\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "ftbpf_job_failed{training_job=\"new\",uid=\"0\"} 1\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "ftbpf_job_failed{training_job=\"live\",uid=\"0\"} 0\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(t, "ftbpf_jobs{state=\"failed\"} 1\n"));
	CU_ASSERT_EQUAL(count_samples(t, "ftbpf_job_"), 2 * 7 + 1);
	free(t);
}

static void test_not_a_status(void)
{
	CU_ASSERT_PTR_NULL(format("[1,2]"));
	CU_ASSERT_PTR_NULL(format("{\"jobs\":[]}"));
	CU_ASSERT_EQUAL(metrics_text_format(NULL, NULL, NULL), -22);
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
	CU_ASSERT_EQUAL_FATAL(metrics_text_format(o, &u, &len), 0);
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
	CU_add_test(s, "series bounded per rank and per job, no pid", test_series_count);
	CU_add_test(s, "two processes of one rank: one series", test_duplicate_rank);
	CU_add_test(s, "ended jobs leave the job series", test_ended_jobs);
	CU_add_test(s, "not a status: an error", test_not_a_status);
	CU_add_test(s, "odd shapes: no crash", test_odd_shapes);
	CU_add_test(s, "a job name that is not UTF-8: the scrape stays UTF-8", test_not_utf8);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails ? 1 : 0;
}
