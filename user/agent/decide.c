/* Coordinated checkpoint and restart decisions: see decide.h. */
#include "agent/decide.h"

#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/eventlog.h"
#include "agent/store.h"
#include "agent/timersvc.h"
#include "agent/views.h"
#include "ftbpf/slot.h"
#include "lib/config.h"
#include "lib/decisions.h"
#include "lib/jsonx.h"
#include "lib/ranks.h"
#include "os/clock.h"
#include "os/log.h"
#include "os/pidfd.h"
#include "os/procfs.h"

#define MAX_JOBS       1024
#define MAX_NODES      64
#define MAX_GENS       256
#define CLAIM_RETRY_MS 1000 /* a claim not seen in the store by then is made again */
/* A lost node must stay lost this long before a decision: a node that the mesh declared dead
 * on another's word (gossip from a node that was itself cut off) refutes it within a protocol
 * period, and is not lost any more. */
#define LOST_CONFIRM_MS 1000

struct node_report {
	char node[DEC_NODE_LEN];
	struct dec_report r;
};

struct node_member {
	char node[DEC_NODE_LEN];
	struct dec_member m;
};

/* One job as the decider follows it. */
struct djob {
	uid_t uid;
	char id[FTBPF_JOB_LEN];
	char prefix[DEC_KEY_LEN]; /* "jobs/<uid>/<id, '/' and '%' escaped>/" */
	/* what the store holds (load) */
	uint64_t gen; /* the current generation */
	struct dec_gen g;
	uint64_t fail_at[MAX_GENS]; /* when each failure generation was decided */
	int nfail;
	char fault_node[MAX_GENS][DEC_NODE_LEN];
	int nfault;
	uint64_t ck_n; /* the current generation's latest checkpoint request, 0 none */
	struct dec_ckpt ck;
	int ck_done;
	int64_t last_complete;
	struct node_report rep[MAX_NODES];
	int nrep;
	struct node_member mem[MAX_NODES];
	int nmem;
	/* this node's part */
	uint64_t applied_gen; /* generation whose consequences were carried out here */
	uint64_t seen_gen, seen_ck, seen_done;	/* decisions already logged */
	uint64_t claimed_gen_ms, claimed_ck_ms; /* a claim in flight (not yet in the store) */
	uint64_t req_ms, done_ms;		/* the current request: seen, completed (grace) */
	int final_claimed;
	uint64_t step_prev, step_prev_ms; /* the job's step rate */
	double steps_per_s;
	int retargets;
	int fenced;
	char prev_mem[MAX_NODES][DEC_NODE_LEN]; /* members at the last look, with ranks */
	int nprev;
	char lost[MAX_NODES][DEC_NODE_LEN]; /* members lost (mesh, or their lease) */
	uint64_t lost_ms[MAX_NODES];
	int nlost;
	pid_t health_pid;
	uint64_t health_ms;
	int health_failed;
	int launcher_stopped;
	uint64_t hang_claimed; /* the generation a hard timeout was claimed for */
	uint64_t done_at_ms;   /* when the current request was complete (wall clock: ranks started
			      * later are of a new run, not asked to exit) */
};

struct decider {
	const struct ftbpf_config *cfg;
	struct ranks *ranks;
	struct eventlog *el;
	struct timersvc *ts;
	struct store *st;
	char node[DEC_NODE_LEN];
	uint64_t preempt_mask;
	struct djob *jobs[MAX_JOBS]; /* owned */
	int njobs;
	uint64_t claims, retargets, fences, preemptions, ignored_signals, health_failures;
};

static uint64_t now_ms(void)
{
	return clock_real_ns() / 1000000;
}

/* A CLOCK_MONOTONIC time (a kernel event's) on the wall clock, in ms; 0: now. */
static uint64_t mono_to_wall_ms(uint64_t mono_ns)
{
	uint64_t now = clock_mono_ns();

	if (!mono_ns || mono_ns > now)
		return now_ms();
	return (clock_real_ns() - (now - mono_ns)) / 1000000;
}

/* Did rank k's process start at or after wall_ms (a launcher's restarted worker)? */
static int started_since(const struct rank *k, uint64_t wall_ms)
{
	uint64_t boot = clock_boot_ns(), age_ms;

	if (!k->start_ns || k->start_ns > boot)
		return 0;
	age_ms = (boot - k->start_ns) / 1000000;
	return now_ms() - age_ms + 10 >= wall_ms; /* start times are in clock ticks (10 ms) */
}

/* ---- jobs ---- */
static void job_prefix(char *buf, size_t len, uid_t uid, const char *id)
{
	size_t o = (size_t)snprintf(buf, len, "jobs/%u/", (unsigned)uid);

	for (; *id && o + 5 < len; id++) {
		if (*id == '/' || *id == '%')
			o += (size_t)snprintf(buf + o, len - o, "%%%02X", (unsigned char)*id);
		else
			buf[o++] = *id;
	}
	snprintf(buf + o, len - o, "/");
}

static struct djob *djob_find(struct decider *d, uid_t uid, const char *id, int create)
{
	struct djob *dj;

	for (int i = 0; i < d->njobs; i++)
		if (d->jobs[i]->uid == uid && !strcmp(d->jobs[i]->id, id))
			return d->jobs[i];
	if (!create || d->njobs == MAX_JOBS || !(dj = calloc(1, sizeof(*dj))))
		return NULL;
	dj->uid = uid;
	snprintf(dj->id, sizeof(dj->id), "%s", id);
	job_prefix(dj->prefix, sizeof(dj->prefix), uid, id);
	dj->last_complete = -1;
	dj->health_pid = -1;
	d->jobs[d->njobs++] = dj;
	return dj;
}

/* Does the job use the client library here (a rank registered)? */
static int participates(const struct job *j)
{
	for (int i = 0; i < j->nmembers; i++)
		if (j->members[i]->dec_written)
			return 1;
	return 0;
}

static struct job *local_job(struct decider *d, const struct djob *dj)
{
	return ranks_job_find(d->ranks, dj->uid, dj->id);
}

/* ---- reading the store ---- */
static int load_one(void *ctx, const char *key, const char *value)
{
	struct djob *dj = ctx;
	const char *k = key + strlen(dj->prefix);
	uint64_t g, n;

	if (dec_key_numbers(k, "gen", &g, NULL) == 0) {
		struct dec_gen x;

		if (dec_gen_parse(value, &x) < 0 || x.generation != g)
			return 0; /* malformed: not ours to follow */
		if (!x.stop && x.cause != DEC_CAUSE_PREEMPTION && x.cause != DEC_CAUSE_OPERATOR &&
		    dj->nfail < MAX_GENS)
			dj->fail_at[dj->nfail++] = x.at_ms;
		if (*x.node && dj->nfault < MAX_GENS)
			snprintf(dj->fault_node[dj->nfault++], DEC_NODE_LEN, "%s", x.node);
		if (g > dj->gen) {
			dj->gen = g;
			dj->g = x;
		}
	} else if (dec_key_numbers(k, "done", &g, &n) == 0) {
		struct dec_done x;

		if (dec_done_parse(value, &x) == 0 && x.step > dj->last_complete)
			dj->last_complete = x.step;
	} else if (!strncmp(k, "members/", 8) && dj->nmem < MAX_NODES) {
		struct node_member *m = &dj->mem[dj->nmem];

		if (dec_node_valid(k + 8) && dec_member_parse(value, &m->m) == 0) {
			snprintf(m->node, sizeof(m->node), "%s", k + 8);
			dj->nmem++;
		}
	}
	return 0;
}

/* Second pass: the current generation's checkpoint request and the reports on it. */
static int load_ckpt(void *ctx, const char *key, const char *value)
{
	struct djob *dj = ctx;
	const char *k = key + strlen(dj->prefix);
	uint64_t g, n;

	if (dec_key_numbers(k, "ckpt", &g, &n) == 0 && g == dj->gen && n > dj->ck_n) {
		struct dec_ckpt x;

		if (dec_ckpt_parse(value, &x) == 0 && x.id == n && x.generation == g) {
			dj->ck_n = n;
			dj->ck = x;
		}
	}
	return 0;
}

static int load_reports(void *ctx, const char *key, const char *value)
{
	struct djob *dj = ctx;
	const char *node = strrchr(key, '/') + 1;
	struct node_report *r;

	if (dj->nrep == MAX_NODES || !dec_node_valid(node))
		return 0;
	r = &dj->rep[dj->nrep];
	if (dec_report_parse(value, &r->r) == 0) {
		snprintf(r->node, sizeof(r->node), "%s", node);
		dj->nrep++;
	}
	return 0;
}

static void load(struct decider *d, struct djob *dj)
{
	char key[DEC_KEY_LEN * 2], rel[DEC_KEY_LEN], *v;

	dj->gen = 0;
	memset(&dj->g, 0, sizeof(dj->g));
	dj->g.resume_step = -1;
	dj->nfail = dj->nfault = dj->nmem = dj->nrep = 0;
	dj->ck_n = 0;
	dj->ck_done = 0;
	dj->last_complete = -1;
	store_list(d->st, dj->prefix, load_one, dj);
	store_list(d->st, dj->prefix, load_ckpt, dj);
	if (!dj->ck_n)
		return;
	dec_key_done(rel, sizeof(rel), dj->gen, dj->ck_n);
	snprintf(key, sizeof(key), "%s%s", dj->prefix, rel);
	v = store_get(d->st, key);
	dj->ck_done = v != NULL;
	if (v) {
		struct dec_done dn;

		dj->done_at_ms = dec_done_parse(v, &dn) == 0 ? dn.at_ms : 0;
	}
	free(v);
	dec_key_report(rel, sizeof(rel), dj->gen, dj->ck_n, "");
	snprintf(key, sizeof(key), "%s%s", dj->prefix, rel);
	store_list(d->st, key, load_reports, dj);
}

static const struct node_member *member(const struct djob *dj, const char *node)
{
	for (int i = 0; i < dj->nmem; i++)
		if (!strcmp(dj->mem[i].node, node))
			return &dj->mem[i];
	return NULL;
}

static int excluded(const struct djob *dj, const char *node)
{
	for (int i = 0; i < dj->g.nexcluded; i++)
		if (!strcmp(dj->g.excluded[i], node))
			return 1;
	return 0;
}

/* ---- claims ---- */
static int can_decide(struct decider *d)
{
	uint64_t last;

	return store_reachable(d->st, &last);
}

static int claim(struct decider *d, struct djob *dj, const char *rel, const char *value)
{
	char key[DEC_KEY_LEN * 2];

	snprintf(key, sizeof(key), "%s%s", dj->prefix, rel);
	d->claims++;
	return store_claim(d->st, key, value);
}

static void put(struct decider *d, struct djob *dj, const char *rel, const char *value, int leased)
{
	char key[DEC_KEY_LEN * 2];

	snprintf(key, sizeof(key), "%s%s", dj->prefix, rel);
	store_put(d->st, key, value, leased);
}

/* ---- what the local ranks do ---- */
struct local {
	int ranks, saved, live;
	int64_t max_step;
};

static void local_view(const struct job *j, int64_t target, struct local *l)
{
	memset(l, 0, sizeof(*l));
	l->max_step = -1;
	for (int i = 0; j && i < j->nmembers; i++) {
		const struct rank *k = j->members[i];
		int64_t step, saved;

		if (k->s.exited)
			continue;
		l->live++;
		if (!k->slot)
			continue;
		step = (int64_t)__atomic_load_n(&k->slot->step, __ATOMIC_RELAXED);
		saved = __atomic_load_n(&k->slot->saved_step, __ATOMIC_ACQUIRE);
		l->ranks++;
		if (step > l->max_step)
			l->max_step = step;
		if (target >= 0 && saved >= target)
			l->saved++;
	}
}

/* How many steps a decision takes to reach every rank: the job's step rate times the store's
 * latency, doubled at every re-target. */
static int margin(struct decider *d, const struct djob *dj)
{
	double latency = store_shared(d->st) ? 1.0 : 0.5;
	double m =
	    dj->steps_per_s * latency * (double)(1 << (dj->retargets > 6 ? 6 : dj->retargets));
	int base = d->cfg->checkpoint_margin;

	return m + 1 > base ? (int)(m + 1) : base;
}

static void step_rate(struct djob *dj, const struct local *l)
{
	uint64_t now = now_ms();

	if (l->max_step < 0)
		return;
	if (dj->step_prev_ms && now > dj->step_prev_ms + 500 &&
	    (uint64_t)l->max_step >= dj->step_prev) {
		double r = (double)((uint64_t)l->max_step - dj->step_prev) * 1000.0 /
			   (double)(now - dj->step_prev_ms);

		dj->steps_per_s = dj->steps_per_s ? 0.7 * dj->steps_per_s + 0.3 * r : r;
	}
	if (!dj->step_prev_ms || now > dj->step_prev_ms + 500) {
		dj->step_prev = (uint64_t)l->max_step;
		dj->step_prev_ms = now;
	}
}

/* ---- decisions ---- */
static void log_decision(struct decider *d, struct djob *dj, const char *kind)
{
	struct json_object *o = view_event("decision");

	jstr(o, "job", dj->id);
	jint(o, "uid", dj->uid);
	jstr(o, "kind", kind);
	jint(o, "generation", (int64_t)dj->gen);
	if (!strcmp(kind, "generation")) {
		jstr(o, "cause", dec_cause_name(dj->g.cause));
		jbool(o, "stop", dj->g.stop);
		jint(o, "resume_step", dj->g.resume_step);
		jstr(o, "node", *dj->g.node ? dj->g.node : NULL);
		jstr(o, "by", dj->g.by);
		jstr(o, "why", dj->g.why);
		{
			struct json_object *ex = json_object_new_array();

			for (int i = 0; i < dj->g.nexcluded; i++)
				json_object_array_add(ex,
						      json_object_new_string(dj->g.excluded[i]));
			json_object_object_add(o, "excluded", ex);
		}
	} else {
		jint(o, "checkpoint", (int64_t)dj->ck_n);
		jint(o, "step", dj->ck.target);
		jstr(o, "cause", dec_cause_name(dj->ck.cause));
		jstr(o, "by", dj->ck.by);
		jstr(o, "why", dj->ck.why);
	}
	jstr(o, "node", d->node);
	eventlog_emit(d->el, o);
}

static void forget_lost(struct djob *dj, int i)
{
	dj->lost_ms[i] = dj->lost_ms[--dj->nlost];
	memcpy(dj->lost[i], dj->lost[dj->nlost], DEC_NODE_LEN);
}

static void new_decisions(struct decider *d, struct djob *dj)
{
	if (dj->gen > dj->seen_gen) {
		dj->seen_gen = dj->gen;
		dj->claimed_gen_ms = 0;
		log_decision(d, dj, "generation");
		/* the losses it left out are dealt with (a node lost again later is a new loss) */
		for (int i = 0; i < dj->nlost;)
			if (excluded(dj, dj->lost[i]))
				forget_lost(dj, i);
			else
				i++;
	}
	if (dj->ck_n && dj->gen * 1000000 + dj->ck_n > dj->seen_ck) {
		dj->seen_ck = dj->gen * 1000000 + dj->ck_n;
		dj->claimed_ck_ms = 0;
		dj->req_ms = dj->req_ms ? dj->req_ms : now_ms();
		log_decision(d, dj, "checkpoint");
	}
	if (dj->ck_done && dj->gen * 1000000 + dj->ck_n > dj->seen_done) {
		dj->seen_done = dj->gen * 1000000 + dj->ck_n;
		if (!dj->done_ms)
			dj->done_ms = now_ms();
		log_decision(d, dj, "checkpoint_complete");
	}
}

/* Claim checkpoint request n+1 of the current generation at target. */
static void claim_ckpt(struct decider *d, struct djob *dj, int64_t target, enum dec_cause cause,
		       const char *why)
{
	struct dec_ckpt c = {.generation = dj->gen,
			     .id = dj->ck_n + 1,
			     .target = target,
			     .cause = cause,
			     .at_ms = now_ms()};
	char rel[DEC_KEY_LEN], val[DEC_VALUE_MAX];

	if (dj->claimed_ck_ms && now_ms() - dj->claimed_ck_ms < CLAIM_RETRY_MS)
		return;
	snprintf(c.by, sizeof(c.by), "%s", d->node);
	snprintf(c.why, sizeof(c.why), "%s", why);
	dec_key_ckpt(rel, sizeof(rel), c.generation, c.id);
	if (dec_ckpt_format(&c, val, sizeof(val)) == 0 && claim(d, dj, rel, val) == 0)
		dj->claimed_ck_ms = now_ms();
}

/* Claim generation g+1: cause, where, who is left out, from which step, or stop. */
static void claim_gen(struct decider *d, struct djob *dj, enum dec_cause cause, const char *node,
		      uint64_t fault_ms, const char *why)
{
	const struct ftbpf_config *cfg = d->cfg;
	struct dec_gen g = {.generation = dj->gen + 1,
			    .cause = cause,
			    .resume_step = dj->last_complete,
			    .at_ms = fault_ms};
	char rel[DEC_KEY_LEN], val[DEC_VALUE_MAX];

	if (dj->claimed_gen_ms && now_ms() - dj->claimed_gen_ms < CLAIM_RETRY_MS)
		return;
	snprintf(g.node, sizeof(g.node), "%s", node ? node : "");
	snprintf(g.by, sizeof(g.by), "%s", d->node);
	snprintf(g.why, sizeof(g.why), "%s", why);
	g.stop = cause != DEC_CAUSE_PREEMPTION &&
		 dec_budget_spent(dj->fail_at, dj->nfail, g.at_ms, cfg->max_restarts,
				  cfg->restart_window_s);
	/* left out: a lost node, nodes that failed their health check, and nodes where
	 * node_fault_limit faults happened (this one counted) */
	if (cause == DEC_CAUSE_NODE_DEAD && node && *node)
		snprintf(g.excluded[g.nexcluded++], DEC_NODE_LEN, "%s", node);
	for (int i = 0; i < dj->nlost && g.nexcluded < DEC_MAX_EXCLUDED; i++)
		if (strcmp(dj->lost[i], g.excluded[0]) && strcmp(dj->lost[i], d->node) &&
		    now_ms() - dj->lost_ms[i] >= (uint64_t)(cfg->recovery_wait_s * 1000))
			snprintf(g.excluded[g.nexcluded++], DEC_NODE_LEN, "%s", dj->lost[i]);
	for (int i = 0; i < dj->nmem && g.nexcluded < DEC_MAX_EXCLUDED; i++)
		if (dj->mem[i].m.excluded && strcmp(dj->mem[i].node, g.excluded[0]))
			snprintf(g.excluded[g.nexcluded++], DEC_NODE_LEN, "%s", dj->mem[i].node);
	/* (a node that decides alone has nowhere else to run: it never leaves itself out) */
	if (node && *node && cause != DEC_CAUSE_NODE_DEAD && g.nexcluded < DEC_MAX_EXCLUDED &&
	    store_shared(d->st)) {
		int faults = 1;

		for (int i = 0; i < dj->nfault; i++)
			faults += !strcmp(dj->fault_node[i], node);
		if (faults >= cfg->node_fault_limit)
			snprintf(g.excluded[g.nexcluded++], DEC_NODE_LEN, "%s", node);
	}
	dec_key_gen(rel, sizeof(rel), g.generation);
	if (dec_gen_format(&g, val, sizeof(val)) == 0 && claim(d, dj, rel, val) == 0)
		dj->claimed_gen_ms = now_ms();
}

/* ---- failures ---- */
/* Did rank k end abnormally, on its own (not by our action, not asked to exit, not a
 * preemption that killed it)? */
static int abnormal_exit(struct decider *d, const struct rank *k)
{
	int sig = k->s.exit_code & 0x7f, code = (k->s.exit_code >> 8) & 0xff;

	if (!k->s.exited || k->killed_by_agent)
		return 0;
	if (sig)
		return !(k->preempted && (d->preempt_mask & (1ull << sig)));
	return code != 0 && code != d->cfg->restart_exit_code && code != d->cfg->stop_exit_code;
}

static void failures(struct decider *d, struct djob *dj, struct job *j)
{
	char why[DEC_WHY_LEN];

	for (int i = 0; j && i < j->nmembers; i++) {
		struct rank *k = j->members[i];

		if (k->fail_seen || k->generation != dj->gen || !k->dec_written ||
		    !abnormal_exit(d, k))
			continue;
		k->fail_seen = 1;
		snprintf(why, sizeof(why), "rank %d (pid %d) on %s ended: %s %d", k->id.rank,
			 k->pid, d->node, (k->s.exit_code & 0x7f) ? "signal" : "exit code",
			 (k->s.exit_code & 0x7f) ? k->s.exit_code & 0x7f
						 : (k->s.exit_code >> 8) & 0xff);
		claim_gen(d, dj, DEC_CAUSE_RANK_DIED, d->node, mono_to_wall_ms(k->s.exit_ns), why);
		return;
	}
	if (j && j->res.hard && !j->res.failed && j->res.live > 0 && dj->applied_gen == dj->gen &&
	    dj->hang_claimed != dj->gen + 1) {
		dj->hang_claimed = dj->gen + 1;
		snprintf(why, sizeof(why), "hard timeout on %.31s: %.60s", d->node, j->res.why);
		claim_gen(d, dj, DEC_CAUSE_HANG, d->node, now_ms(), why);
		return;
	}
	/* members lost: declared dead by the mesh, or their lease expired */
	for (int i = 0; i < dj->nlost; i++) {
		if (!strcmp(dj->lost[i], d->node) ||
		    now_ms() - dj->lost_ms[i] <
			LOST_CONFIRM_MS + (uint64_t)(d->cfg->recovery_wait_s * 1000))
			continue;
		snprintf(why, sizeof(why), "node %s was lost", dj->lost[i]);
		claim_gen(d, dj, DEC_CAUSE_NODE_DEAD, dj->lost[i], dj->lost_ms[i], why);
		return;
	}
}

static void lost_node(struct djob *dj, const char *node)
{
	for (int i = 0; i < dj->nlost; i++)
		if (!strcmp(dj->lost[i], node))
			return;
	if (dj->nlost < MAX_NODES) {
		snprintf(dj->lost[dj->nlost], DEC_NODE_LEN, "%s", node);
		dj->lost_ms[dj->nlost++] = now_ms();
	}
}

/* Members that had ranks and vanished (their agent's lease expired) are lost. */
static void vanished(struct decider *d, struct djob *dj)
{
	int n = 0;

	for (int i = 0; i < dj->nprev; i++)
		if (!member(dj, dj->prev_mem[i]) && strcmp(dj->prev_mem[i], d->node))
			lost_node(dj, dj->prev_mem[i]);
	for (int i = 0; i < dj->nmem && n < MAX_NODES; i++)
		if (dj->mem[i].m.ranks > 0)
			snprintf(dj->prev_mem[n++], DEC_NODE_LEN, "%s", dj->mem[i].node);
	dj->nprev = n;
	/* a lost node that is back (its member key again: its agent reaches the store) is not
	 * lost any more (with a shared store: the mesh alone does not make a node lost) */
	for (int i = 0; i < dj->nlost;) {
		if (store_shared(d->st) && member(dj, dj->lost[i])) {
			forget_lost(dj, i);
			continue;
		}
		i++;
	}
}

/* ---- checkpoints ---- */
static void checkpoint_progress(struct decider *d, struct djob *dj, const struct local *l)
{
	char rel[DEC_KEY_LEN], val[DEC_VALUE_MAX];
	struct dec_report rep = {l->ranks, l->saved, l->max_step};
	int all = 1, nodes = 0;

	if (!dj->ck_n || dj->ck_done) {
		/* a preemption with a grace period: a last save before it ends */
		if (dj->ck_done && dj->ck.cause == DEC_CAUSE_PREEMPTION && !dj->final_claimed &&
		    d->cfg->preempt_grace_s > 0 && dj->req_ms && dj->done_ms) {
			uint64_t took = dj->done_ms - dj->req_ms;
			uint64_t at = dj->req_ms + (uint64_t)(d->cfg->preempt_grace_s * 1000);

			at = at > 2 * took ? at - 2 * took : dj->done_ms;
			if (now_ms() >= at) {
				dj->final_claimed = 1;
				dj->retargets = 0;
				claim_ckpt(d, dj, dec_target(l->max_step, margin(d, dj)),
					   DEC_CAUSE_PREEMPTION,
					   "final save before the grace ends");
			}
		}
		return;
	}
	if (l->ranks) {
		dec_key_report(rel, sizeof(rel), dj->gen, dj->ck_n, d->node);
		if (dec_report_format(&rep, val, sizeof(val)) == 0)
			put(d, dj, rel, val, 0);
	}
	if (dec_retarget(&dj->ck, &rep)) {
		dj->retargets++;
		d->retargets++;
		claim_ckpt(d, dj, dec_target(l->max_step, margin(d, dj)), dj->ck.cause,
			   "re-targeted: a rank was past the step");
		return;
	}
	/* complete when every member node with ranks reported all of them saved */
	for (int i = 0; i < dj->nmem; i++) {
		const struct node_member *m = &dj->mem[i];
		int ok = 0;

		if (m->m.ranks == 0 || m->m.excluded || excluded(dj, m->node))
			continue;
		nodes++;
		for (int r = 0; r < dj->nrep; r++)
			if (!strcmp(dj->rep[r].node, m->node))
				ok = dj->rep[r].r.ranks > 0 &&
				     dj->rep[r].r.saved == dj->rep[r].r.ranks;
		if (!strcmp(m->node, d->node))
			ok = l->ranks > 0 && l->saved == l->ranks;
		all &= ok;
	}
	if (nodes && all) {
		struct dec_done done = {dj->ck.target, now_ms()};

		dec_key_done(rel, sizeof(rel), dj->gen, dj->ck_n);
		if (dec_done_format(&done, val, sizeof(val)) == 0)
			claim(d, dj, rel, val);
	}
}

/* ---- a new generation here: end the old ranks, leave if left out ---- */
static void signal_rank(struct decider *d, struct rank *k, int sig, const char *why)
{
	int r;

	k->killed_by_agent = 1;
	r = pidfd_signal(k->pidfd, sig);
	eventlog_emit(d->el, view_action(k, why, sig, r < 0 ? strerror(-r) : "sent"));
	if (r == 0 && sig == SIGTERM)
		timersvc_kill_after_grace(d->ts, k->pid, k->pidfd, k->uid, 1);
}

/*
 * May the parent of a rank be stopped as its launcher? Not when it is a shell, a terminal
 * multiplexer, a login or privilege tool, a wrapper like timeout(1), or a service manager: a
 * rank started by hand or from a script has no launcher to stop (its user's shell is not one).
 */
static int is_launcher(const struct proc_stat *parent)
{
	static const char *const not_launchers[] = {
	    "sh",
	    "bash",
	    "dash",
	    "zsh",
	    "fish",
	    "ksh",
	    "tcsh",
	    "csh",
	    "sudo",
	    "su",
	    "sshd",
	    "login",
	    "tmux",
	    "tmux: server",
	    "screen",
	    "timeout",
	    "systemd",
	    "init",
	    "containerd-shim",
	    "nohup",
	    "setsid",
	};

	for (size_t i = 0; i < sizeof(not_launchers) / sizeof(not_launchers[0]); i++)
		if (!strcmp(parent->comm, not_launchers[i]))
			return 0;
	return 1;
}

/* Stop the process that launched this node's ranks (torchrun, mpirun): an elastic rendezvous
 * re-forms without this node. */
static void stop_launcher(struct decider *d, struct djob *dj, struct job *j, const char *why)
{
	for (int i = 0; j && i < j->nmembers && !dj->launcher_stopped; i++) {
		struct rank *k = j->members[i];
		struct proc_stat st, pst;
		uid_t uid;
		int fd;

		if (k->s.exited || procfs_stat(k->pid, -1, &st) < 0 || st.ppid <= 1 ||
		    st.ppid == getpid() || procfs_uid(st.ppid, &uid) < 0 || uid != k->uid ||
		    procfs_stat(st.ppid, -1, &pst) < 0 || !is_launcher(&pst))
			continue;
		fd = pidfd_open_pid(st.ppid);
		if (fd < 0)
			continue;
		if (pidfd_signal(fd, SIGTERM) == 0) {
			struct json_object *o = view_action_pid(st.ppid, uid, why, SIGTERM, "sent");

			jstr(o, "job", dj->id);
			eventlog_emit(d->el, o);
			dj->launcher_stopped = 1;
			timersvc_kill_after_grace(d->ts, st.ppid, fd, uid, 0);
		}
		close(fd);
	}
}

static void health_check_start(struct decider *d, struct djob *dj)
{
	pid_t pid;

	if (!*d->cfg->health_check || dj->health_pid > 0)
		return;
	pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", d->cfg->health_check, (char *)NULL);
		_exit(127);
	}
	if (pid > 0) {
		dj->health_pid = pid;
		dj->health_ms = now_ms();
	}
}

static void health_check_poll(struct decider *d, struct djob *dj, struct job *j)
{
	int status = 0, failed = -1;
	pid_t r;

	if (dj->health_pid <= 0)
		return;
	r = waitpid(dj->health_pid, &status, WNOHANG);
	if (r == dj->health_pid) {
		failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	} else if (now_ms() - dj->health_ms > (uint64_t)(d->cfg->health_check_timeout_s * 1000)) {
		kill(dj->health_pid, SIGKILL);
		waitpid(dj->health_pid, &status, 0);
		failed = 1;
	}
	if (failed < 0)
		return;
	dj->health_pid = -1;
	{
		struct json_object *o = view_event(failed ? "health_check_failed" : "health_check");

		jstr(o, "job", dj->id);
		jint(o, "uid", dj->uid);
		jstr(o, "node", d->node);
		jint(o, "generation", (int64_t)dj->gen);
		eventlog_emit(d->el, o);
	}
	if (failed) {
		dj->health_failed = 1;
		d->health_failures++;
		stop_launcher(d, dj, j, "health_check_failed");
	}
}

static void apply_generation(struct decider *d, struct djob *dj, struct job *j)
{
	int left_out = excluded(dj, d->node), older = 0;

	if (dj->applied_gen >= dj->gen)
		return;
	dj->applied_gen = dj->gen;
	dj->final_claimed = 0;
	dj->req_ms = dj->done_ms = 0;
	dj->retargets = 0;
	dj->launcher_stopped = 0;
	for (int i = 0; j && i < j->nmembers; i++) {
		struct rank *k = j->members[i];

		if (k->s.exited || k->generation >= dj->gen || k->pidfd < 0)
			continue;
		if (!dj->g.stop && started_since(k, dj->g.at_ms)) {
			k->generation =
			    dj->gen; /* restarted after the fault: of the new generation */
			continue;
		}
		signal_rank(d, k, SIGTERM, dj->g.stop ? "stop" : "restart");
		older = 1;
	}
	/* left out, or the end: stop the launcher of the ranks that were in the job, if ended
	 * here now (a node that comes back later, with ranks of the new generation, rejoins; an
	 * agent restarted after the decision has nothing to stop) */
	if (older && (left_out || dj->g.stop))
		stop_launcher(d, dj, j, left_out ? "left_out" : "stop");
	else if (!dj->g.stop)
		health_check_start(d, dj);
}

/* ---- the slots ---- */
/* What rank k is told to do: go on (FTBPF_ACT_NONE), exit for a restart, or stop. */
static uint32_t told_to_exit(const struct decider *d, const struct djob *dj, const struct rank *k)
{
	if (dj->g.stop)
		return FTBPF_ACT_STOP;
	if (dj->fenced || k->generation < dj->gen)
		return FTBPF_ACT_RESTART;
	/* a completed preemption checkpoint (after its grace): the ranks that were asked */
	if (dj->ck_done && dj->ck.cause == DEC_CAUSE_PREEMPTION &&
	    (d->cfg->preempt_grace_s <= 0 || dj->final_claimed) &&
	    !started_since(k, dj->done_at_ms))
		return FTBPF_ACT_RESTART;
	return FTBPF_ACT_NONE;
}

static void write_slot(struct decider *d, struct djob *dj, struct rank *k)
{
	struct ftbpf_slot_decision x = {0}, *s;
	uint64_t seq, v = 1469598103934665603ull;

	x.generation = dj->gen;
	x.ckpt_step = dj->ck_n ? dj->ck.target : -1;
	x.ckpt_id = dj->ck_n;
	x.ckpt_state = !dj->ck_n     ? FTBPF_CK_NONE
		       : dj->ck_done ? FTBPF_CK_COMPLETE
				     : FTBPF_CK_REQUESTED;
	x.resume_step = dj->last_complete;
	x.cause = dj->g.cause;
	x.nexcluded = (uint32_t)dj->g.nexcluded;
	for (int i = 0; i < dj->g.nexcluded; i++)
		memcpy(x.excluded[i], dj->g.excluded[i], DEC_NODE_LEN);
	x.action = told_to_exit(d, dj, k);
	x.exit_code = (uint32_t)(x.action == FTBPF_ACT_STOP ? d->cfg->stop_exit_code
							    : d->cfg->restart_exit_code);
	/* write only what changed (FNV-1a over the decision) */
	for (size_t i = 0; i < sizeof(x); i++)
		v = (v ^ ((const unsigned char *)&x)[i]) * 1099511628211ull;
	v |= 1;
	if (k->dec_written == v)
		return;
	k->dec_written = v;
	s = &k->slot->dec;
	seq = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
	__atomic_store_n(&s->seq, seq | 1, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	x.seq = seq | 1;
	memcpy((void *)s, &x, sizeof(x));
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&s->seq, (seq | 1) + 1, __ATOMIC_RELEASE);
}

static void write_slots(struct decider *d, struct djob *dj, struct job *j)
{
	for (int i = 0; j && i < j->nmembers; i++)
		if (j->members[i]->slot && !j->members[i]->s.exited)
			write_slot(d, dj, j->members[i]);
}

/* ---- fencing ---- */
static int other_members(const struct decider *d, const struct djob *dj)
{
	for (int i = 0; i < dj->nmem; i++)
		if (dj->mem[i].m.ranks > 0 && strcmp(dj->mem[i].node, d->node))
			return 1;
	return 0;
}

static int fence(struct decider *d, struct djob *dj, struct job *j)
{
	uint64_t last = 0;
	int ok;

	if (!store_shared(d->st))
		return 0;
	ok = store_reachable(d->st, &last);
	if (ok) {
		dj->fenced = 0;
		return 0;
	}
	if (dj->fenced)
		return 1;
	if (!other_members(d, dj) || !last ||
	    now_ms() - last < (uint64_t)(d->cfg->fence_after_s * 1000))
		return 0;
	dj->fenced = 1;
	d->fences++;
	{
		struct json_object *o = view_event("fenced");

		jstr(o, "job", dj->id);
		jint(o, "uid", dj->uid);
		jstr(o, "node", d->node);
		jdbl(o, "unreachable_s", (double)(now_ms() - last) / 1000.0);
		eventlog_emit(d->el, o);
	}
	for (int i = 0; j && i < j->nmembers; i++) {
		struct rank *k = j->members[i];

		if (!k->s.exited && k->pidfd >= 0)
			signal_rank(d, k, SIGTERM, "fenced");
	}
	return 1;
}

/* ---- one job ---- */
static void tick_job(struct decider *d, struct djob *dj)
{
	struct job *j = local_job(d, dj);
	struct dec_member me = {0};
	char rel[DEC_KEY_LEN], val[DEC_VALUE_MAX];
	struct local l;

	load(d, dj);
	new_decisions(d, dj);
	local_view(j, dj->ck_n && !dj->ck_done ? dj->ck.target : -1, &l);
	step_rate(dj, &l);
	if (fence(d, dj, j)) {
		write_slots(d, dj, j);
		return;
	}
	me.ranks = l.ranks;
	me.generation = dj->gen;
	me.excluded = dj->health_failed;
	if (l.ranks || member(dj, d->node)) {
		dec_key_member(rel, sizeof(rel), d->node);
		if (dec_member_format(&me, val, sizeof(val)) == 0)
			put(d, dj, rel, val, 1);
	}
	vanished(d, dj);
	health_check_poll(d, dj, j);
	apply_generation(d, dj, j);
	if (can_decide(d) && !dj->g.stop) {
		failures(d, dj, j);
		checkpoint_progress(d, dj, &l);
	}
	write_slots(d, dj, j);
}

void decide_tick(struct decider *d)
{
	for (int i = 0; i < d->ranks->njobs; i++) {
		struct job *j = d->ranks->jobs[i];

		if (participates(j))
			djob_find(d, j->uid, j->id, 1);
	}
	for (int i = 0; i < d->njobs; i++)
		if (local_job(d, d->jobs[i]))
			tick_job(d, d->jobs[i]);
}

/* ---- triggers ---- */
void decide_on_signal(struct decider *d, struct rank *k, int sig, uint32_t sender_pid)
{
	struct djob *dj;
	struct local l;
	struct job *j = k->job;

	/* from outside: not the agent, not the process itself (raise(), or the kernel's timer
	 * enforcement, which signals from the process's own context) */
	if (sig <= 0 || sig > 63 || !(d->preempt_mask & (1ull << sig)) || sender_pid == 0 ||
	    sender_pid == (uint32_t)getpid() || sender_pid == (uint32_t)k->pid || !participates(j))
		return;
	k->preempted = 1;
	dj = djob_find(d, j->uid, j->id, 1);
	if (!dj)
		return;
	load(d, dj);
	/* not a preemption: a launcher ending its workers after a failure, or after ranks were
	 * told to exit (a decided restart or stop, a completed preemption: a launcher takes their
	 * exit 42 for a failure too) */
	for (int i = 0; i < j->nmembers; i++) {
		const struct rank *m = j->members[i];

		if (m->s.exited ? m->generation == dj->gen && abnormal_exit(d, m)
				: told_to_exit(d, dj, m) != FTBPF_ACT_NONE) {
			d->ignored_signals++;
			return;
		}
	}
	if (dj->ck_n && !dj->ck_done)
		return; /* one is in progress: this signal joins it */
	d->preemptions++;
	dj->req_ms = now_ms();
	dj->done_ms = 0;
	dj->final_claimed = 0;
	dj->retargets = 0;
	local_view(j, -1, &l);
	claim_ckpt(d, dj, dec_target(l.max_step, margin(d, dj)), DEC_CAUSE_PREEMPTION,
		   "preemption signal");
}

int decide_checkpoint(struct decider *d, struct job *j, const char *why, int64_t *ret_step)
{
	struct djob *dj;
	struct local l;

	if (!j || !participates(j))
		return -ENOENT;
	dj = djob_find(d, j->uid, j->id, 1);
	if (!dj)
		return -ENOMEM;
	load(d, dj);
	if (dj->ck_n && !dj->ck_done)
		return -EBUSY;
	if (!can_decide(d))
		return -EAGAIN;
	local_view(j, -1, &l);
	dj->retargets = 0;
	dj->claimed_ck_ms = 0;
	*ret_step = dec_target(l.max_step, margin(d, dj));
	claim_ckpt(d, dj, *ret_step, DEC_CAUSE_OPERATOR, why);
	return 0;
}

void decide_peer_dead(struct decider *d, const char *node)
{
	for (int i = 0; i < d->njobs; i++) {
		struct djob *dj = d->jobs[i];
		const struct node_member *m;

		load(d, dj);
		m = member(dj, node);
		/* with a shared store, the node's lease has the last word: a node whose member
		 * key stands keeps its lease, so its agent is alive and reaches the store (the
		 * mesh may have taken another's word, or lost only UDP); it is lost when the
		 * key goes (vanished) */
		if (m && m->m.ranks > 0 && !store_shared(d->st))
			lost_node(dj, node);
	}
}

void decide_peer_alive(struct decider *d, const char *node)
{
	for (int i = 0; i < d->njobs; i++) {
		struct djob *dj = d->jobs[i];

		for (int l = 0; l < dj->nlost; l++)
			if (!strcmp(dj->lost[l], node)) {
				forget_lost(dj, l);
				break;
			}
	}
}

void decide_rank_registered(struct decider *d, struct rank *k)
{
	struct djob *dj = djob_find(d, k->job->uid, k->job->id, 1);

	if (!dj || !k->slot)
		return;
	load(d, dj);
	k->generation = dj->gen;
	k->dec_written = 0;
	write_slot(d, dj, k);
}

/* ---- views ---- */
void decide_job_json(struct decider *d, const struct job *j, struct json_object *o)
{
	struct djob *dj = djob_find(d, j->uid, j->id, 0);
	struct json_object *c;
	struct local l;

	if (!dj) {
		jint(o, "generation", 0);
		jnull(o, "checkpoint");
		return;
	}
	jint(o, "generation", (int64_t)dj->gen);
	if (!dj->ck_n) {
		jnull(o, "checkpoint");
		return;
	}
	local_view(j, dj->ck.target, &l);
	c = json_object_new_object();
	jint(c, "id", (int64_t)dj->ck_n);
	jint(c, "target", dj->ck.target);
	jstr(c, "state", dj->ck_done ? "complete" : "requested");
	jstr(c, "cause", dec_cause_name(dj->ck.cause));
	jint(c, "ranks", l.ranks);
	jint(c, "ranks_saved", l.saved);
	jint(c, "nodes", dj->nmem);
	jint(c, "resume_step", dj->last_complete);
	json_object_object_add(o, "checkpoint", c);
	jbool(o, "fenced", dj->fenced);
}

struct hist_ctx {
	struct json_object *arr;
	uid_t uid;
};

static int hist_one(void *ctx, const char *key, const char *value)
{
	struct hist_ctx *h = ctx;
	const char *p = key + 5, *rest; /* "jobs/" */
	char job[FTBPF_JOB_LEN * 3] = "";
	unsigned uid;
	uint64_t g, n;
	struct json_object *o;
	const char *kinds[] = {"gen/", "ckpt/", "done/"};
	size_t jl;

	if (sscanf(p, "%u/", &uid) != 1 || (h->uid && uid != (unsigned)h->uid))
		return 0;
	p = strchr(p, '/') + 1;
	for (int i = 0; i < 3; i++) {
		for (rest = p; (rest = strstr(rest, kinds[i])); rest++)
			if (rest[-1] == '/')
				break;
		if (!rest)
			continue;
		jl = (size_t)(rest - 1 - p);
		if (jl >= sizeof(job))
			return 0;
		for (size_t a = 0, b = 0; a < jl; a++) { /* unescape %XX */
			unsigned x;

			if (p[a] == '%' && a + 2 < jl && sscanf(p + a + 1, "%2X", &x) == 1) {
				job[b++] = (char)x;
				a += 2;
			} else {
				job[b++] = p[a];
			}
			job[b] = 0;
		}
		o = NULL;
		if (i == 0 && dec_key_numbers(rest, "gen", &g, NULL) == 0) {
			struct dec_gen x;

			if (dec_gen_parse(value, &x) < 0)
				return 0;
			o = json_object_new_object();
			jstr(o, "kind", "generation");
			jint(o, "generation", (int64_t)g);
			jstr(o, "cause", dec_cause_name(x.cause));
			jbool(o, "stop", x.stop);
			jint(o, "resume_step", x.resume_step);
			jstr(o, "node", *x.node ? x.node : NULL);
			jstr(o, "by", x.by);
			jint(o, "at_ms", (int64_t)x.at_ms);
			jstr(o, "why", x.why);
			{
				struct json_object *ex = json_object_new_array();

				for (int e = 0; e < x.nexcluded; e++)
					json_object_array_add(
					    ex, json_object_new_string(x.excluded[e]));
				json_object_object_add(o, "excluded", ex);
			}
		} else if (i == 1 && dec_key_numbers(rest, "ckpt", &g, &n) == 0) {
			struct dec_ckpt x;

			if (dec_ckpt_parse(value, &x) < 0)
				return 0;
			o = json_object_new_object();
			jstr(o, "kind", "checkpoint");
			jint(o, "generation", (int64_t)g);
			jint(o, "checkpoint", (int64_t)n);
			jint(o, "step", x.target);
			jstr(o, "cause", dec_cause_name(x.cause));
			jstr(o, "by", x.by);
			jint(o, "at_ms", (int64_t)x.at_ms);
			jstr(o, "why", x.why);
		} else if (i == 2 && dec_key_numbers(rest, "done", &g, &n) == 0) {
			struct dec_done x;

			if (dec_done_parse(value, &x) < 0)
				return 0;
			o = json_object_new_object();
			jstr(o, "kind", "checkpoint_complete");
			jint(o, "generation", (int64_t)g);
			jint(o, "checkpoint", (int64_t)n);
			jint(o, "step", x.step);
			jint(o, "at_ms", (int64_t)x.at_ms);
		}
		if (o) {
			jstr(o, "job", job);
			jint(o, "uid", uid);
			json_object_array_add(h->arr, o);
		}
		return 0;
	}
	return 0;
}

static int by_time(const void *a, const void *b)
{
	struct json_object *x = *(struct json_object *const *)a,
			   *y = *(struct json_object *const *)b, *tx, *ty;
	int64_t ax = json_object_object_get_ex(x, "at_ms", &tx) ? json_object_get_int64(tx) : 0;
	int64_t ay = json_object_object_get_ex(y, "at_ms", &ty) ? json_object_get_int64(ty) : 0;

	return ax < ay ? -1 : ax > ay;
}

struct json_object *decide_history_json(struct decider *d, uid_t uid)
{
	struct hist_ctx h = {json_object_new_array(), uid};

	store_list(d->st, "jobs/", hist_one, &h);
	json_object_array_sort(h.arr, by_time);
	return h.arr;
}

struct json_object *decide_json(struct decider *d)
{
	struct json_object *o = json_object_new_object(), *c = json_object_new_object();

	jstr(o, "node", d->node);
	json_object_object_add(o, "store", store_json(d->st));
	jint(c, "claims", (int64_t)d->claims);
	jint(c, "preemptions", (int64_t)d->preemptions);
	jint(c, "retargets", (int64_t)d->retargets);
	jint(c, "fences", (int64_t)d->fences);
	jint(c, "signals_not_preemption", (int64_t)d->ignored_signals);
	jint(c, "health_check_failures", (int64_t)d->health_failures);
	json_object_object_add(o, "counters", c);
	return o;
}

/* ---- lifecycle ---- */
struct decider *decider_new(const struct decide_opts *o)
{
	struct decider *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->cfg = o->cfg;
	d->ranks = o->ranks;
	d->el = o->el;
	d->ts = o->ts;
	d->st = o->st;
	snprintf(d->node, sizeof(d->node), "%s", o->node);
	if (config_parse_signal_set(o->cfg->preempt_signals, &d->preempt_mask) < 0)
		d->preempt_mask = 0;
	return d;
}

void decider_free(struct decider *d)
{
	if (!d)
		return;
	for (int i = 0; i < d->njobs; i++) {
		if (d->jobs[i]->health_pid > 0) {
			kill(d->jobs[i]->health_pid, SIGKILL);
			waitpid(d->jobs[i]->health_pid, NULL, 0);
		}
		free(d->jobs[i]);
	}
	free(d);
}
