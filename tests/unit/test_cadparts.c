/* Step cadence across hosts (proto/cadparts.c): which cadence parts are believed, who holds a
 * rank, newcomers answered once, what is sent and when, a dead host forgotten. */
#include <CUnit/Basic.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "proto/cadparts.h"
#include "lib/jobview.h"
#include "lib/ranks.h"
#include "proto/part_proto.h"

#define S  1000000000ull
#define JB "torch:10.0.0.1:29500"

static const struct mesh_addr A = {0x0a000002, 7946}, B = {0x0a000003, 7946},
			      Z = {0x0a000009, 7946};

/* A cadence part from `from` for ranks lo..hi of JB (world 4), own share `own`. */
static struct part_packet cad(struct mesh_addr from, int lo, int hi, double own, uint8_t flags)
{
	struct part_packet p = {.from = from, .ttl_ms = 6000, .flags = PART_F_CAD | flags};

	strcpy(p.part.job, JB);
	p.part.world_size = 4;
	p.part.nchunks = 1;
	for (int r = lo; r <= hi; r++)
		p.part.cad[p.part.ncad++] =
		    (struct cad_summary){.rank = r,
					 .flags = CAD_SUM_VALID,
					 .own_ppm = (uint32_t)(own * 1e6),
					 .wait_ppm = (uint32_t)((1 - own) * 1e6),
					 .step_us = 100000,
					 .window_ms = 10000};
	return p;
}

/* A job of world 4 here: ranks 0 and 1. */
static struct job *job_here(struct ranks *r)
{
	struct rank *a = ranks_add(r, 100, 1, 0, JB), *b = ranks_add(r, 101, 2, 0, JB);

	a->id.rank = 0, b->id.rank = 1;
	a->id.world_size = b->id.world_size = 4;
	return a->job;
}

static int remote_ranks(struct cadparts *cp, const struct job *j, uint64_t now, int *out)
{
	struct cad_remote *x[16];
	int n = cadparts_remote(cp, j, now, x, 16);

	for (int i = 0; i < n; i++)
		out[i] = x[i]->rank;
	return n;
}

static void test_believed(void)
{
	struct ranks r;
	struct cadparts *cp = cadparts_new(0);
	struct job *j;
	struct part_packet p;
	int got[16], n;

	ranks_init(&r);
	j = job_here(&r);
	p = cad(A, 2, 3, 0.6, 0);
	CU_ASSERT_EQUAL(cadparts_accept(cp, &p, 1, j, 10 * S), 1); /* new here: answer it */
	CU_ASSERT_EQUAL(cadparts_accept(cp, &p, 1, j, 11 * S), 0); /* known: no answer */
	n = remote_ranks(cp, j, 11 * S, got);
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_TRUE(cadparts_is_host(cp, j, &A, 11 * S));
	CU_ASSERT_FALSE(cadparts_is_host(cp, j, &B, 11 * S));
	/* not believed: another world, one of our live ranks, no job of ours */
	p = cad(B, 3, 3, 0.9, 0);
	p.part.world_size = 5;
	CU_ASSERT_EQUAL(cadparts_accept(cp, &p, 1, j, 12 * S), -1);
	p = cad(Z, 0, 0, 0.99, 0);
	CU_ASSERT_EQUAL(cadparts_accept(cp, &p, 0, j, 12 * S), -1);
	CU_ASSERT_EQUAL(cadparts_accept(cp, &p, 0, NULL, 12 * S), -1);
	/* a stranger claims host A's rank 3: A's fresh claim holds */
	p = cad(Z, 3, 3, 0.99, 0);
	cadparts_accept(cp, &p, 0, j, 12 * S);
	n = remote_ranks(cp, j, 12 * S, got);
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_FALSE(cadparts_is_host(cp, j, &Z, 12 * S));
	{
		struct json_object *c = json_object_new_object(), *v;

		cadparts_counters(cp, c);
		CU_ASSERT_TRUE(json_object_object_get_ex(c, "cadence_world_mismatch", &v) &&
			       json_object_get_int(v) == 1);
		CU_ASSERT_TRUE(json_object_object_get_ex(c, "cadence_claim_our_ranks", &v) &&
			       json_object_get_int(v) == 1);
		CU_ASSERT_TRUE(json_object_object_get_ex(c, "cadence_not_ours", &v) &&
			       json_object_get_int(v) == 1);
		CU_ASSERT_TRUE(json_object_object_get_ex(c, "cadence_rank_conflict", &v) &&
			       json_object_get_int(v) == 1);
		json_object_put(c);
	}
	/* expired (6 s ttl): gone from the judgement, then from the table */
	CU_ASSERT_EQUAL(remote_ranks(cp, j, 17 * S, got), 0);
	cadparts_tick(cp, &r, 17 * S);
	/* a live member takes a rank over from a stranger at once; a dead host is forgotten */
	p = cad(Z, 3, 3, 0.5, 0);
	CU_ASSERT_EQUAL(cadparts_accept(cp, &p, 0, j, 20 * S), 1);
	p = cad(B, 3, 3, 0.5, 0);
	cadparts_accept(cp, &p, 1, j, 20 * S);
	CU_ASSERT_TRUE(cadparts_is_host(cp, j, &B, 20 * S));
	CU_ASSERT_FALSE(cadparts_is_host(cp, j, &Z, 20 * S));
	cadparts_forget_host(cp, &B);
	CU_ASSERT_EQUAL(remote_ranks(cp, j, 20 * S, got), 0);
	/* a job gone: its entries go at the next tick */
	p = cad(A, 2, 3, 0.6, 0);
	cadparts_accept(cp, &p, 1, j, 21 * S);
	j->members[0]->s.exited = j->members[1]->s.exited = 1;
	ranks_remove(&r, j->members[1]);
	ranks_remove(&r, j->members[0]);
	cadparts_tick(cp, &r, 22 * S);
	j = job_here(&r);
	CU_ASSERT_EQUAL(remote_ranks(cp, j, 22 * S, got), 0);
	cadparts_free(cp);
	ranks_fini(&r);
}

static void test_sending(void)
{
	struct ranks r;
	struct cadparts *cp = cadparts_new(0);
	struct cad_timing t = {0};
	struct jv_part cv[8];
	struct part_packet p;
	struct job *j;
	uint32_t ttl;
	int all = -1, nc;

	ranks_init(&r);
	j = job_here(&r);
	/* the first time: to every member, our two ranks, the world said */
	nc = cadparts_build(cp, j, &t, 10 * S, cv, 8, &all, &ttl);
	CU_ASSERT_EQUAL(nc, 1);
	CU_ASSERT_EQUAL(all, 1);
	CU_ASSERT_EQUAL(cv[0].ncad, 2);
	CU_ASSERT_EQUAL(cv[0].world_size, 4);
	CU_ASSERT_EQUAL(ttl, 6000); /* three periods of 2 s */
	/* nothing within the period */
	CU_ASSERT_EQUAL(cadparts_build(cp, j, &t, 11 * S, cv, 8, &all, &ttl), 0);
	/* after it, with ranks 2-3 still unknown: not every member again before 30 s */
	all = -1;
	CU_ASSERT_EQUAL(cadparts_build(cp, j, &t, 13 * S, cv, 8, &all, &ttl), 1);
	CU_ASSERT_EQUAL(all, 0);
	all = -1;
	CU_ASSERT_EQUAL(cadparts_build(cp, j, &t, 41 * S, cv, 8, &all, &ttl), 1);
	CU_ASSERT_EQUAL(all, 1);
	/* every rank known (A's fresh): only to the job's hosts, though 30 s went by */
	p = cad(A, 2, 3, 0.6, 0);
	cadparts_accept(cp, &p, 1, j, 70 * S);
	all = -1;
	CU_ASSERT_EQUAL(cadparts_build(cp, j, &t, 72 * S, cv, 8, &all, &ttl), 1);
	CU_ASSERT_EQUAL(all, 0);
	/* the period grows with the hosts (20 ms each, 2 to 20 s) */
	CU_ASSERT_EQUAL(cad_part_period_ns(1), 2 * S);
	CU_ASSERT_EQUAL(cad_part_period_ns(100), 2 * S);
	CU_ASSERT_EQUAL(cad_part_period_ns(500), 10 * S);
	CU_ASSERT_EQUAL(cad_part_period_ns(1000), 20 * S);
	CU_ASSERT_EQUAL(cad_part_period_ns(100000), 20 * S);
	/* a rank beyond the world we know is not sent (the receivers would refuse the part) */
	j->members[1]->id.rank = 9;
	CU_ASSERT_EQUAL(cadparts_parts(cp, j, cv, 8), 1);
	CU_ASSERT_EQUAL(cv[0].ncad, 1);
	cadparts_free(cp);
	ranks_fini(&r);
}

/* Host A (ranks 0, 1) and host B (ranks 2, 3) exchange cadence parts; B's clock is 30 ms ahead
 * of A's on the wire (the tests' skew: one machine, one clock underneath). Each learns the other's offset within its bound from the round trips, and
 * gets the other's first arrivals into its own clock. */
static void test_clocks_and_firsts(void)
{
	struct ranks ra, rb;
	struct cadparts *a = cadparts_new(0), *b = cadparts_new(30000000);
	struct job *ja, *jb;
	struct part_packet p;
	static struct arr_remote f[4];
	uint64_t t = 1000 * S, base;
	struct json_object *ck;
	int n;

	ranks_init(&ra);
	ranks_init(&rb);
	ja = job_here(&ra);
	{
		struct rank *x = ranks_add(&rb, 200, 1, 0, JB), *y = ranks_add(&rb, 201, 2, 0, JB);

		x->id.rank = 2, y->id.rank = 3;
		x->id.world_size = y->id.world_size = 4;
		jb = x->job;
	}
	/* B's ranks issued collectives 1..100, 80 ms apart (true time = A's clock) */
	base = t - 10 * S;
	jb->arr.comm = ja->arr.comm = 7;
	for (int i = 0; i < 2; i++)
		for (uint64_t q = 1; q <= 100; q++)
			arr_rank_add(&jb->members[i]->arr, 7, q,
				     base + q * 80000000ull + (uint64_t)i * 1000);
	for (int round = 0; round < 4; round++) {
		struct jv_part cv[2];

		/* A -> B (0.3 ms), B holds it 2 s, B -> A (0.3 ms) */
		CU_ASSERT_EQUAL(cadparts_parts(a, ja, cv, 2), 1);
		p = cad(A, 0, 1, 0.1, 0);
		cadparts_stamp(a, &B, t, &p);
		t += 300000;
		cadparts_accept(b, &p, 1, jb, t);
		t += 2 * S;
		CU_ASSERT_EQUAL(cadparts_parts(b, jb, cv, 2), 1);
		p = cad(B, 2, 3, 0.1, 0);
		p.part.first = cv[0].first;
		cadparts_stamp(b, &A, t, &p);
		t += 300000;
		cadparts_accept(a, &p, 1, ja, t);
		t += 2 * S;
	}
	n = cadparts_firsts(a, ja, t, f, 4);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_EQUAL(f[0].comm, 7);
	CU_ASSERT_EQUAL(f[0].seq0 + (uint64_t)f[0].n - 1, 100);
	/* B's first arrival of collective 100 in A's clock: the true time, within the bound */
	{
		int64_t d = (int64_t)f[0].t[f[0].n - 1] - (int64_t)(base + 100 * 80000000ull);

		CU_ASSERT((d < 0 ? -d : d) <= (int64_t)(f[0].err_s * 1e9) + 1000);

		CU_ASSERT(f[0].err_s > 0 && f[0].err_s < 0.002); /* rtt/2, 2 s holds at 200 ppm */
	}
	ck = json_object_new_array();
	cadparts_clocks_json(a, t, ck);
	CU_ASSERT_EQUAL(json_object_array_length(ck), 1);
	{
		double off = json_object_get_double(
		    json_object_object_get(json_object_array_get_idx(ck, 0), "offset_ms"));

		CU_ASSERT(off > 29.5 && off < 30.5);
	}
	json_object_put(ck);
	/* a host it never heard back from has no clock: its firsts are not compared */
	cadparts_forget_host(a, &B);
	CU_ASSERT_EQUAL(cadparts_firsts(a, ja, t, f, 4), 0);
	cadparts_free(a);
	cadparts_free(b);
	ranks_fini(&ra);
	ranks_fini(&rb);
}

int main(void)
{
	CU_pSuite s;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("cadparts", NULL, NULL);
	CU_add_test(s, "which cadence parts are believed, who holds a rank", test_believed);
	CU_add_test(s, "what is sent, to whom, when", test_sending);
	CU_add_test(s, "clocks and first arrivals across hosts", test_clocks_and_firsts);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	{
		int f = (int)CU_get_number_of_failures();

		CU_cleanup_registry();
		return f ? 1 : 0;
	}
}
