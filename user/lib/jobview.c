/*
 * One verdict for a job from its parts on every host: see jobview.h. The detector judges the
 * union of the parts' ranks as it judges one host's (the same hang rule, the same evidence
 * order); the waits-for graph then names the rank the others wait on, when the detector had
 * no better evidence (a death, NCCL sequence numbers).
 */
#include "lib/jobview.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/syscalls.h"
#include "lib/waitsfor.h"

#define MS 1000000ull

struct uni {
	struct det_rank *d;
	struct det_sample *s;
	int *owner; /* part index of each union rank */
	int n;
};

int jobview_part_rank(const struct jv_part *pt, int rank)
{
	for (int i = 0; i < pt->nranks; i++)
		if (pt->ranks[i].rank == rank)
			return i;
	return -1;
}

static int uni_find(const struct uni *u, int rank)
{
	for (int i = 0; i < u->n; i++)
		if (u->s[i].rank == rank)
			return i;
	return -1;
}

static uint64_t ago(uint64_t at, uint32_t age_ms)
{
	uint64_t a = (uint64_t)age_ms * MS;

	return at > a ? at - a : 1;
}

/* A rank of another host as the detector's input and state. */
static void uni_add(struct uni *u, const struct jv_part *pt, int pi, const struct jv_rank *r,
		    int self, uint64_t now)
{
	struct det_sample *s = &u->s[u->n];
	struct det_rank *d = &u->d[u->n];
	uint64_t at = pi == self ? now : pt->at_ns;
	char nm[32];

	memset(s, 0, sizeof(*s));
	memset(d, 0, sizeof(*d));
	s->pid = (int)r->pid;
	s->rank = r->rank;
	s->world_size = pt->world_size;
	s->exited = !!(r->flags & JV_R_EXITED);
	s->killed = !!(r->flags & JV_R_KILLED);
	s->exit_code = r->exit_code;
	s->exit_ns = ago(at, r->exit_age_ms);
	s->progress_ns = ago(at, r->progress_age_ms);
	s->adopted_ns = 1;
	s->cur_nr = r->syscall;
	if (r->flags & JV_R_COMM) {
		s->ncomm = 1;
		s->comm[0].id = r->comm_id;
		s->comm[0].seq = r->comm_seq;
		s->comm[0].last_ns = at;
		s->comm[0].rank = -1;
		s->comm[0].api = r->comm_api;
		s->comm[0].dtype = r->comm_dtype;
		s->comm[0].count = r->comm_count;
		s->comm[0].flags = (r->flags & JV_R_MPI ? DET_COMM_MPI : 0) |
				   (r->flags & JV_R_GRAPH ? DET_COMM_GRAPH : 0);
	}
	d->state = r->state < RS__N ? (enum rank_state)r->state : RS_RUNNING;
	d->syscall = r->syscall;
	d->score = r->score;
	d->state_since_ns = ago(at, r->state_age_ms);
	d->no_progress_ns = now > s->progress_ns ? now - s->progress_ns : 0;
	d->prev_key = -1;
	if (r->reason[0])
		snprintf(d->reason, sizeof(d->reason), "%s", r->reason);
	else if (d->syscall >= 0 && (d->state == RS_BLOCKED || d->state == RS_DSTATE))
		snprintf(d->reason, sizeof(d->reason), "%s in %s for %.1fs",
			 det_state_name(d->state), syscalls_format(d->syscall, nm, sizeof(nm)),
			 (double)r->state_age_ms / 1000);
	else
		snprintf(d->reason, sizeof(d->reason), "%s for %.1fs", det_state_name(d->state),
			 (double)r->state_age_ms / 1000);
	u->owner[u->n++] = pi;
}

void jobview_ranges(const int *ranks, int n, char *buf, int len)
{
	int o = 0;

	buf[0] = 0;
	for (int i = 0; i < n && o < len - 16; i++) {
		int j = i;

		while (j + 1 < n && ranks[j + 1] == ranks[j] + 1)
			j++;
		if (j > i)
			o += snprintf(buf + o, (size_t)(len - o), "%s%d-%d", o ? ", " : "",
				      ranks[i], ranks[j]);
		else
			o += snprintf(buf + o, (size_t)(len - o), "%s%d", o ? ", " : "", ranks[i]);
		i = j;
	}
}

/* Where an edge leads: a rank, WF_OUTSIDE, or WF_HOST(h) (h: a part index, or nparts + a
 * host index) for an endpoint on a host that did not say whose it is. */
static int edge_target(const struct jv_part *parts, int nparts, const struct jv_host *hosts,
		       int nhosts, const struct jv_edge *e)
{
	if (e->to_rank >= 0)
		return e->to_rank;
	if (e->to_rank == -2)
		return WF_OUTSIDE;
	for (int i = 0; i < nparts; i++)
		for (int k = 0; k < parts[i].nres; k++)
			if (parts[i].res[k].ep.ip == e->peer.ip &&
			    parts[i].res[k].ep.port == e->peer.port && !parts[i].stale)
				return parts[i].res[k].rank >= 0 ? parts[i].res[k].rank
								 : WF_OUTSIDE;
	for (int i = 0; i < nparts; i++)
		for (int k = 0; k < parts[i].naddrs; k++)
			if (parts[i].addrs[k] == e->peer.ip)
				return WF_HOST(i);
	for (int h = 0; h < nhosts; h++)
		if (hosts[h].ip == e->peer.ip)
			return WF_HOST(nparts + h);
	return WF_OUTSIDE;
}

static const char *host_name(const struct jv_part *parts, int nparts, const struct jv_host *hosts,
			     int h)
{
	return h < nparts ? parts[h].node : hosts[h - nparts].node;
}

static const char *how_name(int how)
{
	return how == JV_EDGE_RECV    ? "blocked reading its socket"
	       : how == JV_EDGE_SENDQ ? "its data unread in their socket"
				      : "awaiting an answer on their socket";
}

/* The graph's verdict into out (u: the union; e/how: the edges and how each was seen). */
static void graph_verdict(const struct uni *u, const struct jv_part *parts, int nparts,
			  const struct jv_host *hosts, const struct wf_result *wr,
			  const struct wf_edge *e, const uint8_t *how, int ne,
			  struct jv_verdict *out)
{
	int c = wr->nodes[0], o = 0, first = -1;
	char who[64] = "";

	out->graph = 1;
	out->n_culprits = 0;
	for (int i = 0; i < wr->n && out->n_culprits < DET_MAX_CULPRITS; i++)
		if (wr->nodes[i] >= 0)
			out->culprit_ranks[out->n_culprits++] = wr->nodes[i];
	/* the first edge into the culprit, for the why */
	for (int i = 0; i < ne && first < 0; i++)
		if (e[i].to == c)
			first = i;
	if (first >= 0)
		snprintf(who, sizeof(who), "rank %d", e[first].from);
	if (c >= 0) {
		int k = uni_find(u, c);

		if (k >= 0) {
			snprintf(out->culprit_node, sizeof(out->culprit_node), "%s",
				 parts[u->owner[k]].node);
			snprintf(out->culprit_state, sizeof(out->culprit_state), "%s",
				 det_state_name(u->d[k].state));
		}
		o = snprintf(out->why, sizeof(out->why),
			     "%d rank(s) wait on rank %d (%s: %s); rank %d", wr->waiters, c, who,
			     first >= 0 ? how_name(how[first]) : "?", c);
		if (k >= 0)
			snprintf(out->why + o, sizeof(out->why) - (size_t)o,
				 " on %s waits on no other rank: %s", parts[u->owner[k]].node,
				 u->d[k].reason);
		else
			snprintf(out->why + o, sizeof(out->why) - (size_t)o,
				 " waits on no other rank; no host reported it");
	} else {
		const char *hn = host_name(parts, nparts, hosts, WF_HOST_OF(c));

		/* a host that sent a part may resolve the endpoint with its next one */
		out->pending = WF_HOST_OF(c) < nparts && !parts[WF_HOST_OF(c)].stale;

		snprintf(out->culprit_node, sizeof(out->culprit_node), "%s", hn);
		snprintf(out->culprit_state, sizeof(out->culprit_state), "unknown");
		snprintf(out->why, sizeof(out->why),
			 "%d rank(s) wait on sockets of host %s (%s: %s) that no rank's part "
			 "accounts for%s",
			 wr->waiters, hn, who, first >= 0 ? how_name(how[first]) : "?",
			 out->nmissing ? "; the missing ranks may be there" : "");
	}
}

/* The ranks the parts do not cover (world known), with the hosts of stale parts. */
static void find_missing(const struct uni *u, const struct jv_part *parts, int nparts,
			 struct jv_verdict *out)
{
	int list[64], n = 0, o;
	char stale[96] = "";

	if (out->world <= 0)
		return;
	for (int r = 0; r < out->world; r++)
		if (uni_find(u, r) < 0) {
			if (n < 64)
				list[n] = r;
			n++;
		}
	out->nmissing = n;
	if (!n)
		return;
	jobview_ranges(list, n < 64 ? n : 64, out->missing, sizeof(out->missing));
	o = (int)strlen(out->missing);
	for (int i = 0, so = 0; i < nparts; i++)
		if (parts[i].stale && so < (int)sizeof(stale) - 40)
			so += snprintf(stale + so, sizeof(stale) - (size_t)so, "%s%s",
				       so ? ", " : "", parts[i].node);
	snprintf(out->missing + o, sizeof(out->missing) - (size_t)o, "%s%s%s",
		 n > 64 ? ", ..." : "", *stale ? " (last seen on " : " (no part)", stale);
	if (*stale)
		strncat(out->missing, ")", sizeof(out->missing) - strlen(out->missing) - 1);
}

static int build_edges(const struct uni *u, const struct jv_part *parts, int nparts,
		       const struct jv_host *hosts, int nhosts, struct wf_edge *e, uint8_t *how)
{
	int ne = 0;

	for (int i = 0; i < nparts; i++) {
		if (parts[i].stale)
			continue;
		for (int k = 0; k < parts[i].nedges && ne < WF_MAX_EDGES; k++) {
			const struct jv_edge *x = &parts[i].edges[k];
			int f = uni_find(u, x->from_rank);

			/* an edge only from a rank of its own part, waiting */
			if (f < 0 || u->owner[f] != i || u->s[f].exited)
				continue;
			e[ne].from = x->from_rank;
			e[ne].to = edge_target(parts, nparts, hosts, nhosts, x);
			if (e[ne].to == e[ne].from)
				continue;
			how[ne++] = x->how;
		}
	}
	return ne;
}

static int use_graph(const struct jv_verdict *out, const struct wf_result *wr, int strong)
{
	if (!wr->n || out->det.rule == DET_RULE_DEAD || out->det.rule == DET_RULE_NCCL)
		return 0;
	if (strong) /* evidence from the kernel's sockets beats majorities and scores */
		return 1;
	return out->det.rule == DET_RULE_ELSEWHERE || out->det.rule == DET_RULE_NONE;
}

int jobview_eval(const struct jv_part *parts, int nparts, int self, const struct jv_host *hosts,
		 int nhosts, uint64_t now, const struct det_params *p, const struct det_pace *pace,
		 struct jv_verdict *out)
{
	struct det_pace pc = {0};
	struct uni u = {0};
	struct wf_edge *e = NULL;
	uint8_t *how = NULL;
	struct wf_result wr;
	int total = 0, ne, strong = 0, r = 0, local = 0;

	memset(out, 0, sizeof(*out));
	out->world = -1;
	if (nparts > JV_MAX_PARTS)
		nparts = JV_MAX_PARTS;
	for (int i = 0; i < nparts; i++)
		total += parts[i].stale ? 0 : parts[i].nranks;
	u.d = calloc((size_t)total + 1, sizeof(*u.d));
	u.s = calloc((size_t)total + 1, sizeof(*u.s));
	u.owner = calloc((size_t)total + 1, sizeof(*u.owner));
	e = calloc((size_t)nparts * JV_MAX_EDGES + 1, sizeof(*e));
	how = calloc((size_t)nparts * JV_MAX_EDGES + 1, 1);
	if (!u.d || !u.s || !u.owner || !e || !how) {
		r = -ENOMEM;
		goto out;
	}
	/* this host's part first: its claims win */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < nparts; i++) {
			if ((pass == 0) != (i == self) || parts[i].stale)
				continue;
			if (parts[i].world_size > out->world)
				out->world = parts[i].world_size;
			out->hosts++;
			for (int k = 0; k < parts[i].nranks; k++)
				if (uni_find(&u, parts[i].ranks[k].rank) < 0)
					uni_add(&u, &parts[i], i, &parts[i].ranks[k], self, now);
		}
	for (int i = 0; i < u.n; i++)
		local += u.owner[i] == self;
	out->ranks = u.n;
	if (pace) { /* the step rule only over the whole world, the collective rule as it is */
		pc = *pace;
		pc.complete = out->world > 0 && u.n >= out->world;
	}
	det_job_eval_paced(u.d, u.s, u.n, now, 0, p, pace ? &pc : NULL, &out->det);
	out->hung = out->det.hung;
	out->hard = out->det.hard;
	out->failed = out->det.failed;
	out->live = out->det.live;
	out->no_progress_ns = out->det.no_progress_ns;
	out->rule = out->det.rule;
	find_missing(&u, parts, nparts, out);

	ne = build_edges(&u, parts, nparts, hosts, nhosts, e, how);
	out->edges = ne;
	r = waitsfor_eval(e, ne, &wr);
	if (r < 0)
		goto out;
	for (int i = 0; i < ne; i++) /* only edges into the named culprits count */
		for (int k = 0; k < wr.n; k++)
			strong |= e[i].to == wr.nodes[k] && how[i] != JV_EDGE_REPLY;
	if (use_graph(out, &wr, strong)) {
		graph_verdict(&u, parts, nparts, hosts, &wr, e, how, ne, out);
	} else {
		out->n_culprits = 0;
		for (int i = 0; i < out->det.n_culprits; i++) {
			int k = out->det.culprits[i];

			out->culprit_ranks[out->n_culprits++] = u.s[k].rank;
			if (i == 0) {
				snprintf(out->culprit_node, sizeof(out->culprit_node), "%s",
					 parts[u.owner[k]].node);
				snprintf(out->culprit_state, sizeof(out->culprit_state), "%s",
					 det_state_name(u.d[k].state));
			}
		}
		snprintf(out->why, sizeof(out->why), "%s", out->det.why);
		if (out->n_culprits && out->hosts > 1) {
			size_t o = strlen(out->why);

			snprintf(out->why + o, sizeof(out->why) - o, " [rank %d runs on %s]",
				 out->culprit_ranks[0], out->culprit_node);
		}
		if (!out->n_culprits && out->nmissing && out->det.rule == DET_RULE_ELSEWHERE)
			snprintf(out->why, sizeof(out->why),
				 "every rank reported waits alike (%s); ranks %s have no fresh "
				 "part: the cause may be there",
				 u.n ? u.d[0].reason : "idle", out->missing);
	}
	out->culprit_here = out->culprit_node[0] && !strcmp(out->culprit_node, parts[self].node);
	out->valid = out->hosts > 1 || out->graph || (out->world > 0 && out->world > local);
out:
	free(u.d);
	free(u.s);
	free(u.owner);
	free(e);
	free(how);
	return r;
}
