#include "top/top_collect.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/ctl_client.h"
#include "os/nvml.h"

#define EVENTS_BATCH 100

static int fetch_events(struct top_source *src, struct top_model *m)
{
	struct json_object *req = json_object_new_object(), *o;
	struct ctl_conn *c = NULL;
	int r;

	json_object_object_add(req, "cmd", json_object_new_string("events"));
	json_object_object_add(req, "after", json_object_new_int64((int64_t)m->last_seq));
	json_object_object_add(req, "limit", json_object_new_int(EVENTS_BATCH));
	r = ctl_conn_open(src->socket, src->timeout_ms, &c);
	if (r == 0)
		r = ctl_conn_send(c, req);
	json_object_put(req);
	while (r == 0 && (r = ctl_conn_read(c, &o)) == 0) {
		struct json_object *ev;
		int end = 0;

		if (json_object_object_get_ex(o, "event", &ev))
			top_model_add_event(m, ev);
		else if (json_object_object_get_ex(o, "ok", NULL)) {
			if (!ctl_get_bool(o, "ok"))
				r = -EPROTO;
			end = 1;
			/* the agent's sequence went back (a restart without its log): start over */
			if (ctl_get_int(o, "last_seq", 0) < (int64_t)m->last_seq)
				top_model_clear_events(m);
		}
		json_object_put(o);
		if (end)
			break;
	}
	if (r == 0 || r == -EPIPE)
		r = 0;
	ctl_conn_close(c);
	return r;
}

/*
 * CPU time, memory and threads of the ranks here from /proc/PID/stat, which every user may
 * read (as ps and top do; a /proc mounted hidepid= shows them "-"). The agent's status has no
 * process-wide CPU time nor memory; its thread count is kept.
 */
static ssize_t read_stat(int pid, char *buf, size_t cap)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap); /* one read: the kernel makes the line whole */
	close(fd);
	return n;
}

static void proc_stats(struct top_model *m, double now_s)
{
	struct top_procstat *ps = calloc(m->nrows ? (size_t)m->nrows : 1, sizeof(*ps));
	long hz = sysconf(_SC_CLK_TCK), page_kb = sysconf(_SC_PAGESIZE) / 1024;
	char buf[1024];
	int n = 0;

	if (!ps)
		return;
	for (int i = 0; i < m->nrows; i++) {
		const struct top_row *r = &m->rows[i];
		ssize_t len;

		if (r->elsewhere || r->exited || r->pid <= 0)
			continue;
		len = read_stat(r->pid, buf, sizeof(buf) - 1);
		if (len > 0 && top_parse_proc_stat(buf, (size_t)len, hz, page_kb, &ps[n]) == 0)
			ps[n++].pid = r->pid;
	}
	(void)top_model_proc_stats(m, ps, n, now_s); /* out of memory: the columns show "-" */
	free(ps);
}

/* The ranks' GPU use (NVML): every process on the GPUs, handed to the model by pid. A host
 * without NVML (no driver) shows no GPU columns; an NVML that stops answering hides them. */
static void gpu_stats(struct top_source *src, struct top_model *m)
{
	struct nvml_proc *p = NULL;
	struct top_gpustat *g;
	int n = 0;

	if (!src->nvml_tried) {
		src->nvml_tried = 1;
		if (nvml_open(&src->nvml) < 0)
			src->nvml = NULL;
	}
	if (!src->nvml || nvml_sample(src->nvml, &p, &n) < 0) {
		m->gpu_on = 0;
		return;
	}
	if ((g = calloc(n ? (size_t)n : 1, sizeof(*g)))) {
		for (int i = 0; i < n; i++) {
			g[i].pid = p[i].pid;
			g[i].sm_pct = p[i].sm_pct;
			g[i].mem_kb = (int64_t)(p[i].mem_bytes / 1024);
		}
		top_model_gpu_stats(m, g, n);
		free(g);
	}
	free(p);
}

void top_collect_close(struct top_source *src)
{
	nvml_close(src->nvml);
	src->nvml = NULL;
}

int top_collect(struct top_source *src, struct top_model *m, double now_s)
{
	struct json_object *req = json_object_new_object(), *o = NULL;
	char why[160];
	int r;

	json_object_object_add(req, "cmd", json_object_new_string("status"));
	r = ctl_call(src->socket, req, src->timeout_ms, &o);
	json_object_put(req);
	if (r == 0) {
		r = top_model_update(m, o, now_s);
		if (r < 0)
			snprintf(why, sizeof(why), "unexpected answer: %s",
				 ctl_get_str(o, "error") ? ctl_get_str(o, "error")
							 : "not a status");
	} else {
		snprintf(why, sizeof(why), "%s", strerror(-r));
	}
	json_object_put(o);
	if (r < 0) {
		top_model_disconnected(m, why);
		return r;
	}
	proc_stats(m, now_s);
	gpu_stats(src, m);
	if (m->agent_pid != src->agent_pid) { /* another agent: its own event sequence */
		top_model_clear_events(m);
		src->agent_pid = m->agent_pid;
	}
	r = fetch_events(src, m);
	if (r < 0)
		top_model_disconnected(m, strerror(-r));
	return r;
}

/* The rank's armed timers (from "timers", which lists every timer the caller may see) into the
 * explain reply as "timers"; left out when the request fails. */
static void attach_timers(struct top_source *src, int pid, struct json_object *explain)
{
	struct json_object *req = json_object_new_object(), *o = NULL, *all, *mine;

	json_object_object_add(req, "cmd", json_object_new_string("timers"));
	if (ctl_call(src->socket, req, src->timeout_ms, &o) == 0 && ctl_get_bool(o, "ok") &&
	    json_object_object_get_ex(o, "timers", &all) &&
	    json_object_is_type(all, json_type_array)) {
		mine = json_object_new_array();
		for (size_t i = 0; i < json_object_array_length(all); i++) {
			struct json_object *t = json_object_array_get_idx(all, i);

			if (ctl_get_int(t, "pid", 0) == pid)
				json_object_array_add(mine, json_object_get(t));
		}
		json_object_object_add(explain, "timers", mine);
	}
	json_object_put(o);
	json_object_put(req);
}

#define EXPLAIN_TIMEOUT_MS 4000
#define STACKS_TIMEOUT_MS  8000

/* One request about pid (cmd), answered within timeout_ms: its reply, or -errno and why. */
static int call_pid(struct top_source *src, const char *cmd, int pid, int timeout_ms,
		    struct json_object **ret_obj, char *err, size_t errlen)
{
	struct json_object *req = json_object_new_object(), *o = NULL;
	int r;

	json_object_object_add(req, "cmd", json_object_new_string(cmd));
	json_object_object_add(req, "pid", json_object_new_int(pid));
	r = ctl_call(src->socket, req, timeout_ms, &o);
	json_object_put(req);
	if (r < 0) {
		snprintf(err, errlen, "%s", strerror(-r));
		return r;
	}
	if (!ctl_get_bool(o, "ok")) {
		snprintf(err, errlen, "%s",
			 ctl_get_str(o, "error") ? ctl_get_str(o, "error") : "refused");
		json_object_put(o);
		return -EPERM;
	}
	*ret_obj = o;
	return 0;
}

int top_collect_explain(struct top_source *src, int pid, struct json_object **ret_obj, char *err,
			size_t errlen)
{
	/* the agent answers once the rank's Python stacks are read (2 s at most) */
	int r = call_pid(src, "explain", pid,
			 src->timeout_ms > 0 && src->timeout_ms < EXPLAIN_TIMEOUT_MS
			     ? EXPLAIN_TIMEOUT_MS
			     : src->timeout_ms,
			 ret_obj, err, errlen);

	if (r == 0)
		attach_timers(src, pid, *ret_obj);
	return r;
}

int top_collect_stacks(struct top_source *src, int pid, struct json_object **ret_obj, char *err,
		       size_t errlen)
{
	/* as `ftbpf stacks PID`: the agent answers once the Python stacks are read */
	return call_pid(src, "stacks", pid, STACKS_TIMEOUT_MS, ret_obj, err, errlen);
}
