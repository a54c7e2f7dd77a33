/* The agent's JSON schema: see views.h. */
#include "agent/views.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/ctl.h"
#include "agent/jobparts.h"
#include "ftbpf/slot.h"
#include "lib/cadence.h"
#include "lib/config.h"
#include "lib/gpuapi.h"
#include "lib/jsonx.h"
#include "lib/ranks.h"
#include "lib/syscalls.h"
#include "lib/timers.h"
#include "os/clock.h"
#include "os/procfs.h"
#include "proto/mesh_proto.h"
#include "proto/swim.h"
#include "watch/pystack.h"
#include "watch/pystack_json.h"
#include "watch/sample.h"
#include "watch/tracker.h"

double view_secs(uint64_t ns)
{
	return (double)ns / CLOCK_NS_PER_S;
}

/* ---- events ---- */
struct json_object *view_event(const char *type)
{
	struct json_object *o = json_object_new_object();

	jstr(o, "type", type);
	return o;
}

void view_rank_ids(struct json_object *o, const struct rank *k)
{
	jint(o, "pid", k->pid);
	jint(o, "rank", k->id.rank);
	jstr(o, "job", k->id.job);
	jint(o, "uid", k->uid);
	jstr(o, "comm", k->comm);
}

struct json_object *view_rank_event(const char *type, const struct rank *k)
{
	struct json_object *o = view_event(type);

	view_rank_ids(o, k);
	return o;
}

struct json_object *view_job_event(const char *type, const struct job *j)
{
	struct json_object *o = view_event(type);

	jstr(o, "job", j->id);
	jint(o, "uid", j->uid);
	return o;
}

void view_exit_fields(struct json_object *o, int status, uint32_t sender, const char *scomm)
{
	int sig = status & 0x7f;

	if (sig) {
		jnull(o, "exit_code");
		jint(o, "signal", sig);
		jstr(o, "signal_name", config_signal_name(sig));
		jbool(o, "core_dumped", !!(status & 0x80));
	} else {
		jint(o, "exit_code", (status >> 8) & 0xff);
		jnull(o, "signal");
	}
	if (sig && sender) {
		jint(o, "sender_pid", sender);
		jstr(o, "sender_comm", scomm);
	} else {
		jnull(o, "sender_pid");
		jnull(o, "sender_comm");
	}
}

/* The rank's container and pod (null when it is in neither). */
struct json_object *view_agent_start(const struct tracker_features *f,
				     const struct ftbpf_config *cfg)
{
	struct json_object *o = view_event("agent_start");

	jint(o, "pid", getpid());
	jstr(o, "version", FTBPF_VERSION);
	jstr(o, "programs", f->tp_btf ? "tp_btf" : "raw_tp");
	jbool(o, "task_iter", f->task_iter);
	jbool(o, "oom", f->oom);
	jbool(o, "resumed", f->resumed);
	jstr(o, "socket", cfg->socket_path);
	jdbl(o, "soft_timeout_s", config_soft_ceiling(cfg));
	jbool(o, "soft_timeout_auto", cfg->soft_auto);
	jdbl(o, "hard_timeout_s", cfg->hard_timeout_s);
	jstr(o, "action", config_action_name(cfg->action));
	return o;
}

struct json_object *view_agent_stop(void)
{
	struct json_object *o = view_event("agent_stop");

	jint(o, "pid", getpid());
	return o;
}

struct json_object *view_store_rejected(const char *key, const char *why, uint64_t count)
{
	struct json_object *o = view_event("store_rejected");

	jint(o, "uid", 0);
	jstr(o, "key", key);
	jstr(o, "why", why);
	jint(o, "count", (int64_t)count);
	return o;
}

struct json_object *view_rank_exit(const struct rank *k)
{
	struct json_object *o = view_rank_event("exit", k);

	view_exit_fields(o, k->s.exit_code, k->s.sender_pid, k->s.sender_comm);
	return o;
}

struct json_object *view_rank_left(const struct rank *k, const char *why, uid_t now_uid,
				   uid_t now_euid)
{
	struct json_object *o = view_rank_event("rank_left", k);

	jstr(o, "why", why);
	jint(o, "now_uid", now_uid);
	jint(o, "now_euid", now_euid);
	return o;
}

struct json_object *view_recovered(const struct job *j)
{
	return view_job_event("recovered", j);
}

/* A monotonic time as wall-clock ISO 8601, as the events' ts. */
static void iso_time(char *buf, size_t len, uint64_t mono_ns)
{
	uint64_t now_m = clock_mono_ns(), real = clock_real_ns();
	uint64_t t = real - (now_m > mono_ns ? now_m - mono_ns : 0);
	time_t sec = (time_t)(t / CLOCK_NS_PER_S);
	struct tm tm;

	gmtime_r(&sec, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + strlen(buf), len - strlen(buf), ".%03dZ",
		 (int)(t % CLOCK_NS_PER_S / 1000000));
}

struct json_object *view_straggler(const char *type, const struct job *j, const struct rank *k,
				   const char *node)
{
	struct json_object *o = view_job_event(type, j), *ranks = json_object_new_array();
	char since[48];

	for (int i = 0; i < j->nmembers; i++)
		if (j->members[i]->cad.straggler)
			json_object_array_add(ranks, json_object_new_int(j->members[i]->id.rank));
	jint(o, "rank", k->id.rank);
	jint(o, "pid", k->pid);
	json_object_object_add(o, "ranks", ranks);
	jstr(o, "node", node);
	jdbl(o, "slowdown", k->cad.slowdown);
	if (!strcmp(type, "straggler_recovered"))
		jdbl(o, "peak_slowdown", k->cad.peak_slowdown);
	iso_time(since, sizeof(since), k->cad.since_ns);
	jstr(o, "since", since);
	jstr(o, "reason", cad_reason_name(k->cad.reason));
	jdbl(o, "step_s", j->cad.step_s);
	jdbl(o, "compute_s", j->cad.step_s * (k->cad.own_frac - k->cad.read_frac));
	jdbl(o, "read_s", j->cad.step_s * k->cad.read_frac);
	jdbl(o, "wait_s", j->cad.step_s * k->cad.wait_frac);
	jdbl(o, "median_own_s", j->cad.step_s * j->cad.median_own);
	jstr(o, "evidence", k->cad.evidence);
	return o;
}

static void view_container(struct json_object *o, const struct rank *k)
{
	struct json_object *c;

	if (!*k->ctr.id && !*k->ctr.pod_uid) {
		jnull(o, "container");
		return;
	}
	c = json_object_new_object();
	jstr(c, "id", *k->ctr.id ? k->ctr.id : NULL);
	jstr(c, "runtime", *k->ctr.runtime ? k->ctr.runtime : NULL);
	jstr(c, "pod_uid", *k->ctr.pod_uid ? k->ctr.pod_uid : NULL);
	json_object_object_add(o, "container", c);
}

struct json_object *view_adopt(const struct rank *k, const char *how, int exited)
{
	struct json_object *o = view_rank_event("adopt", k);

	jint(o, "local_rank", k->id.local_rank);
	jint(o, "world_size", k->id.world_size);
	jstr(o, "source", ident_source_name(k->id.source));
	view_container(o, k);
	jstr(o, "how", how);
	jbool(o, "exited", exited);
	return o;
}

/* The rank a process of its tree belongs to. */
static void owner_fields(struct json_object *o, const struct rank *owner)
{
	jint(o, "owner_pid", owner->pid);
	jint(o, "rank", owner->id.rank);
	jstr(o, "job", owner->id.job);
	jint(o, "uid", owner->uid);
}

struct json_object *view_child(int pid, int ppid, const struct rank *owner, const char *how)
{
	struct json_object *o = view_event("child");

	jint(o, "pid", pid);
	jint(o, "ppid", ppid);
	owner_fields(o, owner);
	if (how)
		jstr(o, "how", how);
	return o;
}

struct json_object *view_child_exit(const struct ftbpf_event *e, const struct rank *owner)
{
	struct json_object *o = view_event("child_exit");
	char comm[17], scomm[17];

	snprintf(comm, sizeof(comm), "%s", e->comm);
	snprintf(scomm, sizeof(scomm), "%s", e->sender_comm);
	jint(o, "pid", e->tgid);
	owner_fields(o, owner);
	jstr(o, "comm", comm);
	view_exit_fields(o, e->code, e->sender_pid, scomm);
	return o;
}

static void rank_of(struct json_object *o, const struct rank *k)
{
	if (k) {
		jint(o, "rank", k->id.rank);
		jstr(o, "job", k->id.job);
	}
}

struct json_object *view_signal(const struct ftbpf_event *e, const struct rank *k, uint32_t uid)
{
	struct json_object *o =
	    view_event(e->type == FTBPF_EV_SIGNAL ? "signal" : "signal_delivered");
	char scomm[17];

	snprintf(scomm, sizeof(scomm), "%s", e->sender_comm);
	jint(o, "pid", e->tgid);
	jint(o, "tid", e->tid);
	rank_of(o, k);
	jint(o, "uid", uid);
	jint(o, "signal", e->sig);
	jstr(o, "signal_name", config_signal_name(e->sig));
	jint(o, "si_code", e->code);
	if (e->type == FTBPF_EV_SIGNAL) {
		jint(o, "sender_pid", e->sender_pid);
		jstr(o, "sender_comm", scomm);
		jint(o, "result", e->result);
	}
	return o;
}

struct json_object *view_kernel_timer(const struct ftbpf_event *e, const struct rank *k)
{
	struct json_object *o = view_event("timer_expired");
	char nm[32], comm[17], scope[FTBPF_SLOT_SCOPE_LEN + 1];

	memcpy(scope, e->filename, FTBPF_SLOT_SCOPE_LEN);
	scope[FTBPF_SLOT_SCOPE_LEN] = 0;
	snprintf(comm, sizeof(comm), "%s", e->comm);
	jint(o, "pid", e->tgid);
	jint(o, "tid", e->tid);
	rank_of(o, k);
	if (k)
		jint(o, "uid", k->uid);
	jstr(o, "comm", comm);
	jstr(o, "scope", scope);
	jstr(o, "source", "slot");
	jstr(o, "enforced_by", "kernel");
	jint(o, "signal", e->sig);
	jstr(o, "signal_name", config_signal_name(e->sig));
	jdbl(o, "late_ms", e->result / 1000.0);
	jstr(o, "syscall", syscalls_format(e->code, nm, sizeof(nm)));
	jstr(o, "result", "sent");
	return o;
}

struct json_object *view_oom(const struct ftbpf_event *e, const struct rank *k)
{
	struct json_object *o = view_event("oom_victim");

	jint(o, "pid", e->tgid);
	rank_of(o, k);
	if (k)
		jint(o, "uid", k->uid);
	return o;
}

struct json_object *view_action(const struct rank *k, const char *action, int sig,
				const char *result)
{
	struct json_object *o = view_rank_event("action", k);

	jstr(o, "action", action);
	jint(o, "signal", sig);
	jstr(o, "signal_name", config_signal_name(sig));
	jstr(o, "result", result);
	return o;
}

struct json_object *view_action_pid(int pid, uid_t uid, const char *action, int sig,
				    const char *result)
{
	struct json_object *o = view_event("action");

	jint(o, "pid", pid);
	jint(o, "uid", uid);
	jstr(o, "action", action);
	jint(o, "signal", sig);
	jstr(o, "signal_name", config_signal_name(sig));
	jstr(o, "result", result);
	return o;
}

struct json_object *view_timer_expired(int pid, uid_t uid, const struct rank *k, const char *scope,
				       const char *source, int sig, double late_ms)
{
	struct json_object *o = view_event("timer_expired");

	jint(o, "pid", pid);
	rank_of(o, k);
	jint(o, "uid", uid);
	jstr(o, "scope", scope);
	jstr(o, "source", source);
	jstr(o, "enforced_by", "agent");
	jint(o, "signal", sig);
	jstr(o, "signal_name", config_signal_name(sig));
	jdbl(o, "late_ms", late_ms);
	return o;
}

void view_diagnosis(struct json_object *o, struct tracker *tr, int pid, uint64_t now)
{
	struct ftbpf_thread th;
	struct proc_stat st;
	char nm[32], w[64] = "", buf[4096];

	if (procfs_stat(pid, pid, &st) == 0) {
		json_object_object_add(o, "state", json_object_new_string_len(&st.state, 1));
		jstr(o, "comm", st.comm);
	}
	if (tracker_thread_get(tr, (uint32_t)pid, &th) == 0 && th.cur_nr >= 0) {
		jstr(o, "syscall", syscalls_format(th.cur_nr, nm, sizeof(nm)));
		jdbl(o, "in_syscall_s", view_secs(now - th.enter_ns));
	}
	procfs_wchan(pid, pid, w, sizeof(w));
	jstr(o, "wchan", *w ? w : NULL);
	if (procfs_kstack(pid, pid, buf, sizeof(buf)) == 0) { /* an array of frames, as in hang */
		struct json_object *arr = json_object_new_array();

		for (char *save = NULL, *f = strtok_r(buf, "\n", &save); f;
		     f = strtok_r(NULL, "\n", &save))
			json_object_array_add(arr, json_object_new_string(f));
		json_object_object_add(o, "kernel_stack", arr);
	}
}

struct json_object *view_job_failed(const struct job *j)
{
	struct json_object *o = view_job_event("job_failed", j);
	const struct rank *k = NULL;

	for (int i = 0; i < j->nmembers && !k; i++)
		if (j->members[i]->d.culprit)
			k = j->members[i];
	jstr(o, "why", j->res.why);
	if (k) {
		jint(o, "culprit_pid", k->pid);
		jint(o, "culprit_rank", k->id.rank);
	} else if (j->xv.valid && j->xv.n_culprits) {
		jint(o, "culprit_rank", j->xv.culprit_ranks[0]);
	}
	jint(o, "live", j->res.live);
	jobparts_job_json(o, j);
	return o;
}

struct json_object *view_hard_timeout(const struct job *j, const char *action)
{
	struct json_object *o = view_job_event("hard_timeout", j);

	jstr(o, "action", action);
	jdbl(o, "no_progress_s", view_secs(j->res.no_progress_ns));
	return o;
}

struct json_object *view_peer(const char *type, const struct swim_member *m)
{
	struct json_object *o = view_event(type);
	char addr[32];

	mesh_format_addr(&m->addr, addr, sizeof(addr));
	jstr(o, "peer", addr);
	jstr(o, "peer_state", swim_state_name(m->state));
	jint(o, "incarnation", m->incarnation);
	if (m->health) {
		jint(o, "hung_ranks", m->health->hung);
		jint(o, "dead_ranks", m->health->dead);
	}
	return o;
}

struct json_object *view_folded(const struct rank *k, uint64_t count, uint64_t total)
{
	struct json_object *o = view_rank_event("events_folded", k);

	jint(o, "count", (int64_t)count);
	jint(o, "total", (int64_t)total);
	jstr(o, "why", "over the rank's event budget (signals, forks, execs, exits of children)");
	return o;
}

/* ---- control replies ---- */
struct json_object *view_ok(void)
{
	struct json_object *o = json_object_new_object();

	jbool(o, "ok", 1);
	return o;
}

struct json_object *view_err(const char *code, const char *msg)
{
	struct json_object *o = json_object_new_object();

	jbool(o, "ok", 0);
	jstr(o, "code", code);
	jstr(o, "error", msg);
	return o;
}

/* One thread of a rank: state, syscall in flight, wait channel, kernel stack. */
static struct json_object *thread_json(const struct view_src *v, const struct rank *k, int tid,
				       char state, double cpu_s, const char *comm, uint64_t now)
{
	struct json_object *t = json_object_new_object();
	struct ftbpf_thread tt;
	char w[64] = "", nm[32];

	jint(t, "tid", tid);
	jstr(t, "comm", comm);
	json_object_object_add(t, "state", json_object_new_string_len(&state, 1));
	jdbl(t, "cpu_s", cpu_s);
	if (tracker_thread_get(v->tr, (uint32_t)tid, &tt) == 0) {
		jstr(t, "syscall",
		     tt.cur_nr >= 0 ? syscalls_format(tt.cur_nr, nm, sizeof(nm)) : NULL);
		jdbl(t, "in_syscall_s", tt.cur_nr >= 0 ? view_secs(now - tt.enter_ns) : 0);
		jint(t, "syscalls", (int64_t)tt.syscalls);
		jdbl(t, "last_exit_s_ago", tt.last_exit_ns ? view_secs(now - tt.last_exit_ns) : -1);
	}
	procfs_wchan(k->pid, tid, w, sizeof(w));
	jstr(t, "wchan", *w ? w : NULL);
	json_object_object_add(t, "kernel_stack", sampler_kstack_json(v->sp, k->pid, tid));
	return t;
}

struct task_ctx {
	const struct view_src *v;
	const struct rank *k;
	uint64_t now;
	struct json_object *arr;
};

static int proc_thread_one(void *ctx, int tid)
{
	struct task_ctx *c = ctx;
	struct proc_stat st;

	if (procfs_stat(c->k->pid, tid, &st) == 0)
		json_object_array_add(c->arr, thread_json(c->v, c->k, tid, st.state,
							  view_secs(st.utime_ns + st.stime_ns),
							  st.comm, c->now));
	return 0;
}

struct json_object *view_threads(const struct view_src *v, const struct rank *k, uint64_t now)
{
	struct task_ctx c = {v, k, now, json_object_new_array()};

	if (k->s.exited)
		return c.arr;
	if (!tracker_features(v->tr)->task_iter) {
		procfs_foreach_pid(k->pid, proc_thread_one, &c);
		return c.arr;
	}
	for (size_t i = 0; i < v->sp->nsnap; i++) {
		const struct ftbpf_task_snap *s = &v->sp->snap[i];

		if (s->tgid == (uint32_t)k->pid)
			json_object_array_add(
			    c.arr, thread_json(v, k, (int)s->tid, sampler_state_char(s),
					       view_secs(s->utime_ns + s->stime_ns), s->comm, now));
	}
	return c.arr;
}

/* The probed CUDA/NCCL call in flight and the rank's NCCL communicators. */
static void gpu_call_json(struct json_object *o, const struct rank *k, uint64_t now)
{
	struct json_object *arr = json_object_new_array();
	int live = !k->s.exited && k->s.api;

	jstr(o, "gpu_call", live ? gpuapi_name(k->s.api) : NULL);
	jdbl(o, "gpu_call_s",
	     live && now > k->s.api_since_ns ? view_secs(now - k->s.api_since_ns) : 0);
	jint(o, "gpu_api_calls", (int64_t)k->api_calls);
	for (int i = 0; i < k->s.ncomm; i++) {
		const struct det_comm *c = &k->s.comm[i];
		struct json_object *co = json_object_new_object();
		char id[24];

		snprintf(id, sizeof(id), "%016llx", (unsigned long long)c->id);
		jstr(co, "comm", c->id ? id : NULL);
		jint(co, "rank", c->rank);
		jint(co, "nranks", c->nranks);
		jint(co, "seq", (int64_t)c->seq);
		jstr(co, "last_op", c->seq ? gpuapi_name(c->api) : NULL);
		jint(co, "last_count", (int64_t)c->count);
		jstr(co, "last_dtype", c->seq ? gpuapi_dtype_name(c->dtype) : NULL);
		jdbl(co, "last_s_ago",
		     c->last_ns && now > c->last_ns ? view_secs(now - c->last_ns) : -1);
		json_object_array_add(arr, co);
	}
	json_object_object_add(o, "nccl", arr);
}

/* GPU ioctls of every thread of a rank (one map lookup per thread of the snapshot). */
static void gpu_ioctl_json(struct json_object *o, const struct view_src *v, const struct rank *k,
			   uint64_t now)
{
	const struct sampler *sp = v->sp;
	struct ftbpf_thread t;
	uint64_t n = 0, last = 0;

	for (size_t i = 0; i < sp->nsnap; i++)
		if (sp->snap[i].tgid == (uint32_t)k->pid &&
		    tracker_thread_get(v->tr, sp->snap[i].tid, &t) == 0) {
			n += t.gpu_ioctls;
			if (t.gpu_last_ns > last)
				last = t.gpu_last_ns;
		}
	if (!sp->nsnap && tracker_thread_get(v->tr, (uint32_t)k->pid, &t) == 0) {
		n = t.gpu_ioctls;
		last = t.gpu_last_ns;
	}
	jint(o, "gpu_ioctls", (int64_t)n);
	jdbl(o, "gpu_last_s_ago", last && now > last ? view_secs(now - last) : -1);
}

/* Progress reported by the client library (ping, step) and the rank's armed countdown timers
 * (slot and agent-held): how many, and the time left on the earliest. */
/* Step cadence (agent/cadwatch.c observes, lib/cadence.c judges): a rank's step_s, compute_s,
 * wait_s, read_s, slowdown, straggler...; a job's step_s, step_rate, step_spread, step_p99_s,
 * stragglers. */
static void rank_cadence_json(struct json_object *o, const struct rank *k)
{
	const struct cad_rank *c = &k->cad;
	double st = k->job ? k->job->cad.step_s : 0;
	int v = c->valid && !k->s.exited;

	jbool(o, "straggler", c->straggler && !k->s.exited);
	jdbl(o, "slowdown", v ? c->slowdown : 0);
	jstr(o, "straggler_reason", c->straggler ? cad_reason_name(c->reason) : NULL);
	jdbl(o, "step_s", v ? st : 0);
	jdbl(o, "compute_s", v ? st * (c->own_frac - c->read_frac) : 0);
	jdbl(o, "wait_s", v ? st * c->wait_frac : 0);
	jdbl(o, "read_s", v ? st * c->read_frac : 0);
	jdbl(o, "wait_frac", v ? c->wait_frac : 0);
}

static void job_cadence_json(struct json_object *o, const struct job *j)
{
	struct json_object *s = json_object_new_array();

	for (int i = 0; i < j->nmembers; i++)
		if (j->members[i]->cad.straggler && !j->members[i]->s.exited)
			json_object_array_add(s, json_object_new_int(j->members[i]->id.rank));
	jdbl(o, "step_s", j->cad.step_s);
	jdbl(o, "step_rate", j->cad.rate);
	jdbl(o, "step_spread", j->cad.spread);
	jdbl(o, "step_p99_s", j->cad.p99_step_s);
	jdbl(o, "rank_imbalance", j->cad.imbalance);
	jdbl(o, "soft_timeout_s", view_secs(j->res.soft_ns));
	jbool(o, "paced", j->res.paced);
	json_object_object_add(o, "stragglers", s);
}

static void rank_client_json(struct json_object *o, const struct view_src *v, const struct rank *k,
			     uint64_t now)
{
	uint64_t ping = 0, step_ns = 0, step = 0, earliest = 0;
	int ntimers = 0;

	if (k->slot && !k->s.exited) {
		ping = __atomic_load_n(&k->slot->ping_ns, __ATOMIC_RELAXED);
		step_ns = __atomic_load_n(&k->slot->step_ns, __ATOMIC_RELAXED);
		step = __atomic_load_n(&k->slot->step, __ATOMIC_RELAXED);
		for (int j = 0; j < FTBPF_SLOT_TIMERS; j++) {
			uint64_t d = timers_slot_armed(&k->slot->timers[j]);

			if (!d)
				continue;
			ntimers++;
			if (!earliest || d < earliest)
				earliest = d;
		}
	}
	for (int i = 0; i < v->tm->n && !k->s.exited; i++)
		if (v->tm->v[i].pid == k->pid) {
			ntimers++;
			if (!earliest || v->tm->v[i].deadline_ns < earliest)
				earliest = v->tm->v[i].deadline_ns;
		}
	jdbl(o, "ping_s_ago", ping && now > ping ? view_secs(now - ping) : -1);
	if (step_ns)
		jint(o, "step", (int64_t)step);
	else
		jnull(o, "step");
	jdbl(o, "step_s_ago", step_ns && now > step_ns ? view_secs(now - step_ns) : -1);
	jint(o, "timers", ntimers);
	if (ntimers)
		jdbl(o, "timer_left_s", earliest > now ? view_secs(earliest - now) : 0);
	else
		jnull(o, "timer_left_s");
}

struct json_object *view_rank(const struct view_src *v, const struct rank *k, uint64_t now)
{
	struct json_object *o = json_object_new_object();
	char nm[32];

	view_rank_ids(o, k);
	jint(o, "local_rank", k->id.local_rank);
	jint(o, "world_size", k->id.world_size);
	jstr(o, "source", ident_source_name(k->id.source));
	view_container(o, k);
	jstr(o, "state", det_state_name(k->d.state));
	jstr(o, "reason", k->d.reason);
	jdbl(o, "state_for_s",
	     view_secs(now > k->d.state_since_ns ? now - k->d.state_since_ns : 0));
	jstr(o, "syscall",
	     k->d.syscall >= 0 && k->d.state != RS_GPU_SYNC && k->d.state != RS_NCCL
		 ? syscalls_format(k->d.syscall, nm, sizeof(nm))
		 : NULL);
	gpu_call_json(o, k, now);
	jstr(o, "wchan", *k->s.wchan ? k->s.wchan : NULL);
	jdbl(o, "no_progress_s", view_secs(k->d.no_progress_ns));
	jdbl(o, "cpu", k->d.cpu_frac);
	jbool(o, "hung", k->d.hung);
	jbool(o, "culprit", k->d.culprit);
	jint(o, "syscalls", (int64_t)k->syscalls);
	jint(o, "progress", (int64_t)k->progress);
	jint(o, "threads", k->nthreads);
	jdbl(o, "adopted_s_ago", view_secs(now - k->adopted_ns));
	if (k->wrapper_pid) {
		jint(o, "wrapper_pid", k->wrapper_pid);
		jstr(o, "wrapper_comm", k->wrapper_comm);
	}
	jint(o, "launcher_pid", k->launcher_pid);
	if (k->timers_only)
		jbool(o, "timers_only", 1);
	gpu_ioctl_json(o, v, k, now);
	rank_client_json(o, v, k, now);
	rank_cadence_json(o, k);
	jbool(o, "exited", k->s.exited);
	if (k->s.exited) {
		view_exit_fields(o, k->s.exit_code, k->s.sender_pid, k->s.sender_comm);
	} else {
		jnull(o, "exit_code");
		jnull(o, "signal");
		jnull(o, "sender_pid");
		jnull(o, "sender_comm");
	}
	return o;
}

void view_python_stack(struct json_object *o, int pid, int err, const struct py_stack *s,
		       const char *why)
{
	if (err == 0 && s)
		pystack_json(o, s, pid);
	else
		pystack_json_error(o, err, why);
}

struct json_object *view_hang(const struct view_src *v, const struct job *j, uint64_t now,
			      double soft_timeout_s)
{
	struct json_object *o = view_job_event("hang", j), *arr = json_object_new_array();
	struct json_object *c = json_object_new_array(), *cr = json_object_new_array();

	jdbl(o, "no_progress_s", view_secs(j->res.no_progress_ns));
	jdbl(o, "soft_timeout_s", soft_timeout_s);
	jstr(o, "why", j->res.why);
	for (int i = 0; i < j->nmembers; i++) {
		const struct rank *k = j->members[i];
		struct json_object *r = view_rank(v, k, now);

		if (!k->s.exited)
			json_object_object_add(r, "kernel_stack",
					       sampler_kstack_json(v->sp, k->pid, k->pid));
		if (k->d.culprit) /* every thread of the culprit, with its stack */
			json_object_object_add(r, "threads", view_threads(v, k, now));
		json_object_array_add(arr, r);
		if (k->d.culprit) {
			json_object_array_add(c, json_object_new_int(k->pid));
			json_object_array_add(cr, json_object_new_int(k->id.rank));
		}
	}
	json_object_object_add(o, "culprits", c);
	json_object_object_add(o, "culprit_ranks", cr);
	jobparts_job_json(o, j); /* the job-wide culprit, its host and state */
	json_object_object_add(o, "ranks", arr);
	return o;
}

struct json_object *view_registered(const struct rank *k)
{
	struct json_object *o = view_ok();

	jint(o, "pid", k->pid);
	jint(o, "rank", k->id.rank);
	jstr(o, "job", k->id.job);
	jint(o, "slot_timers", FTBPF_SLOT_TIMERS);
	return o;
}

/* Why the job is in its state, in words; NULL when nothing needs saying (ok, finished). */
static const char *job_why(const struct job *j, char *buf, size_t len)
{
	switch (j->state) {
	case DJS_KILLED:
		snprintf(buf, len, "ended by the agent's hard-timeout action: %s", j->kill_why);
		return buf;
	case DJS_PREEMPTED:
		return "ranks saved and exited with the restart code, as a preemption asks";
	case DJS_STOPPED:
		return "ranks exited with the stop code: do not requeue (restart budget spent)";
	case DJS_RESTARTING:
		if (j->res.failed)
			snprintf(buf, len, "a restart was decided: %s", j->res.why);
		else
			snprintf(buf, len,
				 "a restart was decided: ranks asked to exit for a new "
				 "generation");
		return buf;
	case DJS_HUNG:
	case DJS_FAILED:
		return j->res.why;
	default:
		return NULL;
	}
}

struct json_object *view_job(const struct job *j)
{
	struct json_object *o = json_object_new_object(), *c = json_object_new_array(),
			   *cr = json_object_new_array();
	char why[640];

	jstr(o, "job", j->id);
	jint(o, "uid", j->uid);
	if (j->state == DJS_KILLED) { /* the culprits when the action was taken */
		for (int i = 0; i < j->nkill_culprits; i++) {
			const struct rank *k = NULL;

			for (int m = 0; m < j->nmembers; m++)
				if (j->members[m]->id.rank == j->kill_culprits[i] &&
				    (!k || j->members[m]->start_ns > k->start_ns))
					k = j->members[m];
			json_object_array_add(c, json_object_new_int(k ? k->pid : -1));
			json_object_array_add(cr, json_object_new_int(j->kill_culprits[i]));
		}
	} else {
		for (int i = 0; i < j->nmembers; i++)
			if (j->members[i]->d.culprit) {
				json_object_array_add(c, json_object_new_int(j->members[i]->pid));
				json_object_array_add(cr,
						      json_object_new_int(j->members[i]->id.rank));
			}
	}
	jint(o, "ranks", j->nmembers);
	jint(o, "live", j->res.live);
	jint(o, "exited", j->res.exited);
	jstr(o, "state", det_job_state_name(j->state));
	jbool(o, "hung", j->res.hung);
	jbool(o, "failed", j->state == DJS_FAILED);
	jdbl(o, "no_progress_s", view_secs(j->res.no_progress_ns));
	json_object_object_add(o, "culprits", c);
	json_object_object_add(o, "culprit_ranks", cr);
	jstr(o, "why", job_why(j, why, sizeof(why)));
	jint(o, "run", j->run);
	jstr(o, "previous_run", *j->prev_state ? j->prev_state : NULL);
	jobparts_job_json(o, j);
	job_cadence_json(o, j);
	return o;
}

struct json_object *view_job_end(const struct job *j)
{
	struct json_object *o = view_job(j), *e = view_event("job_end"), *v;

	/* the job's fields after the event's type */
	json_object_object_foreach (o, key, val) {
		v = json_object_get(val);
		json_object_object_add(e, key, v);
	}
	json_object_put(o);
	return e;
}

struct child_ctx {
	int owner;
	struct json_object *arr;
};

static int child_one(void *ctx, uint32_t tgid, const struct ftbpf_proc *p)
{
	struct child_ctx *c = ctx;
	struct json_object *o;

	if ((int)p->owner != c->owner || (p->flags & FTBPF_PROC_RANK))
		return 0;
	o = json_object_new_object();
	jint(o, "pid", tgid);
	jint(o, "ppid", p->ppid);
	jstr(o, "comm", p->comm);
	jbool(o, "exited", !!(p->flags & FTBPF_PROC_EXITED));
	json_object_array_add(c->arr, o);
	return 0;
}

struct json_object *view_children(struct tracker *tr, int owner)
{
	struct child_ctx cc = {owner, json_object_new_array()};

	tracker_foreach_proc(tr, child_one, &cc);
	return cc.arr;
}

struct json_object *view_signals(const struct rank *k, uint64_t now)
{
	struct json_object *sigs = json_object_new_array();

	for (int i = 0; i < k->nsig; i++) {
		struct json_object *s = json_object_new_object();

		jdbl(s, "s_ago", view_secs(now - k->sigs[i].ts_ns));
		jint(s, "signal", k->sigs[i].sig);
		jstr(s, "signal_name", config_signal_name(k->sigs[i].sig));
		jbool(s, "delivered", k->sigs[i].delivered);
		if (!k->sigs[i].delivered) {
			jint(s, "sender_pid", k->sigs[i].sender_pid);
			jstr(s, "sender_comm", k->sigs[i].sender_comm);
		}
		json_object_array_add(sigs, s);
	}
	return sigs;
}

struct json_object *view_timer(int pid, uid_t uid, const char *comm, const char *scope,
			       uint64_t deadline, uint64_t now, int sig, const char *source)
{
	struct json_object *x = json_object_new_object();

	jint(x, "pid", pid);
	jint(x, "uid", uid);
	jstr(x, "comm", comm);
	jstr(x, "scope", scope);
	jdbl(x, "time_left_s", deadline > now ? view_secs(deadline - now) : 0);
	jint(x, "signal", sig);
	jstr(x, "signal_name", config_signal_name(sig));
	jstr(x, "source", source);
	return x;
}

void view_tracker_counters(struct json_object *c, struct tracker *tr)
{
	static const struct {
		const char *name;
		enum ftbpf_stat stat;
	} stats[] = {
	    {"ringbuf_drops", FTBPF_STAT_RB_DROPS},
	    {"thread_map_full", FTBPF_STAT_THREAD_FULL},
	    {"proc_map_full", FTBPF_STAT_PROC_FULL},
	    {"gpu_api_calls", FTBPF_STAT_API_CALLS},
	    {"nccl_comm_map_full", FTBPF_STAT_COMM_FULL},
	    {"events_folded", FTBPF_STAT_FOLDED},
	    {"exec_events_folded", FTBPF_STAT_EXEC_FOLDED},
	    {"signals_ignored", FTBPF_STAT_SIG_IGNORED},
	    {"children_untracked", FTBPF_STAT_CHILD_CAP},
	    {"threads_untracked", FTBPF_STAT_THREAD_CAP},
	    {"children_tracked", FTBPF_STAT_CHILDREN},
	    {"gpu_returns_lost", FTBPF_STAT_API_LOST_RET},
	};

	for (size_t i = 0; i < sizeof(stats) / sizeof(stats[0]); i++)
		jint(c, stats[i].name, (int64_t)tracker_stat(tr, stats[i].stat));
}

void view_ctl_counters(struct json_object *c, const struct ctl_counters *cc, int clients)
{
	jint(c, "ctl_accepted", (int64_t)cc->accepted);
	jint(c, "ctl_requests", (int64_t)cc->requests);
	jint(c, "ctl_bad_requests", (int64_t)cc->bad_requests);
	jint(c, "ctl_oversized", (int64_t)cc->oversized);
	jint(c, "ctl_truncated", (int64_t)cc->truncated);
	jint(c, "ctl_denied", (int64_t)cc->denied);
	jint(c, "ctl_dropped_slow", (int64_t)cc->dropped_slow);
	jint(c, "ctl_refused_full", (int64_t)cc->refused_full);
	jint(c, "ctl_refused_user", (int64_t)cc->refused_user);
	jint(c, "ctl_refused_fds", (int64_t)cc->refused_fds);
	jint(c, "ctl_idle_closed", (int64_t)cc->idle_closed);
	jint(c, "ctl_over_budget", (int64_t)cc->over_budget);
	jint(c, "ctl_clients", clients);
}
