/* What the agent does about a job's verdict: see actions.h. */
#include "agent/actions.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "agent/eventlog.h"
#include "agent/jobstate.h"
#include "agent/inspect.h"
#include "agent/rasquery.h"
#include "lib/config.h"
#include "lib/jsonx.h"
#include "lib/ranks.h"
#include "os/clock.h"
#include "os/log.h"
#include "os/loop.h"
#include "os/pidfd.h"
#include "os/procfs.h"
#include "watch/sample.h"

#define MAX_PENDING  16384 /* SIGKILLs waiting for their grace */
#define ROOT_PENDING 1024  /* ... of which others may not take the last ones: root's */

/* A SIGKILL due after the grace: hard-timeout terminations, escalated timer expiries, ends of
 * old ranks and launchers. */
struct pending_kill {
	int pid;
	int pidfd; /* owned */
	int rank;  /* 1: a rank terminated by a job action, 0: a timer's process (or a launcher) */
	uid_t uid; /* its owner (who may see the event) */
	uint64_t at_ns;
};

static void hang_report(struct actions *ac, struct job *j, uint64_t now)
{
	sampler_refresh(ac->vs.sp, 1); /* with kernel stacks, for the report */
	/* emitted once the Python stacks are read (off the loop, within their time limit) */
	inspect_hang(ac->vs.ins, ac->el, j, view_hang(&ac->vs, j, now, view_secs(j->res.soft_ns)));
	/* NCCL's own view of the job's communicators: independent evidence, its own event */
	rasq_hang(ac->vs.rq, ac->vs.ins, j);
	ac->hangs++;
}

static void act_signal(struct actions *ac, struct rank *k, int sig, const char *why)
{
	int r;

	if ((sig == SIGTERM || sig == SIGKILL) && !k->killed_by_agent) {
		k->killed_by_agent = 1; /* its death is ours, not the job's failure */
		ac->js->dirty = 1;
	}
	r = pidfd_signal(k->pidfd, sig); /* never kill(2) by a pid we could not pin */
	eventlog_emit(ac->el, view_action(k, why, sig, r < 0 ? strerror(-r) : "sent"));
	ac->sent++;
}

/* Signals whose default action is to ignore them: harmless to a rank without a handler. */
static int ignored_by_default(int sig)
{
	return sig == SIGCHLD || sig == SIGURG || sig == SIGWINCH || sig == SIGCONT;
}

/*
 * The soft timeout only reports: its signal (a faulthandler dump, a stack print) goes to a rank
 * only if the rank catches it, or if its default action is harmless. Otherwise sending it would
 * end the rank (SIGUSR1's default is to terminate), and the report-only stage would kill the job.
 */
static void soft_signal(struct actions *ac, struct rank *k, int sig)
{
	int caught = procfs_sig_caught(k->pid, sig);
	char why[128];

	if (caught == 1 || ignored_by_default(sig)) {
		act_signal(ac, k, sig, "soft_timeout");
		return;
	}
	snprintf(why, sizeof(why),
		 "not sent: the rank does not catch SIG%s, whose default action would end it",
		 config_signal_name(sig) ? config_signal_name(sig) : "?");
	eventlog_emit(
	    ac->el,
	    view_action(k, "soft_timeout", sig,
			caught < 0 ? "not sent: its signal handlers could not be read" : why));
}

static void failed_report(struct actions *ac, struct job *j)
{
	j->failed_reported = 1;
	eventlog_emit(ac->el, view_job_failed(j));
	ac->js->dirty = 1;
}

/* The job is being ended by our action: what it was, kept (the ranks' verdict goes with them). */
static void killed_by_action(struct job *j)
{
	if (j->hard_killed)
		return;
	j->hard_killed = 1;
	job_keep_hang(j, &(struct jobend){.by = JOBEND_AGENT, .pid = -1, .rank = -1});
}

/* The hard timeout passed: the configured action, once per stall. */
static void hard_action(struct actions *ac, struct job *j)
{
	const struct ftbpf_config *cfg = ac->cfg;

	j->action_done = 1;
	ac->js->dirty = 1;
	eventlog_emit(ac->el, view_hard_timeout(j, config_action_name(cfg->action)));
	if (cfg->action == ACTION_REPORT)
		return;
	killed_by_action(j);
	for (int i = 0; i < j->nmembers; i++) {
		struct rank *k = j->members[i];

		if (k->s.exited)
			continue;
		if (cfg->action == ACTION_TERMINATE_CULPRIT && !k->d.culprit)
			continue;
		if (cfg->action == ACTION_KILL) {
			act_signal(ac, k, SIGKILL, "hard_timeout");
			continue;
		}
		/* A stopped rank cannot act on SIGTERM: continue it first (as NVRx does). */
		if (k->d.state == RS_STOPPED)
			(void)pidfd_signal(k->pidfd, SIGCONT); /* SIGTERM's result is reported */
		act_signal(ac, k, SIGTERM, "hard_timeout");
		actions_kill_after_grace(ac, k->pid, k->pidfd, k->uid, 1);
	}
}

void actions_job(struct actions *ac, struct job *j, uint64_t now)
{
	int sig = ac->cfg->soft_signal;

	if (!j->watched_ns)
		j->watched_ns = now;
	if (j->res.failed && !j->failed_reported && !j->hang_end.by && !j->xv.hold)
		failed_report(ac, j);
	if (!j->res.live && j->nmembers && !j->end_reported) {
		/* the run ended: how, once (preempted, stopped, hung, failed, finished...) */
		j->end_reported = 1;
		eventlog_emit(ac->el, view_job_end(j));
		ac->js->dirty = 1;
	}
	if (!j->res.hung) {
		/* the hung job is being ended (our action, its launcher, an operator): a SIGTERM
		 * interrupts a stuck syscall, which is no progress of the job's; nothing
		 * recovered, nothing to act on again */
		if (j->hang_end.by)
			return;
		/* progress resumed; a job whose ranks are all gone did not recover, it ended; one
		 * that failed did not either */
		if (j->reported && j->res.live > 0 && !j->failed_reported)
			eventlog_emit(ac->el, view_recovered(j));
		if (j->reported || j->action_done) {
			j->reported = j->soft_signalled = j->action_done = 0;
			ac->js->dirty = 1;
		}
		return;
	}
	if (!j->reported && j->xv.hold)
		return; /* parts of other hosts are missing for a moment yet: one report, right */
	if (!j->reported) {
		j->reported = 1;
		j->hung_seen_ns = now;
		hang_report(ac, j, now);
		ac->js->dirty = 1;
	}
	if (sig && !j->soft_signalled) {
		j->soft_signalled = 1;
		for (int i = 0; i < j->nmembers; i++) {
			struct rank *k = j->members[i];

			if (!k->s.exited && (ac->cfg->soft_signal_all || k->d.culprit))
				soft_signal(ac, k, sig);
		}
	}
	if (!j->res.hard || j->action_done)
		return;
	/* An agent that (re)started finds the hard timeout passed while it was away: it watches
	 * the job for a grace first (what it finds may have changed, and nothing acts at once). */
	if (now - j->watched_ns < (uint64_t)(ac->cfg->grace_s * 1e9))
		return;
	hard_action(ac, j);
}

/* ---- SIGKILL after the grace ---- */
/* Arm the timerfd at the earliest pending kill (disarmed when none). */
static void rearm(struct actions *ac)
{
	uint64_t d = 0;
	int r;

	for (int i = 0; i < ac->npk; i++)
		if (!d || ac->pk[i].at_ns < d)
			d = ac->pk[i].at_ns;
	/* cannot fail with a valid timerfd and an absolute time; the scan checks anyway */
	if ((r = loop_timer_at(ac->kfd, d)) < 0)
		log_warn("kill queue: timerfd: %s (SIGKILLs wait for the scan)", strerror(-r));
}

void actions_kill_after_grace(struct actions *ac, int pid, int pidfd, uid_t uid, int rank)
{
	int fd;

	if (!ac->pk)
		return; /* not open */
	if (ac->npk == MAX_PENDING || (uid != 0 && ac->npk >= MAX_PENDING - ROOT_PENDING)) {
		uint64_t held;

		if (ratelimit_pass(&ac->rl_full, clock_mono_ns(), &held))
			log_warn(
			    "pid %d: no SIGKILL will follow its SIGTERM after the grace: the "
			    "agent's kill queue is full (%d pending, %d kept for root's); %llu "
			    "more since the last such line",
			    pid, ac->npk, ROOT_PENDING, (unsigned long long)held);
		return;
	}
	fd = pidfd >= 0 ? fcntl(pidfd, F_DUPFD_CLOEXEC, 0) : -1;
	if (fd < 0)
		return;
	ac->pk[ac->npk] = (struct pending_kill){
	    pid, fd, rank, uid, clock_mono_ns() + (uint64_t)(ac->cfg->grace_s * 1e9)};
	ac->npk++;
	rearm(ac);
}

void actions_kills_due(struct actions *ac)
{
	uint64_t now = clock_mono_ns();

	for (int i = 0; i < ac->npk;) {
		struct pending_kill *p = &ac->pk[i];
		struct json_object *o;
		struct rank *k;

		if (p->at_ns > now) {
			i++;
			continue;
		}
		/* through our copy of its pidfd: alive means it is still that process */
		if (pidfd_signal(p->pidfd, SIGKILL) == 0) {
			const char *why = p->rank ? "grace_expired" : "timer_grace_expired";

			k = ranks_find_live(ac->ranks, p->pid);
			o = k ? view_action(k, why, SIGKILL, "sent")
			      : view_action_pid(p->pid, p->uid, why, SIGKILL, "sent");
			jint(o, "uid", p->uid);
			eventlog_emit(ac->el, o);
			ac->kills++;
		}
		close(p->pidfd);
		*p = ac->pk[--ac->npk];
	}
	if (ac->pk)
		rearm(ac);
}

static void on_kill_timer(void *ctx, uint32_t arg, uint32_t events)
{
	struct actions *ac = ctx;
	uint64_t exp;

	(void)arg;
	(void)events;
	if (read(ac->kfd, &exp, sizeof(exp)) > 0)
		actions_kills_due(ac);
}

int actions_open(struct actions *ac, struct loop *loop, char *err, size_t errlen)
{
	int h, r;

	ac->npk = 0;
	ac->rl_full.interval_ns = 60 * CLOCK_NS_PER_S;
	ac->kfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (ac->kfd < 0) {
		r = -errno;
		snprintf(err, errlen, "timerfd: %s", strerror(-r));
		return r;
	}
	ac->pk = calloc(MAX_PENDING, sizeof(*ac->pk));
	if (!ac->pk) {
		snprintf(err, errlen, "out of memory");
		close(ac->kfd);
		ac->kfd = -1;
		return -ENOMEM;
	}
	/* urgent, as the timer service's: enforcement before any other work of its loop turn */
	h = loop_handler(loop, on_kill_timer, ac, 1);
	r = h < 0 ? h : loop_add(loop, ac->kfd, EPOLLIN, h, 0);
	if (r < 0) {
		snprintf(err, errlen, "event loop: %s", strerror(-r));
		actions_close(ac);
		return r;
	}
	return 0;
}

void actions_close(struct actions *ac)
{
	if (ac->pk) {
		for (int i = 0; i < ac->npk; i++)
			close(ac->pk[i].pidfd);
		free(ac->pk);
		ac->pk = NULL;
		ac->npk = 0;
		close(ac->kfd);
		ac->kfd = -1;
	}
}
