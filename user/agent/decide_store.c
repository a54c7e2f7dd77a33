/* Decisions, the inputs: the job table, what the store holds for a job, the local ranks as the
 * policy sees them. See decide_int.h. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/decide_int.h"
#include "agent/store.h"
#include "lib/config.h"
#include "lib/decide_load.h"
#include "lib/decide_records.h"
#include "lib/launch_id.h"
#include "lib/ranks.h"
#include "lib/starttime.h"
#include "os/clock.h"
#include "os/log.h"
#include "os/procfs.h"

void dc_now(struct dp_now *now)
{
	now->mono_ms = clock_mono_ns() / 1000000;
	now->wall_ms = clock_real_ns() / 1000000;
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

int dc_user_jobs(const struct decider *d, uid_t uid)
{
	int n = 0;

	for (int i = 0; i < d->njobs; i++)
		n += d->jobs[i]->uid == uid;
	return n;
}

struct djob *dc_find(struct decider *d, uid_t uid, const char *id, int create)
{
	struct djob *dj;

	for (int i = 0; i < d->njobs; i++)
		if (d->jobs[i]->uid == uid && !strcmp(d->jobs[i]->id, id))
			return d->jobs[i];
	if (!create)
		return NULL;
	if (uid != 0) {
		int mine = dc_user_jobs(d, uid), users = d->njobs - dc_user_jobs(d, 0);

		/* a quarter of the table stays root's */
		if (mine >= MAX_JOBS_PER_USER || users >= MAX_JOBS * 3 / 4) {
			if (d->jobs_refused++ % 64 == 0)
				log_warn("decisions: uid %u follows %d jobs already; job %s is not "
					 "followed (%llu refused)",
					 (unsigned)uid, mine, id,
					 (unsigned long long)d->jobs_refused);
			return NULL;
		}
	}
	if (d->njobs == MAX_JOBS || !(dj = calloc(1, sizeof(*dj))))
		return NULL;
	dj->uid = uid;
	snprintf(dj->id, sizeof(dj->id), "%s", id);
	{
		char key[FTBPF_JOB_LEN + DEC_NODE_LEN + 2];

		dp_job_key(id, d->pc.node, key, sizeof(key));
		job_prefix(dj->jprefix, sizeof(dj->jprefix), uid, key);
	}
	dj->rec.last_complete = -1;
	dj->health_pid = -1;
	d->jobs[d->njobs++] = dj;
	return dj;
}

void dc_free_job(struct djob *dj)
{
	if (!dj)
		return;
	dr_clear(&dj->rec);
	dp_memory_clear(&dj->mem);
	free(dj);
}

/* ---- reading the store ---- */
/* A record that is not what it says (malformed, too big, of another shape): not followed,
 * counted, and logged once (dc_log_refused). */
static void refuse(void *ctx, const char *key, const char *value, const char *why)
{
	struct djob *dj = ctx;
	uint64_t h = 1469598103934665603ull;

	for (const char *p = key; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	for (const char *p = value; *p && p - value < 4096; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	for (int i = 0; i < dj->nrefused_hash; i++)
		if (dj->refused_hash[i] == h)
			return;
	dj->refused_hash[dj->nrefused_hash++ % 64] = h;
	if (dj->nrefused_hash > 64)
		dj->nrefused_hash = 64;
	if (dj->nrefused == MAX_REFUSED)
		return;
	snprintf(dj->refused[dj->nrefused], DEC_KEY_LEN, "%s", key);
	snprintf(dj->refused_why[dj->nrefused++], 64, "%s", why);
}

struct store_reader {
	struct store *st;
	struct djob *dj;
};

static int reader_list(void *ctx, const char *prefix,
		       int (*fn)(void *fctx, const char *key, const char *value), void *fctx)
{
	return store_list(((struct store_reader *)ctx)->st, prefix, fn, fctx);
}

static char *reader_get(void *ctx, const char *key)
{
	return store_get(((struct store_reader *)ctx)->st, key);
}

static void reader_refuse(void *ctx, const char *key, const char *value, const char *why)
{
	refuse(((struct store_reader *)ctx)->dj, key, value, why);
}

void dc_load(struct decider *d, struct djob *dj)
{
	struct dp_records *r = &dj->rec;
	struct store_reader sr = {d->st, dj};
	struct dl_reader rd = {reader_list, reader_get, reader_refuse, &sr};
	uint64_t last = 0;

	dl_begin(r, dj->run, *d->cfg->node_keys_file && store_shared(d->st));
	r->reachable = store_reachable(d->st, &last);
	r->lease = store_lease_renewed(d->st, &r->lease_renewed_ms);
	/* a store that never answered (an agent started while cut off) is silent since it was
	 * opened */
	r->unreachable_ms = dec_unreachable_ms(r->reachable, last, store_opened_ms(d->st),
					       clock_mono_ns() / 1000000);
	dl_load(&rd, dj->jprefix, dj->prefix, r);
}

/* ---- runs ---- */
#define KEEP_RUNS 3 /* a new run deletes the records of the run this many before it */

struct runs_ctx {
	const char *jprefix;
	uint64_t cur;
	const char *launch; /* a launch's key (NULL none): the latest run not claimed for it ... */
	uint64_t cur_other; /* ... is this (launch_id_run_choose) */
};

static int max_run(void *ctx, const char *key, const char *value)
{
	struct runs_ctx *rc = ctx;
	uint64_t n;
	struct dec_run x;

	if (dec_key_numbers(key + strlen(rc->jprefix), "run", &n, NULL) < 0 ||
	    dec_run_parse(value, &x) < 0 || x.run != n)
		return 0;
	if (n > rc->cur)
		rc->cur = n;
	if (n > rc->cur_other && !(rc->launch && !strcmp(x.launch, rc->launch)))
		rc->cur_other = n;
	return 0;
}

static void set_run(struct djob *dj, uint64_t run)
{
	/* a new run: nothing of the last one is remembered (from none: what was seen while the run
	 * could not be read yet, a preemption say, is this run's) */
	if (dj->run != run) {
		if (dj->run)
			dp_memory_clear(&dj->mem);
		dr_clear(&dj->rec);
		dj->rec.last_complete = -1;
		dj->run_ms = clock_mono_ns() / 1000000;
	}
	dj->run = run;
	snprintf(dj->prefix, sizeof(dj->prefix), "%sruns/%llu/", dj->jprefix,
		 (unsigned long long)run);
}

/* "pid:start_ns" of the process that launched k (its parent), "" unknown. */
static void parent_id(const struct rank *k, char *buf, size_t len)
{
	struct proc_stat st, pst;

	buf[0] = 0;
	if (procfs_stat(k->pid, -1, &st) == 0 && st.ppid > 1 && procfs_stat(st.ppid, -1, &pst) == 0)
		snprintf(buf, len, "%d:%llu", st.ppid, (unsigned long long)pst.start_ns);
}

/* The rank's environment block (the caller frees; NULL unreadable), its length in *ret_n. */
static char *environ_of(const struct rank *k, ssize_t *ret_n)
{
	size_t cap = 1 << 17;
	char *env = malloc(cap + 1);
	ssize_t n = env ? procfs_environ(k->pid, env, cap) : -1;

	if (n <= 0) {
		free(env);
		*ret_n = -1;
		return NULL;
	}
	env[n] = 0; /* the last value ends here, read whole or cut */
	*ret_n = n;
	return env;
}

_Static_assert(DEC_LAUNCH_KEY_LEN == LAUNCH_KEY_LEN && DEC_LAUNCH_ID_LEN == LAUNCH_ID_LEN,
	       "the store's launch records hold lib/launch_id.h's ids and keys");

/* The launch id of rank k, whose environment block is env (n bytes; NULL unreadable), and its
 * key (launch_id.h), both "" when its launcher says none. */
static void launch_of(const struct rank *k, const char *env, ssize_t n, char id[LAUNCH_ID_LEN],
		      char key[LAUNCH_KEY_LEN])
{
	id[0] = key[0] = 0;
	if (env && launch_id_from_environ(env, (size_t)n, id) < 0)
		log_warn("decisions: pid %d: FTBPF_LAUNCH_ID is not a launch id (1..%d printable "
			 "bytes, no space): none taken",
			 k->pid, LAUNCH_ID_MAX);
	if (id[0] && launch_id_key(id, key) < 0)
		id[0] = key[0] = 0;
}

/* TORCHELASTIC_RESTART_COUNT or SLURM_RESTART_COUNT in the rank's environment (the larger), -1
 * when neither is there: a restart a launcher or a scheduler made is the same run. */
static int restart_count(const char *env, ssize_t n)
{
	static const char *const names[] = {"TORCHELASTIC_RESTART_COUNT=", "SLURM_RESTART_COUNT="};
	int best = -1;

	for (ssize_t o = 0; n > 0 && o < n; o += (ssize_t)strnlen(env + o, (size_t)(n - o)) + 1)
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			size_t l = strlen(names[i]);
			char *end;
			long v;

			if ((size_t)(n - o) <= l || strncmp(env + o, names[i], l))
				continue;
			v = strtol(env + o + l, &end, 10);
			if (end != env + o + l && v >= 0 && v < 1000000 && v > best)
				best = (int)v;
		}
	return best;
}

/* Is pid (started at start_ns) alive in fact, not only as far as the agent knows? */
static int alive_in_fact(int pid, uint64_t start_ns)
{
	struct proc_stat st;

	return pid > 0 && procfs_stat(pid, -1, &st) == 0 && starttime_same(st.start_ns, start_ns) &&
	       st.state != 'Z' && st.state != 'X';
}

/* The facts the run choice needs about a rank here (dp_other_live), liveness read from /proc. */
static void launch_facts(const struct rank *r, struct dp_launch_rank *x)
{
	x->rank = r->id.rank;
	x->launcher_pid = r->launcher_pid;
	x->launcher_start_ns = r->launcher_start_ns;
	x->exited = r->s.exited;
	x->dec_written = r->dec_written != 0;
	x->alive = !r->s.exited && alive_in_fact(r->pid, r->start_ns);
	x->launcher_alive =
	    r->launcher_pid > 0 && alive_in_fact(r->launcher_pid, r->launcher_start_ns);
}

/* Does a rank of the job's current launch live here (dp_other_live)? */
static int other_live(const struct job *j, const struct rank *k)
{
	struct dp_launch_rank me, *o;
	int n = 0, r;

	if (!j || j->nmembers <= 1)
		return 0;
	if (!(o = calloc((size_t)j->nmembers, sizeof(*o))))
		return 0; /* no memory: a new run is the safe side of a wrong choice */
	launch_facts(k, &me);
	for (int i = 0; i < j->nmembers; i++)
		if (j->members[i] != k)
			launch_facts(j->members[i], &o[n++]);
	r = dp_other_live(o, n, &me);
	free(o);
	return r;
}

/* Is rec (launches/<lkey>) the record of launch lid, and run/<rec.run> a run claimed for that
 * launch? A launches/ record is followed only then: one of another id under the key, or naming
 * a run begun for another launch (an old stopped run, one that does not exist), is no record of
 * this launch (with node keys, any key holder can write one). */
static int launch_record_ok(struct decider *d, const struct djob *dj, const char *lid,
			    const char *lkey, const struct dec_launches *rec)
{
	char key[DEC_KEY_LEN * 3], rel[DEC_KEY_LEN], *v;
	struct dec_run x;
	int ok;

	if (strcmp(rec->id, lid))
		return 0;
	dec_key_run(rel, sizeof(rel), rec->run);
	snprintf(key, sizeof(key), "%s%s", dj->jprefix, rel);
	v = store_get(d->st, key);
	ok = v && dec_run_parse(v, &x) == 0 && x.run == rec->run && !strcmp(x.launch, lkey);
	free(v);
	return ok;
}

/*
 * The run of rank k, of launch lid (its key lkey): launch_id_run_choose on launches/<lkey>.
 * 0 with *ret_run and *ret_new (a new run: launches/<lkey> claimed for it here; a host that
 * loses that claim joins the winner's run at its next look, dc_follow_launch); -EPERM for a
 * stale launch: refused (launch_refused, logged once), no run.
 */
static int launch_run(struct decider *d, struct djob *dj, const struct rank *k,
		      const struct runs_ctx *rc, const char *lid, const char *lkey,
		      uint64_t *ret_run, int *ret_new)
{
	char key[DEC_KEY_LEN * 3], rel[DEC_KEY_LEN], val[DEC_VALUE_MAX], *v;
	struct launch_id_view view = {0, 0, rc->cur, rc->cur_other};
	struct dec_launches rec;
	enum launch_id_choice c;

	dec_key_launches(rel, sizeof(rel), lkey);
	snprintf(key, sizeof(key), "%s%s", dj->jprefix, rel);
	/* one that is malformed, or of another id under the same key, is no record of this one */
	if ((v = store_get(d->st, key)) && dec_launches_parse(v, &rec) == 0 &&
	    launch_record_ok(d, dj, lid, lkey, &rec))
		view = (struct launch_id_view){1, rec.run, rc->cur, rc->cur_other};
	free(v);
	c = launch_id_run_choose(&view, ret_run);
	*ret_new = c == LAUNCH_ID_NEW;
	if (c == LAUNCH_ID_STALE) {
		if (strcmp(dj->refused_launch, lkey)) {
			dc_log_launch_refused(d, dj, k->pid, lid, *ret_run, rc->cur_other);
			snprintf(dj->refused_launch, sizeof(dj->refused_launch), "%s", lkey);
		}
		return -EPERM;
	}
	if (c == LAUNCH_ID_NEW) {
		memset(&rec, 0, sizeof(rec));
		rec.run = *ret_run;
		rec.at_ms = clock_real_ns() / 1000000;
		snprintf(rec.id, sizeof(rec.id), "%s", lid);
		snprintf(rec.by, sizeof(rec.by), "%s", d->pc.node);
		/* before run/<r> (dc_choose_run): the etcd requester keeps their order */
		if (dec_launches_format(&rec, val, sizeof(val)) == 0)
			store_claim(d->st, key, val);
	}
	snprintf(dj->launch_key, sizeof(dj->launch_key), "%s", lkey);
	snprintf(dj->launch_id, sizeof(dj->launch_id), "%s", lid);
	return 0;
}

/* Put this node's launch record (launch/<node>) as dj->launch says. */
static void put_launch(struct decider *d, struct djob *dj)
{
	char key[DEC_KEY_LEN * 3], rel[DEC_KEY_LEN], val[DEC_VALUE_MAX];

	dec_key_launch(rel, sizeof(rel), d->pc.node);
	snprintf(key, sizeof(key), "%s%s", dj->jprefix, rel);
	if (dec_launch_format(&dj->launch, val, sizeof(val)) == 0)
		store_put(d->st, key, val, 0);
}

void dc_follow_launch(struct decider *d, struct djob *dj)
{
	char key[DEC_KEY_LEN * 3], rel[DEC_KEY_LEN], *v;
	struct dec_launches rec;

	if (!dj->run || !dj->launch_key[0])
		return;
	dec_key_launches(rel, sizeof(rel), dj->launch_key);
	snprintf(key, sizeof(key), "%s%s", dj->jprefix, rel);
	if ((v = store_get(d->st, key)) && dec_launches_parse(v, &rec) == 0 && rec.run != dj->run &&
	    launch_record_ok(d, dj, dj->launch_id, dj->launch_key, &rec)) {
		log_info("decisions: job %s: launch %s is in run %llu (%s claimed it first), not "
			 "%llu: this node joins it",
			 dj->id, rec.id, (unsigned long long)rec.run, rec.by,
			 (unsigned long long)dj->run);
		set_run(dj, rec.run);
		dj->launch.run = rec.run;
		put_launch(d, dj);
	}
	free(v);
}

void dc_choose_run(struct decider *d, struct djob *dj, const struct job *j, const struct rank *k)
{
	char key[DEC_KEY_LEN * 3], rel[DEC_KEY_LEN], val[DEC_VALUE_MAX], launcher[40], *v;
	char lid[LAUNCH_ID_LEN], lkey[LAUNCH_KEY_LEN];
	char *env;
	ssize_t envn;
	struct runs_ctx rc = {dj->jprefix, 0, NULL, 0};
	struct dec_launch mine, *mp = NULL;
	uint64_t run, last_ok;
	int fresh = 0, known = 0;

	/* the first run is chosen from the store's records, not from a mirror not read yet (an
	 * agent just started, etcd down): it would take an old job's relaunch for its first run.
	 * The decider's next look chooses it once the store can be read */
	if (!dj->run && !store_reachable(d->st, &last_ok))
		return;
	parent_id(k, launcher, sizeof(launcher));
	dec_key_launch(rel, sizeof(rel), d->pc.node);
	snprintf(key, sizeof(key), "%s%s", dj->jprefix, rel);
	if ((v = store_get(d->st, key)) && dec_launch_parse(v, &mine) == 0)
		mp = &mine;
	free(v);
	env = environ_of(k, &envn); /* read once: the launch id, else the restart count */
	launch_of(k, env, envn, lid, lkey);
	rc.launch = lkey[0] ? lkey : NULL;
	store_list(d->st, dj->jprefix, max_run, &rc);
	if (lkey[0]) {
		/* the launcher said which launch: its run, the same on every host of it */
		if (launch_run(d, dj, k, &rc, lid, lkey, &run, &fresh) < 0) {
			free(env);
			return; /* a stale launch: no run of its own (the node keeps its run, if any) */
		}
	} else {
		dj->launch_key[0] = dj->launch_id[0] = 0;
		if (dj->run && other_live(j, k))
			run = dj->run; /* ranks of this launch are alive here: the same run */
		else if (!launcher[0] && mp)
			run = mp->run; /* an agent restarted: its ranks' run */
		else
			run = dp_run_choose(mp, rc.cur, launcher, restart_count(env, envn), &fresh);
	}
	free(env);
	if (fresh) {
		struct dec_run x = {
		    .run = run, .resume_step = -1, .at_ms = clock_real_ns() / 1000000};
		struct djob *prev = rc.cur ? calloc(1, sizeof(*prev)) : NULL;

		if (rc.cur && !prev)
			return; /* not from nothing (I3): a later look claims it */

		/* it begins where the last run's last complete checkpoint is (read into a job of
		 * its own: the records' and memory's tables are allocated, not dj's to share) */
		if (prev) {
			prev->uid = dj->uid;
			snprintf(prev->id, sizeof(prev->id), "%s", dj->id);
			snprintf(prev->jprefix, sizeof(prev->jprefix), "%s", dj->jprefix);
			set_run(prev, rc.cur);
			dc_load(d, prev);
			x.resume_step = prev->rec.last_complete;
			dc_free_job(prev);
		}
		snprintf(x.by, sizeof(x.by), "%s", d->pc.node);
		snprintf(x.launch, sizeof(x.launch), "%s", lkey);
		dec_key_run(rel, sizeof(rel), run);
		snprintf(key, sizeof(key), "%s%s", dj->jprefix, rel);
		if (dec_run_format(&x, val, sizeof(val)) == 0)
			store_claim(d->st, key, val);
		/* the store keeps the last runs' records, not every run's forever */
		if (run > KEEP_RUNS) {
			snprintf(key, sizeof(key), "%sruns/%llu/", dj->jprefix,
				 (unsigned long long)(run - KEEP_RUNS));
			store_delete_prefix(d->st, key);
		}
	}
	set_run(dj, run);
	if (mp && mp->run == run) {
		dj->launch = *mp;
		for (int i = 0; i < mp->nlaunchers; i++)
			known |= !strcmp(mp->launchers[i], launcher);
	} else {
		memset(&dj->launch, 0, sizeof(dj->launch));
		dj->launch.run = run;
	}
	if (!known && launcher[0] && dj->launch.nlaunchers < DEC_MAX_LAUNCHERS)
		snprintf(dj->launch.launchers[dj->launch.nlaunchers++], 40, "%s", launcher);
	put_launch(d, dj);
}

int dc_reset(struct decider *d, struct djob *dj)
{
	int r = store_delete_prefix(d->st, dj->jprefix);

	if (r == 0) {
		dp_memory_clear(&dj->mem);
		memset(&dj->launch, 0, sizeof(dj->launch));
		dj->run = 0;
		dj->prefix[0] = 0;
		dj->launch_key[0] = dj->refused_launch[0] = 0;
	}
	return r;
}

/* ---- the local ranks ---- */
/* When did the process start, on CLOCK_MONOTONIC (0: unknown)? Start times are since boot. */
static uint64_t start_mono_ms(const struct rank *k)
{
	uint64_t boot = clock_boot_ns(), mono = clock_mono_ns();

	if (!k->start_ns || k->start_ns > boot || boot - k->start_ns > mono)
		return 0;
	return (mono - (boot - k->start_ns)) / 1000000;
}

/* A CLOCK_MONOTONIC time (a kernel event's) on the wall clock, in ms; 0 unknown. */
static uint64_t mono_to_wall_ms(uint64_t mono_ns)
{
	uint64_t now = clock_mono_ns();

	if (!mono_ns || mono_ns > now)
		return 0;
	return (clock_real_ns() - (now - mono_ns)) / 1000000;
}

int dc_gather(struct decider *d, const struct djob *dj, const struct job *j)
{
	int n = j ? j->nmembers : 0;

	if (n > d->rk_cap) {
		struct dp_rank *rk = realloc(d->rk, sizeof(*rk) * (size_t)n);
		struct rank **of = rk ? realloc(d->rk_of, sizeof(*of) * (size_t)n) : NULL;

		if (rk)
			d->rk = rk;
		if (!rk || !of)
			return -ENOMEM;
		d->rk_of = of;
		d->rk_cap = n;
	}
	d->nrk = n;
	for (int i = 0; i < n; i++) {
		struct rank *k = j->members[i];
		struct dp_rank *x = &d->rk[i];

		memset(x, 0, sizeof(*x));
		d->rk_of[i] = k;
		x->pid = k->pid;
		x->rank = k->id.rank;
		x->exited = k->s.exited;
		x->wait_status = k->s.exit_code;
		x->exit_wall_ms = mono_to_wall_ms(k->s.exit_ns);
		x->has_slot = k->slot != NULL;
		x->registered = k->dec_written != 0;
		x->world_size = k->id.world_size;
		x->step = x->saved = x->saving = x->ack = x->failed = -1;
		if (k->slot) {
			const struct ftbpf_slot *sl = k->slot;
			uint64_t sg = __atomic_load_n(&sl->saved_generation, __ATOMIC_ACQUIRE);

			x->step = (int64_t)__atomic_load_n(&sl->step, __ATOMIC_SEQ_CST);
			x->saved = __atomic_load_n(&sl->saved_step, __ATOMIC_ACQUIRE);
			/* I4: a save counts in the generation it was made in (0: an old library) */
			x->saved_here = sg == 0 || sg == k->generation + 1;
			x->saving = __atomic_load_n(&sl->saving_step, __ATOMIC_ACQUIRE);
			x->failed =
			    (int64_t)__atomic_load_n(&sl->failed_step, __ATOMIC_ACQUIRE) - 1;
			if (dj->rec.ck_n && !dj->rec.bound) {
				/* by when it saw the pending request: its own acknowledgement, or
				 * the step after the one we read right after writing it (below) */
				if (__atomic_load_n(&sl->ack_id, __ATOMIC_ACQUIRE) == dj->rec.ck_n)
					x->ack = __atomic_load_n(&sl->ack_step, __ATOMIC_RELAXED);
				if (k->dec_ack_id == dj->rec.ck_n &&
				    (x->ack < 0 || k->dec_ack_step < x->ack))
					x->ack = k->dec_ack_step;
			}
		}
		x->start_ms = start_mono_ms(k);
		x->started_known = x->start_ms != 0;
		x->exit_ms = k->s.exit_ns / 1000000;
		x->generation = k->generation;
		x->gen_unknown = k->gen_unknown;
		x->preempted = k->preempted;
		x->killed_by_agent = k->killed_by_agent;
		x->fail_seen = k->fail_seen;
		if (x->exited && x->exit_ms && x->exit_ms < dj->run_ms) {
			/* a rank of an earlier run here: its end, its saves are not this run's */
			x->registered = x->has_slot = 0;
			x->saved = -1;
		}
	}
	return 0;
}

void dc_scatter(struct decider *d)
{
	for (int i = 0; i < d->nrk; i++) {
		struct rank *k = d->rk_of[i];

		k->generation = d->rk[i].generation;
		k->gen_unknown = d->rk[i].gen_unknown;
		k->preempted = d->rk[i].preempted;
		k->killed_by_agent = d->rk[i].killed_by_agent;
		k->fail_seen = d->rk[i].fail_seen;
	}
}
