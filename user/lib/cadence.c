/*
 * Step cadence and stragglers (see cadence.h). Definitions (also in docs/detection.md):
 *  by arrivals (a job whose ranks issue collectives, lib/arrivals.h): a straggler arrives at
 *               them later than the median rank by (threshold - 1) of a step or more, sustained;
 *               its reason is where that late time went (gpu, data, compute). Otherwise:
 *  own time   = wall time less the time waiting on the peers (or the device): compute + reads.
 *  slowdown   = a rank's own-time fraction over the median of its job's ranks, over a window.
 *  straggler  = slowdown >= threshold while it waits less than the median rank (so the others
 *               wait for it), sustained for sustain_s; it recovers below `recover`, sustained.
 *  reason     = data (a data loader's stall) when most of its excess is time blocked in reads.
 */
#include "lib/cadence.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS	   1e9
#define MIN_SPAN   50000ull /* shorter spans (a lock, a quick wake) are not a step's wait */
#define MIN_STEPS  3	    /* steps or wait spans in the window to judge a rank */
#define MIN_SAMPLE 20	    /* step samples before a p99 is given */

void cad_params_default(struct cad_params *p)
{
	p->window_s = 10;
	p->threshold = 1.10;
	p->recover = 1.05;
	p->sustain_s = 10;
}

const char *cad_reason_name(enum cad_reason r)
{
	return r == CAD_DATA ? "data" : r == CAD_COMPUTE ? "compute" : r == CAD_GPU ? "gpu" : "";
}

void cad_rank_reset(struct cad_rank *r)
{
	r->nh = 0;
	r->head = 0;
	r->valid = 0;
	r->slowdown = 0;
	r->above_ns = 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The q-quantile (0..1) of n values (sorted in place). */
static double quantile(double *v, int n, double q)
{
	int i;

	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	i = (int)ceil(q * n) - 1;
	return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

/* The gaps between span ends, in seconds; their number. */
static int gaps_of(const uint64_t *end, int n, double *g)
{
	int m = 0;

	for (int i = 1; i < n && i < CAD_SPANS; i++)
		if (end[i] > end[i - 1])
			g[m++] = (double)(end[i] - end[i - 1]) / NS;
	return m;
}

/* With per_step spans a step: the median of the sums of per_step consecutive gaps (any that
 * many make one step, wherever a step begins); *ret_max the longest. */
static double period_at(const double *g, int m, int per_step, double *ret_max)
{
	double sums[CAD_SPANS];
	int ns = 0;

	*ret_max = 0;
	for (int i = 0; i + per_step <= m; i++) {
		double s = 0;

		for (int k = 0; k < per_step; k++)
			s += g[i + k];
		sums[ns++] = s;
		if (s > *ret_max)
			*ret_max = s;
	}
	return quantile(sums, ns, 0.5);
}

double cad_period(const uint64_t *end, int n, int *ret_per_step, double *ret_max)
{
	double g[CAD_SPANS], best_score = 1e9, score[9] = {0};
	int m = 0, best = 0;

	*ret_per_step = 0;
	*ret_max = 0;
	m = gaps_of(end, n, g);
	if (m < 6)
		return 0;
	/* L spans a step: gap i is like gap i - L. The smallest L close to the best wins, so
	 * that a multiple of the period (which repeats as well) is not taken for it. */
	for (int L = 1; L <= 8 && L * 3 <= m; L++) {
		double d = 0, t = 0;

		for (int i = L; i < m; i++) {
			d += fabs(g[i] - g[i - L]);
			t += g[i];
		}
		score[L] = t > 0 ? d / t : 1e9;
		if (score[L] < best_score)
			best_score = score[L];
	}
	for (int L = 1; L <= 8 && L * 3 <= m; L++)
		if (score[L] <= best_score + 0.05) {
			best = L;
			break;
		}
	if (!best)
		return 0;
	*ret_per_step = best;
	return period_at(g, m, best, ret_max);
}

void cad_rank_observe(struct cad_rank *r, const struct cad_obs *o, const struct cad_params *p)
{
	uint64_t win = (uint64_t)(p->window_s * NS), ends[CAD_SPANS];
	int last = r->nh ? (r->head + CAD_HIST - 1) % CAD_HIST : -1, base = -1, ne = 0, per = 0;
	double dt;

	/* counters that went back: the kernel's record was made anew (agent restart) */
	if (last >= 0 && (o->wait_ns < r->h[last].wait || o->read_ns < r->h[last].read ||
			  o->spans < r->h[last].spans || o->steps < r->h[last].steps ||
			  o->now_ns <= r->h[last].t))
		cad_rank_reset(r);
	r->h[r->head].t = o->now_ns;
	r->h[r->head].wait = o->wait_ns;
	r->h[r->head].read = o->read_ns;
	r->h[r->head].spans = o->spans;
	r->h[r->head].steps = o->steps;
	r->head = (r->head + 1) % CAD_HIST;
	if (r->nh < CAD_HIST)
		r->nh++;
	/* the newest observation at least a window old; else the oldest if it covers most of one */
	for (int k = 1; k < r->nh; k++) {
		int i = (r->head + CAD_HIST - 1 - k) % CAD_HIST;

		base = i;
		if (o->now_ns - r->h[i].t >= win)
			break;
	}
	r->valid = 0;
	r->slowdown = 0;
	if (base < 0 || (double)(o->now_ns - r->h[base].t) < 0.8 * (double)win)
		return;
	dt = (double)(o->now_ns - r->h[base].t);
	r->window_s = dt / NS;
	r->wait_frac = fmin(1, (double)(o->wait_ns - r->h[base].wait) / dt);
	r->own_frac = 1 - r->wait_frac;
	r->read_frac = fmin(r->own_frac, (double)(o->read_ns - r->h[base].read) / dt);
	r->dspans = o->spans - r->h[base].spans;
	r->dsteps = o->steps - r->h[base].steps;
	for (int i = 0; i < o->nspan && i < CAD_SPANS; i++)
		if (o->span_end[i] >= o->span_start[i] + MIN_SPAN)
			ends[ne++] = o->span_end[i];
	/* Spans a step: the most frequent answer so far (one scan's ring can mislead: a stray
	 * wait, a step cut at its edge); the step time over the whole window from it. */
	if (cad_period(ends, ne, &per, &r->period_max_s) > 0) {
		if (++r->per_seen >= 256) {
			for (int i = 0; i < 9; i++)
				r->per_votes[i] /= 2;
			r->per_seen = 0;
		}
		r->per_votes[per]++;
	}
	per = 0;
	for (int i = 1; i < 9; i++)
		if (r->per_votes[i] > r->per_votes[per])
			per = i;
	r->period_spans = per;
	r->period_s = 0;
	if (per) {
		double g[CAD_SPANS];
		int m = gaps_of(ends, ne, g);

		if (m >= per)
			r->period_s = period_at(g, m, per, &r->period_max_s);
	}
	if (r->dsteps >= 2)
		r->step_s = dt / NS / (double)r->dsteps;
	else if (per && r->dspans >= (uint64_t)per * MIN_STEPS)
		r->step_s = dt / NS * per / (double)r->dspans;
	else
		r->step_s = r->period_s;
	r->valid = r->dsteps >= MIN_STEPS || r->dspans >= MIN_STEPS;
}

static void ms_text(char *buf, size_t len, double s)
{
	if (s >= 1)
		snprintf(buf, len, "%.2f s", s);
	else
		snprintf(buf, len, "%.1f ms", s * 1e3);
}

/* What shows that the others wait for r: per step when the step is known, else in shares. */
static void evidence(struct cad_rank *r, const struct cad_job *j, int n)
{
	char own[24], cpu[24], rd[24], med[24], w[24], mw[24];
	double st = j->step_s, f = st > 0 ? st : 100;
	const char *u = st > 0 ? " per step" : "% of the time";

	if (st > 0) {
		ms_text(own, sizeof(own), r->own_frac * st);
		ms_text(cpu, sizeof(cpu), (r->own_frac - r->read_frac) * st);
		ms_text(rd, sizeof(rd), r->read_frac * st);
		ms_text(med, sizeof(med), j->median_own * st);
		ms_text(w, sizeof(w), r->wait_frac * st);
		ms_text(mw, sizeof(mw), j->median_wait * st);
	} else {
		snprintf(own, sizeof(own), "%.0f", r->own_frac * f);
		snprintf(cpu, sizeof(cpu), "%.0f", (r->own_frac - r->read_frac) * f);
		snprintf(rd, sizeof(rd), "%.0f", r->read_frac * f);
		snprintf(med, sizeof(med), "%.0f", j->median_own * f);
		snprintf(w, sizeof(w), "%.0f", r->wait_frac * f);
		snprintf(mw, sizeof(mw), "%.0f", j->median_wait * f);
	}
	if (snprintf(r->evidence, sizeof(r->evidence),
		     "own time %s%s (compute %s, reading input %s) against a median of %s over %d "
		     "ranks: %.2fx; it waits %s%s for the others, the median rank %s",
		     own, u, cpu, rd, med, n, r->slowdown, w, u, mw) >= (int)sizeof(r->evidence))
		r->evidence[sizeof(r->evidence) - 1] = 0;
}

/* The straggler state: entered after `above` held sustain_s, left after `below` held as long. */
static void sustain(struct cad_rank *k, int above, int below, uint64_t now,
		    const struct cad_params *p)
{
	uint64_t sustain = (uint64_t)(p->sustain_s * NS);

	if (above) {
		if (!k->above_ns)
			k->above_ns = now;
	} else {
		k->above_ns = 0;
	}
	if (!k->straggler && above && now - k->above_ns >= sustain) {
		k->straggler = 1;
		k->since_ns = k->above_ns;
		k->below_ns = 0;
		k->peak_slowdown = 0;
	} else if (k->straggler) {
		if (!below) {
			k->below_ns = 0;
		} else if (!k->below_ns) {
			k->below_ns = now;
		} else if (now - k->below_ns >= sustain) {
			k->straggler = 0;
			k->below_ns = 0;
		}
	}
	if (k->straggler && k->slowdown > k->peak_slowdown)
		k->peak_slowdown = k->slowdown;
}

/* Its lateness less the time it waited on its peers meanwhile (not its own doing). */
static double own_late(const struct cad_rank *r)
{
	return fmax(0, r->arr.late_s - r->arr.comm_s);
}

static enum cad_reason late_reason(const struct cad_rank *r)
{
	const struct arr_fig *a = &r->arr;

	if (a->gpu_s >= a->read_s && a->gpu_s >= a->cpu_s && a->gpu_s > 0)
		return CAD_GPU;
	if (a->read_s >= a->cpu_s && a->read_s > 0)
		return CAD_DATA;
	return CAD_COMPUTE;
}

/* What shows that the others wait for r: when it arrives at the collectives, and why. */
static void late_evidence(struct cad_rank *r, const struct cad_job *j, double step, int n)
{
	char late[24], med[24], st[24], gpu[24], cpu[24], rd[24], cm[24], err[48] = "";

	ms_text(late, sizeof(late), r->arr.late_s);
	ms_text(med, sizeof(med), j->median_late);
	ms_text(st, sizeof(st), step);
	ms_text(gpu, sizeof(gpu), r->arr.gpu_s);
	ms_text(cpu, sizeof(cpu), r->arr.cpu_s);
	ms_text(rd, sizeof(rd), r->arr.read_s);
	ms_text(cm, sizeof(cm), r->arr.comm_s);
	if (r->arr.err_s > 0)
		snprintf(err, sizeof(err), " (+/- %.1f ms: other hosts' clocks)",
			 r->arr.err_s * 1e3);
	if (snprintf(
		r->evidence, sizeof(r->evidence),
		"arrives %s after the first rank at each collective%s (%d collectives; the "
		"median of %d ranks %s): %.0f%% of a %s step; of it %s in its own GPU work, %s "
		"computing on its CPU, %s reading input, %s waiting on peers",
		late, err, r->arr.ncoll, n, med, (own_late(r) - j->median_late) / step * 100, st,
		gpu, cpu, rd, cm) >= (int)sizeof(r->evidence))
		r->evidence[sizeof(r->evidence) - 1] = 0;
}

/*
 * Stragglers by arrivals: a rank whose own lateness exceeds the median rank's by at least
 * (threshold - 1) of a step, beyond the clock error of the comparison, for sustain_s; it recovers
 * below (recover - 1) of a step. The reason is where its late time went.
 */
static void judge_by_arrivals(struct cad_rank *const *r, int n, uint64_t now,
			      const struct cad_params *p, struct cad_job *j, double step)
{
	double late[256];
	int v = 0;

	for (int i = 0; i < n && v < 256; i++)
		if (r[i]->arr.valid)
			late[v++] = own_late(r[i]);
	j->median_late = arr_quantile(late, v, 0.5);
	for (int i = 0; i < n; i++) {
		struct cad_rank *k = r[i];
		double excess;
		int above = 0, below = 1;

		k->by_arrivals = 1;
		k->slowdown = 0;
		if (k->arr.valid && step > 0) {
			excess = own_late(k) - j->median_late;
			k->slowdown = 1 + excess / step;
			above = excess - k->arr.err_s >= (p->threshold - 1) * step;
			below = excess < (p->recover - 1) * step;
			if (above || k->straggler)
				k->reason = late_reason(k);
		}
		sustain(k, above, below, now, p);
		if (k->arr.valid && step > 0)
			late_evidence(k, j, step, v);
		else if (!k->straggler)
			k->evidence[0] = 0;
	}
}

static void push_step(struct cad_job *j, double s)
{
	if (s <= 0)
		return;
	j->steps[j->head] = s;
	j->head = (j->head + 1) % CAD_STEPS;
	if (j->nsteps < CAD_STEPS)
		j->nsteps++;
}

void cad_job_eval(struct cad_rank *const *r, int n, uint64_t now, const struct cad_params *p,
		  struct cad_job *j)
{
	double own[256], wait[256], rd[256], step[256], tmp[CAD_STEPS], maxp = 0;
	int v = 0, ns = 0, va = 0;

	for (int i = 0; i < n && v < 256; i++) {
		if (!r[i]->valid)
			continue;
		own[v] = r[i]->own_frac;
		wait[v] = r[i]->wait_frac;
		rd[v] = r[i]->read_frac;
		v++;
		if (r[i]->step_s > 0)
			step[ns++] = r[i]->step_s;
		if (r[i]->period_max_s > maxp)
			maxp = r[i]->period_max_s;
	}
	j->ranks = v;
	j->step_s = quantile(step, ns, 0.5);
	j->rate = j->step_s > 0 ? 1 / j->step_s : 0;
	j->imbalance = 0;
	if (v) {
		double lo = quantile(own, v, 0);

		j->median_own = quantile(own, v, 0.5);
		j->imbalance = j->median_own > 0 ? (own[v - 1] - lo) / j->median_own : 0;
		j->median_wait = quantile(wait, v, 0.5);
		j->median_read = quantile(rd, v, 0.5);
	}
	push_step(j, j->step_s);
	push_step(j, maxp);
	memcpy(tmp, j->steps, sizeof(tmp));
	j->p99_step_s = j->nsteps >= MIN_SAMPLE ? quantile(tmp, j->nsteps, 0.99) : 0;
	j->spread = 0;
	if (j->nsteps >= 3) {
		double med;

		memcpy(tmp, j->steps, sizeof(tmp));
		med = quantile(tmp, j->nsteps, 0.5);
		j->spread =
		    med > 0 ? (quantile(tmp, j->nsteps, 0.9) - quantile(tmp, j->nsteps, 0.1)) / med
			    : 0;
	}
	/* ranks that arrive at collectives: judged by when they arrive (a GPU rank's waits hold
	 * its own device's work, an MPI rank's may not show at all) */
	for (int i = 0; i < n; i++)
		va += r[i]->arr.valid;
	j->by_arrivals = va >= 2;
	if (j->by_arrivals) {
		/* the longer of the two steps: the collectives' period can be one layer of a step
		 * that issues hundreds (FSDP), the wait spans' a step's loss synchronisation */
		judge_by_arrivals(r, n, now, p, j, fmax(j->arr_step_s, j->step_s));
		return;
	}
	for (int i = 0; i < n; i++) {
		struct cad_rank *k = r[i];
		int above = 0, below = 1;

		k->by_arrivals = 0;
		k->slowdown = 0;
		if (k->valid && v >= 2 && j->median_own >= 0.02) {
			double excess;

			k->slowdown = k->own_frac / j->median_own;
			above = k->slowdown >= p->threshold && k->wait_frac < j->median_wait;
			below = k->slowdown < p->recover;
			excess = k->own_frac - j->median_own;
			if (above || k->straggler)
				k->reason =
				    excess > 0 && k->read_frac - j->median_read >= 0.5 * excess
					? CAD_DATA
					: CAD_COMPUTE;
		}
		sustain(k, above, below, now, p);
		if (k->valid && v >= 2)
			evidence(k, j, v);
		else if (!k->straggler)
			k->evidence[0] = 0;
	}
}

void cad_summarize(const struct cad_rank *r, int rank, struct cad_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->rank = rank;
	if (!r->valid)
		return;
	s->flags = CAD_SUM_VALID | (r->straggler ? CAD_SUM_STRAGGLER : 0) |
		   (r->reason == CAD_DATA ? CAD_SUM_DATA : 0) |
		   (r->reason == CAD_GPU ? CAD_SUM_GPU : 0);
	if (r->arr.valid) {
		s->flags |= CAD_SUM_ARR;
		s->late_us = (uint32_t)fmin(r->arr.late_s * 1e6, 4e9);
		s->err_us = (uint32_t)fmin(r->arr.err_s * 1e6, 4e9);
		s->gpu_us = (uint32_t)fmin(r->arr.gpu_s * 1e6, 4e9);
		s->read_us = (uint32_t)fmin(r->arr.read_s * 1e6, 4e9);
		s->comm_us = (uint32_t)fmin(r->arr.comm_s * 1e6, 4e9);
		s->ncoll = (uint32_t)r->arr.ncoll;
	}
	/* fractions of wall time, whatever rounding made of them */
	s->own_ppm = (uint32_t)(fmin(fmax(r->own_frac, 0), 1) * 1e6);
	s->wait_ppm = (uint32_t)(fmin(fmax(r->wait_frac, 0), 1) * 1e6);
	s->read_ppm =
	    (uint32_t)(fmin(fmax(r->read_frac, 0), r->own_frac > 1 ? 1 : r->own_frac) * 1e6);
	if (s->read_ppm > s->own_ppm)
		s->read_ppm = s->own_ppm;
	s->step_us = (uint32_t)fmin(r->step_s * 1e6, 4e9);
	s->slowdown_pm = (uint32_t)fmin(r->slowdown * 1e3, 4e9);
	s->window_ms = (uint32_t)fmin(r->window_s * 1e3, 3600000);
}

void cad_rank_from_summary(struct cad_rank *r, const struct cad_summary *s)
{
	r->valid = !!(s->flags & CAD_SUM_VALID);
	r->own_frac = s->own_ppm / 1e6;
	r->wait_frac = s->wait_ppm / 1e6;
	r->read_frac = s->read_ppm / 1e6;
	r->step_s = s->step_us / 1e6;
	r->window_s = s->window_ms / 1e3;
	r->period_max_s = 0;
	memset(&r->arr, 0, sizeof(r->arr));
	if (s->flags & CAD_SUM_ARR) {
		r->arr.valid = r->valid;
		r->arr.late_s = s->late_us / 1e6;
		r->arr.err_s = s->err_us / 1e6;
		r->arr.gpu_s = s->gpu_us / 1e6;
		r->arr.read_s = s->read_us / 1e6;
		r->arr.comm_s = s->comm_us / 1e6;
		r->arr.ncoll = (int)s->ncoll;
		r->arr.cpu_s =
		    fmax(0, r->arr.late_s - r->arr.gpu_s - r->arr.read_s - r->arr.comm_s);
	}
}

uint64_t cad_part_period_ns(int hosts)
{
	uint64_t every = (uint64_t)(hosts > 0 ? hosts : 1) * 20000000ull;

	return every < 2000000000ull	? 2000000000ull
	       : every > 20000000000ull ? 20000000000ull
					: every;
}
