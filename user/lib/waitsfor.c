/* The waits-for graph: see waitsfor.h. Small and quadratic on purpose where it is bounded:
 * a job's edges are at most a few per waiting rank (WF_MAX_EDGES). */
#include "lib/waitsfor.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct graph {
	const struct wf_edge *e;
	int ne;
	int *node; /* distinct node ids */
	int nn;
};

static int node_index(const struct graph *g, int id)
{
	for (int i = 0; i < g->nn; i++)
		if (g->node[i] == id)
			return i;
	return -1;
}

/* A node waits on a rank (or on an unresolved endpoint, which may be one). */
static int waits_on_peer(const struct graph *g, int id)
{
	for (int i = 0; i < g->ne; i++)
		if (g->e[i].from == id && g->e[i].to != WF_OUTSIDE && g->e[i].to != id)
			return 1;
	return 0;
}

/* How many nodes reach target through edges (reverse search; seen: scratch of g->nn). */
static int reach_count(const struct graph *g, int target, char *seen, int *stack)
{
	int sp = 0, count = 0, t = node_index(g, target);

	memset(seen, 0, (size_t)g->nn);
	seen[t] = 1;
	stack[sp++] = target;
	while (sp) {
		int cur = stack[--sp];

		for (int i = 0; i < g->ne; i++) {
			int k;

			if (g->e[i].to != cur || g->e[i].from == cur)
				continue;
			k = node_index(g, g->e[i].from);
			if (seen[k])
				continue;
			seen[k] = 1;
			count++;
			stack[sp++] = g->e[i].from;
		}
	}
	return count;
}

/* From a waiting rank, follow first edges to a peer until a node repeats: the cycle. */
static void find_cycle(const struct graph *g, struct wf_result *out)
{
	int path[64], np = 0, cur = g->e[0].from;

	for (int i = 0; i < g->ne; i++)
		if (g->e[i].to != WF_OUTSIDE) {
			cur = g->e[i].from;
			break;
		}
	while (np < 64) {
		int next = WF_OUTSIDE;

		for (int k = 0; k < np; k++)
			if (path[k] == cur) {
				for (int m = k; m < np && out->ncycle < 8; m++)
					out->cycle_nodes[out->ncycle++] = path[m];
				out->cycle = 1;
				return;
			}
		path[np++] = cur;
		for (int i = 0; i < g->ne; i++)
			if (g->e[i].from == cur && g->e[i].to != WF_OUTSIDE && g->e[i].to != cur) {
				next = g->e[i].to;
				break;
			}
		if (next == WF_OUTSIDE)
			return;
		cur = next;
	}
}

int waitsfor_eval(const struct wf_edge *e, int nedges, struct wf_result *out)
{
	struct graph g = {e, nedges, NULL, 0};
	char *seen = NULL;
	int *stack = NULL, best = 0, r = 0;

	memset(out, 0, sizeof(*out));
	if (nedges < 0 || nedges > WF_MAX_EDGES)
		return -EINVAL;
	if (!nedges)
		return 0;
	g.node = malloc(sizeof(int) * 2 * (size_t)nedges);
	seen = malloc(2 * (size_t)nedges);
	stack = malloc(sizeof(int) * 2 * (size_t)nedges);
	if (!g.node || !seen || !stack) {
		r = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < nedges; i++) {
		if (node_index(&g, e[i].from) < 0)
			g.node[g.nn++] = e[i].from;
		if (e[i].to != WF_OUTSIDE && node_index(&g, e[i].to) < 0)
			g.node[g.nn++] = e[i].to;
	}
	/* candidates: nodes some rank waits on that wait on no peer themselves; plus ranks
	 * that wait only on what is outside the job, when some rank waits on them */
	for (int i = 0; i < g.nn; i++) {
		int id = g.node[i], c;

		if (waits_on_peer(&g, id))
			continue;
		c = reach_count(&g, id, seen, stack);
		if (!c)
			continue;
		if (c > best) {
			best = c;
			out->n = 0;
		}
		if (c == best && out->n < 8)
			out->nodes[out->n++] = id;
	}
	out->waiters = best;
	if (!out->n)
		find_cycle(&g, out);
out:
	free(g.node);
	free(seen);
	free(stack);
	return r;
}
