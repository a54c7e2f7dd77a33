/*
 * decide_sim: the decision protocol's simulator (sim.h). Each fault kind draws a schedule
 * from the seed; a run is the same every time for the same kind and seed.
 *   decide_sim --kind K --seed S [--runs N] [--trace]
 * runs seeds S .. S+N-1 of kind K (all: every kind), checks each (sim_check.c), prints the
 * failing seeds and one line of figures per kind; exit status 1 on any violation.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/decide_records.h"
#include "sim.h"

enum fault { F_RANK_FAIL, F_HOST_DEATH, F_PAUSE, F_AGENT_RESTART, F_CUT, F_PREEMPT, F_OPERATOR };

struct sched {
	uint64_t t;
	enum fault f;
	int host, rank;
	int arg; /* ms */
	int done;
};

struct kind {
	const char *name;
	const char *what;
	int hosts, ranks; /* 0: drawn (3-6 hosts, 1-4 ranks) */
};

static const struct kind kinds[] = {
    {"preempt", "a preemption of every host (baseline)", 0, 0},
    {"rank_fail", "1-3 ranks fail", 0, 0},
    {"host_death", "one host dies", 0, 0},
    {"agent_pause", "one agent paused 1.5-2.5 x the lease TTL", 0, 0},
    {"agent_restart_cut", "one host cut from etcd 5-30 s, its agent restarted in the cut", 0, 0},
    {"etcd_outage", "etcd unreachable for every host 2-30 s", 0, 0},
    {"host_cut", "one host cut from etcd 1-30 s", 0, 0},
    {"clock_skew", "wall clocks skewed up to 10 s, 1-3 ranks fail", 0, 0},
    {"preempt_grace", "preempt_grace 1-5 s, a preemption", 0, 0},
    {"node_fault_limit", "node_fault_limit 2, 2-3 failures on one host", 0, 0},
    {"two_preemptions", "two preemptions 10-15 s apart", 0, 0},
    {"hosts65", "65 hosts: a rank fails, a preemption", 65, 1},
    {"hosts1000", "1,000 hosts: a preemption", 1000, 1},
};
#define NKINDS ((int)(sizeof(kinds) / sizeof(kinds[0])))

static struct sched *add(struct sched *q, int *n, uint64_t t, enum fault f, int host, int rank,
			 int arg)
{
	q = realloc(q, sizeof(*q) * (size_t)(*n + 1));
	if (!q)
		abort();
	q[(*n)++] = (struct sched){t, f, host, rank, arg, 0};
	return q;
}

/* The schedule of kind k for this seed (the hosts are set up). */
static struct sched *schedule(struct sim *s, const struct kind *k, int *ret_n)
{
	struct sched *q = NULL;
	int n = 0, H = s->nhosts;
	uint64_t t0 = (uint64_t)sim_range(&s->rng, 6000, s->quiet_ms - 10000);
	const char *kn = k->name;

	/* operator checkpoints every 4-8 s (a resume point for what follows) */
	for (uint64_t t = 3000; t < s->quiet_ms; t += (uint64_t)sim_range(&s->rng, 4000, 8000))
		q = add(q, &n, t, F_OPERATOR, (int)sim_range(&s->rng, 0, H - 1), 0, 0);
	if (!strcmp(kn, "preempt") || !strcmp(kn, "preempt_grace") || !strcmp(kn, "hosts1000")) {
		q = add(q, &n, t0, F_PREEMPT, -1, 0, 0);
	} else if (!strcmp(kn, "two_preemptions")) {
		q = add(q, &n, t0, F_PREEMPT, -1, 0, 0);
		q = add(q, &n, t0 + (uint64_t)sim_range(&s->rng, 10000, 15000), F_PREEMPT, -1, 0, 0);
	} else if (!strcmp(kn, "rank_fail") || !strcmp(kn, "clock_skew")) {
		for (int i = (int)sim_range(&s->rng, 1, 3); i > 0; i--)
			q = add(q, &n, (uint64_t)sim_range(&s->rng, 6000, 35000), F_RANK_FAIL,
				(int)sim_range(&s->rng, 0, H - 1),
				(int)sim_range(&s->rng, 0, s->ranks_per_host - 1), 0);
	} else if (!strcmp(kn, "node_fault_limit")) {
		int h = (int)sim_range(&s->rng, 0, H - 1);

		for (int i = (int)sim_range(&s->rng, 2, 3); i > 0; i--)
			q = add(q, &n, t0 + (uint64_t)(i * 8000), F_RANK_FAIL, h,
				(int)sim_range(&s->rng, 0, s->ranks_per_host - 1), 0);
	} else if (!strcmp(kn, "host_death")) {
		q = add(q, &n, t0, F_HOST_DEATH, (int)sim_range(&s->rng, 0, H - 1), 0, 0);
	} else if (!strcmp(kn, "agent_pause")) {
		int ttl = s->hosts[0].cfg.lease_ttl_s * 1000;

		q = add(q, &n, t0, F_PAUSE, (int)sim_range(&s->rng, 0, H - 1), 0,
			(int)sim_range(&s->rng, ttl * 3 / 2, ttl * 5 / 2));
	} else if (!strcmp(kn, "agent_restart_cut")) {
		int h = (int)sim_range(&s->rng, 0, H - 1), d = (int)sim_range(&s->rng, 5000, 30000);

		q = add(q, &n, t0, F_CUT, h, 0, d);
		q = add(q, &n, t0 + (uint64_t)sim_range(&s->rng, 0, d), F_AGENT_RESTART, h, 0, 0);
	} else if (!strcmp(kn, "host_cut")) {
		q = add(q, &n, t0, F_CUT, (int)sim_range(&s->rng, 0, H - 1), 0,
			(int)sim_range(&s->rng, 1000, 30000));
	} else if (!strcmp(kn, "etcd_outage")) {
		s->store_down_from = (int)t0;
		s->store_down_until = (int)t0 + (int)sim_range(&s->rng, 2000, 30000);
	} else if (!strcmp(kn, "hosts65")) {
		q = add(q, &n, t0, F_RANK_FAIL, (int)sim_range(&s->rng, 0, H - 1), 0, 0);
		q = add(q, &n, t0 + (uint64_t)sim_range(&s->rng, 5000, 15000), F_PREEMPT, -1, 0, 0);
	}
	*ret_n = n;
	return q;
}

static void apply(struct sim *s, struct sched *e)
{
	struct sim_host *h = e->host >= 0 ? &s->hosts[e->host] : NULL;

	e->done = 1;
	switch (e->f) {
	case F_RANK_FAIL:
		if (h->ranks[e->rank].st == RK_TRAINING || h->ranks[e->rank].st == RK_SAVING) {
			sim_trace(s, "FAULT %s rank %d fails", h->cfg.node, h->ranks[e->rank].id);
			sim_rank_exit(s, h, e->rank, sim_range(&s->rng, 0, 1) ? 9 : 1 << 8);
		}
		break;
	case F_HOST_DEATH:
		sim_trace(s, "FAULT %s dies", h->cfg.node);
		sim_host_kill(s, h);
		break;
	case F_PAUSE:
		sim_trace(s, "FAULT %s agent paused %d ms", h->cfg.node, e->arg);
		h->paused_until = s->now + (uint64_t)e->arg;
		break;
	case F_AGENT_RESTART:
		sim_trace(s, "FAULT %s agent restarted", h->cfg.node);
		sim_host_agent_restart(s, h);
		break;
	case F_CUT:
		sim_trace(s, "FAULT %s cut from etcd %d ms", h->cfg.node, e->arg);
		h->cut_from = s->now;
		h->cut_until = s->now + (uint64_t)e->arg;
		break;
	case F_PREEMPT:
		sim_trace(s, "FAULT preemption");
		for (int i = 0; i < s->nhosts; i++)
			sim_preempt(s, &s->hosts[i]);
		break;
	case F_OPERATOR:
		sim_host_operator(s, h);
		break;
	}
}

static void put_run(struct sim *s)
{
	struct dec_run x = {.run = SIM_RUN, .resume_step = -1, .at_ms = 1700000000000ull};
	char key[DEC_KEY_LEN * 2], rel[DEC_KEY_LEN], val[DEC_VALUE_MAX];

	snprintf(x.by, sizeof(x.by), "h0000");
	dec_key_run(rel, sizeof(rel), SIM_RUN);
	snprintf(key, sizeof(key), "%s%s", SIM_PREFIX, rel);
	if (dec_run_format(&x, val, sizeof(val)) == 0)
		ss_claim(&s->st, 0, key, val, 0);
}

/* One run of kind k with seed; the number of violations. */
static int run_one(const struct kind *k, uint64_t seed, int trace, long *late_done)
{
	struct sim s = {0};
	struct sched *q;
	int nq, v;

	s.seed = seed;
	s.rng = seed * 0x100000001b3ull + (uint64_t)(k - kinds) + 1;
	s.kind = k->name;
	s.trace = trace;
	s.out = stdout;
	s.next_pid = 100;
	s.nccl_ms = 30000;
	s.quiet_ms = 40000;
	s.end_ms = 75000;
	s.look_min = 100;
	s.look_max = 500;
	if (k->hosts >= 1000) { /* a shorter run, slower looks: each look reads every member */
		s.quiet_ms = 20000;
		s.end_ms = 45000;
		s.look_min = 500;
		s.look_max = 1500;
	}
	s.nhosts = k->hosts ? k->hosts : (int)sim_range(&s.rng, 3, 6);
	s.ranks_per_host = k->ranks ? k->ranks : (int)sim_range(&s.rng, 1, 4);
	s.world = s.nhosts * s.ranks_per_host;
	ss_init(&s.st);
	put_run(&s);
	s.hosts = calloc((size_t)s.nhosts, sizeof(*s.hosts));
	if (!s.hosts)
		abort();
	for (int i = 0; i < s.nhosts; i++) {
		struct sim_host *h = &s.hosts[i];

		sim_host_init(&s, h, i);
		if (!strcmp(k->name, "clock_skew"))
			h->wall_off += sim_range(&s.rng, -10000, 10000);
		if (!strcmp(k->name, "preempt_grace"))
			h->cfg.preempt_grace_s = (double)sim_range(&s.rng, 1, 5);
		if (!strcmp(k->name, "node_fault_limit"))
			h->cfg.node_fault_limit = 2;
	}
	/* every host runs the same configuration */
	for (int i = 1; i < s.nhosts; i++)
		s.hosts[i].cfg.preempt_grace_s = s.hosts[0].cfg.preempt_grace_s;
	q = schedule(&s, k, &nq);
	if (trace)
		printf("kind %s seed %llu: %d hosts x %d ranks\n", k->name,
		       (unsigned long long)seed, s.nhosts, s.ranks_per_host);
	for (s.now = 0; s.now < s.end_ms; s.now += SIM_TICK_MS) {
		if (!(s.now >= (uint64_t)s.store_down_from && s.now < (uint64_t)s.store_down_until))
			ss_expire(&s.st, s.now);
		for (int i = 0; i < nq; i++)
			if (!q[i].done && q[i].t <= s.now)
				apply(&s, &q[i]);
		for (int i = 0; i < s.nhosts; i++) {
			struct sim_host *h = &s.hosts[i];

			if (h->pkill_at && s.now >= h->pkill_at) { /* the scheduler's grace ended */
				for (int r = 0; r < h->nranks; r++)
					for (int p = 0; p < h->nppid; p++)
						if (h->ranks[r].pid == h->ppid[p])
							sim_rank_exit(&s, h, r, 9);
				h->pkill_at = 0;
			}
			sim_host_lease(&s, h);
		}
		sim_collectives(&s);
		for (int i = 0; i < s.nhosts; i++) {
			sim_ranks_step(&s, &s.hosts[i]);
			sim_launcher(&s, &s.hosts[i]);
			sim_host_look(&s, &s.hosts[i]);
		}
	}
	v = sim_check(&s);
	*late_done += s.late_done;
	if (trace && s.late_done)
		printf("finding: %d done/ record(s) of a generation claimed after the next one was "
		       "decided (never resumed from)\n", s.late_done);
	if (v && !trace)
		printf("VIOLATION kind %s seed %llu: replay with: decide_sim --kind %s --seed %llu "
		       "--trace\n",
		       k->name, (unsigned long long)seed, k->name, (unsigned long long)seed);
	for (int i = 0; i < s.nhosts; i++)
		sim_host_free(&s.hosts[i]);
	free(s.hosts);
	free(s.ev);
	free(q);
	ss_free(&s.st);
	return v;
}

static double secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *kind = "all";
	uint64_t seed = 1;
	long runs = 1, big_runs = -1;
	int trace = 0, bad = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--kind") && i + 1 < argc)
			kind = argv[++i];
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--big-runs") && i + 1 < argc)
			big_runs = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--trace"))
			trace = 1;
		else {
			fprintf(stderr,
				"usage: decide_sim [--kind K|all] [--seed S] [--runs N] "
				"[--big-runs N (hosts1000)] [--trace]\nkinds:\n");
			for (int k = 0; k < NKINDS; k++)
				fprintf(stderr, "  %-18s %s\n", kinds[k].name, kinds[k].what);
			return 2;
		}
	}
	for (int k = 0; k < NKINDS; k++) {
		long n = runs, viol = 0, failed = 0, late = 0;
		double t0 = secs();

		if (strcmp(kind, "all") && strcmp(kind, kinds[k].name))
			continue;
		if (kinds[k].hosts >= 1000 && big_runs >= 0 && !strcmp(kind, "all"))
			n = big_runs;
		for (long i = 0; i < n; i++) {
			int v = run_one(&kinds[k], seed + (uint64_t)i, trace, &late);

			viol += v;
			failed += v > 0;
		}
		printf("sim %-18s runs %6ld  failing runs %5ld  violations %6ld  late done/ %5ld  "
		       "%8.1f s\n",
		       kinds[k].name, n, failed, viol, late, secs() - t0);
		fflush(stdout);
		bad |= failed > 0;
	}
	return bad;
}
