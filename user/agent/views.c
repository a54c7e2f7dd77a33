/* The agent's JSON schema, its events: see views.h (the control socket's replies are in
 * views_reply.c). Builders format what they are given; what the kernel side and /proc show is
 * read by watch/collect.c. */
#include "agent/views.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/jobparts.h"
#include "ftbpf/slot.h"
#include "lib/cadence.h"
#include "lib/config.h"
#include "lib/jsonx.h"
#include "lib/kstack.h"
#include "lib/ranks.h"
#include "lib/syscalls.h"
#include "os/clock.h"
#include "proto/mesh_proto.h"
#include "proto/swim.h"
#include "watch/collect.h"

double view_secs(uint64_t ns)
{
	return (double)ns / CLOCK_NS_PER_S;
}

double view_since(uint64_t now, uint64_t t)
{
	return t < now ? view_secs(now - t) : 0;
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

struct json_object *view_agent_start(int tp_btf, int task_iter, int oom, int resumed,
				     const struct ftbpf_config *cfg)
{
	struct json_object *o = view_event("agent_start");

	jint(o, "pid", getpid());
	jstr(o, "version", FTBPF_VERSION);
	jstr(o, "programs", tp_btf ? "tp_btf" : "raw_tp");
	jbool(o, "task_iter", task_iter);
	jbool(o, "oom", oom);
	jbool(o, "resumed", resumed);
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

struct json_object *view_share_full(const char *table, uint32_t user, int64_t held, uint32_t share,
				    uint32_t reserve, uint64_t n)
{
	struct json_object *o = view_event("share_full");

	jint(o, "uid", 0);
	jstr(o, "table", table);
	jint(o, "user", user);
	jint(o, "held", held);
	jint(o, "share", share);
	jint(o, "reserve", reserve);
	jint(o, "refused", (int64_t)n);
	return o;
}

struct json_object *view_store_bad_reply(const char *why, uint64_t count)
{
	struct json_object *o = view_event("store_bad_reply");

	jint(o, "uid", 0);
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

/* The fields of a straggler event common to ranks here and elsewhere. */
static struct json_object *straggler_common(const char *type, const struct job *j,
					    struct cad_remote *const *rem, int nrem)
{
	struct json_object *o = view_job_event(type, j), *ranks = json_object_new_array();

	for (int i = 0; i < j->nmembers; i++)
		if (j->members[i]->cad.straggler && !j->members[i]->s.exited)
			json_object_array_add(ranks, json_object_new_int(j->members[i]->id.rank));
	for (int i = 0; i < nrem; i++)
		if (rem[i]->straggler)
			json_object_array_add(ranks, json_object_new_int(rem[i]->rank));
	json_object_object_add(o, "ranks", ranks);
	jdbl(o, "step_s", j->cad.step_s);
	jdbl(o, "median_own_s", j->cad.step_s * j->cad.median_own);
	return o;
}

struct json_object *view_straggler(const char *type, const struct job *j, const struct rank *k,
				   const char *node, struct cad_remote *const *rem, int nrem)
{
	struct json_object *o = straggler_common(type, j, rem, nrem);
	char since[48];

	jint(o, "rank", k->id.rank);
	jint(o, "pid", k->pid);
	jstr(o, "node", node);
	jbool(o, "here", 1);
	jdbl(o, "slowdown", k->cad.slowdown);
	if (!strcmp(type, "straggler_recovered"))
		jdbl(o, "peak_slowdown", k->cad.peak_slowdown);
	iso_time(since, sizeof(since), k->cad.since_ns);
	jstr(o, "since", since);
	jstr(o, "reason", cad_reason_name(k->cad.reason));
	jdbl(o, "compute_s", j->cad.step_s * (k->cad.own_frac - k->cad.read_frac));
	jdbl(o, "read_s", j->cad.step_s * k->cad.read_frac);
	jdbl(o, "wait_s", j->cad.step_s * k->cad.wait_frac);
	jstr(o, "evidence", k->cad.evidence);
	return o;
}

struct json_object *view_straggler_remote(const char *type, const struct job *j,
					  const struct cad_remote *x, struct cad_remote *const *rem,
					  int nrem)
{
	struct json_object *o = straggler_common(type, j, rem, nrem);
	double own = x->s.own_ppm / 1e6, rd = x->s.read_ppm / 1e6, wt = x->s.wait_ppm / 1e6;
	char since[48];

	jint(o, "rank", x->rank);
	jstr(o, "node", x->node);
	jbool(o, "here", 0);
	jdbl(o, "slowdown", x->slowdown);
	if (!strcmp(type, "straggler_recovered"))
		jdbl(o, "peak_slowdown", x->peak_slowdown);
	iso_time(since, sizeof(since), x->since_ns);
	jstr(o, "since", since);
	jstr(o, "reason", cad_reason_name(x->reason));
	jdbl(o, "compute_s", j->cad.step_s * (own - rd));
	jdbl(o, "read_s", j->cad.step_s * rd);
	jdbl(o, "wait_s", j->cad.step_s * wt);
	jstr(o, "evidence", x->evidence);
	return o;
}

void view_container(struct json_object *o, const struct rank *k)
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

void view_diagnosis(struct json_object *o, const struct collect_proc *p, uint64_t now)
{
	char nm[32];

	if (p->has_stat) {
		json_object_object_add(o, "state", json_object_new_string_len(&p->state, 1));
		jstr(o, "comm", p->comm);
	}
	if (p->in_syscall) {
		jstr(o, "syscall", syscalls_format(p->nr, nm, sizeof(nm)));
		jdbl(o, "in_syscall_s", view_since(now, p->enter_ns));
	}
	jstr(o, "wchan", *p->wchan ? p->wchan : NULL);
	if (p->has_kstack) /* an array of frames, as in hang */
		json_object_object_add(o, "kernel_stack", kstack_json(&p->kstack));
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

	meshaddr_format(&m->addr, addr, sizeof(addr));
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

		if (!k->s.exited) {
			struct kstack ks;

			(void)collect_kstack(v->sp, k->pid, k->pid, &ks); /* none: [] */
			json_object_object_add(r, "kernel_stack", kstack_json(&ks));
		}
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
