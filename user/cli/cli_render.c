/*
 * The ftbpf CLI's text: each reply of the agent (parsed JSON) as the tables and lines the CLI
 * prints. Pure: writes to the stream it is given and nothing else; tests/unit/test_cli_render.c
 * holds its output for every command.
 */
#include "cli/cli_render.h"

#include <json-c/json.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "client/ctl_client.h"
#include "lib/config.h"
#include "lib/pyfmt.h"

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

/* The heartbeat mesh's view: from "peers" ({"cluster":...}) or from status (same key). */
void cli_render_cluster(FILE *out, struct json_object *o)
{
	struct json_object *c, *peers, *h, *cr;

	if (!json_object_object_get_ex(o, "cluster", &c) || !c) {
		fprintf(out, "cluster: the heartbeat mesh is off (no --bind)\n");
		return;
	}
	fprintf(out, "cluster: this node %s, incarnation %d, local health %d\n", gs(c, "self"),
		(int)gi(c, "incarnation", 0), (int)gi(c, "local_health", 0));
	fprintf(out, "%-22s %-8s %5s %8s  %5s %5s %5s %s\n", "PEER", "STATE", "INC", "FOR", "RANKS",
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
		fprintf(out, "%-22s %-8s %5d %7.1fs  %5d %5d %5d %s\n", gs(p, "addr"),
			gs(p, "state"), (int)gi(p, "incarnation", 0), gd(p, "state_for_s"),
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

/* A job's ranks on other hosts (the job across hosts), and the ranks no host reported. */
static void print_elsewhere(FILE *out, struct json_object *j)
{
	struct json_object *re;

	if (gi(j, "hosts", 0) > 1)
		fprintf(out, "  across %lld hosts: %lld of %lld ranks known\n",
			(long long)gi(j, "hosts", 0), (long long)gi(j, "job_ranks", 0),
			(long long)gi(j, "world_size", 0));
	if (gs(j, "missing_ranks"))
		fprintf(out, "  missing: ranks %s\n", gs(j, "missing_ranks"));
	if (!json_object_object_get_ex(j, "ranks_elsewhere", &re))
		return;
	for (size_t i = 0; i < json_object_array_length(re); i++) {
		struct json_object *x = json_object_array_get_idx(re, i);

		fprintf(out, "  rank %lld on %s pid %lld %-9s %s%s\n", (long long)gi(x, "rank", -1),
			gs(x, "node"), (long long)gi(x, "pid", 0), gs(x, "state"),
			gs(x, "reason") ? gs(x, "reason") : "",
			gb(x, "culprit") ? "  <- culprit" : "");
	}
}

/* A job's step cadence and stragglers (docs/detection.md), when known. */
static void print_cadence(FILE *out, struct json_object *j)
{
	struct json_object *st = NULL;
	size_t n;

	if (gd(j, "step_s") <= 0)
		return;
	fprintf(out, "  steps: %.3fs (%.1f/s, spread %.2f, p99 %.3fs), soft timeout now %gs%s",
		gd(j, "step_s"), gd(j, "step_rate"), gd(j, "step_spread"), gd(j, "step_p99_s"),
		gd(j, "soft_timeout_s"), gb(j, "paced") ? " (its pace)" : "");
	/* every straggler of the job, with its host when it runs elsewhere */
	if (json_object_object_get_ex(j, "straggler_nodes", &st) &&
	    json_object_is_type(st, json_type_array)) {
		n = json_object_array_length(st);
		for (size_t k = 0; k < n; k++) {
			struct json_object *x = json_object_array_get_idx(st, k);

			fprintf(out, "%srank %d",
				k ? ", " : "; stragglers: ", (int)gi(x, "rank", -1));
			if (!gb(x, "here"))
				fprintf(out, " on %s", gs(x, "node") ? gs(x, "node") : "?");
		}
	} else {
		json_object_object_get_ex(j, "stragglers", &st);
		n = st && json_object_is_type(st, json_type_array) ? json_object_array_length(st)
								   : 0;
		for (size_t k = 0; k < n; k++)
			fprintf(out, "%srank %d", k ? ", " : "; stragglers: ",
				json_object_get_int(json_object_array_get_idx(st, k)));
	}
	fprintf(out, "\n");
}

void cli_render_status(FILE *out, struct json_object *o)
{
	struct json_object *agent, *jobs, *ranks;
	size_t n;

	if (json_object_object_get_ex(o, "agent", &agent)) {
		struct json_object *f = NULL;

		json_object_object_get_ex(agent, "features", &f);
		char soft[48];

		fprintf(out,
			"ftbpfd pid %lld, version %s, up %.0fs, programs %s, soft %s, hard %gs "
			"(%s)\n",
			(long long)gi(agent, "pid", 0), gs(agent, "version"), gd(agent, "uptime_s"),
			f ? gs(f, "programs") : "?",
			config_soft_words(gb(agent, "soft_timeout_auto"),
					  gd(agent, "soft_timeout_s"), soft, sizeof(soft)),
			gd(agent, "hard_timeout_s"), gs(agent, "action"));
	}
	if (json_object_object_get_ex(o, "jobs", &jobs) && (n = json_object_array_length(jobs))) {
		int w = name_width(jobs, 3);

		fprintf(out, "\n%-*s %5s %5s %-10s %12s  %s\n", w, "JOB", "RANKS", "LIVE", "STATE",
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
			fprintf(out, "%-*s %5lld %5lld %-10s %11.1fs  %s\n", w, gs(j, "job"),
				(long long)gi(j, "ranks", 0), (long long)gi(j, "live", 0),
				gs(j, "state"), gd(j, "no_progress_s"), cul);
			if (gs(j, "why"))
				fprintf(out, "  why: %s\n", gs(j, "why"));
			if (gi(j, "run", 1) > 1)
				fprintf(out, "  run %lld (a relaunch; the previous run: %s)\n",
					(long long)gi(j, "run", 1),
					gs(j, "previous_run") ? gs(j, "previous_run") : "?");
			print_elsewhere(out, j);
			if (json_object_object_get_ex(j, "checkpoint", &c) && c)
				fprintf(out,
					"  generation %lld, checkpoint #%lld at step %lld: %s "
					"(%lld of %lld ranks here saved)\n",
					(long long)gi(j, "generation", 0),
					(long long)gi(c, "id", 0), (long long)gi(c, "target", -1),
					gs(c, "state"), (long long)gi(c, "ranks_saved", 0),
					(long long)gi(c, "ranks", 0));
			else if (gi(j, "generation", 0) > 0)
				fprintf(out, "  generation %lld\n",
					(long long)gi(j, "generation", 0));
			print_cadence(out, j);
		}
	}
	if (json_object_object_get_ex(o, "ranks", &ranks) &&
	    (n = json_object_array_length(ranks))) {
		int w = name_width(ranks, 3);

		fprintf(out, "\n%-*s %5s %8s %-9s %9s %-4s %-7s %s\n", w, "JOB", "RANK", "PID",
			"STATE", "FOR", "HUNG", "CULPRIT", "REASON");
		for (size_t i = 0; i < n; i++) {
			struct json_object *r = json_object_array_get_idx(ranks, i);

			fprintf(out, "%-*s %5lld %8lld %-9s %8.1fs %-4s %-7s %s\n", w, gs(r, "job"),
				(long long)gi(r, "rank", -1), (long long)gi(r, "pid", 0),
				gs(r, "state"), gd(r, "state_for_s"), gb(r, "hung") ? "yes" : "no",
				gb(r, "culprit") ? "YES" : "-", gs(r, "reason"));
		}
	} else {
		fprintf(out, "\nno ranks adopted on this host\n");
	}
}

/* A value on one line: strings with their line breaks shown as " <- " (stack frames), arrays
 * of strings joined the same way, anything else as compact JSON. */
static void print_flat(FILE *out, struct json_object *v)
{
	if (json_object_is_type(v, json_type_string)) {
		for (const char *p = json_object_get_string(v); *p; p++)
			if (*p == '\n')
				fputs(p[1] ? " <- " : "", out);
			else
				fputc(*p, out);
	} else if (json_object_is_type(v, json_type_array) && json_object_array_length(v) &&
		   json_object_is_type(json_object_array_get_idx(v, 0), json_type_string)) {
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			if (i)
				fputs(" <- ", out);
			print_flat(out, json_object_array_get_idx(v, i));
		}
	} else {
		fputs(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN), out);
	}
}

void cli_render_event(FILE *out, struct json_object *e)
{
	const char *type = gs(e, "type");
	const char *skip[] = {"seq", "ts", "type", "ranks", NULL};

	fprintf(out, "%s %-16s", gs(e, "ts"), type ? type : "?");
	json_object_object_foreach (e, key, val) {
		int s = 0;

		for (int i = 0; skip[i]; i++)
			s |= !strcmp(key, skip[i]);
		if (s || !val)
			continue;
		fprintf(out, " %s=", key);
		print_flat(out, val);
	}
	fprintf(out, "\n");
}

void cli_render_timers(FILE *out, struct json_object *o)
{
	struct json_object *arr;
	size_t n;

	if (!json_object_object_get_ex(o, "timers", &arr) || !(n = json_object_array_length(arr))) {
		fprintf(out, "no active timers\n");
		return;
	}
	fprintf(out, "%8s %-15s %6s %10s %-6s %-6s %s\n", "PID", "COMM", "UID", "LEFT", "SIGNAL",
		"SOURCE", "SCOPE");
	for (size_t i = 0; i < n; i++) {
		struct json_object *t = json_object_array_get_idx(arr, i);

		fprintf(out, "%8lld %-15.15s %6lld %9.3fs %-6s %-6s %s\n",
			(long long)gi(t, "pid", 0), gs(t, "comm") ? gs(t, "comm") : "?",
			(long long)gi(t, "uid", 0), gd(t, "time_left_s"),
			gs(t, "signal_name") ? gs(t, "signal_name") : "?", gs(t, "source"),
			gs(t, "scope"));
	}
}

struct line_ctx {
	FILE *out;
	const char *indent;
};

static void print_line(void *ctx, const char *line)
{
	struct line_ctx *c = ctx;

	fprintf(c->out, "%s%s\n", *line ? c->indent : "", line);
}

/* The rank's Python stacks, in faulthandler's layout (what a Python user reads best). */
static void print_python(FILE *out, struct json_object *o)
{
	struct json_object *th;

	if (gs(o, "python_stack_error"))
		fprintf(out, "\npython stacks: unavailable (%s)\n", gs(o, "python_stack_error"));
	if (!json_object_object_get_ex(o, "python_threads", &th) || !json_object_array_length(th))
		return;
	fprintf(out, "\npython stacks (CPython %s):\n",
		gs(o, "python_version") ? gs(o, "python_version") : "?");
	pyfmt_lines(th, print_line, &(struct line_ctx){.out = out, .indent = "  "});
}

/* ftbpf stacks: each process, every thread's kernel stack, then its Python stacks. */
void cli_render_stacks(FILE *out, struct json_object *o)
{
	struct json_object *procs, *th;

	if (!json_object_object_get_ex(o, "processes", &procs))
		return;
	for (size_t i = 0; i < json_object_array_length(procs); i++) {
		struct json_object *p = json_object_array_get_idx(procs, i);

		if (i)
			fprintf(out, "\n");
		if (gi(p, "rank", -1) >= 0)
			fprintf(out, "rank %lld of job %s, pid %lld (%s): %s, %s\n",
				(long long)gi(p, "rank", -1), gs(p, "job"),
				(long long)gi(p, "pid", 0), gs(p, "comm"), gs(p, "state"),
				gs(p, "reason"));
		else
			fprintf(out, "pid %lld (%s), state %s\n", (long long)gi(p, "pid", 0),
				gs(p, "comm"), gs(p, "state"));
		if (json_object_object_get_ex(p, "threads", &th))
			for (size_t t = 0; t < json_object_array_length(th); t++) {
				struct json_object *x = json_object_array_get_idx(th, t), *ks;

				fprintf(out, "  tid %lld %-15s state %s  syscall %s  wchan %s\n",
					(long long)gi(x, "tid", 0), gs(x, "comm"), gs(x, "state"),
					gs(x, "syscall") ? gs(x, "syscall") : "-",
					gs(x, "wchan") ? gs(x, "wchan") : "-");
				if (json_object_object_get_ex(x, "kernel_stack", &ks))
					for (size_t k = 0; k < json_object_array_length(ks); k++)
						fprintf(out, "      %s\n",
							json_object_get_string(
							    json_object_array_get_idx(ks, k)));
			}
		print_python(out, p);
	}
	if (gi(o, "not_shown", 0) > 0)
		fprintf(out, "\n(%lld more ranks not shown: ftbpf stacks PID for one)\n",
			(long long)gi(o, "not_shown", 0));
}

void cli_render_explain(FILE *out, struct json_object *o)
{
	struct json_object *r, *job = NULL, *th, *ch, *sigs, *jr;

	if (json_object_object_get_ex(o, "rank", &r))
		fprintf(out,
			"rank %lld of job %s, pid %lld (%s), uid %lld\n  state: %s, %s\n"
			"  no progress for %.1fs; hung: %s; culprit: %s\n",
			(long long)gi(r, "rank", -1), gs(r, "job"), (long long)gi(r, "pid", 0),
			gs(r, "comm"), (long long)gi(r, "uid", 0), gs(r, "state"), gs(r, "reason"),
			gd(r, "no_progress_s"), gb(r, "hung") ? "yes" : "no",
			gb(r, "culprit") ? "YES" : "no");
	if (json_object_object_get_ex(o, "job", &job) && gs(job, "why"))
		fprintf(out, "  job verdict: %s: %s\n", gs(job, "state"), gs(job, "why"));
	if (job && gs(job, "culprit_node") && gs(job, "culprit_state")) {
		struct json_object *cr = NULL;

		json_object_object_get_ex(job, "culprit_ranks", &cr);
		fprintf(out, "  job-wide culprit: rank %d on %s (%s)%s\n",
			cr && json_object_array_length(cr)
			    ? json_object_get_int(json_object_array_get_idx(cr, 0))
			    : -1,
			gs(job, "culprit_node"), gs(job, "culprit_state"),
			gb(job, "culprit_here") ? ", this host" : "");
	}
	if (json_object_object_get_ex(o, "threads", &th)) {
		fprintf(out, "\nthreads:\n");
		for (size_t i = 0; i < json_object_array_length(th); i++) {
			struct json_object *t = json_object_array_get_idx(th, i), *ks;

			fprintf(out, "  tid %lld %-15s state %s  syscall %s (%.1fs)  wchan %s\n",
				(long long)gi(t, "tid", 0), gs(t, "comm"), gs(t, "state"),
				gs(t, "syscall") ? gs(t, "syscall") : "-", gd(t, "in_syscall_s"),
				gs(t, "wchan") ? gs(t, "wchan") : "-");
			if (json_object_object_get_ex(t, "kernel_stack", &ks))
				for (size_t k = 0; k < json_object_array_length(ks) && k < 8; k++)
					fprintf(out, "      %s\n",
						json_object_get_string(
						    json_object_array_get_idx(ks, k)));
		}
	}
	print_python(out, o);
	if (json_object_object_get_ex(o, "children", &ch) && json_object_array_length(ch)) {
		fprintf(out, "\nchildren:\n");
		for (size_t i = 0; i < json_object_array_length(ch); i++) {
			struct json_object *c = json_object_array_get_idx(ch, i);

			fprintf(out, "  pid %lld %s%s\n", (long long)gi(c, "pid", 0), gs(c, "comm"),
				gb(c, "exited") ? " (exited)" : "");
		}
	}
	if (json_object_object_get_ex(o, "signals", &sigs) && json_object_array_length(sigs)) {
		fprintf(out, "\nsignals (newest last):\n");
		for (size_t i = 0; i < json_object_array_length(sigs); i++) {
			struct json_object *s = json_object_array_get_idx(sigs, i);

			fprintf(out, "  %.1fs ago SIG%s %s", gd(s, "s_ago"), gs(s, "signal_name"),
				gb(s, "delivered") ? "delivered" : "sent");
			if (!gb(s, "delivered"))
				fprintf(out, " by pid %lld (%s)", (long long)gi(s, "sender_pid", 0),
					gs(s, "sender_comm"));
			fprintf(out, "\n");
		}
	}
	if (json_object_object_get_ex(o, "job_ranks", &jr) && json_object_array_length(jr)) {
		fprintf(out, "\nother ranks of the job:\n");
		for (size_t i = 0; i < json_object_array_length(jr); i++) {
			struct json_object *x = json_object_array_get_idx(jr, i);

			fprintf(out, "  rank %lld pid %lld %-9s %s%s\n",
				(long long)gi(x, "rank", -1), (long long)gi(x, "pid", 0),
				gs(x, "state"), gs(x, "reason"),
				gb(x, "culprit") ? "  <- culprit" : "");
		}
	}
	if (json_object_object_get_ex(o, "ranks_elsewhere", &jr) && json_object_array_length(jr)) {
		fprintf(out, "\nranks of the job on other hosts:\n");
		for (size_t i = 0; i < json_object_array_length(jr); i++) {
			struct json_object *x = json_object_array_get_idx(jr, i);

			fprintf(out, "  rank %lld on %s pid %lld %-9s %s%s\n",
				(long long)gi(x, "rank", -1), gs(x, "node"),
				(long long)gi(x, "pid", 0), gs(x, "state"),
				gs(x, "reason") ? gs(x, "reason") : "",
				gb(x, "culprit") ? "  <- culprit" : "");
		}
	}
}

void cli_render_decisions(FILE *out, struct json_object *o)
{
	struct json_object *arr;
	size_t n;

	if (!json_object_object_get_ex(o, "decisions", &arr) ||
	    !(n = json_object_array_length(arr))) {
		fprintf(out, "no decisions\n");
		return;
	}
	fprintf(out, "%-24s %-20s %4s %-20s %8s %-11s %-16s %s\n", "WHEN", "JOB", "GEN", "KIND",
		"STEP", "CAUSE", "BY", "WHY");
	for (size_t i = 0; i < n; i++) {
		struct json_object *d = json_object_array_get_idx(arr, i), *ex;
		int64_t ms = gi(d, "at_ms", 0), step = gi(d, "step", gi(d, "resume_step", -1));
		time_t t = (time_t)(ms / 1000);
		char when[32] = "-", kind[32];
		struct tm tm;

		if (ms && gmtime_r(&t, &tm))
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		snprintf(kind, sizeof(kind), "%s%s", gs(d, "kind"), gb(d, "stop") ? " (stop)" : "");
		fprintf(out, "%-24s %-20.20s %4lld %-20s %8lld %-11s %-16.16s %s", when,
			gs(d, "job"), (long long)gi(d, "generation", 0), kind, (long long)step,
			gs(d, "cause") && *gs(d, "cause") ? gs(d, "cause") : "-",
			gs(d, "by") ? gs(d, "by") : "-", gs(d, "why") ? gs(d, "why") : "");
		if (json_object_object_get_ex(d, "excluded", &ex) && json_object_array_length(ex)) {
			fprintf(out, " [left out:");
			for (size_t k = 0; k < json_object_array_length(ex); k++)
				fprintf(out, " %s",
					json_object_get_string(json_object_array_get_idx(ex, k)));
			fprintf(out, "]");
		}
		fprintf(out, "\n");
	}
}

void cli_render_version(FILE *out, struct json_object *o)
{
	fprintf(out, "ftbpfd %s (control protocol v%lld); ftbpf %s\n", gs(o, "version"),
		(long long)gi(o, "protocol", 0), FTBPF_VERSION);
}

void cli_render_signal(FILE *out, struct json_object *o)
{
	(void)o;
	fprintf(out, "sent\n");
}

void cli_render_checkpoint(FILE *out, struct json_object *o)
{
	fprintf(out,
		"checkpoint of %s requested: every rank acknowledges it at its next step "
		"(now about %lld), then all save at one step (ftbpf decisions)\n",
		gs(o, "job"), (long long)gi(o, "step", -1));
}

void cli_render_decisions_reset(FILE *out, struct json_object *o)
{
	fprintf(out, "the decisions of %s are forgotten\n", gs(o, "job"));
}
