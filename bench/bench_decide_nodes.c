/* The decision policy's cost per look at a job over many hosts (make bench, "decisions"): the
 * records read into the node tables in the store's order (dr_reset, dr_add_member, dr_add_report)
 * and the rules that go over them every look (dp_vanished, dp_all_acked, dp_request_failed,
 * dp_complete), 2 ranks a host, every host's report in. Prints the median of 21 batches per
 * size, in microseconds per look, and the rules' part alone (the tables read once). Usage: bench_decide_nodes [HOSTS...] (100 1000 4000). */
#include <stdio.h>
#include <string.h>

#include "bench_util.h"
#include "lib/decide_policy.h"
#include "lib/decide_records.h"

#define BATCHES 21

static double look_us(int n, int load)
{
	struct dp_config c = {.shared = 1, .lease_ttl_s = 3};
	struct dp_records r = {.reachable = 1, .ck_n = 1, .bound = 1, .bind_target = 41};
	struct dp_memory m = {0};
	struct dp_local l = {.ranks = 2, .saved = 2, .live = 2, .acked = 2, .max_ack = 40};
	struct dp_now now = {.mono_ms = 100000, .wall_ms = 1700000000000ull};
	struct dec_member mb = {.ranks = 2, .lease = 7, .lease_ttl_s = 3};
	struct dec_report x = {.ranks = 2, .saved = 2, .acked = 2, .max_ack = 40};
	double t[BATCHES];
	int looks = n >= 4000 ? 20 : n >= 1000 ? 50 : 500, ok = 1;
	char why[128];

	snprintf(c.node, sizeof(c.node), "h%05d", 0);
	for (int b = 0; b < BATCHES; b++) {
		double t0 = bench_now_ns();

		for (int k = 0; k < looks; k++) {
			int64_t target;

			if (!k || load) { /* else the tables as the first look read them */
				dr_reset(&r);
				for (int i = 0; i < n; i++) {
					char node[DEC_NODE_LEN];

					snprintf(node, sizeof(node), "h%05d", i);
					ok &= dr_add_member(&r, node, &mb) == 0;
					ok &= i == 0 || dr_add_report(&r, node, &x) == 0;
				}
			}
			dp_vanished(&c, &r, &m, &now);
			ok &= dp_all_acked(&c, &r, &l, &target);
			ok &= !dp_request_failed(&c, &r, &l, why, sizeof(why));
			ok &= dp_complete(&c, &r, &m, &l);
		}
		t[b] = (bench_now_ns() - t0) / looks / 1000;
	}
	ok &= m.nlost == 0 && m.nprev == n;
	dr_clear(&r);
	dp_memory_clear(&m);
	return ok ? bench_median(t, BATCHES) : -1;
}

int main(int argc, char **argv)
{
	const char *def[] = {"100", "1000", "4000"};
	int nsizes = argc > 1 ? argc - 1 : 3;

	for (int i = 0; i < nsizes; i++) {
		int n = atoi(argc > 1 ? argv[i + 1] : def[i]);
		double us = n > 0 ? look_us(n, 1) : -1, rules = n > 0 ? look_us(n, 0) : -1;

		if (us < 0 || rules < 0) {
			fprintf(stderr,
				"bench_decide_nodes: %d hosts: a look did not decide as it "
				"should\n",
				n);
			return 1;
		}
		printf("%5d hosts: %9.1f us per look (%.3f us per host), the rules alone %.1f us\n",
		       n, us, us / n, rules);
	}
	return 0;
}
