/* The decision policy, pure: what this node's ranks say as one report (the saves, the
 * acknowledgements, the failures of the request in progress), the job's step rate and the
 * margin a checkpoint's step is proposed with (see decide_policy.h, docs/decisions.md). */
#include "lib/decide_policy.h"

#include <string.h>

void dp_local(const struct dp_rank *ranks, int n, int64_t target, struct dp_local *l)
{
	memset(l, 0, sizeof(*l));
	l->max_step = l->max_ack = -1;
	for (int i = 0; i < n; i++) {
		const struct dp_rank *k = &ranks[i];
		/* a save said failed after it was reported (its commit failed) is no save */
		int failed = target >= 0 && k->has_slot && k->failed == target;
		int saved =
		    !failed && target >= 0 && k->has_slot && k->saved >= target && k->saved_here;

		if (k->world_size > l->world)
			l->world = k->world_size;
		l->failed += failed; /* its save was refused or failed: it will not come */
		if (k->exited) {
			l->saved += saved; /* it saved, then ended: its save counts (I2) */
			continue;
		}
		l->live++;
		if (!k->has_slot)
			continue;
		l->ranks++;
		l->saved += saved;
		if (k->step > l->max_step)
			l->max_step = k->step;
		if (k->ack >= 0) {
			l->acked++;
			if (k->ack > l->max_ack)
				l->max_ack = k->ack;
		}
		if (target >= 0 && k->step > target && k->saving < target && !saved)
			l->missed++;
	}
}

void dp_step_rate(struct dp_memory *m, const struct dp_local *l, const struct dp_now *now)
{
	if (l->world > 0)
		m->world = l->world;
	if (l->max_step < 0)
		return;
	if (m->step_prev_ms && now->mono_ms > m->step_prev_ms + 500 &&
	    (uint64_t)l->max_step >= m->step_prev) {
		double rate = (double)((uint64_t)l->max_step - m->step_prev) * 1000.0 /
			      (double)(now->mono_ms - m->step_prev_ms);

		m->steps_per_s = m->steps_per_s ? 0.7 * m->steps_per_s + 0.3 * rate : rate;
	}
	if (!m->step_prev_ms || now->mono_ms > m->step_prev_ms + 500) {
		m->step_prev = (uint64_t)l->max_step;
		m->step_prev_ms = now->mono_ms;
	}
}

int dp_margin(const struct dp_config *c, const struct dp_memory *m)
{
	double latency = c->shared ? 1.0 : 0.5;
	double x = m->steps_per_s * latency * (double)(1 << (m->retargets > 6 ? 6 : m->retargets));

	return x + 1 > c->margin ? (int)(x + 1) : c->margin;
}

/* The nodes counted for the request: members with ranks the generation does not leave out. */
