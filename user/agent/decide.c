/* Coordinated checkpoint and restart decisions: see decide.h. The rules are
 * lib/decide_policy.c's; here each trigger and each look gathers their inputs
 * (decide_store.c), calls them, and carries out what they return (decide_act.c). */
#include "agent/decide.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/decide_int.h"
#include "agent/store.h"
#include "lib/config.h"
#include "lib/decide_look.h"
#include "lib/ranks.h"

/* Does the job use the client library here (a rank registered)? */
static int participates(const struct job *j)
{
	for (int i = 0; i < j->nmembers; i++)
		if (j->members[i]->dec_written)
			return 1;
	return 0;
}

static struct job *local_job(struct decider *d, const struct djob *dj)
{
	return ranks_job_find(d->ranks, dj->uid, dj->id);
}

static int rank_index(const struct decider *d, const struct rank *k)
{
	for (int i = 0; i < d->nrk; i++)
		if (d->rk_of[i] == k)
			return i;
	return -1;
}

static void write_slots(struct decider *d, struct djob *dj)
{
	for (int i = 0; i < d->nrk; i++)
		if (!d->rk[i].exited)
			dc_write_slot(d, dj, i);
}

/* What a suspect member's lease has left, as the store last read it (a read is asked for). */
static int lease_left(void *ctx, const struct dp_node_member *m, struct dp_lease *ret)
{
	struct decider *d = ctx;
	uint64_t at = 0;
	int r = store_lease_left(d->st, m->m.lease, &ret->left_s, &at);

	ret->at_mono = at;
	return r;
}

/*
 * No run known yet (an agent started while the store cannot be read, or cut off before it could
 * be): the records are not known, yet ranks of a job that runs on other nodes too are held, then
 * fenced, when the store is unreachable (I6: dp_fence, by the ranks' world size). Only the hold
 * is written into the slots (and settling into those given no generation yet): the decision in
 * them is the last agent's (or none), not one made up here from records never read. A hold an
 * earlier agent wrote is cleared only once the store answers.
 */
static void hold_without_run(struct decider *d, struct djob *dj, struct job *j)
{
	/* a rank given no generation yet (its agent restarted before it wrote the slot) has read
	 * no decision: it waits for its first, of the run's generation (dp_first_generation) */
	for (int i = 0; j && i < j->nmembers; i++)
		if (j->members[i]->gen_unknown && j->members[i]->slot && !j->members[i]->s.exited)
			__atomic_store_n(&j->members[i]->slot->settling, 1, __ATOMIC_RELEASE);
	if (!j || !d->pc.shared)
		return;
	dc_load(d, dj);
	if (dc_gather(d, dj, j) < 0)
		return;
	dp_fence(&d->pc, &dj->rec, &dj->mem, d->rk, d->nrk, &d->out);
	dc_carry_out(d, dj, j);
	dc_scatter(d);
	if (!dj->mem.held && !dj->rec.reachable)
		return;
	for (int i = 0; i < d->nrk; i++)
		if (!d->rk[i].exited)
			dc_write_hold(d, dj, i);
}

/* ---- one job ---- */
static void tick_job(struct decider *d, struct djob *dj)
{
	struct job *j = local_job(d, dj);
	struct dp_records *r = &dj->rec;
	struct dp_memory *m = &dj->mem;
	struct dp_look_in in = {0};
	struct dp_look_res res;
	struct dp_hang hang = {0};

	/* an agent restarted: its ranks registered with the earlier one; their run is read from
	 * the store, once it can be (dc_choose_run) */
	if (!dj->run && j) {
		for (int i = 0; i < j->nmembers && !dj->run; i++)
			if (!j->members[i]->s.exited && j->members[i]->dec_written)
				dc_choose_run(d, dj, j, j->members[i]);
	}
	dc_follow_launch(d, dj); /* a lost claim of the launch's record: the winner's run */
	if (!dj->run) { /* the slots keep what the last agent wrote in them, but the hold */
		hold_without_run(d, dj, j);
		return;
	}
	dc_load(d, dj);
	dc_log_refused(d, dj);
	if (dc_gather(d, dj, j) < 0)
		return;
	in.lease_left = lease_left;
	in.ctx = d;
	in.own_lease = store_lease(d->st);
	dc_now(&in.now);
	if (j && j->res.hard && !j->res.failed && j->res.live > 0) {
		/* the job's verdict: over every host's part when it spans hosts */
		hang.why = j->res.why;
		hang.stalled_ms = j->res.no_progress_ns / 1000000;
		/* by its mesh address; this node's own culprit is this node */
		hang.node = j->xv.valid && j->xv.n_culprits && !j->xv.culprit_here
				? j->xv.culprit_node
				: NULL;
		in.hang = &hang;
	}
	dp_look(&d->pc, r, m, d->rk, d->nrk, &in, &d->out, &res);
	if (res.retargets > 0)
		d->retargets++;
	if (!res.fenced) /* a failed check is acted on from the next look (a held job: not) */
		dc_health_check_poll(d, dj, j);
	dc_carry_out(d, dj, j);
	dc_scatter(d);
	write_slots(d, dj);
}

/* A job no rank of which has lived here for ten minutes, and with nothing in flight, is
 * forgotten (its records stay in the store, read again if it comes back): the table holds
 * what runs. A user whose share is full has idle jobs forgotten after seconds. */
#define IDLE_FORGET_MS	    600000
#define IDLE_FORGET_FULL_MS 5000
static void forget_idle(struct decider *d)
{
	struct dp_now now;

	dc_now(&now);
	for (int i = d->njobs - 1; i >= 0; i--) {
		struct djob *dj = d->jobs[i];
		const struct job *j = ranks_job_find(d->ranks, dj->uid, dj->id);
		int live = 0;

		for (int m = 0; j && m < j->nmembers; m++)
			live += !j->members[m]->s.exited;
		if (live || dj->mem.claimed_gen_ms || dj->mem.claimed_ck_ms || dj->mem.preempt_ms ||
		    dj->health_pid > 0) {
			dj->idle_ms = 0;
			continue;
		}
		if (!dj->idle_ms)
			dj->idle_ms = now.mono_ms;
		if (now.mono_ms - dj->idle_ms < IDLE_FORGET_MS &&
		    (now.mono_ms - dj->idle_ms < IDLE_FORGET_FULL_MS || dj->uid == 0 ||
		     dc_user_jobs(d, dj->uid) < MAX_JOBS_PER_USER))
			continue;
		dc_free_job(dj);
		d->jobs[i] = d->jobs[--d->njobs];
	}
}

/* A look at one job: one that settled a claim here, or wrote a request into slots, is followed
 * by another at once (a step of the agreement per look, not per scan). */
static void look(struct decider *d, struct djob *dj)
{
	for (int pass = 0; pass < 4; pass++) {
		d->again = 0;
		tick_job(d, dj);
		if (!d->again)
			break;
	}
}

void decide_tick(struct decider *d)
{
	forget_idle(d);
	for (int i = 0; i < d->ranks->njobs; i++) {
		struct job *j = d->ranks->jobs[i];

		if (participates(j))
			dc_find(d, j->uid, j->id, 1);
	}
	for (int i = 0; i < d->njobs; i++) {
		if (local_job(d, d->jobs[i]))
			look(d, d->jobs[i]);
	}
}

void decide_job(struct decider *d, struct job *j)
{
	struct djob *dj;

	if (participates(j) && (dj = dc_find(d, j->uid, j->id, 1)))
		look(d, dj);
}

/* ---- triggers ---- */
void decide_on_signal(struct decider *d, struct rank *k, int sig, uint32_t sender_pid)
{
	struct job *j = k->job;
	struct djob *dj;
	struct dp_local l;
	struct dp_now now;
	int64_t step;
	int i, p;

	if (!participates(j) || !(dj = dc_find(d, j->uid, j->id, 1)))
		return;
	dc_load(d, dj);
	if (dc_gather(d, dj, j) < 0 || (i = rank_index(d, k)) < 0)
		return;
	p = dp_is_preemption(&d->pc, &dj->rec, &dj->mem, d->rk, d->nrk, i, sig, sender_pid,
			     (uint32_t)getpid());
	if (p == 0)
		return;
	k->preempted = 1;
	if (p < 0) { /* I5: said, not silently dropped */
		d->ignored_signals++;
		dc_log_preemption(
		    d, dj, k->pid, "preemption_ignored",
		    "the job's ranks were told to exit (a restart or stop was decided, "
		    "or a rank failed): a signal to them is their launcher's");
		return;
	}
	dc_now(&now);
	dp_local(d->rk, d->nrk, -1, &l);
	if (dp_request_checkpoint(&d->pc, &dj->rec, &dj->mem, &l, DEC_CAUSE_PREEMPTION,
				  "preemption signal", &now, &step, &d->out) == -EAGAIN) {
		dc_log_unavailable(d, dj, k->pid, "preemption signal",
				   "the decision store cannot be reached");
	} else if (d->out.nwrites) {
		d->preemptions++;
	}
	dc_carry_out(d, dj, j);
}

int decide_checkpoint(struct decider *d, struct job *j, const char *why, int64_t *ret_step)
{
	struct djob *dj;
	struct dp_local l;
	struct dp_now now;
	int r;

	if (!j || !participates(j))
		return -ENOENT;
	dj = dc_find(d, j->uid, j->id, 1);
	if (!dj)
		return -ENOMEM;
	dc_load(d, dj);
	if (dc_gather(d, dj, j) < 0)
		return -ENOMEM;
	dc_now(&now);
	dp_local(d->rk, d->nrk, -1, &l);
	r = dp_request_checkpoint(&d->pc, &dj->rec, &dj->mem, &l, DEC_CAUSE_OPERATOR, why, &now,
				  ret_step, &d->out);
	dc_carry_out(d, dj, j);
	return r;
}

int decide_part_member(void *ctx, uint32_t uid, const char *job, const char *addr)
{
	struct decider *d = ctx;
	struct djob *dj;
	int known = 0;

	if (!d || !store_shared(d->st) || !(dj = dc_find(d, (uid_t)uid, job, 0)) || !dj->run)
		return -1;
	for (int i = 0; i < dj->rec.nmem; i++) {
		if (!*dj->rec.mem[i].m.mesh)
			continue;
		if (!strcmp(dj->rec.mem[i].m.mesh, addr))
			return 1;
		known = 1;
	}
	return known ? 0 : -1;
}

void decide_set_mesh(struct decider *d, const char *addr)
{
	snprintf(d->pc.mesh, sizeof(d->pc.mesh), "%s", addr);
}

/* The mesh names a peer by its address; the job's decisions by its node name. */
static const char *member_name(const struct djob *dj, const char *addr)
{
	const char *node = dp_node_by_mesh(&dj->rec, addr);

	return node ? node : addr;
}

void decide_peer_dead(struct decider *d, const char *node)
{
	struct dp_now now;

	dc_now(&now);
	for (int i = 0; i < d->njobs; i++) {
		dc_load(d, d->jobs[i]);
		dp_peer_dead(&d->jobs[i]->mem, &d->jobs[i]->rec, member_name(d->jobs[i], node),
			     &now);
	}
}

void decide_peer_alive(struct decider *d, const char *node)
{
	for (int i = 0; i < d->njobs; i++)
		dp_peer_alive(&d->jobs[i]->mem, member_name(d->jobs[i], node));
}

void decide_rank_registered(struct decider *d, struct rank *k)
{
	struct djob *dj = dc_find(d, k->job->uid, k->job->id, 1);
	int i;

	if (!dj || !k->slot)
		return;
	dc_choose_run(d, dj, k->job, k); /* none while the store cannot be read: a later look */
	dc_load(d, dj);
	k->generation = dj->rec.gen;
	/* no run known yet: it waits (settling) for its first decision, and is of the generation
	 * that one is in (dp_first_generation), not of one assumed before the store was read */
	k->gen_unknown = !dj->run;
	k->dec_written = 0;
	if (dc_gather(d, dj, k->job) == 0 && (i = rank_index(d, k)) >= 0)
		dc_write_slot(d, dj, i);
}

int decide_reset(struct decider *d, uid_t uid, const char *job)
{
	struct djob *dj = dc_find(d, uid, job, 1);

	return dj ? dc_reset(d, dj) : -ENOMEM;
}

/* ---- lifecycle ---- */
struct decider *decider_new(const struct decide_opts *o)
{
	struct decider *d = calloc(1, sizeof(*d));
	const struct ftbpf_config *cfg = o->cfg;
	struct dp_config *pc;

	if (!d)
		return NULL;
	d->cfg = cfg;
	d->ranks = o->ranks;
	d->el = o->el;
	d->ac = o->ac;
	d->st = o->st;
	pc = &d->pc;
	snprintf(pc->node, sizeof(pc->node), "%s", o->node);
	pc->shared = store_shared(o->st);
	if (config_parse_signal_set(cfg->preempt_signals, &pc->preempt_mask) < 0)
		pc->preempt_mask = 0;
	pc->margin = cfg->checkpoint_margin;
	pc->restart_exit_code = cfg->restart_exit_code;
	pc->stop_exit_code = cfg->stop_exit_code;
	pc->preempt_grace_s = cfg->preempt_grace_s;
	pc->max_restarts = cfg->max_restarts;
	pc->restart_window_s = cfg->restart_window_s;
	pc->node_fault_limit = cfg->node_fault_limit;
	pc->recovery_wait_s = cfg->recovery_wait_s;
	pc->fence_after_s = cfg->fence_after_s;
	pc->lease_ttl_s = (int)cfg->etcd_lease_ttl_s; /* as granted: whole seconds */
	pc->health_check = *cfg->health_check != 0;
	/* hold before our lease may run out; the store says it is unreachable by then
	 * (dec_reachable_ms, agent.c) */
	pc->hold_after_s = dec_hold_after_s(pc->lease_ttl_s, cfg->fence_after_s);
	return d;
}

void decider_free(struct decider *d)
{
	if (!d)
		return;
	for (int i = 0; i < d->njobs; i++) {
		if (d->jobs[i]->health_pid > 0) {
			kill(d->jobs[i]->health_pid, SIGKILL);
			waitpid(d->jobs[i]->health_pid, NULL, 0);
		}
		dc_free_job(d->jobs[i]);
	}
	free(d->rk);
	free(d->rk_of);
	free(d);
}
