/* The records' node tables: grown by doubling, members and reports in node order. See
 * decide_records.h. */
#include "lib/decide_records.h"
#include "lib/growbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where node goes in a table of n entries of size bytes sorted by node name (the first field of
 * each): the index of the first entry not below it; *ret_found when that entry is node. */
static int position(const void *v, int n, size_t size, const char *node, int *ret_found)
{
	int lo = 0, hi = n, c;

	*ret_found = 0;
	/* the store lists keys in order: most records go at the end */
	if (n && (c = dp_node_cmp(node, (const char *)v + (size_t)(n - 1) * size)) >= 0) {
		*ret_found = c == 0;
		return c == 0 ? n - 1 : n;
	}
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (dp_node_cmp(node, (const char *)v + (size_t)mid * size) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*ret_found = lo < n && !dp_node_cmp(node, (const char *)v + (size_t)lo * size);
	return lo;
}

/* Make room in the sorted table *v (n entries, *cap of them allocated) for node: the index of
 * the entry (zeroed, its node set) or -EEXIST / -ENOMEM. */
static int insert(void **v, int *cap, int n, size_t size, const char *node)
{
	int found, at = position(*v, n, size, node, &found);
	char *e;

	if (found)
		return -EEXIST;
	if (growbuf_items(v, cap, n, size) < 0)
		return -ENOMEM;
	e = (char *)*v + (size_t)at * size;
	memmove(e + size, e, (size_t)(n - at) * size);
	memset(e, 0, size);
	snprintf(e, DEC_NODE_LEN, "%s", node);
	return at;
}

int dr_add_member(struct dp_records *r, const char *node, const struct dec_member *m)
{
	int at = insert((void **)&r->mem, &r->mem_cap, r->nmem, sizeof(*r->mem), node);

	r->mem_short |= at == -ENOMEM;
	if (at < 0)
		return at;
	r->mem[at].m = *m;
	r->nmem++;
	return 0;
}

int dr_add_report(struct dp_records *r, const char *node, const struct dec_report *x)
{
	int at = insert((void **)&r->rep, &r->rep_cap, r->nrep, sizeof(*r->rep), node);

	if (at < 0)
		return at;
	r->rep[at].r = *x;
	r->nrep++;
	return 0;
}

int dr_add_out(struct dp_records *r, const char *node, int ranks)
{
	int cap = r->out_cap, cap_ranks = r->out_cap;

	/* two tables of one capacity, set once both have grown (a first one grown alone is grown
	 * to the same size again at the next try) */
	if (growbuf_items((void **)&r->out, &cap, r->nout, sizeof(*r->out)) < 0 ||
	    growbuf_items((void **)&r->out_ranks, &cap_ranks, r->nout, sizeof(*r->out_ranks)) < 0)
		return -ENOMEM;
	r->out_cap = cap;
	snprintf(r->out[r->nout], DEC_NODE_LEN, "%s", node);
	r->out_ranks[r->nout++] = ranks;
	return 0;
}

int dr_add_out_refused(struct dp_records *r, const char *node)
{
	if (growbuf_items((void **)&r->out_refused, &r->out_refused_cap, r->nout_refused,
			  sizeof(*r->out_refused)) < 0)
		return -ENOMEM;
	snprintf(r->out_refused[r->nout_refused++], DEC_NODE_LEN, "%s", node);
	return 0;
}

void dr_reset(struct dp_records *r)
{
	r->nrep = r->nmem = r->nout = r->nout_refused = r->mem_short = 0;
}

void dr_clear(struct dp_records *r)
{
	free(r->rep);
	free(r->mem);
	free(r->out);
	free(r->out_ranks);
	free(r->out_refused);
	memset(r, 0, sizeof(*r));
}
