/*
 * mesh_sim: deterministic simulator of the heartbeat mesh. Runs the protocol code of
 * user/proto/swim.c unchanged, N nodes under virtual time, with a network that loses each packet with
 * probability LOSS and delays it uniformly in [1, 2 * DELAY] ms. Packets are passed decoded; their
 * wire size (header, updates, MAC) is counted.
 *
 *   mesh_sim detect N TRIALS [memberlist]   kill one node per trial (after 20 s of warm-up)
 *                                           and time when each live node declares it dead
 *   mesh_sim fp N SECONDS LOSS [memberlist] no failure: false dead declarations (and
 *                                           suspicions) per node-hour; load per node
 *   mesh_sim cadence N                      step cadence of a job on N hosts (8 ranks each):
 *                                           cadence part size, period, bytes a host a second
 *   mesh_sim parts N SECONDS LOSS SOFT      a job of 8 ranks on each of N hosts stalls: each
 *                                           agent sends its part (agent/jobparts.c's policy,
 *                                           parts encoded by proto/part_proto.c) for SECONDS;
 *                                           when each host holds every other host's part, its
 *                                           verdict time at soft timeout SOFT, bytes per host
 * Output: one line of key=value pairs (bench.sh formats them).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cadence.h"
#include "proto/part_proto.h"
#include "proto/swim.h"

#define BASE_IP 0x0a000001u
#define PORT	7946
#define TICK_MS 50

struct pkt {
	uint64_t at;
	int to;
	struct mesh_packet p;
};

struct sim {
	int n;
	struct swim **nodes;
	int *alive; /* 0: killed */
	uint64_t now;
	uint64_t rng;
	double loss;
	unsigned delay_ms;
	/* in-flight packets: a binary heap by delivery time */
	struct pkt **heap;
	int nh, hcap;
	/* measurements */
	int victim;
	uint64_t kill_at;
	uint64_t *detected; /* per node: when it declared the victim dead, 0 not yet */
	uint64_t packets, bytes, false_dead, false_suspect;
	int sender; /* node whose callback is running */
};

static uint32_t rnd(struct sim *s)
{
	/* xorshift64* */
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return (uint32_t)((s->rng * 2685821657736338717ull) >> 32);
}

static uint32_t node_rand(void *ctx)
{
	return rnd(ctx);
}

static void heap_push(struct sim *s, struct pkt *k)
{
	int i;

	if (s->nh == s->hcap) {
		s->hcap = s->hcap ? s->hcap * 2 : 1024;
		s->heap = realloc(s->heap, (size_t)s->hcap * sizeof(*s->heap));
		if (!s->heap)
			abort();
	}
	i = s->nh++;
	while (i && s->heap[(i - 1) / 2]->at > k->at) {
		s->heap[i] = s->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->heap[i] = k;
}

static struct pkt *heap_pop(struct sim *s)
{
	struct pkt *top = s->heap[0], *last = s->heap[--s->nh];
	int i = 0;

	for (;;) {
		int c = 2 * i + 1;

		if (c >= s->nh)
			break;
		if (c + 1 < s->nh && s->heap[c + 1]->at < s->heap[c]->at)
			c++;
		if (s->heap[c]->at >= last->at)
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (s->nh)
		s->heap[i] = last;
	return top;
}

static void node_send(void *ctx, const struct mesh_addr *to, const struct mesh_packet *p)
{
	struct sim *s = ctx;
	int dst = (int)(to->ip - BASE_IP);
	struct pkt *k;

	s->packets++;
	s->bytes +=
	    MESH_HDR_BYTES + (uint64_t)p->nupdates * MESH_UPDATE_BYTES + MESH_MAC_BYTES + 28;
	if (dst < 0 || dst >= s->n || (double)rnd(s) / 4294967296.0 < s->loss)
		return;
	k = malloc(sizeof(*k));
	if (!k)
		abort();
	k->at = s->now + 1 + rnd(s) % (2 * s->delay_ms);
	k->to = dst;
	k->p = *p;
	heap_push(s, k);
}

static void node_event(void *ctx, enum swim_event ev, const struct swim_member *m, uint64_t now)
{
	struct sim *s = ctx;
	int about = m ? (int)(m->addr.ip - BASE_IP) : -1;

	if (ev == SWIM_EV_DEAD) {
		if (about == s->victim && s->kill_at && !s->detected[s->sender])
			s->detected[s->sender] = now;
		else if (about >= 0 && s->alive[about])
			s->false_dead++;
	} else if (ev == SWIM_EV_SUSPECT && about >= 0 && s->alive[about]) {
		s->false_suspect++;
	}
}

static struct sim *sim_new(int n, double loss, int memberlist, uint64_t seed)
{
	struct sim *s = calloc(1, sizeof(*s));
	struct swim_config c;

	if (!s)
		abort();
	s->n = n;
	s->loss = loss;
	s->delay_ms = 2;
	s->rng = seed * 0x9E3779B97F4A7C15ull + 1;
	s->victim = -1;
	s->nodes = calloc((size_t)n, sizeof(*s->nodes));
	s->alive = calloc((size_t)n, sizeof(*s->alive));
	s->detected = calloc((size_t)n, sizeof(*s->detected));
	if (memberlist)
		swim_config_memberlist(&c);
	else
		swim_config_default(&c);
	for (int i = 0; i < n; i++) {
		struct mesh_addr self = {BASE_IP + (uint32_t)i, PORT};
		struct swim_io io = {
		    .ctx = s, .send = node_send, .event = node_event, .rand = node_rand};

		s->nodes[i] = swim_new(&c, &self, 1000 + (uint64_t)i, &io);
		s->alive[i] = 1;
	}
	/* every node is configured with the job's hosts (a static peers list) */
	for (int i = 0; i < n; i++) {
		swim_reserve(s->nodes[i], n);
		for (int j = 0; j < n; j++) {
			struct mesh_addr a = {BASE_IP + (uint32_t)j, PORT};

			swim_add_peer(s->nodes[i], &a, 0);
		}
	}
	return s;
}

static void sim_free(struct sim *s)
{
	for (int i = 0; i < s->n; i++)
		swim_free(s->nodes[i]);
	while (s->nh)
		free(heap_pop(s));
	free(s->heap);
	free(s->nodes);
	free(s->alive);
	free(s->detected);
	free(s);
}

static void run_until(struct sim *s, uint64_t end)
{
	while (s->now < end) {
		uint64_t next_tick = (s->now / TICK_MS + 1) * TICK_MS;

		while (s->nh && s->heap[0]->at <= next_tick) {
			struct pkt *k = heap_pop(s);

			s->now = k->at;
			if (s->alive[k->to]) {
				s->sender = k->to;
				swim_receive(s->nodes[k->to], &k->p, s->now);
			}
			free(k);
		}
		s->now = next_tick;
		for (int i = 0; i < s->n; i++)
			if (s->alive[i]) {
				s->sender = i;
				swim_tick(s->nodes[i], s->now);
			}
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The wire size of one host's part of a job of 8 ranks per host, each waiting on one socket
 * (an edge), two endpoints resolved for others, a 40-character reason: what jobparts sends. */
static int part_bytes(void)
{
	static const uint8_t key[MESH_KEY_BYTES];
	uint8_t buf[PART_MAX_PACKET];
	struct part_packet p = {.ttl_ms = 3500, .text_rank = 7};

	p.from = (struct mesh_addr){BASE_IP, PORT};
	p.to = (struct mesh_addr){BASE_IP + 1, PORT};
	snprintf(p.part.job, sizeof(p.part.job), "torch:10.0.0.1:29500");
	p.part.world_size = 8000;
	p.part.nchunks = 1;
	p.part.naddrs = 1;
	p.part.nranks = 8;
	p.part.nedges = 8;
	p.part.nres = 2;
	for (int r = 0; r < 8; r++) {
		p.part.ranks[r] = (struct jv_rank){.rank = r, .state = RS_BLOCKED, .syscall = 202};
		p.part.edges[r] =
		    (struct jv_edge){.from_rank = r, .to_rank = -1, .how = JV_EDGE_RECV};
	}
	memset(p.part.ranks[7].reason, 'x', 40);
	return part_encode(&p, key, buf, sizeof(buf)) + 28; /* and IPv4 + UDP headers */
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * A stall of a job on all n hosts at t = 0. Each agent scans every 200 ms (its own phase) and
 * sees no progress from its skew (0..100 ms); after soft / 4 (at least 1 s) without progress it
 * sends its part to
 * every other host, then refreshes it every second (every host stalls: no answers needed).
 * Each packet is lost with probability loss, else arrives after 1..2*delay ms.
 */
static int parts_mode(int n, double secs, double loss, double soft)
{
	struct sim s = {.rng = 12345, .delay_ms = 2};
	double *first = malloc(sizeof(double) * (size_t)n * (size_t)n),
	       *done = calloc((size_t)n, sizeof(double));
	double *phase = malloc(sizeof(double) * (size_t)n),
	       *pub = malloc(sizeof(double) * (size_t)n);
	uint64_t packets = 0;
	int size = part_bytes(), complete_at_soft = 0;
	double worst = 0, bytes, after = soft * 250 > 1000 ? soft * 250 : 1000;

	if (!first || !done || !phase || !pub)
		abort();
	for (int i = 0; i < n * n; i++)
		first[i] = -1;
	for (int i = 0; i < n; i++) {
		double skew = rnd(&s) % 100;

		phase[i] = rnd(&s) % 200;
		/* the first scan at which it has seen no progress for soft / 4 (at least 1 s) */
		pub[i] = phase[i] + 200 * ceil((skew + after - phase[i]) / 200.0);
	}
	for (int i = 0; i < n; i++)
		for (double t = pub[i]; t < secs * 1000; t += 1000)
			for (int j = 0; j < n; j++) {
				double at;

				if (j == i)
					continue;
				packets++;
				if ((double)rnd(&s) / 4294967296.0 < loss)
					continue;
				at = t + 1 + rnd(&s) % (2 * s.delay_ms);
				if (first[(size_t)j * n + i] < 0 || at < first[(size_t)j * n + i])
					first[(size_t)j * n + i] = at;
			}
	for (int j = 0; j < n; j++) {
		for (int i = 0; i < n; i++) {
			double f = first[(size_t)j * n + i];

			if (i == j)
				continue;
			if (f < 0) {
				done[j] = 1e12;
				break;
			}
			if (f > done[j])
				done[j] = f;
		}
		complete_at_soft += done[j] <= soft * 1000;
		if (done[j] > worst)
			worst = done[j];
	}
	qsort(done, (size_t)n, sizeof(*done), cmp_dbl);
	bytes = (double)packets * size;
	/* the verdict: at the first scan after the soft timeout at which the view is complete */
	printf("n=%d ranks=%d loss=%.2f part_bytes=%d complete_view_p50_s=%.2f p99_s=%.2f "
	       "last_s=%.2f complete_at_soft=%d/%d verdict_last_s=%.2f bytes_per_host_s=%.0f "
	       "packets_per_host_s=%.0f\n",
	       n, 8 * n, loss, size, done[n / 2] / 1000, done[(int)(n * 0.99)] / 1000, worst / 1000,
	       complete_at_soft, n, (worst > soft * 1000 ? worst : soft * 1000) / 1000 + 0.2,
	       bytes / n / (secs - 1), (double)packets / n / (secs - 1));
	free(first);
	free(done);
	free(phase);
	free(pub);
	return 0;
}

/* The wire size of one host's cadence part of a job of 8 ranks per host (what cadparts sends). */
static int cad_part_bytes(void)
{
	uint8_t key[MESH_KEY_BYTES] = {1}, buf[PART_MAX_PACKET];
	struct part_packet p = {.ttl_ms = 6000, .text_rank = -1, .flags = PART_F_CAD};

	p.from = (struct mesh_addr){0x0a000002, 7946};
	p.to = (struct mesh_addr){0x0a000001, 7946};
	snprintf(p.part.job, sizeof(p.part.job), "torch:10.0.0.1:29500");
	p.part.world_size = 8000;
	p.part.nchunks = 1;
	p.part.ncad = 8;
	for (int r = 0; r < 8; r++)
		p.part.cad[r] = (struct cad_summary){.rank = r,
						     .flags = CAD_SUM_VALID,
						     .own_ppm = 700000,
						     .wait_ppm = 300000,
						     .step_us = 300000,
						     .window_ms = 10000};
	return part_encode(&p, key, buf, sizeof(buf)) + 28; /* and IPv4 + UDP headers */
}

/*
 * Step cadence across n hosts of one job (agent/cadparts.c's policy, lib/cadence.c's period):
 * each host sends its 8 ranks' summaries to the n - 1 others every period; a host's slowdown
 * is seen by the others within one period (+ the wire), so a straggler is named by every host
 * within straggler_window (sustain, 10 s) + one period + a scan.
 */
static int cadence_mode(int n)
{
	double period = (double)cad_part_period_ns(n) / 1e9;
	int size = cad_part_bytes();

	printf("n=%d ranks=%d cad_part_bytes=%d period_s=%.1f bytes_per_host_s=%.0f "
	       "packets_per_host_s=%.1f named_everywhere_within_s=%.1f\n",
	       n, 8 * n, size, period, (double)(n - 1) * size / period, (double)(n - 1) / period,
	       10 + period + 0.2);
	return 0;
}

int main(int argc, char **argv)
{
	int n, memberlist;

	if (argc >= 4 && !strcmp(argv[1], "detect")) {
		int trials = atoi(argv[3]), nd = 0, all_known = 0;
		uint64_t *d;
		double worst_all = 0;

		n = atoi(argv[2]);
		memberlist = argc > 4 && !strcmp(argv[4], "memberlist");
		d = calloc((size_t)n * (size_t)trials, sizeof(*d));
		for (int t = 0; t < trials; t++) {
			struct sim *s = sim_new(n, 0.0, memberlist, 7 + (uint64_t)t);
			uint64_t last = 0;
			int known = 0;

			run_until(s, 20000);
			s->victim = (int)(rnd(s) % (uint32_t)n);
			s->kill_at = s->now;
			s->alive[s->victim] = 0;
			run_until(s, s->now + 120000);
			for (int i = 0; i < n; i++) {
				if (i == s->victim || !s->detected[i])
					continue;
				d[nd++] = s->detected[i] - s->kill_at;
				known++;
				if (s->detected[i] > last)
					last = s->detected[i];
			}
			all_known += known == n - 1;
			if ((double)(last - s->kill_at) > worst_all)
				worst_all = (double)(last - s->kill_at);
			sim_free(s);
		}
		qsort(d, (size_t)nd, sizeof(*d), cmp_u64);
		printf("n=%d trials=%d detections=%d all_knew=%d/%d median_s=%.2f p99_s=%.2f "
		       "last_s=%.2f\n",
		       n, trials, nd, all_known, trials, nd ? d[nd / 2] / 1000.0 : -1,
		       nd ? d[(int)(nd * 0.99)] / 1000.0 : -1, worst_all / 1000.0);
		free(d);
		return 0;
	}
	if (argc >= 5 && !strcmp(argv[1], "fp")) {
		double secs = atof(argv[3]), loss = atof(argv[4]);
		struct sim *s;

		n = atoi(argv[2]);
		memberlist = argc > 5 && !strcmp(argv[5], "memberlist");
		s = sim_new(n, loss, memberlist, 42);
		run_until(s, 10000); /* joined */
		s->packets = s->bytes = s->false_dead = s->false_suspect = 0;
		run_until(s, s->now + (uint64_t)(secs * 1000));
		printf(
		    "n=%d loss=%.2f seconds=%.0f false_dead_per_node_hour=%.4f "
		    "suspicions_per_node_hour=%.2f packets_per_node_s=%.2f bytes_per_node_s=%.0f\n",
		    n, loss, secs, s->false_dead / (n * secs / 3600.0),
		    s->false_suspect / (n * secs / 3600.0), s->packets / (n * secs),
		    s->bytes / (n * secs));
		sim_free(s);
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "cadence"))
		return cadence_mode(atoi(argv[2]));
	if (argc >= 6 && !strcmp(argv[1], "parts"))
		return parts_mode(atoi(argv[2]), atof(argv[3]), atof(argv[4]), atof(argv[5]));
	fprintf(stderr, "usage: mesh_sim detect N TRIALS [memberlist] | fp N SECONDS LOSS "
			"[memberlist] | parts N SECONDS LOSS SOFT | cadence N\n");
	return 2;
}
