/* The ftbpf CLI without an agent: each command's text from a reply (cli_render: the status
 * tables, the cluster view, explain, stacks, timers, decisions, events and the one-line
 * replies), what status JOB, --live and --check do with a reply, and the command table's
 * parser (each command's flags, its arguments, the errors and their exit status). */
#include <CUnit/Basic.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_cmd.h"
#include "cli/cli_render.h"

/* Replies as the agent sends them, and the CLI's text for each (as ftbpf printed it before
 * the split into user/cli: the text is a contract). */
static const char STATUS[] =
    "{\"ok\":true,\"agent\":{\"pid\":77,\"version\":\"0.1.0\",\"uptime_s\":65,\"soft_timeou"
    "t_s\":30,\"soft_timeout_auto\":false,\"hard_timeout_s\":600,\"action\":\"report\",\"fe"
    "atures\":{\"programs\":\"tp_btf\"}},\"jobs\":[{\"job\":\"torch:127.0.0.1:29500@node-1"
    "\",\"ranks\":2,\"live\":2,\"state\":\"hung\",\"no_progress_s\":10.04,\"hung\":true,\"c"
    "ulprit_ranks\":[1],\"culprit_node\":\"node-1\",\"culprit_here\":true,\"why\":\"rank 1 "
    "is where no other rank waits\",\"run\":2,\"previous_run\":\"torch:old\",\"hosts\":2,\""
    "job_ranks\":3,\"world_size\":4,\"missing_ranks\":\"3\",\"ranks_elsewhere\":[{\"rank\":"
    "2,\"node\":\"node-2\",\"pid\":900,\"state\":\"blocked\",\"reason\":\"in recv\",\"culpr"
    "it\":false}],\"generation\":1,\"checkpoint\":{\"id\":3,\"target\":120,\"state\":\"savi"
    "ng\",\"ranks_saved\":1,\"ranks\":2},\"step_s\":0.5,\"step_rate\":2.0,\"step_spread\":0"
    ".12,\"step_p99_s\":0.61,\"soft_timeout_s\":4,\"paced\":true,\"straggler_nodes\":[{\"ra"
    "nk\":1,\"here\":true},{\"rank\":2,\"here\":false,\"node\":\"node-2\"}]},{\"job\":\"eva"
    "l\",\"ranks\":1,\"live\":0,\"state\":\"failed\",\"failed\":true,\"no_progress_s\":0,\""
    "culprit_ranks\":[],\"generation\":2,\"step_s\":1.0,\"step_rate\":1.0,\"step_spread\":0"
    ",\"step_p99_s\":1.1,\"soft_timeout_s\":60,\"stragglers\":[0]}],\"ranks\":[{\"job\":\"t"
    "orch:127.0.0.1:29500@node-1\",\"rank\":0,\"pid\":101,\"state\":\"blocked\",\"state_for"
    "_s\":10.0,\"hung\":true,\"culprit\":false,\"reason\":\"blocked in futex\"},{\"job\":\""
    "torch:127.0.0.1:29500@node-1\",\"rank\":1,\"pid\":102,\"state\":\"sleeping\",\"state_f"
    "or_s\":10.0,\"hung\":true,\"culprit\":true,\"reason\":\"blocked in clock_nanosleep for"
    " 10.0s\"},{\"job\":\"eval\",\"rank\":0,\"pid\":201,\"state\":\"exited\",\"state_for_s"
    "\":3,\"hung\":false,\"culprit\":false,\"reason\":\"exited: code 1\",\"exited\":true}],"
    "\"cluster\":{\"self\":\"10.0.0.1:7946\",\"incarnation\":3,\"local_health\":0,\"peers\""
    ":[{\"addr\":\"10.0.0.2:7946\",\"state\":\"alive\",\"incarnation\":1,\"state_for_s\":12"
    ".5,\"health\":{\"ranks\":4,\"hung\":1,\"dead\":0,\"culprit_rank\":2}},{\"addr\":\"10.0"
    ".0.3:7946\",\"state\":\"suspect\",\"incarnation\":2,\"state_for_s\":1.0,\"health\":nul"
    "l}]}}";

static const char STATUS_EMPTY[] =
    "{\"ok\":true,\"agent\":{\"pid\":5,\"version\":\"0.1.0\",\"uptime_s\":1,\"soft_timeout_"
    "s\":60,\"soft_timeout_auto\":true,\"hard_timeout_s\":600,\"action\":\"terminate\",\"fe"
    "atures\":{\"programs\":\"raw_tp\"}},\"jobs\":[],\"ranks\":[]}";

static const char EXPLAIN[] =
    "{\"ok\":true,\"rank\":{\"rank\":1,\"job\":\"j1\",\"pid\":102,\"comm\":\"python3\",\"ui"
    "d\":1000,\"state\":\"sleeping\",\"reason\":\"blocked in clock_nanosleep\",\"no_progres"
    "s_s\":12.34,\"hung\":true,\"culprit\":true},\"job\":{\"state\":\"hung\",\"why\":\"rank"
    " 1 is where no other rank waits\",\"culprit_node\":\"node-1\",\"culprit_state\":\"slee"
    "ping\",\"culprit_ranks\":[1],\"culprit_here\":true},\"threads\":[{\"tid\":102,\"comm\""
    ":\"python3\",\"state\":\"S\",\"syscall\":\"clock_nanosleep\",\"in_syscall_s\":12.3,\"w"
    "chan\":\"hrtimer_nanosleep\",\"kernel_stack\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g"
    "\",\"h\",\"i\",\"j\"]},{\"tid\":103,\"comm\":\"pt_thread\",\"state\":\"S\",\"in_syscal"
    "l_s\":0}],\"python_version\":\"3.11.2\",\"python_threads\":[{\"thread_id\":\"0x7f3a1c2"
    "b5740\",\"stack\":[{\"file\":\"train.py\",\"line\":14,\"function\":\"load_batch\"},{\""
    "file\":\"train.py\",\"line\":30,\"function\":\"<module>\"}]},{\"thread_id\":\"0x10\","
    "\"stack\":[],\"truncated\":true}],\"children\":[{\"pid\":300,\"comm\":\"worker\",\"exi"
    "ted\":false},{\"pid\":301,\"comm\":\"w2\",\"exited\":true}],\"signals\":[{\"s_ago\":3."
    "2,\"signal_name\":\"TERM\",\"delivered\":false,\"sender_pid\":55,\"sender_comm\":\"kil"
    "l\"},{\"s_ago\":3.1,\"signal_name\":\"TERM\",\"delivered\":true}],\"job_ranks\":[{\"ra"
    "nk\":0,\"pid\":101,\"state\":\"blocked\",\"reason\":\"futex\",\"culprit\":false}],\"ra"
    "nks_elsewhere\":[{\"rank\":2,\"node\":\"n2\",\"pid\":7,\"state\":\"blocked\",\"reason"
    "\":null,\"culprit\":true}]}";

static const char STACKS[] =
    "{\"ok\":true,\"processes\":[{\"rank\":0,\"job\":\"j1\",\"pid\":101,\"comm\":\"python3"
    "\",\"state\":\"blocked\",\"reason\":\"in futex\",\"threads\":[{\"tid\":101,\"comm\":\""
    "python3\",\"state\":\"S\",\"syscall\":\"futex\",\"wchan\":\"futex_wait\",\"kernel_stac"
    "k\":[\"futex_wait+0x1\",\"do_futex+0x2\"]}],\"python_stack_error\":\"no symbols\"},{\""
    "rank\":-1,\"pid\":555,\"comm\":\"sleep\",\"state\":\"S\",\"threads\":[{\"tid\":555,\"c"
    "omm\":\"sleep\",\"state\":\"S\"}],\"python_version\":\"3.13.0\",\"python_threads\":[{"
    "\"thread_id\":\"0x1\",\"stack\":[{\"file\":\"a.py\",\"line\":null,\"function\":\"f\"}]"
    "}]}],\"not_shown\":4}";

static const char TIMERS[] =
    "{\"ok\":true,\"timers\":[{\"pid\":10,\"comm\":\"averyveryverylongcommname\",\"uid\":0,"
    "\"time_left_s\":1.5,\"signal_name\":\"KILL\",\"source\":\"slot\",\"scope\":\"step\"},{"
    "\"pid\":11,\"uid\":1000,\"time_left_s\":0.25,\"source\":\"fifo\",\"scope\":\"s2\"}]}";

static const char DECISIONS[] =
    "{\"ok\":true,\"decisions\":[{\"at_ms\":1764300000123,\"job\":\"a-very-long-job-name-be"
    "yond-twenty\",\"generation\":2,\"kind\":\"restart\",\"stop\":false,\"resume_step\":40,"
    "\"cause\":\"failure\",\"by\":\"node-1\",\"why\":\"rank 1 died\",\"excluded\":[\"node-2"
    "\",\"node-3\"]},{\"at_ms\":0,\"job\":\"j\",\"generation\":0,\"kind\":\"checkpoint\",\""
    "stop\":true,\"step\":10,\"cause\":\"\"}]}";

static const char EVENT[] =
    "{\"seq\":4,\"ts\":\"2026-11-28T10:00:00.123Z\",\"type\":\"hang\",\"job\":\"j1\",\"rank"
    "s\":[1,2],\"culprit_rank\":1,\"stack\":\"a\\nb\\nc\\n\",\"frames\":[\"x\",\"y\"],\"n\""
    ":3,\"obj\":{\"k\":[1,2]},\"nul\":null,\"empty\":[]}";

static const char WANT_STATUS[] =
    "ftbpfd pid 77, version 0.1.0, up 65s, programs tp_btf, soft 30s, hard 600s (report)\n"
    "\n"
    "JOB                          RANKS  LIVE STATE       NO-PROGRESS  CULPRIT\n"
    "torch:127.0.0.1:29500@node-1     2     2 hung              10.0s  rank 1 on node-1 (th"
    "is host)\n"
    "  why: rank 1 is where no other rank waits\n"
    "  run 2 (a relaunch; the previous run: torch:old)\n"
    "  across 2 hosts: 3 of 4 ranks known\n"
    "  missing: ranks 3\n"
    "  rank 2 on node-2 pid 900 blocked   in recv\n"
    "  generation 1, checkpoint #3 at step 120: saving (1 of 2 ranks here saved)\n"
    "  steps: 0.500s (2.0/s, spread 0.12, p99 0.610s), soft timeout now 4s (its pace); stra"
    "gglers: rank 1, rank 2 on node-2\n"
    "eval                             1     0 failed             0.0s  -\n"
    "  generation 2\n"
    "  steps: 1.000s (1.0/s, spread 0.00, p99 1.100s), soft timeout now 60s; stragglers: ra"
    "nk 0\n"
    "\n"
    "JOB                           RANK      PID STATE           FOR HUNG CULPRIT REASON\n"
    "torch:127.0.0.1:29500@node-1     0      101 blocked       10.0s yes  -       blocked i"
    "n futex\n"
    "torch:127.0.0.1:29500@node-1     1      102 sleeping      10.0s yes  YES     blocked i"
    "n clock_nanosleep for 10.0s\n"
    "eval                             0      201 exited         3.0s no   -       exited: c"
    "ode 1\n";

static const char WANT_STATUS_EMPTY_CLUSTER[] =
    "ftbpfd pid 5, version 0.1.0, up 1s, programs raw_tp, soft auto (at most 60s), hard 600"
    "s (terminate)\n"
    "\n"
    "no ranks adopted on this host\n"
    "cluster: the heartbeat mesh is off (no --bind)\n";

static const char WANT_PEERS[] =
    "cluster: this node 10.0.0.1:7946, incarnation 3, local health 0\n"
    "PEER                   STATE      INC      FOR  RANKS  HUNG  DEAD CULPRIT\n"
    "10.0.0.2:7946          alive        1    12.5s      4     1     0 rank 2\n"
    "10.0.0.3:7946          suspect      2     1.0s      0     0     0 ?\n";

static const char WANT_STATUS_JOB[] =
    "ftbpfd pid 77, version 0.1.0, up 65s, programs tp_btf, soft 30s, hard 600s (report)\n"
    "\n"
    "JOB  RANKS  LIVE STATE       NO-PROGRESS  CULPRIT\n"
    "eval     1     0 failed             0.0s  -\n"
    "  generation 2\n"
    "  steps: 1.000s (1.0/s, spread 0.00, p99 1.100s), soft timeout now 60s; stragglers: ra"
    "nk 0\n"
    "\n"
    "JOB   RANK      PID STATE           FOR HUNG CULPRIT REASON\n"
    "eval     0      201 exited         3.0s no   -       exited: code 1\n";

static const char WANT_EXPLAIN[] =
    "rank 1 of job j1, pid 102 (python3), uid 1000\n"
    "  state: sleeping, blocked in clock_nanosleep\n"
    "  no progress for 12.3s; hung: yes; culprit: YES\n"
    "  job verdict: hung: rank 1 is where no other rank waits\n"
    "  job-wide culprit: rank 1 on node-1 (sleeping), this host\n"
    "\n"
    "threads:\n"
    "  tid 102 python3         state S  syscall clock_nanosleep (12.3s)  wchan hrtimer_nano"
    "sleep\n"
    "      a\n"
    "      b\n"
    "      c\n"
    "      d\n"
    "      e\n"
    "      f\n"
    "      g\n"
    "      h\n"
    "  tid 103 pt_thread       state S  syscall - (0.0s)  wchan -\n"
    "\n"
    "python stacks (CPython 3.11.2):\n"
    "  Thread 0x00007f3a1c2b5740 (most recent call first):\n"
    "    File \"train.py\", line 14 in load_batch\n"
    "    File \"train.py\", line 30 in <module>\n"
    "\n"
    "  Thread 0x0000000000000010 (most recent call first):\n"
    "    ...\n"
    "\n"
    "children:\n"
    "  pid 300 worker\n"
    "  pid 301 w2 (exited)\n"
    "\n"
    "signals (newest last):\n"
    "  3.2s ago SIGTERM sent by pid 55 (kill)\n"
    "  3.1s ago SIGTERM delivered\n"
    "\n"
    "other ranks of the job:\n"
    "  rank 0 pid 101 blocked   futex\n"
    "\n"
    "ranks of the job on other hosts:\n"
    "  rank 2 on n2 pid 7 blocked     <- culprit\n";

static const char WANT_STACKS[] =
    "rank 0 of job j1, pid 101 (python3): blocked, in futex\n"
    "  tid 101 python3         state S  syscall futex  wchan futex_wait\n"
    "      futex_wait+0x1\n"
    "      do_futex+0x2\n"
    "\n"
    "python stacks: unavailable (no symbols)\n"
    "\n"
    "pid 555 (sleep), state S\n"
    "  tid 555 sleep           state S  syscall -  wchan -\n"
    "\n"
    "python stacks (CPython 3.13.0):\n"
    "  Thread 0x0000000000000001 (most recent call first):\n"
    "    File \"a.py\", line 0 in f\n"
    "\n"
    "(4 more ranks not shown: ftbpf stacks PID for one)\n";

static const char WANT_TIMERS[] = "     PID COMM               UID       LEFT SIGNAL SOURCE SCOPE\n"
				  "      10 averyveryverylo      0     1.500s KILL   slot   step\n"
				  "      11 ?                 1000     0.250s ?      fifo   s2\n";

static const char WANT_DECISIONS[] =
    "WHEN                     JOB                   GEN KIND                     STEP CAUSE"
    "       BY               WHY\n"
    "2025-11-28T03:20:00Z     a-very-long-job-name    2 restart                    40 failu"
    "re     node-1           rank 1 died [left out: node-2 node-3]\n"
    "-                        j                       0 checkpoint (stop)          10 -    "
    "       -                \n";

static const char WANT_EVENT[] =
    "2026-11-28T10:00:00.123Z hang             job=j1 culprit_rank=1 stack=a <- b <- c fram"
    "es=x <- y n=3 obj={\"k\":[1,2]} empty=[]\n";

static struct json_object *parse(const char *json)
{
	struct json_object *o = json_tokener_parse(json);

	CU_ASSERT_PTR_NOT_NULL_FATAL(o);
	return o;
}

/* fn's text for the reply o, as a string (caller frees). */
static char *text_of(cli_render_fn fn, struct json_object *o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fn(f, o);
	fclose(f);
	return buf;
}

static void expect_text(cli_render_fn fn, const char *json, const char *want)
{
	struct json_object *o = parse(json);
	char *got = text_of(fn, o);

	CU_ASSERT_STRING_EQUAL(got, want);
	if (strcmp(got, want))
		fprintf(stderr, "\n--- got:\n%s--- want:\n%s---\n", got, want);
	free(got);
	json_object_put(o);
}

static void status_then_cluster(FILE *out, struct json_object *o)
{
	cli_render_status(out, o);
	cli_render_cluster(out, o);
}

static void test_status(void)
{
	expect_text(cli_render_status, STATUS, WANT_STATUS);
	expect_text(status_then_cluster, STATUS_EMPTY, WANT_STATUS_EMPTY_CLUSTER);
	expect_text(cli_cmd_find("peers")->render, STATUS, WANT_PEERS);
}

static void test_status_job_live_check(void)
{
	struct json_object *o = parse(STATUS);
	char *got;

	CU_ASSERT_EQUAL(cli_cmd_status_check(o), CLI_EXIT_HUNG);
	cli_cmd_status_filter(o, "eval", 0);
	CU_ASSERT_TRUE(cli_cmd_status_has_jobs(o));
	got = text_of(cli_render_status, o);
	CU_ASSERT_STRING_EQUAL(got, WANT_STATUS_JOB);
	free(got);
	/* eval failed, but none of its ranks is live: history, not a failure now */
	CU_ASSERT_EQUAL(cli_cmd_status_check(o), 0);
	cli_cmd_status_filter(o, NULL, 1);
	CU_ASSERT_FALSE(cli_cmd_status_has_jobs(o));
	json_object_put(o);

	o = parse(STATUS);
	cli_cmd_status_filter(o, "nosuch", 0);
	CU_ASSERT_FALSE(cli_cmd_status_has_jobs(o));
	json_object_put(o);
	o = parse("{\"ok\":true,\"jobs\":[{\"job\":\"a\",\"live\":1,\"failed\":true}]}");
	CU_ASSERT_EQUAL(cli_cmd_status_check(o), CLI_EXIT_FAILED);
	json_object_put(o);
}

static void test_explain_stacks(void)
{
	expect_text(cli_cmd_find("explain")->render, EXPLAIN, WANT_EXPLAIN);
	expect_text(cli_cmd_find("stacks")->render, STACKS, WANT_STACKS);
}

static void test_tables(void)
{
	expect_text(cli_cmd_find("timers")->render, TIMERS, WANT_TIMERS);
	expect_text(cli_cmd_find("timers")->render, "{\"ok\":true,\"timers\":[]}",
		    "no active timers\n");
	expect_text(cli_cmd_find("decisions")->render, DECISIONS, WANT_DECISIONS);
	expect_text(cli_cmd_find("decisions")->render, "{\"ok\":true,\"decisions\":[]}",
		    "no decisions\n");
	expect_text(cli_render_event, EVENT, WANT_EVENT);
}

static void test_one_liners(void)
{
	expect_text(cli_cmd_find("version")->render,
		    "{\"ok\":true,\"version\":\"0.1.0\",\"protocol\":3}",
		    "ftbpfd 0.1.0 (control protocol v3); ftbpf " FTBPF_VERSION "\n");
	expect_text(cli_cmd_find("checkpoint")->render, "{\"ok\":true,\"job\":\"j1\",\"step\":42}",
		    "checkpoint of j1 requested: every rank acknowledges it at its next step (now "
		    "about 42), then all save at one step (ftbpf decisions)\n");
	expect_text(cli_cmd_find("decisions_reset")->render, "{\"ok\":true,\"job\":\"j1\"}",
		    "the decisions of j1 are forgotten\n");
	expect_text(cli_cmd_find("signal")->render, "{\"ok\":true}", "sent\n");
	expect_text(cli_cmd_find("peers")->render, "{\"ok\":true,\"cluster\":null}",
		    "cluster: the heartbeat mesh is off (no --bind)\n");
}

/* ---- the command table and its parser ---- */
static FILE *sink;

/* Parse a command line given as one string of words; rc is cli_cmd_parse's. */
static int parse_line(const char *line, struct cli_cmd_line *ret)
{
	static char buf[512];
	char *argv[32], *save = NULL;
	int argc = 0;

	snprintf(buf, sizeof(buf), "ftbpf %s", line);
	for (char *w = strtok_r(buf, " ", &save); w && argc < 31; w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	argv[argc] = NULL;
	memset(ret, 0, sizeof(*ret));
	return cli_cmd_parse(argc, argv, "/run/x.sock", ret, sink, sink);
}

static const char *req_str(struct cli_cmd_line *l)
{
	return json_object_to_json_string_ext(l->req, JSON_C_TO_STRING_PLAIN);
}

static void test_parse_flags(void)
{
	struct cli_cmd_line l;

	CU_ASSERT_EQUAL(parse_line("--socket /tmp/a.sock status train --live --check --json", &l),
			0);
	CU_ASSERT_STRING_EQUAL(l.socket, "/tmp/a.sock");
	CU_ASSERT_STRING_EQUAL(l.cmd->name, "status");
	CU_ASSERT_STRING_EQUAL(l.job, "train");
	CU_ASSERT(l.opts.live && l.opts.check && l.opts.json && !l.opts.cluster);
	CU_ASSERT_STRING_EQUAL(req_str(&l), "{\"cmd\":\"status\"}");
	cli_cmd_line_fini(&l);

	CU_ASSERT_EQUAL(parse_line("events -f --limit 20", &l), 0);
	CU_ASSERT_STRING_EQUAL(l.socket, "/run/x.sock");
	CU_ASSERT_STRING_EQUAL(req_str(&l), "{\"cmd\":\"events\",\"follow\":true,\"limit\":20}");
	cli_cmd_line_fini(&l);
	CU_ASSERT_EQUAL(parse_line("events", &l), 0);
	CU_ASSERT_STRING_EQUAL(req_str(&l), "{\"cmd\":\"events\",\"follow\":false}");
	cli_cmd_line_fini(&l);

	/* a flag of one command is not another's */
	CU_ASSERT_EQUAL(parse_line("events --cluster", &l), -EINVAL);
	CU_ASSERT_EQUAL(parse_line("status --limit 3", &l), -EINVAL);
	CU_ASSERT_EQUAL(parse_line("events --limit 0", &l), -EINVAL);
	CU_ASSERT_EQUAL(parse_line("events --limit 1000001", &l), -EINVAL);
	CU_ASSERT_EQUAL(parse_line("events --limit x", &l), -EINVAL);
	CU_ASSERT_EQUAL(parse_line("events --limit", &l), -EINVAL);
	CU_ASSERT_EQUAL(parse_line("status a b", &l), -EINVAL);
}

static void test_parse_arguments(void)
{
	struct cli_cmd_line l;

	CU_ASSERT_EQUAL(parse_line("signal 102 TERM", &l), 0);
	CU_ASSERT_STRING_EQUAL(req_str(&l), "{\"cmd\":\"signal\",\"pid\":102,\"signal\":\"TERM\"}");
	cli_cmd_line_fini(&l);
	CU_ASSERT_EQUAL(parse_line("stacks 101", &l), 0);
	CU_ASSERT_STRING_EQUAL(req_str(&l), "{\"cmd\":\"stacks\",\"pid\":101}");
	cli_cmd_line_fini(&l);
	CU_ASSERT_EQUAL(parse_line("stacks torch:1@h --json", &l), 0);
	CU_ASSERT_STRING_EQUAL(req_str(&l), "{\"cmd\":\"stacks\",\"job\":\"torch:1@h\"}");
	CU_ASSERT_TRUE(l.opts.json);
	cli_cmd_line_fini(&l);
	CU_ASSERT_EQUAL(parse_line("decisions reset j1", &l), 0);
	CU_ASSERT_STRING_EQUAL(req_str(&l), "{\"cmd\":\"decisions_reset\",\"job\":\"j1\"}");
	cli_cmd_line_fini(&l);

	CU_ASSERT_EQUAL(parse_line("explain", &l), -EINVAL);
	CU_ASSERT_EQUAL(parse_line("explain abc", &l), -EINVAL);
	CU_ASSERT_EQUAL(parse_line("signal 102", &l), -EINVAL);
	CU_ASSERT_EQUAL(parse_line("stacks", &l), -EINVAL);
	CU_ASSERT_EQUAL(parse_line("checkpoint", &l), -EINVAL);
	CU_ASSERT_EQUAL(parse_line("stacks 101 j2", &l), -EINVAL);
	CU_ASSERT_EQUAL(parse_line("nosuch", &l), -EINVAL);
	CU_ASSERT_EQUAL(parse_line("register", &l), -EINVAL); /* not a CLI command */
	CU_ASSERT_EQUAL(parse_line("", &l), -EINVAL);
	CU_ASSERT_EQUAL(parse_line("--bogus status", &l), -EINVAL);

	CU_ASSERT_EQUAL(parse_line("--help", &l), 0);
	CU_ASSERT_TRUE(l.exit_now);
	CU_ASSERT_EQUAL(parse_line("help", &l), 0);
	CU_ASSERT_TRUE(l.exit_now);
	CU_ASSERT_EQUAL(parse_line("--version", &l), 0);
	CU_ASSERT_TRUE(l.exit_now);
}

/* Every CLI command of the protocol's table has an entry here, and each of its flags is in
 * its synopsis (what --help and ftbpf(1) print). */
static void test_table_matches_synopses(void)
{
	for (int i = 0; i < ctl_ncmds; i++) {
		const struct cli_cmd *c = cli_cmd_find(ctl_cmds[i].name);

		if (!ctl_cmds[i].synopsis) {
			CU_ASSERT_PTR_NULL(c);
			continue;
		}
		CU_ASSERT_PTR_NOT_NULL_FATAL(c);
		CU_ASSERT(c->render || !strcmp(c->name, "events"));
		for (const struct cli_flag *f = c->flags; f && f->name; f++)
			CU_ASSERT_PTR_NOT_NULL(strstr(ctl_cmds[i].synopsis, f->name));
		if (c->job_filter)
			CU_ASSERT_PTR_NOT_NULL(strstr(ctl_cmds[i].synopsis, "[JOB]"));
	}
	CU_ASSERT_EQUAL(cli_cmd_count, 11);
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	sink = fopen("/dev/null", "w");
	if (!sink || CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("cli_render", NULL, NULL);
	CU_add_test(s, "status, its cluster view, peers", test_status);
	CU_add_test(s, "status JOB, --live, --check", test_status_job_live_check);
	CU_add_test(s, "explain and stacks", test_explain_stacks);
	CU_add_test(s, "timers, decisions, events", test_tables);
	CU_add_test(s, "version, checkpoint, reset, signal", test_one_liners);
	CU_add_test(s, "each command's flags", test_parse_flags);
	CU_add_test(s, "each command's arguments", test_parse_arguments);
	CU_add_test(s, "the table and the synopses", test_table_matches_synopses);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	fclose(sink);
	return (int)fails;
}
