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

static void job_labels(FILE *f, struct json_object *j)
{
	fputs("{job=", f);
	label(f, str(j, "job"));
	fprintf(f, ",uid=\"%lld\"}", (long long)num(j, "uid", -1));
}

static void rank_labels(FILE *f, struct json_object *r)
{
	fputs("{job=", f);
	label(f, str(r, "job"));
	fprintf(f, ",uid=\"%lld\",rank=\"%lld\",pid=\"%lld\"}", (long long)num(r, "uid", -1),
		(long long)num(r, "rank", -1), (long long)num(r, "pid", -1));
}

struct series {
	const char *name, *type, *help, *key; /* key: the JSON field; NULL: special */
};

static const struct series job_series[] = {
    {"ftbpf_job_hung", "gauge", "1 while the job is hung (no rank progressed for the soft timeout)",
     "hung"},
    {"ftbpf_job_failed", "gauge", "1 when a rank of the job died abnormally", "failed"},
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

static void jobs_section(FILE *f, struct json_object *jobs)
{
	static const char *const states[] = {"ok", "hung", "failed", "finished"};
	size_t n = is_array(jobs) ? json_object_array_length(jobs) : 0;

	header(f, "ftbpf_jobs", "gauge", "jobs on this host by state");
	for (size_t s = 0; s < sizeof(states) / sizeof(states[0]); s++) {
		int c = 0;

		for (size_t i = 0; i < n; i++)
			c += !strcmp(str(json_object_array_get_idx(jobs, i), "state"), states[s]);
		fprintf(f, "ftbpf_jobs{state=\"%s\"} %d\n", states[s], c);
	}
	for (size_t s = 0; s < sizeof(job_series) / sizeof(job_series[0]); s++) {
		header(f, job_series[s].name, job_series[s].type, job_series[s].help);
		for (size_t i = 0; i < n; i++) {
			struct json_object *j = json_object_array_get_idx(jobs, i);

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

		for (size_t k = 0; is_array(c) && k < json_object_array_length(c); k++) {
			fputs("ftbpf_job_culprit{job=", f);
			label(f, str(j, "job"));
			fprintf(f, ",uid=\"%lld\",rank=\"%d\"} 1\n", (long long)num(j, "uid", -1),
				json_object_get_int(json_object_array_get_idx(c, k)));
		}
	}
}

static void ranks_section(FILE *f, struct json_object *ranks)
{
	size_t n = is_array(ranks) ? json_object_array_length(ranks) : 0;

	header(f, "ftbpf_rank_state", "gauge",
	       "1 for the state each live rank is in (running, blocked, spinning, ...)");
	for (size_t i = 0; i < n; i++) {
		struct json_object *r = json_object_array_get_idx(ranks, i);

		if (num(r, "exited", 0))
			continue;
		fputs("ftbpf_rank_state{job=", f);
		label(f, str(r, "job"));
		fprintf(f, ",uid=\"%lld\",rank=\"%lld\",pid=\"%lld\",state=",
			(long long)num(r, "uid", -1), (long long)num(r, "rank", -1),
			(long long)num(r, "pid", -1));
		label(f, str(r, "state"));
		fputs("} 1\n", f);
	}
	for (size_t s = 0; s < sizeof(rank_series) / sizeof(rank_series[0]); s++) {
		header(f, rank_series[s].name, rank_series[s].type, rank_series[s].help);
		for (size_t i = 0; i < n; i++) {
			struct json_object *r = json_object_array_get_idx(ranks, i);

			if (num(r, "exited", 0))
				continue;
			fputs(rank_series[s].name, f);
			rank_labels(f, r);
			value(f, num(r, rank_series[s].key, 0));
		}
	}
}

static void agent_section(FILE *f, struct json_object *agent)
{
	struct json_object *c = get(agent, "counters"), *dec = get(agent, "decisions");
	char part[64], name[96];

	header(f, "ftbpf_agent_info", "gauge", "the agent's version and BPF program type");
	fputs("ftbpf_agent_info{version=", f);
	label(f, str(agent, "version"));
	fputs(",programs=", f);
	label(f, str(get(agent, "features"), "programs"));
	fputs("} 1\n", f);
	header(f, "ftbpf_agent_uptime_seconds", "gauge", "seconds since the agent started");
	fprintf(f, "ftbpf_agent_uptime_seconds");
	value(f, num(agent, "uptime_s", 0));
	if (c && json_object_is_type(c, json_type_object)) {
		json_object_object_foreach (c, k, v) {
			if (!json_object_is_type(v, json_type_int))
				continue;
			name_part(part, sizeof(part), k);
			snprintf(name, sizeof(name), "ftbpf_agent_%s_total", part);
			header(f, name, "counter",
			       "the agent's counter of that name (ftbpf status)");
			fputs(name, f);
			value(f, (double)json_object_get_int64(v));
		}
	}
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

int metrics_format(struct json_object *status, char **ret, size_t *ret_len)
{
	FILE *f;

	if (!status || !json_object_is_type(status, json_type_object) || !get(status, "agent"))
		return -EINVAL;
	*ret = NULL;
	*ret_len = 0;
	f = open_memstream(ret, ret_len);
	if (!f)
		return -ENOMEM;
	agent_section(f, get(status, "agent"));
	jobs_section(f, get(status, "jobs"));
	ranks_section(f, get(status, "ranks"));
	mesh_section(f, get(status, "cluster"));
	if (fclose(f) != 0) {
		free(*ret);
		*ret = NULL;
		return -ENOMEM;
	}
	return 0;
}
