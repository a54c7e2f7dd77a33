/* Adoption: see adopt.h. */
#include "agent/adopt.h"

#include <errno.h>
#include <fnmatch.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/eventlog.h"
#include "agent/views.h"
#include "ftbpf/slot.h"
#include "lib/ident.h"
#include "lib/jsonx.h"
#include "lib/ranks.h"
#include "os/clock.h"
#include "os/log.h"
#include "os/pidfd.h"
#include "os/procfs.h"
#include "watch/tracker.h"

#define ENVIRON_MAX (256 * 1024)
#define RETRY_MAX   256

struct adopter {
	struct tracker *tr;
	struct ranks *ranks;
	struct eventlog *el;
	char only_jobs[256];
	uint64_t netns;	      /* adopt only processes in this network namespace, 0: any */
	char *envbuf;	      /* owned scratch, ENVIRON_MAX */
	int retry[RETRY_MAX]; /* pids whose adoption failed for want of a resource */
	int nretry;
	int rescan_all;			  /* walk /proc again (lost or folded exec events) */
	uint64_t lost_seen;		  /* folded + lost exec events at the last walk */
	uint64_t rescan_ns;		  /* time of the last walk */
	uint64_t folded_seen, recheck_ns; /* a rank's events folded: its execs may be among them */
	uint64_t adopted, errors, rescans;
	uint64_t refused_elevated;  /* set-user-ID/-group-ID processes not adopted */
	uint64_t left;		    /* ranks that exec'd as another user, or with privileges */
	uint64_t refused_user_full; /* a user's share of the rank table was full */
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
	free(ad->envbuf);
	free(ad);
}

int adopt_job_wanted(const struct adopter *ad, const char *job)
{
	return !*ad->only_jobs || fnmatch(ad->only_jobs, job, 0) == 0;
}

/* The pidfd is opened before /proc is read and checked after: what was read belongs to the
 * process the pidfd names, not to a later one at the same pid. */
int adopt_pid(struct adopter *ad, int pid, const char *how)
{
	struct rank_ident id;
	ssize_t n;
	int r, pidfd;

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
	r = ident_from_environ(ad->envbuf, (size_t)n, &id);
	if (r == -EINVAL) {
		ad->errors++;
		log_warn("pid %d has malformed rank variables in its environment; not adopted",
			 pid);
	}
	if (r == 0 && !adopt_job_wanted(ad, id.job))
		r = -ENOENT;
	if (r < 0) {
		close(pidfd);
		return r;
	}
	return adopt_as(ad, pid, pidfd, &id, how, 0);
}

/*
 * A tracked process ran a new program: its owner is checked again. A rank now running as
 * another real user, or with privileges its user lacks, leaves its job (it is no longer that
 * user's process to watch, act on or inspect); a rank as the new user's may be adopted anew.
 * A rank's child that changed its real user leaves the rank's tree.
 */
int adopt_exec_recheck(struct adopter *ad, struct rank *k, int tgid)
{
	struct proc_creds cr;
	struct ftbpf_proc p;

	if (procfs_creds(tgid, &cr) < 0)
		return 0; /* gone: its exit event follows */
	if (!k) {
		if (tracker_proc_get(ad->tr, (uint32_t)tgid, &p) == 0 &&
		    (cr.ruid != p.uid || (procfs_creds_elevated(&cr) && cr.ruid != 0))) {
			(void)tracker_set_tracked(ad->tr, (uint32_t)tgid, 0);
			(void)tracker_proc_delete(ad->tr, (uint32_t)tgid);
			ad->left++;
			return 1;
		}
		return 0;
	}
	if (cr.ruid == k->uid && (!procfs_creds_elevated(&cr) || cr.ruid == 0))
		return 0;
	ad->left++;
	(void)tracker_set_tracked(ad->tr, (uint32_t)tgid, 0);
	(void)tracker_proc_delete(ad->tr, (uint32_t)tgid);
	/* gone from the job as a clean end: nothing failed, nothing is to be decided */
	k->s.exited = 1;
	k->s.exit_code = 0;
	k->exit_reported = 1;
	k->fail_seen = 1;
	{
		struct json_object *o = view_rank_event("rank_left", k);

		jstr(o, "why",
		     cr.ruid != k->uid ? "it runs as another user now"
				       : "it runs a set-user-ID or set-group-ID program");
		jint(o, "now_uid", cr.ruid);
		jint(o, "now_euid", cr.euid);
		eventlog_emit(ad->el, o);
	}
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
		tracker_thread_seed(c->ad->tr, (uint32_t)tid, (uint32_t)c->k->pid, nr, c->now);
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

int adopt_as(struct adopter *ad, int pid, int pidfd, const struct rank_ident *idp, const char *how,
	     int registered)
{
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
			    "pid %d (%.15s) of uid %u runs with uid %u / gid %u: a set-user-ID or "
			    "set-group-ID program is not adopted",
			    pid, st.comm, (unsigned)cr.ruid, (unsigned)cr.euid, (unsigned)cr.egid);
		close(pidfd);
		return -EPERM;
	}
	if (uid != 0 && ranks_user_live(ad->ranks, uid) >= RANKS_PER_USER_MAX) {
		if (ad->refused_user_full++ % 64 == 0)
			log_warn("uid %u has %d live ranks already: pid %d not adopted",
				 (unsigned)uid, RANKS_PER_USER_MAX, pid);
		close(pidfd);
		return -EUSERS;
	}
	/* A process whose parent is already tracked is that rank's child, not a new rank. */
	if (!registered && tracker_is_tracked(ad->tr, st.ppid)) {
		struct ftbpf_proc pp;

		if (tracker_proc_get(ad->tr, st.ppid, &pp) == 0 &&
		    !(pp.flags & FTBPF_PROC_EXITED)) {
			close(pidfd);
			return 0;
		}
	}
	/* Launchers that exec the training script through a shell keep the parent's env. */
	if (!registered && ranks_find_live(ad->ranks, st.ppid)) {
		close(pidfd);
		return 0;
	}
	k = ranks_add(ad->ranks, pid, st.start_ns, uid, idp->job);
	if (!k) {
		close(pidfd);
		return -ENOMEM;
	}
	k->pidfd = pidfd;
	k->id = *idp;
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
		log_warn("cannot track pid %d: %s", pid, strerror(-r));
		ranks_remove(ad->ranks, k);
		return r;
	}
	ad->adopted++;
	seed_threads(ad, k);
	eventlog_emit(ad->el, view_adopt(k, how, 0));
	adopt_descendants(ad, k);
	return 0;
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
		retry_later(ad, pid);
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
		    procfs_same_start(st.start_ns, p->start_ns) && pidfd_signal(fd, 0) == 0) {
			k->pidfd = fd;
			if (tracker_slot_open(ad->tr, tgid, p->start_ns, &k->slot_fd, &k->slot) ==
			    0) {
				/* it registered with an earlier agent: its job's decisions go on */
				k->generation = k->slot->dec.generation;
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
	jint(c, "adopt_refused_elevated", (int64_t)ad->refused_elevated);
	jint(c, "adopt_refused_user_full", (int64_t)ad->refused_user_full);
	jint(c, "ranks_left", (int64_t)ad->left);
}
