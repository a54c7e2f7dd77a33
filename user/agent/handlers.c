/* The control commands' handlers: see handlers.h. */
#include "agent/handlers.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/adopt.h"
#include "agent/ctl.h"
#include "agent/decide.h"
#include "agent/eventlog.h"
#include "agent/jobparts.h"
#include "agent/mesh.h"
#include "agent/inspect.h"
#include "agent/rasquery.h"
#include "agent/timersvc.h"
#include "lib/jsonx.h"
#include "lib/ranks.h"
#include "os/clock.h"
#include "os/pidfd.h"
#include "os/procfs.h"
#include "watch/sample.h"
#include "watch/tracker.h"

typedef struct json_object *(*handler_fn)(struct handlers *h, const struct ctl_request *req,
					  const struct ctl_peer *peer);

static int peer_may(const struct ctl_peer *p, uid_t owner)
{
	return p->uid == 0 || p->uid == owner;
}

static struct json_object *denied(struct handlers *h)
{
	ctl_count_denied(h->ctl);
	return view_err("permission_denied", "that process belongs to another user");
}

static struct json_object *do_status(struct handlers *h, const struct ctl_request *req,
				     const struct ctl_peer *peer)
{
	struct json_object *o = view_ok(), *ranks = json_object_new_array(),
			   *jobs = json_object_new_array();
	uint64_t now = clock_mono_ns();

	(void)req;
	json_object_object_add(o, "agent", h->agent_json(h->agent_ctx, now));
	for (int j = 0; j < h->ranks->njobs; j++)
		if (peer_may(peer, h->ranks->jobs[j]->uid) && !h->ranks->jobs[j]->timers_only) {
			struct json_object *jo = view_job(h->ranks->jobs[j]);

			view_job_ended(jo, h->ranks->jobs[j], now);
			if (h->dc)
				decide_job_json(h->dc, h->ranks->jobs[j], jo);
			rasq_job_json(h->vs.rq, jo, h->ranks->jobs[j], now);
			if (h->jp)
				json_object_object_add(
				    jo, "ranks_elsewhere",
				    jobparts_remote_ranks(h->jp, h->ranks->jobs[j], now));
			json_object_array_add(jobs, jo);
		}
	for (int i = 0; i < h->ranks->n; i++)
		if (peer_may(peer, h->ranks->v[i]->uid))
			json_object_array_add(ranks, view_rank(&h->vs, h->ranks->v[i], now));
	json_object_object_add(o, "jobs", jobs);
	json_object_object_add(o, "ranks", ranks);
	json_object_object_add(o, "cluster", h->mesh ? mesh_json(h->mesh) : NULL);
	return o;
}

static struct json_object *do_explain(struct handlers *h, const struct ctl_request *req,
				      const struct ctl_peer *peer)
{
	struct rank *k = ranks_find(h->ranks, req->pid);
	struct json_object *o, *job_ranks;
	struct ftbpf_proc p;
	uint64_t now = clock_mono_ns();

	if (!k && tracker_proc_get(h->vs.tr, req->pid, &p) == 0)
		k = ranks_find(h->ranks, (int)p.owner); /* a rank's child: explain its rank */
	if (!k)
		return view_err("not_found", "no rank or rank child with that pid");
	if (!peer_may(peer, k->uid))
		return denied(h);
	o = view_ok();
	json_object_object_add(o, "rank", view_rank(&h->vs, k, now));
	json_object_object_add(o, "job", view_job(k->job));
	sampler_refresh(h->vs.sp, 1);
	json_object_object_add(o, "threads", view_threads(&h->vs, k, now));
	json_object_object_add(o, "children", view_children(h->vs.tr, k->pid));
	json_object_object_add(o, "signals", view_signals(k, now));
	job_ranks = json_object_new_array();
	for (int i = 0; i < k->job->nmembers; i++) /* a job has one owner: the peer may see all */
		if (k->job->members[i] != k)
			json_object_array_add(job_ranks,
					      view_rank(&h->vs, k->job->members[i], now));
	json_object_object_add(o, "job_ranks", job_ranks);
	if (h->jp)
		json_object_object_add(o, "ranks_elsewhere",
				       jobparts_remote_ranks(h->jp, k->job, now));
	/* the Python stacks are read off the loop: the reply goes out when they are in */
	if (inspect_explain(h->vs.ins, h->ctl, k, o))
		return NULL;
	return o;
}

/* A process that is not a rank, for `ftbpf stacks PID`: the peer's own, and wholly so (every
 * uid and gid of it the same, /proc/PID the peer's: a process that changed its credentials is
 * not dumpable and /proc shows it as root's). Its pidfd, or -errno (-EPERM: another's). */
static int own_process(const struct ctl_peer *peer, int pid, unsigned *ret_uid)
{
	struct proc_creds c;
	struct stat st;
	char p[32];
	int fd = pidfd_open_pid(pid);

	if (fd < 0)
		return fd;
	snprintf(p, sizeof(p), "/proc/%d", pid);
	if (procfs_creds(pid, &c) < 0 || stat(p, &st) < 0 || pidfd_signal(fd, 0) < 0) {
		close(fd); /* gone meanwhile: the creds may be another's */
		return -ESRCH;
	}
	if (peer->uid != 0 && (c.ruid != peer->uid || c.euid != peer->uid || c.suid != peer->uid ||
			       c.fsuid != peer->uid || c.rgid != c.egid || c.rgid != c.sgid ||
			       c.rgid != c.fsgid || st.st_uid != peer->uid)) {
		close(fd);
		return -EPERM;
	}
	*ret_uid = c.ruid;
	return fd;
}

/* A live rank as a target of `ftbpf stacks`: its process object in procs. */
static int stacks_rank(struct handlers *h, const struct rank *k, struct json_object *procs,
		       struct inspect_target *t, uint64_t now)
{
	struct json_object *p = json_object_new_object();
	int fd = fcntl(k->pidfd, F_DUPFD_CLOEXEC, 0);

	if (fd < 0) {
		json_object_put(p);
		return -errno;
	}
	jint(p, "pid", k->pid);
	jint(p, "rank", k->id.rank);
	jstr(p, "job", k->id.job);
	jstr(p, "comm", k->comm);
	jstr(p, "state", det_state_name(k->d.state));
	jstr(p, "reason", k->d.reason);
	json_object_object_add(p, "threads", view_threads_pid(&h->vs, k->pid, now));
	json_object_array_add(procs, p);
	*t = (struct inspect_target){k->pid, fd, k->uid, p};
	return 0;
}

/* The job id names one of the peer's jobs (root: anyone's; its own first). */
static struct job *peer_job(struct handlers *h, const char *id, const struct ctl_peer *peer)
{
	struct job *j = ranks_job_find(h->ranks, peer->uid, id);

	for (int i = 0; !j && peer->uid == 0 && i < h->ranks->njobs; i++)
		if (!strcmp(h->ranks->jobs[i]->id, id))
			j = h->ranks->jobs[i];
	return j;
}

/* Every thread's kernel stack and the Python stacks of a job's live ranks, or of one process
 * the peer owns, now. */
static struct json_object *do_stacks(struct handlers *h, const struct ctl_request *req,
				     const struct ctl_peer *peer)
{
	struct inspect_target t[STACKS_MAX];
	struct json_object *o, *procs;
	uint64_t now = clock_mono_ns();
	struct job *j = NULL;
	struct rank *k = NULL;
	int n = 0, more = 0;

	if (*req->job) {
		j = peer_job(h, req->job, peer);
		if (!j || j->timers_only)
			return view_err("not_found", "no job of yours with that name on this host");
	} else if ((k = ranks_find_live(h->ranks, req->pid)) && !peer_may(peer, k->uid)) {
		return denied(h);
	}
	sampler_refresh(h->vs.sp, 1); /* every thread's kernel stack, now */
	o = view_ok();
	procs = json_object_new_array();
	jstr(o, "job", j ? j->id : k ? k->id.job : NULL);
	if (j) {
		jint(o, "uid", j->uid);
		for (int i = 0; i < j->nmembers; i++) {
			if (j->members[i]->s.exited)
				continue;
			if (n == STACKS_MAX) {
				more++;
				continue;
			}
			if (stacks_rank(h, j->members[i], procs, &t[n], now) == 0)
				n++;
		}
	} else if (k) {
		jint(o, "uid", k->uid);
		if (stacks_rank(h, k, procs, &t[n], now) == 0)
			n++;
	} else {
		struct json_object *p;
		struct proc_stat st;
		unsigned uid = 0;
		int fd = own_process(peer, req->pid, &uid);

		if (fd == -EPERM) {
			json_object_put(o);
			json_object_put(procs);
			return denied(h);
		}
		if (fd < 0 || procfs_stat(req->pid, -1, &st) < 0) {
			if (fd >= 0)
				close(fd);
			json_object_put(o);
			json_object_put(procs);
			return view_err("not_found", "no process with that pid");
		}
		jint(o, "uid", uid);
		p = json_object_new_object();
		jint(p, "pid", req->pid);
		json_object_object_add(p, "rank", NULL);
		jstr(p, "comm", st.comm);
		json_object_object_add(p, "state", json_object_new_string_len(&st.state, 1));
		json_object_object_add(p, "threads", view_threads_pid(&h->vs, req->pid, now));
		json_object_array_add(procs, p);
		t[n++] = (struct inspect_target){req->pid, fd, uid, p};
	}
	json_object_object_add(o, "processes", procs);
	jint(o, "not_shown", more); /* ranks past STACKS_MAX */
	/* the Python stacks are read off the loop: the reply goes out when they are in */
	if (inspect_many(h->vs.ins, h->ctl, o, t, n))
		return NULL;
	return o;
}

static struct json_object *do_signal(struct handlers *h, const struct ctl_request *req,
				     const struct ctl_peer *peer)
{
	struct rank *k = ranks_find_live(h->ranks, req->pid);
	struct json_object *o;
	int r;

	if (!k)
		return view_err("not_found", "no live rank with that pid");
	if (!peer_may(peer, k->uid))
		return denied(h);
	r = pidfd_signal(k->pidfd, req->sig); /* never kill(2) by a pid we could not pin */
	o = view_action(k, "client_signal", req->sig, r < 0 ? strerror(-r) : "sent");
	jint(o, "requester_pid", peer->pid);
	jint(o, "requester_uid", peer->uid);
	eventlog_emit(h->el, o);
	if (r < 0)
		return view_err("failed", strerror(-r));
	return view_ok();
}

static struct json_object *do_version(struct handlers *h, const struct ctl_request *req,
				      const struct ctl_peer *peer)
{
	struct json_object *o = view_ok();

	(void)h, (void)req, (void)peer;
	jstr(o, "version", FTBPF_VERSION);
	jint(o, "protocol", CTL_VERSION);
	return o;
}

static struct json_object *do_timers(struct handlers *h, const struct ctl_request *req,
				     const struct ctl_peer *peer)
{
	struct json_object *o = view_ok(), *arr = json_object_new_array();
	const struct timers *tm = timersvc_table(h->ts);
	uint64_t now = clock_mono_ns();

	(void)req;
	for (int i = 0; i < tm->n; i++) {
		const struct timer *t = &tm->v[i];
		struct proc_stat st;

		if (!peer_may(peer, t->uid))
			continue;
		json_object_array_add(
		    arr, view_timer(t->pid, t->uid,
				    procfs_stat(t->pid, -1, &st) == 0 ? st.comm : NULL, t->scope,
				    t->deadline_ns, now, t->sig, timers_source_name(t->source)));
	}
	for (int i = 0; i < h->ranks->n; i++) {
		const struct rank *k = h->ranks->v[i];

		if (!k->slot || k->s.exited || !peer_may(peer, k->uid))
			continue;
		for (int j = 0; j < FTBPF_SLOT_TIMERS; j++) {
			const struct ftbpf_slot_timer *t = &k->slot->timers[j];
			char scope[FTBPF_SLOT_SCOPE_LEN + 1];
			uint64_t d = timers_slot_armed(t);

			if (!d)
				continue;
			memcpy(scope, t->scope, FTBPF_SLOT_SCOPE_LEN);
			scope[FTBPF_SLOT_SCOPE_LEN] = 0;
			json_object_array_add(arr, view_timer(k->pid, k->uid, k->comm, scope, d,
							      now, (int)t->sig,
							      timers_source_name(TIMER_SRC_SLOT)));
		}
	}
	json_object_object_add(o, "timers", arr);
	return o;
}

/* The rank its launcher's variables give pid (ident_from_environ), -1 none: a process they did
 * not make a rank of here (its job is not wanted, its parent is a rank) that names a job. */
static int env_rank(int pid)
{
	size_t cap = 256 * 1024;
	char *env = malloc(cap);
	ssize_t n = env ? procfs_environ(pid, env, cap) : -1;
	struct rank_ident e;
	int rank = -1;

	if (n > 0 && ident_from_environ(env, (size_t)n, &e) == 0)
		rank = e.rank;
	free(env);
	return rank;
}

/* Adopt the connecting process as the client says (its environment made it no rank here). A
 * rank it does not name is its launcher's, else the lowest its job's live ranks here leave
 * free (job_pick_rank): never one rank 0 for every process of a job. */
static struct rank *adopt_client(struct handlers *h, const struct ctl_request *req,
				 const struct ctl_peer *peer, const char **why)
{
	struct rank_ident id = {.local_rank = -1, .world_size = -1, .source = IDENT_CLIENT};
	struct proc_creds cr;
	struct rank *k;
	int fd, r;

	if (*req->job) {
		snprintf(id.job, sizeof(id.job), "%s", req->job);
		ident_job_sanitize(id.job); /* a name as the environment's are */
	} else
		snprintf(id.job, sizeof(id.job), "client:%d", peer->pid);
	if (!adopt_job_wanted(h->ad, id.job)) {
		*why = "not_wanted";
		return NULL;
	}
	fd = pidfd_open_pid(peer->pid);
	if (fd < 0 || ctl_peer_current(peer) < 0) { /* still the same process? */
		if (fd >= 0)
			close(fd);
		*why = "exited";
		return NULL;
	}
	/* a job of the connection's user only: the process runs as that user now (its real uid),
	 * without privileges beyond them */
	if (procfs_creds(peer->pid, &cr) < 0 || cr.ruid != peer->uid ||
	    procfs_creds_elevated(&cr)) {
		close(fd);
		*why = "denied";
		return NULL;
	}
	r = job_pick_rank(ranks_job_find(h->ranks, peer->uid, id.job), req->rank,
			  req->rank < 0 && *req->job ? env_rank(peer->pid) : -1, &id);
	if (r < 0) {
		close(fd);
		*why = strerror(-r);
		return NULL;
	}
	r = adopt_as(h->ad, peer->pid, fd, &id, "register", 1);
	*why = r < 0 ? strerror(-r) : "not adopted";
	k = ranks_find_live(h->ranks, peer->pid);
	if (k && !*req->job && req->rank < 0 && k->id.source == IDENT_ASSIGNED &&
	    k->job->nmembers == 1) {
		/* it named no job and no rank, and no launcher's variables make it one: a
		 * process that uses countdown timers, not a rank; it gets its slot, and is never
		 * judged nor part of a decision (a single-rank torch job is a job) */
		k->timers_only = 1;
		k->job->timers_only = 1;
	}
	return k;
}

/* A process asks for its slot: adopt it (from its environment, else as the client says) and
 * pass it the slot's map fd. Only the connecting process itself can be registered, and only
 * while it lives: its pid is checked against its pidfd (SO_PEERPIDFD) or its start time, so a
 * socket handed to another process, or a pid reused after the client exited, gets nothing. */
static struct json_object *do_register(struct handlers *h, const struct ctl_request *req,
				       const struct ctl_peer *peer)
{
	const char *why = NULL;
	struct rank *k;
	int r;

	if (ctl_peer_current(peer) < 0) {
		ctl_count_denied(h->ctl);
		return view_err("not_found", "the process that opened this connection has exited: "
					     "register from the process itself");
	}
	k = ranks_find_live(h->ranks, peer->pid);
	if (!k) {
		adopt_pid(h->ad, peer->pid, "register");
		k = ranks_find_live(h->ranks, peer->pid);
	}
	if (!k && !(k = adopt_client(h, req, peer, &why))) {
		if (!strcmp(why, "not_wanted"))
			return view_err("not_wanted",
					"this agent adopts only the jobs --only-jobs names");
		if (!strcmp(why, "exited"))
			return view_err("not_found", "the process exited");
		if (!strcmp(why, "denied"))
			return denied(h);
		return view_err("failed", why);
	}
	if (k->uid != peer->uid) /* cannot happen: the pid is the peer's (defence in depth) */
		return denied(h);
	if (!k->slot) {
		r = tracker_slot_create(h->vs.tr, (uint32_t)k->pid, k->start_ns, &k->slot_fd,
					&k->slot);
		if (r < 0)
			return view_err("failed", strerror(-r));
		if (h->dc && !k->timers_only)
			decide_rank_registered(h->dc, k);
	}
	ctl_reply_fd(h->ctl, k->slot_fd);
	return view_registered(k);
}

static struct json_object *do_timer_req(struct handlers *h, const struct ctl_request *req,
					const struct ctl_peer *peer)
{
	int pid = req->pid > 0 ? req->pid : peer->pid;
	int release = req->cmd == CTL_CMD_TIMER_RELEASE;
	uint64_t deadline = release ? 0 : clock_mono_ns() + (uint64_t)(req->expires_in * 1e9);
	int r;

	/* no pid: the caller's own, if the caller still is the process that connected */
	if (req->pid <= 0 && ctl_peer_current(peer) < 0)
		return view_err("not_found", "the process that opened this connection has exited");
	r = timersvc_request(h->ts, pid, peer->uid, req->scope, release, deadline, req->sig,
			     TIMER_SRC_CTL);
	if (r == -EPERM)
		return denied(h);
	if (r == -EDQUOT)
		return view_err("limit", "this user holds max_timers_per_user timers already");
	if (r < 0)
		return view_err(r == -ESRCH ? "not_found" : "failed", strerror(-r));
	return view_ok();
}

static struct json_object *do_peers(struct handlers *h, const struct ctl_request *req,
				    const struct ctl_peer *peer)
{
	struct json_object *o;

	(void)req, (void)peer;
	if (!h->mesh)
		return view_err("mesh_off", "the heartbeat mesh is off (no --bind)");
	o = view_ok();
	json_object_object_add(o, "cluster", mesh_json(h->mesh));
	return o;
}

static struct json_object *do_checkpoint(struct handlers *h, const struct ctl_request *req,
					 const struct ctl_peer *peer)
{
	struct json_object *o;
	int64_t step = -1;
	struct job *j;
	int r;

	if (!h->dc)
		return view_err("decisions_off", "coordinated decisions are off (decisions = off)");
	j = peer_job(h, req->job, peer);
	if (!j) {
		for (int i = 0; i < h->ranks->njobs; i++)
			if (!strcmp(h->ranks->jobs[i]->id, req->job))
				return denied(h); /* another user's job of that name */
		return view_err("not_found", "no job of yours with that id on this node");
	}
	r = decide_checkpoint(h->dc, j, "requested by an operator (ftbpf checkpoint)", &step);
	if (r == -ENOENT)
		return view_err("not_found", "that job's ranks do not use the client library "
					     "(libftbpf, the Python binding): nobody could save");
	if (r == -EBUSY)
		return view_err("busy", "a checkpoint of that job is in progress");
	if (r == -EAGAIN)
		return view_err("unreachable", "the decision store cannot be reached: nothing "
					       "can be agreed now");
	if (r < 0)
		return view_err("failed", strerror(-r));
	o = view_ok();
	jstr(o, "job", j->id);
	jint(o, "uid", j->uid);
	jint(o, "step", step);
	return o;
}

static struct json_object *do_decisions(struct handlers *h, const struct ctl_request *req,
					const struct ctl_peer *peer)
{
	struct json_object *o;

	(void)req;
	if (!h->dc)
		return view_err("decisions_off", "coordinated decisions are off (decisions = off)");
	o = view_ok();
	json_object_object_add(o, "decisions", decide_history_json(h->dc, peer->uid));
	json_object_object_add(o, "agent", decide_json(h->dc));
	return o;
}

/* Forget the decisions of the requester's job (its uid's prefix only): a new start. */
static struct json_object *do_decisions_reset(struct handlers *h, const struct ctl_request *req,
					      const struct ctl_peer *peer)
{
	struct json_object *o;
	int r;

	if (!h->dc)
		return view_err("decisions_off", "coordinated decisions are off (decisions = off)");
	r = decide_reset(h->dc, peer->uid, req->job);
	if (r < 0)
		return view_err("failed", strerror(-r));
	o = view_ok();
	jstr(o, "job", req->job);
	jint(o, "uid", peer->uid);
	return o;
}

/* Every command the agent answers (events: the control server streams them itself). */
static const struct {
	enum ctl_cmd cmd;
	handler_fn fn;
} handlers[] = {
    {CTL_CMD_STATUS, do_status},
    {CTL_CMD_EXPLAIN, do_explain},
    {CTL_CMD_SIGNAL, do_signal},
    {CTL_CMD_VERSION, do_version},
    {CTL_CMD_TIMERS, do_timers},
    {CTL_CMD_TIMER_ACQUIRE, do_timer_req},
    {CTL_CMD_TIMER_RELEASE, do_timer_req},
    {CTL_CMD_REGISTER, do_register},
    {CTL_CMD_PEERS, do_peers},
    {CTL_CMD_CHECKPOINT, do_checkpoint},
    {CTL_CMD_DECISIONS, do_decisions},
    {CTL_CMD_DECISIONS_RESET, do_decisions_reset},
    {CTL_CMD_STACKS, do_stacks},
};

struct json_object *handlers_dispatch(void *ctx, const struct ctl_request *req,
				      const struct ctl_peer *peer)
{
	for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++)
		if (handlers[i].cmd == req->cmd)
			return handlers[i].fn(ctx, req, peer);
	return view_err("unknown_command", "unknown command");
}

struct json_object *handlers_status(void *ctx)
{
	const struct ctl_peer root = {.pid = 0, .uid = 0, .gid = 0, .pidfd = -1};

	return do_status(ctx, NULL, &root);
}
