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
#include "watch/tracker.h"

void cadwatch_init(struct cadwatch *c, struct eventlog *el, struct sampler *sp,
		   const struct ftbpf_config *cfg)
{
	memset(c, 0, sizeof(*c));
	c->el = el;
	c->sp = sp;
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
	for (int i = 0; i < o.nown; i++)
		arr_rank_own(&k->arr, o.own_start[i], o.own_end[i], o.own_kind[i]);
}

void cadwatch_fini(struct cadwatch *c)
{
	free(c->scratch);
	free(c->firsts_buf);
	c->scratch = NULL;
	c->firsts_buf = NULL;
}

/* Can a record's arrivals be compared across ranks? Host-side, with an id that is the same on
 * every rank, counted from the communicator's start on every rank. */
static int followable(const struct det_comm *x)
{
	return x->id && x->seq && !(x->flags & (DET_COMM_DEVICE | DET_COMM_UNALIGNED));
}

/* The communicator the job's collectives are followed on: shared by the most live ranks here,
 * then the busiest; 0 none. One pass over the ranks' records (a few each). */
static uint64_t job_comm(const struct job *j)
{
	struct {
		uint64_t id, seq;
		int n, last; /* ranks that have it; the last rank counted */
	} t[64];
	int nt = 0, best = -1;

	for (int i = 0; i < j->nmembers; i++) {
		const struct rank *k = j->members[i];

		for (int c = 0; !k->s.exited && c < k->s.ncomm; c++) {
			const struct det_comm *x = &k->s.comm[c];
			int e = 0;

			if (!followable(x))
				continue;
			while (e < nt && t[e].id != x->id)
				e++;
			if (e == nt) {
				if (nt == 64)
					continue;
				t[nt].id = x->id;
				t[nt].seq = 0;
				t[nt].n = 0;
				t[nt++].last = -1;
			}
			if (t[e].last != i) { /* each rank once */
				t[e].n++;
				t[e].last = i;
			}
			t[e].seq += x->seq;
		}
	}
	for (int e = 0; e < nt; e++)
		if (best < 0 || t[e].n > t[best].n ||
		    (t[e].n == t[best].n && t[e].seq > t[best].seq))
			best = e;
	return best < 0 ? 0 : t[best].id;
}

static int cmp_arrival(const void *a, const void *b)
{
	const struct ftbpf_arrival *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The kernel's arrivals of rank k on communicator id, new since the last scan, in order. The
 * ring is read twice: an entry the program rewrote meanwhile differs between the copies. */
static void read_arrivals(struct cadwatch *c, struct rank *k, uint64_t id)
{
	static struct ftbpf_arrivals a, b; /* the loop's thread only */
	struct ftbpf_comm_key key = {.tgid = (uint32_t)k->pid};
	const struct det_comm *x = NULL;
	uint64_t latest = k->arr.comm == id ? arr_rank_latest(&k->arr) : 0;
	int n = 0;

	for (int i = 0; i < k->s.ncomm && !x; i++)
		if (followable(&k->s.comm[i]) && k->s.comm[i].id == id)
			x = &k->s.comm[i];
	if (!x || !c->sp || !c->sp->tr)
		return;
	key.kind = x->key_kind;
	key.comm = x->key_comm;
	if (tracker_arrivals_get(c->sp->tr, &key, &a) < 0 ||
	    tracker_arrivals_get(c->sp->tr, &key, &b) < 0)
		return;
	for (int i = 0; i < FTBPF_ARR_RING; i++)
		if (a.a[i].seq > latest && a.a[i].seq <= x->seq && a.a[i].t_ns &&
		    a.a[i].seq == b.a[i].seq && a.a[i].t_ns == b.a[i].t_ns)
			a.a[n++] = a.a[i];
	qsort(a.a, (size_t)n, sizeof(a.a[0]), cmp_arrival);
	for (int i = 0; i < n; i++)
		arr_rank_add(&k->arr, id, a.a[i].seq, a.a[i].t_ns);
}

/* The job's collective arrivals: read, and judged (each rank's lateness, the job's pace). */
static void job_arrivals(struct cadwatch *c, struct job *j, uint64_t now, int spans)
{
	struct arr_rank *r[CADWATCH_MAX];
	uint64_t id = job_comm(j);
	int n = 0, nrem = 0;

	if (id != j->arr.comm) { /* another communicator: a new history */
		memset(&j->arr, 0, sizeof(j->arr));
		j->arr.comm = id;
	}
	for (int i = 0; i < j->nmembers && n < CADWATCH_MAX; i++) {
		struct rank *k = j->members[i];

		if (k->s.exited)
			continue;
		if (id)
			read_arrivals(c, k, id);
		r[n++] = &k->arr;
	}
	if (!id)
		return;
	if (c->firsts && !c->firsts_buf)
		c->firsts_buf = calloc(CADWATCH_HOSTS, sizeof(*c->firsts_buf));
	if (c->firsts && c->firsts_buf)
		nrem = c->firsts(c->remote_ctx, j, now, c->firsts_buf, CADWATCH_HOSTS);
	arr_job_eval(r, n, c->firsts_buf, nrem, now, c->p.window_s, &j->arr);
	/* a job on several hosts: this host's ranks are compared with the others' firsts only */
	for (int i = 0; spans && !nrem && i < n; i++)
		r[i]->fig.valid = 0;
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
	if (!j->res.hung) {
		job_arrivals(c, j, now, world > live);
		for (int i = 0, m = 0; i < j->nmembers && m < nl; i++)
			if (!j->members[i]->s.exited)
				r[m++]->arr = j->members[i]->arr.fig;
		j->cad.arr_step_s = j->arr.step_s;
		cad_job_eval(r, n, now, &c->p, &j->cad);
	}
	pace->p99_step_ns = (uint64_t)(j->cad.p99_step_s * CLOCK_NS_PER_S);
	pace->p99_coll_ns = (uint64_t)(j->arr.p99_interval_s * CLOCK_NS_PER_S);
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
