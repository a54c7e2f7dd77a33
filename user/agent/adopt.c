/* Adoption: see adopt.h. */
#include "agent/adopt.h"

#include <errno.h>
#include <fnmatch.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/adoptq.h"
#include "agent/eventlog.h"
#include "agent/tables.h"
#include "agent/views.h"
#include "ftbpf/slot.h"
#include "lib/ident.h"
#include "lib/jsonx.h"
#include "lib/ranks.h"
#include "lib/shares.h"
#include "lib/starttime.h"
#include "os/clock.h"
#include "os/log.h"
#include "lib/ratelimit.h"
#include "os/pidfd.h"
#include "os/procfs.h"
#include "watch/tracker.h"

#define ENVIRON_MAX  (256 * 1024)
#define RETRY_MAX    256
#define HEIR_WAIT_NS (1000 * 1000 * 1000ull) /* a wrapper's child is the rank after 1 s */

struct adopter {
	struct tracker *tr;
	struct ranks *ranks;
	struct eventlog *el;
	char only_jobs[256];
	uint64_t netns;		      /* adopt only processes in this network namespace, 0: any */
	char *envbuf;		      /* owned scratch, ENVIRON_MAX */
	int retry[RETRY_MAX], nretry; /* pids whose adoption failed for want of a resource */
	int rescan_all;		      /* walk /proc again (lost or folded exec events) */
	uint64_t lost_seen;	      /* folded + lost exec events at the last walk */
	uint64_t rescan_ns;	      /* time of the last walk */
	uint64_t folded_seen, recheck_ns; /* a rank's events folded: its execs may be among them */
	uint64_t adopted, errors, rescans, handovers;
	uint64_t refused_elevated;   /* set-user-ID/-group-ID processes not adopted */
	uint64_t left;		     /* ranks that exec'd as another user, or with privileges */
	uint64_t refused_user_full;  /* a user's share of the rank table was full */
	uint64_t forgotten_at_share; /* ended ranks forgotten for a new one of their user's */
	uint64_t refused_table_full; /* the kernel's process table (procs) was full */
	struct ratelimit rl_malformed, rl_user_full, rl_table_full; /* their warnings */
	char node[64]; /* this host's name in host-local job ids (ident_scope) */
	void (*run_end)(void *ctx, struct job *j); /* see adopter_on_run_end */
	void *run_end_ctx;
	void (*forget)(void *ctx, struct rank *k); /* see adopter_on_forget */
	void *forget_ctx;
	struct tables *tables;
	struct adoptq *q; /* the environments read off the loop; NULL: read here */
};

struct adopter *adopter_new(struct tracker *tr, struct ranks *ranks, struct eventlog *el,
			    const char *only_jobs, int only_netns)
{
	struct adopter *ad = calloc(1, sizeof(*ad));

	if (!ad || !(ad->envbuf = malloc(ENVIRON_MAX))) {
		free(ad);
		return NULL;
	}
	ad->tr = tr;
	ad->ranks = ranks;
	ad->rl_malformed.interval_ns = ad->rl_user_full.interval_ns =
	    ad->rl_table_full.interval_ns = 60 * CLOCK_NS_PER_S;
	ad->el = el;
	snprintf(ad->only_jobs, sizeof(ad->only_jobs), "%s", only_jobs ? only_jobs : "");
	if (only_netns && procfs_netns(0, &ad->netns) < 0)
		ad->netns = 0;
	return ad;
}

void adopter_free(struct adopter *ad)
{
	if (!ad)
		return;
	adoptq_free(ad->q);
	free(ad->envbuf);
	free(ad);
}

void adopter_set_node(struct adopter *ad, const char *node)
{
	snprintf(ad->node, sizeof(ad->node), "%s", node ? node : "");
}

void adopter_on_run_end(struct adopter *ad, void (*fn)(void *ctx, struct job *j), void *ctx)
{
	ad->run_end = fn;
	ad->run_end_ctx = ctx;
}

void adopter_on_forget(struct adopter *ad, void (*fn)(void *ctx, struct rank *k), void *ctx,
		       struct tables *tb)
{
	ad->forget = fn;
	ad->forget_ctx = ctx;
	ad->tables = tb;
}

/*
 * May uid have one more rank? Its share counts ended ranks too (one-second ranks by the
 * thousand must not fill the table): at the share, the oldest ended one whose exit was judged
 * is forgotten; when every one it holds lives (or ended unjudged), it may not. Root's ranks are
 * over no share.
 */
static int user_room(struct adopter *ad, uid_t uid, int pid)
{
	const struct share_info *si = share_info(SHARE_RANKS);
	int held = uid ? ranks_user_count(ad->ranks, uid) : 0;
	struct rank *old;

	if (share_admit(SHARE_RANKS, uid, held, 0))
		return 1;
	old = ad->forget ? ranks_user_oldest_ended(ad->ranks, uid) : NULL;
	if (old) {
		ad->forgotten_at_share++;
		ad->forget(ad->forget_ctx, old);
		return 1;
	}
	if (ad->refused_user_full++ % 64 == 0)
		log_warn("uid %u holds %u ranks, none of them ended: pid %d not adopted",
			 (unsigned)uid, si->share, pid);
	if (ad->tables)
		tables_refused(ad->tables, uid, SHARE_RANKS, held, clock_mono_ns());
	return 0;
}

void adopt_trim_ended(struct adopter *ad, uid_t uid)
{
	int n = uid && ad->forget ? ranks_user_ended(ad->ranks, uid) : 0;
	struct rank *old;

	while (n-- > (int)share_info(SHARE_ENDED)->share &&
	       (old = ranks_user_oldest_ended(ad->ranks, uid))) {
		ad->forgotten_at_share++;
		ad->forget(ad->forget_ctx, old);
	}
}

int adopt_job_wanted(const struct adopter *ad, const char *job)
{
	return !*ad->only_jobs || fnmatch(ad->only_jobs, job, 0) == 0;
}

/* pid (named by pidfd, which this takes over) has the identity ident_from_environ gave (r):
 * adopted when it names a rank of a wanted job. */
static int adopt_ident(struct adopter *ad, int pid, int pidfd, int r, struct rank_ident *id,
		       const char *how)
{
	if (ranks_find_live(ad->ranks, pid)) {
		close(pidfd);
		return 0;
	}
	if (r == 0)
		ident_scope(id, ad->node);
	if (r == -EINVAL) {
		ad->errors++;
		log_warn("pid %d has malformed rank variables in its environment; not adopted",
			 pid);
	}
	if (r == 0 && !adopt_job_wanted(ad, id->job))
		r = -ENOENT;
	if (r < 0) {
		close(pidfd);
		return r;
	}
	return adopt_as(ad, pid, pidfd, id, how, 0);
}

/* The pidfd is opened before /proc is read and checked after: what was read belongs to the
 * process the pidfd names, not to a later one at the same pid. */
int adopt_pid(struct adopter *ad, int pid, const char *how)
{
	struct rank_ident id;
	ssize_t n;
	int pidfd;

	if (pid == getpid() || ranks_find_live(ad->ranks, pid))
		return 0;
	if (ad->netns) {
		uint64_t ns;

		if (procfs_netns(pid, &ns) < 0 || ns != ad->netns)
			return -ENOENT; /* another agent's */
	}
	pidfd = pidfd_open_pid(pid);
	if (pidfd < 0)
		return pidfd;
	n = procfs_environ(pid, ad->envbuf, ENVIRON_MAX);
	if (n <= 0 || pidfd_signal(pidfd, 0) < 0) {
		close(pidfd);
		return n < 0 ? (int)n : -ENOENT;
	}
	return adopt_ident(ad, pid, pidfd, ident_from_environ(ad->envbuf, (size_t)n, &id), &id,
			   how);
}

int adopter_start_reader(struct adopter *ad)
{
	if (!ad->q && !(ad->q = adoptq_new(ad->netns)))
		return -errno;
	return adoptq_fd(ad->q);
}

void adopt_exec_event(struct adopter *ad, int pid, uid_t uid)
{
	if (!ad->q) {
		adopt_pid(ad, pid, "exec");
		return;
	}
	if (pid == getpid())
		return;
	if (adoptq_exec(ad->q, pid, uid) < 0)
		ad->rescan_all = 1; /* too much of its user's waits: the next walk finds it */
}

static void retry_later(struct adopter *ad, int pid);

static void take_one(void *ctx, int pid, int pidfd, int err, const struct rank_ident *idp,
		     int walked)
{
	struct adopter *ad = ctx;
	struct rank_ident id = *idp;
	int r;

	if (pid == getpid()) { /* a walk reads ours too: never a rank */
		close(pidfd);
		return;
	}
	r = adopt_ident(ad, pid, pidfd, err, &id, walked ? "scan" : "exec");

	if (r == -EMFILE || r == -ENFILE || r == -ENOMEM || r == -EAGAIN)
		retry_later(ad, pid);
}

int adopt_take_ready(struct adopter *ad, int max)
{
	return ad->q ? adoptq_take(ad->q, max, take_one, ad) : 0;
}

/*
 * A tracked process ran a new program: its owner is checked again. A rank now running as
 * another real user, or with privileges its user lacks, leaves its job (it is no longer that
 * user's process to watch, act on or inspect); a rank as the new user's may be adopted anew.
 * A rank's child that changed its real user leaves the rank's tree.
 */
/* Rank k leaves its job as a clean end (nothing failed, nothing is to be decided): untracked,
 * its kernel records gone. The event is the caller's. */
static struct json_object *rank_leaves(struct adopter *ad, struct rank *k, const char *why,
				       const struct proc_creds *cr)
{
	ad->left++;
	(void)tracker_set_tracked(ad->tr, (uint32_t)k->pid, 0);
	(void)tracker_proc_delete(ad->tr, (uint32_t)k->pid);
	(void)tracker_cad_delete(ad->tr, (uint32_t)k->pid, k->uid); /* none: fine */
	k->s.exited = 1;
	k->s.exit_code = 0;
	k->exit_reported = 1;
	k->fail_seen = 1;
	return view_rank_left(k, why, cr->ruid, cr->euid);
}

/*
 * Child tgid of root's wrapper rank w exec'd as another user (runuser -u USER -- cmd, su -c):
 * the wrapper runs the rank as that user. w leaves root's job (its wait is no verdict's
 * business, and it is no process of that user's tree: it is root's), and the child becomes a
 * rank of its own user's job when its environment names the same rank.
 */
static void handover_to_user(struct adopter *ad, struct rank *w, int tgid,
			     const struct proc_creds *cr)
{
	struct json_object *o;
	struct rank *k;

	o = rank_leaves(ad, w, "it runs its command as another user", cr);
	jint(o, "heir_pid", tgid);
	eventlog_emit(ad->el, o);
	if (adopt_pid(ad, tgid, "handover") < 0 || !(k = ranks_find_live(ad->ranks, tgid)))
		return;
	k->wrapper_pid = w->pid;
	k->wrapper_start_ns = w->start_ns;
	memcpy(k->wrapper_comm, w->comm, sizeof(k->wrapper_comm));
	k->launcher_pid = w->launcher_pid;
	k->launcher_start_ns = w->launcher_start_ns;
	ad->handovers++;
}

/*
 * A tracked process ran a new program: its owner is checked again. A rank now running as
 * another real user, or with privileges its user lacks, leaves its job (it is no longer that
 * user's process to watch, act on or inspect); a rank as the new user's may be adopted anew.
 * A rank's child that changed its real user leaves the rank's tree; the child of root's wrapper
 * that switches users (su, runuser) takes the rank over as its user's (handover_to_user).
 */
int adopt_exec_recheck(struct adopter *ad, struct rank *k, int tgid)
{
	struct proc_creds cr;
	struct ftbpf_proc p;

	if (procfs_creds(tgid, &cr) < 0)
		return 0; /* gone: its exit event follows */
	if (!k) {
		struct rank *w;

		if (tracker_proc_get(ad->tr, (uint32_t)tgid, &p) < 0 ||
		    (cr.ruid == p.uid && (!procfs_creds_elevated(&cr) || cr.ruid == 0)))
			return 0;
		(void)tracker_set_tracked(ad->tr, (uint32_t)tgid, 0);
		(void)tracker_proc_delete(ad->tr, (uint32_t)tgid);
		ad->left++;
		w = ranks_find_live(ad->ranks, (int)p.owner);
		if (w && w->uid == 0 && cr.ruid != 0 && p.ppid == (uint32_t)w->pid &&
		    ident_switches_user(w->comm) && !procfs_creds_elevated(&cr))
			handover_to_user(ad, w, tgid, &cr);
		return 1;
	}
	if (cr.ruid == k->uid && (!procfs_creds_elevated(&cr) || cr.ruid == 0))
		return 0;
	eventlog_emit(ad->el,
		      rank_leaves(ad, k,
				  cr.ruid != k->uid ? "it runs as another user now"
						    : "it runs a set-user-ID, set-group-ID or "
						      "capability-holding program",
				  &cr));
	adopt_pid(ad, tgid, "exec");
	return 1;
}

/* ---- what a rank was doing before we watched it ---- */
struct seed_ctx {
	struct adopter *ad;
	const struct rank *k;
	uint64_t now;
};

/* The rank's container and pod, from /proc/PID/cgroup (nothing when it is in neither). */
static void rank_container(struct rank *k)
{
	char path[64], buf[4096];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", k->pid);
	n = procfs_read(path, buf, sizeof(buf) - 1);
	if (n <= 0 || container_parse_cgroup(buf, (size_t)n, &k->ctr) < 0)
		memset(&k->ctr, 0, sizeof(k->ctr));
}

static int seed_one(void *ctx, int tid)
{
	struct seed_ctx *c = ctx;
	int nr;

	if (procfs_syscall(c->k->pid, tid, &nr) == 0 && nr >= 0)
		tracker_thread_seed(c->ad->tr, (uint32_t)tid, (uint32_t)c->k->pid, c->k->uid, nr,
				    c->now);
	return 0;
}

/*
 * A rank adopted after it had blocked (the agent started after the job hung, or restarted
 * without its pinned state) makes no syscall for the kernel to see: what each of its threads
 * is blocked in comes from /proc now, and counts from the adoption on. Its tracking bit is set
 * already, so a thread that moves on meanwhile gets a record from the kernel, which wins.
 */
static void seed_threads(struct adopter *ad, const struct rank *k)
{
	struct seed_ctx c = {ad, k, clock_mono_ns()};

	procfs_foreach_pid(k->pid, seed_one, &c);
}

/* ---- a rank's children made before its adoption reached the kernel ---- */
struct desc_ctx {
	struct adopter *ad;
	const struct rank *k;
	int queue[256]; /* processes whose children are still to be looked at */
	int nq;
};

/* The procs-map record of a process of rank k's tree. */
static void proc_record(struct ftbpf_proc *p, int pid, const struct proc_stat *st,
			const struct rank *k, uint32_t flags)
{
	memset(p, 0, sizeof(*p));
	p->tgid = (uint32_t)pid;
	p->owner = (uint32_t)k->pid;
	p->ppid = (uint32_t)st->ppid;
	p->flags = flags;
	p->rank = k->id.rank;
	p->local_rank = k->id.local_rank;
	p->world_size = k->id.world_size;
	p->uid = k->uid;
	p->source = k->id.source;
	p->start_ns = st->start_ns;
	memcpy(p->comm, st->comm, sizeof(p->comm));
	memcpy(p->job, k->id.job, sizeof(p->job));
}

/* Track one descendant the kernel did not see born (it is tracked from its fork on once its
 * parent is: its bit is set before its own children are looked at). */
static int take_child(void *ctx, int pid)
{
	struct desc_ctx *c = ctx;
	struct tracker *tr = c->ad->tr;
	struct ftbpf_proc p;
	struct proc_stat st;

	if (tracker_is_tracked(tr, (uint32_t)pid) || procfs_stat(pid, -1, &st) < 0)
		return 0;
	proc_record(&p, pid, &st, c->k, FTBPF_PROC_CHILD);
	p.adopted_ns = clock_mono_ns();
	if (tracker_proc_put(tr, (uint32_t)pid, &p) < 0 ||
	    tracker_set_tracked(tr, (uint32_t)pid, 1) < 0)
		return 0;
	eventlog_emit(c->ad->el, view_child(pid, st.ppid, c->k, "adoption"));
	if (c->nq < (int)(sizeof(c->queue) / sizeof(c->queue[0])))
		c->queue[c->nq++] = pid;
	return 0;
}

/* Without /proc/PID/task/TID/children: every process whose parents lead to the rank. */
static int take_if_descendant(void *ctx, int pid)
{
	struct desc_ctx *c = ctx;
	struct proc_stat st;
	int p = pid;

	for (int depth = 0; p > 1 && depth < 64; depth++) {
		if (procfs_stat(p, -1, &st) < 0)
			return 0;
		if (st.ppid == c->k->pid)
			return take_child(ctx, pid);
		p = st.ppid;
	}
	return 0;
}

/*
 * A rank that forks right after exec may fork before its adoption reaches the kernel: those
 * children (and theirs) are taken in from /proc now. The rank is tracked already, so anything
 * it forks from here on is the kernel's to see.
 */
static void adopt_descendants(struct adopter *ad, const struct rank *k)
{
	struct desc_ctx *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return;
	c->ad = ad;
	c->k = k;
	r = procfs_foreach_child(k->pid, take_child, c);
	if (r == -EOPNOTSUPP) {
		procfs_foreach_pid(0, take_if_descendant, c);
	} else {
		for (int i = 0; i < c->nq; i++) /* breadth first; the queue grows as we go */
			procfs_foreach_child(c->queue[i], take_child, c);
	}
	free(c);
}

/* ---- wrappers: the rank is the process that does the work ---- */
/* The wrapper a process was started by, when it carries the wrapper's rank: its parent is a
 * live rank running a wrapper program (sh, timeout: ident_is_wrapper), or a wrapper that
 * handed that rank over before and now starts it again (sh run.sh running two programs).
 * NULL when the process is not a wrapped rank. */
struct wrapped {
	int pid;	   /* the wrapper */
	uint64_t start_ns; /* its start time */
	char comm[16];	   /* its program */
	int launcher_pid;  /* what launched the wrapper */
	uint64_t launcher_start_ns;
	struct rank *rank; /* the wrapper's own rank record (to forget), NULL when it was
			       forgotten at an earlier hand-over */
	int owner_pid;	   /* the rank whose processes become the new rank's */
};

struct child_count {
	int n, last;
};

static int count_child(void *ctx, int pid)
{
	struct child_count *c = ctx;

	c->n++;
	c->last = pid;
	return 0;
}

/* A wrapper runs one command: a process with several children at once (a script that starts
 * helpers in the background and waits) keeps its rank. */
static int only_child(int ppid)
{
	struct child_count c = {0, 0};

	return procfs_foreach_child(ppid, count_child, &c) == 0 && c.n == 1 ? c.last : 0;
}

/* A rank that runs a wrapper and already has its one child (it forked before we adopted it,
 * or before it took the rank over from its own wrapper: sh -> timeout -> python3): that
 * child is its heir, at the next scans (adopt_heirs). */
static void heir_from_children(struct rank *k, uint64_t now)
{
	struct proc_stat st;
	int c;

	if (k->heir_pid || !ident_is_wrapper(k->comm) || !(c = only_child(k->pid)) ||
	    procfs_stat(c, -1, &st) < 0)
		return;
	k->heir_pid = c;
	k->heir_start_ns = st.start_ns;
	k->heir_ns = now;
}

static int wrapped_by(struct adopter *ad, int pid, const struct proc_stat *st, uid_t uid,
		      const struct rank_ident *id, struct wrapped *w)
{
	struct rank *p = ranks_find_live(ad->ranks, st->ppid);
	struct proc_stat pst;

	memset(w, 0, sizeof(*w));
	if (p) {
		if (p->slot || p->uid != uid || !ident_is_wrapper(p->comm) ||
		    !ident_same_rank(&p->id, id) || !only_child(p->pid))
			return 0;
		/* a young child may be the first of several (seen between a script's forks): the
		 * heir, for adopt_heirs' 1 s rule; an older one (a late agent) takes over now */
		if (clock_mono_ns() < st->start_ns + HEIR_WAIT_NS) {
			if (!p->heir_pid) {
				p->heir_pid = pid;
				p->heir_start_ns = st->start_ns;
				p->heir_ns = clock_mono_ns();
			}
			return 0;
		}
		w->pid = p->pid;
		w->start_ns = p->start_ns;
		memcpy(w->comm, p->comm, sizeof(w->comm));
		w->launcher_pid = p->launcher_pid;
		w->launcher_start_ns = p->launcher_start_ns;
		w->rank = p;
		w->owner_pid = p->pid;
		return 1;
	}
	for (int i = 0; i < ad->ranks->n; i++) {
		const struct rank *k = ad->ranks->v[i];

		if (k->wrapper_pid != st->ppid || k->uid != uid || !ident_same_rank(&k->id, id))
			continue;
		/* still that wrapper (not a later process at its pid), and its rank ended (a live
		 * one keeps the rank: this is a helper it runs beside it) */
		if (k->job == NULL || !k->s.exited || procfs_stat(st->ppid, -1, &pst) < 0 ||
		    !starttime_same(pst.start_ns, k->wrapper_start_ns) || !only_child(st->ppid))
			return 0;
		w->pid = k->wrapper_pid;
		w->start_ns = k->wrapper_start_ns;
		memcpy(w->comm, k->wrapper_comm, sizeof(w->comm));
		w->launcher_pid = k->launcher_pid;
		w->launcher_start_ns = k->launcher_start_ns;
		w->owner_pid = k->pid;
		return 1;
	}
	return 0;
}

struct reown_ctx {
	struct tracker *tr;
	uint32_t from, to;
};

static int reown_one(void *ctx, uint32_t tgid, const struct ftbpf_proc *p)
{
	struct reown_ctx *c = ctx;
	struct ftbpf_proc q;

	if (p->owner != c->from || tgid == c->to || (p->flags & FTBPF_PROC_EXITED))
		return 0;
	q = *p;
	q.owner = c->to;
	q.flags = (q.flags & ~FTBPF_PROC_RANK) | FTBPF_PROC_CHILD;
	(void)tracker_proc_put(c->tr, tgid, &q); /* gone meanwhile: no matter */
	return 0;
}

/*
 * Rank k took the rank over from its wrapper w. The wrapper stays tracked, as a process of k's
 * tree (its later children are k's too), and its record goes: its wait4 and its exit after k
 * are no verdict's business. Every process the wrapper's rank owned is k's from now on.
 */
static void handover_finish(struct adopter *ad, struct rank *k, const struct wrapped *w)
{
	struct reown_ctx c = {ad->tr, (uint32_t)w->owner_pid, (uint32_t)k->pid};
	struct json_object *o;

	k->wrapper_pid = w->pid;
	k->wrapper_start_ns = w->start_ns;
	memcpy(k->wrapper_comm, w->comm, sizeof(k->wrapper_comm));
	k->launcher_pid = w->launcher_pid;
	k->launcher_start_ns = w->launcher_start_ns;
	tracker_foreach_proc(ad->tr, reown_one, &c); /* the wrapper's own entry too */
	if (w->rank)
		ranks_remove(ad->ranks, w->rank);
	ad->handovers++;
	o = view_adopt(k, "handover", 0);
	jint(o, "wrapper_pid", w->pid);
	jstr(o, "wrapper_comm", w->comm);
	eventlog_emit(ad->el, o);
}

/* The process that launched pid (its parent): a run of a job is told apart by it. */
static void launcher_of(struct rank *k, int ppid)
{
	struct proc_stat st;

	k->launcher_pid = ppid;
	if (ppid > 0 && procfs_stat(ppid, -1, &st) == 0)
		k->launcher_start_ns = st.start_ns;
}

/* A rank's exited incarnations are forgotten at a new run: their procs entries too. */
static void drop_old(void *ctx, struct rank *k)
{
	struct adopter *ad = ctx;
	struct ftbpf_proc p;

	if (tracker_proc_get(ad->tr, (uint32_t)k->pid, &p) == 0 &&
	    starttime_same(p.start_ns, k->start_ns) && (p.flags & FTBPF_PROC_EXITED))
		(void)tracker_proc_delete(ad->tr, (uint32_t)k->pid); /* gone: fine */
}

static void retry_later(struct adopter *ad, int pid);

/*
 * The kernel side could not take rank k: said once a minute at most, with what is full and
 * where it is counted. A full process table is retried at the next scans (an hour after a
 * job ends its ranks' entries go, and the rank is adopted then).
 */
static void track_failed(struct adopter *ad, const struct rank *k, int r)
{
	uint64_t held;

	if (r != -E2BIG && r != -ENOSPC) {
		log_warn("cannot track pid %d (rank %d of job %s): %s", k->pid, k->id.rank,
			 k->id.job, strerror(-r));
		return;
	}
	ad->refused_table_full++;
	retry_later(ad, k->pid);
	if (ratelimit_pass(&ad->rl_table_full, clock_mono_ns(), &held))
		log_warn("pid %d (rank %d of job %s) is not watched: the kernel's process table "
			 "(BPF map procs, %d entries: live ranks, their children, ended ranks kept "
			 "an hour after their job) is full; counted in adopt_refused_table_full; "
			 "retried at each scan (%llu more refused since the last such line)",
			 k->pid, k->id.rank, k->id.job, FTBPF_MAX_PROCS, (unsigned long long)held);
}

int adopt_as(struct adopter *ad, int pid, int pidfd, const struct rank_ident *idp, const char *how,
	     int registered)
{
	struct wrapped w = {0};
	struct job *j;
	struct proc_stat st;
	struct proc_creds cr;
	struct ftbpf_proc p;
	struct rank *k;
	uid_t uid;
	int r;

	if (procfs_stat(pid, -1, &st) < 0 || procfs_creds(pid, &cr) < 0 ||
	    pidfd_signal(pidfd, 0) < 0) {
		close(pidfd);
		return -ESRCH;
	}
	/* The owner is the real uid. A set-user-ID (or -group-ID) program runs with privileges
	 * its user does not have: it is nobody's rank (its user could steer it into another
	 * job, and must not have it inspected on their behalf). */
	uid = cr.ruid;
	if (procfs_creds_elevated(&cr) && cr.ruid != 0) {
		if (ad->refused_elevated++ % 64 == 0) /* a user may start many: said now and then */
			log_info(
			    "pid %d (%.15s) of uid %u runs with uid %u / gid %u or capabilities: a "
			    "set-user-ID, set-group-ID or capability-holding program is not "
			    "adopted",
			    pid, st.comm, (unsigned)cr.ruid, (unsigned)cr.euid, (unsigned)cr.egid);
		close(pidfd);
		return -EPERM;
	}
	if (!user_room(ad, uid, pid)) {
		close(pidfd);
		return -EUSERS;
	}
	/* A wrapper's child that carries its rank is the rank (see wrapped_by). */
	if (!registered && wrapped_by(ad, pid, &st, uid, idp, &w)) {
		/* taken over below */
	} else if (!registered && tracker_is_tracked(ad->tr, st.ppid)) {
		/* A process whose parent is already tracked is that rank's child, not a rank. */
		struct ftbpf_proc pp;

		if (tracker_proc_get(ad->tr, st.ppid, &pp) == 0 &&
		    !(pp.flags & FTBPF_PROC_EXITED)) {
			close(pidfd);
			return 0;
		}
	}
	/* Launchers that exec the training script through a shell keep the parent's env. */
	if (!registered && !w.pid && ranks_find_live(ad->ranks, st.ppid)) {
		close(pidfd);
		return 0;
	}
	/* all of the job's ranks here ended: a relaunch, a new run with its own verdict */
	j = ranks_job_find(ad->ranks, uid, idp->job);
	if (j && j->nmembers && !job_has_live(j)) {
		/* a launcher restarts a failed rank at once, before any scan saw the failure: the
		 * run that ended is judged and decided on now, or its end would be lost with it */
		if (ad->run_end)
			ad->run_end(ad->run_end_ctx, j);
		ranks_job_new_run(ad->ranks, j, clock_mono_ns(), drop_old, ad);
	}
	k = ranks_add(ad->ranks, pid, st.start_ns, uid, idp->job);
	if (!k) {
		close(pidfd);
		return -ENOMEM;
	}
	k->pidfd = pidfd;
	k->id = *idp;
	ranks_job_drop_replaced(ad->ranks, k, drop_old, ad); /* its ended incarnations */
	rank_container(k);
	memcpy(k->comm, st.comm, sizeof(k->comm));
	k->adopted_ns = clock_mono_ns();
	proc_record(&p, pid, &st, k, FTBPF_PROC_RANK);
	p.owner = (uint32_t)pid;
	p.adopted_ns = k->adopted_ns;
	r = tracker_proc_put(ad->tr, pid, &p);
	if (r == 0)
		r = tracker_set_tracked(ad->tr, pid, 1);
	if (r < 0) {
		/* at its share of the kernel's table (counted there, said by tables.c) */
		if (r != -EDQUOT)
			track_failed(ad, k, r);
		ranks_remove(ad->ranks, k);
		return r;
	}
	ad->adopted++;
	seed_threads(ad, k);
	if (w.pid) {
		handover_finish(ad, k, &w);
	} else {
		launcher_of(k, st.ppid);
		eventlog_emit(ad->el, view_adopt(k, how, 0));
	}
	adopt_descendants(ad, k);
	heir_from_children(k, k->adopted_ns);
	return 0;
}

int adopt_exec_child(struct adopter *ad, int pid, int ppid)
{
	struct rank *p = ranks_find_live(ad->ranks, ppid);
	struct proc_stat st;

	if (p && ident_is_wrapper(p->comm) && !p->heir_pid) {
		/* taken over at a scan at least HEIR_WAIT_NS on, if it is then the wrapper's only
		 * child (a script may be about to start a second one beside it) */
		if (procfs_stat(pid, -1, &st) == 0) {
			p->heir_pid = pid;
			p->heir_start_ns = st.start_ns;
			p->heir_ns = clock_mono_ns();
		}
		return 0;
	}
	for (int i = 0; !p && i < ad->ranks->n; i++)
		if (ad->ranks->v[i]->wrapper_pid == ppid)
			return adopt_pid(ad, pid, "exec");
	return 0;
}

/* The children wrappers started (adopt_exec_child) take their ranks over once they are the
 * wrapper's only child for HEIR_WAIT_NS. */
static void adopt_heirs(struct adopter *ad, uint64_t now)
{
	for (int i = 0; i < ad->ranks->n; i++) {
		struct rank *w = ad->ranks->v[i];
		struct proc_stat st;
		int pid = w->heir_pid;

		if (!pid || now - w->heir_ns < HEIR_WAIT_NS)
			continue;
		if (w->s.exited || procfs_stat(pid, -1, &st) < 0 ||
		    !starttime_same(st.start_ns, w->heir_start_ns) || st.ppid != w->pid) {
			w->heir_pid = 0; /* gone, or no longer its child */
			continue;
		}
		if (only_child(w->pid) != pid)
			continue; /* maybe later: a helper beside it may end */
		w->heir_pid = 0;
		adopt_pid(ad, pid, "exec"); /* may forget w (the hand-over): index i moves */
		i = -1;
	}
}

/* An adoption that failed for want of a resource is tried again at the next scans. */
static void retry_later(struct adopter *ad, int pid)
{
	for (int i = 0; i < ad->nretry; i++)
		if (ad->retry[i] == pid)
			return;
	if (ad->nretry < RETRY_MAX)
		ad->retry[ad->nretry++] = pid;
	else
		ad->rescan_all = 1;
}

static int scan_one(void *ctx, int pid)
{
	struct adopter *ad = ctx;
	int r = adopt_pid(ad, pid, "scan");

	if (r == -EMFILE || r == -ENFILE || r == -ENOMEM || r == -EAGAIN)
		retry_later(ad, pid); /* a full process table retries itself (track_failed) */
	return 0;
}

void adopt_scan_all(struct adopter *ad)
{
	procfs_foreach_pid(0, scan_one, ad);
}

struct children {
	uint32_t *v;
	size_t n, cap;
};

static int collect_child(void *ctx, uint32_t tgid, const struct ftbpf_proc *p)
{
	struct children *c = ctx;

	if (p->flags & (FTBPF_PROC_RANK | FTBPF_PROC_EXITED))
		return 0;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 256;
		uint32_t *v = realloc(c->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n++] = tgid;
	return 0;
}

/* Exec events were folded or lost: a tracked process may have run a program as another user,
 * or a set-user-ID one, unseen. Every live rank and tracked child is checked again. */
static void recheck_all(struct adopter *ad)
{
	struct children c = {0};

	for (int i = 0; i < ad->ranks->n; i++) { /* the table may grow meanwhile: by index */
		struct rank *k = ad->ranks->v[i];

		if (!k->s.exited)
			adopt_exec_recheck(ad, k, k->pid);
	}
	/* collected first: a child that leaves is deleted from the map being walked */
	tracker_foreach_proc(ad->tr, collect_child, &c);
	for (size_t i = 0; i < c.n; i++)
		adopt_exec_recheck(ad, NULL, (int)c.v[i]);
	free(c.v);
}

/*
 * Ranks whose exec event never reached us: folded by the kernel (a user's exec budget), lost
 * (ring buffer full), or whose adoption failed for want of a resource.
 */
void adopt_catch_up(struct adopter *ad, uint64_t now)
{
	uint64_t lost = tracker_stat(ad->tr, FTBPF_STAT_EXEC_FOLDED) +
			tracker_stat(ad->tr, FTBPF_STAT_RB_DROPS);
	int n = ad->nretry;
	int again[RETRY_MAX];

	adopt_heirs(ad, now);
	memcpy(again, ad->retry, (size_t)n * sizeof(again[0]));
	ad->nretry = 0;
	for (int i = 0; i < n; i++)
		scan_one(ad, again[i]);
	if (lost != ad->lost_seen)
		ad->rescan_all = 1;
	if (ad->rescan_all && now - ad->rescan_ns >= 2 * CLOCK_NS_PER_S) {
		ad->rescan_all = 0;
		ad->lost_seen = lost;
		ad->rescan_ns = now;
		ad->rescans++;
		recheck_all(ad);
		ad->recheck_ns = now;
		if (ad->q)
			adoptq_walk(ad->q); /* the environments are read off the loop */
		else
			adopt_scan_all(ad);
	}
	/* a rank's events past its budget are folded in the kernel, its execs among them: its
	 * owner, and its children's, are checked again (at most every 2 s) */
	lost = tracker_stat(ad->tr, FTBPF_STAT_FOLDED);
	if (lost != ad->folded_seen && now - ad->recheck_ns >= 2 * CLOCK_NS_PER_S) {
		ad->folded_seen = lost;
		ad->recheck_ns = now;
		recheck_all(ad);
	}
}

/* Rebuild the table from the pinned procs map after a restart. */
static int resume_one(void *ctx, uint32_t tgid, const struct ftbpf_proc *p)
{
	struct adopter *ad = ctx;
	struct proc_stat st;
	struct rank *k;

	if (!(p->flags & FTBPF_PROC_RANK)) {
		/* a child that ended while no agent ran: nobody needs its entry any more */
		if (p->flags & FTBPF_PROC_EXITED)
			(void)tracker_proc_delete(ad->tr, tgid); /* gone already: fine */
		return 0;
	}
	k = ranks_add(ad->ranks, (int)tgid, p->start_ns, p->uid, p->job);
	if (!k)
		return -ENOMEM;
	k->id.rank = p->rank;
	k->id.local_rank = p->local_rank;
	k->id.world_size = p->world_size;
	k->id.source = p->source;
	memcpy(k->comm, p->comm, sizeof(k->comm));
	k->adopted_ns = p->adopted_ns;
	rank_container(k);
	if (!(p->flags & FTBPF_PROC_EXITED)) {
		int fd = pidfd_open_pid((int)tgid);

		/* the same process? start times agree within a clock tick */
		if (fd >= 0 && procfs_stat((int)tgid, -1, &st) == 0 &&
		    starttime_same(st.start_ns, p->start_ns) && pidfd_signal(fd, 0) == 0) {
			k->pidfd = fd;
			if (tracker_slot_open(ad->tr, tgid, p->start_ns, &k->slot_fd, &k->slot) ==
			    0) {
				/* registered with an earlier agent: in the generation it gave it */
				rank_slot_generation(k);
				k->dec_written = 1;
			}
		} else if (fd >= 0) {
			close(fd);
		}
	} else {
		k->exit_reported = 1; /* the earlier agent (or the log replay) reported it */
	}
	eventlog_emit(ad->el, view_adopt(k, "resume", !!(p->flags & FTBPF_PROC_EXITED)));
	return 0;
}

/* A pinned slot is kept only for a live rank that reopened it. */
static int slot_in_use(void *ctx, uint32_t tgid)
{
	const struct rank *k = ranks_find_live(ctx, (int)tgid);

	return k && k->slot;
}

void adopt_resume(struct adopter *ad)
{
	if (tracker_features(ad->tr)->resumed)
		tracker_foreach_proc(ad->tr, resume_one, ad);
	tracker_slots_prune(ad->tr, slot_in_use, ad->ranks);
}

void adopter_counters(const struct adopter *ad, struct json_object *c)
{
	jint(c, "adopted", (int64_t)ad->adopted);
	jint(c, "adopt_errors", (int64_t)ad->errors);
	jint(c, "proc_rescans", (int64_t)ad->rescans);
	jint(c, "wrapper_handovers", (int64_t)ad->handovers);
	jint(c, "adopt_refused_elevated", (int64_t)ad->refused_elevated);
	jint(c, "adopt_refused_user_full", (int64_t)ad->refused_user_full);
	jint(c, "adopt_refused_table_full", (int64_t)ad->refused_table_full);
	jint(c, "ranks_forgotten_at_share", (int64_t)ad->forgotten_at_share);
	if (ad->q) {
		struct adoptq_counters qc;

		adoptq_counters(ad->q, &qc);
		jint(c, "environ_reads", (int64_t)qc.reads);
		jint(c, "environ_reads_refused", (int64_t)qc.refused);
	}
	jint(c, "ranks_left", (int64_t)ad->left);
}
