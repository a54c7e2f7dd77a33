/* Coordinated checkpoint and restart decisions: see decide.h. */
#include "agent/decide.h"

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

#define CLAIM_RETRY_MS 1000 /* a claim not seen in the store by then is made again */

/* ---- jobs ---- */
/* A CLOCK_MONOTONIC time (a kernel event's) on the wall clock, in ms; 0: now. */
static uint64_t mono_to_wall_ms(uint64_t mono_ns)
{
	uint64_t now = clock_mono_ns();

	if (!mono_ns || mono_ns > now)
		return dc_now_ms();
	return (clock_real_ns() - (now - mono_ns)) / 1000000;
}

/* Did rank k's process start at or after wall_ms (a launcher's restarted worker)? */
int dc_started_since(const struct rank *k, uint64_t wall_ms)
{
	uint64_t boot = clock_boot_ns(), age_ms;

	if (!k->start_ns || k->start_ns > boot)
		return 0;
	age_ms = (boot - k->start_ns) / 1000000;
	return dc_now_ms() - age_ms + 10 >= wall_ms; /* start times are in clock ticks (10 ms) */
}

static int user_jobs(const struct decider *d, uid_t uid)
{
	int n = 0;

	for (int i = 0; i < d->njobs; i++)
		n += d->jobs[i]->uid == uid;
	return n;
}

struct djob *dc_find(struct decider *d, uid_t uid, const char *id, int create)
{
	struct djob *dj;

	for (int i = 0; i < d->njobs; i++)
		if (d->jobs[i]->uid == uid && !strcmp(d->jobs[i]->id, id))
			return d->jobs[i];
	if (!create)
		return NULL;
	if (uid != 0) {
		int mine = user_jobs(d, uid), users = d->njobs - user_jobs(d, 0);

		/* a quarter of the table stays root's */
		if (mine >= MAX_JOBS_PER_USER || users >= MAX_JOBS * 3 / 4) {
			if (d->jobs_refused++ % 64 == 0)
				log_warn("decisions: uid %u follows %d jobs already; job %s is not "
					 "followed (%llu refused)",
					 (unsigned)uid, mine, id,
					 (unsigned long long)d->jobs_refused);
			return NULL;
		}
	}
	if (d->njobs == MAX_JOBS || !(dj = calloc(1, sizeof(*dj))))
		return NULL;
	dj->uid = uid;
	snprintf(dj->id, sizeof(dj->id), "%s", id);
	dc_job_prefix(dj->prefix, sizeof(dj->prefix), uid, id);
	dj->last_complete = -1;
	dj->health_pid = -1;
	d->jobs[d->njobs++] = dj;
	return dj;
}

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

void dc_local_view(const struct job *j, int64_t target, struct local *l)
{
	memset(l, 0, sizeof(*l));
	l->max_step = -1;
	for (int i = 0; j && i < j->nmembers; i++) {
		const struct rank *k = j->members[i];
		int64_t step, saved;

		if (k->s.exited)
			continue;
		l->live++;
		if (!k->slot)
			continue;
		step = (int64_t)__atomic_load_n(&k->slot->step, __ATOMIC_RELAXED);
		saved = __atomic_load_n(&k->slot->saved_step, __ATOMIC_ACQUIRE);
		l->ranks++;
		if (step > l->max_step)
			l->max_step = step;
		if (target >= 0 && saved >= target)
			l->saved++;
	}
}

/* How many steps a decision takes to reach every rank: the job's step rate times the store's
 * latency, doubled at every re-target. */
static int margin(struct decider *d, const struct djob *dj)
{
	double latency = store_shared(d->st) ? 1.0 : 0.5;
	double m =
	    dj->steps_per_s * latency * (double)(1 << (dj->retargets > 6 ? 6 : dj->retargets));
	int base = d->cfg->checkpoint_margin;

	return m + 1 > base ? (int)(m + 1) : base;
}

static void step_rate(struct djob *dj, const struct local *l)
{
	uint64_t now = dc_now_ms();

	if (l->max_step < 0)
		return;
	if (dj->step_prev_ms && now > dj->step_prev_ms + 500 &&
	    (uint64_t)l->max_step >= dj->step_prev) {
		double r = (double)((uint64_t)l->max_step - dj->step_prev) * 1000.0 /
			   (double)(now - dj->step_prev_ms);

		dj->steps_per_s = dj->steps_per_s ? 0.7 * dj->steps_per_s + 0.3 * r : r;
	}
	if (!dj->step_prev_ms || now > dj->step_prev_ms + 500) {
		dj->step_prev = (uint64_t)l->max_step;
		dj->step_prev_ms = now;
	}
}

static void forget_lost(struct djob *dj, int i)
{
	dj->lost_ms[i] = dj->lost_ms[--dj->nlost];
	dj->lost_gen[i] = dj->lost_gen[dj->nlost];
	memcpy(dj->lost[i], dj->lost[dj->nlost], DEC_NODE_LEN);
}

static void new_decisions(struct decider *d, struct djob *dj)
{
	if (dj->gen > dj->seen_gen) {
		dj->seen_gen = dj->gen;
		dj->claimed_gen_ms = 0;
		dc_log_decision(d, dj, "generation");
		/* the losses it left out are dealt with (a node lost again later is a new loss) */
		for (int i = 0; i < dj->nlost;)
			if (dc_excluded(dj, dj->lost[i]))
				forget_lost(dj, i);
			else
				i++;
	}
	if (dj->ck_n && dj->gen * 1000000 + dj->ck_n > dj->seen_ck) {
		dj->seen_ck = dj->gen * 1000000 + dj->ck_n;
		dj->claimed_ck_ms = 0;
		dj->req_ms = dj->req_ms ? dj->req_ms : dc_now_ms();
		dc_log_decision(d, dj, "checkpoint");
	}
	if (dj->ck_done && dj->gen * 1000000 + dj->ck_n > dj->seen_done) {
		dj->seen_done = dj->gen * 1000000 + dj->ck_n;
		if (!dj->done_ms)
			dj->done_ms = dc_now_ms();
		dc_log_decision(d, dj, "checkpoint_complete");
	}
}

/* Claim checkpoint request n+1 of the current generation at target. */
static void claim_ckpt(struct decider *d, struct djob *dj, int64_t target, enum dec_cause cause,
		       const char *why)
{
	struct dec_ckpt c = {.generation = dj->gen,
			     .id = dj->ck_n + 1,
			     .target = target,
			     .cause = cause,
			     .at_ms = dc_now_ms()};
	char rel[DEC_KEY_LEN], val[DEC_VALUE_MAX];

	if (dj->claimed_ck_ms && dc_now_ms() - dj->claimed_ck_ms < CLAIM_RETRY_MS)
		return;
	snprintf(c.by, sizeof(c.by), "%s", d->node);
	snprintf(c.why, sizeof(c.why), "%s", why);
	dec_key_ckpt(rel, sizeof(rel), c.generation, c.id);
	if (dec_ckpt_format(&c, val, sizeof(val)) == 0 && dc_claim(d, dj, rel, val) == 0)
		dj->claimed_ck_ms = dc_now_ms();
}

/* Claim generation g+1: cause, where, who is left out, from which step, or stop. */
static void claim_gen(struct decider *d, struct djob *dj, enum dec_cause cause, const char *node,
		      uint64_t fault_ms, const char *why)
{
	const struct ftbpf_config *cfg = d->cfg;
	struct dec_gen g = {.generation = dj->gen + 1,
			    .cause = cause,
			    .resume_step = dj->last_complete,
			    .at_ms = fault_ms};
	char rel[DEC_KEY_LEN], val[DEC_VALUE_MAX];

	if (dj->claimed_gen_ms && dc_now_ms() - dj->claimed_gen_ms < CLAIM_RETRY_MS)
		return;
	snprintf(g.node, sizeof(g.node), "%s", node ? node : "");
	snprintf(g.by, sizeof(g.by), "%s", d->node);
	snprintf(g.why, sizeof(g.why), "%s", why);
	g.stop = cause != DEC_CAUSE_PREEMPTION &&
		 dec_budget_spent(dj->fail_at, dj->nfail, g.at_ms, cfg->max_restarts,
				  cfg->restart_window_s);
	/* left out: a lost node, nodes that failed their health check, and nodes where
	 * node_fault_limit faults happened (this one counted) */
	if (cause == DEC_CAUSE_NODE_DEAD && node && *node)
		snprintf(g.excluded[g.nexcluded++], DEC_NODE_LEN, "%s", node);
	for (int i = 0; i < dj->nlost && g.nexcluded < DEC_MAX_EXCLUDED; i++)
		if (strcmp(dj->lost[i], g.excluded[0]) && strcmp(dj->lost[i], d->node) &&
		    dc_now_ms() - dj->lost_ms[i] >= (uint64_t)(cfg->recovery_wait_s * 1000))
			snprintf(g.excluded[g.nexcluded++], DEC_NODE_LEN, "%s", dj->lost[i]);
	for (int i = 0; i < dj->nmem && g.nexcluded < DEC_MAX_EXCLUDED; i++)
		if (dj->mem[i].m.excluded && strcmp(dj->mem[i].node, g.excluded[0]))
			snprintf(g.excluded[g.nexcluded++], DEC_NODE_LEN, "%s", dj->mem[i].node);
	/* (a node that decides alone has nowhere else to run: it never leaves itself out) */
	if (node && *node && cause != DEC_CAUSE_NODE_DEAD && g.nexcluded < DEC_MAX_EXCLUDED &&
	    store_shared(d->st)) {
		int faults = 1;

		for (int i = 0; i < dj->nfault; i++)
			faults += !strcmp(dj->fault_node[i], node);
		if (faults >= cfg->node_fault_limit)
			snprintf(g.excluded[g.nexcluded++], DEC_NODE_LEN, "%s", node);
	}
	dec_key_gen(rel, sizeof(rel), g.generation);
	if (dec_gen_format(&g, val, sizeof(val)) == 0 && dc_claim(d, dj, rel, val) == 0)
		dj->claimed_gen_ms = dc_now_ms();
}

/* ---- failures ---- */
/* Did rank k end abnormally, on its own (not by our action, not asked to exit, not a
 * preemption that killed it)? */
static int abnormal_exit(struct decider *d, const struct rank *k)
{
	int sig = k->s.exit_code & 0x7f, code = (k->s.exit_code >> 8) & 0xff;

	if (!k->s.exited || k->killed_by_agent)
		return 0;
	if (sig)
		return !(k->preempted && (d->preempt_mask & (1ull << sig)));
	return code != 0 && code != d->cfg->restart_exit_code && code != d->cfg->stop_exit_code;
}

static void failures(struct decider *d, struct djob *dj, struct job *j)
{
	char why[DEC_WHY_LEN];

	for (int i = 0; j && i < j->nmembers; i++) {
		struct rank *k = j->members[i];

		if (k->fail_seen || k->generation != dj->gen || !k->dec_written ||
		    !abnormal_exit(d, k))
			continue;
		k->fail_seen = 1;
		snprintf(why, sizeof(why), "rank %d (pid %d) on %s ended: %s %d", k->id.rank,
			 k->pid, d->node, (k->s.exit_code & 0x7f) ? "signal" : "exit code",
			 (k->s.exit_code & 0x7f) ? k->s.exit_code & 0x7f
						 : (k->s.exit_code >> 8) & 0xff);
		claim_gen(d, dj, DEC_CAUSE_RANK_DIED, d->node, mono_to_wall_ms(k->s.exit_ns), why);
		return;
	}
	if (j && j->res.hard && !j->res.failed && j->res.live > 0 && dj->applied_gen == dj->gen &&
	    dj->hang_claimed != dj->gen + 1) {
		dj->hang_claimed = dj->gen + 1;
		snprintf(why, sizeof(why), "hard timeout on %.31s: %.60s", d->node, j->res.why);
		claim_gen(d, dj, DEC_CAUSE_HANG, d->node, dc_now_ms(), why);
		return;
	}
	/* members lost: their lease expired, or the mesh declared them dead and their lease
	 * confirmed it (both witnessed by the store: no wait for a refutation) */
	for (int i = 0; i < dj->nlost; i++) {
		if (!strcmp(dj->lost[i], d->node) ||
		    dc_now_ms() - dj->lost_ms[i] < (uint64_t)(d->cfg->recovery_wait_s * 1000))
			continue;
		snprintf(why, sizeof(why), "node %s was lost", dj->lost[i]);
		claim_gen(d, dj, DEC_CAUSE_NODE_DEAD, dj->lost[i], dj->lost_ms[i], why);
		return;
	}
}

/* Node is lost since at_ms; gen: the generation its ranks were in. A node that the current
 * generation already leaves out, lost with ranks of an older one, was dealt with (a node that
 * rejoined since, with ranks of this generation, is a new loss). */
static void lost_node(struct djob *dj, const char *node, uint64_t gen, uint64_t at_ms)
{
	if (dc_excluded(dj, node) && gen < dj->gen)
		return;
	for (int i = 0; i < dj->nlost; i++)
		if (!strcmp(dj->lost[i], node))
			return;
	if (dj->nlost < MAX_NODES) {
		snprintf(dj->lost[dj->nlost], DEC_NODE_LEN, "%s", node);
		dj->lost_gen[dj->nlost] = gen;
		dj->lost_ms[dj->nlost++] = at_ms;
	}
}

static int suspected(const struct djob *dj, const char *node)
{
	for (int i = 0; i < dj->nsuspect; i++)
		if (!strcmp(dj->suspect[i], node))
			return 1;
	return 0;
}

static void forget_suspect(struct djob *dj, int i)
{
	dj->suspect_ms[i] = dj->suspect_ms[--dj->nsuspect];
	memcpy(dj->suspect[i], dj->suspect[dj->nsuspect], DEC_NODE_LEN);
}

/*
 * Nodes the mesh declared dead, their member key still standing: read their lease. A live
 * agent renews it every third of its TTL, so it never has less than two thirds left (etcd
 * says whole seconds, rounded down: at least 2 TTL / 3 - 1); one with less stopped renewing:
 * its agent is dead or cut off, and the node is lost now, not when the lease runs out.
 */
static void confirm_suspects(struct decider *d, struct djob *dj)
{
	for (int i = 0; i < dj->nsuspect;) {
		const struct node_member *m = dc_member(dj, dj->suspect[i]);
		uint64_t at = 0;
		int64_t left = 0;

		if (!m || m->m.lease <= 0 || dc_now_ms() - dj->suspect_ms[i] > 60000) {
			forget_suspect(dj, i); /* gone (vanished() has it), or given up */
			continue;
		}
		if (store_lease_left(d->st, m->m.lease, &left, &at) == 0 &&
		    at >= dj->suspect_ms[i] && left < (2 * m->m.lease_ttl_s) / 3 - 1) {
			/* lost since the mesh said so */
			lost_node(dj, dj->suspect[i], m->m.generation, dj->suspect_ms[i]);
			forget_suspect(dj, i);
			continue;
		}
		i++;
	}
}

/* Members that had ranks and vanished (their agent's lease expired) are lost. */
static void vanished(struct decider *d, struct djob *dj)
{
	int n = 0;

	for (int i = 0; i < dj->nprev; i++)
		if (!dc_member(dj, dj->prev_mem[i]) && strcmp(dj->prev_mem[i], d->node))
			lost_node(dj, dj->prev_mem[i], dj->prev_gen[i], dc_now_ms());
	for (int i = 0; i < dj->nmem && n < MAX_NODES; i++)
		if (dj->mem[i].m.ranks > 0) {
			dj->prev_gen[n] = dj->mem[i].m.generation;
			snprintf(dj->prev_mem[n++], DEC_NODE_LEN, "%s", dj->mem[i].node);
		}
	dj->nprev = n;
	/* a lost node that is back (its member key again: its agent reaches the store) is not
	 * lost any more (with a shared store: the mesh alone does not make a node lost) */
	for (int i = 0; i < dj->nlost;) {
		if (store_shared(d->st) && dc_member(dj, dj->lost[i])) {
			forget_lost(dj, i);
			continue;
		}
		i++;
	}
}

/* ---- checkpoints ---- */
static void checkpoint_progress(struct decider *d, struct djob *dj, const struct local *l)
{
	char rel[DEC_KEY_LEN], val[DEC_VALUE_MAX];
	struct dec_report rep = {l->ranks, l->saved, l->max_step};
	int all = 1, nodes = 0;

	if (!dj->ck_n || dj->ck_done) {
		/* a preemption with a grace period: a last save before it ends */
		if (dj->ck_done && dj->ck.cause == DEC_CAUSE_PREEMPTION && !dj->final_claimed &&
		    d->cfg->preempt_grace_s > 0 && dj->req_ms && dj->done_ms) {
			uint64_t took = dj->done_ms - dj->req_ms;
			uint64_t at = dj->req_ms + (uint64_t)(d->cfg->preempt_grace_s * 1000);

			at = at > 2 * took ? at - 2 * took : dj->done_ms;
			if (dc_now_ms() >= at) {
				dj->final_claimed = 1;
				dj->retargets = 0;
				claim_ckpt(d, dj, dec_target(l->max_step, margin(d, dj)),
					   DEC_CAUSE_PREEMPTION,
					   "final save before the grace ends");
			}
		}
		return;
	}
	if (l->ranks) {
		dec_key_report(rel, sizeof(rel), dj->gen, dj->ck_n, d->node);
		if (dec_report_format(&rep, val, sizeof(val)) == 0)
			dc_put(d, dj, rel, val, 0);
	}
	if (dec_retarget(&dj->ck, &rep)) {
		dj->retargets++;
		d->retargets++;
		claim_ckpt(d, dj, dec_target(l->max_step, margin(d, dj)), dj->ck.cause,
			   "re-targeted: a rank was past the step");
		return;
	}
	/* complete when every member node with ranks reported all of them saved */
	for (int i = 0; i < dj->nmem; i++) {
		const struct node_member *m = &dj->mem[i];
		int ok = 0;

		if (m->m.ranks == 0 || m->m.excluded || dc_excluded(dj, m->node))
			continue;
		nodes++;
		for (int r = 0; r < dj->nrep; r++)
			if (!strcmp(dj->rep[r].node, m->node))
				ok = dj->rep[r].r.ranks > 0 &&
				     dj->rep[r].r.saved == dj->rep[r].r.ranks;
		if (!strcmp(m->node, d->node))
			ok = l->ranks > 0 && l->saved == l->ranks;
		all &= ok;
	}
	if (nodes && all) {
		struct dec_done done = {dj->ck.target, dc_now_ms()};

		dec_key_done(rel, sizeof(rel), dj->gen, dj->ck_n);
		if (dec_done_format(&done, val, sizeof(val)) == 0)
			dc_claim(d, dj, rel, val);
	}
}

/* ---- one job ---- */
static void tick_job(struct decider *d, struct djob *dj)
{
	struct job *j = local_job(d, dj);
	struct dec_member me = {0};
	char rel[DEC_KEY_LEN], val[DEC_VALUE_MAX];
	struct local l;

	dc_load(d, dj);
	new_decisions(d, dj);
	dc_local_view(j, dj->ck_n && !dj->ck_done ? dj->ck.target : -1, &l);
	step_rate(dj, &l);
	if (dc_fence(d, dj, j)) {
		dc_write_slots(d, dj, j);
		return;
	}
	me.ranks = l.ranks;
	me.generation = dj->gen;
	me.excluded = dj->health_failed;
	me.lease = store_lease(d->st);
	me.lease_ttl_s = (int)d->cfg->etcd_lease_ttl_s;
	if (l.ranks || dc_member(dj, d->node)) {
		dec_key_member(rel, sizeof(rel), d->node);
		if (dec_member_format(&me, val, sizeof(val)) == 0)
			dc_put(d, dj, rel, val, 1);
	}
	vanished(d, dj);
	confirm_suspects(d, dj);
	dc_health_check_poll(d, dj, j);
	dc_apply_generation(d, dj, j);
	if (dc_can_decide(d) && !dj->g.stop) {
		failures(d, dj, j);
		checkpoint_progress(d, dj, &l);
	}
	dc_write_slots(d, dj, j);
}

/* A job no rank of which has lived here for ten minutes, and with nothing in flight, is
 * forgotten (its records stay in the store, read again if it comes back): the table holds
 * what runs. A user whose share is full has idle jobs forgotten after seconds. */
#define IDLE_FORGET_MS	    600000
#define IDLE_FORGET_FULL_MS 5000
static void forget_idle(struct decider *d)
{
	uint64_t now = dc_now_ms();

	for (int i = d->njobs - 1; i >= 0; i--) {
		struct djob *dj = d->jobs[i];
		const struct job *j = ranks_job_find(d->ranks, dj->uid, dj->id);
		int live = 0;

		for (int m = 0; j && m < j->nmembers; m++)
			live += !j->members[m]->s.exited;
		if (live || dj->claimed_gen_ms || dj->claimed_ck_ms || dj->health_pid > 0) {
			dj->idle_ms = 0;
			continue;
		}
		if (!dj->idle_ms)
			dj->idle_ms = now;
		if (now - dj->idle_ms < IDLE_FORGET_MS &&
		    (now - dj->idle_ms < IDLE_FORGET_FULL_MS || dj->uid == 0 ||
		     user_jobs(d, dj->uid) < MAX_JOBS_PER_USER))
			continue;
		free(dj);
		d->jobs[i] = d->jobs[--d->njobs];
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
	for (int i = 0; i < d->njobs; i++)
		if (local_job(d, d->jobs[i]))
			tick_job(d, d->jobs[i]);
}

/* ---- triggers ---- */
void decide_on_signal(struct decider *d, struct rank *k, int sig, uint32_t sender_pid)
{
	struct djob *dj;
	struct local l;
	struct job *j = k->job;

	/* from outside: not the agent, not the process itself (raise(), or the kernel's timer
	 * enforcement, which signals from the process's own context) */
	if (sig <= 0 || sig > 63 || !(d->preempt_mask & (1ull << sig)) || sender_pid == 0 ||
	    sender_pid == (uint32_t)getpid() || sender_pid == (uint32_t)k->pid || !participates(j))
		return;
	k->preempted = 1;
	dj = dc_find(d, j->uid, j->id, 1);
	if (!dj)
		return;
	dc_load(d, dj);
	/* not a preemption: a launcher ending its workers after a failure, or after ranks were
	 * told to exit (a decided restart or stop, a completed preemption: a launcher takes their
	 * exit 42 for a failure too) */
	for (int i = 0; i < j->nmembers; i++) {
		const struct rank *m = j->members[i];

		if (m->s.exited ? m->generation == dj->gen && abnormal_exit(d, m)
				: dc_told_to_exit(d, dj, m) != FTBPF_ACT_NONE) {
			d->ignored_signals++;
			return;
		}
	}
	if (dj->ck_n && !dj->ck_done)
		return;		 /* one is in progress: this signal joins it */
	if (!dc_can_decide(d)) { /* nothing can be agreed now: the rank is left alone */
		struct json_object *o = view_event("decision_unavailable");

		d->unavailable++;
		jstr(o, "job", j->id);
		jint(o, "uid", j->uid);
		jint(o, "pid", k->pid);
		jstr(o, "trigger", "preemption signal");
		jstr(o, "why", "the decision store cannot be reached");
		eventlog_emit(d->el, o);
		return;
	}
	d->preemptions++;
	dj->req_ms = dc_now_ms();
	dj->done_ms = 0;
	dj->final_claimed = 0;
	dj->retargets = 0;
	dc_local_view(j, -1, &l);
	claim_ckpt(d, dj, dec_target(l.max_step, margin(d, dj)), DEC_CAUSE_PREEMPTION,
		   "preemption signal");
}

int decide_checkpoint(struct decider *d, struct job *j, const char *why, int64_t *ret_step)
{
	struct djob *dj;
	struct local l;

	if (!j || !participates(j))
		return -ENOENT;
	dj = dc_find(d, j->uid, j->id, 1);
	if (!dj)
		return -ENOMEM;
	dc_load(d, dj);
	if (dj->ck_n && !dj->ck_done)
		return -EBUSY;
	if (!dc_can_decide(d))
		return -EAGAIN;
	dc_local_view(j, -1, &l);
	dj->retargets = 0;
	dj->claimed_ck_ms = 0;
	*ret_step = dec_target(l.max_step, margin(d, dj));
	claim_ckpt(d, dj, *ret_step, DEC_CAUSE_OPERATOR, why);
	return 0;
}

void decide_peer_dead(struct decider *d, const char *node)
{
	for (int i = 0; i < d->njobs; i++) {
		struct djob *dj = d->jobs[i];
		const struct node_member *m;

		dc_load(d, dj);
		m = dc_member(dj, node);
		/* the node's lease has the last word (the mesh may have taken another's word, or
		 * lost only UDP): suspect it, and read its lease. Only etcd holds other nodes'
		 * members, with leases: a node deciding alone has no member to lose. */
		if (m && m->m.ranks > 0 && m->m.lease > 0 && dj->nsuspect < MAX_NODES &&
		    !suspected(dj, node)) {
			snprintf(dj->suspect[dj->nsuspect], DEC_NODE_LEN, "%s", node);
			dj->suspect_ms[dj->nsuspect++] = dc_now_ms();
		}
	}
}

void decide_peer_alive(struct decider *d, const char *node)
{
	for (int i = 0; i < d->njobs; i++) {
		struct djob *dj = d->jobs[i];

		for (int s = 0; s < dj->nsuspect; s++)
			if (!strcmp(dj->suspect[s], node)) {
				forget_suspect(dj, s);
				break;
			}

		for (int l = 0; l < dj->nlost; l++)
			if (!strcmp(dj->lost[l], node)) {
				forget_lost(dj, l);
				break;
			}
	}
}

void decide_rank_registered(struct decider *d, struct rank *k)
{
	struct djob *dj = dc_find(d, k->job->uid, k->job->id, 1);

	if (!dj || !k->slot)
		return;
	dc_load(d, dj);
	k->generation = dj->gen;
	k->dec_written = 0;
	dc_write_slot(d, dj, k);
}

/* ---- lifecycle ---- */
struct decider *decider_new(const struct decide_opts *o)
{
	struct decider *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->cfg = o->cfg;
	d->ranks = o->ranks;
	d->el = o->el;
	d->ts = o->ts;
	d->st = o->st;
	snprintf(d->node, sizeof(d->node), "%s", o->node);
	if (config_parse_signal_set(o->cfg->preempt_signals, &d->preempt_mask) < 0)
		d->preempt_mask = 0;
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
		free(d->jobs[i]);
	}
	free(d);
}
