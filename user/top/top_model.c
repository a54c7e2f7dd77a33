#include "top/top_model.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ctl_client.h"
#include "lib/detector.h"

/* The state filter: all, problems, every rank state of the detector's table, hung, culprit. */
enum { FILTER_STATES_FIRST = 2, FILTER_STATES_END = FILTER_STATES_FIRST + RS__N };
const int top_nstate_filters = FILTER_STATES_END + 2;

const char *top_state_filter(int i)
{
	if (i == 0)
		return "all";
	if (i == 1)
		return "problems";
	if (i >= FILTER_STATES_FIRST && i < FILTER_STATES_END)
		return det_state_name((enum rank_state)(i - FILTER_STATES_FIRST));
	return i == FILTER_STATES_END ? "hung" : i == FILTER_STATES_END + 1 ? "culprit" : "?";
}

static const char *const col_names[TC_N] = {
    [TC_SEVERITY] = "severity", [TC_JOB] = "job",     [TC_RANK] = "rank", [TC_PID] = "pid",
    [TC_STATE] = "state",	[TC_TIME] = "time",   [TC_SYSC] = "sc/s", [TC_GPU] = "gpu",
    [TC_PING] = "ping",		[TC_TIMER] = "timer", [TC_SLOW] = "slow", [TC_CPU] = "cpu%",
    [TC_RSS] = "rss",		[TC_THR] = "thr",     [TC_GPUU] = "gpu%", [TC_GMEM] = "gmem",
    [TC_REASON] = "reason",
};

const char *top_col_name(enum top_col c)
{
	return (unsigned)c < TC_N ? col_names[c] : "?";
}

int top_col_parse(const char *name)
{
	for (int i = 0; i < TC_N; i++)
		if (!strcasecmp(name, col_names[i]))
			return i;
	return !strcasecmp(name, "cpu") ? TC_CPU : !strcasecmp(name, "threads") ? TC_THR : -1;
}

int top_state_filter_parse(const char *name)
{
	for (int i = 0; i < top_nstate_filters; i++)
		if (!strcasecmp(name, top_state_filter(i)))
			return i;
	return -1;
}

void top_model_init(struct top_model *m)
{
	memset(m, 0, sizeof(*m));
	m->sort = TC_SEVERITY;
	snprintf(m->error, sizeof(m->error), "not connected yet");
}

void top_model_fini(struct top_model *m)
{
	free(m->jobs);
	free(m->rows);
	free(m->view);
	free(m->prev);
	free(m->cpu_prev);
	free(m->peers);
	memset(m, 0, sizeof(*m));
}

/* For display: an absent field reads "-" */
static void copy_str(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

static int cmp_prev(const void *a, const void *b)
{
	const struct top_prev *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

static const struct top_prev *prev_find(const struct top_model *m, int pid)
{
	struct top_prev key = {.pid = pid};

	if (!m->nprev)
		return NULL;
	return bsearch(&key, m->prev, (size_t)m->nprev, sizeof(key), cmp_prev);
}

static void row_from_json(struct top_row *r, struct json_object *o)
{
	memset(r, 0, sizeof(*r));
	copy_str(r->job, sizeof(r->job), ctl_get_str(o, "job"));
	r->rank = (int)ctl_get_int(o, "rank", -1);
	r->pid = (int)ctl_get_int(o, "pid", 0);
	copy_str(r->comm, sizeof(r->comm), ctl_get_str(o, "comm"));
	copy_str(r->state, sizeof(r->state), ctl_get_str(o, "state"));
	copy_str(r->reason, sizeof(r->reason), ctl_get_str(o, "reason"));
	r->state_for_s = ctl_get_dbl(o, "state_for_s", 0);
	r->syscalls = (uint64_t)ctl_get_int(o, "syscalls", 0);
	r->sysc_rate = -1;
	r->gpu_age_s = ctl_get_dbl(o, "gpu_last_s_ago", -1);
	copy_str(r->gpu_call, sizeof(r->gpu_call), ctl_get_str(o, "gpu_call"));
	if (*r->gpu_call) /* a probed call in flight is GPU activity now */
		r->gpu_age_s = 0;
	r->ping_age_s = ctl_get_dbl(o, "ping_s_ago", -1);
	r->step = ctl_get_int(o, "step", -1);
	r->timers = (int)ctl_get_int(o, "timers", 0);
	r->timer_left_s = ctl_get_dbl(o, "timer_left_s", -1);
	r->hung = ctl_get_bool(o, "hung");
	r->culprit = ctl_get_bool(o, "culprit");
	r->exited = ctl_get_bool(o, "exited");
	r->slowdown = ctl_get_dbl(o, "slowdown", 0);
	r->straggler = ctl_get_bool(o, "straggler");
	r->cpu_pct = -1;
	r->rss_kb = -1;
	r->threads = (int)ctl_get_int(o, "threads", -1);
	r->gpu_pct = -1;
	r->gmem_kb = -1;
}

static void job_from_json(struct top_job *j, struct json_object *o)
{
	memset(j, 0, sizeof(*j));
	copy_str(j->id, sizeof(j->id), ctl_get_str(o, "job"));
	copy_str(j->state, sizeof(j->state), ctl_get_str(o, "state"));
	copy_str(j->why, sizeof(j->why), ctl_get_str(o, "why"));
	j->ranks = (int)ctl_get_int(o, "ranks", 0);
	j->live = (int)ctl_get_int(o, "live", 0);
	j->no_progress_s = ctl_get_dbl(o, "no_progress_s", 0);
}

/* A job's ranks on other hosts (the agent's "ranks_elsewhere"): rows of their own, their host
 * in front of the reason; no syscall rate, no pid to act on here. */
static size_t elsewhere_count(struct json_object *jobs, size_t nj)
{
	size_t n = 0;

	for (size_t i = 0; i < nj; i++) {
		struct json_object *re;

		if (json_object_object_get_ex(json_object_array_get_idx(jobs, i), "ranks_elsewhere",
					      &re) &&
		    json_object_is_type(re, json_type_array))
			n += json_object_array_length(re);
	}
	return n;
}

static void elsewhere_rows(struct top_row *r, struct json_object *jobs, size_t nj)
{
	for (size_t i = 0; i < nj; i++) {
		struct json_object *j = json_object_array_get_idx(jobs, i), *re;

		if (!json_object_object_get_ex(j, "ranks_elsewhere", &re) ||
		    !json_object_is_type(re, json_type_array))
			continue;
		for (size_t k = 0; k < json_object_array_length(re); k++, r++) {
			struct json_object *x = json_object_array_get_idx(re, k);

			memset(r, 0, sizeof(*r));
			copy_str(r->job, sizeof(r->job), ctl_get_str(j, "job"));
			r->rank = (int)ctl_get_int(x, "rank", -1);
			r->pid = (int)ctl_get_int(x, "pid", 0);
			copy_str(r->state, sizeof(r->state), ctl_get_str(x, "state"));
			snprintf(r->reason, sizeof(r->reason), "on %.40s: %.140s",
				 ctl_get_str_or(x, "node", "?"), ctl_get_str_or(x, "reason", "-"));
			r->state_for_s = ctl_get_dbl(x, "no_progress_s", 0);
			r->sysc_rate = r->gpu_age_s = r->ping_age_s = r->timer_left_s = -1;
			r->step = -1;
			r->cpu_pct = r->rss_kb = r->threads = r->gpu_pct = r->gmem_kb = -1;
			r->hung = !strcmp(ctl_get_str_or(j, "state", ""), "hung") &&
				  !ctl_get_bool(x, "exited");
			r->culprit = ctl_get_bool(x, "culprit");
			r->exited = ctl_get_bool(x, "exited");
			r->slowdown = ctl_get_dbl(x, "slowdown", 0); /* as this host judges it */
			r->straggler = ctl_get_bool(x, "straggler");
			r->elsewhere = 1;
		}
	}
}

static void cluster_from_json(struct top_model *m, struct json_object *cl)
{
	struct json_object *peers;
	size_t n;

	m->mesh_on = json_object_is_type(cl, json_type_object);
	m->peers_alive = m->peers_suspect = m->peers_dead = m->peers_left = m->peers_hung = 0;
	m->npeers = 0;
	copy_str(m->mesh_self, sizeof(m->mesh_self), ctl_get_str(cl, "self"));
	if (!m->mesh_on || !json_object_object_get_ex(cl, "peers", &peers) ||
	    !json_object_is_type(peers, json_type_array))
		return;
	n = json_object_array_length(peers);
	free(m->peers);
	m->peers = calloc(n ? n : 1, sizeof(*m->peers));
	if (!m->peers)
		return;
	for (size_t i = 0; i < n; i++) {
		struct json_object *p = json_object_array_get_idx(peers, i), *h = NULL;
		struct top_peer *tp = &m->peers[m->npeers];
		const char *st = ctl_get_str(p, "state");

		if (!st)
			continue;
		m->npeers++;
		copy_str(tp->addr, sizeof(tp->addr), ctl_get_str(p, "addr"));
		copy_str(tp->state, sizeof(tp->state), st);
		tp->incarnation = ctl_get_int(p, "incarnation", 0);
		tp->state_for_s = ctl_get_dbl(p, "state_for_s", 0);
		tp->culprit_rank = -1;
		m->peers_alive += !strcmp(st, "alive");
		m->peers_suspect += !strcmp(st, "suspect");
		m->peers_dead += !strcmp(st, "dead");
		m->peers_left += !strcmp(st, "left");
		if (json_object_object_get_ex(p, "health", &h) &&
		    json_object_is_type(h, json_type_object)) {
			tp->has_health = 1;
			tp->ranks = (int)ctl_get_int(h, "ranks", 0);
			tp->hung = (int)ctl_get_int(h, "hung", 0);
			tp->dead = (int)ctl_get_int(h, "dead", 0);
			tp->culprit_rank = (int)ctl_get_int(h, "culprit_rank", -1);
			m->peers_hung += tp->hung > 0;
		}
	}
}

static void rebuild_view(struct top_model *m);

/* The agent's health: the counters of things lost or refused, when any is not zero. */
static void health_from_json(struct top_model *m, struct json_object *agent)
{
	static const char *const lost[] = {
	    "ringbuf_drops", "thread_map_full",	      "proc_map_full",	  "nccl_comm_map_full",
	    "adopt_errors",  "eventlog_write_errors", "ctl_dropped_slow", "timers_rejected_full"};
	struct json_object *c = NULL;
	int len = 0;

	json_object_object_get_ex(agent, "counters", &c);
	m->health[0] = 0;
	for (size_t i = 0; i < sizeof(lost) / sizeof(lost[0]); i++) {
		int64_t v = ctl_get_int(c, lost[i], 0);

		if (v > 0 && len >= 0 && len < (int)sizeof(m->health))
			len += snprintf(m->health + len, sizeof(m->health) - (size_t)len,
					"%s%s %lld", len ? ", " : "", lost[i], (long long)v);
	}
	if (!m->health[0])
		snprintf(m->health, sizeof(m->health), "ok");
}

int top_model_update(struct top_model *m, struct json_object *status, double now_s)
{
	struct json_object *agent, *ranks, *jobs, *cl = NULL, *f = NULL;
	struct top_row *rows = NULL;
	struct top_job *jv = NULL;
	struct top_prev *prev = NULL;
	int *view = NULL;
	size_t nr, nj, nl;

	if (!status || !ctl_get_bool(status, "ok") ||
	    !json_object_object_get_ex(status, "agent", &agent) ||
	    !json_object_object_get_ex(status, "ranks", &ranks) ||
	    !json_object_is_type(ranks, json_type_array) ||
	    !json_object_object_get_ex(status, "jobs", &jobs) ||
	    !json_object_is_type(jobs, json_type_array))
		return -EINVAL;
	nl = nr = json_object_array_length(ranks);
	nj = json_object_array_length(jobs);
	nr += elsewhere_count(jobs, nj);
	rows = calloc(nr ? nr : 1, sizeof(*rows));
	view = calloc(nr ? nr : 1, sizeof(*view));
	prev = calloc(nr ? nr : 1, sizeof(*prev));
	jv = calloc(nj ? nj : 1, sizeof(*jv));
	if (!rows || !view || !prev || !jv) {
		free(rows);
		free(view);
		free(prev);
		free(jv);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nr; i++) {
		struct top_row *r = &rows[i];
		const struct top_prev *p;

		if (i >= nl) { /* ranks of this host's jobs on other hosts: after ours */
			elsewhere_rows(rows + nl, jobs, nj);
			break;
		}
		row_from_json(r, json_object_array_get_idx(ranks, i));
		p = prev_find(m, r->pid);
		if (p && now_s > m->prev_t && r->syscalls >= p->syscalls)
			r->sysc_rate = (double)(r->syscalls - p->syscalls) / (now_s - m->prev_t);
		prev[i].pid = r->pid;
		prev[i].syscalls = r->syscalls;
	}
	qsort(prev, nr, sizeof(*prev), cmp_prev);
	for (size_t i = 0; i < nj; i++)
		job_from_json(&jv[i], json_object_array_get_idx(jobs, i));
	free(m->rows);
	free(m->view);
	free(m->prev);
	free(m->jobs);
	m->rows = rows;
	m->nrows = (int)nr;
	m->view = view;
	m->prev = prev;
	m->nprev = (int)nr;
	m->prev_t = now_s;
	m->jobs = jv;
	m->njobs = (int)nj;
	m->agent_pid = (int)ctl_get_int(agent, "pid", 0);
	copy_str(m->version, sizeof(m->version), ctl_get_str(agent, "version"));
	json_object_object_get_ex(agent, "features", &f);
	copy_str(m->programs, sizeof(m->programs), ctl_get_str(f, "programs"));
	copy_str(m->action, sizeof(m->action), ctl_get_str(agent, "action"));
	m->uptime_s = ctl_get_dbl(agent, "uptime_s", 0);
	m->soft_s = ctl_get_dbl(agent, "soft_timeout_s", 0);
	m->soft_auto = ctl_get_bool(agent, "soft_timeout_auto");
	m->hard_s = ctl_get_dbl(agent, "hard_timeout_s", 0);
	health_from_json(m, agent);
	json_object_object_get_ex(status, "cluster", &cl);
	cluster_from_json(m, cl);
	m->connected = 1;
	m->ever = 1;
	m->error[0] = 0;
	rebuild_view(m);
	return 0;
}

int top_parse_proc_stat(const char *buf, size_t len, long ticks_per_s, long page_kb,
			struct top_procstat *ret)
{
	char tmp[1024];
	const char *rp;
	unsigned long long ut, st;
	long long threads, rss;

	if (len >= sizeof(tmp))
		len = sizeof(tmp) - 1;
	memcpy(tmp, buf, len);
	tmp[len] = 0;
	rp = strrchr(tmp, ')'); /* comm may hold anything, ')' too: the last one ends it */
	if (!rp || ticks_per_s <= 0 || page_kb <= 0)
		return -EINVAL;
	/* after comm: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
	 * utime stime cutime cstime priority nice num_threads itrealvalue starttime vsize rss */
	if (sscanf(rp + 1,
		   " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %lld "
		   "%*d %*u %*u %lld",
		   &ut, &st, &threads, &rss) != 4 ||
	    threads < 0 || rss < 0)
		return -EINVAL;
	ret->cpu_s = (double)(ut + st) / (double)ticks_per_s;
	ret->threads = threads > INT32_MAX ? INT32_MAX : (int)threads;
	ret->rss_kb = rss * page_kb;
	return 0;
}

static int cmp_procstat(const void *a, const void *b)
{
	const struct top_procstat *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

int top_model_proc_stats(struct top_model *m, const struct top_procstat *ps, int n, double now_s)
{
	struct top_procstat *cur = calloc(n > 0 ? (size_t)n : 1, sizeof(*cur));
	double dt = now_s - m->cpu_prev_t;

	if (!cur)
		return -ENOMEM;
	if (n > 0)
		memcpy(cur, ps, (size_t)n * sizeof(*cur));
	qsort(cur, (size_t)n, sizeof(*cur), cmp_procstat);
	for (int i = 0; i < m->nrows; i++) {
		struct top_row *r = &m->rows[i];
		const struct top_procstat *p, *q;

		if (r->elsewhere)
			continue;
		p = n > 0 ? bsearch(&(struct top_procstat){.pid = r->pid}, cur, (size_t)n,
				    sizeof(*cur), cmp_procstat)
			  : NULL;
		if (!p)
			continue;
		r->rss_kb = p->rss_kb;
		if (r->threads < 0)
			r->threads = p->threads;
		q = m->ncpu_prev
			? bsearch(p, m->cpu_prev, (size_t)m->ncpu_prev, sizeof(*cur), cmp_procstat)
			: NULL;
		if (q && dt > 0 && p->cpu_s >= q->cpu_s) /* a lower time: another process */
			r->cpu_pct = (p->cpu_s - q->cpu_s) / dt * 100;
	}
	free(m->cpu_prev);
	m->cpu_prev = cur;
	m->ncpu_prev = n > 0 ? n : 0;
	m->cpu_prev_t = now_s;
	rebuild_view(m);
	return 0;
}

void top_model_gpu_stats(struct top_model *m, const struct top_gpustat *g, int n)
{
	m->gpu_on = 1;
	for (int i = 0; i < m->nrows; i++) {
		struct top_row *r = &m->rows[i];

		if (r->elsewhere || r->exited)
			continue;
		r->gpu_pct = 0;
		r->gmem_kb = 0;
		for (int k = 0; k < n; k++)
			if (g[k].pid == r->pid) {
				r->gpu_pct = g[k].sm_pct;
				r->gmem_kb = g[k].mem_kb;
				break;
			}
	}
	rebuild_view(m);
}

void top_model_disconnected(struct top_model *m, const char *why)
{
	m->connected = 0;
	copy_str(m->error, sizeof(m->error), why);
}

/* ---- events ---- */
static const char *jtime(struct json_object *ev, char *buf, size_t n)
{
	const char *ts = ctl_get_str(ev, "ts"); /* 2026-11-22T09:16:50.544Z */

	if (ts && strlen(ts) >= 19)
		snprintf(buf, n, "%.8s", ts + 11);
	else
		snprintf(buf, n, "--:--:--");
	return buf;
}

static void who(struct json_object *ev, char *buf, size_t n)
{
	const char *job = ctl_get_str(ev, "job");
	int64_t rank = ctl_get_int(ev, "rank", -1), pid = ctl_get_int(ev, "pid", 0);

	if (job && rank >= 0)
		snprintf(buf, n, "%s/r%lld pid %lld", job, (long long)rank, (long long)pid);
	else if (pid)
		snprintf(buf, n, "pid %lld", (long long)pid);
	else
		buf[0] = 0;
}

static int is_fatal_signal(const char *name)
{
	static const char *const fatal[] = {"KILL", "TERM", "INT",  "ABRT", "SEGV",
					    "BUS",  "FPE",  "QUIT", "HUP",  NULL};

	for (int i = 0; name && fatal[i]; i++)
		if (!strcmp(name, fatal[i]))
			return 1;
	return 0;
}

/* One line for an event: the common types get a sentence, the rest key=value pairs. */
static void event_text(struct json_object *ev, char *out, size_t n, int *ret_warn)
{
	const char *type = ctl_get_str(ev, "type"), *sig = ctl_get_str(ev, "signal_name");
	char t[16], w[128];
	int len;

	if (!type)
		type = "?";
	jtime(ev, t, sizeof(t));
	who(ev, w, sizeof(w));
	*ret_warn = 0;
	if (!strcmp(type, "hang") || !strcmp(type, "job_failed") || !strcmp(type, "hard_timeout")) {
		*ret_warn = 1;
		snprintf(out, n, "%s %s job %s: %s", t, type, ctl_get_str_or(ev, "job", "-"),
			 ctl_get_str(ev, "why") ? ctl_get_str_or(ev, "why", "-") : "");
		return;
	}
	if (!strcmp(type, "exit")) {
		if (sig) {
			*ret_warn = 1;
			if (ctl_get_int(ev, "sender_pid", 0))
				snprintf(out, n, "%s exit %s: killed by SIG%s from pid %lld (%s)",
					 t, w, sig, (long long)ctl_get_int(ev, "sender_pid", 0),
					 ctl_get_str_or(ev, "sender_comm", "-"));
			else
				snprintf(out, n, "%s exit %s: killed by SIG%s", t, w, sig);
		} else {
			*ret_warn = ctl_get_int(ev, "exit_code", 0) != 0;
			snprintf(out, n, "%s exit %s: exit code %lld", t, w,
				 (long long)ctl_get_int(ev, "exit_code", 0));
		}
		return;
	}
	if (!strcmp(type, "signal") || !strcmp(type, "signal_delivered")) {
		*ret_warn = is_fatal_signal(sig);
		len = snprintf(out, n, "%s %s SIG%s to %s", t, type, sig ? sig : "?", w);
		if (len > 0 && (size_t)len < n && ctl_get_int(ev, "sender_pid", 0))
			snprintf(out + len, n - (size_t)len, " from pid %lld (%s)",
				 (long long)ctl_get_int(ev, "sender_pid", 0),
				 ctl_get_str_or(ev, "sender_comm", "-"));
		return;
	}
	if (!strcmp(type, "timer_expired")) {
		*ret_warn = 1;
		snprintf(out, n, "%s timer_expired %s scope '%s': SIG%s", t, w,
			 ctl_get_str_or(ev, "scope", "-"), sig ? sig : "?");
		return;
	}
	if (!strcmp(type, "adopt")) {
		snprintf(out, n, "%s adopt %s (%s) %s", t, w, ctl_get_str_or(ev, "comm", "-"),
			 ctl_get_str_or(ev, "how", "-"));
		return;
	}
	if (!strncmp(type, "peer_", 5)) {
		*ret_warn = !strcmp(type, "peer_suspect") || !strcmp(type, "peer_dead");
		snprintf(out, n, "%s %s %s (incarnation %lld)", t, type,
			 ctl_get_str_or(ev, "peer", "-"),
			 (long long)ctl_get_int(ev, "incarnation", 0));
		return;
	}
	*ret_warn = !strcmp(type, "action") || !strcmp(type, "oom_victim");
	len = snprintf(out, n, "%s %s", t, type);
	json_object_object_foreach (ev, key, val) {
		if (len < 0 || (size_t)len >= n)
			break;
		if (!val || !strcmp(key, "seq") || !strcmp(key, "ts") || !strcmp(key, "type") ||
		    json_object_is_type(val, json_type_array) ||
		    json_object_is_type(val, json_type_object))
			continue;
		len += snprintf(out + len, n - (size_t)len, " %s=%s", key,
				json_object_get_string(val));
	}
}

void top_model_add_event(struct top_model *m, struct json_object *ev)
{
	uint64_t seq = (uint64_t)ctl_get_int(ev, "seq", 0);
	struct top_event *e;

	if (!json_object_is_type(ev, json_type_object))
		return;
	if (seq && seq <= m->last_seq)
		return;
	if (seq)
		m->last_seq = seq;
	e = &m->ev[(m->ev_head + m->nev) % TOP_EVENTS];
	if (m->nev == TOP_EVENTS)
		m->ev_head = (m->ev_head + 1) % TOP_EVENTS;
	else
		m->nev++;
	e->seq = seq;
	event_text(ev, e->text, sizeof(e->text), &e->warn);
}

void top_model_clear_events(struct top_model *m)
{
	m->nev = m->ev_head = 0;
	m->last_seq = 0;
}

/* ---- view: filter, sort, selection ---- */
static int row_matches(const struct top_model *m, const struct top_row *r)
{
	const char *f = top_state_filter(m->filter_state);

	if (*m->filter_job && !strstr(r->job, m->filter_job))
		return 0;
	if (m->filter_state == 0)
		return 1;
	if (!strcmp(f, "problems"))
		return r->hung || r->culprit || r->exited || r->straggler ||
		       strcmp(r->state, "running");
	if (!strcmp(f, "hung"))
		return r->hung;
	if (!strcmp(f, "culprit"))
		return r->culprit;
	return !strcmp(r->state, f);
}

static int severity(const struct top_row *r)
{
	return r->culprit ? 0 : r->hung ? 1 : r->exited ? 3 : strcmp(r->state, "running") ? 2 : 4;
}

static int cmp_dbl(double a, double b)
{
	return (a > b) - (a < b);
}

static int cmp_rows(const struct top_row *a, const struct top_row *b, enum top_col c)
{
	int r = 0;

	switch (c) {
	case TC_SEVERITY:
		r = severity(a) - severity(b);
		break;
	case TC_JOB:
		r = strcmp(a->job, b->job);
		break;
	case TC_RANK:
		r = a->rank - b->rank;
		break;
	case TC_PID:
		r = a->pid - b->pid;
		break;
	case TC_STATE:
		r = strcmp(a->state, b->state);
		break;
	case TC_TIME: /* longest first reads best: compare reversed */
		r = cmp_dbl(b->state_for_s, a->state_for_s);
		break;
	case TC_SYSC:
		r = cmp_dbl(b->sysc_rate, a->sysc_rate);
		break;
	case TC_GPU: /* most recent first; never last */
		r = cmp_dbl(a->gpu_age_s < 0 ? 1e18 : a->gpu_age_s,
			    b->gpu_age_s < 0 ? 1e18 : b->gpu_age_s);
		break;
	case TC_PING: /* oldest first: the one that stopped reporting */
		r = cmp_dbl(b->ping_age_s, a->ping_age_s);
		break;
	case TC_TIMER: /* least time left first; none last */
		r = cmp_dbl(a->timers ? a->timer_left_s : 1e18, b->timers ? b->timer_left_s : 1e18);
		break;
	case TC_SLOW: /* the slowest first */
		r = cmp_dbl(b->slowdown, a->slowdown);
		break;
	case TC_CPU: /* the busiest first */
		r = cmp_dbl(b->cpu_pct, a->cpu_pct);
		break;
	case TC_RSS:
		r = cmp_dbl((double)b->rss_kb, (double)a->rss_kb);
		break;
	case TC_THR:
		r = b->threads - a->threads;
		break;
	case TC_GPUU: /* the busiest first */
		r = b->gpu_pct - a->gpu_pct;
		break;
	case TC_GMEM:
		r = cmp_dbl((double)b->gmem_kb, (double)a->gmem_kb);
		break;
	case TC_REASON:
		r = strcmp(a->reason, b->reason);
		break;
	case TC_N:
		break;
	}
	return r;
}

/* qsort has no context argument: the comparison reads the model through this pointer, set
 * only for the duration of one sort (single-threaded program). */
static const struct top_model *sorting;

static int cmp_view(const void *x, const void *y)
{
	const struct top_row *a = &sorting->rows[*(const int *)x],
			     *b = &sorting->rows[*(const int *)y];
	int r = cmp_rows(a, b, sorting->sort);

	if (sorting->reverse)
		r = -r;
	if (!r)
		r = strcmp(a->job, b->job);
	if (!r)
		r = a->rank - b->rank;
	if (!r)
		r = a->pid - b->pid;
	return r;
}

static void clamp_top(struct top_model *m)
{
	if (m->top > m->nview - 1)
		m->top = m->nview > 0 ? m->nview - 1 : 0;
	if (m->top < 0)
		m->top = 0;
}

static void rebuild_view(struct top_model *m)
{
	int found = 0;

	m->nview = 0;
	for (int i = 0; i < m->nrows; i++)
		if (row_matches(m, &m->rows[i]))
			m->view[m->nview++] = i;
	sorting = m;
	qsort(m->view, (size_t)m->nview, sizeof(int), cmp_view);
	sorting = NULL;
	for (int i = 0; i < m->nview; i++)
		found |= m->rows[m->view[i]].pid == m->sel_pid;
	if (!found || !m->sel_user) {
		/* not chosen by the user: the first culprit when there is one (Enter opens it),
		 * else the first row */
		m->sel_pid = m->nview ? m->rows[m->view[0]].pid : 0;
		for (int i = 0; i < m->nview; i++)
			if (m->rows[m->view[i]].culprit) {
				m->sel_pid = m->rows[m->view[i]].pid;
				break;
			}
		if (!found)
			m->sel_user = 0;
	}
	clamp_top(m);
}

void top_model_sort(struct top_model *m, enum top_col c, int reverse)
{
	if ((unsigned)c >= TC_N)
		return;
	m->sort = c;
	m->reverse = !!reverse;
	rebuild_view(m);
}

void top_model_sort_next(struct top_model *m, int dir)
{
	do /* the GPU columns only where they are shown */
		m->sort = (enum top_col)(((int)m->sort + (dir < 0 ? TC_N - 1 : 1)) % TC_N);
	while (!m->gpu_on && (m->sort == TC_GPUU || m->sort == TC_GMEM));
	rebuild_view(m);
}

void top_model_filter_job(struct top_model *m, const char *substring)
{
	copy_str(m->filter_job, sizeof(m->filter_job), substring);
	rebuild_view(m);
}

void top_model_filter_state(struct top_model *m, int index)
{
	m->filter_state = ((index % top_nstate_filters) + top_nstate_filters) % top_nstate_filters;
	rebuild_view(m);
}

int top_model_selected_index(const struct top_model *m)
{
	for (int i = 0; i < m->nview; i++)
		if (m->rows[m->view[i]].pid == m->sel_pid)
			return i;
	return -1;
}

void top_model_keep_visible(struct top_model *m, int rows)
{
	int sel = top_model_selected_index(m);

	if (sel >= 0 && sel < m->top)
		m->top = sel;
	if (sel >= 0 && sel >= m->top + rows)
		m->top = sel - rows + 1;
	clamp_top(m);
}

void top_model_move(struct top_model *m, int delta)
{
	int i = top_model_selected_index(m) + delta;

	if (!m->nview)
		return;
	if (i < 0)
		i = 0;
	if (i >= m->nview)
		i = m->nview - 1;
	m->sel_pid = m->rows[m->view[i]].pid;
	m->sel_user = 1;
}

const struct top_row *top_model_selected(const struct top_model *m)
{
	int i = top_model_selected_index(m);

	return i >= 0 ? &m->rows[m->view[i]] : NULL;
}
