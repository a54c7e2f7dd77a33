/* The decision policy, pure: the job and its run (its name in the store, which run a launch
 * belongs to, the fencing token), the job's members, and how this node comes to hold one lost
 * (see decide_policy.h and docs/decisions.md: I1, I6). */
#include "lib/decide_policy.h"
#include "lib/growbuf.h"
#include "lib/starttime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dp_node_cmp(const void *key, const void *entry)
{
	return strcmp(key, entry); /* the entry's first field: its node name */
}

const struct dp_node_member *dp_member(const struct dp_records *r, const char *node)
{
	if (!r->nmem)
		return NULL;
	return bsearch(node, r->mem, (size_t)r->nmem, sizeof(r->mem[0]), dp_node_cmp);
}

const struct dec_report *dp_report(const struct dp_records *r, const char *node)
{
	const struct dp_node_report *x;

	if (!r->nrep)
		return NULL;
	x = bsearch(node, r->rep, (size_t)r->nrep, sizeof(r->rep[0]), dp_node_cmp);
	return x ? &x->r : NULL;
}

void dp_memory_clear(struct dp_memory *m)
{
	free(m->prev);
	free(m->lost);
	free(m->lost_ms);
	free(m->lost_wall);
	free(m->lost_gen);
	free(m->lost_ranks);
	free(m->suspect);
	free(m->suspect_ms);
	memset(m, 0, sizeof(*m));
}

/* Room for one more lost node, one more suspect: their tables grown together (the capacity set
 * once all have grown; one grown alone is grown to the same size again at the next try). 0 or
 * -ENOMEM. */
static int lost_room(struct dp_memory *m)
{
	int c[5] = {m->lost_cap, m->lost_cap, m->lost_cap, m->lost_cap, m->lost_cap};
	int n = m->nlost;

	if (growbuf_items((void **)&m->lost, &c[0], n, sizeof(*m->lost)) < 0 ||
	    growbuf_items((void **)&m->lost_ms, &c[1], n, sizeof(*m->lost_ms)) < 0 ||
	    growbuf_items((void **)&m->lost_wall, &c[2], n, sizeof(*m->lost_wall)) < 0 ||
	    growbuf_items((void **)&m->lost_gen, &c[3], n, sizeof(*m->lost_gen)) < 0 ||
	    growbuf_items((void **)&m->lost_ranks, &c[4], n, sizeof(*m->lost_ranks)) < 0)
		return -ENOMEM;
	m->lost_cap = c[0];
	return 0;
}

static int suspect_room(struct dp_memory *m)
{
	int c[2] = {m->suspect_cap, m->suspect_cap};

	if (growbuf_items((void **)&m->suspect, &c[0], m->nsuspect, sizeof(*m->suspect)) < 0 ||
	    growbuf_items((void **)&m->suspect_ms, &c[1], m->nsuspect, sizeof(*m->suspect_ms)) < 0)
		return -ENOMEM;
	m->suspect_cap = c[0];
	return 0;
}

int dp_out_believed(const struct dp_records *r, const struct dec_out *x, int members_only)
{
	return !members_only || (*x->by && dp_member(r, x->by));
}

int dp_out_refused(const struct dp_records *r, const char *node)
{
	for (int i = 0; i < r->nout_refused; i++)
		if (!strcmp(r->out_refused[i], node))
			return 1;
	return 0;
}

const char *dp_node_by_mesh(const struct dp_records *r, const char *addr)
{
	const struct dp_node_member *x;

	for (int i = 0; i < r->nmem; i++)
		if (*r->mem[i].m.mesh && !strcmp(r->mem[i].m.mesh, addr))
			return r->mem[i].node;
	x = dp_member(r, addr);
	return x ? x->node : NULL;
}

void dp_forget_lost(struct dp_memory *m, int i)
{
	m->nlost--;
	m->lost_ms[i] = m->lost_ms[m->nlost];
	m->lost_wall[i] = m->lost_wall[m->nlost];
	m->lost_gen[i] = m->lost_gen[m->nlost];
	m->lost_ranks[i] = m->lost_ranks[m->nlost];
	memcpy(m->lost[i], m->lost[m->nlost], DEC_NODE_LEN);
}

static void forget_suspect(struct dp_memory *m, int i)
{
	m->nsuspect--;
	m->suspect_ms[i] = m->suspect_ms[m->nsuspect];
	memcpy(m->suspect[i], m->suspect[m->nsuspect], DEC_NODE_LEN);
}

/* Node is lost since now; gen: the generation its ranks were in. A node lost with ranks of an
 * older generation than the current one is part of the fault that began it (a host dying: its
 * ranks' peers failed first), not a new one: one fault, one generation (a node that rejoined
 * since, with ranks of this generation, is a new loss). */
static void lost_node(struct dp_memory *m, const struct dp_records *r, const char *node,
		      uint64_t gen, int ranks, uint64_t mono_ms, uint64_t wall_ms)
{
	if (dp_left_out(r, node) && gen < r->gen)
		return; /* dealt with */
	for (int i = 0; i < m->nlost; i++)
		if (!strcmp(m->lost[i], node))
			return;
	if (lost_room(m) == 0) {
		snprintf(m->lost[m->nlost], DEC_NODE_LEN, "%s", node);
		m->lost_gen[m->nlost] = gen;
		m->lost_ranks[m->nlost] = ranks;
		m->lost_wall[m->nlost] = wall_ms;
		m->lost_ms[m->nlost++] = mono_ms;
	}
}

void dp_vanished(const struct dp_config *c, const struct dp_records *r, struct dp_memory *m,
		 const struct dp_now *now)
{
	int n = 0;

	if (r->mem_short)
		return; /* members missing may be alive: the next look, with all of them, decides */
	for (int i = 0; i < m->nprev; i++)
		if (!dp_member(r, m->prev[i].node) && strcmp(m->prev[i].node, c->node))
			lost_node(m, r, m->prev[i].node, m->prev[i].gen, m->prev[i].ranks,
				  now->mono_ms, now->wall_ms);
	/* the table grows with the members; without the memory to, the members beyond it are
	 * not followed until there is (never a crash, never a member taken for lost) */
	for (int i = 0; i < r->nmem; i++)
		if (r->mem[i].m.ranks > 0) {
			if (growbuf_items((void **)&m->prev, &m->prev_cap, n, sizeof(*m->prev)) < 0)
				break;
			m->prev[n].gen = r->mem[i].m.generation;
			m->prev[n].ranks = r->mem[i].m.ranks;
			snprintf(m->prev[n++].node, DEC_NODE_LEN, "%s", r->mem[i].node);
		}
	m->nprev = n;
	/* a lost node that is back (its member key again: its agent reaches the store) is not
	 * lost any more (with a shared store: the mesh alone does not make a node lost) */
	for (int i = 0; i < m->nlost;) {
		if (c->shared && dp_member(r, m->lost[i])) {
			dp_forget_lost(m, i);
			continue;
		}
		i++;
	}
}

static int suspected(const struct dp_memory *m, const char *node)
{
	for (int i = 0; i < m->nsuspect; i++)
		if (!strcmp(m->suspect[i], node))
			return 1;
	return 0;
}

void dp_peer_dead(struct dp_memory *m, const struct dp_records *r, const char *node,
		  const struct dp_now *now)
{
	const struct dp_node_member *x = dp_member(r, node);

	/* the node's lease has the last word (the mesh may have taken another's word, or lost
	 * only UDP): suspect it, and read its lease. Only etcd holds other nodes' members, with
	 * leases: a node deciding alone has no member to lose. */
	if (x && x->m.ranks > 0 && x->m.lease > 0 && !suspected(m, node) && suspect_room(m) == 0) {
		snprintf(m->suspect[m->nsuspect], DEC_NODE_LEN, "%s", node);
		m->suspect_ms[m->nsuspect++] = now->mono_ms;
	}
}

void dp_peer_alive(struct dp_memory *m, const char *node)
{
	for (int s = 0; s < m->nsuspect; s++)
		if (!strcmp(m->suspect[s], node)) {
			forget_suspect(m, s);
			break;
		}
	for (int l = 0; l < m->nlost; l++)
		if (!strcmp(m->lost[l], node)) {
			dp_forget_lost(m, l);
			break;
		}
}

/*
 * I6: a node is lost when its lease expired, never sooner: an agent paused or restarted for
 * less than the lease's TTL keeps its node (the mesh's suspicion only makes us read the lease
 * until it expires or the mesh sees the node again).
 */
void dp_confirm_suspects(struct dp_memory *m, const struct dp_records *r,
			 const struct dp_lease *leases, const struct dp_now *now)
{
	struct dp_lease few[64], *l = few; /* the leases, reordered with the suspects */
	int n = m->nsuspect;

	if (n > 64 && !(l = calloc((size_t)n, sizeof(*l))))
		return; /* read again at the next look */
	memcpy(l, leases, sizeof(l[0]) * (size_t)n);
	for (int i = 0; i < m->nsuspect;) {
		const struct dp_node_member *x = dp_member(r, m->suspect[i]);

		if (!x || x->m.lease <= 0 || now->mono_ms - m->suspect_ms[i] > 60000) {
			l[i] = l[m->nsuspect - 1];
			forget_suspect(m, i); /* gone (dp_vanished has it), or given up */
			continue;
		}
		if (l[i].known && l[i].at_mono >= m->suspect_ms[i] && l[i].left_s < 0) {
			/* lost since the mesh said so */
			lost_node(m, r, m->suspect[i], x->m.generation, x->m.ranks,
				  m->suspect_ms[i],
				  now->wall_ms - (now->mono_ms - m->suspect_ms[i]));
			l[i] = l[m->nsuspect - 1];
			forget_suspect(m, i);
			continue;
		}
		i++;
	}
	if (l != few)
		free(l);
}

static int same_launcher(const struct dp_launch_rank *a, const struct dp_launch_rank *b)
{
	return a->launcher_pid == b->launcher_pid &&
	       starttime_same(a->launcher_start_ns, b->launcher_start_ns);
}

int dp_other_live(const struct dp_launch_rank *others, int n, const struct dp_launch_rank *k)
{
	int replaces = 0;

	for (int i = 0; i < n && k->launcher_pid > 0; i++) {
		const struct dp_launch_rank *o = &others[i];

		replaces |= !o->exited && o->rank == k->rank && !same_launcher(o, k) && o->alive;
	}
	for (int i = 0; i < n; i++) {
		const struct dp_launch_rank *o = &others[i];

		if (o->exited || !o->dec_written || !o->alive)
			continue;
		if (k->launcher_pid > 0 && !same_launcher(o, k) && (replaces || !o->launcher_alive))
			continue;
		return 1;
	}
	return 0;
}

/* ---- the job and its run ---- */
static int loopback(const char *addr, size_t n)
{
	return n == 0 || (n >= 4 && !strncmp(addr, "127.", 4)) ||
	       (n == 3 && !strncmp(addr, "::1", 3)) || (n == 5 && !strncmp(addr, "[::1]", 5)) ||
	       (n == 9 && !strncmp(addr, "localhost", 9));
}

void dp_job_key(const char *id, const char *node, char *buf, size_t len)
{
	const char *a = id + 6, *port = strrchr(id, ':');

	snprintf(buf, len, "%s", id);
	if (strncmp(id, "torch:", 6) || strchr(id, '@') || !port || port < a)
		return;
	if (loopback(a, (size_t)(port - a)))
		snprintf(buf, len, "%s@%s", id, node);
}

uint64_t dp_fence_token(uint64_t run, uint64_t gen)
{
	if (!run)
		return 0;
	if (run > UINT32_MAX)
		run = UINT32_MAX;
	if (gen > UINT32_MAX)
		gen = UINT32_MAX;
	return run << 32 | gen;
}

int dp_slot_generation(uint64_t token, uint64_t own_generation, uint64_t *ret_gen)
{
	if (!token && !own_generation)
		return 0;
	*ret_gen = token ? token & UINT32_MAX : own_generation;
	return 1;
}

uint64_t dp_run_choose(const struct dec_launch *mine, uint64_t cur, const char *launcher,
		       int restart_count, int *ret_new)
{
	*ret_new = 0;
	if (mine && mine->run <= cur)
		for (int i = 0; i < mine->nlaunchers; i++)
			if (!strcmp(mine->launchers[i], launcher))
				return mine->run; /* its launcher restarted it: the same run */
	if (cur && restart_count > 0)
		return cur; /* a requeue (TORCHELASTIC_RESTART_COUNT, SLURM_RESTART_COUNT) */
	if (cur && !(mine && mine->run == cur))
		return cur; /* this node has not launched in the latest run: it joins it */
	*ret_new = 1;	    /* a relaunch here (or the first launch anywhere) */
	return cur + 1;
}
