/* The cross-host part book (proto/partbook.c): which parts are believed, replays, expiry and
 * forgetting, a host gone, what is gathered for a verdict, and the send schedule. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "lib/jobview.h"
#include "lib/ranks.h"
#include "proto/part_proto.h"
#include "proto/partbook.h"

#define S  1000000000ull
#define MS 1000000ull
#define JB "torch:10.0.0.1:29500"

static const struct mesh_addr A = {0x0a000002, 7946}, B = {0x0a000003, 7946},
			      Z = {0x0a000009, 7946};

/* A part from `from` of JB (world 4) naming ranks lo..hi. */
static struct part_packet part(struct mesh_addr from, int lo, int hi, uint8_t flags)
{
	struct part_packet p = {.from = from, .boot = 5, .ttl_ms = 3500, .flags = flags};

	strcpy(p.part.job, JB);
	p.part.world_size = 4;
	p.part.nchunks = 1;
	for (int r = lo; r <= hi; r++)
		p.part.ranks[p.part.nranks++] =
		    (struct jv_rank){.rank = r, .pid = (uint32_t)(1000 + r), .state = 1};
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

/* rules: believed, or not (another world size, our own ranks, another host's ranks, an NCCL
 * sequence number going back); a member beats a stranger; the sender's own part replaced */
static void test_believed(void)
{
	struct partbook b;
	struct ranks r;
	struct job *j;
	struct part_packet p;
	struct jv_part out[8];

	partbook_init(&b);
	ranks_init(&r);
	j = job_here(&r);
	p = part(A, 2, 3, 0);
	CU_ASSERT_EQUAL(partbook_offer(&b, &p, 1, j, 10 * S), PARTBOOK_ACCEPTED);
	CU_ASSERT_EQUAL(b.nr, 1);
	CU_ASSERT_STRING_EQUAL(b.rv[0].part.node, "10.0.0.2:7946");
	CU_ASSERT_TRUE(partbook_is_job_host(&b, 0, JB, &A));
	CU_ASSERT_FALSE(partbook_is_job_host(&b, 0, JB, &B));
	CU_ASSERT_TRUE(partbook_holds_rank(&b, 0, JB, &A, 3));
	CU_ASSERT_FALSE(partbook_holds_rank(&b, 0, JB, &A, 1));
	/* the same host again: its part replaced, not added */
	CU_ASSERT_EQUAL(partbook_offer(&b, &p, 1, j, 11 * S), PARTBOOK_ACCEPTED);
	CU_ASSERT_EQUAL(b.nr, 1);
	CU_ASSERT_EQUAL(b.c.accepted, 2);
	/* another world size */
	p = part(B, 2, 2, 0);
	p.part.world_size = 8;
	CU_ASSERT_EQUAL(partbook_offer(&b, &p, 1, j, 11 * S), PARTBOOK_WORLD_MISMATCH);
	CU_ASSERT_EQUAL(b.c.world_mismatch, 1);
	/* a rank a live process here holds */
	p = part(B, 1, 1, 0);
	CU_ASSERT_EQUAL(partbook_offer(&b, &p, 1, j, 11 * S), PARTBOOK_CLAIMS_OURS);
	CU_ASSERT_EQUAL(b.c.claims_ours, 1);
	/* a rank A's fresh part holds, from another member: the first claim holds */
	p = part(B, 3, 3, 0);
	CU_ASSERT_EQUAL(partbook_offer(&b, &p, 1, j, 11 * S), PARTBOOK_CONFLICT);
	CU_ASSERT_EQUAL(b.c.conflict, 1);
	CU_ASSERT_EQUAL(b.nr, 1);
	/* A's NCCL sequence number of one rank, process and communicator goes back */
	p = part(A, 2, 3, 0);
	p.part.ranks[0].flags = JV_R_COMM;
	p.part.ranks[0].comm_id = 7;
	p.part.ranks[0].comm_seq = 50;
	CU_ASSERT_EQUAL(partbook_offer(&b, &p, 1, j, 12 * S), PARTBOOK_ACCEPTED);
	p.part.ranks[0].comm_seq = 49;
	CU_ASSERT_EQUAL(partbook_offer(&b, &p, 1, j, 12 * S), PARTBOOK_BAD_SEQ);
	CU_ASSERT_EQUAL(b.c.bad_seq, 1);
	p.part.ranks[0].pid = 2002; /* a new process of rank 2 starts again */
	CU_ASSERT_EQUAL(partbook_offer(&b, &p, 1, j, 12 * S), PARTBOOK_ACCEPTED);
	CU_ASSERT_STRING_EQUAL(partbook_verdict_text(PARTBOOK_BAD_SEQ),
			       "NCCL sequence numbers went back");
	partbook_fini(&b);
	/* a stranger's claim gives way to a live member's */
	partbook_init(&b);
	p = part(Z, 2, 3, 0);
	CU_ASSERT_EQUAL(partbook_offer(&b, &p, 0, j, 10 * S), PARTBOOK_ACCEPTED);
	p = part(A, 3, 3, 0);
	CU_ASSERT_EQUAL(partbook_offer(&b, &p, 1, j, 11 * S), PARTBOOK_ACCEPTED);
	CU_ASSERT_EQUAL(b.nr, 1);
	CU_ASSERT_TRUE(partbook_is_job_host(&b, 0, JB, &A));
	CU_ASSERT_FALSE(partbook_is_job_host(&b, 0, JB, &Z));
	CU_ASSERT_EQUAL(b.c.conflict, 1);
	/* a member's claim does not give way to a stranger's */
	p = part(Z, 3, 3, 0);
	CU_ASSERT_EQUAL(partbook_offer(&b, &p, 0, j, 12 * S), PARTBOOK_CONFLICT);
	/* a part whose job has no rank left there: its ranks forgotten */
	p = part(A, 3, 3, PART_F_GONE);
	CU_ASSERT_EQUAL(partbook_offer(&b, &p, 1, j, 13 * S), PARTBOOK_ACCEPTED);
	CU_ASSERT_EQUAL(partbook_gather(&b, 0, JB, out, 8), 1);
	CU_ASSERT_EQUAL(out[0].nranks, 0);
	partbook_fini(&b);
	ranks_fini(&r);
}

/* a member's part that takes a stranger's rank: the stranger's part dropped, the member's own
 * updated in place, none lost or added twice */
static void test_member_replaces_stranger(void)
{
	struct partbook b;
	struct ranks r;
	struct job *j;
	struct part_packet p;
	struct jv_part out[8];

	partbook_init(&b);
	ranks_init(&r);
	j = job_here(&r);
	p = part(Z, 3, 3, 0);
	CU_ASSERT_EQUAL(partbook_offer(&b, &p, 0, j, 10 * S), PARTBOOK_ACCEPTED);
	p = part(A, 2, 2, 0);
	CU_ASSERT_EQUAL(partbook_offer(&b, &p, 1, j, 10 * S), PARTBOOK_ACCEPTED);
	CU_ASSERT_EQUAL(b.nr, 2); /* Z's part first, A's last */
	p = part(A, 2, 3, 0);	  /* A now claims rank 3 too */
	CU_ASSERT_EQUAL(partbook_offer(&b, &p, 1, j, 11 * S), PARTBOOK_ACCEPTED);
	CU_ASSERT_EQUAL(b.nr, 1);
	CU_ASSERT_EQUAL(partbook_gather(&b, 0, JB, out, 8), 1);
	CU_ASSERT_EQUAL(out[0].nranks, 2);
	CU_ASSERT_STRING_EQUAL(out[0].node, "10.0.0.2:7946");
	partbook_fini(&b);
	ranks_fini(&r);
}

/* rule: a sender's (boot, seq) is taken once; an earlier boot is a replay */
static void test_replay(void)
{
	struct partbook b;

	partbook_init(&b);
	CU_ASSERT_TRUE(partbook_fresh_seq(&b, &A, 5, 1));
	CU_ASSERT_TRUE(partbook_fresh_seq(&b, &A, 5, 3));
	CU_ASSERT_TRUE(partbook_fresh_seq(&b, &A, 5, 2)); /* late, not seen: taken */
	CU_ASSERT_FALSE(partbook_fresh_seq(&b, &A, 5, 2));
	CU_ASSERT_FALSE(partbook_fresh_seq(&b, &A, 5, 3));
	CU_ASSERT_TRUE(partbook_fresh_seq(&b, &B, 5, 3));  /* one window per sender */
	CU_ASSERT_TRUE(partbook_fresh_seq(&b, &A, 6, 1));  /* restarted: a new life */
	CU_ASSERT_FALSE(partbook_fresh_seq(&b, &A, 5, 9)); /* an earlier life */
	CU_ASSERT_FALSE(partbook_fresh_seq(&b, &A, 6, 1));
	CU_ASSERT_TRUE(partbook_fresh_seq(&b, &A, 6, 200));
	CU_ASSERT_FALSE(partbook_fresh_seq(&b, &A, 6, 100)); /* out of the window */
	CU_ASSERT_EQUAL(b.c.replayed, 5);
	CU_ASSERT_EQUAL(b.ns, 2);
	partbook_fini(&b);
}

/* rules: a part lives for its sender's TTL (at most PARTBOOK_TTL_MS), then is stale (gathered
 * after the fresh ones, marked), then forgotten; a part of a job gone here is forgotten; a
 * host gone makes its parts stale at once; stale parts hold no rank */
static void test_expiry(void)
{
	struct partbook b;
	struct ranks r;
	struct job *j;
	struct part_packet p;
	struct jv_part out[8];

	partbook_init(&b);
	ranks_init(&r);
	j = job_here(&r);
	p = part(A, 2, 2, 0);
	p.ttl_ms = 60000; /* asks for more than the cap */
	partbook_offer(&b, &p, 1, j, 10 * S);
	p = part(B, 3, 3, 0);
	p.ttl_ms = 1000;
	partbook_offer(&b, &p, 1, j, 10 * S);
	partbook_expire(&b, &r, 10 * S + 999 * MS);
	CU_ASSERT_EQUAL(b.c.expired, 0);
	partbook_expire(&b, &r, 11 * S);
	CU_ASSERT_EQUAL(b.c.expired, 1); /* B's, at its own 1 s */
	CU_ASSERT_FALSE(partbook_is_job_host(&b, 0, JB, &B));
	CU_ASSERT_FALSE(partbook_holds_rank(&b, 0, JB, &B, 3));
	CU_ASSERT_EQUAL(partbook_gather(&b, 0, JB, out, 8), 2); /* fresh first, stale marked */
	CU_ASSERT_STRING_EQUAL(out[0].node, "10.0.0.2:7946");
	CU_ASSERT_EQUAL(out[0].stale, 0);
	CU_ASSERT_STRING_EQUAL(out[1].node, "10.0.0.3:7946");
	CU_ASSERT_EQUAL(out[1].stale, 1);
	CU_ASSERT_EQUAL(partbook_gather(&b, 0, JB, out, 1), 1); /* bounded */
	partbook_expire(&b, &r, 10 * S + PARTBOOK_TTL_MS * MS);
	CU_ASSERT_EQUAL(b.c.expired, 2); /* A's at the cap, not its 60 s */
	/* stale parts are kept for where missing ranks were last seen, then forgotten */
	partbook_expire(&b, &r, 11 * S + PARTBOOK_STALE_KEEP_NS);
	CU_ASSERT_EQUAL(b.nr, 2);
	partbook_expire(&b, &r, 11 * S + PARTBOOK_STALE_KEEP_NS + 1);
	CU_ASSERT_EQUAL(b.nr, 1);
	partbook_expire(&b, &r, 20 * S + PARTBOOK_STALE_KEEP_NS);
	CU_ASSERT_EQUAL(b.nr, 0);
	/* a host gone: stale at once, counted once */
	p = part(A, 2, 2, 0);
	partbook_offer(&b, &p, 1, j, 30 * S);
	partbook_host_gone(&b, &B, 30 * S);
	CU_ASSERT_TRUE(partbook_is_job_host(&b, 0, JB, &A));
	partbook_host_gone(&b, &A, 31 * S);
	partbook_host_gone(&b, &A, 32 * S);
	CU_ASSERT_FALSE(partbook_is_job_host(&b, 0, JB, &A));
	CU_ASSERT_EQUAL(b.c.expired, 3);
	/* its part was stale: another member may take its rank now */
	p = part(B, 2, 2, 0);
	CU_ASSERT_EQUAL(partbook_offer(&b, &p, 1, j, 33 * S), PARTBOOK_ACCEPTED);
	/* the job ends here: its parts are forgotten */
	ranks_fini(&r);
	ranks_init(&r);
	partbook_expire(&b, &r, 34 * S);
	CU_ASSERT_EQUAL(b.nr, 0);
	partbook_fini(&b);
	ranks_fini(&r);
}

/* rules of the send schedule: nothing while the job moves; when it stalls, to every member,
 * then to the job's hosts when what it says changes or every refresh, to every member again
 * every rebroadcast while ranks are missing; once more as a reply when it moves again */
static void test_schedule(void)
{
	struct partbook_pub pb = {0};
	struct partbook_send sd;
	uint64_t t = 100 * S;

	sd = partbook_schedule(&pb, 0, 1, 0, t);
	CU_ASSERT_EQUAL(sd.to, PARTBOOK_SEND_NONE);
	sd = partbook_schedule(&pb, 1, 1, 1, t);
	CU_ASSERT_EQUAL(sd.to, PARTBOOK_SEND_ALL);
	CU_ASSERT_EQUAL(sd.flags, 0);
	sd = partbook_schedule(&pb, 1, 1, 1, t + 500 * MS); /* unchanged, before the refresh */
	CU_ASSERT_EQUAL(sd.to, PARTBOOK_SEND_NONE);
	sd = partbook_schedule(&pb, 1, 2, 1, t + 600 * MS); /* news: to the job's hosts */
	CU_ASSERT_EQUAL(sd.to, PARTBOOK_SEND_HOLDERS);
	sd = partbook_schedule(&pb, 1, 2, 1, t + 1600 * MS); /* the refresh */
	CU_ASSERT_EQUAL(sd.to, PARTBOOK_SEND_HOLDERS);
	sd = partbook_schedule(&pb, 1, 2, 1, t + 2600 * MS); /* ranks missing: every member */
	CU_ASSERT_EQUAL(sd.to, PARTBOOK_SEND_ALL);
	sd = partbook_schedule(&pb, 1, 2, 0, t + 5000 * MS); /* none missing: the hosts */
	CU_ASSERT_EQUAL(sd.to, PARTBOOK_SEND_HOLDERS);
	sd = partbook_schedule(&pb, 0, 3, 0, t + 5100 * MS); /* moving again: said once */
	CU_ASSERT_EQUAL(sd.to, PARTBOOK_SEND_HOLDERS);
	CU_ASSERT_EQUAL(sd.flags, PART_F_REPLY);
	sd = partbook_schedule(&pb, 0, 3, 0, t + 9000 * MS);
	CU_ASSERT_EQUAL(sd.to, PARTBOOK_SEND_NONE);
	sd = partbook_schedule(&pb, 1, 3, 0, t + 9100 * MS); /* a new stall: every member */
	CU_ASSERT_EQUAL(sd.to, PARTBOOK_SEND_ALL);
}

/* rules: a host whose part asks for a reply gets ours once per part, not when ours just went
 * out, nor twice within half a refresh; a reply does not ask for one */
static void test_replies(void)
{
	struct partbook b;
	struct partbook_pub pb = {0};
	struct ranks r;
	struct job *j;
	struct part_packet p;

	partbook_init(&b);
	ranks_init(&r);
	j = job_here(&r);
	p = part(A, 2, 2, 0);
	partbook_offer(&b, &p, 1, j, 10 * S);
	p = part(B, 3, 3, PART_F_REPLY);
	partbook_offer(&b, &p, 1, j, 10 * S);
	CU_ASSERT_EQUAL(partbook_next_reply(&b, 0, JB, &pb, 10 * S, 0), 0); /* A's, not B's */
	CU_ASSERT_EQUAL(partbook_next_reply(&b, 0, JB, &pb, 10 * S, 1), -1);
	CU_ASSERT_EQUAL(partbook_next_reply(&b, 0, JB, &pb, 10 * S, 0), -1); /* once per part */
	p = part(A, 2, 2, 0);
	partbook_offer(&b, &p, 1, j, 10 * S + 100 * MS);
	CU_ASSERT_EQUAL(partbook_next_reply(&b, 0, JB, &pb, 10 * S + 100 * MS, 0), -1);
	p = part(A, 2, 2, 0);
	partbook_offer(&b, &p, 1, j, 11 * S);
	pb.sent_ns = 11 * S; /* ours went to every host just now */
	CU_ASSERT_EQUAL(partbook_next_reply(&b, 0, JB, &pb, 11 * S, 0), -1);
	p = part(A, 2, 2, 0);
	partbook_offer(&b, &p, 1, j, 12 * S);
	CU_ASSERT_EQUAL(partbook_next_reply(&b, 0, JB, &pb, 12 * S, 0), 0);
	CU_ASSERT_EQUAL(partbook_next_reply(&b, 1, JB, &pb, 12 * S, 0), -1); /* another owner */
	partbook_fini(&b);
	ranks_fini(&r);
}

/* rule: a stall is told after a quarter of the soft timeout, or of the collective rule's limit
 * under soft_timeout = auto, at least a second; a part's digest changes with its news only */
static void test_publish_after_and_digest(void)
{
	struct part_packet p = part(A, 2, 3, 0), q;

	CU_ASSERT_EQUAL(partbook_publish_after(20 * S, 0, 3.0, 5 * S, 0.5), 5 * S);
	CU_ASSERT_EQUAL(partbook_publish_after(2 * S, 0, 3.0, 5 * S, 0.5), PARTBOOK_PUBLISH_MIN_NS);
	CU_ASSERT_EQUAL(partbook_publish_after(600 * S, 1, 3.0, 8 * S, 0.5), 2 * S);
	CU_ASSERT_EQUAL(partbook_publish_after(600 * S, 1, 3.0, 8 * S, 10.0), 7500 * MS);
	CU_ASSERT_EQUAL(partbook_publish_after(600 * S, 1, 3.0, 8 * S, 0), 150 * S);
	q = p;
	q.part.ranks[0].progress_age_ms = 200; /* still moving: no news */
	CU_ASSERT_EQUAL(partbook_digest(&p.part, 1), partbook_digest(&q.part, 1));
	q.part.ranks[0].progress_age_ms = 5000; /* stopped moving: news */
	CU_ASSERT_NOT_EQUAL(partbook_digest(&p.part, 1), partbook_digest(&q.part, 1));
	q = p;
	q.part.ranks[1].comm_seq = 9;
	CU_ASSERT_NOT_EQUAL(partbook_digest(&p.part, 1), partbook_digest(&q.part, 1));
	q = p;
	q.part.ranks[1].state = 2;
	CU_ASSERT_NOT_EQUAL(partbook_digest(&p.part, 1), partbook_digest(&q.part, 1));
}

int main(void)
{
	CU_pSuite s;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("partbook", NULL, NULL);
	CU_add_test(s, "believed or not", test_believed);
	CU_add_test(s, "a member replaces a stranger in place", test_member_replaces_stranger);
	CU_add_test(s, "replays", test_replay);
	CU_add_test(s, "expiry, a host gone, a job gone", test_expiry);
	CU_add_test(s, "the send schedule", test_schedule);
	CU_add_test(s, "replies", test_replies);
	CU_add_test(s, "when a stall is told; what is news", test_publish_after_and_digest);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	{
		int f = (int)CU_get_number_of_failures();

		CU_cleanup_registry();
		return f;
	}
}
