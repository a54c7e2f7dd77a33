/* One decision look of one job, as one pure function: see decide_look.h. */
#include "lib/decide_look.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The suspects' leases, in the order of m->suspect (dp_confirm_suspects reads them so). */
static struct dp_lease *suspect_leases(const struct dp_records *r, const struct dp_memory *m,
				       const struct dp_look_in *in)
{
	struct dp_lease *l = calloc((size_t)m->nsuspect, sizeof(*l));

	for (int i = 0; l && i < m->nsuspect; i++) {
		const struct dp_node_member *x = dp_member(r, m->suspect[i]);

		if (x && x->m.lease > 0 && in->lease_left && in->lease_left(in->ctx, x, &l[i]) == 0)
			l[i].known = 1;
		else
			memset(&l[i], 0, sizeof(l[i]));
	}
	return l;
}

int dp_look(const struct dp_config *c, const struct dp_records *r, struct dp_memory *m,
	    struct dp_rank *ranks, int n, const struct dp_look_in *in, struct dp_out *out,
	    struct dp_look_res *res)
{
	const struct dp_now *now = &in->now;
	struct dp_lease *leases;
	struct dp_local l;
	int ret = 0;

	memset(res, 0, sizeof(*res));
	dp_observe(m, r, now, out);
	dp_first_generation(r, ranks, n);
	dp_local(ranks, n, dp_request_target(r), &l);
	dp_step_rate(m, &l, now);
	if (dp_fence(c, r, m, ranks, n, out)) {
		res->fenced = 1;
		return 0;
	}
	dp_member_record(c, r, m, &l, in->own_lease, out);
	dp_vanished(c, r, m, now);
	/* without the memory for their leases, the suspects wait for the next look */
	if (m->nsuspect && (leases = suspect_leases(r, m, in))) {
		dp_confirm_suspects(m, r, leases, now);
		free(leases);
	} else if (m->nsuspect) {
		ret = -ENOMEM;
	}
	dp_apply_generation(c, r, m, ranks, n, out);
	if (r->reachable && !(r->gen && r->g.stop)) {
		int retargets = m->retargets;

		dp_failures(c, r, m, ranks, n, in->hang, now, out);
		dp_checkpoint_progress(c, r, m, &l, now, out);
		dp_preemption_pending(c, r, m, &l, now, out);
		res->retargets = m->retargets - retargets;
	}
	return ret;
}
