/* A job's launch identity (user/lib/launch_id.c): the id from each launcher's variables, its key,
 * and the run choice of a launch on a model of the store's records (launches/<key>, run/<r>). */
#include <CUnit/Basic.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/decisions.h"
#include "lib/launch_id.h"

#define ENV(s) s, sizeof(s) - 1

static const char *id_of(const char *env, size_t len, int *ret)
{
	static char id[LAUNCH_ID_LEN];

	*ret = launch_id_from_environ(env, len, id);
	return id;
}

static void test_from_environ(void)
{
	char big[600];
	int r;

	/* explicit wins over every launcher */
	CU_ASSERT_STRING_EQUAL(id_of(ENV("PMIX_NAMESPACE=ns1\0FTBPF_LAUNCH_ID=abc-7\0"
					 "SLURM_JOB_ID=9\0SLURM_STEP_ID=0\0"),
				     &r),
			       "ftbpf:abc-7");
	CU_ASSERT_EQUAL(r, 0);
	/* an explicit id that is not one: none, and said (not a launcher's id instead) */
	CU_ASSERT_STRING_EQUAL(id_of(ENV("FTBPF_LAUNCH_ID=a b\0PMIX_NAMESPACE=ns1\0"), &r), "");
	CU_ASSERT_EQUAL(r, -EINVAL);
	CU_ASSERT_STRING_EQUAL(id_of(ENV("FTBPF_LAUNCH_ID=\0"), &r), "");
	CU_ASSERT_EQUAL(r, -EINVAL);
	/* Open MPI / PMIx */
	CU_ASSERT_STRING_EQUAL(id_of(ENV("X=1\0PMIX_NAMESPACE=prterun-h-123@1\0"), &r),
			       "pmix:prterun-h-123@1");
	CU_ASSERT_STRING_EQUAL(id_of(ENV("OMPI_MCA_ess_base_jobid=4242\0"), &r), "ompi:4242");
	CU_ASSERT_STRING_EQUAL(id_of(ENV("OMPI_MCA_orte_ess_jobid=17\0"), &r), "ompi:17");
	/* Slurm: job and step; an mpirun (or srun's PMIx) inside a step is the step's launch */
	CU_ASSERT_STRING_EQUAL(id_of(ENV("SLURM_JOB_ID=77\0SLURM_STEP_ID=3\0"), &r), "slurm:77.3");
	CU_ASSERT_STRING_EQUAL(
	    id_of(ENV("PMIX_NAMESPACE=slurm.pmix.77.3\0SLURM_JOB_ID=77\0SLURM_STEP_ID=3\0"), &r),
	    "slurm:77.3");
	/* a requeue is the same launch: the decided restart, in the same run and budget */
	CU_ASSERT_STRING_EQUAL(
	    id_of(ENV("SLURM_RESTART_COUNT=1\0SLURM_JOB_ID=77\0SLURM_STEP_ID=3\0"), &r),
	    "slurm:77.3");
	/* a job id alone (ranks the allocation started some other way) is no launch */
	CU_ASSERT_STRING_EQUAL(id_of(ENV("SLURM_JOB_ID=77\0"), &r), "");
	CU_ASSERT_EQUAL(r, 0);
	/* torchrun says nothing job-wide */
	CU_ASSERT_STRING_EQUAL(id_of(ENV("TORCHELASTIC_RESTART_COUNT=3\0TORCHELASTIC_RUN_ID=j\0"
					 "MASTER_ADDR=10.0.0.1\0"),
				     &r),
			       "");
	CU_ASSERT_EQUAL(r, 0);
	/* a launcher's value that is no id is passed over: the next launcher's */
	CU_ASSERT_STRING_EQUAL(
	    id_of(ENV("PMIX_NAMESPACE=a\tb\0SLURM_JOB_ID=5\0SLURM_STEP_ID=1\0"), &r), "slurm:5.1");
	/* bounded: 128 bytes of id ("ftbpf:" and 122), a longer one is none */
	memcpy(big, "FTBPF_LAUNCH_ID=", 16);
	memset(big + 16, 'x', 123);
	CU_ASSERT_EQUAL(strlen(id_of(big, 16 + 122, &r)), LAUNCH_ID_MAX);
	CU_ASSERT_EQUAL(r, 0);
	CU_ASSERT_EQUAL(strncmp(id_of(big, 16 + 122, &r), "ftbpf:xxx", 9), 0);
	CU_ASSERT_STRING_EQUAL(id_of(big, 16 + 123, &r), "");
	CU_ASSERT_EQUAL(r, -EINVAL);
	/* a block cut in a name, a name that only begins like one, an empty block */
	CU_ASSERT_STRING_EQUAL(id_of(ENV("PMIX_NAMESPACEX=a\0PMIX_NAMESP"), &r), "");
	CU_ASSERT_STRING_EQUAL(id_of("", 0, &r), "");
	/* the first of two entries of one name, as getenv */
	CU_ASSERT_STRING_EQUAL(id_of(ENV("FTBPF_LAUNCH_ID=one\0FTBPF_LAUNCH_ID=two\0"), &r),
			       "ftbpf:one");
}

static void test_key(void)
{
	char a[LAUNCH_KEY_LEN], b[LAUNCH_KEY_LEN];

	CU_ASSERT_EQUAL(launch_id_key("ftbpf:abc", a), 0);
	CU_ASSERT_EQUAL(strlen(a), 32);
	CU_ASSERT_EQUAL(strspn(a, "0123456789abcdef"), 32);
	CU_ASSERT_EQUAL(launch_id_key("ftbpf:abc", b), 0);
	CU_ASSERT_STRING_EQUAL(a, b); /* the same on every host */
	CU_ASSERT_EQUAL(launch_id_key("ftbpf:abd", b), 0);
	CU_ASSERT_STRING_NOT_EQUAL(a, b);
	CU_ASSERT_EQUAL(launch_id_key("has space", a), -EINVAL);
	CU_ASSERT_STRING_EQUAL(a, "");
	CU_ASSERT_EQUAL(launch_id_key("", a), -EINVAL);
	CU_ASSERT_TRUE(launch_id_valid("slurm:1.2.r3"));
	CU_ASSERT_FALSE(launch_id_valid("a\x7f"));
	CU_ASSERT_FALSE(launch_id_valid("\xc3\xa9"));
}

/* The store's records of a launch: launches/<key>, and the launch a run was claimed for. */
static void test_records(void)
{
	struct dec_launches l = {.run = 4, .id = "slurm:77.3.r1", .by = "node-a", .at_ms = 5}, m;
	struct dec_run rn = {.run = 4, .resume_step = 10, .by = "a", .launch = "0123abcd"}, q;
	char buf[DEC_VALUE_MAX], key[DEC_KEY_LEN];

	CU_ASSERT_EQUAL(dec_launches_format(&l, buf, sizeof(buf)), 0);
	CU_ASSERT_EQUAL(dec_launches_parse(buf, &m), 0);
	CU_ASSERT_EQUAL(m.run, 4);
	CU_ASSERT_STRING_EQUAL(m.id, "slurm:77.3.r1");
	CU_ASSERT_STRING_EQUAL(m.by, "node-a");
	CU_ASSERT_EQUAL(dec_launches_parse("{\"run\":0,\"id\":\"x\"}", &m), -EINVAL);
	CU_ASSERT_EQUAL(dec_launches_parse("{\"run\":3}", &m), -EINVAL);
	CU_ASSERT_EQUAL(dec_launches_parse("{\"run\":3,\"id\":7}", &m), -EINVAL);
	CU_ASSERT_EQUAL(dec_launches_parse("[]", &m), -EINVAL);
	CU_ASSERT_EQUAL(dec_run_format(&rn, buf, sizeof(buf)), 0);
	CU_ASSERT_EQUAL(dec_run_parse(buf, &q), 0);
	CU_ASSERT_STRING_EQUAL(q.launch, "0123abcd");
	/* a run record of an older agent names no launch */
	CU_ASSERT_EQUAL(dec_run_parse("{\"run\":2,\"resume_step\":-1}", &q), 0);
	CU_ASSERT_STRING_EQUAL(q.launch, "");
	CU_ASSERT_EQUAL(
	    dec_run_parse("{\"run\":2,\"launch\":\"0123456789abcdef0123456789abcdef0\"}", &q),
	    -EINVAL);
	dec_key_launches(key, sizeof(key), "0123abcd");
	CU_ASSERT_STRING_EQUAL(key, "launches/0123abcd");
	/* any node may claim it (not a node's own key, as launch/<node> is) */
	CU_ASSERT_PTR_NULL(dec_key_node("jobs/1/j/launches/0123abcd"));
	CU_ASSERT_PTR_NOT_NULL(dec_key_node("jobs/1/j/launch/node-a"));
}

/* ---- the run choice on a model of the store ---- */
#define MAXR 16
struct store {
	char run_launch[MAXR][8]; /* run/<r>: the launch it was claimed for ("" none); [0] unused */
	uint64_t cur;
	char launch[MAXR][8]; /* launches/<key> ... */
	uint64_t launch_run[MAXR];
	int nlaunch;
};

/* What a host reads of the store (its mirror: s, maybe behind) for launch key. */
static struct launch_id_view view_of(const struct store *s, const char *key)
{
	struct launch_id_view v = {0, 0, s->cur, 0};

	for (uint64_t r = 1; r <= s->cur; r++)
		if (strcmp(s->run_launch[r], key))
			v.cur_other = r;
	for (int i = 0; i < s->nlaunch; i++)
		if (!strcmp(s->launch[i], key)) {
			v.have = 1;
			v.rec_run = s->launch_run[i];
		}
	return v;
}

/* The claims a host makes on its choice, applied to the real store: first claimer wins. */
static void claim(struct store *s, const char *key, uint64_t run)
{
	int i;

	for (i = 0; i < s->nlaunch && strcmp(s->launch[i], key); i++)
		;
	if (i == s->nlaunch) {
		snprintf(s->launch[i], sizeof(s->launch[i]), "%s", key);
		s->launch_run[s->nlaunch++] = run;
	}
	if (run > s->cur || !s->run_launch[run][0]) {
		if (run > s->cur)
			s->cur = run;
		if (!s->run_launch[run][0])
			snprintf(s->run_launch[run], sizeof(s->run_launch[run]), "%s", key);
	}
}

/* A host's choice on its view of the store (seen), its claims made on s; its run. */
static enum launch_id_choice host(struct store *s, const struct store *seen, const char *key,
				  uint64_t *ret_run)
{
	struct launch_id_view v = view_of(seen, key);
	enum launch_id_choice c = launch_id_run_choose(&v, ret_run);

	if (c == LAUNCH_ID_NEW)
		claim(s, key, *ret_run);
	return c;
}

/* A host's next look (dc_follow_launch): the run its launch's record names. */
static uint64_t follow(const struct store *s, const char *key, uint64_t run)
{
	struct launch_id_view v = view_of(s, key);

	return v.have ? v.rec_run : run;
}

static void test_run_choice(void)
{
	struct store s, seen;
	uint64_t a, b, c;

	memset(&s, 0, sizeof(s));
	/* the first host of a launch claims a new run; the second joins it */
	CU_ASSERT_EQUAL(host(&s, &s, "L1", &a), LAUNCH_ID_NEW);
	CU_ASSERT_EQUAL(a, 1);
	CU_ASSERT_EQUAL(host(&s, &s, "L1", &b), LAUNCH_ID_JOIN);
	CU_ASSERT_EQUAL(b, 1);
	CU_ASSERT_EQUAL(s.cur, 1);
	/* a host relaunching alone with the launch's id (its own launcher new: today's heuristics
	 * would start a run of its own) joins the launch's run */
	CU_ASSERT_EQUAL(host(&s, &s, "L1", &b), LAUNCH_ID_JOIN);
	CU_ASSERT_EQUAL(b, 1);
	CU_ASSERT_EQUAL(s.cur, 1);
	/* a whole-job relaunch (a new id): exactly one new run, on every host, whatever the order */
	CU_ASSERT_EQUAL(host(&s, &s, "L2", &a), LAUNCH_ID_NEW);
	CU_ASSERT_EQUAL(host(&s, &s, "L2", &b), LAUNCH_ID_JOIN);
	CU_ASSERT_EQUAL(host(&s, &s, "L2", &c), LAUNCH_ID_JOIN);
	CU_ASSERT_EQUAL(a, 2);
	CU_ASSERT_EQUAL(b, 2);
	CU_ASSERT_EQUAL(c, 2);
	CU_ASSERT_EQUAL(s.cur, 2);
	/* ... and two hosts at once, both seeing no record: the same new run */
	seen = s;
	CU_ASSERT_EQUAL(host(&s, &seen, "L3", &a), LAUNCH_ID_NEW);
	CU_ASSERT_EQUAL(host(&s, &seen, "L3", &b), LAUNCH_ID_NEW);
	CU_ASSERT_EQUAL(a, 3);
	CU_ASSERT_EQUAL(b, 3);
	CU_ASSERT_EQUAL(s.cur, 3);
	/* a stale id (a host of launch L2 coming back after L3 began) is refused: no run of its
	 * own, and not the current one */
	CU_ASSERT_EQUAL(host(&s, &s, "L2", &a), LAUNCH_ID_STALE);
	CU_ASSERT_EQUAL(a, 2);
	CU_ASSERT_EQUAL(s.cur, 3);
	CU_ASSERT_EQUAL(host(&s, &s, "L1", &a), LAUNCH_ID_STALE);
	/* a lost claim race: host B's mirror is behind by a launch L4 (it sees run 3 as the
	 * latest), A's is not: A claims run 5 for L5 ... */
	seen = s;
	CU_ASSERT_EQUAL(host(&s, &s, "L4", &c), LAUNCH_ID_NEW);
	CU_ASSERT_EQUAL(c, 4);
	CU_ASSERT_EQUAL(host(&s, &s, "L5", &a), LAUNCH_ID_NEW);
	CU_ASSERT_EQUAL(a, 5);
	/* ... B, seeing neither, claims run 4 for L5: its claim of launches/L5 loses */
	CU_ASSERT_EQUAL(host(&s, &seen, "L5", &b), LAUNCH_ID_NEW);
	CU_ASSERT_EQUAL(b, 4);
	/* at its next look B joins the winner's run */
	b = follow(&s, "L5", b);
	CU_ASSERT_EQUAL(b, 5);
	CU_ASSERT_EQUAL(host(&s, &s, "L5", &c), LAUNCH_ID_JOIN);
	CU_ASSERT_EQUAL(c, 5);
	/* the other way round: B's run claimed for L5 is the latest (an orphan of the race, A's
	 * claims late): L5 is not stale for it, its hosts join the run that won */
	memset(&s, 0, sizeof(s));
	claim(&s, "L1", 1);
	seen = s;
	CU_ASSERT_EQUAL(host(&s, &seen, "L5", &a), LAUNCH_ID_NEW); /* A: run 2, record won */
	claim(&s, "L6", 3);					   /* another launch, run 3 */
	seen = s;
	seen.nlaunch = 1;					   /* B does not see L5's record */
	CU_ASSERT_EQUAL(host(&s, &seen, "L5", &b), LAUNCH_ID_NEW); /* B: run 4, record lost */
	CU_ASSERT_EQUAL(b, 4);
	CU_ASSERT_EQUAL(follow(&s, "L5", b), 2);
	/* L6's run 3 came after L5's run 2: L5 is stale now, B's orphan run 4 aside */
	CU_ASSERT_EQUAL(host(&s, &s, "L5", &c), LAUNCH_ID_STALE);
	/* without L6 between, the orphan alone would not make it so */
	memset(&s, 0, sizeof(s));
	claim(&s, "L5", 2);
	claim(&s, "L5", 3); /* run 3 claimed for L5 by a host that lost launches/L5 */
	CU_ASSERT_EQUAL(host(&s, &s, "L5", &c), LAUNCH_ID_JOIN);
	CU_ASSERT_EQUAL(c, 2);
}

int main(void)
{
	CU_pSuite s;
	unsigned fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("launch_id", NULL, NULL);
	CU_add_test(s, "the launch id from each launcher's variables", test_from_environ);
	CU_add_test(s, "its key and validity", test_key);
	CU_add_test(s, "the store's records of a launch", test_records);
	CU_add_test(s, "the run of a launch, host by host", test_run_choice);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return (int)fails;
}
