/* Collective arrivals, the job's collective pace, each rank's lateness: see arrivals.h. */
#include "lib/arrivals.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NS	    1e9
#define MIN_COLL    8	/* collectives compared before a rank's figures are given */
#define PERIOD_GAPS 512 /* gaps the period is found from */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double arr_quantile(double *v, int n, double q)
{
	int i;

	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	i = (int)ceil(q * n) - 1;
	return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

void arr_rank_reset(struct arr_rank *r)
{
	r->n = r->head = 0;
	r->nown = r->ownhead = 0;
	memset(&r->fig, 0, sizeof(r->fig));
}

/* ring index of the k-th oldest entry (k < n) */
static int at(int head, int n, int cap, int k)
{
	return (head - n + k + cap) % cap;
}

uint64_t arr_rank_latest(const struct arr_rank *r)
{
	return r->n ? r->seq[at(r->head, r->n, ARR_HIST, r->n - 1)] : 0;
}

void arr_rank_add(struct arr_rank *r, uint64_t comm, uint64_t seq, uint64_t t)
{
	if (!seq || !t)
		return;
	if (comm != r->comm) {
		arr_rank_reset(r);
		r->comm = comm;
	}
	if (r->n) {
		int last = at(r->head, r->n, ARR_HIST, r->n - 1);

		if (seq <= r->seq[last] || t < r->t[last])
			return;
	}
	r->seq[r->head] = seq;
	r->t[r->head] = t;
	r->head = (r->head + 1) % ARR_HIST;
	if (r->n < ARR_HIST)
		r->n++;
}

uint64_t arr_rank_at(const struct arr_rank *r, uint64_t seq)
{
	int lo = 0, hi = r->n - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2, i = at(r->head, r->n, ARR_HIST, mid);

		if (r->seq[i] == seq)
			return r->t[i];
		if (r->seq[i] < seq)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return 0;
}

void arr_rank_own(struct arr_rank *r, uint64_t start, uint64_t end, int kind)
{
	if (end < start || kind < ARR_OWN_GPU || kind > ARR_OWN_COMM)
		return;
	if (r->nown) {
		int last = at(r->ownhead, r->nown, ARR_OWN, r->nown - 1);

		if (start <= r->own_start[last] || start < r->own_end[last])
			return;
	}
	r->own_start[r->ownhead] = start;
	r->own_end[r->ownhead] = end;
	r->own_kind[r->ownhead] = (uint8_t)kind;
	r->ownhead = (r->ownhead + 1) % ARR_OWN;
	if (r->nown < ARR_OWN)
		r->nown++;
}

/* Where [from, to) went: the overlap with each kind of the rank's own spans, in ns. */
static void attribute(const struct arr_rank *r, uint64_t from, uint64_t to, uint64_t out[4])
{
	int lo = 0, hi = r->nown - 1, first = r->nown;

	memset(out, 0, 4 * sizeof(out[0]));
	while (lo <= hi) { /* the first span ending after `from` (ends ascend: one thread) */
		int mid = (lo + hi) / 2;

		if (r->own_end[at(r->ownhead, r->nown, ARR_OWN, mid)] > from) {
			first = mid;
			hi = mid - 1;
		} else {
			lo = mid + 1;
		}
	}
	for (int k = first; k < r->nown; k++) {
		int i = at(r->ownhead, r->nown, ARR_OWN, k);
		uint64_t s = r->own_start[i] > from ? r->own_start[i] : from;
		uint64_t e = r->own_end[i] < to ? r->own_end[i] : to;

		if (r->own_start[i] >= to)
			break;
		if (e > s)
			out[r->own_kind[i]] += e - s;
	}
}

double arr_period(const double *g, int m, int max_per, int *ret_per, double *ret_max)
{
	static double score[PERIOD_GAPS / 3 + 2], sums[PERIOD_GAPS]; /* (one thread) */
	double best_score = 1e9;
	int best = 0, ns = 0;

	*ret_per = 0;
	*ret_max = 0;
	if (m > PERIOD_GAPS)
		m = PERIOD_GAPS;
	if (max_per > PERIOD_GAPS / 3)
		max_per = PERIOD_GAPS / 3;
	if (m < 6)
		return 0;
	/* L gaps a cycle: gap i is like gap i - L. The smallest L close to the best wins, so that
	 * a multiple of the period (which repeats as well) is not taken for it. */
	for (int L = 1; L <= max_per && L * 3 <= m; L++) {
		double d = 0, t = 0;

		score[L] = 1e9;

		for (int i = L; i < m; i++) {
			d += fabs(g[i] - g[i - L]);
			t += g[i];
		}
		score[L] = t > 0 ? d / t : 1e9;
		if (score[L] < best_score)
			best_score = score[L];
	}
	for (int L = 1; L <= max_per && L * 3 <= m; L++)
		if (score[L] <= best_score + 0.05) {
			best = L;
			break;
		}
	if (!best)
		return 0;
	*ret_per = best;
	for (int i = 0; i + best <= m; i++) {
		double s = 0;

		for (int k = 0; k < best; k++)
			s += g[i + k];
		sums[ns++] = s;
		if (s > *ret_max)
			*ret_max = s;
	}
	return arr_quantile(sums, ns, 0.5);
}

/* The first arrival of seq among the ranks here that have it, 0 none. */
static uint64_t local_first(struct arr_rank *const *r, int n, uint64_t comm, uint64_t seq, int *all)
{
	uint64_t f = 0;

	*all = 1;
	for (int i = 0; i < n; i++) {
		uint64_t t = r[i]->comm == comm ? arr_rank_at(r[i], seq) : 0;

		if (!t)
			*all = 0;
		else if (!f || t < f)
			f = t;
	}
	return f;
}

/* A remote host's first arrival of seq (0 unknown). */
static uint64_t remote_first(const struct arr_remote *f, uint64_t seq)
{
	if (seq < f->seq0 || seq >= f->seq0 + (uint64_t)f->n)
		return 0;
	return f->t[seq - f->seq0];
}

static void pace(struct arr_rank *const *r, int n, uint64_t hi, struct arr_job *j)
{
	static double g[PERIOD_GAPS], tmp[ARR_IVL]; /* (one thread) */
	uint64_t prev = 0;
	int m = 0, all;

	if (j->ivl_seq > hi || hi - j->ivl_seq > ARR_HIST) /* new run, or far behind */
		j->ivl_seq = hi > ARR_HIST ? hi - ARR_HIST : 0;
	for (uint64_t s = j->ivl_seq + 1; s <= hi; s++) {
		uint64_t f = local_first(r, n, j->comm, s, &all);

		if (!f)
			continue;
		if (j->ivl_t && s == j->ivl_seq + 1 && f >= j->ivl_t) {
			j->ivl[j->ivlhead] = (double)(f - j->ivl_t) / NS;
			j->ivlhead = (j->ivlhead + 1) % ARR_IVL;
			if (j->nivl < ARR_IVL)
				j->nivl++;
		}
		j->ivl_seq = s;
		j->ivl_t = f;
	}
	memcpy(tmp, j->ivl, sizeof(tmp));
	j->p99_interval_s = j->nivl >= ARR_MIN_IVL ? arr_quantile(tmp, j->nivl, 0.99) : 0;
	memcpy(tmp, j->ivl, sizeof(tmp));
	j->p50_interval_s = j->nivl >= ARR_MIN_IVL ? arr_quantile(tmp, j->nivl, 0.5) : 0;
	/* the period from the latest first arrivals */
	for (uint64_t s = hi > PERIOD_GAPS ? hi - PERIOD_GAPS : 1; s <= hi; s++) {
		uint64_t f = local_first(r, n, j->comm, s, &all);

		if (f && prev && f >= prev && m < PERIOD_GAPS)
			g[m++] = (double)(f - prev) / NS;
		prev = f;
	}
	{
		/* the most frequent finding holds: one scan's gaps can mislead (a stray delay, a
		 * busy host), and a wrong period would double the step */
		static double sums[PERIOD_GAPS];
		double mx;
		int per = 0, ns = 0;

		if (arr_period(g, m, ARR_MAX_PER, &per, &mx) > 0) {
			if (++j->per_seen >= 256) {
				for (int i = 0; i <= ARR_MAX_PER; i++)
					j->per_votes[i] /= 2;
				j->per_seen = 0;
			}
			j->per_votes[per]++;
		}
		per = 0;
		for (int i = 1; i <= ARR_MAX_PER; i++)
			if (j->per_votes[i] > j->per_votes[per])
				per = i;
		j->per_step = per;
		for (int i = 0; per && i + per <= m; i++) {
			double x = 0;

			for (int k = 0; k < per; k++)
				x += g[i + k];
			sums[ns++] = x;
		}
		j->step_s = arr_quantile(sums, ns, 0.5);
	}
}

/* The phase of the steps in a run of m first arrivals (newest first, f[k]): the position, modulo
 * per, after which the gap is the longest on average (where a step begins). */
static int step_phase(const uint64_t *f, int m, int per)
{
	double best = -1;
	int phase = 0;

	for (int q = 0; q < per; q++) {
		double sum = 0;
		int cnt = 0;

		/* f is newest first: the gap before collective k is f[k] - f[k + 1] */
		for (int k = q; k + 1 < m; k += per)
			if (f[k] >= f[k + 1]) {
				sum += (double)(f[k] - f[k + 1]);
				cnt++;
			}
		if (cnt && sum / cnt > best) {
			best = sum / cnt;
			phase = q;
		}
	}
	return phase;
}

void arr_job_eval(struct arr_rank *const *r, int n, const struct arr_remote *rem, int nrem,
		  uint64_t now, double window_s, struct arr_job *j)
{
	static uint64_t acc[ARR_RANKS][4], err[ARR_RANKS], late[ARR_RANKS], fs[ARR_HIST];
	static double steps[ARR_HIST];
	uint64_t hi = 0, lo = 0, win = (uint64_t)(window_s * NS);
	int ranks = 0, ncoll = 0, per, phase;

	if (n > ARR_RANKS)
		n = ARR_RANKS;
	j->ncoll = 0;
	j->latest_seq = 0;
	for (int i = 0; i < n; i++)
		memset(&r[i]->fig, 0, sizeof(r[i]->fig));
	for (int i = 0; i < n; i++) {
		uint64_t last, first;

		if (r[i]->comm != j->comm || !r[i]->n)
			continue;
		last = arr_rank_latest(r[i]);
		first = r[i]->seq[at(r[i]->head, r[i]->n, ARR_HIST, 0)];
		if (last > j->latest_seq)
			j->latest_seq = last;
		hi = !ranks || last < hi ? last : hi;
		lo = !ranks || first > lo ? first : lo;
		ranks++;
	}
	j->ranks = ranks;
	if (!ranks)
		return;
	pace(r, n, j->latest_seq, j);
	memset(acc, 0, sizeof(acc[0]) * (size_t)n);
	memset(err, 0, sizeof(err[0]) * (size_t)n);
	memset(late, 0, sizeof(late[0]) * (size_t)n);
	for (uint64_t s = hi; s >= lo && s > 0 && ncoll < ARR_HIST; s--) {
		uint64_t f, e = 0, fl;
		int all, told = 0;

		fl = f = local_first(r, n, j->comm, s, &all);
		if (!all || !f)
			continue;
		/* the first over the hosts that told this collective; with others, one at least */
		for (int k = 0; k < nrem; k++) {
			uint64_t t = rem[k].comm == j->comm ? remote_first(&rem[k], s) : 0;

			if (!t)
				continue;
			told++;
			if (t < f) {
				f = t;
				e = (uint64_t)(rem[k].err_s * NS);
			}
		}
		if (nrem && !told)
			continue;
		if (fl + win < now)
			break;
		fs[ncoll] = f;
		for (int i = 0; i < n; i++) {
			uint64_t t = arr_rank_at(r[i], s), part[4];

			r[i]->lat[ncoll] = 0;
			if (r[i]->comm != j->comm || t < f)
				continue; /* (a remote first in this host's clock can be later) */
			attribute(r[i], f, t, part);
			r[i]->lat[ncoll] = (double)(t - f) / NS;
			late[i] += t - f;
			if (e > err[i]) /* the largest error in what it is compared with */
				err[i] = e;
			for (int k = 1; k < 4; k++)
				acc[i][k] += part[k];
		}
		ncoll++;
	}
	j->ncoll = ncoll;
	/* steps: per consecutive collectives, aligned where a step begins (no window counted
	 * twice); a rank's lateness a step is the largest of its step's */
	per = j->per_step > 0 ? j->per_step : 1;
	phase = step_phase(fs, ncoll, per);
	for (int i = 0; i < n; i++) {
		struct arr_fig *x = &r[i]->fig;
		double c = ncoll ? (double)ncoll : 1, tot = (double)late[i] / NS / c;
		int nw = 0;

		if (r[i]->comm != j->comm)
			continue;
		for (int k = phase; k + per <= ncoll; k += per) {
			double mx = 0;

			for (int q = k; q < k + per; q++)
				if (r[i]->lat[q] > mx)
					mx = r[i]->lat[q];
			steps[nw++] = mx;
		}
		x->ncoll = ncoll;
		x->valid = ncoll >= MIN_COLL && nw >= 3;
		/* the median step: a save or an evaluation on one rank is one long step */
		x->late_s = arr_quantile(steps, nw, 0.5);
		x->err_s = (double)err[i] / NS;
		/* where its late time went, as shares of it */
		if (tot > 0) {
			x->gpu_s = (double)acc[i][ARR_OWN_GPU] / NS / c / tot * x->late_s;
			x->read_s = (double)acc[i][ARR_OWN_READ] / NS / c / tot * x->late_s;
			x->comm_s = (double)acc[i][ARR_OWN_COMM] / NS / c / tot * x->late_s;
		}
		x->cpu_s = fmax(0, x->late_s - x->gpu_s - x->read_s - x->comm_s);
	}
}

void arr_remote_merge(struct arr_remote *x, const struct arr_first *run)
{
	static uint64_t t[ARR_HIST]; /* (one thread) */
	uint64_t end, start, run_end;

	if (!run->n || run->n > ARR_FIRST_N || !run->seq0)
		return;
	run_end = run->seq0 + (uint64_t)run->n - 1;
	if (!x->n || x->comm != run->comm || run_end + ARR_HIST < x->seq0 ||
	    run->seq0 > x->seq0 + (uint64_t)x->n + ARR_HIST) { /* nothing in common: anew */
		x->comm = run->comm;
		x->seq0 = run->seq0;
		x->n = run->n;
		memcpy(x->t, run->t, sizeof(run->t[0]) * (size_t)run->n);
		return;
	}
	end = x->seq0 + (uint64_t)x->n - 1;
	if (run_end > end)
		end = run_end;
	start = end + 1 >= ARR_HIST ? end + 1 - ARR_HIST : 1;
	if (start < x->seq0 && start < run->seq0)
		start = x->seq0 < run->seq0 ? x->seq0 : run->seq0;
	memset(t, 0, sizeof(t));
	for (uint64_t q = start; q <= end; q++) {
		uint64_t v = remote_first(x, q);

		if (q >= run->seq0 && q <= run_end && run->t[q - run->seq0])
			v = run->t[q - run->seq0];
		t[q - start] = v;
	}
	x->seq0 = start;
	x->n = (int)(end - start + 1);
	memcpy(x->t, t, sizeof(t[0]) * (size_t)x->n);
}

int arr_job_first(struct arr_rank *const *r, int n, uint64_t comm, struct arr_first *out)
{
	uint64_t hi = 0;
	int ranks = 0, all;

	memset(out, 0, sizeof(*out));
	out->comm = comm;
	for (int i = 0; i < n; i++) {
		uint64_t last;

		if (r[i]->comm != comm || !r[i]->n)
			continue;
		last = arr_rank_latest(r[i]);
		hi = !ranks || last < hi ? last : hi;
		ranks++;
	}
	if (!ranks || !hi)
		return 0;
	out->seq0 = hi >= ARR_FIRST_N ? hi - ARR_FIRST_N + 1 : 1;
	out->n = (int)(hi - out->seq0 + 1);
	for (int i = 0; i < out->n; i++)
		out->t[i] = local_first(r, n, comm, out->seq0 + (uint64_t)i, &all);
	return out->n;
}
