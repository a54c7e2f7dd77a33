#include "top_model.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_client.h"

const char *const top_state_filters[] = {
    "all",    "problems",   "running",	"blocked", "spinning", "stopped", "dstate",
    "zombie", "gpu_driver", "gpu_sync", "nccl",	   "exited",   "hung",	  "culprit",
};
const int top_nstate_filters = sizeof(top_state_filters) / sizeof(top_state_filters[0]);
/* the filters that are rank states (det_state_name's), for the header's counts */
enum { FILTER_STATES_FIRST = 2, FILTER_STATES_END = 12 };

static const char *const col_names[TC_N] = {
    [TC_SEVERITY] = "severity", [TC_JOB] = "job",     [TC_RANK] = "rank",     [TC_PID] = "pid",
    [TC_STATE] = "state",	[TC_TIME] = "time",   [TC_SYSC] = "sc/s",     [TC_GPU] = "gpu",
    [TC_PING] = "ping",		[TC_TIMER] = "timer", [TC_REASON] = "reason",
};

static const char top_keys_help[] =
    "q quit  Up/Down select  Enter detail  < > sort  r reverse  "
    "/ job filter  t state filter  c clear  e events  P peers  p pause  ? help";

const char *top_keys_line(int width)
{
	static const char narrow[] =
	    "q quit Enter detail <> sort r rev / job t state c clear P peers p pause ? help";

	return width >= (int)strlen(top_keys_help) ? top_keys_help : narrow;
}

const char *top_col_name(enum top_col c)
{
	return (unsigned)c < TC_N ? col_names[c] : "?";
}

int top_col_parse(const char *name)
{
	for (int i = 0; i < TC_N; i++)
		if (!strcasecmp(name, col_names[i]))
			return i;
	return -1;
}

int top_state_filter_parse(const char *name)
{
	for (int i = 0; i < top_nstate_filters; i++)
		if (!strcasecmp(name, top_state_filters[i]))
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
	free(m->peers);
	memset(m, 0, sizeof(*m));
}

/* For display: an absent field reads "-" */
static const char *dstr(struct json_object *o, const char *key)
{
	const char *s = ctl_get_str(o, key);

	return s ? s : "-";
}

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
	size_t nr, nj;

	if (!status || !ctl_get_bool(status, "ok") ||
	    !json_object_object_get_ex(status, "agent", &agent) ||
	    !json_object_object_get_ex(status, "ranks", &ranks) ||
	    !json_object_is_type(ranks, json_type_array) ||
	    !json_object_object_get_ex(status, "jobs", &jobs) ||
	    !json_object_is_type(jobs, json_type_array))
		return -EINVAL;
	nr = json_object_array_length(ranks);
	nj = json_object_array_length(jobs);
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
		snprintf(out, n, "%s %s job %s: %s", t, type, dstr(ev, "job"),
			 ctl_get_str(ev, "why") ? dstr(ev, "why") : "");
		return;
	}
	if (!strcmp(type, "exit")) {
		if (sig) {
			*ret_warn = 1;
			if (ctl_get_int(ev, "sender_pid", 0))
				snprintf(out, n, "%s exit %s: killed by SIG%s from pid %lld (%s)",
					 t, w, sig, (long long)ctl_get_int(ev, "sender_pid", 0),
					 dstr(ev, "sender_comm"));
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
				 dstr(ev, "sender_comm"));
		return;
	}
	if (!strcmp(type, "timer_expired")) {
		*ret_warn = 1;
		snprintf(out, n, "%s timer_expired %s scope '%s': SIG%s", t, w, dstr(ev, "scope"),
			 sig ? sig : "?");
		return;
	}
	if (!strcmp(type, "adopt")) {
		snprintf(out, n, "%s adopt %s (%s) %s", t, w, dstr(ev, "comm"), dstr(ev, "how"));
		return;
	}
	if (!strncmp(type, "peer_", 5)) {
		*ret_warn = !strcmp(type, "peer_suspect") || !strcmp(type, "peer_dead");
		snprintf(out, n, "%s %s %s (incarnation %lld)", t, type, dstr(ev, "peer"),
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
	const char *f = top_state_filters[m->filter_state];

	if (*m->filter_job && !strstr(r->job, m->filter_job))
		return 0;
	if (m->filter_state == 0)
		return 1;
	if (!strcmp(f, "problems"))
		return r->hung || r->culprit || r->exited || strcmp(r->state, "running");
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
	if (!found)
		m->sel_pid = m->nview ? m->rows[m->view[0]].pid : 0;
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
	m->sort = (enum top_col)(((int)m->sort + (dir < 0 ? TC_N - 1 : 1)) % TC_N);
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

static int sel_index(const struct top_model *m)
{
	for (int i = 0; i < m->nview; i++)
		if (m->rows[m->view[i]].pid == m->sel_pid)
			return i;
	return -1;
}

void top_model_move(struct top_model *m, int delta)
{
	int i = sel_index(m) + delta;

	if (!m->nview)
		return;
	if (i < 0)
		i = 0;
	if (i >= m->nview)
		i = m->nview - 1;
	m->sel_pid = m->rows[m->view[i]].pid;
}

const struct top_row *top_model_selected(const struct top_model *m)
{
	int i = sel_index(m);

	return i >= 0 ? &m->rows[m->view[i]] : NULL;
}

/* ---- frames ---- */
void top_frame_init(struct top_frame *f, int width)
{
	memset(f, 0, sizeof(*f));
	f->width = width;
}

void top_frame_fini(struct top_frame *f)
{
	free(f->lines);
	memset(f, 0, sizeof(*f));
}

void top_frame_clear(struct top_frame *f, int width)
{
	f->n = 0;
	f->width = width;
}

void top_frame_add(struct top_frame *f, enum top_attr a, const char *fmt, ...)
{
	struct top_line *l;
	va_list ap;
	int w =
	    f->width > 0 && f->width < (int)sizeof(l->text) ? f->width : (int)sizeof(l->text) - 1;

	if (f->n == f->cap) {
		int cap = f->cap ? f->cap * 2 : 64;
		struct top_line *nl = realloc(f->lines, (size_t)cap * sizeof(*nl));

		if (!nl)
			return; /* a line short on a frame is better than no frame */
		f->lines = nl;
		f->cap = cap;
	}
	l = &f->lines[f->n++];
	l->attr = a;
	l->selected = 0;
	va_start(ap, fmt);
	vsnprintf(l->text, sizeof(l->text), fmt, ap);
	va_end(ap);
	l->text[w] = 0;
	/* nothing that moves the cursor reaches the screen, and one byte is one column (job
	 * names and comms come from the ranks: a multi-byte character would shift the table) */
	for (char *p = l->text; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
		else if ((unsigned char)*p > 0x7f)
			*p = '?';
}

/* Column widths: minimum; REASON takes the rest. Optional columns are dropped, in order, when
 * the terminal is narrow. */
static const int col_width[TC_N] = {
    [TC_JOB] = 12, [TC_RANK] = 5, [TC_PID] = 7,	 [TC_STATE] = 10, [TC_TIME] = 7,
    [TC_SYSC] = 6, [TC_GPU] = 6,  [TC_PING] = 6, [TC_TIMER] = 10, [TC_REASON] = 20,
};
static const enum top_col drop_order[] = {TC_GPU, TC_PING, TC_TIMER, TC_SYSC, TC_TIME};

int top_layout(int width, enum top_col *ret_cols, int *ret_widths)
{
	int keep[TC_N] = {0}, n = 0, used;

	for (int c = TC_JOB; c < TC_N; c++)
		keep[c] = 1;
	for (size_t d = 0;; d++) {
		used = 2; /* the marker column and its space */
		for (int c = TC_JOB; c < TC_N; c++)
			if (keep[c])
				used += col_width[c] + (c != TC_REASON);
		if (used <= width || d == sizeof(drop_order) / sizeof(drop_order[0]))
			break;
		keep[drop_order[d]] = 0;
	}
	for (int c = TC_JOB; c < TC_N; c++)
		if (keep[c]) {
			ret_cols[n] = (enum top_col)c;
			ret_widths[n] = col_width[c];
			if (c == TC_REASON && width - used > 0)
				ret_widths[n] += width - used;
			n++;
		}
	return n;
}

static void fmt_age(double s, char *buf, size_t n)
{
	if (s < 0)
		snprintf(buf, n, "-");
	else if (s < 10)
		snprintf(buf, n, "%.1fs", s);
	else if (s < 600)
		snprintf(buf, n, "%.0fs", s);
	else if (s < 36000)
		snprintf(buf, n, "%dm%02d", (int)(s / 60), (int)s % 60);
	else if (s < 86400 * 10)
		snprintf(buf, n, "%dh%02d", (int)(s / 3600), (int)(s / 60) % 60);
	else
		snprintf(buf, n, "%dd", (int)(s / 86400));
}

static void fmt_rate(double r, char *buf, size_t n)
{
	if (r < 0)
		snprintf(buf, n, "-");
	else if (r < 1000)
		snprintf(buf, n, "%.0f", r);
	else if (r < 1e6)
		snprintf(buf, n, "%.1fk", r / 1e3);
	else
		snprintf(buf, n, "%.1fM", r / 1e6);
}

static void cell(const struct top_row *r, enum top_col c, char *buf, size_t n)
{
	char a[32];

	switch (c) {
	case TC_JOB:
		snprintf(buf, n, "%s", r->job);
		break;
	case TC_RANK:
		snprintf(buf, n, "%d", r->rank);
		break;
	case TC_PID:
		snprintf(buf, n, "%d", r->pid);
		break;
	case TC_STATE:
		snprintf(buf, n, "%s", r->state);
		break;
	case TC_TIME:
		fmt_age(r->state_for_s, buf, n);
		break;
	case TC_SYSC:
		fmt_rate(r->sysc_rate, buf, n);
		break;
	case TC_GPU:
		fmt_age(r->gpu_age_s, buf, n);
		break;
	case TC_PING:
		fmt_age(r->ping_age_s, buf, n);
		break;
	case TC_TIMER:
		if (!r->timers) {
			snprintf(buf, n, "-");
			break;
		}
		fmt_age(r->timer_left_s, a, sizeof(a));
		if (r->timers > 1)
			snprintf(buf, n, "%d:%s", r->timers, a);
		else
			snprintf(buf, n, "%s", a);
		break;
	case TC_REASON:
		snprintf(buf, n, "%s", r->reason);
		break;
	default:
		buf[0] = 0;
	}
}

static int right_aligned(enum top_col c)
{
	return c == TC_RANK || c == TC_PID || c == TC_TIME || c == TC_SYSC || c == TC_GPU ||
	       c == TC_PING || c == TC_TIMER;
}

/* Cells padded or cut to their column, separated by one space. */
static void table_line(char *out, size_t n, char marker, const enum top_col *cols,
		       const int *widths, int ncols, const char *const *cells)
{
	size_t len = 0;

	len += (size_t)snprintf(out, n, "%c ", marker);
	for (int i = 0; i < ncols && len < n; i++) {
		int w = widths[i];

		if (right_aligned(cols[i]))
			len += (size_t)snprintf(out + len, n - len, "%*.*s", w, w, cells[i]);
		else
			len += (size_t)snprintf(out + len, n - len, "%-*.*s", w, w, cells[i]);
		if (i + 1 < ncols && len < n)
			len += (size_t)snprintf(out + len, n - len, " ");
	}
	while (len > 0 && len < n && out[len - 1] == ' ') /* no trailing blanks */
		out[--len] = 0;
}

static char row_marker(const struct top_row *r)
{
	return r->culprit ? '!' : r->hung ? '*' : r->exited ? 'x' : ' ';
}

static enum top_attr row_attr(const struct top_row *r)
{
	return r->culprit ? TA_CULPRIT : r->hung ? TA_HUNG : r->exited ? TA_EXITED : TA_NORMAL;
}

static void header_lines(struct top_model *m, struct top_frame *f, const char *socket)
{
	char up[16], counts[256] = "";
	int nc = 0, hung = 0, failed = 0;

	fmt_age(m->uptime_s, up, sizeof(up));
	if (!m->ever)
		top_frame_add(f, TA_ERROR, "ftbpf-top: cannot reach ftbpfd at %s: %s (retrying)",
			      socket ? socket : "?", m->error);
	else if (!m->connected)
		top_frame_add(f, TA_ERROR,
			      "ftbpfd went away: %s; retrying (rows below are old) [%s]", m->error,
			      socket ? socket : "?");
	else
		top_frame_add(f, strcmp(m->health, "ok") ? TA_WARN : TA_TITLE,
			      "ftbpf-top  ftbpfd %s pid %d up %s  health %s  programs %s  soft %gs "
			      "hard %gs action %s",
			      m->version, m->agent_pid, up, m->health, m->programs, m->soft_s,
			      m->hard_s, m->action);
	for (int i = 0; i < m->njobs; i++) {
		hung += !strcmp(m->jobs[i].state, "hung");
		failed += !strcmp(m->jobs[i].state, "failed");
	}
	for (int s = FILTER_STATES_FIRST; s < FILTER_STATES_END; s++) {
		const char *state = top_state_filters[s];
		int k = 0;

		for (int i = 0; i < m->nrows; i++)
			k += !strcmp(m->rows[i].state, state);
		if (k)
			nc +=
			    snprintf(counts + nc, sizeof(counts) - (size_t)nc, " %s %d", state, k);
		if (nc >= (int)sizeof(counts))
			break;
	}
	top_frame_add(f, hung || failed ? TA_WARN : TA_INFO,
		      "Jobs %d (%d hung, %d failed)  Ranks %d:%s", m->njobs, hung, failed, m->nrows,
		      m->nrows ? counts : " none adopted");
	if (m->mesh_on)
		top_frame_add(f, m->peers_suspect || m->peers_dead ? TA_WARN : TA_INFO,
			      "Peers %d alive, %d suspect, %d dead, %d left; %d with hung ranks  "
			      "Sort %s%s  Filter job '%s' state %s",
			      m->peers_alive, m->peers_suspect, m->peers_dead, m->peers_left,
			      m->peers_hung, top_col_name(m->sort), m->reverse ? " (reversed)" : "",
			      m->filter_job, top_state_filters[m->filter_state]);
	else
		top_frame_add(f, TA_INFO, "Peers: mesh off  Sort %s%s  Filter job '%s' state %s",
			      top_col_name(m->sort), m->reverse ? " (reversed)" : "", m->filter_job,
			      top_state_filters[m->filter_state]);
	for (int i = 0, shown = 0; i < m->njobs && shown < 2; i++) {
		const struct top_job *j = &m->jobs[i];

		if (strcmp(j->state, "hung") && strcmp(j->state, "failed"))
			continue;
		top_frame_add(f, TA_WARN, "%s job %s: %s",
			      !strcmp(j->state, "hung") ? "HUNG" : "FAILED", j->id, j->why);
		shown++;
	}
}

static void column_header(struct top_frame *f, const enum top_col *cols, const int *widths,
			  int ncols)
{
	const char *cells[TC_N];
	char names[TC_N][16], line[512];

	for (int i = 0; i < ncols; i++) {
		const char *nm = top_col_name(cols[i]);
		int k = 0;

		for (; nm[k] && k < 15; k++)
			names[i][k] = (char)(nm[k] >= 'a' && nm[k] <= 'z' ? nm[k] - 32 : nm[k]);
		names[i][k] = 0;
		cells[i] = names[i];
	}
	table_line(line, sizeof(line), ' ', cols, widths, ncols, cells);
	top_frame_add(f, TA_TITLE, "%s", line);
}

void top_render_main(struct top_model *m, struct top_frame *f, int width, int height,
		     const char *socket, int show_events)
{
	enum top_col cols[TC_N];
	int widths[TC_N], ncols = top_layout(width, cols, widths), nev, rows_h, sel;

	top_frame_clear(f, width);
	header_lines(m, f, socket);
	column_header(f, cols, widths, ncols);
	if (height > 0) {
		int left = height - f->n - 1; /* the key line */

		nev = show_events ? (left >= 16 ? 6 : left >= 10 ? 3 : 0) : 0;
		rows_h = left - (nev ? nev + 1 : 0);
		if (rows_h < 1)
			rows_h = 1;
	} else {
		nev = show_events ? 10 : 0;
		rows_h = m->nview;
	}
	/* keep the selection on screen */
	sel = sel_index(m);
	if (sel >= 0 && sel < m->top)
		m->top = sel;
	if (sel >= 0 && sel >= m->top + rows_h)
		m->top = sel - rows_h + 1;
	clamp_top(m);
	for (int i = 0; i < rows_h; i++) {
		int vi = m->top + i;
		const struct top_row *r;
		char c[TC_N][200], line[512];
		const char *cells[TC_N];

		if (vi >= m->nview) {
			if (height > 0)
				top_frame_add(f, TA_NORMAL, "%s",
					      i == 0 && !m->nview
						  ? (m->nrows ? "  (no rank matches the filter)"
							      : "  (no ranks adopted on this host)")
						  : "");
			continue;
		}
		r = &m->rows[m->view[vi]];
		for (int k = 0; k < ncols; k++) {
			cell(r, cols[k], c[k], sizeof(c[k]));
			cells[k] = c[k];
		}
		table_line(line, sizeof(line), row_marker(r), cols, widths, ncols, cells);
		top_frame_add(f, row_attr(r), "%s", line);
		f->lines[f->n - 1].selected = height > 0 && r->pid == m->sel_pid;
	}
	if (nev) {
		top_frame_add(f, TA_TITLE, "EVENTS (newest last)");
		for (int i = 0; i < nev; i++) {
			int k = m->nev - nev + i;
			const struct top_event *e;

			if (k < 0) {
				if (height > 0)
					top_frame_add(f, TA_NORMAL, "%s", "");
				continue;
			}
			e = &m->ev[(m->ev_head + k) % TOP_EVENTS];
			top_frame_add(f, e->warn ? TA_WARN : TA_NORMAL, "%s", e->text);
		}
	}
	if (height > 0)
		top_frame_add(f, TA_KEYS, "%s", top_keys_line(width));
	else if (m->mesh_on)
		top_render_peers(m, f);
}

/* An array field, or NULL (absent, null, another type) */
static struct json_object *get_array(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_array)
		   ? v
		   : NULL;
}

static void json_lines(struct top_frame *f, struct json_object *arr, const char *indent, int max)
{
	if (!arr || !json_object_is_type(arr, json_type_array))
		return;
	for (size_t k = 0; k < json_object_array_length(arr) && (int)k < max; k++)
		top_frame_add(f, TA_NORMAL, "%s%s", indent,
			      json_object_get_string(json_object_array_get_idx(arr, k)));
}

void top_render_detail(const struct top_model *m, struct json_object *ex, const char *error,
		       struct top_frame *f, int width)
{
	struct json_object *r = NULL, *job = NULL, *th = NULL, *sigs = NULL, *jr = NULL,
			   *nccl = NULL, *tm = NULL;
	const struct top_row *row = top_model_selected(m);
	char age[16], step[48] = "none";

	top_frame_clear(f, width);
	if (!ex || !json_object_object_get_ex(ex, "rank", &r)) {
		top_frame_add(f, TA_TITLE, "ftbpf-top: rank detail (Esc/q back)");
		top_frame_add(f, TA_ERROR, "no detail for pid %d: %s", row ? row->pid : 0,
			      error ? error : "no answer");
		return;
	}
	for (int i = 0; i < m->nrows; i++) /* the row of the rank explained */
		if (m->rows[i].pid == ctl_get_int(r, "pid", 0))
			row = &m->rows[i];
	top_frame_add(f, TA_TITLE,
		      "rank %lld of job %s, pid %lld (%s)   Esc/q back, Up/Down scroll",
		      (long long)ctl_get_int(r, "rank", -1), dstr(r, "job"),
		      (long long)ctl_get_int(r, "pid", 0), dstr(r, "comm"));
	top_frame_add(f,
		      ctl_get_bool(r, "culprit") ? TA_CULPRIT
		      : ctl_get_bool(r, "hung")	 ? TA_HUNG
						 : TA_NORMAL,
		      "state %s: %s", dstr(r, "state"), dstr(r, "reason"));
	top_frame_add(f, TA_NORMAL,
		      "no progress %.1fs  hung %s  culprit %s  cpu %.0f%%  threads %lld",
		      ctl_get_dbl(r, "no_progress_s", 0), ctl_get_bool(r, "hung") ? "yes" : "no",
		      ctl_get_bool(r, "culprit") ? "YES" : "no", 100 * ctl_get_dbl(r, "cpu", 0),
		      (long long)ctl_get_int(r, "threads", 0));
	fmt_age(ctl_get_dbl(r, "ping_s_ago", -1), age, sizeof(age));
	if (ctl_get_int(r, "step", -1) >= 0)
		snprintf(step, sizeof(step), "%lld (%.1fs ago)",
			 (long long)ctl_get_int(r, "step", -1), ctl_get_dbl(r, "step_s_ago", 0));
	top_frame_add(f, TA_NORMAL,
		      "syscalls %lld  GPU ioctls %lld  GPU calls %lld%s%s  last ping %s  step %s",
		      (long long)ctl_get_int(r, "syscalls", 0),
		      (long long)ctl_get_int(r, "gpu_ioctls", 0),
		      (long long)ctl_get_int(r, "gpu_api_calls", 0),
		      ctl_get_str(r, "gpu_call") ? ", in " : "",
		      ctl_get_str(r, "gpu_call") ? dstr(r, "gpu_call") : "",
		      ctl_get_dbl(r, "ping_s_ago", -1) < 0 ? "never" : age, step);
	if ((nccl = get_array(r, "nccl")))
		for (size_t i = 0; i < json_object_array_length(nccl); i++) {
			struct json_object *c = json_object_array_get_idx(nccl, i);

			top_frame_add(f, TA_NORMAL,
				      "  NCCL comm %s rank %lld/%lld: collective #%lld, last %s",
				      ctl_get_str(c, "comm") ? dstr(c, "comm") : "?",
				      (long long)ctl_get_int(c, "rank", -1),
				      (long long)ctl_get_int(c, "nranks", 0),
				      (long long)ctl_get_int(c, "seq", 0),
				      ctl_get_str(c, "last_op") ? dstr(c, "last_op") : "-");
		}
	if (json_object_object_get_ex(ex, "job", &job) && job && ctl_get_str(job, "why"))
		top_frame_add(f, TA_WARN, "job %s: %s", dstr(job, "state"), dstr(job, "why"));
	if ((tm = get_array(ex, "timers")) && json_object_array_length(tm)) {
		top_frame_add(f, TA_TITLE, "TIMERS ARMED");
		for (size_t i = 0; i < json_object_array_length(tm); i++) {
			struct json_object *x = json_object_array_get_idx(tm, i);

			top_frame_add(f, TA_NORMAL, "scope '%s': %.1fs left, then SIG%s (%s)",
				      dstr(x, "scope"), ctl_get_dbl(x, "time_left_s", 0),
				      dstr(x, "signal_name"), dstr(x, "source"));
		}
	} else if (row && row->timers) {
		fmt_age(row->timer_left_s, age, sizeof(age));
		top_frame_add(f, TA_NORMAL, "timers: %d armed, the earliest expires in %s",
			      row->timers, age);
	} else {
		top_frame_add(f, TA_NORMAL, "timers: none armed");
	}
	if ((th = get_array(ex, "threads"))) {
		top_frame_add(f, TA_TITLE, "THREADS");
		for (size_t i = 0; i < json_object_array_length(th); i++) {
			struct json_object *t = json_object_array_get_idx(th, i);

			top_frame_add(
			    f, TA_NORMAL, "tid %lld %s  state %s  syscall %s (%.1fs)  wchan %s",
			    (long long)ctl_get_int(t, "tid", 0), dstr(t, "comm"), dstr(t, "state"),
			    ctl_get_str(t, "syscall") ? dstr(t, "syscall") : "-",
			    ctl_get_dbl(t, "in_syscall_s", 0),
			    ctl_get_str(t, "wchan") ? dstr(t, "wchan") : "-");
			json_lines(f, get_array(t, "kernel_stack"), "    ", 12);
		}
	}
	if ((sigs = get_array(ex, "signals")) && json_object_array_length(sigs)) {
		top_frame_add(f, TA_TITLE, "SIGNALS RECEIVED (newest last)");
		for (size_t i = 0; i < json_object_array_length(sigs); i++) {
			struct json_object *s = json_object_array_get_idx(sigs, i);

			if (ctl_get_bool(s, "delivered"))
				top_frame_add(f, TA_NORMAL, "%.1fs ago SIG%s delivered",
					      ctl_get_dbl(s, "s_ago", 0), dstr(s, "signal_name"));
			else
				top_frame_add(f, TA_NORMAL, "%.1fs ago SIG%s sent by pid %lld (%s)",
					      ctl_get_dbl(s, "s_ago", 0), dstr(s, "signal_name"),
					      (long long)ctl_get_int(s, "sender_pid", 0),
					      dstr(s, "sender_comm"));
		}
	} else {
		top_frame_add(f, TA_NORMAL, "signals received: none");
	}
	if ((jr = get_array(ex, "job_ranks")) && json_object_array_length(jr)) {
		top_frame_add(f, TA_TITLE, "OTHER RANKS OF THE JOB");
		for (size_t i = 0; i < json_object_array_length(jr); i++) {
			struct json_object *x = json_object_array_get_idx(jr, i);

			top_frame_add(f, ctl_get_bool(x, "culprit") ? TA_CULPRIT : TA_NORMAL,
				      "%c rank %lld pid %lld %s: %s",
				      ctl_get_bool(x, "culprit") ? '!' : ' ',
				      (long long)ctl_get_int(x, "rank", -1),
				      (long long)ctl_get_int(x, "pid", 0), dstr(x, "state"),
				      dstr(x, "reason"));
		}
	}
}

void top_render_peers(const struct top_model *m, struct top_frame *f)
{
	char age[16], cul[16];

	top_frame_add(f, TA_TITLE, "PEERS of %s (heartbeat mesh)", m->mesh_self);
	if (!m->mesh_on) {
		top_frame_add(f, TA_NORMAL, "  the heartbeat mesh is off (ftbpfd without --bind)");
		return;
	}
	top_frame_add(f, TA_TITLE, "  %-21s %-8s %5s %7s %6s %5s %5s %s", "PEER", "STATE", "INC",
		      "FOR", "RANKS", "HUNG", "DEAD", "CULPRIT");
	for (int i = 0; i < m->npeers; i++) {
		const struct top_peer *p = &m->peers[i];
		int bad = strcmp(p->state, "alive") && strcmp(p->state, "left");

		fmt_age(p->state_for_s, age, sizeof(age));
		if (p->culprit_rank >= 0)
			snprintf(cul, sizeof(cul), "rank %d", p->culprit_rank);
		else
			snprintf(cul, sizeof(cul), "-");
		if (p->has_health)
			top_frame_add(f, bad || p->hung ? TA_WARN : TA_NORMAL,
				      "%c %-21s %-8s %5lld %7s %6d %5d %5d %s", p->hung ? '*' : ' ',
				      p->addr, p->state, (long long)p->incarnation, age, p->ranks,
				      p->hung, p->dead, cul);
		else
			top_frame_add(f, bad ? TA_WARN : TA_NORMAL,
				      "  %-21s %-8s %5lld %7s %6s %5s %5s ?", p->addr, p->state,
				      (long long)p->incarnation, age, "?", "?", "?");
	}
}

void top_render_help(struct top_frame *f, int width)
{
	static const char *const lines[] = {
	    "ftbpf-top: the live view of ftbpfd's ranks   (any key returns)",
	    "",
	    "  Up/Down, k/j    move the selection       PgUp/PgDn, Home/End  by pages, to the ends",
	    "  Enter           detail of the selected rank: threads, kernel stacks, signals, "
	    "timers",
	    "  < >             sort by the previous/next column; r reverses",
	    "  /               filter by job (substring; empty clears)",
	    "  t T             cycle the state filter: all, problems, each state, hung, culprit",
	    "  c               clear the filters      e  show/hide events    p  pause updates",
	    "  P               the heartbeat mesh's peers: state, incarnation, hung/dead ranks, "
	    "culprit",
	    "  q               quit (Esc leaves the detail and help views)",
	    "",
	    "Markers: '!' the culprit rank, '*' a rank of a hung job, 'x' an exited rank.",
	    "Columns: TIME in the state, SC/S syscalls per second, GPU age of the last GPU",
	    "activity, PING age of the last ftbpf_ping/step, TIMER armed timers:time left.",
	};

	top_frame_clear(f, width);
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		top_frame_add(f, i ? TA_NORMAL : TA_TITLE, "%s", lines[i]);
}
