/*
 * ftbpfd's wiring: it opens the modules, connects them and runs the event loop. Data flows
 * kernel -> tracker (watch/tracker.c) -> kevents (adoption, exits, signals) and, at each scan,
 * watch (sample -> detector -> verdicts) -> actions (reports, signals); views are what the
 * control socket (handlers) and the event log show; timers and the mesh are services on the
 * same loop. See docs/architecture.md.
 */
#include "agent/agent.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sodium.h>
#include <unistd.h>

#include "agent/actions.h"
#include "agent/adopt.h"
#include "agent/ctl.h"
#include "agent/decide.h"
#include "agent/eventlog.h"
#include "agent/fifohold.h"
#include "agent/handlers.h"
#include "agent/metrics.h"

#include <systemd/sd-daemon.h>
#include "agent/jobparts.h"
#include "agent/jobstate.h"
#include "agent/kevents.h"
#include "agent/mesh.h"
#include "agent/nodeid.h"
#include "lib/starttime.h"
#include "os/conffile.h"
#include "agent/rasquery.h"
#include "agent/store.h"
#include "agent/tables.h"
#include "agent/timersvc.h"
#include "agent/views.h"
#include "agent/scan.h"
#include "lib/decisions.h"
#include "lib/gpuapi.h"
#include "lib/jsonx.h"
#include "lib/ranks.h"
#include "lib/shares.h"
#include "os/clock.h"
#include "os/journal.h"
#include "os/log.h"
#include "os/loop.h"
#include "os/procfs.h"
#include "os/safefs.h"
#include "proto/mesh_proto.h"
#include "watch/collect.h"
#include "watch/gpuprobe.h"
#include "watch/inspector.h"
#include "watch/tracker.h"

#define EXITED_RETENTION_NS (3600 * CLOCK_NS_PER_S) /* a finished job stays visible an hour */
#define RB_BATCH	    512			    /* ring-buffer records handled per loop turn */

struct agent {
	struct ftbpf_config cfg;
	struct loop *loop; /* owned (all of these pointers) */
	struct tracker *tr;
	struct gpuprobe *gp;	 /* NULL when CUDA/NCCL probes are off or impossible */
	struct inspector *ins;	 /* files and memory of ranks, off the loop; NULL: none */
	struct rasq *rq;	 /* NCCL RAS queries for hung jobs (through ins) */
	struct mesh *mesh;	 /* NULL when the heartbeat mesh is off */
	struct jobparts *jp;	 /* the job across hosts (and the waits-for graph) */
	struct metrics *metrics; /* NULL when metrics_listen is empty */
	struct eventlog *el;
	struct ctl_server *ctl;
	struct adopter *ad;
	struct tables *tb; /* the per-user shares of the tables */
	struct timersvc *ts;
	struct ranks ranks; /* the rank and job table */
	struct scan w;
	struct jobstate js;
	struct kevents kv;
	struct actions ac;
	struct handlers h;
	struct nodeid id; /* this node's key and every node's public key (none: cluster key only) */
	struct store *st; /* NULL with the decider: decisions are off */
	struct decider *dc;
	char node[32];	      /* this node's name in decisions */
	int tfd, sfd, lockfd; /* scan timer, signals, state-dir lock */
	int wdfd;	      /* systemd's watchdog timer, -1: no watchdog */
	uint64_t start_ns;
	uint64_t bad_said_ns; /* the last store_bad_reply event */
	int stop;
};

/* The agent's own part of `status`: version, timeouts, features, counters. */
static struct json_object *agent_json(void *ctx, uint64_t now)
{
	struct agent *a = ctx;
	const struct tracker_features *f = tracker_features(a->tr);
	struct json_object *o = json_object_new_object(), *c = json_object_new_object(),
			   *ft = json_object_new_object(), *libs = json_object_new_array();
	struct gpuprobe_lib_info li;
	uint64_t stats[FTBPF_STAT__MAX];

	jint(o, "pid", getpid());
	jstr(o, "version", FTBPF_VERSION);
	jdbl(o, "uptime_s", view_secs(now - a->start_ns));
	jdbl(o, "soft_timeout_s", config_soft_ceiling(&a->cfg));
	jbool(o, "soft_timeout_auto", a->cfg.soft_auto);
	jdbl(o, "hard_timeout_s", a->cfg.hard_timeout_s);
	jstr(o, "action", config_action_name(a->cfg.action));
	jstr(ft, "programs", f->tp_btf ? "tp_btf" : "raw_tp");
	jbool(ft, "task_iter", f->task_iter);
	jbool(ft, "oom", f->oom);
	jbool(ft, "resumed", f->resumed);
	jint(ft, "syscall_clock_hz", f->hz);
	json_object_object_add(ft, "gpu_majors", scan_gpu_majors_json(&a->w));
	jint(ft, "pid_max", f->pid_max);
	jbool(ft, "uprobes", f->uprobes);
	jbool(ft, "gpu_probes", a->gp != NULL);
	for (int i = 0; gpuprobe_info(a->gp, i, &li) == 0; i++) {
		struct json_object *l = json_object_new_object();

		jstr(l, "path", li.path);
		jstr(l, "kind",
		     li.kind == GPUAPI_LIB_CUDA	  ? "cuda"
		     : li.kind == GPUAPI_LIB_MPI  ? "mpi"
		     : li.kind == GPUAPI_LIB_PROF ? "nccl-profiler"
						  : "nccl");
		jint(l, "functions", li.probes);
		jint(l, "uid", li.uid);
		jstr(l, "error", li.err ? strerror(-li.err) : NULL);
		json_object_array_add(libs, l);
	}
	json_object_object_add(o, "gpu_libs", libs);
	jint(c, "gpu_libs_refused", (int64_t)gpuprobe_refused(a->gp));
	if (a->ins) {
		struct inspector_counters ic;

		inspector_counters(a->ins, &ic);
		jint(c, "inspections", (int64_t)ic.jobs);
		jint(c, "inspections_timed_out", (int64_t)ic.timed_out);
		jint(c, "inspections_refused", (int64_t)ic.refused);
	}
	{
		struct rasq_counters rc;

		rasq_counters(a->rq, &rc);
		jint(c, "nccl_ras_queries", (int64_t)rc.queries);
		jint(c, "nccl_ras_answered", (int64_t)rc.answered);
		jint(c, "nccl_ras_failed", (int64_t)rc.failed);
		jint(c, "nccl_ras_text", (int64_t)rc.text);
		jint(c, "nccl_ras_untrusted", (int64_t)rc.untrusted);
	}
	json_object_object_add(o, "features", ft);
	jint(c, "events", (int64_t)a->kv.events);
	adopter_counters(a->ad, c);
	jint(c, "hangs", (int64_t)a->ac.hangs);
	jint(c, "actions", (int64_t)(a->ac.sent + a->ac.kills));
	jint(c, "scans", (int64_t)a->w.scans);
	collect_stats(a->tr, stats);
	view_tracker_counters(c, stats);
	view_ctl_counters(c, ctl_counters(a->ctl), ctl_clients(a->ctl));
	jint(c, "eventlog_write_errors", (int64_t)eventlog_write_errors(a->el));
	timersvc_counters(a->ts, c);
	jobparts_counters(a->jp, c);
	tables_status(a->tb, o, c);
	if (a->mesh) { /* other hosts' clocks against ours (collective arrivals across hosts) */
		struct json_object *ck = json_object_new_array();

		jobparts_clocks_json(a->jp, ck);
		json_object_object_add(o, "peer_clocks", ck);
	}
	if (a->metrics) {
		uint64_t refused, timed_out, unauthorized;

		metrics_counters(a->metrics, &refused, &timed_out, &unauthorized);
		jint(c, "metrics_scrapes", (int64_t)metrics_scrapes(a->metrics));
		jint(c, "metrics_refused", (int64_t)refused);
		jint(c, "metrics_timed_out", (int64_t)timed_out);
		jint(c, "metrics_unauthorized", (int64_t)unauthorized);
	}
	json_object_object_add(o, "counters", c);
	json_object_object_add(o, "decisions", a->dc ? decide_json(a->dc) : NULL);
	return o;
}

/* Rank k's procs entry goes, if it is still the one of this incarnation. */
static void drop_kernel_record(struct agent *a, const struct rank *k)
{
	struct ftbpf_proc p;

	if (tracker_proc_get(a->tr, (uint32_t)k->pid, &p) == 0 &&
	    starttime_same(p.start_ns, k->start_ns))
		(void)tracker_proc_delete(a->tr, (uint32_t)k->pid); /* gone: fine */
}

/* Forget an ended rank (its slot and procs entry too). */
static void forget_rank(void *ctx, struct rank *k)
{
	struct agent *a = ctx;

	timersvc_slot_drop(a->ts, k);
	drop_kernel_record(a, k);
	ranks_remove(&a->ranks, k);
}

static int ranks_ended(const struct ranks *r)
{
	int n = 0;

	for (int i = 0; i < r->n; i++)
		n += r->v[i]->s.exited && r->v[i]->exit_judged;
	return n;
}

/* Forget ranks of finished jobs after the retention. */
static void forget_finished(struct agent *a, uint64_t now)
{
	for (int i = 0; i < a->ranks.n;) {
		struct rank *k = a->ranks.v[i];

		if (!k->s.exited || k->job->res.live != 0 ||
		    now - k->s.exit_ns <= EXITED_RETENTION_NS) {
			i++;
			continue;
		}
		forget_rank(a, k);
	}
}

/*
 * A rank's exit is judged once a scan judged its job after it: its procs entry goes then (the
 * agent keeps the rank for its retention), so that ended ranks never fill the kernel's table,
 * and a user's ranks hold places there only while they live; a user keeps its share of ended
 * ranks (adopt_trim_ended).
 */
static void release_judged(struct agent *a)
{
	uid_t seen[8];
	int nseen = 0;

	for (int i = 0; i < a->ranks.n; i++) {
		struct rank *k = a->ranks.v[i];
		int known = 0;

		if (!k->s.exited || k->exit_judged)
			continue;
		drop_kernel_record(a, k);
		k->exit_judged = 1;
		for (int u = 0; u < nseen; u++)
			known |= seen[u] == k->uid;
		if (!known && nseen < (int)(sizeof(seen) / sizeof(seen[0])))
			seen[nseen++] = k->uid;
	}
	for (int u = 0; u < nseen; u++)
		adopt_trim_ended(a->ad, seen[u]);
}

/* Job j's verdict from its ranks' samples, shared with the other hosts' agents, acted on. */
static void judge_job(struct agent *a, struct job *j, uint64_t now)
{
	if (!j->timers_only && /* timers alone: never judged */
	    scan_judge(&a->w, j, now) == 0) {
		jobparts_job(a->jp, j, now);
		actions_job(&a->ac, j, now);
	}
}

/* Malformed replies from etcd: one event (to root) per 10 s at most, with their number since
 * the last one; never acted on. */
static void say_bad_replies(struct agent *a, uint64_t now)
{
	char why[200];
	uint64_t n;

	if (!a->st || now - a->bad_said_ns < 10000000000ull)
		return;
	n = store_bad_replies(a->st, why, sizeof(why));
	if (!n)
		return;
	a->bad_said_ns = now;
	eventlog_emit(a->el, view_store_bad_reply(why, n));
}

/* One scan: sample every rank, judge every job, act, then housekeeping. */
static void scan(struct agent *a)
{
	uint64_t now;

	if (a->ins) /* answers past their time limit, if the inspector is stuck */
		inspector_poll(a->ins);
	scan_begin(&a->w);
	now = clock_mono_ns();
	ctl_tick(a->ctl, now);
	adopt_catch_up(a->ad, now);
	for (int j = 0; j < a->ranks.njobs; j++) /* before its ranks are sampled */
		if (!a->ranks.jobs[j]->restored)
			jobstate_restore(&a->js, a->ranks.jobs[j]);
	scan_sample(&a->w, now);
	for (int j = 0; j < a->ranks.njobs; j++)
		judge_job(a, a->ranks.jobs[j], now);
	release_judged(a);
	jobparts_tick(a->jp, now);
	if (a->dc)
		decide_tick(a->dc);
	say_bad_replies(a, now);
	timersvc_check(a->ts);
	actions_kills_due(&a->ac); /* its timerfd sends them when due: in case it could not */
	jobstate_save(&a->js, &a->ranks);
	forget_finished(a, now);
	tables_held(a->tb, SHARE_RANKS, a->ranks.n);
	tables_held(a->tb, SHARE_ENDED, ranks_ended(&a->ranks));
	tables_tick(a->tb, now);
	if (a->mesh) {
		struct mesh_health h;

		scan_health(&a->w, &h);
		mesh_set_health(a->mesh, &h);
	}
	metrics_tick(a->metrics);
}

/* All of job j's ranks here ended and a relaunch begins (adopt.c): the run that ended is judged
 * now, as a scan would (its failure reported, its end decided on), before it is forgotten. Its
 * ranks are all gone: nothing to sample. */
static void on_run_end(void *ctx, struct job *j)
{
	struct agent *a = ctx;
	uint64_t now = clock_mono_ns();

	if (!j->restored) /* at start, before the first scan: what the last agent reported */
		jobstate_restore(&a->js, j);
	judge_job(a, j, now);
	if (a->dc)
		decide_job(a->dc, j);
}

/* ---- loop handlers ---- */
static void on_ring(void *ctx, uint32_t arg, uint32_t events)
{
	struct agent *a = ctx;

	(void)arg, (void)events;
	tracker_consume(a->tr, RB_BATCH);
}

/* Rank candidates the adoption reader found: a few per turn, so that requests and timers
 * never wait behind a flood of adoptions. */
#define ADOPT_BATCH 16

static void on_adopt_ready(void *ctx, uint32_t arg, uint32_t events)
{
	struct agent *a = ctx;

	(void)arg, (void)events;
	adopt_take_ready(a->ad, ADOPT_BATCH);
}

static void on_inspector(void *ctx, uint32_t arg, uint32_t events)
{
	struct agent *a = ctx;

	(void)arg, (void)events;
	inspector_poll(a->ins);
}

static void on_scan_timer(void *ctx, uint32_t arg, uint32_t events)
{
	struct agent *a = ctx;
	uint64_t exp;

	(void)arg, (void)events;
	if (read(a->tfd, &exp, sizeof(exp)) > 0) {
		tracker_consume(a->tr, RB_BATCH);
		scan(a);
	}
}

static void on_signal(void *ctx, uint32_t arg, uint32_t events)
{
	struct agent *a = ctx;
	struct signalfd_siginfo si;

	(void)arg, (void)events;
	while (read(a->sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP)
			eventlog_reopen(a->el);
		else
			a->stop = 1;
	}
}

/* Heartbeat mesh: peer events into the event log. */
static void on_mesh_event(void *ctx, const char *type, const struct swim_member *m)
{
	struct agent *a = ctx;

	eventlog_emit(a->el, view_peer(type, m));
	if (a->jp)
		jobparts_peer_event(a->jp, type, m);
	if (a->dc && (!strcmp(type, "peer_dead") || !strcmp(type, "peer_alive"))) {
		char addr[32];

		meshaddr_format(&m->addr, addr, sizeof(addr));
		if (type[5] == 'd')
			decide_peer_dead(a->dc, addr);
		else
			decide_peer_alive(a->dc, addr);
	}
}

/* ---- decisions ---- */
static void on_store_changed(void *ctx)
{
	struct agent *a = ctx;
	char key[160], why[96];
	uint64_t n = store_rejected(a->st, key, sizeof(key), why, sizeof(why));

	if (n) { /* never acted on; said once per change, to root only */
		eventlog_emit(a->el, view_store_rejected(key, why, n));
	}
	if (a->dc)
		decide_tick(a->dc);
}

/* This node's name: node_name, else the mesh's address (what peers call us), else the host
 * name (cut to the characters a key may hold). */
static void node_name(struct agent *a)
{
	char host[256] = "";

	if (*a->cfg.node_name)
		snprintf(host, sizeof(host), "%s", a->cfg.node_name);
	else if (*a->cfg.mesh_bind)
		snprintf(host, sizeof(host), "%s", a->cfg.mesh_bind);
	else if (gethostname(host, sizeof(host) - 1) < 0)
		snprintf(host, sizeof(host), "localhost");
	for (char *p = host; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-",
			    *p))
			*p = '_';
	snprintf(a->node, sizeof(a->node), "%.31s", *host ? host : "localhost");
}

static int open_decisions(struct agent *a, char *err, size_t errlen)
{
	const struct ftbpf_config *cfg = &a->cfg;
	struct store_opts so = {.state_dir = cfg->state_dir,
				.endpoints = cfg->etcd_endpoints,
				.prefix = cfg->etcd_prefix,
				.cacert = cfg->etcd_cacert,
				.cert = cfg->etcd_cert,
				.key = cfg->etcd_key,
				.lease_ttl_s = cfg->etcd_lease_ttl_s,
				.loop = a->loop,
				.changed = on_store_changed,
				.ctx = a,
				.node_keys = a->id.on ? &a->id.keys : NULL,
				.node_sk = a->id.sk,
				.node = a->node};
	struct decide_opts dopts;
	uint8_t ckey[MESH_KEY_BYTES];
	char e2[300], pw[256] = "";

	if (!strcmp(cfg->decisions, "off"))
		return 0;
	node_name(a);
	if (*cfg->etcd_endpoints) { /* records in etcd are authenticated with the cluster key */
		if (conffile_mesh_key(cfg->mesh_key_file, ckey, e2, sizeof(e2)) < 0) {
			snprintf(err, errlen, "decisions: %s", e2);
			return -EINVAL;
		}
		so.cluster_key = ckey;
		if (*cfg->etcd_user) {
			if (safefs_read_secret(cfg->etcd_password_file, pw, sizeof(pw), e2,
					       sizeof(e2)) < 0) {
				snprintf(err, errlen, "decisions: etcd_password_file: %s", e2);
				return -EINVAL;
			}
			so.user = cfg->etcd_user;
			so.password = pw;
		}
		if (cfg->etcd_insecure)
			log_warn(
			    "etcd_insecure: etcd is reached without TLS client authentication: "
			    "whoever reaches it can read and delete ftbpf's keys (records "
			    "stay authenticated)");
	}
	/* unreachable no later than the decider holds the ranks (I6) */
	so.reachable_ms = dec_reachable_ms((int)cfg->etcd_lease_ttl_s, cfg->fence_after_s);
	a->st = store_open(&so, e2, sizeof(e2));
	sodium_memzero(ckey, sizeof(ckey));
	sodium_memzero(pw, sizeof(pw));
	if (!a->st) {
		snprintf(err, errlen, "decisions: %s", e2);
		return -EINVAL;
	}
	if (!*cfg->etcd_endpoints && *cfg->mesh_bind)
		log_warn("decisions: no etcd_endpoints: this node decides for its own ranks only "
			 "(the mesh's other nodes do not agree with it)");
	dopts = (struct decide_opts){&a->cfg, &a->ranks, a->el, &a->ac, a->st, a->node};
	a->dc = decider_new(&dopts);
	if (!a->dc) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	a->kv.dc = a->dc;
	a->h.dc = a->dc;
	return 0;
}

/* ---- lifecycle ---- */
static int lock_state_dir(struct agent *a, char *err, size_t errlen)
{
	char p[300];
	int r;

	r = safefs_mkdir(a->cfg.state_dir, 0700, err, errlen);
	if (r < 0)
		return r;
	snprintf(p, sizeof(p), "%s/ftbpfd.lock", a->cfg.state_dir);
	a->lockfd = safefs_open(p, O_RDWR | O_CREAT, 0600, err, errlen);
	if (a->lockfd < 0)
		return a->lockfd;
	if (flock(a->lockfd, LOCK_EX | LOCK_NB) < 0) {
		snprintf(err, errlen, "state dir %s is in use by another ftbpfd (%s)",
			 a->cfg.state_dir, strerror(errno));
		return -EBUSY;
	}
	if (ftruncate(a->lockfd, 0) == 0)
		dprintf(a->lockfd, "%d\n", getpid());
	return 0;
}

/*
 * What one user can make us hold must fit in our descriptors: every timer holds a pidfd and
 * every connection a socket. Under a small open-file limit (one we could not raise) the
 * per-user limits shrink so that no user can exhaust it; the rest stays for ranks and root.
 */
static void fd_budget(struct ftbpf_config *c)
{
	struct rlimit rl;
	long n;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return;
	n = (long)rl.rlim_cur;
	if (c->max_timers_per_user > n / 8) {
		c->max_timers_per_user = n / 8 > 16 ? (int)(n / 8) : 16;
		log_warn("open-file limit %ld: at most %d timers per user", n,
			 c->max_timers_per_user);
	}
	if (c->ctl_max_clients > n / 4)
		c->ctl_max_clients = n / 4 > 64 ? (int)(n / 4) : 64;
	if (c->ctl_clients_per_user > n / 16) {
		c->ctl_clients_per_user = n / 16 > 4 ? (int)(n / 16) : 4;
		log_warn("open-file limit %ld: at most %d control connections per user", n,
			 c->ctl_clients_per_user);
	}
}

/* Watch fd in the loop with handler fn; err says what failed. */
static int watch_fd(struct agent *a, int fd, loop_fn fn, int urgent, char *err, size_t errlen)
{
	int h = loop_handler(a->loop, fn, a, urgent);
	int r = h < 0 ? h : loop_add(a->loop, fd, EPOLLIN, h, 0);

	if (r < 0)
		snprintf(err, errlen, "event loop: %s", strerror(-r));
	return r;
}

/* systemd's watchdog: a timer of its own at a quarter of WatchdogSec (systemd wants a ping at
 * least every half), urgent in the loop, so that a slow scan or a flood of requests does not
 * delay it; a loop that stops turning stops the pings, and systemd restarts the agent. */
static void on_watchdog(void *ctx, uint32_t arg, uint32_t events)
{
	struct agent *a = ctx;
	uint64_t exp;

	(void)arg, (void)events;
	if (read(a->wdfd, &exp, sizeof(exp)) > 0)
		sd_notify(0, "WATCHDOG=1");
}

static int open_watchdog(struct agent *a, char *err, size_t errlen)
{
	struct itimerspec its = {};
	uint64_t usec = 0, ns;

	if (sd_watchdog_enabled(0, &usec) <= 0 || !usec)
		return 0;
	ns = usec * 1000 / 4;
	its.it_interval.tv_sec = (time_t)(ns / CLOCK_NS_PER_S);
	its.it_interval.tv_nsec = (long)(ns % CLOCK_NS_PER_S);
	its.it_value = its.it_interval;
	a->wdfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (a->wdfd < 0 || timerfd_settime(a->wdfd, 0, &its, NULL) < 0) {
		snprintf(err, errlen, "watchdog timerfd: %s", strerror(errno));
		return -errno;
	}
	return watch_fd(a, a->wdfd, on_watchdog, 1, err, errlen);
}

static int open_scan_timer(struct agent *a, char *err, size_t errlen)
{
	struct itimerspec its = {};
	double s = a->cfg.scan_interval_s;

	a->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	its.it_interval.tv_sec = (time_t)s;
	its.it_interval.tv_nsec = (long)((s - (time_t)s) * 1e9);
	its.it_value = its.it_interval;
	if (a->tfd < 0 || timerfd_settime(a->tfd, 0, &its, NULL) < 0) {
		snprintf(err, errlen, "timerfd: %s", strerror(errno));
		return -errno;
	}
	return watch_fd(a, a->tfd, on_scan_timer, 0, err, errlen);
}

/* The signals the agent reads from its signalfd, blocked in every thread: before any thread
 * is started (the inspector's workers, the etcd store's), so that each inherits the mask and
 * a SIGTERM is never delivered to a thread where it would end the process unhandled. */
static void signals_mask(sigset_t *mask)
{
	sigemptyset(mask);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGHUP);
}

static int block_signals(char *err, size_t errlen)
{
	sigset_t mask;

	signals_mask(&mask);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) {
		snprintf(err, errlen, "signals: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

static int open_signals(struct agent *a, char *err, size_t errlen)
{
	sigset_t mask;

	signals_mask(&mask); /* blocked already (block_signals, before any thread) */
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR ||
	    (a->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		snprintf(err, errlen, "signals: %s", strerror(errno));
		return -errno;
	}
	return watch_fd(a, a->sfd, on_signal, 0, err, errlen);
}

static int open_tracker(struct agent *a, int reset_state, char *err, size_t errlen)
{
	const struct ftbpf_config *cfg = &a->cfg;
	struct tracker_opts to = {.pin_dir = cfg->pin_dir,
				  .reset = reset_state,
				  .agent_tgid = getpid(),
				  .on_event = kevents_on_event,
				  .ctx = &a->kv,
				  .programs = cfg->bpf_programs,
				  .no_task_iter = !strcmp(cfg->task_iter, "off"),
				  .ktime_clock = !strcmp(cfg->syscall_clock, "ktime"),
				  .verbose = cfg->verbose >= 3,
				  .timer_term_first = cfg->timer_escalate};

	a->tr = tracker_open(&to, err, errlen);
	if (!a->tr)
		return -EINVAL;
	if (cfg->gpu_probes && !tracker_features(a->tr)->uprobes)
		log_warn("no CUDA/NCCL probes: this kernel has no uprobe attach cookies (5.15+)");
	else if (cfg->gpu_probes && gpuprobe_new(a->tr, cfg->gpu_probe_launch, &a->gp) < 0)
		log_warn("no CUDA/NCCL probes: libelf unusable");
	/* what ranks map and their memory are read by the inspector's thread, never here */
	a->ins = inspector_new(a->gp);
	if (!a->ins)
		log_warn("no inspector thread (%s): no Python stacks, no CUDA/NCCL probes",
			 strerror(errno));
	else if (watch_fd(a, inspector_fd(a->ins), on_inspector, 0, err, errlen) < 0)
		return -EINVAL;
	return watch_fd(a, tracker_epoll_fd(a->tr), on_ring, 0, err, errlen);
}

/* An event's line into the journal; a journal that went away gets it on stderr. */
static void journal_out(void *ctx, int prio, const char *line, const char *json,
			struct json_object *ev)
{
	(void)ctx;
	if (journal_event(prio, line, json, ev) < 0)
		log_msg(prio <= 4 ? LOG_WARN : LOG_INFO, "%s", line);
}

static int open_eventlog(struct agent *a, char *err, size_t errlen)
{
	const struct ftbpf_config *cfg = &a->cfg;
	struct eventlog_opts eo = {.path = cfg->log_file,
				   .max_bytes = cfg->log_max_bytes,
				   .keep = cfg->log_keep,
				   .mem_keep = cfg->events_keep,
				   .group = cfg->log_group};
	char e2[300];

	a->el = eventlog_new(&eo, e2, sizeof(e2));
	if (!a->el) {
		snprintf(err, errlen, "event log: %s", e2);
		return -EINVAL;
	}
	eventlog_load_tail(a->el);
	if (log_stderr_is_journal()) /* a service: structured entries, the JSON in a field */
		eventlog_set_out(a->el, journal_out, NULL);
	return 0;
}

static int open_ctl(struct agent *a, char *err, size_t errlen)
{
	struct ctl_limits lim = {.max_clients = a->cfg.ctl_max_clients,
				 .per_uid = a->cfg.ctl_clients_per_user,
				 .uid_out_bytes = (size_t)a->cfg.ctl_user_buffer,
				 .idle_s = a->cfg.ctl_idle_timeout_s};
	char e2[200];

	a->ctl = ctl_new(a->cfg.socket_path, a->loop, &lim, handlers_dispatch, &a->h, a->el, e2,
			 sizeof(e2));
	if (!a->ctl) {
		snprintf(err, errlen, "control socket %s: %s", a->cfg.socket_path, e2);
		return -EINVAL;
	}
	eventlog_set_sink(a->el, ctl_broadcast, a->ctl);
	a->h.ctl = a->ctl;
	return 0;
}

static int open_mesh(struct agent *a, char *err, size_t errlen)
{
	const struct ftbpf_config *cfg = &a->cfg;
	struct mesh_opts mo = {.bind = cfg->mesh_bind,
			       .peers = cfg->mesh_peers,
			       .peers_file = cfg->mesh_peers_file,
			       .key_file = cfg->mesh_key_file,
			       .on_event = on_mesh_event,
			       .ctx = a,
			       .loop = a->loop};

	swim_config_default(&mo.swim);
	mo.swim.probe_interval_ms = (uint32_t)(cfg->probe_interval_s * 1000);
	mo.swim.probe_timeout_ms = (uint32_t)(cfg->probe_timeout_s * 1000);
	mo.swim.indirect_checks = cfg->indirect_checks;
	mo.swim.suspicion_mult = cfg->suspicion_mult;
	mo.swim.suspicion_max_mult = cfg->suspicion_max_mult;
	a->mesh = mesh_open(&mo, err, errlen);
	a->h.mesh = a->mesh;
	return a->mesh ? 0 : -EINVAL;
}

/* What adoption and the slot server put in a rank: its pidfd, the slot's fd and our mapping
 * (the kernel side's slot itself is unpinned when the process ends). */
static void release_rank(struct rank *k)
{
	if (k->pidfd >= 0)
		close(k->pidfd);
	if (k->slot)
		munmap(k->slot, sizeof(*k->slot));
	if (k->slot_fd >= 0)
		close(k->slot_fd);
}

struct agent *agent_new(const struct ftbpf_config *cfg, int reset_state, char *err, size_t errlen)
{
	struct agent *a = calloc(1, sizeof(*a));

	if (!a) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	a->cfg = *cfg;
	a->tfd = a->sfd = a->lockfd = a->wdfd = -1;
	fd_budget(&a->cfg);
	a->start_ns = clock_mono_ns();
	ranks_init(&a->ranks);
	a->ranks.release = release_rank;
	if (block_signals(err, errlen) < 0 || lock_state_dir(a, err, errlen) < 0)
		goto fail;
	jobstate_open(&a->js, a->cfg.state_dir);
	if (open_eventlog(a, err, errlen) < 0)
		goto fail;
	if (!(a->loop = loop_new())) {
		snprintf(err, errlen, "epoll: %s", strerror(errno));
		goto fail;
	}
	if (open_tracker(a, reset_state, err, errlen) < 0)
		goto fail;
	scan_init(&a->w, a->tr, a->gp, &a->ranks, a->el, &a->cfg);
	a->w.ins = a->ins;
	a->ad = adopter_new(a->tr, &a->ranks, a->el, a->cfg.only_jobs, a->cfg.only_netns);
	a->tb = tables_new(a->tr, a->el);
	if (!a->ad || !a->tb) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	{ /* the environments of processes that exec are read off the loop */
		int fd = adopter_start_reader(a->ad);

		if (fd < 0)
			log_warn("no adoption reader thread (%s): environments read in the loop",
				 strerror(-fd));
		else if (watch_fd(a, fd, on_adopt_ready, 0, err, errlen) < 0)
			goto fail;
	}
	node_name(a);
	adopter_set_node(a->ad, a->node); /* jobs local to this host carry its name */
	adopter_on_run_end(a->ad, on_run_end, a);
	adopter_on_forget(a->ad, forget_rank, a, a->tb);
	{
		struct timersvc_opts to = {
		    .tr = a->tr,
		    .el = a->el,
		    .ranks = &a->ranks,
		    .loop = a->loop,
		    .ac = &a->ac, /* opened below, before the loop runs */
		    .fifo_path = a->cfg.timer_fifo,
		    .fifo_fd = *a->cfg.timer_fifo ? fifohold_inherited(a->cfg.timer_fifo) : -1,
		    .state_dir = a->cfg.state_dir,
		    .escalate = a->cfg.timer_escalate,
		    .max_per_user = a->cfg.max_timers_per_user};

		a->ts = timersvc_new(&to, err, errlen);
		if (!a->ts)
			goto fail;
	}
	a->kv = (struct kevents){a->tr, &a->ranks, a->ad, a->ts, a->el, 0};
	a->rq = rasq_new(a->el);
	if (!a->rq) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	struct view_src vs = {a->tr, &a->w.sp, timersvc_table(a->ts), a->ins, a->rq};
	a->ac = (struct actions){
	    .cfg = &a->cfg, .el = a->el, .js = &a->js, .ranks = &a->ranks, .vs = vs};
	if (actions_open(&a->ac, a->loop, err, errlen) < 0)
		goto fail;
	a->h = (struct handlers){.ranks = &a->ranks,
				 .ad = a->ad,
				 .ts = a->ts,
				 .el = a->el,
				 .vs = vs,
				 .agent_json = agent_json,
				 .agent_ctx = a};
	node_name(a);
	if (nodeid_load(&a->id, cfg, a->node, err, errlen) < 0)
		goto fail;
	if (open_decisions(a, err, errlen) < 0 || open_ctl(a, err, errlen) < 0 ||
	    open_scan_timer(a, err, errlen) < 0 || open_watchdog(a, err, errlen) < 0 ||
	    open_signals(a, err, errlen) < 0 || (*cfg->mesh_bind && open_mesh(a, err, errlen) < 0))
		goto fail;
	{
		struct jobparts_opts jo;

		node_name(a);
		jo = (struct jobparts_opts){&a->ranks, a->mesh, a->el, &a->w.dp, a->node};
		if (a->id.on) { /* parts signed with this node's key, taken signed by theirs */
			jo.keys = &a->id.keys;
			jo.sk = a->id.sk;
		}
		jo.member = decide_part_member; /* with a shared store: the run's members only */
		jo.member_ctx = a->dc;

		a->jp = jobparts_new(&jo);
		a->h.jp = a->jp;
		if (a->jp && a->mesh) { /* stragglers judged over the job's ranks on all hosts */
			a->w.cw.remote = jobparts_cad_remote;
			a->w.cw.firsts = jobparts_firsts;
			a->w.cw.remote_ctx = a->jp;
		}
		if (a->dc && a->mesh) { /* how the mesh names this node, beside its node name */
			char addr[32];

			meshaddr_format(mesh_self(a->mesh), addr, sizeof(addr));
			decide_set_mesh(a->dc, addr);
		}
		if (!a->jp) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
	}
	if (*cfg->metrics_listen) {
		struct metrics_opts mo = {.listen = cfg->metrics_listen,
					  .token_file = cfg->metrics_token_file,
					  .fn = handlers_status,
					  .ctx = &a->h};

		if (!(a->metrics = metrics_open(a->loop, &mo, err, errlen)))
			goto fail;
	}
	return a;
fail:
	agent_free(a);
	return NULL;
}

int agent_run(struct agent *a)
{
	const struct tracker_features *f = tracker_features(a->tr);
	int r = 0;

	eventlog_emit(a->el,
		      view_agent_start(f->tp_btf, f->task_iter, f->oom, f->resumed, &a->cfg));
	adopt_resume(a->ad);
	timersvc_restore(a->ts);
	while (tracker_consume(a->tr, RB_BATCH) == 1) /* events queued while no agent ran */
		;
	adopt_scan_all(a->ad);
	scan(a);
	/* systemd Type=notify: ready once the programs are attached and the socket serves */
	sd_notifyf(0, "READY=1\nSTATUS=watching ranks; control socket %s\nMAINPID=%d",
		   a->cfg.socket_path, (int)getpid());
	/* Enforcement first: the timer service's handler is urgent, and every other source
	 * does a bounded amount of work per turn. */
	while (!a->stop && (r = loop_once(a->loop, -1)) >= 0)
		;
	sd_notify(0, "STOPPING=1");
	jobstate_save(&a->js, &a->ranks);
	eventlog_emit(a->el, view_agent_stop());
	return r < 0 ? r : 0;
}

void agent_free(struct agent *a)
{
	if (!a)
		return;
	inspector_free(a->ins); /* its last answers go to the control socket and the log */
	rasq_free(a->rq);	/* after the inspector's answers, before the log */
	metrics_close(a->metrics);
	ctl_free(a->ctl);
	jobparts_free(a->jp);
	nodeid_free(&a->id);
	mesh_close(a->mesh);
	decider_free(a->dc);
	store_close(a->st); /* its threads end here */
	timersvc_free(a->ts);
	actions_close(&a->ac); /* after the timer service, which queues into it */
	adopter_free(a->ad);
	tables_free(a->tb);
	scan_fini(&a->w);
	gpuprobe_free(a->gp); /* its links before the programs they attach */
	tracker_close(a->tr);
	eventlog_free(a->el);
	ranks_fini(&a->ranks);
	jobstate_close(&a->js);
	loop_free(a->loop);
	if (a->tfd >= 0)
		close(a->tfd);
	if (a->wdfd >= 0)
		close(a->wdfd);
	if (a->sfd >= 0)
		close(a->sfd);
	if (a->lockfd >= 0)
		close(a->lockfd);
	free(a);
}
