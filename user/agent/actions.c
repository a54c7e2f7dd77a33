/* What the agent does about a job's verdict: see actions.h. */
#include "agent/actions.h"

#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "agent/eventlog.h"
#include "agent/jobstate.h"
#include "agent/pystacks.h"
#include "agent/timersvc.h"
#include "lib/config.h"
#include "lib/jsonx.h"
#include "lib/ranks.h"
#include "os/pidfd.h"
#include "os/procfs.h"
#include "watch/sample.h"

static void hang_report(struct actions *ac, struct job *j, uint64_t now)
{
	sampler_refresh(ac->vs.sp, 1); /* with kernel stacks, for the report */
	/* emitted once the Python stacks are read (off the loop, within their time limit) */
	pystacks_hang(ac->vs.ins, ac->el, j, view_hang(&ac->vs, j, now, view_secs(j->res.soft_ns)));
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
	snprintf(j->kill_why, sizeof(j->kill_why), "%s", j->res.why);
	j->nkill_culprits = 0;
	for (int i = 0; i < j->nmembers && j->nkill_culprits < DET_MAX_CULPRITS; i++)
		if (j->members[i]->d.culprit)
			j->kill_culprits[j->nkill_culprits++] = j->members[i]->id.rank;
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
		timersvc_kill_after_grace(ac->ts, k->pid, k->pidfd, k->uid, 1);
	}
}

void actions_job(struct actions *ac, struct job *j, uint64_t now)
{
	int sig = ac->cfg->soft_signal;

	if (!j->watched_ns)
		j->watched_ns = now;
	if (j->res.failed && !j->failed_reported && !j->hard_killed && !j->xv.hold)
		failed_report(ac, j);
	if (!j->res.live && j->nmembers && !j->end_reported) {
		/* the run ended: how, once (preempted, stopped, killed, failed, finished...) */
		j->end_reported = 1;
		eventlog_emit(ac->el, view_job_end(j));
		ac->js->dirty = 1;
	}
	if (!j->res.hung) {
		/* our action is ending the job: a SIGTERM interrupts a stuck syscall, which is no
		 * progress of the job's; nothing recovered, nothing to act on again */
		if (j->hard_killed)
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
