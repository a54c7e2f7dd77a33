/*
 * ftbpf: command-line client of ftbpfd. Talks the JSON-lines control protocol over the Unix
 * socket ($FTBPF_SOCKET, --socket, or /run/ftbpf/ftbpfd.sock) and prints tables or raw JSON.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/config.h"
#include "lib/pyfmt.h"
#include "lib/textsafe.h"
#include "client/ctl_client.h"
#include "proto/ctl_proto.h"

#define EXIT_USAGE   2
#define EXIT_CONNECT 3
#define EXIT_HUNG    4 /* status --check: a job is hung */
#define EXIT_FAILED  5 /* status --check: a job failed (none hung) */

/* The commands and their synopses come from the protocol's table (proto/ctl_proto.c). */
static void usage(FILE *f)
{
	fprintf(f, "Usage: ftbpf [--socket PATH] COMMAND [ARGS]\n\nCommands:\n");
	for (int i = 0; i < ctl_ncmds; i++) {
		const char *h = ctl_cmds[i].help, *nl;
		int first = 1;

		if (!ctl_cmds[i].synopsis)
			continue;
		if (strlen(ctl_cmds[i].synopsis) > 28) { /* the description on the next line */
			fprintf(f, "  %s\n", ctl_cmds[i].synopsis);
			first = 0;
		}
		do { /* the description's lines, aligned after the synopsis */
			nl = strchr(h, '\n');
			fprintf(f, "  %-28s %.*s\n", first ? ctl_cmds[i].synopsis : "",
				nl ? (int)(nl - h) : (int)strlen(h), h);
			h = nl ? nl + 1 : h;
			first = 0;
		} while (nl);
	}
	fprintf(f, "\nThe socket is $FTBPF_SOCKET, else " FTBPF_DEFAULT_SOCKET ".\n"
		   "Unprivileged users see and act on their own processes only.\n"
		   "Exit status: 0 ok, 1 the agent refused or failed the request, 2 usage,\n"
		   "3 no agent; status --check: 4 a job is hung, 5 a job failed.\n"
		   "ftbpf --version prints this tool's version.\n");
}

/* Short names for the field getters (absent or null: NULL / 0 / def). */
static const char *gs(struct json_object *o, const char *k)
{
	return ctl_get_str(o, k);
}

static double gd(struct json_object *o, const char *k)
{
	return ctl_get_dbl(o, k, 0);
}

static int64_t gi(struct json_object *o, const char *k, int64_t def)
{
	return ctl_get_int(o, k, def);
}

static int gb(struct json_object *o, const char *k)
{
	return ctl_get_bool(o, k);
}

static int check_ok(struct json_object *o)
{
	if (!o) {
		fprintf(stderr, "ftbpf: no answer from the agent\n");
		return 1;
	}
	if (!gb(o, "ok")) {
		fprintf(stderr, "ftbpf: %s (%s)\n",
			gs(o, "error") ? gs(o, "error") : "request failed",
			gs(o, "code") ? gs(o, "code") : "?");
		return 1;
	}
	return 0;
}

/* The heartbeat mesh's view: from "peers" ({"cluster":...}) or from status (same key). */
static void print_cluster(struct json_object *o)
{
	struct json_object *c, *peers, *h, *cr;

	if (!json_object_object_get_ex(o, "cluster", &c) || !c) {
		printf("cluster: the heartbeat mesh is off (no --bind)\n");
		return;
	}
	printf("cluster: this node %s, incarnation %d, local health %d\n", gs(c, "self"),
	       (int)gi(c, "incarnation", 0), (int)gi(c, "local_health", 0));
	printf("%-22s %-8s %5s %8s  %5s %5s %5s %s\n", "PEER", "STATE", "INC", "FOR", "RANKS",
	       "HUNG", "DEAD", "CULPRIT");
	if (!json_object_object_get_ex(c, "peers", &peers))
		return;
	for (size_t i = 0; i < json_object_array_length(peers); i++) {
		struct json_object *p = json_object_array_get_idx(peers, i);
		char culprit[16] = "-";

		h = NULL;
		json_object_object_get_ex(p, "health", &h);
		if (h && json_object_object_get_ex(h, "culprit_rank", &cr) && cr)
			snprintf(culprit, sizeof(culprit), "rank %d",
				 (int)gi(h, "culprit_rank", 0));
		printf("%-22s %-8s %5d %7.1fs  %5d %5d %5d %s\n", gs(p, "addr"), gs(p, "state"),
		       (int)gi(p, "incarnation", 0), gd(p, "state_for_s"),
		       h ? (int)gi(h, "ranks", 0) : 0, h ? (int)gi(h, "hung", 0) : 0,
		       h ? (int)gi(h, "dead", 0) : 0, h ? culprit : "?");
	}
}

/* The widest "job" of the objects in arr (at least min): names are printed in full. */
static int name_width(struct json_object *arr, int min)
{
	int w = min;

	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		const char *s = gs(json_object_array_get_idx(arr, i), "job");
		int l = s ? (int)strlen(s) : 0;

		if (l > w)
			w = l;
	}
	return w;
}

/* status JOB, --live: keep that job's entries only, and only what is live. */
static void status_filter(struct json_object *o, const char *job, int live)
{
	static const char *const keys[] = {"jobs", "ranks"};

	for (size_t k = 0; k < 2; k++) {
		struct json_object *arr, *out = json_object_new_array();

		if (!json_object_object_get_ex(o, keys[k], &arr) ||
		    !json_object_is_type(arr, json_type_array)) {
			json_object_put(out);
			continue;
		}
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			struct json_object *e = json_object_array_get_idx(arr, i);

			if (job && (!gs(e, "job") || strcmp(gs(e, "job"), job)))
				continue;
			if (live && (k == 0 ? gi(e, "live", 0) == 0 : gb(e, "exited")))
				continue;
			json_object_array_add(out, json_object_get(e));
		}
		json_object_object_add(o, keys[k], out);
	}
}

/* Is a job left in the status? */
static int status_has_jobs(struct json_object *o)
{
	struct json_object *jobs;

	return json_object_object_get_ex(o, "jobs", &jobs) &&
	       json_object_is_type(jobs, json_type_array) && json_object_array_length(jobs) > 0;
}

/* A job's ranks on other hosts (the job across hosts), and the ranks no host reported. */
static void print_elsewhere(struct json_object *j)
{
	struct json_object *re;

	if (gi(j, "hosts", 0) > 1)
		printf("  across %lld hosts: %lld of %lld ranks known\n",
		       (long long)gi(j, "hosts", 0), (long long)gi(j, "job_ranks", 0),
		       (long long)gi(j, "world_size", 0));
	if (gs(j, "missing_ranks"))
		printf("  missing: ranks %s\n", gs(j, "missing_ranks"));
	if (!json_object_object_get_ex(j, "ranks_elsewhere", &re))
		return;
	for (size_t i = 0; i < json_object_array_length(re); i++) {
		struct json_object *x = json_object_array_get_idx(re, i);

		printf("  rank %lld on %s pid %lld %-9s %s%s\n", (long long)gi(x, "rank", -1),
		       gs(x, "node"), (long long)gi(x, "pid", 0), gs(x, "state"),
		       gs(x, "reason") ? gs(x, "reason") : "",
		       gb(x, "culprit") ? "  <- culprit" : "");
	}
}

/* A job's step cadence and stragglers (docs/detection.md), when known. */
static void print_cadence(struct json_object *j)
{
	struct json_object *st = NULL;
	size_t n;

	if (gd(j, "step_s") <= 0)
		return;
	printf("  steps: %.3fs (%.1f/s, spread %.2f, p99 %.3fs), soft timeout now %gs%s",
	       gd(j, "step_s"), gd(j, "step_rate"), gd(j, "step_spread"), gd(j, "step_p99_s"),
	       gd(j, "soft_timeout_s"), gb(j, "paced") ? " (its pace)" : "");
	/* every straggler of the job, with its host when it runs elsewhere */
	if (json_object_object_get_ex(j, "straggler_nodes", &st) &&
	    json_object_is_type(st, json_type_array)) {
		n = json_object_array_length(st);
		for (size_t k = 0; k < n; k++) {
			struct json_object *x = json_object_array_get_idx(st, k);

			printf("%srank %d", k ? ", " : "; stragglers: ", (int)gi(x, "rank", -1));
			if (!gb(x, "here"))
				printf(" on %s", gs(x, "node") ? gs(x, "node") : "?");
		}
	} else {
		json_object_object_get_ex(j, "stragglers", &st);
		n = st && json_object_is_type(st, json_type_array) ? json_object_array_length(st)
								   : 0;
		for (size_t k = 0; k < n; k++)
			printf("%srank %d", k ? ", " : "; stragglers: ",
			       json_object_get_int(json_object_array_get_idx(st, k)));
	}
	printf("\n");
}

static void print_status(struct json_object *o)
{
	struct json_object *agent, *jobs, *ranks;
	size_t n;

	if (json_object_object_get_ex(o, "agent", &agent)) {
		struct json_object *f = NULL;

		json_object_object_get_ex(agent, "features", &f);
		char soft[48];

		printf("ftbpfd pid %lld, version %s, up %.0fs, programs %s, soft %s, hard %gs "
		       "(%s)\n",
		       (long long)gi(agent, "pid", 0), gs(agent, "version"), gd(agent, "uptime_s"),
		       f ? gs(f, "programs") : "?",
		       config_soft_words(gb(agent, "soft_timeout_auto"),
					 gd(agent, "soft_timeout_s"), soft, sizeof(soft)),
		       gd(agent, "hard_timeout_s"), gs(agent, "action"));
	}
	if (json_object_object_get_ex(o, "jobs", &jobs) && (n = json_object_array_length(jobs))) {
		int w = name_width(jobs, 3);

		printf("\n%-*s %5s %5s %-10s %12s  %s\n", w, "JOB", "RANKS", "LIVE", "STATE",
		       "NO-PROGRESS", "CULPRIT");
		for (size_t i = 0; i < n; i++) {
			struct json_object *j = json_object_array_get_idx(jobs, i), *c;
			char cul[128] = "-";

			if (json_object_object_get_ex(j, "culprit_ranks", &c) &&
			    json_object_array_length(c)) {
				size_t len = 0;

				for (size_t k = 0; k < json_object_array_length(c) && len < 100;
				     k++)
					len += snprintf(
					    cul + len, sizeof(cul) - len, "%srank %d",
					    k ? ", " : "",
					    json_object_get_int(json_object_array_get_idx(c, k)));
			}
			if (gs(j, "culprit_node") && strcmp(cul, "-"))
				snprintf(cul + strlen(cul), sizeof(cul) - strlen(cul), " on %s%s",
					 gs(j, "culprit_node"),
					 gb(j, "culprit_here") ? " (this host)" : "");
			/* the job's name in full: it is what `ftbpf status JOB` and
			 * `ftbpf checkpoint JOB` take */
			printf("%-*s %5lld %5lld %-10s %11.1fs  %s\n", w, gs(j, "job"),
			       (long long)gi(j, "ranks", 0), (long long)gi(j, "live", 0),
			       gs(j, "state"), gd(j, "no_progress_s"), cul);
			if (gs(j, "why"))
				printf("  why: %s\n", gs(j, "why"));
			if (gi(j, "run", 1) > 1)
				printf("  run %lld (a relaunch; the previous run: %s)\n",
				       (long long)gi(j, "run", 1),
				       gs(j, "previous_run") ? gs(j, "previous_run") : "?");
			print_elsewhere(j);
			if (json_object_object_get_ex(j, "checkpoint", &c) && c)
				printf("  generation %lld, checkpoint #%lld at step %lld: %s "
				       "(%lld of %lld ranks here saved)\n",
				       (long long)gi(j, "generation", 0), (long long)gi(c, "id", 0),
				       (long long)gi(c, "target", -1), gs(c, "state"),
				       (long long)gi(c, "ranks_saved", 0),
				       (long long)gi(c, "ranks", 0));
			else if (gi(j, "generation", 0) > 0)
				printf("  generation %lld\n", (long long)gi(j, "generation", 0));
			print_cadence(j);
		}
	}
	if (json_object_object_get_ex(o, "ranks", &ranks) &&
	    (n = json_object_array_length(ranks))) {
		int w = name_width(ranks, 3);

		printf("\n%-*s %5s %8s %-9s %9s %-4s %-7s %s\n", w, "JOB", "RANK", "PID", "STATE",
		       "FOR", "HUNG", "CULPRIT", "REASON");
		for (size_t i = 0; i < n; i++) {
			struct json_object *r = json_object_array_get_idx(ranks, i);

			printf("%-*s %5lld %8lld %-9s %8.1fs %-4s %-7s %s\n", w, gs(r, "job"),
			       (long long)gi(r, "rank", -1), (long long)gi(r, "pid", 0),
			       gs(r, "state"), gd(r, "state_for_s"), gb(r, "hung") ? "yes" : "no",
			       gb(r, "culprit") ? "YES" : "-", gs(r, "reason"));
		}
	} else {
		printf("\nno ranks adopted on this host\n");
	}
}

/* A value on one line: strings with their line breaks shown as " <- " (stack frames), arrays
 * of strings joined the same way, anything else as compact JSON. */
static void print_flat(struct json_object *v)
{
	if (json_object_is_type(v, json_type_string)) {
		for (const char *p = json_object_get_string(v); *p; p++)
			if (*p == '\n')
				fputs(p[1] ? " <- " : "", stdout);
			else
				putchar(*p);
	} else if (json_object_is_type(v, json_type_array) && json_object_array_length(v) &&
		   json_object_is_type(json_object_array_get_idx(v, 0), json_type_string)) {
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			if (i)
				fputs(" <- ", stdout);
			print_flat(json_object_array_get_idx(v, i));
		}
	} else {
		fputs(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN), stdout);
	}
}

static void print_event(struct json_object *e)
{
	const char *type = gs(e, "type");
	const char *skip[] = {"seq", "ts", "type", "ranks", NULL};

	printf("%s %-16s", gs(e, "ts"), type ? type : "?");
	json_object_object_foreach (e, key, val) {
		int s = 0;

		for (int i = 0; skip[i]; i++)
			s |= !strcmp(key, skip[i]);
		if (s || !val)
			continue;
		printf(" %s=", key);
		print_flat(val);
	}
	printf("\n");
}

static void print_timers(struct json_object *o)
{
	struct json_object *arr;
	size_t n;

	if (!json_object_object_get_ex(o, "timers", &arr) || !(n = json_object_array_length(arr))) {
		printf("no active timers\n");
		return;
	}
	printf("%8s %-15s %6s %10s %-6s %-6s %s\n", "PID", "COMM", "UID", "LEFT", "SIGNAL",
	       "SOURCE", "SCOPE");
	for (size_t i = 0; i < n; i++) {
		struct json_object *t = json_object_array_get_idx(arr, i);

		printf("%8lld %-15.15s %6lld %9.3fs %-6s %-6s %s\n", (long long)gi(t, "pid", 0),
		       gs(t, "comm") ? gs(t, "comm") : "?", (long long)gi(t, "uid", 0),
		       gd(t, "time_left_s"), gs(t, "signal_name") ? gs(t, "signal_name") : "?",
		       gs(t, "source"), gs(t, "scope"));
	}
}

static void print_line(void *ctx, const char *line)
{
	printf("%s%s\n", *line ? (const char *)ctx : "", line);
}

/* The rank's Python stacks, in faulthandler's layout (what a Python user reads best). */
static void print_python(struct json_object *o)
{
	struct json_object *th;

	if (gs(o, "python_stack_error"))
		printf("\npython stacks: unavailable (%s)\n", gs(o, "python_stack_error"));
	if (!json_object_object_get_ex(o, "python_threads", &th) || !json_object_array_length(th))
		return;
	printf("\npython stacks (CPython %s):\n",
	       gs(o, "python_version") ? gs(o, "python_version") : "?");
	pyfmt_lines(th, print_line, "  ");
}

/* ftbpf stacks: each process, every thread's kernel stack, then its Python stacks. */
static void print_stacks(struct json_object *o)
{
	struct json_object *procs, *th;

	if (!json_object_object_get_ex(o, "processes", &procs))
		return;
	for (size_t i = 0; i < json_object_array_length(procs); i++) {
		struct json_object *p = json_object_array_get_idx(procs, i);

		if (i)
			printf("\n");
		if (gi(p, "rank", -1) >= 0)
			printf("rank %lld of job %s, pid %lld (%s): %s, %s\n",
			       (long long)gi(p, "rank", -1), gs(p, "job"),
			       (long long)gi(p, "pid", 0), gs(p, "comm"), gs(p, "state"),
			       gs(p, "reason"));
		else
			printf("pid %lld (%s), state %s\n", (long long)gi(p, "pid", 0),
			       gs(p, "comm"), gs(p, "state"));
		if (json_object_object_get_ex(p, "threads", &th))
			for (size_t t = 0; t < json_object_array_length(th); t++) {
				struct json_object *x = json_object_array_get_idx(th, t), *ks;

				printf("  tid %lld %-15s state %s  syscall %s  wchan %s\n",
				       (long long)gi(x, "tid", 0), gs(x, "comm"), gs(x, "state"),
				       gs(x, "syscall") ? gs(x, "syscall") : "-",
				       gs(x, "wchan") ? gs(x, "wchan") : "-");
				if (json_object_object_get_ex(x, "kernel_stack", &ks))
					for (size_t k = 0; k < json_object_array_length(ks); k++)
						printf("      %s\n",
						       json_object_get_string(
							   json_object_array_get_idx(ks, k)));
			}
		print_python(p);
	}
	if (gi(o, "not_shown", 0) > 0)
		printf("\n(%lld more ranks not shown: ftbpf stacks PID for one)\n",
		       (long long)gi(o, "not_shown", 0));
}

static void print_explain(struct json_object *o)
{
	struct json_object *r, *job = NULL, *th, *ch, *sigs, *jr;

	if (json_object_object_get_ex(o, "rank", &r))
		printf("rank %lld of job %s, pid %lld (%s), uid %lld\n  state: %s, %s\n"
		       "  no progress for %.1fs; hung: %s; culprit: %s\n",
		       (long long)gi(r, "rank", -1), gs(r, "job"), (long long)gi(r, "pid", 0),
		       gs(r, "comm"), (long long)gi(r, "uid", 0), gs(r, "state"), gs(r, "reason"),
		       gd(r, "no_progress_s"), gb(r, "hung") ? "yes" : "no",
		       gb(r, "culprit") ? "YES" : "no");
	if (json_object_object_get_ex(o, "job", &job) && gs(job, "why"))
		printf("  job verdict: %s: %s\n", gs(job, "state"), gs(job, "why"));
	if (job && gs(job, "culprit_node") && gs(job, "culprit_state")) {
		struct json_object *cr = NULL;

		json_object_object_get_ex(job, "culprit_ranks", &cr);
		printf("  job-wide culprit: rank %d on %s (%s)%s\n",
		       cr && json_object_array_length(cr)
			   ? json_object_get_int(json_object_array_get_idx(cr, 0))
			   : -1,
		       gs(job, "culprit_node"), gs(job, "culprit_state"),
		       gb(job, "culprit_here") ? ", this host" : "");
	}
	if (json_object_object_get_ex(o, "threads", &th)) {
		printf("\nthreads:\n");
		for (size_t i = 0; i < json_object_array_length(th); i++) {
			struct json_object *t = json_object_array_get_idx(th, i), *ks;

			printf("  tid %lld %-15s state %s  syscall %s (%.1fs)  wchan %s\n",
			       (long long)gi(t, "tid", 0), gs(t, "comm"), gs(t, "state"),
			       gs(t, "syscall") ? gs(t, "syscall") : "-", gd(t, "in_syscall_s"),
			       gs(t, "wchan") ? gs(t, "wchan") : "-");
			if (json_object_object_get_ex(t, "kernel_stack", &ks))
				for (size_t k = 0; k < json_object_array_length(ks) && k < 8; k++)
					printf("      %s\n", json_object_get_string(
								 json_object_array_get_idx(ks, k)));
		}
	}
	print_python(o);
	if (json_object_object_get_ex(o, "children", &ch) && json_object_array_length(ch)) {
		printf("\nchildren:\n");
		for (size_t i = 0; i < json_object_array_length(ch); i++) {
			struct json_object *c = json_object_array_get_idx(ch, i);

			printf("  pid %lld %s%s\n", (long long)gi(c, "pid", 0), gs(c, "comm"),
			       gb(c, "exited") ? " (exited)" : "");
		}
	}
	if (json_object_object_get_ex(o, "signals", &sigs) && json_object_array_length(sigs)) {
		printf("\nsignals (newest last):\n");
		for (size_t i = 0; i < json_object_array_length(sigs); i++) {
			struct json_object *s = json_object_array_get_idx(sigs, i);

			printf("  %.1fs ago SIG%s %s", gd(s, "s_ago"), gs(s, "signal_name"),
			       gb(s, "delivered") ? "delivered" : "sent");
			if (!gb(s, "delivered"))
				printf(" by pid %lld (%s)", (long long)gi(s, "sender_pid", 0),
				       gs(s, "sender_comm"));
			printf("\n");
		}
	}
	if (json_object_object_get_ex(o, "job_ranks", &jr) && json_object_array_length(jr)) {
		printf("\nother ranks of the job:\n");
		for (size_t i = 0; i < json_object_array_length(jr); i++) {
			struct json_object *x = json_object_array_get_idx(jr, i);

			printf("  rank %lld pid %lld %-9s %s%s\n", (long long)gi(x, "rank", -1),
			       (long long)gi(x, "pid", 0), gs(x, "state"), gs(x, "reason"),
			       gb(x, "culprit") ? "  <- culprit" : "");
		}
	}
	if (json_object_object_get_ex(o, "ranks_elsewhere", &jr) && json_object_array_length(jr)) {
		printf("\nranks of the job on other hosts:\n");
		for (size_t i = 0; i < json_object_array_length(jr); i++) {
			struct json_object *x = json_object_array_get_idx(jr, i);

			printf("  rank %lld on %s pid %lld %-9s %s%s\n",
			       (long long)gi(x, "rank", -1), gs(x, "node"),
			       (long long)gi(x, "pid", 0), gs(x, "state"),
			       gs(x, "reason") ? gs(x, "reason") : "",
			       gb(x, "culprit") ? "  <- culprit" : "");
		}
	}
}

static void print_decisions(struct json_object *o)
{
	struct json_object *arr;
	size_t n;

	if (!json_object_object_get_ex(o, "decisions", &arr) ||
	    !(n = json_object_array_length(arr))) {
		printf("no decisions\n");
		return;
	}
	printf("%-24s %-20s %4s %-20s %8s %-11s %-16s %s\n", "WHEN", "JOB", "GEN", "KIND", "STEP",
	       "CAUSE", "BY", "WHY");
	for (size_t i = 0; i < n; i++) {
		struct json_object *d = json_object_array_get_idx(arr, i), *ex;
		int64_t ms = gi(d, "at_ms", 0), step = gi(d, "step", gi(d, "resume_step", -1));
		time_t t = (time_t)(ms / 1000);
		char when[32] = "-", kind[32];
		struct tm tm;

		if (ms && gmtime_r(&t, &tm))
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		snprintf(kind, sizeof(kind), "%s%s", gs(d, "kind"), gb(d, "stop") ? " (stop)" : "");
		printf("%-24s %-20.20s %4lld %-20s %8lld %-11s %-16.16s %s", when, gs(d, "job"),
		       (long long)gi(d, "generation", 0), kind, (long long)step,
		       gs(d, "cause") && *gs(d, "cause") ? gs(d, "cause") : "-",
		       gs(d, "by") ? gs(d, "by") : "-", gs(d, "why") ? gs(d, "why") : "");
		if (json_object_object_get_ex(d, "excluded", &ex) && json_object_array_length(ex)) {
			printf(" [left out:");
			for (size_t k = 0; k < json_object_array_length(ex); k++)
				printf(" %s",
				       json_object_get_string(json_object_array_get_idx(ex, k)));
			printf("]");
		}
		printf("\n");
	}
}

/* status --check: 0 when no live job is hung or failed, EXIT_HUNG when one is hung, else
 * EXIT_FAILED when one failed (for scripts and health probes). A job whose ranks all ended
 * (finished, failed, preempted, killed...) is history: its events and status say how. */
static int status_check(struct json_object *o)
{
	struct json_object *jobs;
	int hung = 0, failed = 0;

	if (json_object_object_get_ex(o, "jobs", &jobs) &&
	    json_object_is_type(jobs, json_type_array))
		for (size_t k = 0; k < json_object_array_length(jobs); k++) {
			struct json_object *j = json_object_array_get_idx(jobs, k);

			if (gi(j, "live", 0) <= 0)
				continue;
			hung |= gb(j, "hung");
			failed |= gb(j, "failed");
		}
	return hung ? EXIT_HUNG : failed ? EXIT_FAILED : 0;
}

/* ---- what the agent says is other users' text: made terminal-safe on its way out ---- */
static struct textsafe out_ts;
static FILE *out_real;

static int out_emit(void *ctx, const char *b, size_t n)
{
	(void)ctx;
	return fwrite(b, 1, n, out_real) == n ? 0 : -1;
}

static ssize_t out_write(void *c, const char *b, size_t n)
{
	(void)c;
	if (textsafe_write(&out_ts, b, n, 0, out_emit, NULL) < 0 || fflush(out_real))
		return -1;
	return (ssize_t)n;
}

static int out_close(void *c)
{
	(void)c;
	textsafe_write(&out_ts, "", 0, 1, out_emit, NULL);
	return fflush(out_real) ? -1 : 0;
}

/* From here on, stdout escapes control bytes, C1 controls, bidi overrides and bytes that
 * are not UTF-8 (job names, comms and stacks come from other users' processes). */
static void safe_stdout(int json)
{
	cookie_io_functions_t io = {.write = out_write, .close = out_close};
	FILE *f;

	out_ts.mode = json ? TEXTSAFE_JSON : TEXTSAFE_TEXT;
	out_real = fdopen(dup(STDOUT_FILENO), "w");
	f = out_real ? fopencookie(NULL, "w", io) : NULL;
	if (!f)
		return; /* as it was: better unfiltered output than none */
	setvbuf(f, NULL, _IOLBF, 0);
	stdout = f;
}

int main(int argc, char **argv)
{
	const char *sock = getenv("FTBPF_SOCKET");
	int json = 0, follow = 0, limit = 0, cluster = 0, check = 0, live = 0, i = 1, rc;
	const char *job_filter = NULL;
	const struct ctl_cmd_info *info;
	const char *cmd;
	struct json_object *req, *o = NULL;
	struct ctl_conn *conn;
	char *end;

	if (!sock || !*sock)
		sock = FTBPF_DEFAULT_SOCKET;
	while (i < argc && !strncmp(argv[i], "--", 2)) {
		if (!strcmp(argv[i], "--socket") && i + 1 < argc) {
			sock = argv[i + 1];
			i += 2;
		} else if (!strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--version")) {
			printf("ftbpf %s\n", FTBPF_VERSION);
			return 0;
		} else {
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cmd = argv[i++];
	if (!strcmp(cmd, "decisions") && i < argc && !strcmp(argv[i], "reset")) {
		cmd = "decisions_reset"; /* ftbpf decisions reset JOB */
		i++;
	}
	if (!strcmp(cmd, "help") || !strcmp(cmd, "-h")) {
		usage(stdout);
		return 0;
	}
	info = ctl_cmd_find(cmd);
	if (!info || !info->synopsis) {
		fprintf(stderr, "ftbpf: unknown command '%s'\n", cmd);
		usage(stderr);
		return EXIT_USAGE;
	}
	req = json_object_new_object();
	json_object_object_add(req, "cmd", json_object_new_string(cmd));
	for (; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--follow") || !strcmp(argv[i], "-f"))
			follow = 1;
		else if (!strcmp(argv[i], "--cluster") && !strcmp(cmd, "status"))
			cluster = 1;
		else if (!strcmp(argv[i], "--check") && !strcmp(cmd, "status"))
			check = 1;
		else if (!strcmp(argv[i], "--live") && !strcmp(cmd, "status"))
			live = 1;
		else if (!strcmp(cmd, "status") && !job_filter && argv[i][0] != '-')
			job_filter = argv[i];
		else if (!strcmp(argv[i], "--limit") && !strcmp(cmd, "events")) {
			long n = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : -1;

			if (i + 1 >= argc || *end || n <= 0 || n > 1000000) {
				fprintf(stderr,
					"ftbpf: --limit needs a number of events (1-1000000)\n");
				return EXIT_USAGE;
			}
			limit = (int)n;
			i++;
		} else if (info && (info->args & CTL_ARG_PID) &&
			   !json_object_object_get_ex(req, "pid", NULL)) {
			long pid = strtol(argv[i], &end, 10);

			if (*end || pid <= 0) {
				fprintf(stderr, "ftbpf: '%s' is not a pid\n", argv[i]);
				return EXIT_USAGE;
			}
			json_object_object_add(req, "pid", json_object_new_int((int)pid));
		} else if (info && (info->args & CTL_ARG_TARGET) &&
			   !json_object_object_get_ex(req, "pid", NULL) &&
			   !json_object_object_get_ex(req, "job", NULL)) {
			long pid = strtol(argv[i], &end, 10); /* a number is a pid, else a job */

			if (!*end && pid > 0)
				json_object_object_add(req, "pid", json_object_new_int((int)pid));
			else
				json_object_object_add(req, "job", json_object_new_string(argv[i]));
		} else if (info && (info->args & CTL_ARG_JOB) &&
			   !json_object_object_get_ex(req, "job", NULL)) {
			json_object_object_add(req, "job", json_object_new_string(argv[i]));
		} else if (info && (info->args & CTL_ARG_SIGNAL) &&
			   !json_object_object_get_ex(req, "signal", NULL)) {
			json_object_object_add(req, "signal", json_object_new_string(argv[i]));
		} else {
			fprintf(stderr, "ftbpf: unexpected argument '%s'\n", argv[i]);
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if ((info->args & CTL_ARG_PID) && !json_object_object_get_ex(req, "pid", NULL)) {
		fprintf(stderr, "ftbpf: %s needs a PID\n", cmd);
		return EXIT_USAGE;
	}
	if ((info->args & CTL_ARG_JOB) && !json_object_object_get_ex(req, "job", NULL)) {
		fprintf(stderr, "ftbpf: %s needs a JOB\n", cmd);
		return EXIT_USAGE;
	}
	if ((info->args & CTL_ARG_TARGET) && !json_object_object_get_ex(req, "pid", NULL) &&
	    !json_object_object_get_ex(req, "job", NULL)) {
		fprintf(stderr, "ftbpf: %s needs a JOB or a PID\n", cmd);
		return EXIT_USAGE;
	}
	if ((info->args & CTL_ARG_SIGNAL) && !json_object_object_get_ex(req, "signal", NULL)) {
		fprintf(stderr, "ftbpf: %s needs a SIGNAL\n", cmd);
		return EXIT_USAGE;
	}
	if (!strcmp(cmd, "events")) {
		json_object_object_add(req, "follow", json_object_new_boolean(follow));
		if (limit > 0)
			json_object_object_add(req, "limit", json_object_new_int(limit));
	}
	safe_stdout(json);
	rc = ctl_conn_open(sock, 0, &conn);
	if (rc < 0) {
		fprintf(stderr,
			"ftbpf: cannot reach ftbpfd at %s: %s\n"
			"  Is the agent running? (systemctl start ftbpfd, or sudo make run in the "
			"source tree.)\n"
			"  Another agent's socket: --socket PATH or FTBPF_SOCKET.\n",
			sock, strerror(-rc));
		return EXIT_CONNECT;
	}
	rc = ctl_conn_send(conn, req);
	json_object_put(req);
	if (rc < 0) {
		fprintf(stderr, "ftbpf: write to agent: %s\n", strerror(-rc));
		ctl_conn_close(conn);
		return EXIT_CONNECT;
	}
	if (!strcmp(cmd, "events")) {
		setvbuf(stdout, NULL, _IOLBF, 0);
		while (ctl_conn_read(conn, &o) == 0) {
			struct json_object *e;

			if (json_object_object_get_ex(o, "event", &e)) {
				if (json)
					printf("%s\n", json_object_to_json_string_ext(
							   e, JSON_C_TO_STRING_PLAIN));
				else
					print_event(e);
			} else if (json_object_object_get_ex(o, "ok", NULL)) {
				rc = check_ok(o);
				if (rc || gb(o, "end")) {
					json_object_put(o);
					ctl_conn_close(conn);
					return rc;
				}
			}
			json_object_put(o);
		}
		ctl_conn_close(conn);
		return follow ? 0 : 1;
	}
	if (ctl_conn_read(conn, &o) < 0)
		o = NULL;
	ctl_conn_close(conn);
	rc = check_ok(o);
	if (rc) {
		json_object_put(o);
		return rc;
	}
	if (!strcmp(cmd, "status") && job_filter) {
		status_filter(o, job_filter, 0);
		if (!status_has_jobs(o)) {
			fprintf(stderr,
				"ftbpf: no job '%s' on this host (of yours); `ftbpf status` lists "
				"them\n",
				job_filter);
			json_object_put(o);
			return 1;
		}
	}
	if (!strcmp(cmd, "status") && live)
		status_filter(o, NULL, 1);
	if (json)
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY));
	else if (!strcmp(cmd, "version"))
		printf("ftbpfd %s (control protocol v%lld); ftbpf %s\n", gs(o, "version"),
		       (long long)gi(o, "protocol", 0), FTBPF_VERSION);
	else if (!strcmp(cmd, "status"))
		print_status(o);
	else if (!strcmp(cmd, "peers"))
		print_cluster(o);
	else if (!strcmp(cmd, "explain"))
		print_explain(o);
	else if (!strcmp(cmd, "timers"))
		print_timers(o);
	else if (!strcmp(cmd, "stacks"))
		print_stacks(o);
	else if (!strcmp(cmd, "signal"))
		printf("sent\n");
	else if (!strcmp(cmd, "checkpoint"))
		printf("checkpoint of %s requested: every rank acknowledges it at its next step "
		       "(now about %lld), then all save at one step (ftbpf decisions)\n",
		       gs(o, "job"), (long long)gi(o, "step", -1));
	else if (!strcmp(cmd, "decisions"))
		print_decisions(o);
	else if (!strcmp(cmd, "decisions_reset"))
		printf("the decisions of %s are forgotten\n", gs(o, "job"));
	if (!json && cluster) /* status --cluster: the cluster view after the status */
		print_cluster(o);
	rc = check ? status_check(o) : 0;
	json_object_put(o);
	return rc;
}
