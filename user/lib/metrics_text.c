/* Status JSON -> Prometheus text exposition: see metrics_text.h. */
#include "lib/metrics_text.h"
#include "lib/textsafe.h"

#include <ctype.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A member of o, NULL when absent or o is not an object. */
static struct json_object *get(struct json_object *o, const char *k)
{
	struct json_object *v;

	return o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, k, &v)
		   ? v
		   : NULL;
}

static double num(struct json_object *o, const char *k, double def)
{
	struct json_object *v = get(o, k);

	if (v &&
	    (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
		return json_object_get_double(v);
	if (v && json_object_is_type(v, json_type_boolean))
		return json_object_get_boolean(v);
	return def;
}

static const char *str(struct json_object *o, const char *k)
{
	struct json_object *v = get(o, k);

	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
}

/* A label value: backslash, double quote and newline escaped; other control bytes and DEL
 * dropped; bytes that are not UTF-8 become U+FFFD (the exposition format is UTF-8: one bad
 * byte in a user's job name would make the whole scrape invalid). */
static void label(FILE *f, const char *s)
{
	fputc('"', f);
	while (*s) {
		size_t n = textsafe_utf8_len(s, strlen(s));

		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (!n)
			fputs("\xef\xbf\xbd", f);
		else if (n > 1 || ((unsigned char)*s >= 0x20 && *s != 0x7f))
			fwrite(s, 1, n, f);
		s += n ? n : 1;
	}
	fputc('"', f);
}

/* A metric name part from a JSON key: [a-z0-9_] only. */
static void name_part(char *out, size_t len, const char *k)
{
	size_t o = 0;

	for (; *k && o + 1 < len; k++)
		out[o++] = isalnum((unsigned char)*k) ? (char)tolower((unsigned char)*k) : '_';
	out[o] = 0;
}

static void header(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void value(FILE *f, double v)
{
	if (v == (double)(int64_t)v)
		fprintf(f, " %lld\n", (long long)v);
	else
		fprintf(f, " %.6g\n", v);
}

/*
 * A training job is labelled training_job, never job: Prometheus gives every scraped sample
 * its target's job label (the scrape config's job_name), and a metric's own job label would be
 * renamed exported_job, so that alerts would name the scrape job instead of the training job.
 */
static void job_labels(FILE *f, struct json_object *j)
{
	fputs("{training_job=", f);
	label(f, str(j, "job"));
	fprintf(f, ",uid=\"%lld\"}", (long long)num(j, "uid", -1));
}

/*
 * A rank is its job, owner and rank number (the host is the scrape's instance label): never
 * its pid, which would start new series at every restart of the rank. The closing brace is
 * the caller's (ftbpf_rank_state adds its state).
 */
static void rank_labels(FILE *f, struct json_object *r)
{
	fputs("{training_job=", f);
	label(f, str(r, "job"));
	fprintf(f, ",uid=\"%lld\",rank=\"%lld\"", (long long)num(r, "uid", -1),
		(long long)num(r, "rank", -1));
}

struct series {
	const char *name, *type, *help, *key; /* key: the JSON field; NULL: special */
};

static const struct series job_series[] = {
    {"ftbpf_job_hung", "gauge", "1 while the job is hung (no rank progressed for the soft timeout)",
     "hung"},
    {"ftbpf_job_failed", "gauge",
     "1 when the job failed: a rank died abnormally on its own (not a preemption's exit 42, a "
     "stop's 93, nor the agent's own action)",
     "failed"},
    {"ftbpf_job_no_progress_seconds", "gauge", "seconds since any rank of the job made progress",
     "no_progress_s"},
    {"ftbpf_job_ranks", "gauge", "ranks of the job on this host (live and exited)", "ranks"},
    {"ftbpf_job_live_ranks", "gauge", "live ranks of the job on this host", "live"},
    {"ftbpf_job_step_seconds", "gauge", "the job's step time (its median rank's); 0 unknown",
     "step_s"},
    {"ftbpf_job_generation", "gauge", "the job's restart generation (coordinated decisions)",
     "generation"},
};

static const struct series rank_series[] = {
    {"ftbpf_rank_hung", "gauge", "1 while the rank's job is hung", "hung"},
    {"ftbpf_rank_culprit", "gauge", "1 while the rank is named the culprit of its job's hang",
     "culprit"},
    {"ftbpf_rank_no_progress_seconds", "gauge", "seconds since the rank made progress",
     "no_progress_s"},
    {"ftbpf_rank_timers", "gauge", "countdown timers the rank has armed", "timers"},
    {"ftbpf_rank_slowdown", "gauge",
     "the rank's own time per step (compute and input) over its job's median; 0 unknown",
     "slowdown"},
    {"ftbpf_rank_straggler", "gauge", "1 while the rank is named a straggler of its job",
     "straggler"},
    {"ftbpf_rank_step_wait_seconds", "gauge", "seconds per step the rank waits on its peers",
     "wait_s"},
};

static int is_array(struct json_object *a)
{
	return a && json_object_is_type(a, json_type_array);
}

/*
 * A job whose ranks all ended is exported for ENDED_LINGER_S more (its last state, as
 * ftbpf_job_failed 1, seen by a scrape and a rule evaluation at Prometheus' default one-minute
 * intervals), then left out of every job series; `ftbpf status` keeps it an hour.
 */
#define ENDED_LINGER_S 60

static int job_shown(struct json_object *j)
{
	return num(j, "ended_s_ago", -1) < ENDED_LINGER_S;
}

static void jobs_section(FILE *f, struct json_object *jobs)
{
	static const char *const states[] = {"ok",	  "hung",	"failed", "finished",
					     "preempted", "restarting", "stopped"};
	size_t n = is_array(jobs) ? json_object_array_length(jobs) : 0;

	header(f, "ftbpf_jobs", "gauge", "jobs on this host by state");
	for (size_t s = 0; s < sizeof(states) / sizeof(states[0]); s++) {
		int c = 0;

		for (size_t i = 0; i < n; i++) {
			struct json_object *j = json_object_array_get_idx(jobs, i);

			c += job_shown(j) && !strcmp(str(j, "state"), states[s]);
		}
		fprintf(f, "ftbpf_jobs{state=\"%s\"} %d\n", states[s], c);
	}
	for (size_t s = 0; s < sizeof(job_series) / sizeof(job_series[0]); s++) {
		header(f, job_series[s].name, job_series[s].type, job_series[s].help);
		for (size_t i = 0; i < n; i++) {
			struct json_object *j = json_object_array_get_idx(jobs, i);

			if (!job_shown(j))
				continue;
			fputs(job_series[s].name, f);
			job_labels(f, j);
			value(f, num(j, job_series[s].key, 0));
		}
	}
	header(f, "ftbpf_job_culprit", "gauge",
	       "1 for each rank named the culprit of the job's hang or failure");
	for (size_t i = 0; i < n; i++) {
		struct json_object *j = json_object_array_get_idx(jobs, i),
				   *c = get(j, "culprit_ranks");

		for (size_t k = 0; job_shown(j) && is_array(c) && k < json_object_array_length(c);
		     k++) {
			fputs("ftbpf_job_culprit{training_job=", f);
			label(f, str(j, "job"));
			fprintf(f, ",uid=\"%lld\",rank=\"%d\"} 1\n", (long long)num(j, "uid", -1),
				json_object_get_int(json_object_array_get_idx(c, k)));
		}
	} /* the job-wide culprit and the host it runs on (the job across hosts) */
	header(f, "ftbpf_job_culprit_node", "gauge",
	       "1 for each culprit rank of the job's hang or failure, with the host that runs it");
	for (size_t i = 0; i < n; i++) {
		struct json_object *j = json_object_array_get_idx(jobs, i),
				   *c = get(j, "culprit_ranks");

		/* only where the mesh named the culprit's host: never node="" */
		for (size_t k = 0; job_shown(j) && *str(j, "culprit_node") && is_array(c) &&
				   k < json_object_array_length(c);
		     k++) {
			fputs("ftbpf_job_culprit_node{training_job=", f);
			label(f, str(j, "job"));
			fprintf(f, ",uid=\"%lld\",rank=\"%d\",node=", (long long)num(j, "uid", -1),
				json_object_get_int(json_object_array_get_idx(c, k)));
			label(f, str(j, "culprit_node"));
			if (*str(j, "culprit_state")) {
				fputs(",state=", f); /* unknown: no label, never state="" */
				label(f, str(j, "culprit_state"));
			}
			fputs("} 1\n", f);
		}
	}
}

/* A live rank in the order that puts one job's, owner's and rank number's processes together,
 * the most recently adopted first. */
struct rank_ref {
	struct json_object *r;
	const char *job;
	long long uid, rank;
	double age;
};

static int rank_ref_cmp(const void *a, const void *b)
{
	const struct rank_ref *x = a, *y = b;
	int c = strcmp(x->job, y->job);

	if (c)
		return c;
	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return (x->age > y->age) - (x->age < y->age);
}

static int same_rank(const struct rank_ref *x, const struct rank_ref *y)
{
	return !strcmp(x->job, y->job) && x->uid == y->uid && x->rank == y->rank;
}

/*
 * One series per live rank and metric. Two live processes that claim one rank of a job (a new
 * incarnation while the old one is still in its grace) are one series: the newer one's.
 */
static int ranks_section(FILE *f, struct json_object *ranks)
{
	size_t n = is_array(ranks) ? json_object_array_length(ranks) : 0, m = 0;
	struct rank_ref *v = calloc(n ? n : 1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct json_object *r = json_object_array_get_idx(ranks, i);

		if (num(r, "exited", 0))
			continue;
		v[m++] =
		    (struct rank_ref){r, str(r, "job"), (long long)num(r, "uid", -1),
				      (long long)num(r, "rank", -1), num(r, "adopted_s_ago", 0)};
	}
	qsort(v, m, sizeof(*v), rank_ref_cmp);
	header(f, "ftbpf_rank_state", "gauge",
	       "1 for the state each live rank is in (running, blocked, spinning, ...)");
	for (size_t i = 0; i < m; i++) {
		if (i && same_rank(&v[i - 1], &v[i]))
			continue;
		fputs("ftbpf_rank_state", f);
		rank_labels(f, v[i].r);
		fputs(",state=", f);
		label(f, *str(v[i].r, "state") ? str(v[i].r, "state") : "unknown");
		fputs("} 1\n", f);
	}
	for (size_t s = 0; s < sizeof(rank_series) / sizeof(rank_series[0]); s++) {
		header(f, rank_series[s].name, rank_series[s].type, rank_series[s].help);
		for (size_t i = 0; i < m; i++) {
			if (i && same_rank(&v[i - 1], &v[i]))
				continue;
			fputs(rank_series[s].name, f);
			rank_labels(f, v[i].r);
			fputc('}', f);
			value(f, num(v[i].r, rank_series[s].key, 0));
		}
	}
	free(v);
	return 0;
}

/*
 * The agent's counters (agent.counters of the status), each with its own HELP. Counters are
 * exported as ftbpf_agent_NAME_total, the few that are levels as gauges ftbpf_agent_NAME. A
 * name missing here is still exported, as a counter whose HELP says it has no description
 * (ops_metrics fails on that: add the row).
 */
static const struct counter_info {
	const char *key, *help;
	int gauge;
} counter_infos[] = {
    {"events", "events the agent logged", 0},
    {"adopted", "processes adopted as ranks", 0},
    {"adopt_errors", "processes with malformed launcher variables, not adopted", 0},
    {"adopt_refused_elevated",
     "processes not adopted: running a set-user-ID or set-group-ID "
     "program",
     0},
    {"adopt_refused_user_full",
     "processes not adopted: their user's share of the rank table holds no ended rank", 0},
    {"ranks_forgotten_at_share", "ended ranks forgotten for a new rank of their user's (share)", 0},
    {"adopt_refused_table_full",
     "ranks not watched: the kernel's process table (procs) was full; retried at each scan", 0},
    {"share_refused_procs", "kernel process records refused at a user's share or root's reserve",
     0},
    {"share_refused_threads", "kernel thread records refused at a user's share or root's reserve",
     0},
    {"share_refused_comms", "NCCL communicator records refused at a user's share or root's reserve",
     0},
    {"share_refused_cadence", "step cadence records refused at a user's share or root's reserve",
     0},
    {"share_refused_comm_init",
     "communicator creations not recorded at a user's share or root's reserve", 0},
    {"share_refused_arrivals",
     "collective arrival records refused at a user's share or root's reserve", 0},
    {"share_refused_ranks", "ranks not adopted at their user's share of the rank table", 0},
    {"ranks_left", "ranks that left their job (now another user's, or set-user-ID)", 0},
    {"wrapper_handovers", "ranks taken over from a wrapper (timeout, sh) by the child it started",
     0},
    {"gpu_returns_lost",
     "CUDA/NCCL calls whose return the probes never saw (ended by the kernel side)", 0},
    {"gpu_libs_refused",
     "CUDA/NCCL libraries not probed: their user's share of the probe table was full", 0},
    {"inspections", "Python stack and probe inspections done off the event loop", 0},
    {"inspections_timed_out", "inspections that ran past their time limit", 0},
    {"inspections_refused",
     "inspections refused: a mapped file not a regular file, too large, or gone", 0},
    {"nccl_ras_queries", "NCCL RAS queries made for hung NCCL jobs", 0},
    {"nccl_ras_answered", "NCCL RAS queries answered in JSON by a rank of the job", 0},
    {"nccl_ras_failed",
     "NCCL RAS queries without an answer (nothing listens, no answer in time, untrusted)", 0},
    {"nccl_ras_text", "NCCL RAS queries answered in text only (NCCL before 2.28.7): not read", 0},
    {"nccl_ras_untrusted",
     "NCCL RAS answers refused: the server end was held by no rank of the job", 0},
    {"parts_rx", "job parts received from other hosts' agents", 0},
    {"parts_tx", "job parts sent to other hosts' agents", 0},
    {"parts_tx_errors", "job parts that could not be sent", 0},
    {"parts_accepted", "job parts received and taken into a job's verdict", 0},
    {"parts_bad_size", "job parts refused: wrong size", 0},
    {"parts_bad_magic", "job parts refused: not a part", 0},
    {"parts_bad_version", "job parts refused: another version", 0},
    {"parts_bad_mac", "job parts refused: the cluster key's MAC does not match", 0},
    {"parts_bad_field", "job parts refused: a field out of range", 0},
    {"parts_bad_signature", "job parts refused: not signed by their sender's node key", 0},
    {"parts_not_member", "job parts refused: the sender is no member of the job's run", 0},
    {"parts_outside_world", "job parts refused: a rank outside the job's world size", 0},
    {"parts_bad_source",
     "job parts refused: the sender they name is not the address they came from", 0},
    {"parts_misdirected", "job parts refused: meant for another host", 0},
    {"parts_stale", "job parts refused: too old", 0},
    {"parts_replayed", "job parts refused: seen before", 0},
    {"parts_not_ours", "job parts of a job not on this host", 0},
    {"parts_claim_our_ranks", "job parts refused: another host claimed ranks this host runs", 0},
    {"parts_rank_conflict", "job parts refused: two hosts claimed one rank", 0},
    {"parts_world_mismatch", "job parts refused: another world size than the job's", 0},
    {"parts_bad_seq", "job parts refused: an impossible NCCL sequence number", 0},
    {"parts_expired", "job parts of a host that stopped sending, expired", 0},
    {"cadence_parts_accepted", "cadence parts (other hosts' ranks' step cadence) taken", 0},
    {"cadence_not_ours", "cadence parts of a job not on this host", 0},
    {"cadence_world_mismatch", "cadence parts refused: another or no world size", 0},
    {"cadence_claim_our_ranks", "cadence parts refused: another host claimed ranks this host runs",
     0},
    {"cadence_rank_conflict", "cadence ranks refused: another host holds that rank", 0},
    {"cadence_ranks_dropped", "cadence ranks not kept: the table was full", 0},
    {"clock_samples", "clock offsets to other hosts' agents measured from their parts", 0},
    {"clock_samples_rejected",
     "clock offset samples refused: impossible times, too old or too slow a round trip", 0},
    {"arrivals_dropped", "collective arrival records not kept: the table was full", 0},
    {"socket_dumps", "socket tables read for the waits-for graph (sock_diag)", 0},
    {"proc_rescans", "walks of /proc after exec events were folded or lost", 0},
    {"environ_reads", "environments of processes read off the event loop (execs, walks)", 0},
    {"environ_reads_refused",
     "exec events not read: too many of their user's waited (a walk of /proc finds them)", 0},
    {"hangs", "hangs reported (one per stall of a job)", 0},
    {"actions", "signals the agent sent (hard and soft actions, timer kills, graces)", 0},
    {"scans", "scans of the ranks (one per scan_interval)", 0},
    {"ringbuf_drops", "kernel events lost because the ring buffer was full", 0},
    {"thread_map_full", "thread records the kernel could not create (map full)", 0},
    {"proc_map_full", "process records the kernel could not create (map full)", 0},
    {"gpu_api_calls", "CUDA and NCCL calls of ranks seen by the probes", 0},
    {"nccl_comm_map_full", "NCCL communicators the kernel could not record (map full)", 0},
    {"events_folded", "kernel events of ranks folded over their event budget", 0},
    {"exec_events_folded", "exec events of untracked processes folded over a user's budget", 0},
    {"signals_ignored", "signals to ranks that were ignored and made no event", 0},
    {"children_untracked", "children of ranks not tracked (a rank's 4096 limit)", 0},
    {"threads_untracked", "threads not tracked (a process's 4096 limit)", 0},
    {"children_tracked", "children of ranks tracked from their fork", 0},
    {"ctl_accepted", "control connections accepted", 0},
    {"ctl_requests", "control requests handled", 0},
    {"ctl_bad_requests", "malformed control requests answered with an error", 0},
    {"ctl_oversized", "control requests over 64 KiB (connection closed)", 0},
    {"ctl_truncated", "control connections closed in the middle of a request", 0},
    {"ctl_denied", "control requests refused: another user's process or job", 0},
    {"ctl_dropped_slow", "control clients dropped for not reading their replies", 0},
    {"ctl_refused_full", "control connections refused: ctl_max_clients reached", 0},
    {"ctl_refused_user", "control connections refused: ctl_clients_per_user reached", 0},
    {"ctl_refused_fds", "control connections refused: out of file descriptors", 0},
    {"ctl_idle_closed", "control connections closed after ctl_idle_timeout", 0},
    {"ctl_over_budget", "control replies refused: the user's ctl_user_buffer was full", 0},
    {"ctl_clients", "control connections open now", 1},
    {"eventlog_write_errors", "failed writes to the event log file", 0},
    {"timers_active", "countdown timers the agent holds now (control socket and FIFO)", 1},
    {"timers_acquired", "countdown timers acquired through the control socket or FIFO", 0},
    {"timers_released", "countdown timers released", 0},
    {"timers_expired", "countdown timers that expired in the agent", 0},
    {"timers_rejected_full", "countdown timers refused: the agent's table was full", 0},
    {"timers_rejected_user", "countdown timers refused: max_timers_per_user reached", 0},
    {"fifo_requests", "lines read from the timer FIFO", 0},
    {"fifo_bad", "malformed lines on the timer FIFO", 0},
    {"fifo_denied",
     "timer FIFO requests refused (another user's process, or a FIFO others "
     "can write)",
     0},
    {"fifo_oversized", "over-long lines on the timer FIFO", 0},
    {"metrics_scrapes", "scrapes of this /metrics endpoint", 0},
    {"metrics_refused", "/metrics connections refused (per-user or total limit)", 0},
    {"metrics_timed_out", "/metrics requests that missed their deadline", 0},
    {"metrics_unauthorized", "/metrics requests without the right bearer token", 0},
};

static const struct counter_info *counter_info(const char *key)
{
	for (size_t i = 0; i < sizeof(counter_infos) / sizeof(counter_infos[0]); i++)
		if (!strcmp(counter_infos[i].key, key))
			return &counter_infos[i];
	return NULL;
}

static void counters_section(FILE *f, struct json_object *c)
{
	char part[64], name[96], help[160];

	if (!c || !json_object_is_type(c, json_type_object))
		return;
	json_object_object_foreach (c, k, v) {
		const struct counter_info *ci = counter_info(k);

		if (!json_object_is_type(v, json_type_int))
			continue;
		name_part(part, sizeof(part), k);
		snprintf(name, sizeof(name),
			 ci && ci->gauge ? "ftbpf_agent_%s" : "ftbpf_agent_%s_total", part);
		if (ci)
			snprintf(help, sizeof(help), "%s", ci->help);
		else
			snprintf(help, sizeof(help),
				 "agent.counters.%s of ftbpf status (no description yet)", part);
		header(f, name, ci && ci->gauge ? "gauge" : "counter", help);
		fputs(name, f);
		value(f, (double)json_object_get_int64(v));
	}
}

static void agent_section(FILE *f, struct json_object *agent)
{
	struct json_object *dec = get(agent, "decisions");

	header(f, "ftbpf_agent_info", "gauge", "the agent's version and BPF program type");
	fputs("ftbpf_agent_info{version=", f);
	label(f, str(agent, "version"));
	fputs(",programs=", f);
	label(f, str(get(agent, "features"), "programs"));
	fputs("} 1\n", f);
	header(f, "ftbpf_agent_uptime_seconds", "gauge", "seconds since the agent started");
	fprintf(f, "ftbpf_agent_uptime_seconds");
	value(f, num(agent, "uptime_s", 0));
	counters_section(f, get(agent, "counters"));
	if (dec) {
		header(f, "ftbpf_decisions_store_reachable", "gauge",
		       "1 while the decision store (etcd, or the local file) can be reached");
		fputs("ftbpf_decisions_store_reachable", f);
		value(f, num(get(dec, "store"), "reachable", 0));
	}
}

static void mesh_section(FILE *f, struct json_object *cluster)
{
	static const char *const states[] = {"alive", "suspect", "dead", "left"};
	struct json_object *peers = get(cluster, "peers");
	size_t n = is_array(peers) ? json_object_array_length(peers) : 0;

	header(f, "ftbpf_mesh_peers", "gauge",
	       "peers of the heartbeat mesh by state (all 0 when the mesh is off)");
	for (size_t s = 0; s < sizeof(states) / sizeof(states[0]); s++) {
		int c = 0;

		for (size_t i = 0; i < n; i++)
			c += !strcmp(str(json_object_array_get_idx(peers, i), "state"), states[s]);
		fprintf(f, "ftbpf_mesh_peers{state=\"%s\"} %d\n", states[s], c);
	}
}

int metrics_text_format(struct json_object *status, char **ret, size_t *ret_len)
{
	FILE *f;
	int rc;

	if (!status || !json_object_is_type(status, json_type_object) || !get(status, "agent"))
		return -EINVAL;
	*ret = NULL;
	*ret_len = 0;
	f = open_memstream(ret, ret_len);
	if (!f)
		return -ENOMEM;
	agent_section(f, get(status, "agent"));
	jobs_section(f, get(status, "jobs"));
	rc = ranks_section(f, get(status, "ranks"));
	mesh_section(f, get(status, "cluster"));
	if (fclose(f) != 0 || rc < 0) {
		free(*ret);
		*ret = NULL;
		return -ENOMEM;
	}
	return 0;
}
