/* Decisions carried out on this node: signals, the launcher, the health check, the ranks' slots,
 * fencing. See decide_int.h. */
#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/decide_int.h"
#include "agent/eventlog.h"
#include "agent/store.h"
#include "agent/timersvc.h"
#include "agent/views.h"
#include "ftbpf/slot.h"
#include "lib/config.h"
#include "lib/decisions.h"
#include "lib/jsonx.h"
#include "lib/ranks.h"
#include "os/clock.h"
#include "os/log.h"
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
		timersvc_kill_after_grace(d->ts, k->pid, k->pidfd, k->uid, 1);
}

/*
 * May the parent of a rank be stopped as its launcher? Not when it is a shell, a terminal
 * multiplexer, a login or privilege tool, a wrapper like timeout(1), or a service manager: a
 * rank started by hand or from a script has no launcher to stop (its user's shell is not one).
 */
static int is_launcher(const struct proc_stat *parent)
{
	static const char *const not_launchers[] = {
	    "sh",
	    "bash",
	    "dash",
	    "zsh",
	    "fish",
	    "ksh",
	    "tcsh",
	    "csh",
	    "sudo",
	    "su",
	    "sshd",
	    "login",
	    "tmux",
	    "tmux: server",
	    "screen",
	    "timeout",
	    "systemd",
	    "init",
	    "containerd-shim",
	    "nohup",
	    "setsid",
	    "runuser",
	    "setpriv",
	    "doas",
	    "env",
	    "nice",
	    "ionice",
	    "taskset",
	    "numactl",
	    "chrt",
	    "stdbuf",
	    "script",
	    "strace",
	    "gdb",
	};

	for (size_t i = 0; i < sizeof(not_launchers) / sizeof(not_launchers[0]); i++)
		if (!strcmp(parent->comm, not_launchers[i]))
			return 0;
	return 1;
}

/* Stop the process that launched this node's ranks (torchrun, mpirun): an elastic rendezvous
 * re-forms without this node. */
/*
 * The parent of rank k as a launcher to stop: the pidfd is opened first and everything read
 * about the process is checked against it afterwards, so a pid reused meanwhile is never
 * signalled. It must be older than the rank, still its parent, run as the job's owner (its
 * real uid, with no privileges beyond it) and be a launcher. An open pidfd, or -1.
 */
static int launcher_of(const struct rank *k, uid_t owner, int *ret_ppid)
{
	struct proc_stat st, pst, again;
	struct proc_creds cr;
	int fd;

	if (k->s.exited || k->pidfd < 0 || procfs_stat(k->pid, -1, &st) < 0 ||
	    pidfd_signal(k->pidfd, 0) < 0 || st.ppid <= 1 || st.ppid == getpid())
		return -1;
	fd = pidfd_open_pid(st.ppid);
	if (fd < 0)
		return -1;
	if (procfs_stat(st.ppid, -1, &pst) < 0 || procfs_creds(st.ppid, &cr) < 0 ||
	    pidfd_signal(fd, 0) < 0 || procfs_stat(k->pid, -1, &again) < 0 ||
	    again.ppid != st.ppid || pst.start_ns > k->start_ns || cr.ruid != owner ||
	    (procfs_creds_elevated(&cr) && cr.ruid != 0) || !is_launcher(&pst)) {
		close(fd);
		return -1;
	}
	*ret_ppid = st.ppid;
	return fd;
}

static void stop_launcher(struct decider *d, struct djob *dj, struct job *j, const char *why)
{
	for (int i = 0; j && i < j->nmembers && !dj->launcher_stopped; i++) {
		int ppid = 0, fd = launcher_of(j->members[i], j->uid, &ppid);

		if (fd < 0)
			continue;
		if (pidfd_signal(fd, SIGTERM) == 0) {
			struct json_object *o = view_action_pid(ppid, j->uid, why, SIGTERM, "sent");

			jstr(o, "job", dj->id);
			eventlog_emit(d->el, o);
			dj->launcher_stopped = 1;
			timersvc_kill_after_grace(d->ts, ppid, fd, j->uid, 0);
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
		dj->health_ms = dc_now_ms();
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
	} else if (dc_now_ms() - dj->health_ms >
		   (uint64_t)(d->cfg->health_check_timeout_s * 1000)) {
		kill(dj->health_pid, SIGKILL);
		waitpid(dj->health_pid, &status, 0);
		failed = 1;
	}
	if (failed < 0)
		return;
	dj->health_pid = -1;
	{
		struct json_object *o = view_event(failed ? "health_check_failed" : "health_check");

		jstr(o, "job", dj->id);
		jint(o, "uid", dj->uid);
		jstr(o, "node", d->node);
		jint(o, "generation", (int64_t)dj->gen);
		eventlog_emit(d->el, o);
	}
	if (failed) {
		dj->health_failed = 1;
		d->health_failures++;
		stop_launcher(d, dj, j, "health_check_failed");
	}
}

void dc_apply_generation(struct decider *d, struct djob *dj, struct job *j)
{
	int left_out = dc_excluded(dj, d->node), older = 0;

	if (dj->applied_gen >= dj->gen)
		return;
	dj->applied_gen = dj->gen;
	dj->final_claimed = 0;
	dj->req_ms = dj->done_ms = 0;
	dj->retargets = 0;
	dj->launcher_stopped = 0;
	for (int i = 0; j && i < j->nmembers; i++) {
		struct rank *k = j->members[i];

		if (k->s.exited || k->generation >= dj->gen || k->pidfd < 0)
			continue;
		if (!dj->g.stop && dc_started_since(k, dj->g.at_ms)) {
			k->generation =
			    dj->gen; /* restarted after the fault: of the new generation */
			continue;
		}
		signal_rank(d, k, SIGTERM, dj->g.stop ? "stop" : "restart");
		older = 1;
	}
	/* left out, or the end: stop the launcher of the ranks that were in the job, if ended
	 * here now (a node that comes back later, with ranks of the new generation, rejoins; an
	 * agent restarted after the decision has nothing to stop) */
	if (older && (left_out || dj->g.stop))
		stop_launcher(d, dj, j, left_out ? "left_out" : "stop");
	else if (!dj->g.stop)
		health_check_start(d, dj);
}

/* ---- the slots ---- */
/* What rank k is told to do: go on (FTBPF_ACT_NONE), exit for a restart, or stop. */
uint32_t dc_told_to_exit(const struct decider *d, const struct djob *dj, const struct rank *k)
{
	if (dj->g.stop)
		return FTBPF_ACT_STOP;
	if (dj->fenced || k->generation < dj->gen)
		return FTBPF_ACT_RESTART;
	/* a completed preemption checkpoint (after its grace): the ranks that were asked */
	if (dj->ck_done && dj->ck.cause == DEC_CAUSE_PREEMPTION &&
	    (d->cfg->preempt_grace_s <= 0 || dj->final_claimed) &&
	    !dc_started_since(k, dj->done_at_ms))
		return FTBPF_ACT_RESTART;
	return FTBPF_ACT_NONE;
}

void dc_write_slot(struct decider *d, struct djob *dj, struct rank *k)
{
	struct ftbpf_slot_decision x = {0}, *s;
	uint64_t seq, v = 1469598103934665603ull;

	x.generation = dj->gen;
	x.ckpt_step = dj->ck_n ? dj->ck.target : -1;
	x.ckpt_id = dj->ck_n;
	x.ckpt_state = !dj->ck_n     ? FTBPF_CK_NONE
		       : dj->ck_done ? FTBPF_CK_COMPLETE
				     : FTBPF_CK_REQUESTED;
	x.resume_step = dj->last_complete;
	x.cause = dj->g.cause;
	x.nexcluded = (uint32_t)dj->g.nexcluded;
	for (int i = 0; i < dj->g.nexcluded; i++)
		memcpy(x.excluded[i], dj->g.excluded[i], DEC_NODE_LEN);
	x.action = dc_told_to_exit(d, dj, k);
	x.exit_code = (uint32_t)(x.action == FTBPF_ACT_STOP ? d->cfg->stop_exit_code
							    : d->cfg->restart_exit_code);
	/* write only what changed (FNV-1a over the decision) */
	for (size_t i = 0; i < sizeof(x); i++)
		v = (v ^ ((const unsigned char *)&x)[i]) * 1099511628211ull;
	v |= 1;
	if (k->dec_written == v)
		return;
	k->dec_written = v;
	s = &k->slot->dec;
	seq = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
	__atomic_store_n(&s->seq, seq | 1, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	x.seq = seq | 1;
	memcpy((void *)s, &x, sizeof(x));
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&s->seq, (seq | 1) + 1, __ATOMIC_RELEASE);
}

void dc_write_slots(struct decider *d, struct djob *dj, struct job *j)
{
	for (int i = 0; j && i < j->nmembers; i++)
		if (j->members[i]->slot && !j->members[i]->s.exited)
			dc_write_slot(d, dj, j->members[i]);
}

/* ---- fencing ---- */
static int other_members(const struct decider *d, const struct djob *dj)
{
	for (int i = 0; i < dj->nmem; i++)
		if (dj->mem[i].m.ranks > 0 && strcmp(dj->mem[i].node, d->node))
			return 1;
	return 0;
}

int dc_fence(struct decider *d, struct djob *dj, struct job *j)
{
	uint64_t last = 0;
	int ok;

	if (!store_shared(d->st))
		return 0;
	ok = store_reachable(d->st, &last);
	if (ok) {
		dj->fenced = 0;
		return 0;
	}
	if (dj->fenced)
		return 1;
	if (!other_members(d, dj) || !last ||
	    dc_now_ms() - last < (uint64_t)(d->cfg->fence_after_s * 1000))
		return 0;
	dj->fenced = 1;
	d->fences++;
	{
		struct json_object *o = view_event("fenced");

		jstr(o, "job", dj->id);
		jint(o, "uid", dj->uid);
		jstr(o, "node", d->node);
		jdbl(o, "unreachable_s", (double)(dc_now_ms() - last) / 1000.0);
		eventlog_emit(d->el, o);
	}
	for (int i = 0; j && i < j->nmembers; i++) {
		struct rank *k = j->members[i];

		if (!k->s.exited && k->pidfd >= 0)
			signal_rank(d, k, SIGTERM, "fenced");
	}
	return 1;
}
