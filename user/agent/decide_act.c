/* Decisions, the outputs: writes to the store, signals, the launcher, the health check, the
 * ranks' slots. See decide_int.h. */
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/actions.h"
#include "agent/decide_int.h"
#include "agent/eventlog.h"
#include "agent/store.h"
#include "agent/views.h"
#include "lib/config.h"
#include "lib/ident.h"
#include "lib/jsonx.h"
#include "lib/ranks.h"
#include "os/clock.h"
#include "os/pidfd.h"
#include "os/procfs.h"

/* ---- a new generation here: end the old ranks, leave if left out ---- */
static void signal_rank(struct decider *d, struct rank *k, int sig, const char *why)
{
	int r;

	k->killed_by_agent = 1;
	r = pidfd_signal(k->pidfd, sig);
	eventlog_emit(d->el, view_action(k, why, sig, r < 0 ? strerror(-r) : "sent"));
	if (r == 0 && sig == SIGTERM)
		actions_kill_after_grace(d->ac, k->pid, k->pidfd, k->uid, 1);
}

/*
 * The parent of rank k as a launcher to stop: the pidfd is opened first and everything read
 * about the process is checked against it afterwards, so a pid reused meanwhile is never
 * signalled. It must be older than the rank, still its parent, run as the job's owner (its
 * real uid, with no privileges beyond it) and be a launcher: not a shell by its name, nor by the
 * program it runs (a `#!` batch script is named after the script). An open pidfd, or -1.
 */
static int launcher_of(const struct rank *k, uid_t owner, int *ret_ppid)
{
	struct proc_stat st, pst, again;
	struct proc_creds cr;
	char exe[PATH_MAX];
	int fd;

	if (k->s.exited || k->pidfd < 0 || procfs_stat(k->pid, -1, &st) < 0 ||
	    pidfd_signal(k->pidfd, 0) < 0 || st.ppid <= 1 || st.ppid == getpid())
		return -1;
	fd = pidfd_open_pid(st.ppid);
	if (fd < 0)
		return -1;
	if (procfs_stat(st.ppid, -1, &pst) < 0 || procfs_creds(st.ppid, &cr) < 0 ||
	    procfs_exe(st.ppid, exe, sizeof(exe)) < 0 || pidfd_signal(fd, 0) < 0 ||
	    procfs_stat(k->pid, -1, &again) < 0 || again.ppid != st.ppid ||
	    pst.start_ns > k->start_ns || cr.ruid != owner ||
	    (procfs_creds_elevated(&cr) && cr.ruid != 0) || !ident_may_be_launcher(pst.comm) ||
	    ident_is_shell_exe(exe)) {
		close(fd);
		return -1;
	}
	*ret_ppid = st.ppid;
	return fd;
}

/* Stop the process that launched this node's ranks (torchrun, mpirun): an elastic rendezvous
 * re-forms without this node. */
static void stop_launcher(struct decider *d, struct djob *dj, struct job *j, const char *why)
{
	for (int i = 0; j && i < j->nmembers && !dj->mem.launcher_stopped; i++) {
		int ppid = 0, fd = launcher_of(j->members[i], j->uid, &ppid);

		if (fd < 0)
			continue;
		if (pidfd_signal(fd, SIGTERM) == 0) {
			struct json_object *o = view_action_pid(ppid, j->uid, why, SIGTERM, "sent");

			jstr(o, "job", dj->id);
			eventlog_emit(d->el, o);
			dj->mem.launcher_stopped = 1;
			dj->mem.stopped_launcher = (uint32_t)ppid; /* its SIGTERMs are ours */
			actions_kill_after_grace(d->ac, ppid, fd, j->uid, 0);
		}
		close(fd);
	}
}

static void health_check_start(struct decider *d, struct djob *dj)
{
	pid_t pid;

	if (!*d->cfg->health_check || dj->health_pid > 0)
		return;
	pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", d->cfg->health_check, (char *)NULL);
		_exit(127);
	}
	if (pid > 0) {
		dj->health_pid = pid;
		dj->health_ms = clock_mono_ns() / 1000000;
	}
}

void dc_health_check_poll(struct decider *d, struct djob *dj, struct job *j)
{
	int status = 0, failed = -1;
	pid_t r;

	if (dj->health_pid <= 0)
		return;
	r = waitpid(dj->health_pid, &status, WNOHANG);
	if (r == dj->health_pid) {
		failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	} else if (clock_mono_ns() / 1000000 - dj->health_ms >
		   (uint64_t)(d->cfg->health_check_timeout_s * 1000)) {
		kill(dj->health_pid, SIGKILL);
		waitpid(dj->health_pid, &status, 0);
		failed = 1;
	}
	if (failed < 0)
		return;
	dj->health_pid = -1;
	dc_log_health(d, dj, failed);
	if (failed) {
		dj->mem.health_failed = 1;
		d->health_failures++;
		stop_launcher(d, dj, j, "health_check_failed");
	}
}

/* ---- the slots ---- */
/* What the process runs in (a restarted agent reads it), whether to hold, whether a generation
 * is being decided: after the decision, so that a rank that sees settling end reads it. */
static void slot_flags(struct decider *d, struct djob *dj, struct rank *k)
{
	/* the token first: a process that reads own_generation G reads G's token or a later one */
	__atomic_store_n(&k->slot->fence_token, dp_fence_token(dj->run, k->generation),
			 __ATOMIC_RELEASE);
	__atomic_store_n(&k->slot->own_generation, k->generation, __ATOMIC_RELEASE);
	__atomic_store_n(&k->slot->hold, (uint32_t)dj->mem.held, __ATOMIC_RELEASE);
	__atomic_store_n(&k->slot->settling,
			 (uint32_t)dp_settling(&d->pc, &dj->rec, &dj->mem, d->rk, d->nrk),
			 __ATOMIC_RELEASE);
}

void dc_write_slot(struct decider *d, struct djob *dj, int i)
{
	struct rank *k = d->rk_of[i];
	struct ftbpf_slot_decision x, *s;
	uint64_t seq, v = 1469598103934665603ull;

	if (!k->slot)
		return;
	dp_slot(&d->pc, &dj->rec, &dj->mem, &d->rk[i], &x);
	/* write only what changed (FNV-1a over the decision) */
	for (size_t b = 0; b < sizeof(x); b++)
		v = (v ^ ((const unsigned char *)&x)[b]) * 1099511628211ull;
	v |= 1;
	if (k->dec_written == v) {
		slot_flags(d, dj, k);
		return;
	}
	k->dec_written = v;
	s = &k->slot->dec;
	seq = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
	__atomic_store_n(&s->seq, seq | 1, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	x.seq = seq | 1;
	memcpy((void *)s, &x, sizeof(x));
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&s->seq, (seq | 1) + 1, __ATOMIC_SEQ_CST);
	slot_flags(d, dj, k);
	if (x.ckpt_state == FTBPF_CK_PENDING && k->dec_ack_id != x.ckpt_id) {
		/* the request is in its slot; the step it is at now (read after: a rank that wrote
		 * a later step saw it) + 1 is a boundary by which it has seen it */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		k->dec_ack_step = (int64_t)__atomic_load_n(&k->slot->step, __ATOMIC_SEQ_CST) + 1;
		k->dec_ack_id = x.ckpt_id;
		d->again = 1; /* report the acknowledgement now */
	}
}

void dc_write_hold(struct decider *d, struct djob *dj, int i)
{
	struct rank *k = d->rk_of[i];

	if (k->slot)
		__atomic_store_n(&k->slot->hold, (uint32_t)dj->mem.held, __ATOMIC_RELEASE);
}

/* ---- carrying out one look ---- */
void dc_carry_out(struct decider *d, struct djob *dj, struct job *j)
{
	struct dp_out *o = &d->out;
	char key[DEC_KEY_LEN * 3];

	for (int i = 0; i < o->nwrites; i++) {
		const struct dp_write *w = &o->writes[i];

		snprintf(key, sizeof(key), "%s%s", dj->prefix, w->rel);
		if (w->claim) {
			d->claims++;
			store_claim(d->st, key, w->value);
			d->again |= !store_shared(d->st); /* settled at once: read it now */
		} else {
			store_put(d->st, key, w->value, w->leased);
		}
	}
	for (int i = 0; i < o->nacts; i++) {
		const struct dp_act *a = &o->acts[i];

		switch (a->kind) {
		case DP_ACT_SIGNAL:
			if (a->rank >= 0 && a->rank < d->nrk && d->rk_of[a->rank]->pidfd >= 0)
				signal_rank(d, d->rk_of[a->rank], a->sig, a->why);
			break;
		case DP_ACT_STOP_LAUNCHER:
			stop_launcher(d, dj, j, a->why);
			break;
		case DP_ACT_HEALTH_CHECK:
			health_check_start(d, dj);
			break;
		case DP_ACT_LOG_DECISION:
			dc_log_decision(d, dj, a->why);
			break;
		case DP_ACT_FENCED:
			d->fences++;
			dc_log_fenced(d, dj);
			break;
		case DP_ACT_UNAVAILABLE:
			d->unavailable++;
			break;
		case DP_ACT_HOLD:
			d->holds += a->sig;
			dc_log_hold(d, dj, a->sig, a->why);
			break;
		case DP_ACT_PREEMPTION_LOST:
			d->preemptions_lost++;
			dc_log_preemption(d, dj, 0, "preemption_not_checkpointed", a->why);
			break;
		case DP_ACT_CKPT_FAILED:
			d->ckpts_failed++;
			dc_log_preemption(d, dj, 0, "checkpoint_failed", a->why);
			break;
		}
	}
	o->nacts = o->nwrites = 0;
}
