/* The per-user shares of the tables (lib/shares.c), and the rank table's share in ranks.c: who
 * may take a place, and which ended rank is forgotten first. */
#include <CUnit/Basic.h>
#include <string.h>

#include "lib/ranks.h"
#include "lib/shares.h"

static void test_table(void)
{
	for (int t = 0; t < SHARE__N; t++) {
		const struct share_info *s = share_info(t);

		CU_ASSERT_PTR_NOT_NULL_FATAL(s);
		CU_ASSERT_EQUAL(share_by_name(s->name), t);
		/* one user's share leaves the others room, and the reserve is root's */
		if (s->size) {
			CU_ASSERT(s->share + s->reserve < s->size);
			CU_ASSERT(s->share <= s->size - s->reserve);
		}
	}
	CU_ASSERT_PTR_NULL(share_info(SHARE__N));
	CU_ASSERT_PTR_NULL(share_info(-1));
	CU_ASSERT_EQUAL(share_by_name("nope"), -1);
	CU_ASSERT_EQUAL(share_info(SHARE_PROCS)->size, FTBPF_MAX_PROCS);
	CU_ASSERT_EQUAL(share_info(SHARE_THREADS)->size, FTBPF_MAX_THREADS);
}

static void test_admit(void)
{
	const struct share_info *p = share_info(SHARE_PROCS);
	int64_t size = p->size, share = p->share, reserve = p->reserve;

	/* a user under its share, the table with room */
	CU_ASSERT_TRUE(share_admit(SHARE_PROCS, 1000, 0, 0));
	CU_ASSERT_TRUE(share_admit(SHARE_PROCS, 1000, share - 1, share - 1));
	/* at its share: no more, whatever room is left */
	CU_ASSERT_FALSE(share_admit(SHARE_PROCS, 1000, share, share));
	/* the reserve is root's: another user is refused there, below its share */
	CU_ASSERT_FALSE(share_admit(SHARE_PROCS, 1000, 0, size - reserve));
	CU_ASSERT_TRUE(share_admit(SHARE_PROCS, 1000, 0, size - reserve - 1));
	CU_ASSERT_TRUE(share_admit(SHARE_PROCS, 0, share * 3, size - 1));
	/* full is full, for root too */
	CU_ASSERT_FALSE(share_admit(SHARE_PROCS, 0, 0, size));
	/* the agent's own tables have no size: the share alone */
	CU_ASSERT_TRUE(share_admit(SHARE_RANKS, 1000, share_info(SHARE_RANKS)->share - 1, 1 << 30));
	CU_ASSERT_FALSE(share_admit(SHARE_RANKS, 1000, share_info(SHARE_RANKS)->share, 0));
	CU_ASSERT_TRUE(share_admit(SHARE_RANKS, 0, 1 << 30, 1 << 30));
	CU_ASSERT_FALSE(share_admit(SHARE__N, 0, 0, 0));
}

static void test_rank_share(void)
{
	struct ranks r;
	struct rank *a, *b, *c, *d, *live;

	ranks_init(&r);
	a = ranks_add(&r, 100, 1, 65534, "j1");
	b = ranks_add(&r, 101, 2, 65534, "j2");
	c = ranks_add(&r, 102, 3, 65534, "j3");
	live = ranks_add(&r, 103, 4, 65534, "j3"); /* c's job lives on */
	d = ranks_add(&r, 104, 5, 0, "root");
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_PTR_NOT_NULL_FATAL(live);
	CU_ASSERT_EQUAL(ranks_user_count(&r, 65534), 4);
	CU_ASSERT_EQUAL(ranks_user_count(&r, 0), 1);
	CU_ASSERT_PTR_NULL(ranks_user_oldest_ended(&r, 65534)); /* none ended */
	a->s.exited = b->s.exited = c->s.exited = 1;
	a->s.exit_ns = 30;
	b->s.exit_ns = 20;
	c->s.exit_ns = 10;
	/* ended but not judged yet: never forgotten */
	CU_ASSERT_PTR_NULL(ranks_user_oldest_ended(&r, 65534));
	CU_ASSERT_EQUAL(ranks_user_ended(&r, 65534), 0);
	a->exit_judged = b->exit_judged = c->exit_judged = 1;
	CU_ASSERT_EQUAL(ranks_user_ended(&r, 65534), 3);
	/* a job that ended wholly first (b, the earlier), before c of a live job */
	CU_ASSERT_PTR_EQUAL(ranks_user_oldest_ended(&r, 65534), b);
	ranks_remove(&r, b);
	CU_ASSERT_PTR_EQUAL(ranks_user_oldest_ended(&r, 65534), a);
	ranks_remove(&r, a);
	CU_ASSERT_PTR_EQUAL(ranks_user_oldest_ended(&r, 65534), c);
	CU_ASSERT_PTR_NULL(ranks_user_oldest_ended(&r, 0));
	ranks_fini(&r);
}

int main(void)
{
	CU_pSuite s;
	int fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("shares", NULL, NULL);
	CU_add_test(s, "the table of tables", test_table);
	CU_add_test(s, "who may take a place", test_admit);
	CU_add_test(s, "the rank table: which ended rank goes first", test_rank_share);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = (int)CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails;
}
