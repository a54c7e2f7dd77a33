/* The agent's JSON schema, the control socket's replies: ok and errors, a rank as status
 * shows it, its threads and children, a job, signals, timers, counters. See views.h. */
#include "agent/views.h"

#include <json-c/json.h>
#include <stdio.h>

#include "agent/ctl.h"
#include "agent/jobparts.h"
#include "ftbpf/slot.h"
#include "lib/cadence.h"
#include "lib/config.h"
#include "lib/gpuapi.h"
#include "lib/jsonx.h"
#include "lib/kstack.h"
#include "lib/ranks.h"
#include "lib/syscalls.h"
#include "lib/timers.h"
#include "watch/collect.h"
#include "watch/pystack.h"
#include "watch/pystack_json.h"

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
static struct json_object *thread_json(const struct collect_thread *th, uint64_t now)
{
	struct json_object *t = json_object_new_object();
	char nm[32];

	jint(t, "tid", th->tid);
	jstr(t, "comm", th->comm);
	json_object_object_add(t, "state", json_object_new_string_len(&th->state, 1));
	jdbl(t, "cpu_s", view_secs(th->cpu_ns));
	if (th->tracked) {
		jstr(t, "syscall", th->nr >= 0 ? syscalls_format(th->nr, nm, sizeof(nm)) : NULL);
		jdbl(t, "in_syscall_s", th->nr >= 0 ? view_since(now, th->enter_ns) : 0);
		jint(t, "syscalls", (int64_t)th->syscalls);
		jdbl(t, "last_exit_s_ago",
		     th->last_exit_ns ? view_since(now, th->last_exit_ns) : -1);
	}
	jstr(t, "wchan", *th->wchan ? th->wchan : NULL);
	json_object_object_add(t, "kernel_stack", kstack_json(&th->kstack));
	return t;
}

struct threads_ctx {
	uint64_t now;
	struct json_object *arr;
};

static int thread_add(void *ctx, const struct collect_thread *t)
{
	struct threads_ctx *c = ctx;

	json_object_array_add(c->arr, thread_json(t, c->now));
	return 0;
}

struct json_object *view_threads_pid(const struct view_src *v, int pid, uint64_t now)
{
	struct threads_ctx c = {now, json_object_new_array()};

	(void)collect_threads(v->tr, v->sp, pid, thread_add, &c); /* none: [] */
	return c.arr;
}

struct json_object *view_threads(const struct view_src *v, const struct rank *k, uint64_t now)
{
	return k->s.exited ? json_object_new_array() : view_threads_pid(v, k->pid, now);
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
		/* what the record numbers: NCCL's or MPI's collectives as the host issued them, the
		 * process's CUDA graph launches, or what its device began (NCCL profiler plugin) */
		jstr(co, "kind",
		     c->flags & DET_COMM_DEVICE	 ? "device"
		     : c->flags & DET_COMM_GRAPH ? "graph"
		     : c->flags & DET_COMM_MPI	 ? "mpi"
						 : "nccl");
		jbool(co, "device", !!(c->flags & DET_COMM_DEVICE));
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
	struct collect_gpu g;

	collect_gpu(v->tr, v->sp, k->pid, &g);
	jint(o, "gpu_ioctls", (int64_t)g.ioctls);
	jdbl(o, "gpu_last_s_ago", g.last_ns && now > g.last_ns ? view_secs(now - g.last_ns) : -1);
}

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
	/* when it issues its job's collectives (lib/arrivals.h): how late, where that time went */
	v = c->arr.valid && !k->s.exited;
	jstr(o, "straggler_basis", c->by_arrivals ? "arrivals" : "waits");
	jdbl(o, "late_s", v ? c->arr.late_s : 0);
	jdbl(o, "late_err_s", v ? c->arr.err_s : 0);
	jdbl(o, "late_gpu_s", v ? c->arr.gpu_s : 0);
	jdbl(o, "late_cpu_s", v ? c->arr.cpu_s : 0);
	jdbl(o, "late_read_s", v ? c->arr.read_s : 0);
	jdbl(o, "late_comm_s", v ? c->arr.comm_s : 0);
	jint(o, "collectives_compared", v ? c->arr.ncoll : 0);
}

static struct json_object *straggler_at(int rank, const char *node, int here)
{
	struct json_object *o = json_object_new_object();

	jint(o, "rank", rank);
	jstr(o, "node", node);
	jbool(o, "here", here);
	return o;
}

static void job_cadence_json(struct json_object *o, const struct job *j)
{
	struct json_object *s = json_object_new_array();

	struct json_object *sn = json_object_new_array();

	for (int i = 0; i < j->nmembers; i++)
		if (j->members[i]->cad.straggler && !j->members[i]->s.exited) {
			json_object_array_add(s, json_object_new_int(j->members[i]->id.rank));
			json_object_array_add(sn,
					      straggler_at(j->members[i]->id.rank, j->cad.node, 1));
		}
	for (int i = 0; i < j->cad.nremote; i++) { /* on other hosts, as judged here */
		json_object_array_add(s, json_object_new_int(j->cad.remote[i].rank));
		json_object_array_add(
		    sn, straggler_at(j->cad.remote[i].rank, j->cad.remote[i].node, 0));
	}
	json_object_object_add(o, "straggler_nodes", sn);
	jdbl(o, "step_s", j->cad.step_s);
	jdbl(o, "step_rate", j->cad.rate);
	jdbl(o, "step_spread", j->cad.spread);
	jdbl(o, "step_p99_s", j->cad.p99_step_s);
	jdbl(o, "rank_imbalance", j->cad.imbalance);
	jdbl(o, "soft_timeout_s", view_secs(j->res.soft_ns));
	jbool(o, "paced", j->res.paced);
	jstr(o, "paced_by", !j->res.paced ? NULL : j->res.paced_coll ? "collectives" : "steps");
	/* its collectives (lib/arrivals.h): the pace soft_timeout = auto's collective rule uses */
	jint(o, "collective_seq", (int64_t)j->arr.latest_seq);
	jdbl(o, "collective_interval_p50_s", j->arr.p50_interval_s);
	jdbl(o, "collective_interval_p99_s", j->arr.p99_interval_s);
	jint(o, "collectives_per_step", j->arr.per_step);
	jdbl(o, "collective_step_s", j->arr.step_s);
	jbool(o, "stragglers_by_arrivals", j->cad.by_arrivals);
	json_object_object_add(o, "stragglers", s);
}

/* Progress reported by the client library (ping, step) and the rank's armed countdown timers
 * (slot and agent-held): how many, and the time left on the earliest. */
static void rank_client_json(struct json_object *o, const struct view_src *v, const struct rank *k,
			     uint64_t now)
{
	struct collect_slot s = {0};
	uint64_t earliest;
	int ntimers;

	if (k->slot && !k->s.exited)
		collect_slot(k->slot, &s);
	earliest = s.earliest_ns;
	ntimers = s.timers + (k->s.exited ? 0 : timers_of_pid(v->tm, k->pid, &earliest));
	jdbl(o, "ping_s_ago", s.ping_ns ? view_since(now, s.ping_ns) : -1);
	if (s.step_ns)
		jint(o, "step", (int64_t)s.step);
	else
		jnull(o, "step");
	jdbl(o, "step_s_ago", s.step_ns ? view_since(now, s.step_ns) : -1);
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
	     k->d.syscall >= 0 && k->d.state != RS_GPU_SYNC && k->d.state != RS_NCCL &&
		     k->d.state != RS_MPI
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
	jdbl(o, "adopted_s_ago", view_since(now, k->adopted_ns));
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

struct json_object *view_registered(const struct rank *k)
{
	struct json_object *o = view_ok();

	jint(o, "pid", k->pid);
	jint(o, "rank", k->id.rank);
	jstr(o, "source", ident_source_name(k->id.source)); /* "assigned": the agent chose it */
	jstr(o, "job", k->id.job);
	jint(o, "slot_timers", FTBPF_SLOT_TIMERS);
	return o;
}

/* Why the job is in its state, in words; NULL when nothing needs saying (ok, finished). */
static const char *job_why(const struct job *j, char *buf, size_t len)
{
	char end[256];

	switch (j->state) {
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
		if (!j->hang_end.by)
			return j->res.why;
		if (j->hard_killed && j->hang_end.by == JOBEND_AGENT)
			snprintf(end, sizeof(end),
				 "hung, then ended by the agent's hard-timeout action");
		else
			jobend_text(&j->hang_end, end, sizeof(end));
		snprintf(buf, len, "%s; %s", end, j->hang_why);
		return buf;
	case DJS_FAILED:
		return j->res.why;
	default:
		return NULL;
	}
}

/* Who ended the hung run (null: it was not hung as it began to end). */
static struct json_object *view_hang_end(const struct job *j)
{
	const struct jobend *e = &j->hang_end;
	struct json_object *o;
	int sig = e->status & 0x7f;

	if (!e->by)
		return NULL;
	o = json_object_new_object();
	jstr(o, "by", jobend_by_name(e->by));
	if (e->by == JOBEND_AGENT) {
		jstr(o, "action", j->hard_killed ? "hard_timeout" : "decision");
		return o;
	}
	jint(o, "rank", e->rank);
	jint(o, "pid", e->pid);
	if (sig) {
		jint(o, "signal", sig);
		jstr(o, "signal_name", config_signal_name(sig));
		json_object_object_add(o, "exit_code", NULL);
	} else {
		json_object_object_add(o, "signal", NULL);
		json_object_object_add(o, "signal_name", NULL);
		jint(o, "exit_code", (e->status >> 8) & 0xff);
	}
	if (e->sender_pid) {
		jint(o, "sender_pid", e->sender_pid);
		jstr(o, "sender_comm", e->sender_comm);
	} else {
		json_object_object_add(o, "sender_pid", NULL);
		json_object_object_add(o, "sender_comm", NULL);
	}
	return o;
}

struct json_object *view_job(const struct job *j)
{
	struct json_object *o = json_object_new_object(), *c = json_object_new_array(),
			   *cr = json_object_new_array();
	char why[800];
	int live = 0;

	jstr(o, "job", j->id);
	jint(o, "uid", j->uid);
	if (j->hang_end.by) { /* the culprits when the hung run began to end */
		for (int i = 0; i < j->nhang_culprits; i++) {
			const struct rank *k = NULL;

			for (int m = 0; m < j->nmembers; m++)
				if (j->members[m]->id.rank == j->hang_culprits[i] &&
				    (!k || j->members[m]->start_ns > k->start_ns))
					k = j->members[m];
			json_object_array_add(c, json_object_new_int(k ? k->pid : -1));
			json_object_array_add(cr, json_object_new_int(j->hang_culprits[i]));
		}
	} else {
		for (int i = 0; i < j->nmembers; i++)
			if (j->members[i]->d.culprit) {
				json_object_array_add(c, json_object_new_int(j->members[i]->pid));
				json_object_array_add(cr,
						      json_object_new_int(j->members[i]->id.rank));
			}
	}
	/* counted now, as the ranks' own entries are: an exit seen since the last scan shows in
	 * both, never in one (the last scan's res.live lagged the rank series by a scrape) */
	for (int i = 0; i < j->nmembers; i++)
		live += !j->members[i]->s.exited;
	jint(o, "ranks", j->nmembers);
	jint(o, "live", live);
	jint(o, "exited", j->nmembers - live);
	jstr(o, "state", det_job_state_name(j->state));
	jbool(o, "hung", j->res.hung);
	jbool(o, "failed", j->state == DJS_FAILED);
	jdbl(o, "no_progress_s", view_secs(j->res.no_progress_ns));
	json_object_object_add(o, "culprits", c);
	json_object_object_add(o, "culprit_ranks", cr);
	jstr(o, "why", job_why(j, why, sizeof(why)));
	json_object_object_add(o, "ended_by", view_hang_end(j));
	jint(o, "run", j->run);
	jstr(o, "previous_run", *j->prev_state ? j->prev_state : NULL);
	jobparts_job_json(o, j);
	job_cadence_json(o, j);
	return o;
}

void view_job_ended(struct json_object *o, const struct job *j, uint64_t now)
{
	uint64_t last = 0;

	for (int i = 0; i < j->nmembers; i++) {
		if (!j->members[i]->s.exited) {
			jnull(o, "ended_s_ago");
			return;
		}
		if (j->members[i]->s.exit_ns > last)
			last = j->members[i]->s.exit_ns;
	}
	if (!j->nmembers)
		jnull(o, "ended_s_ago");
	else
		jdbl(o, "ended_s_ago", view_since(now, last));
}

static int child_add(void *ctx, const struct collect_child *c)
{
	struct json_object *o = json_object_new_object();

	jint(o, "pid", c->pid);
	jint(o, "ppid", c->ppid);
	jstr(o, "comm", c->comm);
	jbool(o, "exited", c->exited);
	json_object_array_add(ctx, o);
	return 0;
}

struct json_object *view_children(struct tracker *tr, int owner)
{
	struct json_object *arr = json_object_new_array();

	(void)collect_children(tr, owner, child_add, arr); /* unreadable: [] */
	return arr;
}

struct json_object *view_signals(const struct rank *k, uint64_t now)
{
	struct json_object *sigs = json_object_new_array();

	for (int i = 0; i < k->nsig; i++) {
		struct json_object *s = json_object_new_object();

		jdbl(s, "s_ago", view_since(now, k->sigs[i].ts_ns));
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

void view_tracker_counters(struct json_object *c, const uint64_t stat[FTBPF_STAT__MAX])
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
		jint(c, stats[i].name, (int64_t)stat[stats[i].stat]);
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
