/*
 * The simulator's checker: after a run, what the ranks did (sim.h's events) and what the store
 * holds, against the invariants of docs/decisions.md (docs/simulator.md lists the checks).
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define MAX_G 256

struct gens {
	int n; /* generations 0 .. n-1 recorded (gen/0 is implicit) */
	struct dec_gen g[MAX_G];
	uint64_t created[MAX_G]; /* revision */
	unsigned char out[MAX_G][1024 / 8 + 1]; /* hosts left out of it (bitmap, hosts < 1024) */
	unsigned char ever_out[1024 / 8 + 1];
};

struct done_rec {
	uint64_t g, n, rev;
	int64_t step;
	int late; /* claimed after gen/g+1 */
};

struct ctx {
	struct sim *s;
	struct gens *gs;
	struct done_rec *dn;
	int ndn, dn_cap;
};

static int violation(struct sim *s, const char *what, long long a, long long b)
{
	fprintf(s->out, "  seed %llu %s: %s (%lld, %lld)\n", (unsigned long long)s->seed, s->kind,
		what, a, b);
	s->violations++;
	return 1;
}

static int host_of(const char *node)
{
	return node[0] == 'h' ? atoi(node + 1) : -1;
}

static void set_out(struct gens *gs, uint64_t g, const char *node)
{
	int h = host_of(node);

	if (h < 0 || h >= 1024 || g >= MAX_G)
		return;
	gs->out[g][h / 8] |= (unsigned char)(1 << (h % 8));
	gs->ever_out[h / 8] |= (unsigned char)(1 << (h % 8));
}

static int is_out(const unsigned char *bm, int h)
{
	return h < 1024 && (bm[h / 8] >> (h % 8)) & 1;
}

static int read_rec(void *c, const char *key, const char *value)
{
	struct ctx *x = c;
	const char *k = key + strlen(SIM_PREFIX "runs/1/");
	uint64_t g, n;

	if (dec_key_numbers(k, "gen", &g, NULL) == 0 && g < MAX_G) {
		if (dec_gen_parse(value, &x->gs->g[g]) == 0) {
			x->gs->created[g] = ss_created_at(&x->s->st, key, UINT64_MAX);
			if ((int)g + 1 > x->gs->n)
				x->gs->n = (int)g + 1;
			for (int i = 0; i < x->gs->g[g].nexcluded; i++)
				set_out(x->gs, g, x->gs->g[g].excluded[i]);
		}
	} else if (dec_key_numbers(k, "done", &g, &n) == 0) {
		struct dec_done d;

		if (dec_done_parse(value, &d) == 0) {
			if (x->ndn == x->dn_cap) {
				x->dn_cap = x->dn_cap ? x->dn_cap * 2 : 16;
				x->dn = realloc(x->dn, sizeof(*x->dn) * (size_t)x->dn_cap);
				if (!x->dn)
					abort();
			}
			x->dn[x->ndn++] =
			    (struct done_rec){g, n, ss_created_at(&x->s->st, key, UINT64_MAX), d.step, 0};
		}
	} else if (!strncmp(k, "out/", 4) && strlen(k) > 25) {
		char gs[32];

		snprintf(gs, sizeof(gs), "gen/%.20s", k + 4);
		if (dec_key_numbers(gs, "gen", &g, NULL) == 0 && g < MAX_G)
			set_out(x->gs, g, k + 25);
	}
	return 0;
}

/* Did every rank of generation g's world save step in g? */
static int all_saved(struct sim *s, struct gens *gs, uint64_t g, int64_t step)
{
	static unsigned char saved[1 << 16];
	int ok = 1;

	if (s->world > (int)sizeof(saved))
		return 1;
	memset(saved, 0, (size_t)s->world);
	for (int i = 0; i < s->nev; i++)
		if (s->ev[i].kind == EV_SAVE && s->ev[i].gen == g && s->ev[i].step == step)
			saved[s->ev[i].rank] = 1;
	for (int r = 0; r < s->world && ok; r++) {
		int h = r / s->ranks_per_host;
		int out = 0;

		for (uint64_t e = 0; e <= g && e < MAX_G; e++)
			out |= is_out(gs->out[e], h);
		ok = saved[r] || out;
	}
	return ok;
}

/* A step that is complete: a done/ record of it, every rank of that generation saved it. */
static int complete(struct sim *s, struct ctx *x, int64_t step)
{
	for (int i = 0; i < x->ndn; i++)
		if (x->dn[i].step == step && all_saved(s, x->gs, x->dn[i].g, step))
			return 1;
	return 0;
}

int sim_check(struct sim *s)
{
	struct gens *gs = calloc(1, sizeof(*gs));
	struct ctx x = {s, gs, NULL, 0, 0};
	int v = 0;
	uint64_t last;

	if (!gs)
		abort();
	gs->n = 1;
	ss_list_at(&s->st, SIM_PREFIX "runs/1/", UINT64_MAX, read_rec, &x);
	last = (uint64_t)gs->n - 1;

	/* I3: every rank of a generation resumes from one step, the generation's, and it is a
	 * step every rank saved and committed in one generation */
	for (int i = 0; i < s->nev; i++) {
		const struct sim_event *e = &s->ev[i];
		int64_t want = e->gen && e->gen < MAX_G ? gs->g[e->gen].resume_step : -1;

		if (e->kind != EV_START)
			continue;
		if (e->step != want)
			v += violation(s, "I3: a rank resumed from another step than its generation's",
				       e->step, want);
		else if (e->step >= 0 && !complete(s, &x, e->step))
			v += violation(s, "I2/I3: resumed from a step not saved by every rank and "
					  "committed", e->step, (long long)e->gen);
	}
	/* I2: a completion only of a step every rank saved in its generation */
	for (int i = 0; i < x.ndn; i++)
		if (!all_saved(s, gs, x.dn[i].g, x.dn[i].step))
			v += violation(s, "I2: done/ of a step not every rank saved",
				       (long long)x.dn[i].g, x.dn[i].step);
	/* I4: no commit of generation g once g+1 was decided. A done/G claimed by a host whose
	 * mirror had not seen gen/G+1 yet is counted apart (a finding: it is never read again,
	 * and no rank resumes from it unless the checks above pass); one that a later
	 * generation resumed from is a violation */
	for (int i = 0; i < x.ndn; i++) {
		uint64_t g = x.dn[i].g;

		x.dn[i].late = g + 1 < MAX_G && g + 1 <= last && gs->created[g + 1] &&
			       gs->created[g + 1] < x.dn[i].rev;
		s->late_done += x.dn[i].late;
	}
	for (uint64_t e = 1; e <= last && e < MAX_G; e++) {
		int timely = 0, late = 0;

		for (int i = 0; i < x.ndn && gs->g[e].resume_step >= 0; i++) {
			if (x.dn[i].step != gs->g[e].resume_step || x.dn[i].g >= e ||
			    !all_saved(s, gs, x.dn[i].g, x.dn[i].step))
				continue;
			timely |= !x.dn[i].late;
			late |= x.dn[i].late;
		}
		if (late && !timely)
			v += violation(s, "I4: resumed from a done/ of generation g claimed after "
					  "g+1 was decided",
				       (long long)e, gs->g[e].resume_step);
	}
	/* agreement and liveness once the faults are over: every host follows the last
	 * generation, its ranks run in it (launchers restarted them) */
	for (int i = 0; i < s->nhosts; i++) {
		struct sim_host *h = &s->hosts[i];

		if (h->dead || is_out(gs->ever_out, i) || (last && gs->g[last].stop))
			continue;
		if (h->rec.gen != last)
			v += violation(s, "a host does not follow the job's generation", i,
				       (long long)h->rec.gen);
		for (int r = 0; r < h->nranks; r++) {
			const struct sim_rank *k = &h->ranks[r];

			if (k->st == RK_EXITED || k->st == RK_NONE)
				v += violation(s, "a rank was not restarted", k->id, h->launcher_up);
			else if (k->st != RK_STARTING && k->trained_gen != last)
				v += violation(s, "a rank trains in an older generation", k->id,
					       (long long)k->trained_gen);
		}
	}
	/* I5: each preemption ends in a preemption's generation, or an event says why not */
	for (int i = 0; i < s->nev; i++) {
		const struct sim_event *e = &s->ev[i];
		int ok = 0;

		if (e->kind != EV_PREEMPT || (i && s->ev[i - 1].kind == EV_PREEMPT &&
					      s->ev[i - 1].host == e->host && s->ev[i - 1].t == e->t))
			continue;
		for (uint64_t g = 1; g <= last && !ok; g++)
			ok = gs->g[g].cause == DEC_CAUSE_PREEMPTION &&
			     ss_rev_at_time(&s->st, e->t) <= gs->created[g];
		for (int j = i; j < s->nev && !ok; j++)
			ok = (s->ev[j].kind == EV_PLOST || s->ev[j].kind == EV_IGNORED) &&
			     s->ev[j].host == e->host;
		if (!ok && !s->hosts[e->host].dead)
			v += violation(s, "I5: a preemption ended in no checkpoint and no event",
				       e->host, (long long)e->t);
	}
	free(x.dn);
	free(gs);
	return v;
}
