/* Job parts on the wire: round trip, MAC, and the field checks a peer's nonsense fails. */
#include <CUnit/Basic.h>
#include <sodium.h>
#include <string.h>

#include "proto/part_proto.h"

static uint8_t key[MESH_KEY_BYTES];

static struct part_packet sample(void)
{
	struct part_packet p = {
	    .boot = 77, .seq = 5, .to_boot = 66, .sent_ms = 123456, .ttl_ms = 3000};
	struct jv_part *pt = &p.part;

	p.from = (struct mesh_addr){0x0a000002, 7946};
	p.to = (struct mesh_addr){0x0a000001, 7946};
	p.text_rank = 3;
	strcpy(pt->job, "torch:10.0.0.1:29500");
	pt->uid = 1000;
	pt->world_size = 4;
	pt->nchunks = 1;
	pt->addrs[pt->naddrs++] = 0x0a000002;
	pt->ranks[pt->nranks++] = (struct jv_rank){.rank = 2,
						   .pid = 42,
						   .state = RS_BLOCKED,
						   .syscall = 202,
						   .score = 10,
						   .progress_age_ms = 5000,
						   .state_age_ms = 5000};
	pt->ranks[pt->nranks++] = (struct jv_rank){.rank = 3,
						   .pid = 43,
						   .state = RS_STOPPED,
						   .flags = JV_R_CULPRIT | JV_R_COMM,
						   .syscall = -1,
						   .score = 95,
						   .comm_id = 0xabcdef,
						   .comm_seq = 41,
						   .progress_age_ms = 6000};
	strcpy(pt->ranks[1].reason, "stopped (job-control signal)");
	pt->edges[pt->nedges++] =
	    (struct jv_edge){2, 3, {0x0a000002, 4000}, {0x0a000002, 4001}, JV_EDGE_RECV};
	pt->res[pt->nres++] = (struct jv_res){{0x0a000002, 4001}, 3};
	return p;
}

static void test_roundtrip(void)
{
	struct part_packet p = sample(), q;
	uint8_t buf[PART_MAX_PACKET], other[MESH_KEY_BYTES];
	int len = part_encode(&p, key, buf, sizeof(buf));

	CU_ASSERT_TRUE(len > PART_HDR_BYTES);
	CU_ASSERT_TRUE(part_is_part(buf, (size_t)len));
	CU_ASSERT_EQUAL(part_decode(buf, (size_t)len, key, &q), PART_OK);
	CU_ASSERT_EQUAL(q.from.ip, p.from.ip);
	CU_ASSERT_EQUAL(q.to_boot, 66);
	CU_ASSERT_EQUAL(q.seq, 5);
	CU_ASSERT_STRING_EQUAL(q.part.job, p.part.job);
	CU_ASSERT_EQUAL(q.part.nranks, 2);
	CU_ASSERT_EQUAL(q.part.ranks[1].comm_seq, 41);
	CU_ASSERT_EQUAL(q.part.ranks[0].syscall, 202);
	CU_ASSERT_STRING_EQUAL(q.part.ranks[1].reason, "stopped (job-control signal)");
	CU_ASSERT_STRING_EQUAL(q.part.ranks[0].reason, "");
	CU_ASSERT_EQUAL(q.part.edges[0].peer.port, 4001);
	CU_ASSERT_EQUAL(q.part.edges[0].local.port, 4000);
	CU_ASSERT_EQUAL(q.part.res[0].rank, 3);
	/* 8 ranks and 8 edges fit one datagram with room to spare */
	CU_ASSERT_TRUE(PART_HDR_BYTES + 4 * JV_MAX_ADDRS + JV_MAX_RANKS * PART_RANK_BYTES +
			   JV_MAX_EDGES * PART_EDGE_BYTES + JV_MAX_RES * PART_RES_BYTES +
			   PART_MAX_TEXT + MESH_MAC_BYTES <=
		       PART_MAX_PACKET);
	/* another key; a flipped byte; a truncation */
	part_derive_key(key, other);
	CU_ASSERT_EQUAL(part_decode(buf, (size_t)len, other, &q), PART_E_MAC);
	buf[100] ^= 1;
	CU_ASSERT_EQUAL(part_decode(buf, (size_t)len, key, &q), PART_E_MAC);
	buf[100] ^= 1;
	CU_ASSERT_EQUAL(part_decode(buf, (size_t)len - 1, key, &q), PART_E_SIZE);
	buf[2] = 9;
	CU_ASSERT_EQUAL(part_decode(buf, (size_t)len, key, &q), PART_E_VERSION);
	buf[0] = 'X';
	CU_ASSERT_EQUAL(part_decode(buf, (size_t)len, key, &q), PART_E_MAGIC);
}

/* Encoded with the right key, but nonsense: each is refused at the field checks. */
static void test_nonsense(void)
{
	struct part_packet q;
	uint8_t buf[PART_MAX_PACKET];
	struct part_packet cases[9];
	int n = 0;

	for (int i = 0; i < 9; i++)
		cases[i] = sample();
	cases[n++].part.ranks[0].rank = 4;		/* not below the world size */
	cases[n++].part.ranks[0].rank = 3;		/* twice */
	cases[n++].part.ranks[1].comm_seq = 1ull << 50; /* more collectives than possible */
	cases[n++].part.ranks[0].state = 77;
	cases[n++].part.edges[0].from_rank = 1; /* an edge from a rank it does not hold */
	cases[n++].part.res[0].rank = 0;	/* an endpoint of a rank it does not hold */
	cases[n++].ttl_ms = 3600000;
	strcpy(cases[n++].part.job, "bad\"job");
	cases[n++].part.world_size = 0;
	for (int i = 0; i < n; i++) {
		int len = part_encode(&cases[i], key, buf, sizeof(buf));

		CU_ASSERT_TRUE(len > 0);
		CU_ASSERT_EQUAL(part_decode(buf, (size_t)len, key, &q), PART_E_FIELD);
	}
	/* counts over their maxima are not encoded */
	cases[0] = sample();
	cases[0].part.nranks = JV_MAX_RANKS + 1;
	CU_ASSERT_EQUAL(part_encode(&cases[0], key, buf, sizeof(buf)), -1);
}

static struct part_packet cad_sample(void)
{
	struct part_packet p = sample();
	struct jv_part *pt = &p.part;

	p.flags = PART_F_CAD;
	p.text_rank = -1;
	pt->nranks = pt->nedges = pt->nres = 0;
	pt->cad[pt->ncad++] = (struct cad_summary){.rank = 2,
						   .flags = CAD_SUM_VALID | CAD_SUM_STRAGGLER,
						   .own_ppm = 800000,
						   .wait_ppm = 150000,
						   .read_ppm = 20000,
						   .step_us = 312000,
						   .window_ms = 10000};
	pt->cad[pt->ncad++] = (struct cad_summary){.rank = 3}; /* not valid (yet) */
	return p;
}

/* Cadence parts: round trip; a full one fits a datagram; nonsense refused. */
static void test_cadence(void)
{
	struct part_packet p = cad_sample(), q, cases[10];
	uint8_t buf[PART_MAX_PACKET];
	int len = part_encode(&p, key, buf, sizeof(buf)), n = 0;

	CU_ASSERT_EQUAL(len, PART_HDR_BYTES + 4 + 2 * PART_CAD_BYTES + MESH_MAC_BYTES);
	CU_ASSERT_EQUAL(part_decode(buf, (size_t)len, key, &q), PART_OK);
	CU_ASSERT_EQUAL(q.flags, PART_F_CAD);
	CU_ASSERT_EQUAL(q.part.ncad, 2);
	CU_ASSERT_EQUAL(q.part.cad[0].rank, 2);
	CU_ASSERT_EQUAL(q.part.cad[0].flags, CAD_SUM_VALID | CAD_SUM_STRAGGLER);
	CU_ASSERT_EQUAL(q.part.cad[0].own_ppm, 800000);
	CU_ASSERT_EQUAL(q.part.cad[0].wait_ppm, 150000);
	CU_ASSERT_EQUAL(q.part.cad[0].read_ppm, 20000);
	CU_ASSERT_EQUAL(q.part.cad[0].step_us, 312000);
	CU_ASSERT_EQUAL(q.part.cad[0].window_ms, 10000);
	CU_ASSERT_EQUAL(q.part.cad[1].flags, 0);
	CU_ASSERT_TRUE(PART_HDR_BYTES + 4 * JV_MAX_ADDRS + JV_MAX_RANKS * PART_CAD_BYTES +
			   MESH_MAC_BYTES <=
		       PART_MAX_PACKET);
	/* a part as agents before cadence parts send it decodes as it did (no cadence) */
	p = sample();
	len = part_encode(&p, key, buf, sizeof(buf));
	CU_ASSERT_EQUAL(buf[39], 0);
	CU_ASSERT_EQUAL(part_decode(buf, (size_t)len, key, &q), PART_OK);
	CU_ASSERT_EQUAL(q.part.ncad, 0);
	for (int i = 0; i < 10; i++)
		cases[i] = cad_sample();
	cases[n++].part.world_size = -1;	    /* no world: its ranks could not be checked */
	cases[n++].part.ncad = 0;		    /* a cadence part with no cadence */
	cases[n++].part.cad[0].rank = 4;	    /* not below the world size */
	cases[n++].part.cad[1].rank = 2;	    /* twice */
	cases[n++].part.cad[0].own_ppm = 1000001;   /* more than all the time */
	cases[n++].part.cad[0].read_ppm = 900000;   /* reading more than its own time */
	cases[n++].part.cad[0].flags = 0x80;	    /* unknown flag */
	cases[n++].part.cad[1].own_ppm = 5;	    /* figures of a rank said not valid */
	cases[n++].part.cad[0].window_ms = 7200000; /* a window of two hours */
	cases[n].part.ranks[cases[n].part.nranks++] =
	    (struct jv_rank){.rank = 1, .state = RS_RUNNING}; /* a cadence part with ranks */
	n++;
	for (int i = 0; i < n; i++) {
		len = part_encode(&cases[i], key, buf, sizeof(buf));
		CU_ASSERT_TRUE(len > 0);
		CU_ASSERT_EQUAL(part_decode(buf, (size_t)len, key, &q), PART_E_FIELD);
	}
	/* a count over the maximum: not encoded; said in the header: refused */
	cases[0] = cad_sample();
	cases[0].part.ncad = JV_MAX_RANKS + 1;
	CU_ASSERT_EQUAL(part_encode(&cases[0], key, buf, sizeof(buf)), -1);
	cases[0] = cad_sample();
	len = part_encode(&cases[0], key, buf, sizeof(buf));
	buf[39] = JV_MAX_RANKS + 1;
	CU_ASSERT_EQUAL(part_decode(buf, (size_t)len, key, &q), PART_E_SIZE);
}

/* A cadence part with its arrivals section: the clock exchange, each rank's lateness, the
 * host's first arrivals; nonsense in any of them refused. */
static struct part_packet arr_sample(void)
{
	struct part_packet p = cad_sample();
	struct cad_summary *c = &p.part.cad[0];

	p.flags |= PART_F_ARR;
	p.mono_ns = 5000000000000ull;
	p.echo_ns = 4999000000000ull;
	p.hold_ns = 1500000000ull;
	c->flags |= CAD_SUM_ARR | CAD_SUM_GPU;
	c->late_us = 31000;
	c->err_us = 400;
	c->gpu_us = 29000;
	c->read_us = 0;
	c->comm_us = 500;
	c->ncoll = 300;
	p.part.first.comm = 0x1234;
	p.part.first.seq0 = 1001;
	p.part.first.n = 3;
	p.part.first.t[0] = 4999500000000ull;
	p.part.first.t[1] = 0; /* not known there */
	p.part.first.t[2] = 4999500085123ull;
	return p;
}

static void test_arrivals_section(void)
{
	struct part_packet p = arr_sample(), q, cases[12];
	uint8_t buf[PART_MAX_PACKET];
	int len = part_encode(&p, key, buf, sizeof(buf)), n = 0;

	CU_ASSERT_EQUAL(len, PART_HDR_BYTES + 4 + 2 * PART_CAD_BYTES + PART_ARR_BYTES +
				 2 * PART_LATE_BYTES + 3 * 4 + MESH_MAC_BYTES);
	CU_ASSERT_EQUAL(part_decode(buf, (size_t)len, key, &q), PART_OK);
	CU_ASSERT_EQUAL(q.mono_ns, p.mono_ns);
	CU_ASSERT_EQUAL(q.echo_ns, p.echo_ns);
	CU_ASSERT_EQUAL(q.hold_ns, p.hold_ns);
	CU_ASSERT_EQUAL(q.part.cad[0].late_us, 31000);
	CU_ASSERT_EQUAL(q.part.cad[0].gpu_us, 29000);
	CU_ASSERT_EQUAL(q.part.cad[0].ncoll, 300);
	CU_ASSERT_EQUAL(q.part.cad[1].late_us, 0);
	CU_ASSERT_EQUAL(q.part.first.comm, 0x1234);
	CU_ASSERT_EQUAL(q.part.first.seq0, 1001);
	CU_ASSERT_EQUAL(q.part.first.n, 3);
	CU_ASSERT_EQUAL(q.part.first.t[0], 4999500000000ull);
	CU_ASSERT_EQUAL(q.part.first.t[1], 0);
	CU_ASSERT_EQUAL(q.part.first.t[2], 4999500085000ull); /* to the microsecond */
	/* the largest: 12 ranks and 64 firsts fit a packet */
	CU_ASSERT_TRUE(PART_HDR_BYTES + 4 * JV_MAX_ADDRS +
			   JV_MAX_RANKS * (PART_CAD_BYTES + PART_LATE_BYTES) + PART_ARR_BYTES +
			   ARR_FIRST_N * 4 + MESH_MAC_BYTES <=
		       PART_MAX_PACKET);
	for (int i = 0; i < 12; i++)
		cases[i] = arr_sample();
	cases[n++].part.cad[0].late_us = 61000000;	/* over a minute late */
	cases[n++].part.cad[0].gpu_us = 40000;		/* more of it on its GPU than it was late */
	cases[n++].part.cad[0].flags &= ~CAD_SUM_VALID; /* arrivals of a rank not valid */
	cases[n++].part.cad[1].late_us = 5;		/* figures without the flag */
	cases[n].part.cad[0].flags |= CAD_SUM_DATA;	/* two reasons */
	n++;
	cases[n++].part.first.t[2] = 4999400000000ull; /* back in time */
	cases[n++].part.first.comm = 0;		       /* firsts of no communicator */
	cases[n++].part.first.seq0 = 0;
	for (int i = 0; i < n; i++) {
		len = part_encode(&cases[i], key, buf, sizeof(buf));
		CU_ASSERT_TRUE(len > 0);
		CU_ASSERT_EQUAL(part_decode(buf, (size_t)len, key, &q), PART_E_FIELD);
	}
	/* arrivals said without the section */
	p = arr_sample();
	p.flags &= ~PART_F_ARR;
	len = part_encode(&p, key, buf, sizeof(buf));
	CU_ASSERT_EQUAL(part_decode(buf, (size_t)len, key, &q), PART_E_FIELD);
	/* the section on a part that is not a cadence part: not encoded */
	p = sample();
	p.flags |= PART_F_ARR;
	CU_ASSERT_EQUAL(part_encode(&p, key, buf, sizeof(buf)), -1);
	/* more firsts than a run holds, said in the section: refused by size */
	p = arr_sample();
	len = part_encode(&p, key, buf, sizeof(buf));
	buf[PART_HDR_BYTES + 4 + 2 * PART_CAD_BYTES + 48] = ARR_FIRST_N + 1;
	CU_ASSERT_EQUAL(part_decode(buf, (size_t)len, key, &q), PART_E_SIZE);
}

int main(void)
{
	CU_pSuite s;

	if (sodium_init() < 0 || CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	part_derive_key((const uint8_t *)"unit-test-key-0123456789abcdefgh", key);
	s = CU_add_suite("part_proto", NULL, NULL);
	CU_add_test(s, "encode/decode, MAC, size, version", test_roundtrip);
	CU_add_test(s, "a peer's nonsense is refused", test_nonsense);
	CU_add_test(s, "cadence parts", test_cadence);
	CU_add_test(s, "cadence parts' arrivals section", test_arrivals_section);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	{
		int f = (int)CU_get_number_of_failures();

		CU_cleanup_registry();
		return f ? 1 : 0;
	}
}
