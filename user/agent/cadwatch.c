/* Step cadence and stragglers in ftbpfd: see cadwatch.h. */
#include "agent/cadwatch.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/eventlog.h"
#include "agent/views.h"
#include "ftbpf/slot.h"
#include "lib/config.h"
#include "lib/jsonx.h"
#include "lib/ranks.h"
#include "os/clock.h"
#include "watch/sample.h"

void cadwatch_init(struct cadwatch *c, struct eventlog *el, const struct ftbpf_config *cfg)
{
	memset(c, 0, sizeof(*c));
	c->el = el;
	cad_params_default(&c->p);
	c->p.threshold = cfg->straggler_threshold;
	c->p.window_s = cfg->straggler_window_s;
	c->p.sustain_s = cfg->straggler_window_s;
	/* the node as the decisions name it: node_name, else the mesh address, else the host */
	if (*cfg->node_name)
		snprintf(c->node, sizeof(c->node), "%s", cfg->node_name);
	else if (*cfg->mesh_bind)
		snprintf(c->node, sizeof(c->node), "%s", cfg->mesh_bind);
	else if (gethostname(c->node, sizeof(c->node) - 1) < 0)
		snprintf(c->node, sizeof(c->node), "localhost");
}

void cadwatch_rank(struct cadwatch *c, struct sampler *sp, struct rank *k, uint64_t now)
{
	struct cad_obs o;

	if (k->s.exited || sampler_cadence(sp, k->pid, now, &o) < 0) {
		k->cad.valid = 0;
		return;
	}
	if (k->slot) /* the rank reports its steps (ftbpf_step): exact step boundaries */
		o.steps = __atomic_load_n(&k->slot->step, __ATOMIC_RELAXED);
	cad_rank_observe(&k->cad, &o, &c->p);
}

void cadwatch_fini(struct cadwatch *c)
{
	free(c->scratch);
	c->scratch = NULL;
}

/* A remote rank into a cad_rank to be judged, and its straggler state back after. */
static void remote_in(struct cad_rank *r, const struct cad_remote *x)
{
	memset(r, 0, sizeof(*r));
	cad_rank_from_summary(r, &x->s);
	r->straggler = x->straggler;
	r->reason = x->reason;
	r->since_ns = x->since_ns;
	r->above_ns = x->above_ns;
	r->below_ns = x->below_ns;
	r->slowdown = x->slowdown;
	r->peak_slowdown = x->peak_slowdown;
	snprintf(r->evidence, sizeof(r->evidence), "%s", x->evidence);
}

static void remote_out(struct cad_remote *x, const struct cad_rank *r)
{
	x->straggler = r->straggler;
	x->reason = r->reason;
	x->since_ns = r->since_ns;
	x->above_ns = r->above_ns;
	x->below_ns = r->below_ns;
	x->slowdown = r->slowdown;
	x->peak_slowdown = r->peak_slowdown;
	snprintf(x->evidence, sizeof(x->evidence), "%s", r->evidence);
}

void cadwatch_job(struct cadwatch *c, struct job *j, uint64_t now, struct det_pace *pace)
{
	struct cad_rank *r[CADWATCH_MAX];
	struct cad_remote *rem[CADWATCH_MAX];
	int was[CADWATCH_MAX], n = 0, nl, nrem = 0, live = 0, world = 0;

	for (int i = 0; i < j->nmembers && n < CADWATCH_MAX; i++) {
		struct rank *k = j->members[i];

		if (k->s.exited)
			continue;
		live++;
		if (k->id.world_size > world)
			world = k->id.world_size;
		was[n] = k->cad.straggler;
		r[n++] = &k->cad;
	}
	nl = n;
	if (c->remote && !c->scratch)
		c->scratch = calloc(CADWATCH_MAX, sizeof(*c->scratch));
	if (c->remote && c->scratch)
		nrem = c->remote(c->remote_ctx, j, now, rem, CADWATCH_MAX - nl);
	for (int i = 0; i < nrem; i++) {
		remote_in(&c->scratch[i], rem[i]);
		was[n] = rem[i]->straggler;
		r[n++] = &c->scratch[i];
	}
	memset(pace, 0, sizeof(*pace));
	/* a hung job's window mixes its steps and its stall: its cadence waits */
	if (!j->res.hung)
		cad_job_eval(r, n, now, &c->p, &j->cad);
	pace->p99_step_ns = (uint64_t)(j->cad.p99_step_s * CLOCK_NS_PER_S);
	pace->complete = world > 0 && live >= world;
	/* the remote ranks' state first: every event then lists the job's stragglers as now */
	snprintf(j->cad.node, sizeof(j->cad.node), "%s", c->node);
	j->cad.nremote = 0;
	for (int i = 0; i < nrem; i++) {
		remote_out(rem[i], &c->scratch[i]);
		if (rem[i]->straggler && j->cad.nremote < CAD_REMOTE_NAMED) {
			j->cad.remote[j->cad.nremote].rank = rem[i]->rank;
			snprintf(j->cad.remote[j->cad.nremote++].node,
				 sizeof(j->cad.remote[0].node), "%s", rem[i]->node);
		}
	}
	for (int i = 0, m = 0; i < j->nmembers && m < nl; i++) {
		struct rank *k = j->members[i];

		if (k->s.exited)
			continue;
		if (k->cad.straggler != was[m])
			eventlog_emit(
			    c->el,
			    view_straggler(k->cad.straggler ? "straggler" : "straggler_recovered",
					   j, k, c->node, rem, nrem));
		m++;
	}
	for (int i = 0; i < nrem; i++)
		if (rem[i]->straggler != was[nl + i])
			eventlog_emit(c->el, view_straggler_remote(rem[i]->straggler
								       ? "straggler"
								       : "straggler_recovered",
								   j, rem[i], rem, nrem));
}
