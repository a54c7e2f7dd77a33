/* ftbpf-top's model without curses: rows from status replies, sorting, filtering, selection,
 * rates, column layout, frames at 80x24, the agent going away, events, the detail view, CPU%,
 * RSS and threads, the stacks view. */
#include <CUnit/Basic.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "top/top_render.h"

static const char *rank_fmt =
    "{\"job\":\"%s\",\"rank\":%d,\"pid\":%d,\"comm\":\"ring\",\"state\":\"%s\","
    "\"reason\":\"%s\",\"state_for_s\":%g,\"syscalls\":%d,\"gpu_last_s_ago\":-1,"
    "\"gpu_call\":null,\"ping_s_ago\":%g,\"step\":null,\"timers\":%d,\"timer_left_s\":%s,"
    "\"hung\":%s,\"culprit\":%s,\"exited\":%s}";

static char *status_json(int base_syscalls, const char *extra_reason)
{
	static char buf[40000];
	static char r[6][5000];

	snprintf(r[0], sizeof(r[0]), rank_fmt, "train-a", 0, 101, "blocked",
		 "blocked in futex for 30.0s", 30.0, base_syscalls, -1.0, 0, "null", "true",
		 "false", "false");
	snprintf(r[1], sizeof(r[1]), rank_fmt, "train-a", 1, 102, "blocked",
		 "blocked in futex for 30.0s", 30.0, base_syscalls + 10, 0.5, 1, "4.5", "true",
		 "false", "false");
	snprintf(r[2], sizeof(r[2]), rank_fmt, "train-a", 2, 103, "nccl",
		 extra_reason ? extra_reason : "in NCCL collective #121 (ncclAllReduce) for 31.0s",
		 31.0, base_syscalls + 20, -1.0, 0, "null", "true", "true", "false");
	snprintf(r[3], sizeof(r[3]), rank_fmt, "eval-b", 0, 201, "running",
		 "running, last progress 0.1s ago", 2.0, base_syscalls * 2, 0.1, 2, "12", "false",
		 "false", "false");
	snprintf(r[4], sizeof(r[4]), rank_fmt, "eval-b", 1, 202, "spinning",
		 "on CPU without syscalls for 3.0s", 3.0, base_syscalls, -1.0, 0, "null", "false",
		 "false", "false");
	snprintf(r[5], sizeof(r[5]), rank_fmt, "eval-b", 2, 203, "exited", "exited: code 0", 9.0,
		 base_syscalls, -1.0, 0, "null", "false", "false", "true");
	snprintf(buf, sizeof(buf),
		 "{\"ok\":true,\"agent\":{\"pid\":77,\"version\":\"0.1.0\",\"uptime_s\":65,"
		 "\"soft_timeout_s\":30,\"hard_timeout_s\":600,\"action\":\"report\","
		 "\"features\":{\"programs\":\"tp_btf\"},"
		 "\"counters\":{\"ringbuf_drops\":%d,\"adopted\":6}},"
		 "\"jobs\":[{\"job\":\"train-a\",\"ranks\":3,\"live\":3,\"state\":\"hung\","
		 "\"no_progress_s\":31,\"why\":\"rank 2 lags in collective 121\"},"
		 "{\"job\":\"eval-b\",\"ranks\":3,\"live\":2,\"state\":\"ok\",\"no_progress_s\":0,"
		 "\"why\":null}],"
		 "\"ranks\":[%s,%s,%s,%s,%s,%s],"
		 "\"cluster\":{\"self\":\"10.0.0.1:7946\",\"peers\":[{\"state\":\"alive\","
		 "\"health\":{\"hung\":1}},{\"state\":\"suspect\",\"health\":null},"
		 "{\"state\":\"dead\"}]}}",
		 base_syscalls == 777 ? 3 : 0, r[0], r[1], r[2], r[3], r[4], r[5]);
	return buf;
}

static void load(struct top_model *m, int base, double t)
{
	struct json_object *o = json_tokener_parse(status_json(base, NULL));

	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(top_model_update(m, o, t), 0);
	json_object_put(o);
}

static int view_pid(const struct top_model *m, int i)
{
	return m->rows[m->view[i]].pid;
}

static void test_rows_and_sorting(void)
{
	struct top_model m;

	top_model_init(&m);
	load(&m, 1000, 10.0);
	CU_ASSERT_EQUAL(m.nrows, 6);
	CU_ASSERT_EQUAL(m.njobs, 2);
	CU_ASSERT_EQUAL(m.agent_pid, 77);
	CU_ASSERT_EQUAL(m.peers_alive, 1);
	CU_ASSERT_EQUAL(m.peers_suspect, 1);
	CU_ASSERT_EQUAL(m.peers_dead, 1);
	CU_ASSERT_EQUAL(m.peers_hung, 1);
	CU_ASSERT_STRING_EQUAL(m.health, "ok");
	/* severity: the culprit first, then the hung ranks, then not running, exited, running */
	CU_ASSERT_EQUAL(view_pid(&m, 0), 103);
	CU_ASSERT_EQUAL(view_pid(&m, 1), 101);
	CU_ASSERT_EQUAL(view_pid(&m, 2), 102);
	CU_ASSERT_EQUAL(view_pid(&m, 3), 202);
	CU_ASSERT_EQUAL(view_pid(&m, 4), 203);
	CU_ASSERT_EQUAL(view_pid(&m, 5), 201);
	CU_ASSERT_EQUAL(m.sel_pid, 103); /* the first row is selected */
	top_model_sort(&m, TC_PID, 0);
	CU_ASSERT_EQUAL(view_pid(&m, 0), 101);
	CU_ASSERT_EQUAL(view_pid(&m, 5), 203);
	top_model_sort(&m, TC_PID, 1);
	CU_ASSERT_EQUAL(view_pid(&m, 0), 203);
	top_model_sort(&m, TC_TIME, 0); /* longest in its state first */
	CU_ASSERT_EQUAL(view_pid(&m, 0), 103);
	top_model_sort(&m, TC_TIMER, 0); /* least time left first, none last */
	CU_ASSERT_EQUAL(view_pid(&m, 0), 102);
	CU_ASSERT_EQUAL(view_pid(&m, 1), 201);
	top_model_sort(&m, TC_JOB, 0);
	CU_ASSERT_EQUAL(view_pid(&m, 0), 201);
	/* cycling through the columns comes back to where it started (the two GPU columns are
	 * skipped without NVML) */
	for (int i = 0; i < TC_N - 2; i++)
		top_model_sort_next(&m, 1);
	CU_ASSERT_EQUAL(m.sort, TC_JOB);
	top_model_sort(&m, TC_THR, 0);
	top_model_sort_next(&m, 1);
	CU_ASSERT_EQUAL(m.sort, TC_REASON);
	top_model_sort(&m, TC_JOB, 0);
	top_model_sort_next(&m, -1);
	CU_ASSERT_EQUAL(m.sort, TC_SEVERITY);
	CU_ASSERT_EQUAL(top_col_parse("sc/s"), TC_SYSC);
	CU_ASSERT_EQUAL(top_col_parse("nope"), -1);
	top_model_fini(&m);
}

static void test_filter_and_selection(void)
{
	struct top_model m;

	top_model_init(&m);
	load(&m, 1000, 10.0);
	top_model_filter_job(&m, "eval");
	CU_ASSERT_EQUAL(m.nview, 3);
	CU_ASSERT_EQUAL(m.sel_pid, 202); /* the old selection is filtered out: the first row */
	top_model_filter_job(&m, "");
	top_model_filter_state(&m, top_state_filter_parse("culprit"));
	CU_ASSERT_EQUAL(m.nview, 1);
	CU_ASSERT_EQUAL(view_pid(&m, 0), 103);
	top_model_filter_state(&m, top_state_filter_parse("problems"));
	CU_ASSERT_EQUAL(m.nview, 5); /* all but the running one */
	top_model_filter_state(&m, top_state_filter_parse("spinning"));
	CU_ASSERT_EQUAL(m.nview, 1);
	top_model_filter_job(&m, "train");
	CU_ASSERT_EQUAL(m.nview, 0);
	CU_ASSERT_PTR_NULL(top_model_selected(&m));
	top_model_move(&m, 1); /* nothing to move to: no crash */
	top_model_filter_job(&m, "");
	top_model_filter_state(&m, 0);
	CU_ASSERT_EQUAL(m.nview, 6);
	top_model_filter_state(&m, -1); /* wraps to the last filter */
	CU_ASSERT_EQUAL(m.filter_state, top_nstate_filters - 1);
	top_model_filter_state(&m, 0);
	/* selection follows the pid across refreshes and re-sorting */
	top_model_move(&m, 2);
	CU_ASSERT_EQUAL(m.sel_pid, 102);
	top_model_sort(&m, TC_PID, 1);
	CU_ASSERT_EQUAL(top_model_selected(&m)->pid, 102);
	load(&m, 2000, 11.0);
	CU_ASSERT_EQUAL(top_model_selected(&m)->pid, 102);
	top_model_move(&m, 100);
	CU_ASSERT_EQUAL(m.sel_pid, 101);
	top_model_move(&m, -100);
	CU_ASSERT_EQUAL(m.sel_pid, 203);
	top_model_fini(&m);
}

/* The default selection follows the culprit: a hang found after ftbpf-top started puts the
 * cursor on the culprit (Enter opens it), whatever the sort; a row the user chose stays. */
static void test_selection_follows_culprit(void)
{
	char *json = strdup(status_json(1000, NULL)), *p;
	struct json_object *o;
	struct top_model m;

	while ((p = strstr(json, "\"culprit\":true")))
		memcpy(p, "\"culprit\":0   ", 14); /* no culprit yet (same length) */
	top_model_init(&m);
	top_model_sort(&m, TC_PID, 0);
	o = json_tokener_parse(json);
	CU_ASSERT_EQUAL(top_model_update(&m, o, 10.0), 0);
	json_object_put(o);
	CU_ASSERT_EQUAL(m.sel_pid, 101); /* the first row */
	load(&m, 1100, 11.0);		 /* rank 2 (pid 103) is now the culprit */
	CU_ASSERT_EQUAL(m.sel_pid, 103);
	top_model_move(&m, -1); /* the user moves: the selection is theirs */
	CU_ASSERT_EQUAL(m.sel_pid, 102);
	load(&m, 1200, 12.0);
	CU_ASSERT_EQUAL(m.sel_pid, 102);
	top_model_fini(&m);
	free(json);
}

static void test_rates(void)
{
	struct top_model m;

	top_model_init(&m);
	load(&m, 1000, 10.0);
	CU_ASSERT(m.rows[0].sysc_rate < 0); /* unknown on the first refresh */
	load(&m, 1500, 10.5);
	for (int i = 0; i < m.nrows; i++)
		if (m.rows[i].pid == 101)
			CU_ASSERT_DOUBLE_EQUAL(m.rows[i].sysc_rate, 1000.0, 1e-6);
	load(&m, 100, 11.0); /* a counter that went back (pid reuse): no rate, no negative */
	for (int i = 0; i < m.nrows; i++)
		CU_ASSERT(m.rows[i].sysc_rate < 0);
	top_model_fini(&m);
}

static void test_layout(void)
{
	enum top_col cols[TC_N];
	int w[TC_N], n, sum;

	for (int width = 40; width <= 240; width += 7) {
		n = top_layout(width, 0, cols, w);
		sum = 2;
		for (int i = 0; i < n; i++)
			sum += w[i] + (i + 1 < n);
		CU_ASSERT(cols[n - 1] == TC_REASON);
		if (width >= 80)
			CU_ASSERT_EQUAL(sum, width); /* the reason takes exactly what is left */
	}
	n = top_layout(200, 0, cols, w);
	CU_ASSERT_EQUAL(n, TC_N - 3); /* every column but the GPU ones (no NVML) */
	n = top_layout(80, 0, cols, w);
	CU_ASSERT(n >= 6 && n < TC_N - 3); /* the optional ones go first */
	for (int i = 0; i < n; i++)
		CU_ASSERT(cols[i] != TC_GPU);
}

static int find_line(const struct top_frame *f, const char *needle)
{
	for (int i = 0; i < f->n; i++)
		if (strstr(f->lines[i].text, needle))
			return i;
	return -1;
}

static void test_frame_80x24(void)
{
	struct top_model m;
	struct top_frame f;
	struct json_object *ev;
	int i;

	top_model_init(&m);
	load(&m, 1000, 10.0);
	for (int k = 0; k < 3; k++) {
		char buf[256];

		snprintf(buf, sizeof(buf),
			 "{\"type\":\"exit\",\"seq\":%d,\"ts\":\"2026-11-22T09:16:5%d.000Z\","
			 "\"job\":\"eval-b\",\"rank\":2,\"pid\":203,\"signal\":9,\"signal_name\":"
			 "\"KILL\",\"sender_pid\":555,\"sender_comm\":\"kill\"}",
			 k + 1, k);
		ev = json_tokener_parse(buf);
		top_model_add_event(&m, ev);
		top_model_add_event(&m, ev); /* the same seq again: ignored */
		json_object_put(ev);
	}
	CU_ASSERT_EQUAL(m.nev, 3);
	load(&m, 777, 10.5); /* the agent lost events: the header says so */
	CU_ASSERT_STRING_EQUAL(m.health, "ringbuf_drops 3");
	top_frame_init(&f, 120);
	top_render_main(&m, &f, 120, 24, "/run/x.sock", 1);
	CU_ASSERT(strstr(f.lines[0].text, "health ringbuf_drops 3") != NULL);
	CU_ASSERT_EQUAL(f.lines[0].attr, TA_WARN);
	load(&m, 1000, 11.0);
	top_render_main(&m, &f, 80, 24, "/run/x.sock", 1);
	CU_ASSERT_EQUAL(f.n, 24);
	for (i = 0; i < f.n; i++)
		CU_ASSERT(strlen(f.lines[i].text) <= 80);
	i = find_line(&f, "in NCCL collective #121");
	CU_ASSERT_FATAL(i >= 0);
	CU_ASSERT_EQUAL(f.lines[i].text[0], '!');
	CU_ASSERT_EQUAL(f.lines[i].attr, TA_CULPRIT);
	CU_ASSERT(f.lines[i].selected);
	CU_ASSERT_EQUAL(f.lines[find_line(&f, "futex")].text[0], '*');
	CU_ASSERT_EQUAL(f.lines[find_line(&f, "futex")].attr, TA_HUNG);
	CU_ASSERT(find_line(&f, "HUNG job train-a: rank 2 lags") >= 0);
	CU_ASSERT(find_line(&f, "Peers 1 alive, 1 suspect, 1 dead") >= 0);
	CU_ASSERT(find_line(&f, "killed by SIGKILL from pid 555 (kill)") >= 0);
	CU_ASSERT_EQUAL(f.lines[f.n - 1].attr, TA_KEYS);
	/* a tiny terminal still gets a frame no taller than it */
	top_render_main(&m, &f, 40, 8, "/run/x.sock", 1);
	CU_ASSERT(f.n <= 9);
	/* --once: every row, no key line */
	top_render_main(&m, &f, 160, 0, "/run/x.sock", 1);
	CU_ASSERT(find_line(&f, "eval-b") >= 0);
	CU_ASSERT(f.lines[f.n - 1].attr != TA_KEYS);
	/* ... and ends with the mesh's peers */
	CU_ASSERT(find_line(&f, "PEERS of 10.0.0.1:7946") >= 0);
	CU_ASSERT_EQUAL(m.npeers, 3);
	i = find_line(&f, "suspect ");
	CU_ASSERT_FATAL(i >= 0);
	CU_ASSERT_EQUAL(f.lines[i].attr, TA_WARN);
	CU_ASSERT(strstr(f.lines[i].text, "?") != NULL); /* no health from it yet */
	i = find_line(&f, "alive ");
	CU_ASSERT_FATAL(i >= 0);
	CU_ASSERT_EQUAL(f.lines[i].text[0], '*'); /* it reports hung ranks */
	top_frame_fini(&f);
	top_model_fini(&m);
}

static void test_disconnected_and_bad_input(void)
{
	struct top_model m;
	struct top_frame f;
	struct json_object *o;
	char *bad;

	top_model_init(&m);
	top_frame_init(&f, 100);
	top_render_main(&m, &f, 100, 24, "/run/x.sock", 1);
	CU_ASSERT(strstr(f.lines[0].text, "cannot reach ftbpfd at /run/x.sock") != NULL);
	CU_ASSERT_EQUAL(f.lines[0].attr, TA_ERROR);
	load(&m, 1000, 10.0);
	top_model_disconnected(&m, "Connection refused");
	top_render_main(&m, &f, 100, 24, "/run/x.sock", 1);
	CU_ASSERT(strstr(f.lines[0].text, "went away: Connection refused") != NULL);
	CU_ASSERT(find_line(&f, "train-a") >= 0); /* the last rows stay */
	/* not a status reply: refused, nothing changes */
	o = json_tokener_parse("{\"ok\":false,\"error\":\"x\"}");
	CU_ASSERT_EQUAL(top_model_update(&m, o, 12.0), -EINVAL);
	json_object_put(o);
	o = json_tokener_parse("{\"ok\":true,\"agent\":{},\"jobs\":{},\"ranks\":[]}");
	CU_ASSERT_EQUAL(top_model_update(&m, o, 12.0), -EINVAL);
	json_object_put(o);
	CU_ASSERT_EQUAL(top_model_update(&m, NULL, 12.0), -EINVAL);
	CU_ASSERT_EQUAL(m.nrows, 6);
	/* rows with fields missing or of the wrong type, control characters in text */
	o = json_tokener_parse("{\"ok\":true,\"agent\":{\"pid\":\"x\"},\"jobs\":[{}],"
			       "\"ranks\":[{},{\"pid\":5,\"reason\":\"a\\u001b[2Jb\\nc\","
			       "\"job\":\"\\u00e9t\\u00e9\"},7]}");
	CU_ASSERT_EQUAL(top_model_update(&m, o, 13.0), 0);
	json_object_put(o);
	CU_ASSERT_EQUAL(m.nrows, 3);
	top_render_main(&m, &f, 100, 24, "/run/x.sock", 1);
	for (int i = 0; i < f.n; i++)
		for (const char *p = f.lines[i].text; *p; p++)
			CU_ASSERT((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f);
	CU_ASSERT(find_line(&f, "??t??") >= 0); /* "été": two bytes each for the accents */
	/* a reason longer than any line */
	bad = malloc(4000);
	memset(bad, 'r', 3999);
	bad[3999] = 0;
	o = json_tokener_parse(status_json(1000, bad));
	free(bad);
	CU_ASSERT_EQUAL(top_model_update(&m, o, 14.0), 0);
	json_object_put(o);
	top_render_main(&m, &f, 300, 24, "/run/x.sock", 1);
	for (int i = 0; i < f.n; i++)
		CU_ASSERT(strlen(f.lines[i].text) <= 300);
	top_frame_fini(&f);
	top_model_fini(&m);
}

/* A job's ranks on other hosts are rows too, their host in front of the reason. */
static void test_ranks_elsewhere(void)
{
	struct top_model mm, *m = &mm;
	struct json_object *o = json_tokener_parse(
	    "{\"ok\":true,\"agent\":{\"pid\":7},\"ranks\":[{\"job\":\"j\",\"rank\":0,"
	    "\"pid\":11,\"state\":\"blocked\",\"hung\":true}],\"jobs\":[{\"job\":\"j\","
	    "\"state\":\"hung\",\"ranks_elsewhere\":[{\"rank\":3,\"node\":\"10.0.0.2:7946\","
	    "\"pid\":55,\"state\":\"stopped\",\"reason\":\"stopped (job-control signal)\","
	    "\"culprit\":true},{\"rank\":2,\"node\":\"10.0.0.2:7946\",\"pid\":54,"
	    "\"state\":\"blocked\",\"straggler\":true,\"slowdown\":1.35}]}]}");

	top_model_init(m);
	CU_ASSERT_EQUAL(top_model_update(m, o, 1.0), 0);
	CU_ASSERT_EQUAL(m->nrows, 3);
	CU_ASSERT_TRUE(m->rows[2].straggler); /* a straggler on another host: its SLOW column */
	CU_ASSERT_DOUBLE_EQUAL(m->rows[2].slowdown, 1.35, 1e-9);
	CU_ASSERT_FALSE(m->rows[1].straggler);
	CU_ASSERT_FALSE(m->rows[0].elsewhere);
	CU_ASSERT_TRUE(m->rows[1].elsewhere);
	CU_ASSERT_EQUAL(m->rows[1].rank, 3);
	CU_ASSERT_TRUE(m->rows[1].culprit);
	CU_ASSERT_TRUE(m->rows[1].hung);
	CU_ASSERT_STRING_EQUAL(m->rows[1].reason, "on 10.0.0.2:7946: stopped (job-control signal)");
	CU_ASSERT_STRING_EQUAL(m->rows[2].reason, "on 10.0.0.2:7946: -");
	json_object_put(o);
	top_model_fini(m);
}

static void test_events_ring(void)
{
	struct top_model m;
	struct json_object *o;

	top_model_init(&m);
	for (int i = 1; i <= TOP_EVENTS + 50; i++) {
		char buf[160];

		snprintf(buf, sizeof(buf),
			 "{\"type\":\"peer_dead\",\"seq\":%d,\"ts\":\"2026-11-22T10:00:00.0Z\","
			 "\"peer\":\"10.0.0.%d:7946\",\"incarnation\":3}",
			 i, i % 250);
		o = json_tokener_parse(buf);
		top_model_add_event(&m, o);
		json_object_put(o);
	}
	CU_ASSERT_EQUAL(m.nev, TOP_EVENTS);
	CU_ASSERT_EQUAL(m.ev[m.ev_head].seq, 51); /* the oldest kept */
	CU_ASSERT_EQUAL(m.ev[(m.ev_head + TOP_EVENTS - 1) % TOP_EVENTS].seq, TOP_EVENTS + 50);
	CU_ASSERT(m.ev[m.ev_head].warn);
	CU_ASSERT(strstr(m.ev[m.ev_head].text, "peer_dead 10.0.0.51:7946") != NULL);
	top_model_clear_events(&m);
	CU_ASSERT_EQUAL(m.nev, 0);
	o = json_tokener_parse("{\"type\":\"hang\",\"seq\":1,\"job\":\"j\",\"why\":\"w\","
			       "\"ranks\":[{\"pid\":1}]}");
	top_model_add_event(&m, o);
	json_object_put(o);
	CU_ASSERT_EQUAL(m.nev, 1); /* after a clear, seq 1 is new again */
	CU_ASSERT(strstr(m.ev[0].text, "--:--:-- hang job j: w") != NULL);
	top_model_fini(&m);
}

static void test_detail(void)
{
	struct top_model m;
	struct top_frame f;
	struct json_object *ex;

	top_model_init(&m);
	load(&m, 1000, 10.0);
	top_frame_init(&f, 100);
	top_render_detail(&m, NULL, "no such rank", &f, 100);
	CU_ASSERT(find_line(&f, "no detail for pid 103: no such rank") >= 0);
	ex = json_tokener_parse(
	    "{\"ok\":true,\"rank\":{\"pid\":103,\"rank\":2,\"job\":\"train-a\",\"comm\":\"ring\","
	    "\"state\":\"nccl\",\"reason\":\"in NCCL collective #121\",\"hung\":true,"
	    "\"culprit\":true,\"nccl\":[{\"comm\":\"00ab\",\"rank\":2,\"nranks\":4,\"seq\":121,"
	    "\"last_op\":\"ncclAllReduce\"}]},"
	    "\"job\":{\"state\":\"hung\",\"why\":\"rank 2 lags\"},"
	    "\"threads\":[{\"tid\":103,\"comm\":\"ring\",\"state\":\"S\",\"syscall\":\"futex\","
	    "\"in_syscall_s\":30,\"wchan\":\"futex_wait_queue\",\"kernel_stack\":[\"futex_wait\","
	    "\"do_syscall_64\"]}],"
	    "\"signals\":[{\"s_ago\":1.5,\"signal_name\":\"TERM\",\"delivered\":false,"
	    "\"sender_pid\":9,\"sender_comm\":\"bash\"}],"
	    "\"timers\":[{\"pid\":103,\"scope\":\"train.py#12\",\"time_left_s\":4.5,"
	    "\"signal_name\":\"KILL\",\"source\":\"slot\"}],"
	    "\"python_version\":\"3.11\",\"python_threads\":[{\"thread_id\":\"0x7f3a1c2b5740\","
	    "\"tid\":103,\"stack\":[{\"file\":\"train.py\",\"line\":14,\"function\":\"load_batch\"}"
	    "]}],"
	    "\"job_ranks\":[{\"rank\":0,\"pid\":101,\"state\":\"blocked\",\"reason\":\"futex\"}]}");
	top_render_detail(&m, ex, NULL, &f, 100);
	json_object_put(ex);
	CU_ASSERT(find_line(&f, "rank 2 of job train-a, pid 103") >= 0);
	CU_ASSERT(find_line(&f, "collective #121, last ncclAllReduce") >= 0);
	CU_ASSERT(find_line(&f, "futex_wait") >= 0);
	CU_ASSERT(find_line(&f, "SIGTERM sent by pid 9 (bash)") >= 0);
	CU_ASSERT(find_line(&f, "rank 0 pid 101 blocked") >= 0);
	CU_ASSERT(find_line(&f, "scope 'train.py#12': 4.5s left, then SIGKILL (slot)") >= 0);
	/* the Python stacks, in faulthandler's layout */
	CU_ASSERT(find_line(&f, "PYTHON STACKS (CPython 3.11)") >= 0);
	CU_ASSERT(find_line(&f, "Thread 0x00007f3a1c2b5740 (most recent call first):") >= 0);
	CU_ASSERT(find_line(&f, "  File \"train.py\", line 14 in load_batch") >= 0);
	top_render_help(&f, 80);
	CU_ASSERT(find_line(&f, "Enter") >= 0);
	top_frame_fini(&f);
	top_model_fini(&m);
}

/* Job names in full: what a user copies into `ftbpf status JOB` (host-local torch ids are
 * long: torch:127.0.0.1:29500@gpu-node-7). */
static void test_full_job_names(void)
{
	const char *job = "torch:127.0.0.1:29517@a-rather-long-node-name-7";
	char rank[1024], buf[4096];
	struct top_model m;
	struct top_frame f;
	struct json_object *o;
	int i;

	snprintf(rank, sizeof(rank), rank_fmt, job, 0, 301, "running", "running", 1.0, 10, -1.0, 0,
		 "null", "false", "false", "false");
	snprintf(buf, sizeof(buf),
		 "{\"ok\":true,\"agent\":{\"pid\":7,\"version\":\"0.1.0\",\"uptime_s\":5,"
		 "\"soft_timeout_s\":30,\"hard_timeout_s\":600,\"action\":\"report\","
		 "\"features\":{\"programs\":\"tp_btf\"},\"counters\":{}},"
		 "\"jobs\":[{\"job\":\"%s\",\"ranks\":1,\"live\":1,\"state\":\"ok\"}],"
		 "\"ranks\":[%s],\"cluster\":null}",
		 job, rank);
	top_model_init(&m);
	o = json_tokener_parse(buf);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(top_model_update(&m, o, 1.0), 0);
	json_object_put(o);
	top_frame_init(&f, 160);
	top_render_main(&m, &f, 160, 24, "/run/x.sock", 0);
	i = find_line(&f, job);
	CU_ASSERT(i >= 0);
	/* a narrow terminal keeps the reason's minimum: the name is cut only then */
	top_render_main(&m, &f, 80, 24, "/run/x.sock", 0);
	for (i = 0; i < f.n; i++)
		CU_ASSERT(strlen(f.lines[i].text) <= 80);
	top_frame_fini(&f);
	top_model_fini(&m);
}

/* The SLOW column: a rank's slowdown, '*' for a straggler; stragglers sort first by it and are
 * among the problems. */
static void test_slow_column(void)
{
	char *js = strdup(status_json(100, NULL)), *p = strstr(js, "\"pid\":202,");
	char buf[40000];
	struct top_model m;
	struct top_frame f;
	struct json_object *o;

	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	p += strlen("\"pid\":202,");
	snprintf(buf, sizeof(buf), "%.*s\"slowdown\":1.31,\"straggler\":true,%s", (int)(p - js), js,
		 p);
	free(js);
	top_model_init(&m);
	o = json_tokener_parse(buf);
	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	CU_ASSERT_EQUAL(top_model_update(&m, o, 1.0), 0);
	json_object_put(o);
	top_model_sort(&m, TC_SLOW, 0);
	CU_ASSERT_EQUAL(view_pid(&m, 0), 202);
	CU_ASSERT_STRING_EQUAL(top_col_name(TC_SLOW), "slow");
	top_frame_init(&f, 160);
	top_render_main(&m, &f, 160, 24, "/run/x.sock", 1);
	CU_ASSERT(find_line(&f, "1.31*") >= 0);
	CU_ASSERT(find_line(&f, "SLOW") >= 0);
	top_frame_fini(&f);
	top_model_fini(&m);
}

/* CPU%, RSS and threads: /proc/PID/stat parsed, CPU% from the time since the last refresh,
 * the agent's thread count kept, the 160-column table shows them, they sort. */
static void test_proc_columns(void)
{
	/* comm with a space and a ')': the last ')' ends it; utime 250 stime 50 ticks, 7
	 * threads, rss 2560 pages */
	static const char stat[] =
	    "103 (py) (x) S 1 103 103 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 7 0 "
	    "12345 104857600 2560 18446744073709551615";
	struct top_procstat ps[2] = {{0}}, bad;
	struct top_model m;
	struct top_frame f;
	enum top_col cols[TC_N];
	int w[TC_N], n, hdr, found = 0;

	CU_ASSERT_EQUAL_FATAL(top_parse_proc_stat(stat, strlen(stat), 100, 4, &ps[0]), 0);
	CU_ASSERT_DOUBLE_EQUAL(ps[0].cpu_s, 3.0, 1e-9);
	CU_ASSERT_EQUAL(ps[0].threads, 7);
	CU_ASSERT_EQUAL(ps[0].rss_kb, 10240);
	CU_ASSERT_EQUAL(top_parse_proc_stat("12 (x) S 1", 10, 100, 4, &bad), -EINVAL);
	CU_ASSERT_EQUAL(top_parse_proc_stat("no paren", 8, 100, 4, &bad), -EINVAL);

	top_model_init(&m);
	load(&m, 1000, 10.0);
	ps[0].pid = 103;
	ps[1] = (struct top_procstat){.pid = 201, .cpu_s = 1.0, .rss_kb = 2048, .threads = 3};
	CU_ASSERT_EQUAL(top_model_proc_stats(&m, ps, 2, 10.0), 0);
	for (int i = 0; i < m.nrows; i++) {
		const struct top_row *r = &m.rows[i];

		if (r->pid == 103) {
			CU_ASSERT(r->cpu_pct < 0); /* one sample: no rate yet */
			CU_ASSERT_EQUAL(r->rss_kb, 10240);
			CU_ASSERT_EQUAL(r->threads, 7); /* the agent gave none */
		} else if (r->pid == 101) {
			CU_ASSERT(r->rss_kb < 0 && r->threads < 0); /* not readable: "-" */
		}
	}
	/* a refresh 2 s later: 103 used 1.5 s of CPU (75%), 201 used 4 s (200%: two threads) */
	load(&m, 1100, 12.0);
	ps[0].cpu_s += 1.5;
	ps[1].cpu_s += 4.0;
	CU_ASSERT_EQUAL(top_model_proc_stats(&m, ps, 2, 12.0), 0);
	for (int i = 0; i < m.nrows; i++) {
		if (m.rows[i].pid == 103)
			CU_ASSERT_DOUBLE_EQUAL(m.rows[i].cpu_pct, 75.0, 1e-6);
		if (m.rows[i].pid == 201)
			CU_ASSERT_DOUBLE_EQUAL(m.rows[i].cpu_pct, 200.0, 1e-6);
	}
	top_model_sort(&m, TC_CPU, 0); /* the busiest first */
	CU_ASSERT_EQUAL(view_pid(&m, 0), 201);
	CU_ASSERT_EQUAL(view_pid(&m, 1), 103);
	top_model_sort(&m, TC_RSS, 0);
	CU_ASSERT_EQUAL(view_pid(&m, 0), 103);
	CU_ASSERT_EQUAL(top_col_parse("cpu%"), TC_CPU);
	CU_ASSERT_EQUAL(top_col_parse("cpu"), TC_CPU);
	CU_ASSERT_EQUAL(top_col_parse("rss"), TC_RSS);
	CU_ASSERT_EQUAL(top_col_parse("thr"), TC_THR);
	/* 160 columns: every column, CPU% RSS THR before the reason */
	n = top_layout(160, 0, cols, w);
	CU_ASSERT_EQUAL(n, TC_N - 3); /* no GPU columns without NVML */
	top_frame_init(&f, 160);
	top_render_main(&m, &f, 160, 40, "/run/ftbpf.sock", 1);
	hdr = find_line(&f, "CPU%");
	CU_ASSERT(hdr >= 0 && strstr(f.lines[hdr].text, "SLOW  CPU%    RSS  THR REASON"));
	for (int i = 0; i < f.n; i++)
		if (strstr(f.lines[i].text, " 103 ")) {
			found = 1;
			CU_ASSERT_PTR_NOT_NULL(strstr(f.lines[i].text, "   75    10M    7 "));
		}
	CU_ASSERT(found);
	top_frame_fini(&f);
	top_model_fini(&m);
}

/* GPU use per rank where NVML answers (issue 34): the columns appear, each rank's SM % and GPU
 * memory, 0 for a rank on no GPU, "-" for a rank of another host; sorted busiest first. */
static void test_gpu_columns(void)
{
	struct top_model m;
	struct top_frame f;
	enum top_col cols[TC_N];
	int w[TC_N], n, hdr, seen = 0;
	struct top_gpustat g[2] = {{.pid = 103, .sm_pct = 87, .mem_kb = 2048 * 1024},
				   {.pid = 999, .sm_pct = 50, .mem_kb = 1024}}; /* not a rank */

	top_model_init(&m);
	load(&m, 1000, 10.0);
	CU_ASSERT_EQUAL(m.gpu_on, 0);
	n = top_layout(200, 0, cols, w);
	for (int i = 0; i < n; i++)
		CU_ASSERT(cols[i] != TC_GPUU && cols[i] != TC_GMEM);
	top_model_gpu_stats(&m, g, 2);
	CU_ASSERT_EQUAL(m.gpu_on, 1);
	for (int i = 0; i < m.nrows; i++) {
		const struct top_row *r = &m.rows[i];

		if (r->pid == 103) {
			CU_ASSERT(r->gpu_pct == 87 && r->gmem_kb == 2048 * 1024);
		} else if (!r->exited && !r->elsewhere) {
			CU_ASSERT(r->gpu_pct == 0 && r->gmem_kb == 0);
		}
	}
	n = top_layout(200, 1, cols, w);
	CU_ASSERT_EQUAL(n, TC_N - 1);
	CU_ASSERT_EQUAL(cols[n - 3], TC_GPUU);
	CU_ASSERT_EQUAL(cols[n - 2], TC_GMEM);
	n = top_layout(80, 1, cols, w); /* narrow: GPU memory goes before GPU use */
	for (int i = 0; i < n; i++)
		CU_ASSERT(cols[i] != TC_GMEM);
	top_model_sort(&m, TC_GPUU, 0);
	CU_ASSERT_EQUAL(view_pid(&m, 0), 103);
	CU_ASSERT_EQUAL(top_col_parse("gpu%"), TC_GPUU);
	CU_ASSERT_EQUAL(top_col_parse("gmem"), TC_GMEM);
	CU_ASSERT_EQUAL(top_col_parse("gpu"), TC_GPU); /* the GPU call age, as before */
	top_frame_init(&f, 200);
	top_render_main(&m, &f, 200, 40, "/run/ftbpf.sock", 1);
	hdr = find_line(&f, "GPU%");
	CU_ASSERT(hdr >= 0 && strstr(f.lines[hdr].text, " THR GPU%   GMEM REASON"));
	for (int i = 0; i < f.n; i++)
		if (strstr(f.lines[i].text, " 103 ")) {
			seen = 1;
			CU_ASSERT_PTR_NOT_NULL(strstr(f.lines[i].text, "   87  2048M "));
		}
	CU_ASSERT(seen);
	top_frame_fini(&f);
	top_model_fini(&m);
}

/* The stacks view: `ftbpf stacks PID`'s reply as lines, or why there is none. */
static void test_stacks_view(void)
{
	struct json_object *st = json_tokener_parse(
	    "{\"ok\":true,\"processes\":[{\"pid\":103,\"rank\":2,\"job\":\"train-a\","
	    "\"comm\":\"python3\",\"state\":\"blocked\",\"reason\":\"blocked in futex\","
	    "\"threads\":[{\"tid\":103,\"comm\":\"python3\",\"state\":\"S\",\"syscall\":\"futex\","
	    "\"wchan\":\"futex_wait\",\"kernel_stack\":[\"futex_wait_queue\",\"do_futex\"]}],"
	    "\"python_version\":\"3.11\",\"python_threads\":[{\"thread_id\":\"0x7f3a1c2b5740\","
	    "\"tid\":103,\"stack\":[{\"file\":\"train.py\",\"line\":14,\"function\":\"load\"}]}]}]"
	    "}");
	struct top_frame f;

	CU_ASSERT_PTR_NOT_NULL_FATAL(st);
	top_frame_init(&f, 100);
	top_render_stacks(st, 103, NULL, &f, 100);
	CU_ASSERT(find_line(&f, "stacks of pid 103 now") == 0);
	CU_ASSERT(find_line(&f, "rank 2 of job train-a, pid 103 (python3): blocked") >= 0);
	CU_ASSERT(find_line(&f, "tid 103 python3") >= 0);
	CU_ASSERT(find_line(&f, "      futex_wait_queue") >= 0);
	CU_ASSERT(find_line(&f, "PYTHON STACKS (CPython 3.11)") >= 0);
	CU_ASSERT(find_line(&f, "  File \"train.py\", line 14 in load") >= 0);
	top_render_stacks(NULL, 5, "permission_denied", &f, 100);
	CU_ASSERT(find_line(&f, "no stacks for pid 5: permission_denied") >= 0);
	top_render_help(&f, 100);
	CU_ASSERT(find_line(&f, "  s  ") >= 0 || find_line(&f, "  s               stacks") >= 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(top_keys_line(160), "s stacks"));
	top_frame_fini(&f);
	json_object_put(st);
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("top_model", NULL, NULL);
	CU_add_test(s, "rows and sorting", test_rows_and_sorting);
	CU_add_test(s, "ranks on other hosts", test_ranks_elsewhere);
	CU_add_test(s, "the SLOW column", test_slow_column);
	CU_add_test(s, "filters and selection", test_filter_and_selection);
	CU_add_test(s, "the selection follows a culprit until the user moves",
		    test_selection_follows_culprit);
	CU_add_test(s, "syscall rates", test_rates);
	CU_add_test(s, "column layout", test_layout);
	CU_add_test(s, "80x24 frame", test_frame_80x24);
	CU_add_test(s, "agent away, bad input", test_disconnected_and_bad_input);
	CU_add_test(s, "event ring", test_events_ring);
	CU_add_test(s, "detail and help", test_detail);
	CU_add_test(s, "job names in full", test_full_job_names);
	CU_add_test(s, "CPU%, RSS and threads", test_proc_columns);
	CU_add_test(s, "GPU use and memory (NVML)", test_gpu_columns);
	CU_add_test(s, "the stacks view", test_stacks_view);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
