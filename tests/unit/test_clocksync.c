/* The clock offset between two hosts from part round trips (lib/clocksync.c): a known offset
 * and delays, asymmetric ones, holds of seconds, samples out of order, lies. */
#include <CUnit/Basic.h>
#include <string.h>

#include "lib/clocksync.h"

#define MS 1000000ull
#define S  1000000000ull

/* Host A's clock is t; host B's is t + off. A part A -> B takes da, B -> A db (true time). */
struct pair {
	struct clk_peer a_of_b, b_of_a; /* what A knows of B, B of A */
	int64_t off;
	uint64_t t; /* true time = A's clock */
};

static void a_sends(struct pair *p, uint64_t da)
{
	uint64_t echo, hold, sent = p->t;

	clk_echo(&p->a_of_b, sent, &echo, &hold);
	p->t += da;
	clk_receive(&p->b_of_a, sent, echo, hold, p->t + (uint64_t)p->off);
}

static void b_sends(struct pair *p, uint64_t db)
{
	uint64_t echo, hold, sent = p->t + (uint64_t)p->off;

	clk_echo(&p->b_of_a, sent, &echo, &hold);
	p->t += db;
	clk_receive(&p->a_of_b, sent, echo, hold, p->t);
}

static void test_known_offset(void)
{
	struct pair p;
	int64_t off;
	uint64_t bound;

	memset(&p, 0, sizeof(p));
	p.off = 30 * (int64_t)MS; /* B's clock is 30 ms ahead */
	p.t = 1000 * S;
	CU_ASSERT(clk_offset(&p.a_of_b, p.t, &off, &bound) < 0);
	for (int i = 0; i < 10; i++) {
		a_sends(&p, 200000); /* 0.2 ms each way */
		p.t += 2 * S;	     /* B holds it 2 s (a cadence period) */
		b_sends(&p, 200000);
		p.t += 2 * S;
	}
	CU_ASSERT(clk_offset(&p.a_of_b, p.t, &off, &bound) == 0);
	CU_ASSERT(off > 30 * (int64_t)MS - 1000 && off < 30 * (int64_t)MS + 1000);
	CU_ASSERT(bound < 2 * MS);
	CU_ASSERT(clk_offset(&p.b_of_a, p.t, &off, &bound) == 0);
	CU_ASSERT(off > -30 * (int64_t)MS - 1000 && off < -30 * (int64_t)MS + 1000);
}

/* A slow path one way: the estimate is off by up to half the difference, and the bound says so. */
static void test_asymmetric_delay_bounded(void)
{
	struct pair p;
	int64_t off, err;
	uint64_t bound;

	memset(&p, 0, sizeof(p));
	p.off = -(int64_t)(7 * S);
	p.t = 1000 * S;
	for (int i = 0; i < 5; i++) {
		a_sends(&p, 9 * MS);
		p.t += S;
		b_sends(&p, 1 * MS);
		p.t += S;
	}
	CU_ASSERT(clk_offset(&p.a_of_b, p.t, &off, &bound) == 0);
	err = off - p.off;
	CU_ASSERT((uint64_t)(err < 0 ? -err : err) <= bound);
	CU_ASSERT(bound >= 4 * MS && bound < 6 * MS);
}

/* The shortest round trip of the last samples wins; a queueing spike does not move it. */
static void test_min_delay_kept(void)
{
	struct pair p;
	int64_t off;
	uint64_t bound;

	memset(&p, 0, sizeof(p));
	p.off = 5 * (int64_t)MS;
	p.t = 1000 * S;
	for (int i = 0; i < 6; i++) {
		a_sends(&p, i == 3 ? 300 * MS : MS / 2);
		p.t += S;
		b_sends(&p, MS / 2);
		p.t += S;
	}
	CU_ASSERT(clk_offset(&p.a_of_b, p.t, &off, &bound) == 0);
	CU_ASSERT(off > 5 * (int64_t)MS - 200000 && off < 5 * (int64_t)MS + 200000);
	CU_ASSERT(bound < MS);
}

/* An echo from the future, a hold longer than the round trip, or a stale echo: refused. */
static void test_lies_refused(void)
{
	struct clk_peer c;
	int64_t off;
	uint64_t bound;

	memset(&c, 0, sizeof(c));
	CU_ASSERT(clk_receive(&c, 50 * S, 0, 0, 100 * S) == 0);		/* nothing to take yet */
	CU_ASSERT(clk_receive(&c, 50 * S, 200 * S, 0, 100 * S) < 0);	/* echo after now */
	CU_ASSERT(clk_receive(&c, 50 * S, 99 * S, 2 * S, 100 * S) < 0); /* held > round trip */
	CU_ASSERT(clk_receive(&c, 50 * S, 10 * S, 0, 100 * S) < 0);	/* 90 s old */
	CU_ASSERT(clk_receive(&c, 50 * S, 97 * S, 0, 100 * S) < 0);	/* 3 s round trip */
	CU_ASSERT(c.rejected == 4);
	CU_ASSERT(clk_offset(&c, 100 * S, &off, &bound) < 0);
	/* old samples are forgotten */
	CU_ASSERT(clk_receive(&c, 51 * S, 99 * S, 0, 100 * S) == 1);
	CU_ASSERT(clk_offset(&c, 100 * S, &off, &bound) == 0);
	CU_ASSERT(clk_offset(&c, 200 * S, &off, &bound) < 0);
}

int main(void)
{
	CU_pSuite s;
	int fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("clocksync", NULL, NULL);
	CU_add_test(s, "a known offset, 2 s holds", test_known_offset);
	CU_add_test(s, "asymmetric delays: within the bound", test_asymmetric_delay_bounded);
	CU_add_test(s, "the shortest round trip wins", test_min_delay_kept);
	CU_add_test(s, "lies and stale samples refused", test_lies_refused);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = (int)CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails;
}
