/* Step cadence and stragglers (lib/cadence.c) with synthetic ranks: a synchronised job whose
 * ranks compute c_i per step and wait for the slowest; periods of wait-span patterns. */
#include <CUnit/Basic.h>
#include <math.h>
#include <string.h>

#include "lib/cadence.h"

#define MS 1000000ull
#define S  1000000000ull

/* n ranks, step k of each: rank i computes own[i] ms (read[i] of it reading), then waits for
 * the slowest; one span per step at its end. Observed every 500 ms. */
struct sim {
	int n;
	double own[8], rd[8];
	struct cad_obs o[8];
	struct cad_rank r[8];
	struct cad_job j;
	uint64_t t, next_step[8];
	int steps_api; /* the ranks call ftbpf_step() */
};

static void sim_init(struct sim *s, int n, double own_ms)
{
	memset(s, 0, sizeof(*s));
	s->n = n;
	for (int i = 0; i < n; i++)
		s->own[i] = own_ms;
	s->t = 1000 * S;
}

/* Advance by one step of the job: every rank's counters move. */
static void sim_step(struct sim *s)
{
	double st = 0;

	for (int i = 0; i < s->n; i++)
		if (s->own[i] > st)
			st = s->own[i];
	st += 1; /* the transfer itself: every rank waits 1 ms */
	for (int i = 0; i < s->n; i++) {
		struct cad_obs *o = &s->o[i];
		uint64_t w = (uint64_t)((st - s->own[i]) * MS),
			 start = s->t + (uint64_t)(s->own[i] * MS);

		o->wait_ns += w;
		o->read_ns += (uint64_t)(s->rd[i] * MS);
		o->spans++;
		if (s->steps_api)
			o->steps++;
		if (o->nspan == CAD_SPANS) {
			memmove(o->span_start, o->span_start + 1,
				sizeof(uint64_t) * (CAD_SPANS - 1));
			memmove(o->span_end, o->span_end + 1, sizeof(uint64_t) * (CAD_SPANS - 1));
			o->nspan--;
		}
		o->span_start[o->nspan] = start;
		o->span_end[o->nspan] = start + w;
		o->nspan++;
	}
	s->t += (uint64_t)(st * MS);
}

static void sim_scan(struct sim *s, const struct cad_params *p)
{
	struct cad_rank *rp[8];

	for (int i = 0; i < s->n; i++) {
		s->o[i].now_ns = s->t;
		cad_rank_observe(&s->r[i], &s->o[i], p);
		rp[i] = &s->r[i];
	}
	cad_job_eval(rp, s->n, s->t, p, &s->j);
}

/* Run for secs seconds of job time, scanning every 500 ms; first second (job time) a rank is a
 * straggler, or 0. */
static double sim_run(struct sim *s, const struct cad_params *p, double secs, int who)
{
	uint64_t end = s->t + (uint64_t)(secs * S), next = s->t, t0 = s->t;
	double first = 0;

	while (s->t < end) {
		sim_step(s);
		if (s->t >= next) {
			sim_scan(s, p);
			next += 500 * MS;
			if (!first && who >= 0 && s->r[who].straggler)
				first = (double)(s->t - t0) / S;
		}
	}
	return first;
}

static void test_healthy_no_straggler(void)
{
	struct cad_params p;
	struct sim s;

	cad_params_default(&p);
	sim_init(&s, 3, 20);
	s.own[2] = 20.8; /* 4% apart: within the spread of a healthy job */
	sim_run(&s, &p, 60, -1);
	for (int i = 0; i < 3; i++) {
		CU_ASSERT(s.r[i].valid);
		CU_ASSERT(!s.r[i].straggler);
	}
	CU_ASSERT(fabs(s.j.step_s - 0.0218) < 0.002);
	CU_ASSERT(s.j.rate > 40 && s.j.rate < 50);
	CU_ASSERT(s.j.p99_step_s > 0.02);
	CU_ASSERT_EQUAL(s.j.ranks, 3);
}

static void test_slow_rank_named_and_recovers(void)
{
	struct cad_params p;
	struct sim s;
	double t;

	cad_params_default(&p);
	sim_init(&s, 3, 20);
	sim_run(&s, &p, 20, -1);
	s.own[1] = 26; /* 30% slower */
	t = sim_run(&s, &p, 40, 1);
	CU_ASSERT(t > 0 && t <= 30);
	CU_ASSERT(s.r[1].straggler && !s.r[0].straggler && !s.r[2].straggler);
	CU_ASSERT(fabs(s.r[1].slowdown - 26.0 / 20) < 0.05);
	CU_ASSERT_EQUAL(s.r[1].reason, CAD_COMPUTE);
	CU_ASSERT(strstr(s.r[1].evidence, "1.30x") != NULL);
	CU_ASSERT(s.r[1].since_ns > 0);
	s.own[1] = 20;
	sim_run(&s, &p, 40, -1);
	CU_ASSERT(!s.r[1].straggler);
}

static void test_ten_percent(void)
{
	struct cad_params p;
	struct sim s;
	double t;

	cad_params_default(&p);
	sim_init(&s, 3, 20);
	sim_run(&s, &p, 20, -1);
	s.own[0] = 22.4; /* 10% of the step slower */
	t = sim_run(&s, &p, 60, 0);
	CU_ASSERT(t > 0 && t <= 60);
}

static void test_data_loader_stall(void)
{
	struct cad_params p;
	struct sim s;

	cad_params_default(&p);
	sim_init(&s, 3, 20);
	s.own[2] = 220; /* 200 ms blocked in read, then its 20 ms */
	s.rd[2] = 200;
	sim_run(&s, &p, 40, 2);
	CU_ASSERT(s.r[2].straggler);
	CU_ASSERT_EQUAL(s.r[2].reason, CAD_DATA);
	CU_ASSERT_STRING_EQUAL(cad_reason_name(s.r[2].reason), "data");
}

static void test_steps_from_the_client(void)
{
	struct cad_params p;
	struct sim s;

	cad_params_default(&p);
	sim_init(&s, 2, 50);
	s.steps_api = 1;
	sim_run(&s, &p, 30, -1);
	CU_ASSERT(fabs(s.r[0].step_s - 0.051) < 0.001);
	CU_ASSERT(fabs(s.j.step_s - 0.051) < 0.001);
}

static void test_too_little_to_judge(void)
{
	struct cad_params p;
	struct cad_rank r[2];
	struct cad_rank *rp[2] = {&r[0], &r[1]};
	struct cad_obs o;
	struct cad_job j;

	cad_params_default(&p);
	memset(r, 0, sizeof(r));
	memset(&j, 0, sizeof(j));
	memset(&o, 0, sizeof(o));
	/* no waits at all: not a step loop */
	for (int k = 0; k < 60; k++) {
		o.now_ns = 1000 * S + (uint64_t)k * 500 * MS;
		cad_rank_observe(&r[0], &o, &p);
		cad_rank_observe(&r[1], &o, &p);
		cad_job_eval(rp, 2, o.now_ns, &p, &j);
	}
	CU_ASSERT(!r[0].valid && !r[1].valid);
	CU_ASSERT_EQUAL(j.ranks, 0);
	CU_ASSERT_EQUAL(j.p99_step_s, 0);
	/* counters that go back (a new kernel record) start the history again */
	o.wait_ns = 5 * S;
	o.now_ns += S;
	cad_rank_observe(&r[0], &o, &p);
	o.wait_ns = 0;
	o.now_ns += S;
	cad_rank_observe(&r[0], &o, &p);
	CU_ASSERT_EQUAL(r[0].nh, 1);
}

static void test_period(void)
{
	uint64_t e[CAD_SPANS];
	double mx;
	int per;

	/* two waits a step: 5 ms and 15 ms apart, step 20 ms */
	for (int i = 0; i < 20; i++)
		e[i] = 1000 * S + (uint64_t)(i / 2) * 20 * MS + (i % 2 ? 5 * MS : 0);
	CU_ASSERT(fabs(cad_period(e, 20, &per, &mx) - 0.020) < 1e-6);
	CU_ASSERT_EQUAL(per, 2);
	/* one a step */
	for (int i = 0; i < 20; i++)
		e[i] = 1000 * S + (uint64_t)i * 300 * MS;
	CU_ASSERT(fabs(cad_period(e, 20, &per, &mx) - 0.3) < 1e-6);
	CU_ASSERT_EQUAL(per, 1);
	/* one long step among them: the max */
	e[19] += 5 * S;
	cad_period(e, 20, &per, &mx);
	CU_ASSERT(mx > 5);
	CU_ASSERT_EQUAL(cad_period(e, 4, &per, &mx), 0);
}

static void test_summary(void)
{
	struct cad_params p;
	struct cad_summary sum;
	struct sim s;

	cad_params_default(&p);
	sim_init(&s, 3, 20);
	s.own[1] = 30;
	sim_run(&s, &p, 40, -1);
	cad_summarize(&s.r[1], 1, &sum);
	CU_ASSERT(sum.flags & CAD_SUM_VALID);
	CU_ASSERT(sum.flags & CAD_SUM_STRAGGLER);
	CU_ASSERT(sum.slowdown_pm > 1400 && sum.slowdown_pm < 1600);
	CU_ASSERT(sum.step_us > 30000 && sum.step_us < 32000);
	CU_ASSERT_EQUAL(sum.rank, 1);
}

/* A job across hosts: each host's ranks as summaries, judged together. */
static void test_summaries_across_hosts(void)
{
	struct cad_params p;
	struct cad_summary sum[3];
	struct cad_rank r[3], *rp[3] = {&r[0], &r[1], &r[2]};
	struct cad_job j;
	struct sim s;

	cad_params_default(&p);
	sim_init(&s, 3, 20);
	s.own[2] = 26;
	sim_run(&s, &p, 15, -1); /* each "host" summarizes its rank */
	memset(r, 0, sizeof(r));
	memset(&j, 0, sizeof(j));
	for (int k = 0; k < 40; k++) { /* the summaries arrive every 0.5 s */
		for (int i = 0; i < 3; i++) {
			cad_summarize(&s.r[i], i, &sum[i]);
			cad_rank_from_summary(&r[i], &sum[i]);
		}
		cad_job_eval(rp, 3, 1000 * S + (uint64_t)k * 500000000ull, &p, &j);
	}
	CU_ASSERT(r[2].straggler && !r[0].straggler && !r[1].straggler);
	CU_ASSERT(fabs(r[2].slowdown - s.r[2].slowdown) < 0.01);
	CU_ASSERT(fabs(j.step_s - s.j.step_s) < 0.001);
}

int main(void)
{
	CU_pSuite s;
	int fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("cadence", NULL, NULL);
	CU_add_test(s, "healthy job: no straggler, step and rate", test_healthy_no_straggler);
	CU_add_test(s, "30% slower rank named, then recovers", test_slow_rank_named_and_recovers);
	CU_add_test(s, "10% slower rank named", test_ten_percent);
	CU_add_test(s, "data-loader stall: reason data", test_data_loader_stall);
	CU_add_test(s, "steps from ftbpf_step()", test_steps_from_the_client);
	CU_add_test(s, "too little to judge; counters reset", test_too_little_to_judge);
	CU_add_test(s, "period of wait spans", test_period);
	CU_add_test(s, "summary for the cross-host view", test_summary);
	CU_add_test(s, "a job across hosts, from summaries", test_summaries_across_hosts);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = (int)CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails;
}
