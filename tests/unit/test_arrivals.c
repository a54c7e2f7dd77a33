/* Collective arrivals (lib/arrivals.c) with synthetic GPU ranks shaped as measured on an H200:
 * each step four all-reduces issued back to back, the host then in a synchronisation for the
 * rest of the step; a slow rank does extra work (on its GPU, its CPU or its input) first. */
#include <CUnit/Basic.h>
#include <math.h>
#include <string.h>

#include "lib/arrivals.h"

#define MS 1000000ull

static uint64_t remote_at(const struct arr_remote *x, uint64_t seq)
{
	return seq >= x->seq0 && seq < x->seq0 + (uint64_t)x->n ? x->t[seq - x->seq0] : 0;
}
#define S 1000000000ull

struct sim {
	int n;
	struct arr_rank r[4];
	struct arr_rank *rp[4];
	struct arr_job j;
	uint64_t t, seq;
	double extra_ms[4]; /* extra work before the step's collectives */
	int extra_kind[4];  /* ARR_OWN_GPU, ARR_OWN_READ, 0: CPU */
	double skew_ms[4];  /* this rank's clock error (a host's) */
};

static void sim_init(struct sim *s, int n)
{
	memset(s, 0, sizeof(*s));
	s->n = n;
	s->t = 1000 * S;
	for (int i = 0; i < n; i++) {
		s->rp[i] = &s->r[i];
		s->r[i].comm = 7;
	}
	s->j.comm = 7;
}

/* One step of 80 ms: every rank issues 4 all-reduces after its extra work, then waits in a
 * synchronisation until the last rank's collectives are done. */
static void sim_step(struct sim *s)
{
	double late = 0;

	for (int i = 0; i < s->n; i++)
		if (s->extra_ms[i] > late)
			late = s->extra_ms[i];
	for (int i = 0; i < s->n; i++) {
		uint64_t a = s->t + (uint64_t)(s->extra_ms[i] * MS) + 100000, sync_end;

		if (s->extra_ms[i] > 0 && s->extra_kind[i])
			arr_rank_own(&s->r[i], s->t, s->t + (uint64_t)(s->extra_ms[i] * MS),
				     s->extra_kind[i]);
		for (int k = 1; k <= 4; k++)
			arr_rank_add(&s->r[i], 7, s->seq + (uint64_t)k,
				     a + (uint64_t)k * 20000 + (uint64_t)(s->skew_ms[i] * MS));
		sync_end = s->t + (uint64_t)((late + 80) * MS);
		arr_rank_own(&s->r[i], a + 200000, sync_end, ARR_OWN_GPU);
	}
	s->seq += 4;
	s->t += (uint64_t)((late + 81) * MS);
}

static void sim_run(struct sim *s, int steps)
{
	for (int k = 0; k < steps; k++)
		sim_step(s);
	arr_job_eval(s->rp, s->n, NULL, 0, s->t, 10, &s->j);
}

static void test_healthy(void)
{
	struct sim s;

	sim_init(&s, 3);
	sim_run(&s, 200);
	CU_ASSERT(s.j.ranks == 3 && s.j.ncoll > 100);
	for (int i = 0; i < 3; i++) {
		CU_ASSERT(s.r[i].fig.valid);
		CU_ASSERT(s.r[i].fig.late_s < 0.0001);
	}
	/* four collectives a step: the period is the step */
	CU_ASSERT_EQUAL(s.j.per_step, 4);
	CU_ASSERT(fabs(s.j.step_s - 0.081) < 0.002);
	CU_ASSERT(s.j.p99_interval_s > 0.07 && s.j.p99_interval_s < 0.09);
	CU_ASSERT(s.j.p50_interval_s < 0.001);
}

static void test_gpu_straggler(void)
{
	struct sim s;

	sim_init(&s, 2);
	s.extra_ms[1] = 32; /* 40% of an 80 ms step on its GPU, waited for in a synchronisation */
	s.extra_kind[1] = ARR_OWN_GPU;
	sim_run(&s, 200);
	CU_ASSERT(fabs(s.r[1].fig.late_s - 0.032) < 0.001);
	CU_ASSERT(s.r[0].fig.late_s < 0.0001);
	CU_ASSERT(s.r[1].fig.gpu_s > 0.9 * s.r[1].fig.late_s);
	CU_ASSERT(s.r[1].fig.cpu_s < 0.001);
}

static void test_cpu_and_data_stragglers(void)
{
	struct sim s;

	sim_init(&s, 3);
	s.extra_ms[1] = 12; /* its CPU */
	s.extra_ms[2] = 8;
	s.extra_kind[2] = ARR_OWN_READ; /* its input */
	sim_run(&s, 200);
	CU_ASSERT(fabs(s.r[1].fig.late_s - 0.012) < 0.001);
	CU_ASSERT(s.r[1].fig.cpu_s > 0.9 * s.r[1].fig.late_s);
	CU_ASSERT(fabs(s.r[2].fig.late_s - 0.008) < 0.001);
	CU_ASSERT(s.r[2].fig.read_s > 0.9 * s.r[2].fig.late_s);
}

/* Rank 1 alone on another host: this host sees rank 0 only, and that host's first arrivals. */
static void test_remote_first(void)
{
	struct sim s;
	struct arr_first run;
	static struct arr_remote f;
	struct arr_job j;
	struct arr_rank *one[1];

	sim_init(&s, 2);
	s.extra_ms[1] = 20;
	s.extra_kind[1] = ARR_OWN_GPU;
	sim_run(&s, 100);
	/* host B (rank 1) tells its firsts; host A (rank 0) judges its own rank against them */
	one[0] = &s.r[1];
	CU_ASSERT(arr_job_first(one, 1, 7, &run) == ARR_FIRST_N);
	CU_ASSERT_EQUAL(run.seq0 + (uint64_t)run.n - 1, s.seq);
	memset(&f, 0, sizeof(f));
	arr_remote_merge(&f, &run);
	memset(&j, 0, sizeof(j));
	j.comm = 7;
	one[0] = &s.r[0];
	arr_job_eval(one, 1, &f, 1, s.t, 10, &j);
	CU_ASSERT(j.ncoll == ARR_FIRST_N);
	CU_ASSERT(s.r[0].fig.late_s < 0.0001); /* rank 0 is first */
	/* host B judges rank 1 against A's firsts: 20 ms late, on its GPU */
	one[0] = &s.r[0];
	arr_job_first(one, 1, 7, &run);
	memset(&f, 0, sizeof(f));
	arr_remote_merge(&f, &run);
	f.err_s = 0.0005;
	memset(&j, 0, sizeof(j));
	j.comm = 7;
	one[0] = &s.r[1];
	arr_job_eval(one, 1, &f, 1, s.t, 10, &j);
	CU_ASSERT(fabs(s.r[1].fig.late_s - 0.020) < 0.001);
	CU_ASSERT(s.r[1].fig.gpu_s > 0.9 * s.r[1].fig.late_s);
	CU_ASSERT(fabs(s.r[1].fig.err_s - 0.0005) < 0.0001);
	/* without the other host's firsts for these collectives, nothing is compared */
	f.seq0 = s.seq + 1000;
	f.n = 64;
	memset(&j, 0, sizeof(j));
	j.comm = 7;
	arr_job_eval(one, 1, &f, 1, s.t, 10, &j);
	CU_ASSERT(j.ncoll == 0 && !s.r[1].fig.valid);
}

/* MPI's shape: two all-reduces a step, the second right after the first completes everywhere:
 * the slow rank is late at the first only; its lateness a step is the whole of it. */
static void test_two_per_step(void)
{
	struct arr_rank r[2], *rp[2] = {&r[0], &r[1]};
	struct arr_job j;
	uint64_t t = 1000 * S, q = 0;

	memset(r, 0, sizeof(r));
	memset(&j, 0, sizeof(j));
	j.comm = 9;
	for (int k = 0; k < 400; k++) {
		q++;
		arr_rank_add(&r[0], 9, q, t + 20 * MS);
		arr_rank_add(&r[1], 9, q, t + 26 * MS); /* 30% more compute */
		q++;
		arr_rank_add(&r[0], 9, q, t + 27 * MS);
		arr_rank_add(&r[1], 9, q, t + 27 * MS);
		t += 28 * MS;
	}
	arr_job_eval(rp, 2, NULL, 0, t, 10, &j);
	CU_ASSERT_EQUAL(j.per_step, 2);
	CU_ASSERT(fabs(j.step_s - 0.028) < 0.001);
	CU_ASSERT(fabs(r[1].fig.late_s - 0.006) < 0.0005);
	CU_ASSERT(r[0].fig.late_s < 0.0001);
	CU_ASSERT(fabs(r[1].fig.cpu_s - 0.006) < 0.0005); /* no own span: its CPU */
}

/* A 20 s save on rank 0 while the others wait at the barrier after it: one collective 20 s
 * late is not a straggler's lateness. */
static void test_one_long_step(void)
{
	struct sim s;

	sim_init(&s, 2);
	sim_run(&s, 60);
	s.extra_ms[0] = 20000;
	sim_step(&s);
	s.extra_ms[0] = 0;
	for (int k = 0; k < 40; k++)
		sim_step(&s);
	arr_job_eval(s.rp, 2, NULL, 0, s.t, 30, &s.j);
	CU_ASSERT(s.r[0].fig.valid);
	CU_ASSERT(s.r[0].fig.late_s < 0.001);
}

/* A host's runs of 64 gathered: the latest 512 kept, newer runs win, gaps stay unknown. */
static void test_remote_merge(void)
{
	static struct arr_remote x;
	struct arr_first run = {.comm = 3, .n = ARR_FIRST_N};

	memset(&x, 0, sizeof(x));
	for (uint64_t b = 1; b <= 1000; b += 100) { /* runs 1-64, 101-164, ... */
		run.seq0 = b;
		for (int i = 0; i < ARR_FIRST_N; i++)
			run.t[i] = (b + (uint64_t)i) * 1000;
		arr_remote_merge(&x, &run);
	}
	CU_ASSERT_EQUAL(x.comm, 3);
	CU_ASSERT_EQUAL(x.seq0 + (uint64_t)x.n - 1, 964);
	CU_ASSERT_EQUAL(x.n, ARR_HIST);
	CU_ASSERT_EQUAL(remote_at(&x, 964), 964000);
	CU_ASSERT_EQUAL(remote_at(&x, 901), 901000);
	CU_ASSERT_EQUAL(remote_at(&x, 880), 0); /* never told */
	CU_ASSERT_EQUAL(remote_at(&x, 501), 501000);
	/* another communicator: anew */
	run.comm = 4;
	run.seq0 = 5;
	arr_remote_merge(&x, &run);
	CU_ASSERT_EQUAL(x.comm, 4);
	CU_ASSERT_EQUAL(x.seq0, 5);
	CU_ASSERT_EQUAL(x.n, ARR_FIRST_N);
}

static void test_history(void)
{
	struct arr_rank r;

	memset(&r, 0, sizeof(r));
	arr_rank_add(&r, 5, 10, 1000);
	arr_rank_add(&r, 5, 11, 2000);
	arr_rank_add(&r, 5, 11, 3000); /* again: ignored */
	arr_rank_add(&r, 5, 12, 1500); /* back in time: ignored */
	arr_rank_add(&r, 5, 14, 4000); /* a gap: kept */
	CU_ASSERT_EQUAL(arr_rank_latest(&r), 14);
	CU_ASSERT_EQUAL(arr_rank_at(&r, 11), 2000);
	CU_ASSERT_EQUAL(arr_rank_at(&r, 13), 0);
	for (uint64_t s = 15; s < 15 + ARR_HIST; s++)
		arr_rank_add(&r, 5, s, s * 1000);
	CU_ASSERT_EQUAL(arr_rank_at(&r, 14), 0); /* out of the ring */
	CU_ASSERT_EQUAL(arr_rank_at(&r, 15 + ARR_HIST - 1), (15 + ARR_HIST - 1) * 1000);
	arr_rank_add(&r, 6, 1, 9999999); /* another communicator: a new history */
	CU_ASSERT_EQUAL(r.n, 1);
	CU_ASSERT_EQUAL(arr_rank_latest(&r), 1);
}

static void test_period(void)
{
	double g[60];
	int per;
	double mx, st;

	for (int i = 0; i < 60; i++) /* 2 collectives a step: 1 ms, then 20 ms */
		g[i] = i % 2 ? 0.020 : 0.001;
	st = arr_period(g, 60, 32, &per, &mx);
	CU_ASSERT_EQUAL(per, 2);
	CU_ASSERT(fabs(st - 0.021) < 0.0005);
	CU_ASSERT(arr_period(g, 4, 32, &per, &mx) == 0 && per == 0);
}

int main(void)
{
	CU_pSuite s;
	int fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("arrivals", NULL, NULL);
	CU_add_test(s, "healthy GPU job: no lateness, the pace", test_healthy);
	CU_add_test(s, "40% on its GPU: late, in its synchronisation", test_gpu_straggler);
	CU_add_test(s, "CPU and input stragglers told apart", test_cpu_and_data_stragglers);
	CU_add_test(s, "another host's first arrivals", test_remote_first);
	CU_add_test(s, "two collectives a step, one late", test_two_per_step);
	CU_add_test(s, "one long step is not lateness", test_one_long_step);
	CU_add_test(s, "a host's runs gathered", test_remote_merge);
	CU_add_test(s, "a rank's history", test_history);
	CU_add_test(s, "period of a collective sequence", test_period);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = (int)CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails;
}
