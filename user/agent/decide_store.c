/* Decisions, the inputs: the job table, what the store holds for a job, the local ranks as the
 * policy sees them. See decide_int.h. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/decide_int.h"
#include "agent/store.h"
#include "lib/ranks.h"
#include "os/clock.h"

void dc_now(struct dp_now *now)
{
	now->mono_ms = clock_mono_ns() / 1000000;
	now->wall_ms = clock_real_ns() / 1000000;
}

/* ---- jobs ---- */
static void job_prefix(char *buf, size_t len, uid_t uid, const char *id)
{
	size_t o = (size_t)snprintf(buf, len, "jobs/%u/", (unsigned)uid);

	for (; *id && o + 5 < len; id++) {
		if (*id == '/' || *id == '%')
			o += (size_t)snprintf(buf + o, len - o, "%%%02X", (unsigned char)*id);
		else
			buf[o++] = *id;
	}
	snprintf(buf + o, len - o, "/");
}

struct djob *dc_find(struct decider *d, uid_t uid, const char *id, int create)
{
	struct djob *dj;

	for (int i = 0; i < d->njobs; i++)
		if (d->jobs[i]->uid == uid && !strcmp(d->jobs[i]->id, id))
			return d->jobs[i];
	if (!create || d->njobs == MAX_JOBS || !(dj = calloc(1, sizeof(*dj))))
		return NULL;
	dj->uid = uid;
	snprintf(dj->id, sizeof(dj->id), "%s", id);
	job_prefix(dj->prefix, sizeof(dj->prefix), uid, id);
	dj->rec.last_complete = -1;
	dj->health_pid = -1;
	d->jobs[d->njobs++] = dj;
	return dj;
}

/* ---- reading the store ---- */
struct load_ctx {
	const char *prefix;
	struct dp_records *r;
};

static int load_one(void *ctx, const char *key, const char *value)
{
	struct load_ctx *lc = ctx;
	struct dp_records *r = lc->r;
	const char *k = key + strlen(lc->prefix);
	uint64_t g, n;

	if (dec_key_numbers(k, "gen", &g, NULL) == 0) {
		struct dec_gen x;

		if (dec_gen_parse(value, &x) < 0 || x.generation != g)
			return 0; /* malformed: not ours to follow */
		if (!x.stop && x.cause != DEC_CAUSE_PREEMPTION && x.cause != DEC_CAUSE_OPERATOR &&
		    r->nfail < DP_MAX_GENS)
			r->fail_at[r->nfail++] = x.at_ms;
		if (*x.node && r->nfault < DP_MAX_GENS)
			snprintf(r->fault_node[r->nfault++], DEC_NODE_LEN, "%s", x.node);
		if (g > r->gen) {
			r->gen = g;
			r->g = x;
		}
	} else if (dec_key_numbers(k, "done", &g, &n) == 0) {
		struct dec_done x;

		if (dec_done_parse(value, &x) == 0 && x.step > r->last_complete)
			r->last_complete = x.step;
	} else if (!strncmp(k, "members/", 8) && r->nmem < DP_MAX_NODES) {
		struct dp_node_member *m = &r->mem[r->nmem];

		if (dec_node_valid(k + 8) && dec_member_parse(value, &m->m) == 0) {
			snprintf(m->node, sizeof(m->node), "%s", k + 8);
			r->nmem++;
		}
	}
	return 0;
}

/* Second pass: the current generation's checkpoint request. */
static int load_ckpt(void *ctx, const char *key, const char *value)
{
	struct load_ctx *lc = ctx;
	struct dp_records *r = lc->r;
	const char *k = key + strlen(lc->prefix);
	uint64_t g, n;

	if (dec_key_numbers(k, "ckpt", &g, &n) == 0 && g == r->gen && n > r->ck_n) {
		struct dec_ckpt x;

		if (dec_ckpt_parse(value, &x) == 0 && x.id == n && x.generation == g) {
			r->ck_n = n;
			r->ck = x;
		}
	}
	return 0;
}

static int load_reports(void *ctx, const char *key, const char *value)
{
	struct dp_records *r = ((struct load_ctx *)ctx)->r;
	const char *node = strrchr(key, '/') + 1;
	struct dp_node_report *x;

	if (r->nrep == DP_MAX_NODES || !dec_node_valid(node))
		return 0;
	x = &r->rep[r->nrep];
	if (dec_report_parse(value, &x->r) == 0) {
		snprintf(x->node, sizeof(x->node), "%s", node);
		r->nrep++;
	}
	return 0;
}

void dc_load(struct decider *d, struct djob *dj)
{
	struct dp_records *r = &dj->rec;
	struct load_ctx lc = {dj->prefix, r};
	char key[DEC_KEY_LEN * 2], rel[DEC_KEY_LEN], *v;
	uint64_t last = 0, now = clock_mono_ns() / 1000000;

	memset(r, 0, offsetof(struct dp_records, fail_at));
	r->g.resume_step = -1;
	r->nfail = r->nfault = r->nmem = r->nrep = 0;
	r->ck_n = 0;
	r->ck_done = 0;
	r->done_at_ms = 0;
	r->last_complete = -1;
	r->reachable = store_reachable(d->st, &last);
	r->unreachable_ms = r->reachable || !last || last > now ? 0 : now - last;
	store_list(d->st, dj->prefix, load_one, &lc);
	store_list(d->st, dj->prefix, load_ckpt, &lc);
	if (!r->ck_n)
		return;
	dec_key_done(rel, sizeof(rel), r->gen, r->ck_n);
	snprintf(key, sizeof(key), "%s%s", dj->prefix, rel);
	v = store_get(d->st, key);
	r->ck_done = v != NULL;
	if (v) {
		struct dec_done dn;

		r->done_at_ms = dec_done_parse(v, &dn) == 0 ? dn.at_ms : 0;
	}
	free(v);
	dec_key_report(rel, sizeof(rel), r->gen, r->ck_n, "");
	snprintf(key, sizeof(key), "%s%s", dj->prefix, rel);
	store_list(d->st, key, load_reports, &lc);
}

/* ---- the local ranks ---- */
/* When did the process start, on the wall clock (0: unknown)? Start times are since boot. */
static uint64_t start_wall_ms(const struct rank *k)
{
	uint64_t boot = clock_boot_ns();

	if (!k->start_ns || k->start_ns > boot)
		return 0;
	return clock_real_ns() / 1000000 - (boot - k->start_ns) / 1000000;
}

/* A CLOCK_MONOTONIC time (a kernel event's) on the wall clock, in ms; 0 unknown. */
static uint64_t mono_to_wall_ms(uint64_t mono_ns)
{
	uint64_t now = clock_mono_ns();

	if (!mono_ns || mono_ns > now)
		return 0;
	return (clock_real_ns() - (now - mono_ns)) / 1000000;
}

int dc_gather(struct decider *d, const struct djob *dj, const struct job *j)
{
	int n = j ? j->nmembers : 0;

	(void)dj;
	if (n > d->rk_cap) {
		struct dp_rank *rk = realloc(d->rk, sizeof(*rk) * (size_t)n);
		struct rank **of = rk ? realloc(d->rk_of, sizeof(*of) * (size_t)n) : NULL;

		if (rk)
			d->rk = rk;
		if (!rk || !of)
			return -ENOMEM;
		d->rk_of = of;
		d->rk_cap = n;
	}
	d->nrk = n;
	for (int i = 0; i < n; i++) {
		struct rank *k = j->members[i];
		struct dp_rank *x = &d->rk[i];

		memset(x, 0, sizeof(*x));
		d->rk_of[i] = k;
		x->pid = k->pid;
		x->rank = k->id.rank;
		x->exited = k->s.exited;
		x->wait_status = k->s.exit_code;
		x->exit_wall_ms = mono_to_wall_ms(k->s.exit_ns);
		x->has_slot = k->slot != NULL;
		x->registered = k->dec_written != 0;
		x->step = x->saved = -1;
		if (k->slot) {
			x->step = (int64_t)__atomic_load_n(&k->slot->step, __ATOMIC_RELAXED);
			x->saved = __atomic_load_n(&k->slot->saved_step, __ATOMIC_ACQUIRE);
		}
		x->start_wall_ms = start_wall_ms(k);
		x->started_known = x->start_wall_ms != 0;
		x->generation = k->generation;
		x->preempted = k->preempted;
		x->killed_by_agent = k->killed_by_agent;
		x->fail_seen = k->fail_seen;
	}
	return 0;
}

void dc_scatter(struct decider *d)
{
	for (int i = 0; i < d->nrk; i++) {
		struct rank *k = d->rk_of[i];

		k->generation = d->rk[i].generation;
		k->preempted = d->rk[i].preempted;
		k->killed_by_agent = d->rk[i].killed_by_agent;
		k->fail_seen = d->rk[i].fail_seen;
	}
}
