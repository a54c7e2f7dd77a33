/* Mesh wire format (encode/decode, MAC, replay) and SWIM behaviour on a small in-memory cluster. */
#include <CUnit/Basic.h>
#include <stdlib.h>
#include <string.h>

#include "proto/mesh_proto.h"
#include "proto/swim.h"

static const uint8_t key[MESH_KEY_BYTES] = "unit-test-key-0123456789abcdefgh";

static void test_roundtrip(void)
{
	struct mesh_packet p = {
	    .type = MESH_PING_REQ, .incarnation = 3, .boot = 99, .seq = 7, .probe = 5};
	struct mesh_packet q;
	uint8_t buf[MESH_MAX_PACKET];
	int len;

	p.from = (struct mesh_addr){0x0a000001, 7946};
	p.target = (struct mesh_addr){0x0a000002, 7947};
	p.nupdates = 2;
	p.updates[0] = (struct mesh_update){
	    .node = {0x0a000003, 1}, .state = MESH_SUSPECT, .incarnation = 4, .boot = 11};
	p.updates[0].accuser = p.from;
	p.updates[1] =
	    (struct mesh_update){.node = {0x0a000004, 2}, .state = MESH_ALIVE, .has_health = 1};
	p.updates[1].health =
	    (struct mesh_health){.jobs = 1, .ranks = 8, .hung = 2, .culprit_rank = 5, .version = 9};
	len = mesh_proto_encode(&p, key, buf, sizeof(buf));
	CU_ASSERT_EQUAL(len, MESH_HDR_BYTES + 2 * MESH_UPDATE_BYTES + MESH_MAC_BYTES);
	CU_ASSERT_EQUAL(mesh_proto_decode(buf, (size_t)len, key, &q), MESH_OK);
	CU_ASSERT_EQUAL(q.type, MESH_PING_REQ);
	CU_ASSERT_EQUAL(q.target.port, 7947);
	CU_ASSERT_EQUAL(q.seq, 7);
	CU_ASSERT_EQUAL(q.updates[0].state, MESH_SUSPECT);
	CU_ASSERT_EQUAL(q.updates[0].accuser.ip, 0x0a000001);
	CU_ASSERT_EQUAL(q.updates[1].health.hung, 2);
	CU_ASSERT_EQUAL(q.updates[1].health.culprit_rank, 5);
	/* every single-bit flip is caught (MAC, or size/magic/version checks before it) */
	for (int i = 0; i < len * 8; i += 7) {
		buf[i / 8] ^= (uint8_t)(1 << (i % 8));
		CU_ASSERT_NOT_EQUAL(mesh_proto_decode(buf, (size_t)len, key, &q), MESH_OK);
		buf[i / 8] ^= (uint8_t)(1 << (i % 8));
	}
	{
		uint8_t other[MESH_KEY_BYTES] = {1};

		CU_ASSERT_EQUAL(mesh_proto_decode(buf, (size_t)len, other, &q), MESH_E_MAC);
	}
	CU_ASSERT_EQUAL(mesh_proto_decode(buf, (size_t)len - 1, key, &q), MESH_E_SIZE);
	CU_ASSERT_EQUAL(mesh_proto_decode(buf, 10, key, &q), MESH_E_SIZE);
	buf[2] = 1; /* version 1 had no destination in the MAC */
	CU_ASSERT_EQUAL(mesh_proto_decode(buf, (size_t)len, key, &q), MESH_E_VERSION);
	buf[0] = 'X';
	CU_ASSERT_EQUAL(mesh_proto_decode(buf, (size_t)len, key, &q), MESH_E_MAGIC);
}

/* A packet is bound to its receiver and to the receiver's life: replayed to another node, or
 * to the same node after a restart, it is refused; a first contact only while fresh. */
static void test_destination(void)
{
	uint8_t key[MESH_KEY_BYTES] = {7}, buf[MESH_MAX_PACKET];
	struct mesh_packet p = {.type = MESH_PING, .seq = 1, .boot = 5, .sent_ms = 1000000};
	struct mesh_addr m2 = {0x0a000002, 7946}, m3 = {0x0a000003, 7946};
	struct mesh_packet q;
	int len;

	p.from = (struct mesh_addr){0x0a000001, 7946};
	p.to = m3;
	p.to_boot = 33;
	len = mesh_proto_encode(&p, key, buf, sizeof(buf));
	CU_ASSERT_EQUAL_FATAL(mesh_proto_decode(buf, (size_t)len, key, &q), MESH_OK);
	CU_ASSERT_EQUAL(mesh_proto_check_dest(&q, &m3, 33, 1000000), MESH_OK);
	CU_ASSERT_EQUAL(mesh_proto_check_dest(&q, &m2, 33, 1000000),
			MESH_E_DEST); /* m1->m3 sent to m2 */
	CU_ASSERT_EQUAL(mesh_proto_check_dest(&q, &m3, 34, 1000000),
			MESH_E_STALE); /* m3 restarted */
	buf[48] ^= 1;		       /* the destination is under the MAC */
	CU_ASSERT_EQUAL(mesh_proto_decode(buf, (size_t)len, key, &q), MESH_E_MAC);
	p.to_boot = 0; /* first contact: only while recent */
	len = mesh_proto_encode(&p, key, buf, sizeof(buf));
	CU_ASSERT_EQUAL_FATAL(mesh_proto_decode(buf, (size_t)len, key, &q), MESH_OK);
	CU_ASSERT_EQUAL(mesh_proto_check_dest(&q, &m3, 34, 1000000 + MESH_MAX_SKEW_MS), MESH_OK);
	CU_ASSERT_EQUAL(mesh_proto_check_dest(&q, &m3, 34, 1000001 + MESH_MAX_SKEW_MS),
			MESH_E_STALE);
}

static void test_replay(void)
{
	struct mesh_replay r = {0};

	CU_ASSERT_EQUAL(mesh_proto_replay_check(&r, 10, 1), MESH_OK);
	CU_ASSERT_EQUAL(mesh_proto_replay_check(&r, 10, 1), MESH_E_REPLAY);
	CU_ASSERT_EQUAL(mesh_proto_replay_check(&r, 10, 3), MESH_OK);
	CU_ASSERT_EQUAL(mesh_proto_replay_check(&r, 10, 2), MESH_OK); /* late but new */
	CU_ASSERT_EQUAL(mesh_proto_replay_check(&r, 10, 2), MESH_E_REPLAY);
	CU_ASSERT_EQUAL(mesh_proto_replay_check(&r, 10, 200), MESH_OK);
	CU_ASSERT_EQUAL(mesh_proto_replay_check(&r, 10, 100),
			MESH_E_REPLAY);					     /* out of the window */
	CU_ASSERT_EQUAL(mesh_proto_replay_check(&r, 9, 500), MESH_E_REPLAY); /* an older boot */
	CU_ASSERT_EQUAL(mesh_proto_replay_check(&r, 11, 1), MESH_OK);	     /* restarted */
}

static void test_addr(void)
{
	struct mesh_addr a;
	char s[32];

	CU_ASSERT_EQUAL(meshaddr_parse("10.1.2.3:7946", &a), 0);
	meshaddr_format(&a, s, sizeof(s));
	CU_ASSERT_STRING_EQUAL(s, "10.1.2.3:7946");
	CU_ASSERT_NOT_EQUAL(meshaddr_parse("10.1.2.3", &a), 0);
	CU_ASSERT_NOT_EQUAL(meshaddr_parse("10.1.2.300:1", &a), 0);
	CU_ASSERT_NOT_EQUAL(meshaddr_parse("10.1.2.3:0", &a), 0);
	CU_ASSERT_NOT_EQUAL(meshaddr_parse("10.1.2.3:1x", &a), 0);
}

/* ---- a small in-memory cluster: packets are delivered through the real encoder and parser ---- */
#define N 5
static struct swim *nodes[N];
static int up[N], cut[N]; /* cut: partitioned away from everybody */
static uint64_t boots[N];
static struct {
	int to;
	uint8_t buf[MESH_MAX_PACKET];
	int len;
} q[4096];
static int nq, cur;
static uint64_t clock_ms; /* virtual wall clock of the cluster */
static int ev_dead[N][N], ev_restarted[N][N], ev_alive[N][N], ev_health[N][N];
static uint64_t seed = 1;

static uint32_t rnd(void *ctx)
{
	(void)ctx;
	seed = seed * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(seed >> 33);
}

static void net_send(void *ctx, const struct mesh_addr *to, const struct mesh_packet *p)
{
	int dst = (int)(to->ip - 0x0a000001);

	(void)ctx;
	if (dst < 0 || dst >= N || nq == 4096 || cut[cur] || cut[dst])
		return;
	struct mesh_packet sp = *p;

	sp.sent_ms = clock_ms; /* as mesh.c does with the wall clock */
	q[nq].to = dst;
	q[nq].len = mesh_proto_encode(&sp, key, q[nq].buf, sizeof(q[nq].buf));
	nq++;
}

static void net_event(void *ctx, enum swim_event ev, const struct swim_member *m, uint64_t now)
{
	int about = m ? (int)(m->addr.ip - 0x0a000001) : -1;

	(void)ctx, (void)now;
	if (about < 0)
		return;
	if (ev == SWIM_EV_DEAD)
		ev_dead[cur][about]++;
	if (ev == SWIM_EV_RESTARTED)
		ev_restarted[cur][about]++;
	if (ev == SWIM_EV_ALIVE)
		ev_alive[cur][about]++;
	if (ev == SWIM_EV_HEALTH)
		ev_health[cur][about]++;
}

static void start_node(int i, uint64_t now)
{
	struct swim_config c;
	struct swim_io io = {.send = net_send, .event = net_event, .rand = rnd};
	struct mesh_addr self = {0x0a000001 + (uint32_t)i, 7946};

	swim_config_default(&c);
	swim_free(nodes[i]);
	nodes[i] = swim_new(&c, &self, ++boots[i], &io);
	for (int j = 0; j < N; j++) {
		struct mesh_addr a = {0x0a000001 + (uint32_t)j, 7946};

		swim_add_peer(nodes[i], &a, now);
	}
	up[i] = 1;
}

static void run(uint64_t from, uint64_t to)
{
	for (uint64_t t = from; t < to; t += 10) {
		for (int k = 0; k < nq; k++) { /* deliver; answers sent meanwhile follow in order */
			struct mesh_packet p;

			struct mesh_addr self = {0x0a000001 + (uint32_t)q[k].to, 7946};

			clock_ms = t;
			if (up[q[k].to] &&
			    mesh_proto_decode(q[k].buf, (size_t)q[k].len, key, &p) == MESH_OK &&
			    mesh_proto_check_dest(&p, &self, boots[q[k].to], t) == MESH_OK) {
				cur = q[k].to;
				swim_receive(nodes[cur], &p, t);
			}
		}
		nq = 0;
		clock_ms = t;
		for (int i = 0; i < N; i++)
			if (up[i]) {
				cur = i;
				swim_tick(nodes[i], t);
			}
	}
}

static int state_at(int observer, int about)
{
	struct mesh_addr a = {0x0a000001 + (uint32_t)about, 7946};
	const struct swim_member *m = swim_find(nodes[observer], &a);

	return m ? m->state : -1;
}

static void test_cluster(void)
{
	struct swim_config c;
	uint64_t bound;

	swim_config_default(&c);
	/* dead within: probe round, indirect probes, the longest suspicion, dissemination */
	bound = 2 * c.probe_interval_ms +
		(uint64_t)(c.suspicion_max_mult * c.suspicion_mult * c.probe_interval_ms) + 2000;
	for (int i = 0; i < N; i++)
		start_node(i, 0);
	run(0, 5000);
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++)
			if (i != j)
				CU_ASSERT_EQUAL(state_at(i, j), MESH_ALIVE);
	/* health spreads */
	cur = 0;
	swim_set_health(nodes[0],
			&(struct mesh_health){.jobs = 1, .ranks = 4, .hung = 1, .culprit_rank = 2});
	run(5000, 8000);
	for (int i = 1; i < N; i++) {
		struct mesh_addr a = {0x0a000001, 7946};

		CU_ASSERT_EQUAL(swim_find(nodes[i], &a)->health->hung, 1);
	}
	/* kill node 4: every other node declares it dead within the bound */
	up[4] = 0;
	run(8000, 8000 + bound);
	for (int i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL(state_at(i, 4), MESH_DEAD);
		CU_ASSERT_EQUAL(ev_dead[i][4], 1);
	}
	/* restart it (new boot id): seen as restarted, alive again */
	start_node(4, 8000 + bound);
	run(8000 + bound, 8000 + 2 * bound);
	for (int i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL(state_at(i, 4), MESH_ALIVE);
		CU_ASSERT_EQUAL(ev_restarted[i][4], 1);
	}
	/* partition node 3: suspected, then dead; heal: it rejoins (alive, same boot) */
	cut[3] = 1;
	run(8000 + 2 * bound, 8000 + 3 * bound);
	for (int i = 0; i < N; i++)
		if (i != 3)
			CU_ASSERT_EQUAL(state_at(i, 3), MESH_DEAD);
	cut[3] = 0;
	run(8000 + 3 * bound, 8000 + 3 * bound + 30000);
	for (int i = 0; i < N; i++)
		if (i != 3) {
			CU_ASSERT_EQUAL(state_at(i, 3), MESH_ALIVE);
			CU_ASSERT_EQUAL(state_at(3, i), MESH_ALIVE);
			CU_ASSERT_TRUE(ev_alive[i][3] >= 1);
		}
	CU_ASSERT_TRUE(swim_incarnation(nodes[3]) > 0); /* it refuted */
	for (int i = 0; i < N; i++)
		swim_free(nodes[i]);
}

/* A restart learned second-hand: the first news of a known node's new boot says it is suspect
 * (someone probed the new life before it answered). It is still a restart. */
static void test_restart_news_suspect(void)
{
	struct swim_config c;
	struct swim_io io = {.send = net_send, .event = net_event, .rand = rnd};
	struct mesh_addr a = {0x0a000001, 7946}, b = {0x0a000002, 7946}, cc = {0x0a000003, 7946};
	struct mesh_packet p = {.type = MESH_PING};
	struct swim *s;

	swim_config_default(&c);
	s = swim_new(&c, &a, 1, &io);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	memset(ev_restarted, 0, sizeof(ev_restarted));
	cur = 0;
	nq = 0;
	/* b talks to a: known, first life (boot 100) */
	p.from = b;
	p.boot = 100;
	p.seq = 1;
	swim_receive(s, &p, 1000);
	CU_ASSERT_EQUAL(swim_find(s, &b)->boot, 100);
	/* c says b (boot 200) is suspect */
	p.from = cc;
	p.boot = 300;
	p.seq = 1;
	p.nupdates = 1;
	p.updates[0] = (struct mesh_update){
	    .node = b, .state = MESH_SUSPECT, .incarnation = 0, .boot = 200, .accuser = cc};
	swim_receive(s, &p, 2000);
	CU_ASSERT_EQUAL(ev_restarted[0][1], 1);
	CU_ASSERT_EQUAL(swim_find(s, &b)->boot, 200);
	CU_ASSERT_EQUAL(swim_find(s, &b)->state, MESH_SUSPECT);
	/* its own alive news later is not a second restart */
	p.from = b;
	p.boot = 200;
	p.seq = 1;
	p.incarnation = 1;
	p.nupdates = 0;
	swim_receive(s, &p, 3000);
	CU_ASSERT_EQUAL(ev_restarted[0][1], 1);
	CU_ASSERT_EQUAL(swim_find(s, &b)->state, MESH_ALIVE);
	nq = 0;
	swim_free(s);
}

int main(void)
{
	CU_pSuite s;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("mesh", NULL, NULL);
	CU_add_test(s, "encode/decode, MAC, checks", test_roundtrip);
	CU_add_test(s, "destination and receiver's life under the MAC", test_destination);
	CU_add_test(s, "replay window", test_replay);
	CU_add_test(s, "addresses", test_addr);
	CU_add_test(s, "cluster: health, death, restart, partition and heal", test_cluster);
	CU_add_test(s, "restart first heard of as a suspicion", test_restart_news_suspect);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	{
		int f = (int)CU_get_number_of_failures();

		CU_cleanup_registry();
		return f ? 1 : 0;
	}
}
