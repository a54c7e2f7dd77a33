/* The decision policy, pure: see decide_policy.h and docs/decisions.md. */
#include "lib/decide_policy.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define CLAIM_RETRY_MS 1000 /* a claim not seen in the store by then is made again */
/* a preemption is agreed on this long after its signal at most (a scheduler's grace is 30 s to
 * 2 min): later, an event says it ended in no checkpoint */
#define DP_PREEMPT_WAIT_MS 120000

/* ---- out ---- */
static struct dp_act *act(struct dp_out *out, enum dp_act_kind kind, int rank, int sig,
			  const char *why)
{
	struct dp_act *a;

	if (out->nacts == DP_MAX_ACTS)
		return NULL;
	a = &out->acts[out->nacts++];
	a->kind = kind;
	a->rank = rank;
	a->sig = sig;
	snprintf(a->why, sizeof(a->why), "%s", why ? why : "");
	return a;
}

/* A write of rel; its value is formatted into the returned slot (NULL: no room). */
static struct dp_write *write_of(struct dp_out *out, int claim, int leased)
{
	struct dp_write *w;

	if (out->nwrites == DP_MAX_PUTS)
		return NULL;
	w = &out->writes[out->nwrites];
	memset(w, 0, sizeof(*w));
	w->claim = claim;
	w->leased = leased;
	return w;
}

static void commit_write(struct dp_out *out)
{
	out->nwrites++;
}

/* ---- small rules ---- */
int dp_abnormal_exit(const struct dp_config *c, const struct dp_rank *k)
{
	int sig = k->wait_status & 0x7f, code = (k->wait_status >> 8) & 0xff;

	if (!k->exited || k->killed_by_agent)
		return 0;
	if (sig)
		return !(k->preempted && (c->preempt_mask & (1ull << sig)));
	return code != 0 && code != c->restart_exit_code && code != c->stop_exit_code;
}

int dp_started_since(const struct dp_rank *k, uint64_t mono_ms)
{
	if (!k->started_known)
		return 0;
	return k->start_ms + 10 >= mono_ms;
}

int dp_excluded(const struct dec_gen *g, const char *node)
{
	for (int i = 0; i < g->nexcluded; i++)
		if (!strcmp(g->excluded[i], node))
			return 1;
	return 0;
}

int dp_left_out(const struct dp_records *r, const char *node)
{
	if (r->gen && dp_excluded(&r->g, node))
		return 1;
	for (int i = 0; i < r->nout; i++)
		if (!strcmp(r->out[i], node))
			return 1;
	return 0;
}

/* Is the completed checkpoint the preemption's last one: any, without a grace period; with
 * one, the last save claimed before it ends (a first save's completion is not the end)? */
static int final_done(const struct dp_config *c, const struct dp_records *r,
		      const struct dp_memory *m)
{
	return c->preempt_grace_s <= 0 ||
	       (m->final_ck && r->gen * 1000000 + r->ck_n >= m->final_ck);
}

/* The current request as one number (generation, then request), growing. */
static uint64_t ck_key(const struct dp_records *r)
{
	return r->gen * 1000000 + r->ck_n;
}

/* The current request ended without a checkpoint: a rank's save of its step failed (seen
 * here: dp_request_failed, then remembered). */
static int ck_failed(const struct dp_records *r, const struct dp_memory *m)
{
	return r->ck_n && !r->ck_done && m->failed_ck == ck_key(r);
}

uint32_t dp_told_to_exit(const struct dp_config *c, const struct dp_records *r,
			 const struct dp_memory *m, const struct dp_rank *k)
{
	if (r->gen && r->g.stop)
		return FTBPF_ACT_STOP;
	if (m->fenced || k->generation < r->gen)
		return FTBPF_ACT_RESTART;
	/* a completed preemption checkpoint (after its grace: the last one): the ranks that were
	 * asked */
	if (r->ck_done && r->ck.cause == DEC_CAUSE_PREEMPTION && final_done(c, r, m) &&
	    !dp_started_since(k, m->done_ms))
		return FTBPF_ACT_RESTART;
	return FTBPF_ACT_NONE;
}

int dp_settling(const struct dp_config *c, const struct dp_records *r, const struct dp_memory *m,
		const struct dp_rank *ranks, int n)
{
	if (m->claimed_gen_ms || (r->run && !r->run_known))
		return 1;
	/* no run chosen yet (the store not read: cut off, an agent just started): where a rank
	 * starting now resumes from is not known, and gen 0 / no checkpoint would be a guess */
	for (int i = 0; i < n && !r->run; i++) /* (one registering has a slot, nothing written) */
		if ((ranks[i].registered || ranks[i].has_slot) && !ranks[i].exited)
			return 1;
	for (int i = 0; i < n; i++) /* a failure here that no generation deals with yet */
		if (ranks[i].registered && ranks[i].generation == r->gen &&
		    !(r->gen && r->g.stop) && dp_abnormal_exit(c, &ranks[i]))
			return 1;
	return 0;
}

void dp_slot(const struct dp_config *c, const struct dp_records *r, const struct dp_memory *m,
	     const struct dp_rank *k, struct ftbpf_slot_decision *x)
{
	memset(x, 0, sizeof(*x));
	x->generation = r->gen;
	x->ckpt_step = r->ck_n && r->bound ? r->bind_target : -1;
	x->ckpt_id = r->ck_n;
	x->ckpt_state = !r->ck_n	  ? FTBPF_CK_NONE
			: r->ck_done	  ? FTBPF_CK_COMPLETE
			: ck_failed(r, m) ? FTBPF_CK_FAILED
			: r->bound	  ? FTBPF_CK_REQUESTED
					  : FTBPF_CK_PENDING;
	/* I3: every rank of a generation resumes from the step the generation began with */
	x->resume_step = r->gen ? r->g.resume_step : r->run_resume;
	x->cause = r->gen ? (uint32_t)r->g.cause : FTBPF_CAUSE_NONE;
	x->nexcluded = r->gen ? (uint32_t)r->g.nexcluded : 0;
	for (uint32_t i = 0; i < x->nexcluded; i++)
		memcpy(x->excluded[i], r->g.excluded[i], DEC_NODE_LEN);
	x->action = dp_told_to_exit(c, r, m, k);
	x->exit_code =
	    (uint32_t)(x->action == FTBPF_ACT_STOP ? c->stop_exit_code : c->restart_exit_code);
}

int64_t dp_request_target(const struct dp_records *r)
{
	return r->ck_n && !r->ck_done && r->bound ? r->bind_target : -1;
}

int dp_done_step(const struct dp_records *r, const struct dec_bind *bind, const char *value,
		 struct dec_done *ret)
{
	struct dec_done dn;

	if (!value || dec_done_parse(value, &dn) < 0)
		return -EINVAL;
	if (r->members_only && !(*dn.by && dp_member(r, dn.by)))
		return -EPERM;
	/* a record merely present is no completion: its step must be the one every rank saved */
	if (!bind || dn.step != bind->target)
		return -ESTALE;
	*ret = dn;
	return 0;
}

int dp_request_done(const struct dp_records *r, const char *value, uint64_t *ret_at_ms)
{
	struct dec_bind b = {.target = r->bind_target};
	struct dec_done dn;

	if (!r->ck_n || !r->bound || dp_done_step(r, &b, value, &dn) < 0)
		return 0;
	if (ret_at_ms)
		*ret_at_ms = dn.at_ms;
	return 1;
}

static int counted(const struct dp_config *c, const struct dp_records *r,
		   const struct dp_node_member *m)
{
	(void)c;
	return m->m.ranks > 0 && !m->m.excluded && !dp_left_out(r, m->node);
}

/* The world size of the current generation, from what its ranks report (0 unknown): the
 * generation's own (its left-out nodes' ranks taken away), less the ranks of nodes lost since
 * as part of the fault that began it, when the ranks still say more. */
static int gen_world(const struct dp_records *r, int w)
{
	int base = w;

	if (r->gen && r->g.world > 0 && (base <= 0 || r->g.world < base))
		base = r->g.world;
	for (int i = 0; base > 0 && i < r->nout; i++)
		base -= r->out_ranks[i];
	if (base < 0)
		base = 0;
	return w > 0 && base > w ? w : base;
}

/* The job's world size: as its nodes' ranks report it (WORLD_SIZE), or smaller when the
 * generation left nodes out and their ranks' launchers were not told (0 unknown). */
/* Does another node's report (r->rep[k]) count? Not this node's own (l is fresher). With the
 * node keys (members_only) a report is its node's word, and any key holder may write one under
 * its own name: only a member's counts, or a node this agent saw as a member that is lost since
 * (m, NULL: none) - its ranks' saves before it died are history, never another job's word. */
static int report_counts(const struct dp_config *c, const struct dp_records *r,
			 const struct dp_memory *m, int k)
{
	const char *node = r->rep[k].node;

	if (!strcmp(node, c->node))
		return 0;
	if (!r->members_only || dp_member(r, node))
		return 1;
	for (int i = 0; m && i < m->nlost; i++)
		if (!strcmp(m->lost[i], node))
			return 1;
	return 0;
}

static int world_of(const struct dp_config *c, const struct dp_records *r,
		    const struct dp_memory *m, const struct dp_local *l)
{
	int w = l->world;

	for (int k = 0; k < r->nrep; k++)
		if (report_counts(c, r, m, k) && r->rep[k].r.world > w)
			w = r->rep[k].r.world;
	return gen_world(r, w);
}

/* The ranks node had when it was left out (a lost node's, or its member record's). */
static int ranks_of(const struct dp_records *r, const struct dp_memory *m, const char *node)
{
	const struct dp_node_member *x = dp_member(r, node);

	for (int i = 0; i < m->nlost; i++)
		if (!strcmp(m->lost[i], node))
			return m->lost_ranks[i];
	return x ? x->m.ranks : 0;
}

int dp_complete(const struct dp_config *c, const struct dp_records *r, const struct dp_memory *m,
		const struct dp_local *l)
{
	int all = 1, nodes = 0, world = world_of(c, r, m, l);
	/* the world counts no rank of a node left out of the generation (gen_world took them
	 * away): a node back in a generation that left it out adds no saves to the sum, never in
	 * place of another rank's (found by the simulator: node_fault_limit, seed 30) */
	int saved = dp_left_out(r, c->node) ? 0 : l->saved;

	if (!r->ck_n || !r->bound || r->mem_short) /* a member not read may not have saved */
		return 0;
	if (world > 0) { /* I2: every rank of the world, on every node, live or not */
		for (int k = 0; k < r->nrep; k++) {
			const struct dec_report *x = &r->rep[k].r;

			if (!report_counts(c, r, m, k))
				continue;
			if (!dp_left_out(r, r->rep[k].node))
				saved += x->saved;
			/* and every rank that runs, on a node that is a member, saved (a node back
			 * in a generation that left it out too) */
			if (x->ranks > 0 && x->saved < x->ranks && dp_member(r, r->rep[k].node))
				all = 0;
		}
		for (int i = 0; i < r->nmem; i++) /* a member with ranks that reported nothing */
			if (strcmp(r->mem[i].node, c->node) && counted(c, r, &r->mem[i]) &&
			    !dp_report(r, r->mem[i].node))
				all = 0;
		return all && l->saved >= l->ranks && saved >= world;
	}
	for (int i = 0; i < r->nmem; i++) {
		const struct dp_node_member *m = &r->mem[i];
		const struct dec_report *x = dp_report(r, m->node);
		int ok = x && x->ranks > 0 && x->saved >= x->ranks;

		if (!counted(c, r, m))
			continue;
		nodes++;
		if (!strcmp(m->node, c->node))
			ok = l->ranks > 0 && l->saved >= l->ranks;
		all &= ok;
	}
	return nodes && all;
}

int dp_request_failed(const struct dp_config *c, const struct dp_records *r,
		      const struct dp_local *l, char *why, size_t len)
{
	const char *node = l->failed ? c->node : NULL;
	int failed = l->failed;

	if (!r->ck_n || !r->bound || r->ck_done)
		return 0;
	for (int k = 0; k < r->nrep && !node; k++)
		/* with node keys a report is its node's word: a failure counts from a member of
		 * the run only (a key holder of another job cannot end this one's requests) */
		if (strcmp(r->rep[k].node, c->node) && r->rep[k].r.failed > 0 &&
		    (!r->members_only || dp_member(r, r->rep[k].node))) {
			node = r->rep[k].node;
			failed = r->rep[k].r.failed;
		}
	if (node)
		snprintf(why, len, "the save of step %lld failed for %d rank(s) on %s",
			 (long long)r->bind_target, failed, node);
	return node != NULL;
}

int dp_all_acked(const struct dp_config *c, const struct dp_records *r, const struct dp_local *l,
		 int64_t *ret_target)
{
	int world = world_of(c, r, NULL, l), acked = l->acked, all = 1, nodes = 0;
	int64_t top = l->max_ack;

	for (int k = 0; k < r->nrep; k++) {
		const struct dec_report *x = &r->rep[k].r;

		if (!report_counts(c, r, NULL, k))
			continue;
		acked += x->acked;
		if (x->max_ack > top)
			top = x->max_ack;
	}
	if (world > 0) {
		all = acked >= world;
		nodes = 1;
	} else {
		for (int i = 0; i < r->nmem; i++) {
			const struct dp_node_member *m = &r->mem[i];
			const struct dec_report *x = dp_report(r, m->node);

			if (!counted(c, r, m))
				continue;
			nodes++;
			if (!strcmp(m->node, c->node))
				all &= l->ranks > 0 && l->acked >= l->ranks;
			else
				all &= x && x->ranks > 0 && x->acked >= x->ranks;
		}
	}
	*ret_target = (top < 0 ? 0 : top) + 1;
	return nodes && all && !r->mem_short;
}

static int in_list(const struct dec_gen *g, const char *node)
{
	return dp_excluded(g, node);
}

int dp_loss_settled(const struct dp_config *c, const struct dp_memory *m, int i,
		    const struct dp_now *now)
{
	uint64_t grace = 2000ull * (uint64_t)(c->lease_ttl_s > 0 ? c->lease_ttl_s : 5);
	uint64_t wait = (uint64_t)(c->recovery_wait_s * 1000);

	if (now->mono_ms - m->lost_ms[i] < wait)
		return 0;
	/* the store was away here: its lease may have expired with everyone's (etcd stopped);
	 * a live agent puts its member again under a new lease meanwhile (dp_vanished). A store
	 * that keeps coming and going defers a loss by two graces at most: a node that could not
	 * put its member again in all that time is lost. */
	if (m->store_down)
		return 0;
	/* a member vanished, and our own lease not renewed since: were leases revoked (etcd
	 * stopped longer than a TTL), ours would be found gone at its next keepalive */
	if (m->own_lease && m->lease_renewed_ms < m->lost_ms[i])
		return 0;
	if (m->store_back_ms && now->mono_ms < m->store_back_ms + grace &&
	    now->mono_ms - m->lost_ms[i] < wait + 2 * grace)
		return 0;
	return 1;
}

void dp_leave_out(const struct dp_config *c, const struct dp_records *r, const struct dp_memory *m,
		  const struct dp_now *now, struct dec_gen *g)
{
	if (g->cause == DEC_CAUSE_NODE_DEAD && *g->node)
		snprintf(g->excluded[g->nexcluded++], DEC_NODE_LEN, "%s", g->node);
	for (int i = 0; i < m->nlost && g->nexcluded < DEC_MAX_EXCLUDED; i++)
		if (!in_list(g, m->lost[i]) && strcmp(m->lost[i], c->node) &&
		    dp_loss_settled(c, m, i, now))
			snprintf(g->excluded[g->nexcluded++], DEC_NODE_LEN, "%s", m->lost[i]);
	for (int i = 0; i < r->nmem && g->nexcluded < DEC_MAX_EXCLUDED; i++)
		if (r->mem[i].m.excluded && !in_list(g, r->mem[i].node))
			snprintf(g->excluded[g->nexcluded++], DEC_NODE_LEN, "%s", r->mem[i].node);
	/* a node that decides alone has nowhere else to run: it never leaves itself out */
	if (*g->node && g->cause != DEC_CAUSE_NODE_DEAD && g->nexcluded < DEC_MAX_EXCLUDED &&
	    c->shared && !in_list(g, g->node)) {
		int faults = 1;

		for (int i = 0; i < r->nfault; i++)
			faults += !strcmp(r->fault_node[i], g->node);
		if (faults >= c->node_fault_limit)
			snprintf(g->excluded[g->nexcluded++], DEC_NODE_LEN, "%s", g->node);
	}
}

int dp_is_preemption(const struct dp_config *c, const struct dp_records *r,
		     const struct dp_memory *m, const struct dp_rank *ranks, int n, int k, int sig,
		     uint32_t sender_pid, uint32_t agent_pid)
{
	/* from outside: not the agent, not the process itself (raise(), or the kernel's timer
	 * enforcement, which signals from the process's own context) */
	if (sig <= 0 || sig > 63 || !(c->preempt_mask & (1ull << sig)) || sender_pid == 0 ||
	    sender_pid == agent_pid || sender_pid == (uint32_t)ranks[k].pid)
		return 0;
	/* not a preemption: the launcher the agent stopped (a failed health check, left out)
	 * passing the SIGTERM on to its workers */
	if (m->stopped_launcher && sender_pid == m->stopped_launcher)
		return -1;
	/* not a preemption: a launcher ending its workers after a failure, or after ranks were
	 * told to exit (a decided restart or stop, a completed preemption: a launcher takes their
	 * exit 42 for a failure too) */
	for (int i = 0; i < n; i++) {
		const struct dp_rank *x = &ranks[i];

		if (x->exited ? x->generation == r->gen && dp_abnormal_exit(c, x)
			      : dp_told_to_exit(c, r, m, x) != FTBPF_ACT_NONE)
			return -1;
	}
	return 1;
}

/* ---- claims ---- */
void dp_claim_ckpt(const struct dp_config *c, const struct dp_records *r, struct dp_memory *m,
		   int64_t target, enum dec_cause cause, const char *why, const struct dp_now *now,
		   struct dp_out *out)
{
	struct dec_ckpt ck = {.generation = r->gen,
			      .id = r->ck_n + 1,
			      .target = target,
			      .cause = cause,
			      .at_ms = now->wall_ms};
	struct dp_write *w;

	if (m->claimed_ck_ms && now->mono_ms - m->claimed_ck_ms < CLAIM_RETRY_MS)
		return;
	if (!(w = write_of(out, 1, 0)))
		return;
	snprintf(ck.by, sizeof(ck.by), "%s", c->node);
	snprintf(ck.why, sizeof(ck.why), "%s", why);
	dec_key_ckpt(w->rel, sizeof(w->rel), ck.generation, ck.id);
	if (dec_ckpt_format(&ck, w->value, sizeof(w->value)) == 0) {
		commit_write(out);
		m->claimed_ck_ms = now->mono_ms;
	}
}

void dp_claim_gen(const struct dp_config *c, const struct dp_records *r, struct dp_memory *m,
		  enum dec_cause cause, const char *node, uint64_t fault_wall_ms, const char *why,
		  const struct dp_now *now, struct dp_out *out)
{
	struct dec_gen g = {.generation = r->gen + 1,
			    .cause = cause,
			    .resume_step = r->last_complete,
			    .at_ms = fault_wall_ms};
	struct dp_write *w;

	if (m->claimed_gen_ms && now->mono_ms - m->claimed_gen_ms < CLAIM_RETRY_MS)
		return;
	if (!(w = write_of(out, 1, 0)))
		return;
	if (r->ck_done && r->bound && r->bind_target > g.resume_step)
		g.resume_step = r->bind_target; /* the last complete one */
	snprintf(g.node, sizeof(g.node), "%s", node ? node : "");
	snprintf(g.by, sizeof(g.by), "%s", c->node);
	snprintf(g.why, sizeof(g.why), "%s", why);
	g.stop =
	    cause != DEC_CAUSE_PREEMPTION &&
	    dec_budget_spent(r->fail_at, r->nfail, g.at_ms, c->max_restarts, c->restart_window_s);
	dp_leave_out(c, r, m, now, &g);
	/* the world it runs with: the last one, less the ranks of the nodes it newly leaves out */
	g.world = gen_world(r, m->world);
	for (int i = 0; g.world > 0 && i < g.nexcluded; i++)
		if (!dp_left_out(r, g.excluded[i]))
			g.world -= ranks_of(r, m, g.excluded[i]);
	if (g.world < 0)
		g.world = 0;
	dec_key_gen(w->rel, sizeof(w->rel), g.generation);
	if (dec_gen_format(&g, w->value, sizeof(w->value)) == 0) {
		commit_write(out);
		m->claimed_gen_ms = now->mono_ms;
	}
}

/* ---- one look ---- */
void dp_observe(struct dp_memory *m, const struct dp_records *r, const struct dp_now *now,
		struct dp_out *out)
{
	if (!r->reachable) {
		m->store_down = 1;
	} else if (m->store_down) {
		m->store_down = 0;
		m->store_back_ms = now->mono_ms;
	}
	/* this agent's lease ran out (it has another): the store was away longer than a TTL, if
	 * too briefly to be seen unreachable, and every lease may have run out with it */
	if (r->lease && m->own_lease && r->lease != m->own_lease)
		m->store_back_ms = now->mono_ms;
	if (r->lease)
		m->own_lease = r->lease;
	m->lease_renewed_ms = r->lease_renewed_ms;
	if (r->gen > m->seen_gen) {
		m->seen_gen = r->gen;
		m->gen_seen_ms = now->mono_ms;
		m->gen_began_ms = m->looked ? now->mono_ms : 0; /* at our first look: before */
		m->claimed_gen_ms = 0;
		act(out, DP_ACT_LOG_DECISION, -1, 0, "generation");
		/* the losses it left out are dealt with (a node lost again later is a new loss) */
		for (int i = 0; i < m->nlost;)
			if (dp_excluded(&r->g, m->lost[i]))
				dp_forget_lost(m, i);
			else
				i++;
	}
	if (r->ck_n && r->gen * 1000000 + r->ck_n > m->seen_ck) {
		m->seen_ck = r->gen * 1000000 + r->ck_n;
		m->claimed_ck_ms = 0;
		/* with preempt_grace, a preemption's save after its first one completed is its
		 * last, whichever node claimed it: none is claimed again */
		if (r->ck.cause == DEC_CAUSE_PREEMPTION && m->preempt_saved && !m->final_ck) {
			m->final_claimed = 1;
			m->final_ck = m->seen_ck;
		}
		m->req_ms = m->req_ms ? m->req_ms : now->mono_ms;
		act(out, DP_ACT_LOG_DECISION, -1, 0, "checkpoint");
	}
	if (r->ck_done && r->gen * 1000000 + r->ck_n > m->seen_done) {
		m->seen_done = r->gen * 1000000 + r->ck_n;
		if (!m->done_ms)
			m->done_ms = now->mono_ms;
		m->preempt_saved = r->ck.cause == DEC_CAUSE_PREEMPTION;
		act(out, DP_ACT_LOG_DECISION, -1, 0, "checkpoint_complete");
	}
	if (r->reachable)
		m->looked = 1;
}

/* Do other nodes have ranks of the job? Their member records say so; with none read (an agent
 * started while cut off: no run known), the ranks' world does: a rank of it not here (live or
 * ended, an incarnation counted once) runs elsewhere. */
static int other_members(const struct dp_config *c, const struct dp_records *r,
			 const struct dp_rank *ranks, int n)
{
	int world = 0, here = 0;

	for (int i = 0; i < r->nmem; i++)
		if (r->mem[i].m.ranks > 0 && strcmp(r->mem[i].node, c->node))
			return 1;
	if (r->nmem)
		return 0;
	for (int i = 0; i < n; i++) {
		int seen = 0;

		if (ranks[i].world_size > world)
			world = ranks[i].world_size;
		for (int k = 0; k < i && !seen; k++)
			seen = ranks[k].rank == ranks[i].rank;
		here += !seen;
	}
	return world > here;
}

int dp_fence(const struct dp_config *c, const struct dp_records *r, struct dp_memory *m,
	     struct dp_rank *ranks, int n, struct dp_out *out)
{
	if (!c->shared)
		return 0;
	if (r->reachable) {
		if (m->held)
			act(out, DP_ACT_HOLD, -1, 0, "the store is reachable again");
		m->fenced = m->held = 0;
		m->guess_ms = 0;
		return 0;
	}
	if (m->fenced)
		return 1;
	if (!other_members(c, r, ranks, n)) {
		/* no member record read, and every rank of the world is here now (the last of a
		 * job's ranks registered after the first look): it holds no longer */
		if (m->held && !r->nmem) {
			m->held = 0;
			act(out, DP_ACT_HOLD, -1, 0, "every rank of the job runs here");
		}
		m->guess_ms = 0;
		return 0;
	}
	/* with no member record the ranks' world is a guess (ranks still registering look like
	 * ranks elsewhere): it ends them only once it said so for fence_after itself */
	if (!r->nmem && !m->guess_ms)
		m->guess_ms = r->unreachable_ms + 1;
	if (!m->held && r->unreachable_ms >= (uint64_t)(c->hold_after_s * 1000)) {
		m->held = 1; /* I6: before the others may act without us (our lease runs out) */
		act(out, DP_ACT_HOLD, -1, 1, "the store cannot be reached");
	}
	if (r->unreachable_ms < (uint64_t)(c->fence_after_s * 1000))
		return m->held;
	if (!r->nmem && r->unreachable_ms + 1 - m->guess_ms < (uint64_t)(c->fence_after_s * 1000))
		return m->held;
	m->fenced = 1;
	act(out, DP_ACT_FENCED, -1, 0, "");
	for (int i = 0; i < n; i++)
		if (!ranks[i].exited) {
			ranks[i].killed_by_agent = 1;
			act(out, DP_ACT_SIGNAL, i, 15, "fenced");
		}
	return 1;
}

void dp_member_record(const struct dp_config *c, const struct dp_records *r,
		      const struct dp_memory *m, const struct dp_local *l, int64_t lease,
		      struct dp_out *out)
{
	struct dec_member me = {.ranks = l->ranks,
				.generation = r->gen,
				.excluded = m->health_failed,
				.lease = lease,
				.lease_ttl_s = c->lease_ttl_s};
	struct dp_write *w;

	snprintf(me.mesh, sizeof(me.mesh), "%s", c->mesh);
	if (!l->ranks && !dp_member(r, c->node))
		return;
	if (!(w = write_of(out, 0, 1)))
		return;
	dec_key_member(w->rel, sizeof(w->rel), c->node);
	if (dec_member_format(&me, w->value, sizeof(w->value)) == 0)
		commit_write(out);
}

void dp_first_generation(const struct dp_records *r, struct dp_rank *ranks, int n)
{
	for (int i = 0; i < n && r->run; i++)
		if (ranks[i].gen_unknown) {
			ranks[i].generation = r->gen;
			ranks[i].gen_unknown = 0;
		}
}

void dp_apply_generation(const struct dp_config *c, const struct dp_records *r, struct dp_memory *m,
			 struct dp_rank *ranks, int n, struct dp_out *out)
{
	int left_out = r->gen && dp_excluded(&r->g, c->node), older = 0;
	uint64_t since = m->gen_seen_ms ? m->gen_seen_ms : UINT64_MAX; /* unseen: none is new */

	uint64_t prev = m->applied_gen;

	if (m->applied_gen >= r->gen)
		return;
	m->applied_gen = r->gen;
	/* I7: ranks started since the fault are of the new generation, on this host's monotonic
	 * clock: since it saw the decision, or since a rank here of the generation it ends failed
	 * on its own (what a launcher restarts its ranks after, before the decision reached us;
	 * not a failure of an earlier generation, already dealt with) */
	for (int i = 0; i < n; i++)
		if (ranks[i].exited && ranks[i].exit_ms && ranks[i].generation >= prev &&
		    ranks[i].generation < r->gen && ranks[i].exit_ms < since &&
		    dp_abnormal_exit(c, &ranks[i]))
			since = ranks[i].exit_ms;
	/* the same, remembered: the ranks that failed may be gone from the table already */
	if (m->fail_ms && m->fail_gen >= prev && m->fail_gen < r->gen && m->fail_ms < since)
		since = m->fail_ms;
	/* a preemption's: its ranks were told to exit once its checkpoint was complete here,
	 * their launcher restarts them after (before the decision reached us) */
	if (r->g.cause == DEC_CAUSE_PREEMPTION && m->preempt_saved && m->done_ms &&
	    m->seen_done / 1000000 + 1 == r->gen && m->done_ms < since)
		since = m->done_ms;
	m->fail_ms = m->fail_gen = 0;
	m->final_claimed = 0;
	m->final_ck = 0;
	m->preempt_saved = 0;
	m->req_ms = m->done_ms = 0;
	m->retargets = 0;
	m->launcher_stopped = 0;
	for (int i = 0; i < n; i++) {
		struct dp_rank *k = &ranks[i];

		if (k->exited || k->generation >= r->gen)
			continue;
		if (!r->g.stop && dp_started_since(k, since)) {
			/* restarted after the fault: of the new generation */
			k->generation = r->gen;
			continue;
		}
		if (r->g.cause == DEC_CAUSE_PREEMPTION)
			continue; /* they saved and exit by themselves (their slot says so) */
		k->killed_by_agent = 1;
		act(out, DP_ACT_SIGNAL, i, 15, r->g.stop ? "stop" : "restart");
		older = 1;
	}
	/* left out, or the end: stop the launcher of the ranks that were in the job, if ended
	 * here now (a node that comes back later, with ranks of the new generation, rejoins; an
	 * agent restarted after the decision has nothing to stop) */
	if (older && (left_out || r->g.stop))
		act(out, DP_ACT_STOP_LAUNCHER, -1, 0, left_out ? "left_out" : "stop");
	else if (!r->g.stop && c->health_check && r->g.cause != DEC_CAUSE_PREEMPTION)
		act(out, DP_ACT_HEALTH_CHECK, -1, 0, "");
}

/* What a failure of rank k is called in its generation's record. */
static void failure_why(const struct dp_config *c, const struct dp_rank *k, char *why, size_t len)
{
	int sig = k->wait_status & 0x7f;

	snprintf(why, len, "rank %d (pid %d) on %s ended: %s %d", k->rank, k->pid, c->node,
		 sig ? "signal" : "exit code", sig ? sig : (k->wait_status >> 8) & 0xff);
}

/* Remember when a rank of the current generation failed here, the first such failure: the
 * ranks that failed may be forgotten (a relaunch's new run) before a generation deals with it. */
static void note_failure(const struct dp_config *c, const struct dp_records *r, struct dp_memory *m,
			 const struct dp_rank *k, const struct dp_now *now)
{
	if (k->generation != r->gen || !k->registered || !k->exit_ms || !dp_abnormal_exit(c, k))
		return;
	if (m->fail_gen != r->gen)
		m->fail_ms = 0;
	if (!m->fail_ms || k->exit_ms < m->fail_ms) {
		m->fail_ms = k->exit_ms;
		m->fail_gen = r->gen;
		m->fail_wall_ms = k->exit_wall_ms ? k->exit_wall_ms : now->wall_ms;
		failure_why(c, k, m->fail_why, sizeof(m->fail_why));
	}
}

void dp_failures(const struct dp_config *c, const struct dp_records *r, struct dp_memory *m,
		 struct dp_rank *ranks, int n, const struct dp_hang *hang, const struct dp_now *now,
		 struct dp_out *out)
{
	char why[DEC_WHY_LEN];

	for (int i = 0; i < n; i++) {
		struct dp_rank *k = &ranks[i];

		/* claimed until a generation that deals with it is in the store (a claim that
		 * expired while the store was away is made again: a failure is not one-shot) */
		if (k->generation != r->gen || !k->registered || !dp_abnormal_exit(c, k))
			continue;
		k->fail_seen = 1;
		for (int f = i; f < n; f++) /* remember the first (dp_apply_generation) */
			note_failure(c, r, m, &ranks[f], now);
		failure_why(c, k, why, sizeof(why));
		dp_claim_gen(c, r, m, DEC_CAUSE_RANK_DIED, c->node,
			     k->exit_wall_ms ? k->exit_wall_ms : now->wall_ms, why, now, out);
		return;
	}
	/* the ranks that failed are forgotten here, the failure is not */
	if (m->fail_ms && m->fail_gen == r->gen) {
		dp_claim_gen(c, r, m, DEC_CAUSE_RANK_DIED, c->node, m->fail_wall_ms, m->fail_why,
			     now, out);
		return;
	}
	/* a stall that began before the current generation did is the one it deals with (its
	 * ranks still hung are being ended: a hang claimed again at each look until they were gone
	 * spent the whole restart budget in 100 ms); one that began since is a new hang, whether
	 * or not its ranks registered yet */
	if (hang && m->applied_gen == r->gen &&
	    !(m->gen_began_ms && hang->stalled_ms < now->mono_ms &&
	      now->mono_ms - hang->stalled_ms < m->gen_began_ms)) {
		/* the culprit's node is charged, not the one that noticed first; a host that is
		 * no member of the job's decisions cannot be: this node is, the why names it */
		const char *at = hang->node && *hang->node ? hang->node : NULL;
		const char *node = at ? dp_node_by_mesh(r, at) : c->node;

		if (!node && !strcmp(at, c->mesh))
			node = c->node;
		snprintf(why, sizeof(why), "hard timeout on %.*s%s: %s", DEC_NODE_LEN - 1,
			 node ? node : at, node ? "" : " (no member)", hang->why ? hang->why : "");
		dp_claim_gen(c, r, m, DEC_CAUSE_HANG, node ? node : c->node, now->wall_ms, why, now,
			     out);
		return;
	}
	/* members lost: their lease expired, or the mesh declared them dead and their lease
	 * confirmed it (both witnessed by the store: no wait for a refutation) */
	for (int i = 0; i < m->nlost; i++) {
		if (!strcmp(m->lost[i], c->node) || !dp_loss_settled(c, m, i, now))
			continue;
		if (m->lost_gen[i] < r->gen) {
			/* lost with ranks of an older generation: part of the fault that began this
			 * one (a host dying: its ranks' peers failed first). One fault, one
			 * generation: it is left out of this one as it runs */
			struct dp_write *w;

			if (!dp_left_out(r, m->lost[i]) &&
			    (w = write_of(out, !dp_out_refused(r, m->lost[i]), 0))) {
				struct dec_out x = {.ranks = m->lost_ranks[i]};

				snprintf(x.by, sizeof(x.by), "%s", c->node);
				dec_key_out(w->rel, sizeof(w->rel), r->gen, m->lost[i]);
				if (dec_out_format(&x, w->value, sizeof(w->value)) == 0)
					commit_write(out);
			}
			continue;
		}
		snprintf(why, sizeof(why), "node %s was lost", m->lost[i]);
		dp_claim_gen(c, r, m, DEC_CAUSE_NODE_DEAD, m->lost[i], m->lost_wall[i], why, now,
			     out);
		return;
	}
}

/* The request is complete (and its grace over): a preemption's ranks exit now, and the next
 * generation begins there, so that every rank of it resumes from that step (I3). */
static void preemption_done(const struct dp_config *c, const struct dp_records *r,
			    struct dp_memory *m, const struct dp_now *now, struct dp_out *out)
{
	char why[DEC_WHY_LEN];

	snprintf(why, sizeof(why), "preempted: every rank saved step %lld",
		 (long long)r->bind_target);
	m->preempt_ms = 0;
	dp_claim_gen(c, r, m, DEC_CAUSE_PREEMPTION, "",
		     r->done_at_ms ? r->done_at_ms : now->wall_ms, why, now, out);
}

void dp_checkpoint_progress(const struct dp_config *c, const struct dp_records *r,
			    struct dp_memory *m, const struct dp_local *l, const struct dp_now *now,
			    struct dp_out *out)
{
	struct dec_report rep = {.ranks = l->ranks,
				 .saved = l->saved,
				 .max_step = l->max_step,
				 .world = l->world,
				 .acked = l->acked,
				 .max_ack = l->max_ack,
				 .missed = l->missed,
				 .failed = l->failed};
	char why[DEC_WHY_LEN];
	struct dp_write *w;
	int64_t target;

	if (!r->ck_n || r->ck_done) {
		if (!r->ck_done || r->ck.cause != DEC_CAUSE_PREEMPTION)
			return;
		/* a preemption with a grace period: a last save before it ends */
		if (!m->final_claimed && c->preempt_grace_s > 0 && m->req_ms && m->done_ms) {
			uint64_t took = m->done_ms - m->req_ms;
			uint64_t at = m->req_ms + (uint64_t)(c->preempt_grace_s * 1000);

			at = at > 2 * took ? at - 2 * took : m->done_ms;
			if (now->mono_ms >= at) {
				m->final_claimed = 1;
				m->final_ck =
				    r->gen * 1000000 + r->ck_n + 1; /* the one claimed now */
				m->retargets = 0;
				dp_claim_ckpt(c, r, m, dec_target(l->max_step, dp_margin(c, m)),
					      DEC_CAUSE_PREEMPTION,
					      "final save before the grace ends", now, out);
			}
			return;
		}
		if (final_done(c, r, m))
			preemption_done(c, r, m, now, out);
		return;
	}
	if ((l->ranks || l->saved) && (w = write_of(out, 0, 0))) {
		dec_key_report(w->rel, sizeof(w->rel), r->gen, r->ck_n, c->node);
		if (dec_report_format(&rep, w->value, sizeof(w->value)) == 0)
			commit_write(out);
	}
	if (!r->bound) { /* acknowledged by every rank: none is past the step bound now */
		if (dp_all_acked(c, r, l, &target) && (w = write_of(out, 1, 0))) {
			struct dec_bind b = {target, now->wall_ms};

			dec_key_bind(w->rel, sizeof(w->rel), r->gen, r->ck_n);
			if (dec_bind_format(&b, w->value, sizeof(w->value)) == 0)
				commit_write(out);
		}
		return;
	}
	if (dp_request_failed(c, r, l, why, sizeof(why))) {
		/* it will never complete: it ends here, and a preemption waiting for it asks for
		 * another one (dp_preemption_pending), an operator's request is not retried */
		if (m->failed_ck != ck_key(r)) {
			m->failed_ck = ck_key(r);
			act(out, DP_ACT_CKPT_FAILED, -1, 0, why);
		}
		return;
	}
	if (l->missed) { /* a rank ran past it (it waited too long for the step): a new request */
		m->retargets++;
		dp_claim_ckpt(c, r, m, dec_target(l->max_step, dp_margin(c, m)), r->ck.cause,
			      "re-targeted: a rank was past the step", now, out);
		return;
	}
	/* claimed; a damaged record in its place is no claim (I2): put over it */
	if (dp_complete(c, r, m, l) && (w = write_of(out, !r->done_refused, 0))) {
		struct dec_done done = {r->bind_target, now->wall_ms, ""};

		snprintf(done.by, sizeof(done.by), "%s", c->node);

		dec_key_done(w->rel, sizeof(w->rel), r->gen, r->ck_n);
		if (dec_done_format(&done, w->value, sizeof(w->value)) == 0)
			commit_write(out);
	}
}

int dp_request_checkpoint(const struct dp_config *c, const struct dp_records *r,
			  struct dp_memory *m, const struct dp_local *l, enum dec_cause cause,
			  const char *why, const struct dp_now *now, int64_t *ret_step,
			  struct dp_out *out)
{
	if (cause == DEC_CAUSE_PREEMPTION && !m->preempt_ms) {
		m->preempt_ms = now->mono_ms; /* I5: until a checkpoint is complete for it */
		m->preempt_gen = r->gen;
		m->preempt_ck = r->ck_n && !r->ck_done && !ck_failed(r, m)
				    ? r->ck_n
				    : r->ck_n + 1; /* one that began */
	}
	if (r->ck_n && !r->ck_done && !ck_failed(r, m))
		return -EBUSY; /* one is in progress: a signal joins it (and waits for its end) */
	if (!r->reachable) {
		act(out, DP_ACT_UNAVAILABLE, -1, 0, "the decision store cannot be reached");
		return -EAGAIN;
	}
	if (cause == DEC_CAUSE_PREEMPTION) {
		m->req_ms = now->mono_ms;
		m->done_ms = 0;
		m->final_claimed = 0;
		m->final_ck = 0;
	}
	m->retargets = 0;
	m->claimed_ck_ms = 0;
	*ret_step = dec_target(l->max_step, dp_margin(c, m));
	dp_claim_ckpt(c, r, m, *ret_step, cause, why, now, out);
	return 0;
}

void dp_preemption_pending(const struct dp_config *c, const struct dp_records *r,
			   struct dp_memory *m, const struct dp_local *l, const struct dp_now *now,
			   struct dp_out *out)
{
	char why[DEC_WHY_LEN];
	int64_t step;

	if (!m->preempt_ms)
		return;
	if (r->ck_n >= m->preempt_ck && r->ck_done) { /* complete (an operator's too): its own */
		/* with preempt_grace, a preemption's own checkpoints go on to the last save
		 * (dp_checkpoint_progress), and the preemption ends with it */
		if (r->ck.cause == DEC_CAUSE_PREEMPTION && !final_done(c, r, m))
			return;
		m->final_claimed = 1;
		preemption_done(c, r, m, now, out);
		return;
	}
	if (now->mono_ms - m->preempt_ms > DP_PREEMPT_WAIT_MS) { /* its grace is long over */
		act(out, DP_ACT_PREEMPTION_LOST, -1, 0,
		    "no checkpoint could be agreed within 120 s of the signal");
		m->preempt_ms = 0;
		return;
	}
	if (r->gen > m->preempt_gen) { /* the job restarts without the checkpoint */
		snprintf(why, sizeof(why),
			 "generation %llu (%s) was decided first: the job resumes from step %lld",
			 (unsigned long long)r->gen, dec_cause_name(r->g.cause),
			 (long long)r->g.resume_step);
		if (r->g.cause != DEC_CAUSE_PREEMPTION)
			act(out, DP_ACT_PREEMPTION_LOST, -1, 0, why);
		m->preempt_ms = 0;
		return;
	}
	if (ck_failed(r, m) && r->ck.cause == DEC_CAUSE_PREEMPTION && m->preempt_saved &&
	    c->preempt_grace_s > 0) {
		/* the last save of a grace failed: the preemption ends with the save completed
		 * before it (the generation resumes from the last complete one) */
		snprintf(why, sizeof(why),
			 "preempted: the last save (step %lld) failed; every rank saved step %lld",
			 (long long)r->bind_target, (long long)r->last_complete);
		m->final_claimed = 1;
		m->preempt_ms = 0;
		dp_claim_gen(c, r, m, DEC_CAUSE_PREEMPTION, "", now->wall_ms, why, now, out);
		return;
	}
	if (ck_failed(r, m) && r->ck_n >= m->preempt_ck)
		m->preempt_ck = r->ck_n + 1; /* its request failed: the next one is its own */
	if (!r->ck_n || (r->ck_done && r->ck_n < m->preempt_ck) || ck_failed(r, m))
		dp_request_checkpoint(c, r, m, l, DEC_CAUSE_PREEMPTION, "preemption signal", now,
				      &step, out);
}
