/* Step cadence across hosts (agent/cadparts.c): which cadence parts are believed, who holds a
 * rank, newcomers answered once, what is sent and when, a dead host forgotten. */
#include <CUnit/Basic.h>
#include <json-c/json.h>
#include <string.h>

#include "agent/cadparts.h"
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
	struct cadparts *cp = cadparts_new();
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
	struct cadparts *cp = cadparts_new();
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
	CU_ASSERT_EQUAL(cadparts_parts(j, cv, 8), 1);
	CU_ASSERT_EQUAL(cv[0].ncad, 1);
	cadparts_free(cp);
	ranks_fini(&r);
}

int main(void)
{
	CU_pSuite s;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("cadparts", NULL, NULL);
	CU_add_test(s, "which cadence parts are believed, who holds a rank", test_believed);
	CU_add_test(s, "what is sent, to whom, when", test_sending);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	{
		int f = (int)CU_get_number_of_failures();

		CU_cleanup_registry();
		return f ? 1 : 0;
	}
}
