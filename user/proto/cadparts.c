/* Step cadence across hosts: see cadparts.h. */
#include "proto/cadparts.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/clocksync.h"
#include "lib/growbuf.h"
#include "lib/jobview.h"
#include "lib/jsonx.h"
#include "lib/ranks.h"
#include "proto/part_proto.h"

#define MS	    1000000ull
#define TTL_PERIODS 3
#define REBROADCAST (30000 * MS) /* every member again while ranks of the job are unknown */
#define MAX_ENTRIES 8192
#define MAX_CLOCKS  1024 /* hosts whose clock is followed (the least recently heard goes) */
#define MAX_FIRSTS  1024 /* (job, host) first arrivals kept (4 KiB each) */

struct entry {
	uint32_t uid;
	char job[FTBPF_JOB_LEN];
	struct mesh_addr from;
	int member;
	uint64_t at_ns, expires_ns;
	struct cad_remote x;
};

/* Another host's clock against ours (lib/clocksync.h). */
struct clock {
	struct mesh_addr a;
	uint64_t heard_ns;
	struct clk_peer c;
};

/* A host's first arrivals of a job's collectives, its runs gathered, in its clock. */
struct firsts {
	uint32_t uid;
	char job[FTBPF_JOB_LEN];
	struct mesh_addr from;
	uint64_t expires_ns;
	struct arr_remote f;
};

struct cadparts {
	struct entry *v;
	int n, cap;
	int64_t skew_ns; /* what this host adds to its clock on the wire (tests only) */
	struct clock *ck;
	int nck, ckcap;
	struct firsts *fv;
	int nf, fcap;
	uint64_t accepted, not_ours, world_mismatch, claims_ours, conflict, dropped;
	uint64_t clock_samples, clock_rejected, firsts_dropped;
};

struct cadparts *cadparts_new(int64_t skew_ns)
{
	struct cadparts *cp = calloc(1, sizeof(struct cadparts));

	if (cp)
		cp->skew_ns = skew_ns;
	return cp;
}

void cadparts_free(struct cadparts *cp)
{
	if (!cp)
		return;
	free(cp->v);
	free(cp->ck);
	free(cp->fv);
	free(cp);
}

/* Host a's clock (add: made when missing, the least recently heard one replaced when full). */
static struct clock *clock_of(struct cadparts *cp, const struct mesh_addr *a, int add)
{
	int old = 0;

	for (int i = 0; i < cp->nck; i++) {
		if (meshaddr_eq(&cp->ck[i].a, a))
			return &cp->ck[i];
		if (cp->ck[i].heard_ns < cp->ck[old].heard_ns)
			old = i;
	}
	if (!add)
		return NULL;
	if (cp->nck >= MAX_CLOCKS) {
		memset(&cp->ck[old], 0, sizeof(cp->ck[old]));
		cp->ck[old].a = *a;
		return &cp->ck[old];
	}
	if (growbuf_items((void **)&cp->ck, &cp->ckcap, cp->nck, sizeof(*cp->ck)) < 0)
		return NULL;
	memset(&cp->ck[cp->nck], 0, sizeof(cp->ck[0]));
	cp->ck[cp->nck].a = *a;
	return &cp->ck[cp->nck++];
}

/* A believed part's clock exchange and first arrivals. */
static void accept_arrivals(struct cadparts *cp, const struct part_packet *p, uint64_t now)
{
	const struct jv_part *pt = &p->part;
	struct clock *c = clock_of(cp, &p->from, 1);
	struct firsts *f = NULL;

	if (c) {
		/* the echo is our own clock on the wire: this host's clock again */
		uint64_t echo = p->echo_ns ? p->echo_ns - (uint64_t)cp->skew_ns : 0;
		int r = clk_receive(&c->c, p->mono_ns, echo, p->hold_ns, now);

		c->heard_ns = now;
		cp->clock_samples += r > 0;
		cp->clock_rejected += r < 0;
	}
	if (!pt->first.n)
		return;
	for (int i = 0; i < cp->nf && !f; i++)
		if (cp->fv[i].uid == pt->uid && !strcmp(cp->fv[i].job, pt->job) &&
		    meshaddr_eq(&cp->fv[i].from, &p->from))
			f = &cp->fv[i];
	if (!f) {
		if (cp->nf >= MAX_FIRSTS ||
		    growbuf_items((void **)&cp->fv, &cp->fcap, cp->nf, sizeof(*cp->fv)) < 0) {
			cp->firsts_dropped++;
			return;
		}
		f = &cp->fv[cp->nf++];
		memset(f, 0, sizeof(*f));
		f->uid = pt->uid;
		snprintf(f->job, sizeof(f->job), "%s", pt->job);
		f->from = p->from;
	}
	arr_remote_merge(&f->f, &pt->first);
	f->expires_ns = now + (uint64_t)p->ttl_ms * MS;
}

void cadparts_stamp(const struct cadparts *cp, const struct mesh_addr *to, uint64_t now,
		    struct part_packet *p)
{
	struct clock *c = clock_of((struct cadparts *)cp, to, 0);

	p->flags |= PART_F_ARR;
	p->mono_ns = now + (uint64_t)cp->skew_ns;
	p->echo_ns = p->hold_ns = 0;
	if (c)
		clk_echo(&c->c, now, &p->echo_ns, &p->hold_ns);
}

int cadparts_firsts(void *ctx, const struct job *j, uint64_t now, struct arr_remote *out, int max)
{
	struct cadparts *cp = ctx;
	int n = 0;

	for (int i = 0; i < cp->nf && n < max; i++) {
		const struct firsts *f = &cp->fv[i];
		struct clock *c;
		int64_t off;
		uint64_t bound;

		if (now >= f->expires_ns || f->uid != (uint32_t)j->uid || strcmp(f->job, j->id))
			continue;
		c = clock_of(cp, &f->from, 0);
		if (!c || clk_offset(&c->c, now, &off, &bound) < 0)
			continue; /* its clock unknown: its arrivals cannot be compared with ours */
		out[n].comm = f->f.comm;
		out[n].seq0 = f->f.seq0;
		out[n].n = f->f.n;
		for (int k = 0; k < f->f.n; k++)
			out[n].t[k] = f->f.t[k] ? (uint64_t)((int64_t)f->f.t[k] - off) : 0;
		out[n++].err_s = (double)bound / 1e9;
	}
	return n;
}

void cadparts_clocks_json(const struct cadparts *cp, uint64_t now, struct json_object *arr)
{
	for (int i = 0; i < cp->nck; i++) {
		struct json_object *o;
		char addr[32];
		int64_t off;
		uint64_t bound;

		if (clk_offset(&cp->ck[i].c, now, &off, &bound) < 0)
			continue;
		o = json_object_new_object();
		meshaddr_format(&cp->ck[i].a, addr, sizeof(addr));
		jstr(o, "node", addr);
		/* against this host's clock as the others see it (with the tests' skew, the skewed
		 * one; conversions use the clock underneath, which the skew never touches) */
		jdbl(o, "offset_ms", (double)(off - cp->skew_ns) / 1e6);
		jdbl(o, "error_ms", (double)bound / 1e6);
		json_object_array_add(arr, o);
	}
}

static int fresh(const struct entry *e, const struct job *j, uint64_t now)
{
	return now < e->expires_ns && e->uid == (uint32_t)j->uid && !strcmp(e->job, j->id);
}

static struct entry *find(struct cadparts *cp, const struct jv_part *pt, int rank)
{
	for (int i = 0; i < cp->n; i++)
		if (cp->v[i].x.rank == rank && cp->v[i].uid == pt->uid &&
		    !strcmp(cp->v[i].job, pt->job))
			return &cp->v[i];
	return NULL;
}

static struct entry *add(struct cadparts *cp, const struct jv_part *pt, int rank)
{
	struct entry *e;

	if (cp->n >= MAX_ENTRIES)
		return NULL;
	if (cp->n == cp->cap) {
		int c = cp->cap ? cp->cap * 2 : 32;
		struct entry *nv = realloc(cp->v, (size_t)c * sizeof(*nv));

		if (!nv)
			return NULL;
		cp->v = nv;
		cp->cap = c;
	}
	e = &cp->v[cp->n++];
	memset(e, 0, sizeof(*e));
	e->uid = pt->uid;
	snprintf(e->job, sizeof(e->job), "%s", pt->job);
	e->x.rank = rank;
	return e;
}

int cadparts_accept(struct cadparts *cp, const struct part_packet *p, int member,
		    const struct job *j, uint64_t now)
{
	const struct jv_part *pt = &p->part;
	int w = j ? job_world_size(j) : -1, newcomer;

	if (!j) {
		cp->not_ours++;
		return -1;
	}
	/* a world we know, the same (the decoder refused ranks beyond the sender's) */
	if (w < 1 || w != pt->world_size) {
		cp->world_mismatch++;
		return -1;
	}
	for (int i = 0; i < pt->ncad; i++)
		if (job_holds_live(j, pt->cad[i].rank)) {
			cp->claims_ours++; /* our ranks are ours: we see them */
			return -1;
		}
	newcomer = !cadparts_is_host(cp, j, &p->from, now);
	for (int i = 0; i < pt->ncad; i++) {
		struct entry *e = find(cp, pt, pt->cad[i].rank);

		/* two hosts claim a rank: the first holds while fresh, unless the newcomer is a
		 * live member of the mesh and the first is not */
		if (e && !meshaddr_eq(&e->from, &p->from) && now < e->expires_ns &&
		    !(member && !e->member)) {
			cp->conflict++;
			continue;
		}
		if (!e && !(e = add(cp, pt, pt->cad[i].rank))) {
			cp->dropped++;
			continue;
		}
		if (!meshaddr_eq(&e->from, &p->from)) { /* another host's now: judged anew */
			memset(&e->x, 0, sizeof(e->x));
			e->x.rank = pt->cad[i].rank;
		}
		e->from = p->from;
		meshaddr_format(&p->from, e->x.node, sizeof(e->x.node));
		e->member = member;
		e->x.s = pt->cad[i];
		e->at_ns = now;
		e->expires_ns = now + (uint64_t)p->ttl_ms * MS;
	}
	if (p->flags & PART_F_ARR)
		accept_arrivals(cp, p, now);
	cp->accepted++;
	/* a host new to the job gets ours (once: its next parts find it known) */
	return newcomer && !(p->flags & PART_F_REPLY);
}

void cadparts_forget_host(struct cadparts *cp, const struct mesh_addr *a)
{
	struct clock *c = clock_of(cp, a, 0);

	for (int i = 0; i < cp->n; i++)
		if (meshaddr_eq(&cp->v[i].from, a))
			cp->v[i--] = cp->v[--cp->n];
	for (int i = 0; i < cp->nf; i++)
		if (meshaddr_eq(&cp->fv[i].from, a))
			cp->fv[i--] = cp->fv[--cp->nf];
	if (c) /* a restarted host may have another clock (a reboot) */
		memset(&c->c, 0, sizeof(c->c));
}

int cadparts_is_host(const struct cadparts *cp, const struct job *j, const struct mesh_addr *a,
		     uint64_t now)
{
	for (int i = 0; i < cp->n; i++)
		if (fresh(&cp->v[i], j, now) && meshaddr_eq(&cp->v[i].from, a))
			return 1;
	return 0;
}

/* Ranks of j alive here (each rank once). */
static int live_ranks(const struct job *j)
{
	int n = 0;

	for (int m = 0; m < j->nmembers; m++) {
		int seen = j->members[m]->s.exited;

		for (int o = 0; o < m && !seen; o++)
			seen = !j->members[o]->s.exited &&
			       j->members[o]->id.rank == j->members[m]->id.rank;
		n += !seen;
	}
	return n;
}

static int cmp_addr(const void *a, const void *b)
{
	const struct mesh_addr *x = a, *y = b;

	if (x->ip != y->ip)
		return x->ip < y->ip ? -1 : 1;
	return x->port < y->port ? -1 : x->port > y->port;
}

/* The job's hosts known (this one included); *ret_ranks: its ranks known here or there. */
static int known(const struct cadparts *cp, const struct job *j, uint64_t now, int *ret_ranks)
{
	struct mesh_addr *a = malloc((size_t)(cp->n ? cp->n : 1) * sizeof(*a));
	int hosts = 1, n = 0;

	*ret_ranks = live_ranks(j);
	for (int i = 0; a && i < cp->n; i++)
		if (fresh(&cp->v[i], j, now))
			a[n++] = cp->v[i].from;
	*ret_ranks += n;
	if (!a)
		return 1;
	qsort(a, (size_t)n, sizeof(*a), cmp_addr);
	for (int i = 0; i < n; i++)
		hosts += !i || cmp_addr(&a[i - 1], &a[i]);
	free(a);
	return hosts;
}

static int listed(const struct jv_part *cv, int nc, int rank)
{
	for (int i = 0; i < nc; i++)
		for (int k = 0; k < cv[i].ncad; k++)
			if (cv[i].cad[k].rank == rank)
				return 1;
	return 0;
}

/* The host's first arrivals of the job's collectives, in its clock on the wire. */
static void first_arrivals(const struct job *j, struct arr_first *f, int64_t skew_ns)
{
	struct arr_rank *r[256];
	int n = 0;

	for (int m = 0; m < j->nmembers && n < 256; m++)
		if (!j->members[m]->s.exited)
			r[n++] = (struct arr_rank *)&j->members[m]->arr;
	if (!j->arr.comm || !arr_job_first(r, n, j->arr.comm, f))
		return;
	for (int i = 0; i < f->n; i++)
		if (f->t[i])
			f->t[i] += (uint64_t)skew_ns;
}

int cadparts_parts(const struct cadparts *cp, const struct job *j, struct jv_part *cv, int max)
{
	int64_t skew_ns = cp ? cp->skew_ns : 0;
	int nc = 0, world = job_world_size(j);

	for (int m = 0; world > 0 && m < j->nmembers; m++) {
		const struct rank *k = j->members[m];
		struct jv_part *c;

		if (k->s.exited || k->id.rank < 0 || k->id.rank >= world ||
		    listed(cv, nc, k->id.rank))
			continue;
		if (!nc || cv[nc - 1].ncad == JV_MAX_RANKS) {
			if (nc == max)
				break;
			c = &cv[nc++];
			memset(c, 0, sizeof(*c));
			c->uid = (uint32_t)j->uid;
			snprintf(c->job, sizeof(c->job), "%s", j->id);
			c->world_size = world;
		}
		c = &cv[nc - 1];
		cad_summarize(&k->cad, k->id.rank, &c->cad[c->ncad++]);
	}
	if (nc) /* this host's first arrivals, once (the other chunks carry none) */
		first_arrivals(j, &cv[0].first, skew_ns);
	for (int i = 0; i < nc; i++) {
		cv[i].chunk = (uint8_t)i;
		cv[i].nchunks = (uint8_t)nc;
	}
	return nc;
}

int cadparts_build(struct cadparts *cp, const struct job *j, struct cad_timing *t, uint64_t now,
		   struct jv_part *cv, int max, int *ret_all, uint32_t *ret_ttl_ms)
{
	int ranks, hosts, nc, world = job_world_size(j);
	uint64_t every;

	/* the period from the hosts counted when we last sent: counting them is not for every
	 * scan (8,000 ranks) */
	if (t->sent_ns && now - t->sent_ns < cad_part_period_ns(t->hosts))
		return 0;
	hosts = known(cp, j, now, &ranks);
	every = cad_part_period_ns(hosts);
	t->hosts = hosts;
	nc = cadparts_parts(cp, j, cv, max);
	if (!nc)
		return 0;
	/* every member again while ranks of the job are unknown: every 30 s, less often the more
	 * hosts (100 ms a host) */
	*ret_all = !t->bcast_ns || (ranks < world && now - t->bcast_ns >= REBROADCAST &&
				    now - t->bcast_ns >= (uint64_t)hosts * 100 * MS);
	*ret_ttl_ms = (uint32_t)(TTL_PERIODS * every / MS);
	if (*ret_all)
		t->bcast_ns = now;
	t->sent_ns = now;
	return nc;
}

int cadparts_remote(void *ctx, const struct job *j, uint64_t now, struct cad_remote **out, int max)
{
	struct cadparts *cp = ctx;
	int n = 0;

	for (int i = 0; i < cp->n && n < max; i++)
		if (fresh(&cp->v[i], j, now) && !job_holds_live(j, cp->v[i].x.rank))
			out[n++] = &cp->v[i].x;
	return n;
}

const struct cad_remote *cadparts_next(const struct cadparts *cp, const struct job *j, uint64_t now,
				       int *it, struct mesh_addr *ret_from, uint64_t *ret_age_ns)
{
	for (; *it < cp->n; (*it)++)
		if (fresh(&cp->v[*it], j, now)) {
			*ret_from = cp->v[*it].from;
			*ret_age_ns = now - cp->v[*it].at_ns;
			return &cp->v[(*it)++].x;
		}
	return NULL;
}

void cadparts_json(const struct cad_remote *x, uint64_t age_ns, struct json_object *o)
{
	jbool(o, "straggler", x->straggler);
	jdbl(o, "slowdown", x->slowdown);
	jstr(o, "straggler_reason", x->straggler ? cad_reason_name(x->reason) : NULL);
	jdbl(o, "step_s", x->s.step_us / 1e6);
	jdbl(o, "cadence_age_s", (double)age_ns / 1e9);
}

void cadparts_rank_json(const struct cadparts *cp, const struct job *j, int rank,
			const struct mesh_addr *from, uint64_t now, struct json_object *o)
{
	for (int i = 0; i < cp->n; i++) {
		const struct entry *e = &cp->v[i];

		if (e->x.rank == rank && fresh(e, j, now) && meshaddr_eq(&e->from, from)) {
			cadparts_json(&e->x, now - e->at_ns, o);
			return;
		}
	}
}

void cadparts_tick(struct cadparts *cp, const struct ranks *ranks, uint64_t now)
{
	for (int i = 0; i < cp->n; i++)
		if (now >= cp->v[i].expires_ns ||
		    !ranks_job_find(ranks, cp->v[i].uid, cp->v[i].job))
			cp->v[i--] = cp->v[--cp->n];
	for (int i = 0; i < cp->nf; i++)
		if (now >= cp->fv[i].expires_ns ||
		    !ranks_job_find(ranks, cp->fv[i].uid, cp->fv[i].job))
			cp->fv[i--] = cp->fv[--cp->nf];
}

void cadparts_counters(const struct cadparts *cp, struct json_object *c)
{
	jint(c, "cadence_parts_accepted", (int64_t)cp->accepted);
	jint(c, "cadence_not_ours", (int64_t)cp->not_ours);
	jint(c, "cadence_world_mismatch", (int64_t)cp->world_mismatch);
	jint(c, "cadence_claim_our_ranks", (int64_t)cp->claims_ours);
	jint(c, "cadence_rank_conflict", (int64_t)cp->conflict);
	jint(c, "cadence_ranks_dropped", (int64_t)cp->dropped);
	jint(c, "clock_samples", (int64_t)cp->clock_samples);
	jint(c, "clock_samples_rejected", (int64_t)cp->clock_rejected);
	jint(c, "arrivals_dropped", (int64_t)cp->firsts_dropped);
}
