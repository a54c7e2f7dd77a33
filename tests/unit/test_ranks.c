/* The rank table: jobs and their members, runs (a relaunch is a new run), what a decision
 * asked of a rank. */
#include <CUnit/Basic.h>
#include <string.h>
#include <sys/mman.h>

#include "ftbpf/slot.h"
#include "lib/ranks.h"

static int dropped;

static void count_drop(void *ctx, struct rank *k)
{
	(void)ctx;
	CU_ASSERT_TRUE(k->s.exited);
	dropped++;
}

static void test_runs(void)
{
	struct ranks r;
	struct rank *a, *b, *c;
	struct job *j;

	ranks_init(&r);
	a = ranks_add(&r, 100, 1, 0, "torch:127.0.0.1:1@n");
	b = ranks_add(&r, 101, 2, 0, "torch:127.0.0.1:1@n");
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	j = a->job;
	CU_ASSERT_PTR_EQUAL(j, b->job);
	CU_ASSERT_EQUAL(j->run, 1);
	CU_ASSERT_TRUE(job_has_live(j));
	a->s.exited = 1;
	CU_ASSERT_TRUE(job_has_live(j));
	b->s.exited = 1;
	CU_ASSERT_FALSE(job_has_live(j));
	/* the run's verdict */
	j->failed_reported = j->reported = j->hard_killed = j->end_reported = 1;
	j->state = DJS_FAILED;
	snprintf(j->hang_why, sizeof(j->hang_why), "old");
	j->hang_end.by = JOBEND_OPERATOR;
	/* a relaunch: the old run's ranks go, the verdict is cleared, the run is counted */
	ranks_job_new_run(&r, j, 99, count_drop, NULL);
	CU_ASSERT_EQUAL(dropped, 2);
	CU_ASSERT_EQUAL(j->nmembers, 0);
	CU_ASSERT_EQUAL(r.n, 0);
	CU_ASSERT_EQUAL(r.njobs, 1); /* the job outlives its old members */
	CU_ASSERT_EQUAL(j->run, 2);
	CU_ASSERT_EQUAL(j->run_start_ns, 99);
	CU_ASSERT_STRING_EQUAL(j->prev_state, "failed");
	CU_ASSERT_FALSE(j->failed_reported || j->reported || j->hard_killed || j->end_reported);
	CU_ASSERT_STRING_EQUAL(j->hang_why, "");
	CU_ASSERT_EQUAL(j->hang_end.by, JOBEND_NONE);
	c = ranks_add(&r, 100, 3, 0, "torch:127.0.0.1:1@n");
	CU_ASSERT_PTR_EQUAL(c->job, j);
	CU_ASSERT_PTR_EQUAL(ranks_find(&r, 100), c);
	/* a live member stays through a new run (only ended ones go) */
	ranks_job_new_run(&r, j, 100, NULL, NULL);
	CU_ASSERT_EQUAL(j->nmembers, 1);
	CU_ASSERT_EQUAL(j->run, 3);
	/* a hung run that begins to end keeps its verdict: the first end only */
	c->id.rank = 3;
	j->res.n_culprits = 1;
	j->res.culprits[0] = 0;
	snprintf(j->res.why, sizeof(j->res.why), "rank 3 sleeps");
	job_keep_hang(j, &(struct jobend){.by = JOBEND_LAUNCHER, .pid = 100, .rank = 3});
	job_keep_hang(j, &(struct jobend){.by = JOBEND_AGENT});
	CU_ASSERT_EQUAL(j->hang_end.by, JOBEND_LAUNCHER);
	CU_ASSERT_EQUAL(job_hang_end(j), DET_HANG_END_OTHER);
	CU_ASSERT_STRING_EQUAL(j->hang_why, "rank 3 sleeps");
	CU_ASSERT_EQUAL(j->nhang_culprits, 1);
	CU_ASSERT_EQUAL(j->hang_culprits[0], 3);
	c->id.rank = 0;
	ranks_job_new_run(&r, j, 101, NULL, NULL);
	CU_ASSERT_EQUAL(job_hang_end(j), DET_HANG_END_NONE);
	/* another user's job of the same name is another job */
	CU_ASSERT_PTR_NOT_EQUAL(ranks_add(&r, 200, 4, 1000, "torch:127.0.0.1:1@n")->job, j);
	ranks_fini(&r);
}

/* A rank restarted alone replaces its ended incarnation: the job's rows stay bounded. */
static void test_replaced(void)
{
	struct ranks r;
	struct rank *a, *b, *c, *d;

	ranks_init(&r);
	a = ranks_add(&r, 100, 1, 0, "j");
	b = ranks_add(&r, 101, 2, 0, "j");
	a->id.rank = 0;
	b->id.rank = 1;
	b->s.exited = 1;
	c = ranks_add(&r, 102, 3, 0, "j");
	c->id.rank = 0; /* another rank 0 while the first lives: nothing goes */
	CU_ASSERT_EQUAL(ranks_job_drop_replaced(&r, c, NULL, NULL), 0);
	c->id.rank = 1;
	dropped = 0;
	/* the latest ended incarnation stays (its end may be judged at the next scan) */
	CU_ASSERT_EQUAL(ranks_job_drop_replaced(&r, c, count_drop, NULL), 0);
	c->s.exited = 1; /* rank 1 ends again, and a third incarnation comes */
	d = ranks_add(&r, 103, 4, 0, "j");
	d->id.rank = 1;
	CU_ASSERT_EQUAL(ranks_job_drop_replaced(&r, d, count_drop, NULL), 1);
	CU_ASSERT_EQUAL(dropped, 1);
	CU_ASSERT_PTR_NULL(ranks_find(&r, 101)); /* the oldest went */
	CU_ASSERT_PTR_EQUAL(ranks_find(&r, 102), c);
	CU_ASSERT_EQUAL(a->job->nmembers, 3);
	ranks_fini(&r);
}

/* A process that inherited a live rank's variables and ended (a wrapper's `date`) is a stray:
 * the verdict leaves it out. A rank's earlier incarnation is never one. */
static void test_stray(void)
{
	struct ranks r;
	struct rank *a, *b, *c;

	ranks_init(&r);
	a = ranks_add(&r, 100, 1000000000, 0, "j"); /* rank 0, live */
	a->id.rank = 0;
	b = ranks_add(&r, 101, 2000000000, 0, "j"); /* started after it with rank 0: `date` */
	b->id.rank = 0;
	CU_ASSERT_FALSE(rank_is_stray(a->job, b)); /* live: not judged a stray */
	b->s.exited = 1;
	CU_ASSERT_TRUE(rank_is_stray(a->job, b));
	CU_ASSERT_FALSE(rank_is_stray(a->job, a));
	/* rank 1 crashed and its launcher restarted it: the crash is no stray */
	c = ranks_add(&r, 102, 500000000, 0, "j");
	c->id.rank = 1;
	c->s.exited = 1;
	b = ranks_add(&r, 103, 3000000000, 0, "j");
	b->id.rank = 1;
	CU_ASSERT_FALSE(rank_is_stray(a->job, c));
	ranks_fini(&r);
}

/* /proc's start times are clock ticks: a rank and the `sleep` its script ran within the same
 * 10 ms read the same start. The one that ended while the other lives is the stray, whichever
 * was adopted first (mesh_membership's hung job was judged with two such `sleep`s as culprits
 * 'exited with code 0'; a rank adopted by a scan comes after them). */
static void test_stray_same_tick(void)
{
	struct ranks r;
	struct rank *a, *b;

	ranks_init(&r);
	a = ranks_add(&r, 100, 1000000000, 0, "j");
	a->id.rank = 0;
	a->adopted_ns = 5;
	b = ranks_add(&r, 101, 1000000000, 0, "j"); /* the same tick, adopted after */
	b->id.rank = 0;
	b->adopted_ns = 6;
	b->s.exited = 1;
	CU_ASSERT_TRUE(rank_is_stray(a->job, b));
	b->adopted_ns = 4; /* adopted before the live one (a scan found the rank late) */
	CU_ASSERT_TRUE(rank_is_stray(a->job, b));
	/* a tick before the live one: its earlier incarnation, no stray */
	b->start_ns = 1000000000 - 10000000;
	CU_ASSERT_FALSE(rank_is_stray(a->job, b));
	/* more than a tick apart: the start times decide */
	b->start_ns = 1000000000 + 20000000;
	CU_ASSERT_TRUE(rank_is_stray(a->job, b));
	ranks_fini(&r);
}

static void test_asked(void)
{
	struct ranks r;
	struct rank *k;
	struct ftbpf_slot *s;

	ranks_init(&r);
	k = ranks_add(&r, 100, 1, 0, "j");
	CU_ASSERT_EQUAL(rank_asked(k), 0); /* no slot: nothing asked */
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(s != MAP_FAILED);
	memset(s, 0, sizeof(*s));
	k->slot = s; /* freed with the rank */
	CU_ASSERT_EQUAL(rank_asked(k), 0);
	s->dec.action = FTBPF_ACT_RESTART; /* same generation: a completed preemption */
	CU_ASSERT_EQUAL(rank_asked(k), DET_ASKED_PREEMPT);
	s->dec.generation = 1; /* a newer generation: a restart */
	CU_ASSERT_EQUAL(rank_asked(k), DET_ASKED_RESTART);
	s->dec.action = FTBPF_ACT_STOP;
	CU_ASSERT_EQUAL(rank_asked(k), DET_ASKED_STOP);
	ranks_fini(&r);
	munmap(s, sizeof(*s)); /* the table does no I/O: the mapping is ours */
}

static int released, released_pidfds;

static void count_release(struct rank *k)
{
	released++;
	released_pidfds += k->pidfd >= 0;
}

/* The table frees ranks but releases nothing itself: each rank it frees (removed, dropped with
 * its run, or at the end) goes once through the owner's hook, which closes what it put in. */
static void test_release_hook(void)
{
	struct ranks r;
	struct rank *a, *b, *c;

	ranks_init(&r);
	r.release = count_release;
	released = released_pidfds = 0;
	a = ranks_add(&r, 100, 1, 0, "j");
	b = ranks_add(&r, 101, 2, 0, "j");
	c = ranks_add(&r, 102, 3, 0, "j");
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	a->pidfd = 7;
	ranks_remove(&r, a);
	CU_ASSERT_EQUAL(released, 1);
	CU_ASSERT_EQUAL(released_pidfds, 1);
	b->s.exited = 1;
	ranks_job_new_run(&r, c->job, 10, NULL, NULL);
	CU_ASSERT_EQUAL(released, 2); /* the ended member of the old run */
	ranks_fini(&r);
	CU_ASSERT_EQUAL(released, 3);
	/* without a hook nothing is released, nothing crashes */
	ranks_init(&r);
	a = ranks_add(&r, 100, 1, 0, "j");
	CU_ASSERT_PTR_NOT_NULL(a);
	ranks_fini(&r);
	CU_ASSERT_EQUAL(released, 3);
}

static struct rank *member(struct ranks *r, int pid, const char *job, int rank)
{
	struct rank *k = ranks_add(r, pid, (uint64_t)pid, 1000, job);

	CU_ASSERT_PTR_NOT_NULL_FATAL(k);
	k->id.rank = rank;
	k->id.source = IDENT_ASSIGNED;
	return k;
}

/* Issue 34: processes that register into one job naming no rank each get their own, the lowest
 * its live ranks leave free; a rank named, or the launcher's, is kept. */
static void test_pick_rank(void)
{
	struct rank_ident id = {.rank = 99, .source = IDENT_NONE};
	struct ranks r;
	struct rank *a, *b, *c;
	struct job *j;

	ranks_init(&r);
	/* a job not in the table yet: rank 0, chosen by the agent */
	CU_ASSERT_EQUAL(job_pick_rank(NULL, -1, -1, &id), 0);
	CU_ASSERT_EQUAL(id.rank, 0);
	CU_ASSERT_EQUAL(id.source, IDENT_ASSIGNED);
	a = member(&r, 100, "j", 0);
	j = a->job;
	/* the second and third: 1, 2 (before, every one was rank 0) */
	CU_ASSERT_EQUAL(job_pick_rank(j, -1, -1, &id), 0);
	CU_ASSERT_EQUAL(id.rank, 1);
	CU_ASSERT_EQUAL(id.source, IDENT_ASSIGNED);
	b = member(&r, 101, "j", id.rank);
	job_pick_rank(j, -1, -1, &id);
	CU_ASSERT_EQUAL(id.rank, 2);
	c = member(&r, 102, "j", id.rank);
	/* a hole left by an ended rank is filled (as a restarted rank would), the others keep
	 * theirs */
	b->s.exited = 1;
	job_pick_rank(j, -1, -1, &id);
	CU_ASSERT_EQUAL(id.rank, 1);
	CU_ASSERT_EQUAL(a->id.rank, 0);
	CU_ASSERT_EQUAL(c->id.rank, 2);
	b->s.exited = 0;
	job_pick_rank(j, -1, -1, &id);
	CU_ASSERT_EQUAL(id.rank, 3);
	/* a rank named is kept, even one a live rank holds (as before) */
	CU_ASSERT_EQUAL(job_pick_rank(j, 1, 7, &id), 0);
	CU_ASSERT_EQUAL(id.rank, 1);
	CU_ASSERT_EQUAL(id.source, IDENT_CLIENT);
	/* the launcher's rank is taken when free, else the lowest free */
	job_pick_rank(j, -1, 7, &id);
	CU_ASSERT_EQUAL(id.rank, 7);
	CU_ASSERT_EQUAL(id.source, IDENT_CLIENT);
	job_pick_rank(j, -1, 2, &id);
	CU_ASSERT_EQUAL(id.rank, 3);
	CU_ASSERT_EQUAL(id.source, IDENT_ASSIGNED);
	/* ranks far above the members' count (told ones) leave the low ones free */
	member(&r, 103, "k", 5000);
	member(&r, 104, "k", -1);
	job_pick_rank(ranks_job_find(&r, 1000, "k"), -1, -1, &id);
	CU_ASSERT_EQUAL(id.rank, 0);
	/* another user's job of that name is another job */
	CU_ASSERT_PTR_NULL(ranks_job_find(&r, 0, "j"));
	ranks_fini(&r);
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("ranks", NULL, NULL);
	CU_add_test(s, "runs: a relaunch is a new run", test_runs);
	CU_add_test(s, "a restarted rank replaces its ended incarnation", test_replaced);
	CU_add_test(s, "a stray started within the rank's clock tick", test_stray_same_tick);
	CU_add_test(s, "what a decision asked (slot)", test_asked);
	CU_add_test(s, "a stray with a live rank's variables", test_stray);
	CU_add_test(s, "every freed rank goes through the owner's release hook", test_release_hook);
	CU_add_test(s, "a registration naming no rank gets the lowest free", test_pick_rank);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
