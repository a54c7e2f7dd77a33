/* The simulator's hosts: the agent's look (the same pure code as ftbpfd's), its lease, its
 * ranks as the client library drives them, its launcher (sim.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lib/decide_load.h"
#include "lib/decide_look.h"
#include "lib/decide_records.h"
#include "sim.h"

#define AGENT_PID     1
#define SCHEDULER_PID 7

void sim_trace(struct sim *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->trace)
		return;
	fprintf(s->out, "%8llu ", (unsigned long long)s->now);
	va_start(ap, fmt);
	vfprintf(s->out, fmt, ap);
	va_end(ap);
	fputc('\n', s->out);
}

void sim_event(struct sim *s, enum sim_ev kind, int host, int rank, uint64_t gen, int64_t step)
{
	if (s->nev == s->ev_cap) {
		s->ev_cap = s->ev_cap ? s->ev_cap * 2 : 1024;
		s->ev = realloc(s->ev, sizeof(*s->ev) * (size_t)s->ev_cap);
		if (!s->ev)
			abort();
	}
	s->ev[s->nev++] = (struct sim_event){s->now, kind, host, rank, gen, step};
}

uint64_t sim_mono(const struct sim *s, const struct sim_host *h)
{
	return s->now + (uint64_t)h->mono_off;
}

uint64_t sim_wall(const struct sim *s, const struct sim_host *h)
{
	return (uint64_t)((int64_t)s->now + h->wall_off);
}

static void rank_fresh(struct sim *s, struct sim_host *h, struct sim_rank *k, int id)
{
	memset(k, 0, sizeof(*k));
	k->id = id;
	k->pid = s->next_pid++;
	k->st = RK_STARTING;
	k->start_mono = sim_mono(s, h);
	k->step_ms = (int)sim_range(&s->rng, 80, 200);
	k->saved_step = k->saving_step = k->ack_step = -1;
	k->step = -1;
	k->dec.ckpt_step = k->dec.resume_step = -1;
}

void sim_host_init(struct sim *s, struct sim_host *h, int idx)
{
	struct dp_config *c = &h->cfg;

	memset(h, 0, sizeof(*h));
	h->idx = idx;
	snprintf(c->node, sizeof(c->node), "h%04d", idx);
	c->shared = 1;
	c->preempt_mask = 1ull << 15;
	c->margin = 1;
	c->restart_exit_code = 42;
	c->stop_exit_code = 93;
	c->max_restarts = 50;
	c->restart_window_s = 3600;
	c->node_fault_limit = 1000;
	c->fence_after_s = 60;
	c->lease_ttl_s = 5;
	c->hold_after_s = dec_hold_after_s(c->lease_ttl_s, c->fence_after_s);
	h->rec.last_complete = -1;
	h->mono_off = sim_range(&s->rng, 1000000, 100000000);
	h->wall_off = 1700000000000ll + sim_range(&s->rng, -20, 20);
	h->agent_up = 1;
	h->next_look = (uint64_t)sim_range(&s->rng, 0, 300);
	h->mirror_lag_ms = (int)sim_range(&s->rng, 0, 300);
	h->opened_mono = sim_mono(s, h);
	h->launcher_pid = s->next_pid++;
	h->launcher_up = 1;
	h->max_restarts = 40;
	h->nranks = s->ranks_per_host;
	h->base_rank = idx * s->ranks_per_host;
	h->ranks = calloc((size_t)h->nranks, sizeof(*h->ranks));
	if (!h->ranks)
		abort();
	for (int i = 0; i < h->nranks; i++)
		rank_fresh(s, h, &h->ranks[i], h->base_rank + i);
}

void sim_host_free(struct sim_host *h)
{
	dp_memory_clear(&h->mem);
	dr_clear(&h->rec);
	free(h->ranks);
	free(h->sigq);
}

int sim_host_reaches(const struct sim *s, const struct sim_host *h)
{
	if (h->dead || !h->agent_up || s->now < h->paused_until)
		return 0;
	if (s->now >= (uint64_t)s->store_down_from && s->now < (uint64_t)s->store_down_until)
		return 0;
	return !(s->now >= h->cut_from && s->now < h->cut_until);
}

/* The agent's connection: keepalives, the mirror following the store (late by its lag). */
void sim_host_lease(struct sim *s, struct sim_host *h)
{
	uint64_t mono = sim_mono(s, h);
	int ttl_ms = h->cfg.lease_ttl_s * 1000;

	if (!sim_host_reaches(s, h))
		return;
	h->last_ok_mono = mono;
	if (s->now >= (uint64_t)h->mirror_lag_ms) {
		uint64_t rev = ss_rev_at_time(&s->st, s->now - (uint64_t)h->mirror_lag_ms);

		if (rev > h->mirror_rev)
			h->mirror_rev = rev;
	}
	if (s->now < h->next_renew)
		return;
	h->next_renew = s->now + (uint64_t)(ttl_ms / 3 < 500 ? ttl_ms / 3 : 500);
	if (!h->lease || ss_keepalive(&s->st, s->now, h->lease) < 0) {
		h->lease = ss_grant(&s->st, s->now, ttl_ms);
		sim_trace(s, "%s lease %lld granted", h->cfg.node, (long long)h->lease);
	}
	h->lease_renewed_mono = mono;
}

/* ---- the agent's reader over its mirror ---- */
struct mirror {
	struct sim *s;
	struct sim_host *h;
};

static int m_list(void *ctx, const char *prefix, int (*fn)(void *, const char *, const char *),
		  void *fctx)
{
	struct mirror *m = ctx;

	return ss_list_at(&m->s->st, prefix, m->h->mirror_rev, fn, fctx);
}

static char *m_get(void *ctx, const char *key)
{
	struct mirror *m = ctx;
	const char *v = ss_get_at(&m->s->st, key, m->h->mirror_rev);

	return v ? strdup(v) : NULL;
}

static void m_refuse(void *ctx, const char *key, const char *value, const char *why)
{
	struct mirror *m = ctx;

	(void)value;
	sim_trace(m->s, "%s refused %s: %s", m->h->cfg.node, key, why);
}

static int lease_left(void *ctx, const struct dp_node_member *mb, struct dp_lease *ret)
{
	struct mirror *m = ctx;
	int64_t left = ss_lease_left(&m->s->st, m->s->now, mb->m.lease);

	ret->left_s = left < 0 ? -1 : left / 1000;
	ret->at_mono = sim_mono(m->s, m->h);
	return 0;
}

static void load(struct sim *s, struct sim_host *h, struct mirror *mi)
{
	struct dl_reader rd = {m_list, m_get, m_refuse, mi};
	struct dp_records *r = &h->rec;
	uint64_t mono = sim_mono(s, h);
	char prefix[128];

	dl_begin(r, h->run, 0);
	r->reachable = h->last_ok_mono &&
		       mono - h->last_ok_mono < dec_reachable_ms(h->cfg.lease_ttl_s,
								 h->cfg.fence_after_s);
	r->lease = h->lease;
	r->lease_renewed_ms = h->lease_renewed_mono;
	r->unreachable_ms = dec_unreachable_ms(r->reachable, h->last_ok_mono, h->opened_mono, mono);
	snprintf(prefix, sizeof(prefix), "%sruns/%d/", SIM_PREFIX, SIM_RUN);
	dl_load(&rd, SIM_PREFIX, prefix, r);
}

/* dc_gather: the ranks as the policy sees them */
static void gather(struct sim *s, struct sim_host *h, struct dp_rank *rk)
{
	const struct dp_records *r = &h->rec;

	for (int i = 0; i < h->nranks; i++) {
		struct sim_rank *k = &h->ranks[i];
		struct dp_rank *x = &rk[i];

		memset(x, 0, sizeof(*x));
		x->pid = k->pid;
		x->rank = k->id;
		x->exited = k->st == RK_EXITED;
		x->wait_status = k->wait_status;
		x->exit_wall_ms = k->exit_wall;
		x->has_slot = 1;
		x->registered = k->dec_written != 0;
		x->world_size = s->world;
		x->step = k->step < 0 ? 0 : k->step;
		x->saved = k->saved_step;
		x->saved_here = k->saved_generation == 0 || k->saved_generation == k->generation + 1;
		x->saving = k->saving_step;
		x->failed = (int64_t)k->failed_step - 1;
		x->ack = -1;
		if (r->ck_n && !r->bound) {
			if (k->ack_id == r->ck_n)
				x->ack = k->ack_step;
			if (k->dec_ack_id == r->ck_n && (x->ack < 0 || k->dec_ack_step < x->ack))
				x->ack = k->dec_ack_step;
		}
		x->start_ms = k->start_mono;
		x->started_known = 1;
		x->exit_ms = k->exit_mono;
		x->generation = k->generation;
		x->preempted = k->preempted;
		x->killed_by_agent = k->killed_by_agent;
		x->fail_seen = k->fail_seen;
	}
	(void)s;
}

static void scatter(struct sim_host *h, const struct dp_rank *rk)
{
	for (int i = 0; i < h->nranks; i++) {
		h->ranks[i].generation = rk[i].generation;
		h->ranks[i].preempted = rk[i].preempted;
		h->ranks[i].killed_by_agent = rk[i].killed_by_agent;
		h->ranks[i].fail_seen = rk[i].fail_seen;
	}
}

void sim_rank_exit(struct sim *s, struct sim_host *h, int i, int wait_status)
{
	struct sim_rank *k = &h->ranks[i];

	if (k->st == RK_EXITED || k->st == RK_NONE)
		return;
	if ((k->st == RK_TRAINING || k->st == RK_SAVING) && k->trained_gen < 256 &&
	    !s->broken_at[k->trained_gen])
		s->broken_at[k->trained_gen] = s->now;
	k->st = RK_EXITED;
	k->exit_mono = sim_mono(s, h);
	k->exit_wall = sim_wall(s, h);
	k->wait_status = wait_status;
	sim_event(s, EV_EXIT, h->idx, k->id, k->generation, wait_status);
	sim_trace(s, "%s rank %d exits (status %#x) at step %lld in gen %llu", h->cfg.node, k->id,
		  wait_status, (long long)k->step, (unsigned long long)k->generation);
}

/* The launcher's own ranks get its SIGTERM (the agent sees the signal first), and it stops. */
static void stop_launcher(struct sim *s, struct sim_host *h)
{
	if (!h->launcher_up)
		return;
	h->launcher_up = 0;
	h->mem.launcher_stopped = 1;
	h->mem.stopped_launcher = (uint32_t)h->launcher_pid;
	sim_trace(s, "%s launcher stopped by the agent", h->cfg.node);
	for (int i = 0; i < h->nranks; i++)
		if (h->ranks[i].st != RK_EXITED && h->ranks[i].st != RK_NONE)
			sim_rank_exit(s, h, i, 15);
}

static void carry_out(struct sim *s, struct sim_host *h)
{
	struct dp_out *o = &h->out;
	int reach = sim_host_reaches(s, h);
	char key[DEC_KEY_LEN * 3];

	for (int i = 0; i < o->nwrites && reach; i++) {
		const struct dp_write *w = &o->writes[i];

		snprintf(key, sizeof(key), "%sruns/%d/%s", SIM_PREFIX, SIM_RUN, w->rel);
		if (w->claim) {
			if (ss_claim(&s->st, s->now, key, w->value, 0))
				sim_trace(s, "%s claims %s %s", h->cfg.node, w->rel, w->value);
		} else if (!w->leased) {
			ss_put(&s->st, s->now, key, w->value, 0);
		} else if (ss_lease_left(&s->st, s->now, h->lease) >= 0) {
			ss_put(&s->st, s->now, key, w->value, h->lease);
		}
	}
	for (int i = 0; i < o->nacts; i++) {
		const struct dp_act *a = &o->acts[i];

		switch (a->kind) {
		case DP_ACT_SIGNAL:
			if (a->rank >= 0 && a->rank < h->nranks) {
				sim_trace(s, "%s signals rank %d (%d): %s", h->cfg.node,
					  h->ranks[a->rank].id, a->sig, a->why);
				sim_rank_exit(s, h, a->rank, a->sig);
			}
			break;
		case DP_ACT_STOP_LAUNCHER:
			stop_launcher(s, h);
			break;
		case DP_ACT_LOG_DECISION:
			sim_trace(s, "%s decision %s (gen %llu)", h->cfg.node, a->why,
				  (unsigned long long)h->rec.gen);
			break;
		case DP_ACT_FENCED:
			sim_event(s, EV_FENCED, h->idx, -1, h->rec.gen, 0);
			sim_trace(s, "%s fenced", h->cfg.node);
			break;
		case DP_ACT_UNAVAILABLE:
		case DP_ACT_PREEMPTION_LOST:
		case DP_ACT_CKPT_FAILED:
			sim_event(s, EV_PLOST, h->idx, -1, h->rec.gen, a->kind);
			sim_trace(s, "%s %s: %s", h->cfg.node,
				  a->kind == DP_ACT_CKPT_FAILED ? "checkpoint failed"
				  : a->kind == DP_ACT_UNAVAILABLE ? "unavailable"
								  : "preemption lost",
				  a->why);
			break;
		case DP_ACT_HOLD:
			sim_event(s, EV_HOLD, h->idx, -1, h->rec.gen, a->sig);
			sim_trace(s, "%s hold %d: %s", h->cfg.node, a->sig, a->why);
			break;
		case DP_ACT_HEALTH_CHECK:
			break;
		}
	}
	o->nacts = o->nwrites = 0;
}

/* dc_write_slot: what each live rank is told, and the agent's own acknowledgement */
static void write_slots(struct sim_host *h, const struct dp_rank *rk, int hold_only)
{
	for (int i = 0; i < h->nranks; i++) {
		struct sim_rank *k = &h->ranks[i];
		struct ftbpf_slot_decision x;

		if (k->st == RK_EXITED || k->st == RK_NONE)
			continue;
		if (hold_only) {
			k->hold = (uint32_t)h->mem.held;
			continue;
		}
		dp_slot(&h->cfg, &h->rec, &h->mem, &rk[i], &x);
		x.seq = 0;
		k->dec = x;
		k->dec_written = 1;
		k->own_generation = k->generation;
		k->hold = (uint32_t)h->mem.held;
		k->settling = (uint32_t)dp_settling(&h->cfg, &h->rec, &h->mem, rk, h->nranks);
		if (x.ckpt_state == FTBPF_CK_PENDING && k->dec_ack_id != x.ckpt_id) {
			k->dec_ack_step = (k->step < 0 ? 0 : k->step) + 1;
			k->dec_ack_id = x.ckpt_id;
		}
	}
}

/* decide_on_signal */
static void on_signal(struct sim *s, struct sim_host *h, struct dp_rank *rk, const struct sim_sig *g,
		      const struct dp_now *now)
{
	struct dp_local l;
	int64_t step;
	int p;

	if (h->ranks[g->rank].st == RK_EXITED)
		return; /* its end is what the agent sees */
	p = dp_is_preemption(&h->cfg, &h->rec, &h->mem, rk, h->nranks, g->rank, g->sig, g->sender,
			     AGENT_PID);
	if (p == 0)
		return;
	rk[g->rank].preempted = 1;
	if (p < 0) {
		sim_event(s, EV_IGNORED, h->idx, h->ranks[g->rank].id, h->rec.gen, 0);
		return;
	}
	dp_local(rk, h->nranks, -1, &l);
	if (dp_request_checkpoint(&h->cfg, &h->rec, &h->mem, &l, DEC_CAUSE_PREEMPTION,
				  "preemption signal", now, &step, &h->out) == -EAGAIN) {
		sim_event(s, EV_PLOST, h->idx, -1, h->rec.gen, DP_ACT_UNAVAILABLE);
		sim_trace(s, "%s preemption: the store cannot be reached", h->cfg.node);
	}
}

void sim_host_signal(struct sim *s, struct sim_host *h, int rank, int sig, uint32_t sender)
{
	(void)s;
	if (h->nsig == h->sig_cap) {
		h->sig_cap = h->sig_cap ? h->sig_cap * 2 : 16;
		h->sigq = realloc(h->sigq, sizeof(*h->sigq) * (size_t)h->sig_cap);
		if (!h->sigq)
			abort();
	}
	h->sigq[h->nsig++] = (struct sim_sig){rank, sig, sender};
}

void sim_host_look(struct sim *s, struct sim_host *h)
{
	struct mirror mi = {s, h};
	struct dp_rank rk[64];
	struct dp_look_in in = {0};
	struct dp_look_res res;

	if (h->dead || !h->agent_up || s->now < h->paused_until || s->now < h->next_look)
		return;
	h->next_look = s->now + (uint64_t)sim_range(&s->rng, s->look_min, s->look_max);
	in.now.mono_ms = sim_mono(s, h);
	in.now.wall_ms = sim_wall(s, h);
	if (!h->run && sim_host_reaches(s, h) && h->mirror_rev)
		h->run = SIM_RUN; /* the run is chosen from the store's records (one run here) */
	load(s, h, &mi);
	/* registrations: a rank's generation is the one its agent reads then */
	for (int i = 0; h->run && i < h->nranks; i++)
		if (h->ranks[i].st == RK_STARTING && !h->ranks[i].dec_written)
			h->ranks[i].generation = h->rec.gen;
	gather(s, h, rk);
	if (!h->run) { /* hold_without_run */
		dp_fence(&h->cfg, &h->rec, &h->mem, rk, h->nranks, &h->out);
		carry_out(s, h);
		scatter(h, rk);
		if (h->mem.held || h->rec.reachable)
			write_slots(h, rk, 1);
		h->nsig = 0; /* no run: a signal cannot be claimed (said) */
		return;
	}
	for (int i = 0; i < h->nsig; i++)
		on_signal(s, h, rk, &h->sigq[i], &in.now);
	h->nsig = 0;
	in.own_lease = h->lease;
	in.lease_left = lease_left;
	in.ctx = &mi;
	dp_look(&h->cfg, &h->rec, &h->mem, rk, h->nranks, &in, &h->out, &res);
	carry_out(s, h);
	scatter(h, rk);
	write_slots(h, rk, 0);
}

/* An operator's checkpoint request through this host's agent (ftbpf checkpoint). */
void sim_host_operator(struct sim *s, struct sim_host *h)
{
	struct mirror mi = {s, h};
	struct dp_rank rk[64];
	struct dp_local l;
	struct dp_now now = {sim_mono(s, h), sim_wall(s, h)};
	int64_t step;

	if (h->dead || !h->agent_up || s->now < h->paused_until || !h->run)
		return;
	load(s, h, &mi);
	gather(s, h, rk);
	dp_local(rk, h->nranks, -1, &l);
	dp_request_checkpoint(&h->cfg, &h->rec, &h->mem, &l, DEC_CAUSE_OPERATOR, "operator", &now,
			      &step, &h->out);
	carry_out(s, h);
}

void sim_host_agent_restart(struct sim *s, struct sim_host *h)
{
	sim_trace(s, "%s agent restarts", h->cfg.node);
	dp_memory_clear(&h->mem);
	dr_clear(&h->rec);
	h->rec.last_complete = -1;
	h->run = 0;
	h->lease = 0;
	h->last_ok_mono = h->lease_renewed_mono = 0;
	h->opened_mono = sim_mono(s, h);
	h->mirror_rev = 0;
	h->nsig = 0;
	h->agent_up = 1;
	h->paused_until = 0;
	for (int i = 0; i < h->nranks; i++) { /* adopted again: their slots say their generation */
		struct sim_rank *k = &h->ranks[i];

		k->generation = k->own_generation;
		k->preempted = k->killed_by_agent = k->fail_seen = 0;
		k->dec_ack_id = 0;
	}
}

void sim_host_kill(struct sim *s, struct sim_host *h)
{
	sim_trace(s, "%s dies", h->cfg.node);
	for (int i = 0; i < h->nranks; i++)
		sim_rank_exit(s, h, i, 9);
	h->dead = 1;
	h->agent_up = 0;
	h->launcher_up = 0;
}

/* ---- the ranks: the client library's side ---- */
static void after_step(struct sim *s, struct sim_host *h, int i)
{
	struct sim_rank *k = &h->ranks[i];

	if (k->dec.action != FTBPF_ACT_NONE) {
		sim_rank_exit(s, h, i, (int)(k->dec.exit_code & 0xff) << 8);
		return;
	}
	k->next_ms = s->now + (uint64_t)sim_range(&s->rng, k->step_ms * 9 / 10, k->step_ms * 11 / 10);
}

static void rank_step(struct sim *s, struct sim_host *h, int i)
{
	struct sim_rank *k = &h->ranks[i];
	int wait;

	switch (k->st) {
	case RK_STARTING: /* restart_info: registered, and not settling (10 s at most) */
		if (!k->dec_written)
			return;
		if (k->settling) {
			if (!k->settle_since)
				k->settle_since = s->now;
			if (s->now - k->settle_since < 10000)
				return;
		}
		k->trained_gen = k->dec.generation;
		k->step = k->dec.resume_step;
		k->st = RK_TRAINING;
		k->next_ms = s->now + (uint64_t)k->step_ms;
		sim_event(s, EV_START, h->idx, k->id, k->dec.generation, k->dec.resume_step);
		if (k->trained_gen < 256)
			s->started[k->trained_gen]++;
		sim_trace(s, "%s rank %d starts in gen %llu from step %lld%s", h->cfg.node, k->id,
			  (unsigned long long)k->dec.generation, (long long)k->dec.resume_step,
			  k->settling ? " (still settling)" : "");
		return;
	case RK_SAVING:
		if (s->now < k->next_ms)
			return;
		/* ftbpf_saved_gen: fenced with its ticket */
		if (k->dec.generation != k->ticket_gen || k->own_generation != k->ticket_gen ||
		    k->dec.action == FTBPF_ACT_STOP || k->hold) {
			k->failed_step = (uint64_t)k->step + 1;
		} else {
			k->failed_step = 0;
			k->saved_generation = k->ticket_gen + 1;
			k->saved_step = k->step;
			sim_event(s, EV_SAVE, h->idx, k->id, k->ticket_gen, k->step);
		}
		k->st = RK_TRAINING;
		after_step(s, h, i);
		return;
	case RK_TRAINING:
		break;
	default:
		return;
	}
	if (s->now < k->next_ms)
		return;
	if (!k->wait_since) {
		int c = 0;

		while (c < s->ncg && s->cg_gen[c] != k->trained_gen)
			c++;
		/* in a collective with the others of its generation: they all started, none is
		 * behind */
		if (c < s->ncg && ((k->trained_gen < 256 && s->started[k->trained_gen] < s->cg_world[c]) ||
				   k->step > s->cg_min[c])) {
			uint64_t b = k->trained_gen < 256 ? s->broken_at[k->trained_gen] : 0;

			if (b && s->now - b > (uint64_t)s->nccl_ms) /* the collective timed out */
				sim_rank_exit(s, h, i, 1 << 8);
			return;
		}
		k->step++; /* a step trained: its boundary (should_save) */
	}
	wait = k->hold != 0;
	if (k->dec.action == FTBPF_ACT_NONE && k->dec.ckpt_state == FTBPF_CK_PENDING) {
		if (k->ack_id != k->dec.ckpt_id) {
			k->ack_step = k->step;
			k->ack_id = k->dec.ckpt_id;
		} else if (k->ack_step < k->step) {
			wait = 1;
		}
	}
	if (k->dec.action != FTBPF_ACT_NONE)
		wait = 0;
	if (wait) {
		if (!k->wait_since)
			k->wait_since = s->now;
		if (s->now - k->wait_since <= 60000)
			return;
	}
	k->wait_since = 0;
	if (k->dec.ckpt_state == FTBPF_CK_REQUESTED && k->dec.ckpt_step == k->step &&
	    k->saved_step < k->step) {
		k->saving_step = k->step;
		k->ticket_gen = k->own_generation;
		k->st = RK_SAVING;
		k->next_ms = s->now + (uint64_t)sim_range(&s->rng, 50, 400);
		return;
	}
	after_step(s, h, i);
}

void sim_ranks_step(struct sim *s, struct sim_host *h)
{
	for (int i = 0; i < h->nranks && !h->dead; i++)
		rank_step(s, h, i);
}

/* torchrun: a rank ended, the others are ended and all restart (a stop code: none does) */
void sim_launcher(struct sim *s, struct sim_host *h)
{
	int ended = 0, live = 0, stop = 0;

	if (!h->launcher_up || h->dead)
		return;
	if (h->relaunch_at) {
		if (s->now < h->relaunch_at)
			return;
		h->relaunch_at = 0;
		h->restarts++;
		for (int i = 0; i < h->nranks; i++)
			rank_fresh(s, h, &h->ranks[i], h->base_rank + i);
		sim_event(s, EV_RELAUNCH, h->idx, -1, 0, h->restarts);
		sim_trace(s, "%s launcher restarts its ranks (%d)", h->cfg.node, h->restarts);
		return;
	}
	for (int i = 0; i < h->nranks; i++) {
		ended += h->ranks[i].st == RK_EXITED;
		live += h->ranks[i].st != RK_EXITED && h->ranks[i].st != RK_NONE;
		stop |= h->ranks[i].st == RK_EXITED && h->ranks[i].wait_status == (93 << 8);
	}
	if (!ended)
		return;
	for (int i = 0; i < h->nranks; i++) /* the agent sees its SIGTERMs, then the ends */
		if (h->ranks[i].st != RK_EXITED && h->ranks[i].st != RK_NONE)
			sim_host_signal(s, h, i, 15, (uint32_t)h->launcher_pid);
	for (int i = 0; i < h->nranks; i++)
		if (h->ranks[i].st != RK_EXITED && h->ranks[i].st != RK_NONE)
			sim_rank_exit(s, h, i, 15);
	(void)live;
	if (stop || h->restarts >= h->max_restarts) {
		h->launcher_up = 0;
		sim_trace(s, "%s launcher ends (%s)", h->cfg.node, stop ? "stop" : "restarts spent");
		return;
	}
	h->relaunch_at = s->now + (uint64_t)sim_range(&s->rng, 500, 3000);
}

/* A preemption: the scheduler's SIGTERM to the host's ranks (they survive it: a handler). */
void sim_preempt(struct sim *s, struct sim_host *h)
{
	h->nppid = 0;
	h->pkill_at = s->now + 30000;
	for (int i = 0; i < h->nranks; i++) {
		struct sim_rank *k = &h->ranks[i];

		if (k->st == RK_EXITED || k->st == RK_NONE || h->dead)
			continue;
		sim_event(s, EV_PREEMPT, h->idx, k->id, k->generation, 0);
		if (h->nppid < 64)
			h->ppid[h->nppid++] = k->pid;
		if (h->agent_up)
			sim_host_signal(s, h, i, 15, SCHEDULER_PID);
	}
}

void sim_collectives(struct sim *s)
{
	s->ncg = 0;
	for (int i = 0; i < s->nhosts; i++)
		for (int r = 0; r < s->hosts[i].nranks; r++) {
			const struct sim_rank *k = &s->hosts[i].ranks[r];
			int c = 0;

			if (k->st != RK_TRAINING && k->st != RK_SAVING)
				continue;
			while (c < s->ncg && s->cg_gen[c] != k->trained_gen)
				c++;
			if (c == s->ncg) {
				char key[DEC_KEY_LEN * 2], rel[DEC_KEY_LEN];
				const char *v;
				struct dec_gen g;

				if (c == 16)
					continue;
				s->ncg++;
				s->cg_gen[c] = k->trained_gen;
				s->cg_min[c] = k->step;
				s->cg_n[c] = 0;
				s->cg_world[c] = s->world;
				dec_key_gen(rel, sizeof(rel), k->trained_gen);
				snprintf(key, sizeof(key), "%sruns/%d/%s", SIM_PREFIX, SIM_RUN, rel);
				if (k->trained_gen && (v = ss_get_at(&s->st, key, UINT64_MAX)) &&
				    dec_gen_parse(v, &g) == 0 && g.world > 0)
					s->cg_world[c] = g.world;
			}
			s->cg_n[c]++;
			if (k->step < s->cg_min[c])
				s->cg_min[c] = k->step;
		}
}
